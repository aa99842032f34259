#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long the caller spins for its workers to finish before it sleeps, and
   how long an idle worker spins for the next job before it sleeps. Waking a
   thread that sleeps costs 0.1 to 0.3 ms on a VM (its virtual CPU halts): with
   30 us and 200 us, a 0.012 ms model ran 0.3 ms one run in ten (2 cores). */
#define MPS_POOL_SPIN_NS 2000000
#define MPS_POOL_WORKER_SPIN_NS 2000000

static int64_t mps_pool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void mps_pool_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

/* What a job costs is the cache lines that cross between cores. The caller
   used to write each thread's range, the count of workers running and the
   job's fields, on lines the workers were polling or would write next,
   each write and each read after it a crossing. Now the caller writes one
   line, the job's, which idle workers poll and read in one miss; a thread
   claims the chunks of its share on a line of its own (another's only to
   take what is left there), and a worker reports its end on a line of its
   own. An empty job on 2 threads of the Zen 5 VM, whose two virtual CPUs
   sit now on one core complex (a line's round trip 80 ns), now on two
   (365 ns): 0.32 -> 0.145 us and 2.0 -> 0.62 us. */

/* Thread t's claims on its share of the current job: the generation's low
   16 bits, then the items of the share claimed (n < 2^48: items are rows,
   planes and tiles). A tag from an earlier job means none claimed yet: the
   owner claims on its line in every job, so the tag is never more than a
   job old. */
struct mps_pool_claims {
    _Alignas(64) atomic_uint_fast64_t v;
};
#define MPS_POOL_TAG_SHIFT 48
#define MPS_POOL_CLAIMED (((uint64_t)1 << MPS_POOL_TAG_SHIFT) - 1)

/* The last job worker t finished. */
struct mps_pool_done {
    _Alignas(64) atomic_uint_fast64_t generation;
};

struct mps_pool {
    /* the job's line: written by the caller only, polled by idle workers */
    _Alignas(64) atomic_uint_fast64_t generation; /* bumped per job, after the fields below */
    atomic_uint_fast64_t resting;                  /* the generation after which workers sleep at once */
    atomic_bool stop;
    mps_pool_fn fn;
    void *ctx;
    int64_t n, chunk;
    /* read each job, written rarely */
    _Alignas(64) int n_threads;  /* including the caller */
    void (*after)(void);         /* NULL, or what a worker calls after its part of each job */
    atomic_bool caller_sleeps;   /* the caller waits on idle */
    struct mps_pool_claims *claims; /* [n_threads] */
    struct mps_pool_done *done;     /* [n_threads]; 0 unused */
    pthread_t *workers;
    /* sleeping */
    _Alignas(64) pthread_mutex_t lock;
    pthread_cond_t wake;        /* a new job, or shutdown */
    pthread_cond_t idle;        /* a worker finished the job */
    atomic_int sleepers;        /* workers waiting on wake */
};

int mps_pool_cores(void)
{
#ifdef __linux__
    /* the CPUs this process may run on (taskset, a container's cpuset), not the
       machine's: a thread more than those waits its turn behind the others */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The pool a worker thread belongs to and its index there (mps_pool_self). */
static _Thread_local const struct mps_pool *mps_pool_mine;
static _Thread_local int mps_pool_index;

int mps_pool_self(const struct mps_pool *p)
{
    return p && mps_pool_mine == p ? mps_pool_index : 0;
}

/* The first item of the next chunk of thread t's share of job g, or -1
   where none is left. */
static int64_t mps_pool_claim(struct mps_pool *p, int t, uint64_t g)
{
    int64_t lo = p->n * t / p->n_threads, size = p->n * (t + 1) / p->n_threads - lo;
    uint64_t tag = (g & 0xffffu) << MPS_POOL_TAG_SHIFT, v = atomic_load_explicit(&p->claims[t].v, memory_order_relaxed);
    for (;;) {
        int64_t at = (v & ~MPS_POOL_CLAIMED) == tag ? (int64_t)(v & MPS_POOL_CLAIMED) : 0;
        if (at >= size && (v & ~MPS_POOL_CLAIMED) == tag)
            return -1;
        int64_t next = at + p->chunk < size ? at + p->chunk : size;
        if (atomic_compare_exchange_weak_explicit(&p->claims[t].v, &v, tag | (uint64_t)next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return at < size ? lo + at : -1;
    }
}

/* Thread self's own share of job g first, chunk by chunk, then what is left
   of the others'. */
static void mps_pool_work(struct mps_pool *p, int self, uint64_t g)
{
    for (int i = 0; i < p->n_threads; i++) {
        int t = (self + i) % p->n_threads;
        int64_t end = p->n * (t + 1) / p->n_threads;
        for (int64_t b; (b = mps_pool_claim(p, t, g)) >= 0;)
            p->fn(p->ctx, b, b + p->chunk < end ? b + p->chunk : end);
    }
}

struct mps_pool_start {
    struct mps_pool *pool;
    int index;
};

static void *mps_pool_main(void *arg)
{
    struct mps_pool_start start = *(struct mps_pool_start *)arg;
    free(arg);
    struct mps_pool *p = start.pool;
    mps_pool_mine = p;
    mps_pool_index = start.index;
    uint64_t seen = 0;
    for (;;) {
        /* a model runs its nodes back to back: spin a little for the next job
           before sleeping (the BLAS runs inside these threads, so the spin
           takes no core that anything else is waiting for) */
        int64_t until = mps_pool_now_ns() + MPS_POOL_WORKER_SPIN_NS;
        for (int i = 0; atomic_load_explicit(&p->generation, memory_order_acquire) == seen &&
                        atomic_load_explicit(&p->resting, memory_order_relaxed) != seen &&
                        !atomic_load_explicit(&p->stop, memory_order_relaxed);
             i++) {
            if ((i & 63) == 63 && mps_pool_now_ns() > until)
                break;
            mps_pool_relax();
        }
        /* the lock only to sleep: a worker that saw the job while spinning and
           then took the lock found it still held by the caller's broadcast and
           slept in the kernel (1.2-3.8 us from a job's start to a worker's, on
           average over a model's jobs). sleepers before the generation is read
           again, the caller's generation before it reads sleepers: one of the
           two sees the other's (mps_pool_for) */
        if (atomic_load(&p->generation) == seen) {
            pthread_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleepers, 1);
            atomic_thread_fence(memory_order_seq_cst);
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        mps_pool_work(p, start.index, seen);
        if (p->after)
            p->after();
        /* done before caller_sleeps is read, as the caller sets that before it reads done */
        atomic_store(&p->done[start.index].generation, seen);
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load(&p->caller_sleeps)) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->idle);
            pthread_mutex_unlock(&p->lock);
        }
    }
}

enum mps_status mps_pool_new(int threads, struct mps_pool **pool, struct mps_error *err)
{
    *pool = NULL;
    if (threads <= 0)
        threads = mps_pool_cores();
    struct mps_pool *p = aligned_alloc(64, (sizeof *p + 63) / 64 * 64);
    if (!p)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    memset(p, 0, sizeof *p);
    p->n_threads = 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->resting, UINT64_MAX);
    atomic_init(&p->stop, false);
    atomic_init(&p->caller_sleeps, false);
    atomic_init(&p->sleepers, 0);
    if (threads > 1) {
        p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
        p->claims = aligned_alloc(64, sizeof *p->claims * (size_t)threads);
        p->done = aligned_alloc(64, sizeof *p->done * (size_t)threads);
        if (!p->workers || !p->claims || !p->done) {
            mps_pool_free(p);
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
        for (int t = 0; t < threads; t++) {
            atomic_init(&p->claims[t].v, 0);
            atomic_init(&p->done[t].generation, 0);
        }
        for (int i = 0; i < threads - 1; i++) {
            struct mps_pool_start *start = malloc(sizeof *start);
            if (start)
                *start = (struct mps_pool_start){p, i + 1};
            if (!start || pthread_create(&p->workers[i], NULL, mps_pool_main, start) != 0) {
                free(start);
                mps_pool_free(p);
                return mps_fail(err, MPS_ERR_RUNTIME, "cannot start thread %d of %d", i + 2, threads);
            }
            p->n_threads++;
        }
    }
    *pool = p;
    return MPS_OK;
}

void mps_pool_free(struct mps_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, true);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_threads - 1; i++)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p->claims);
    free(p->done);
    free(p);
}

void mps_pool_rest(struct mps_pool *p)
{
    if (p)
        atomic_store(&p->resting, atomic_load(&p->generation));
}

void mps_pool_after(struct mps_pool *p, void (*fn)(void))
{
    if (p)
        p->after = fn;
}

int mps_pool_threads(const struct mps_pool *p)
{
    return p ? p->n_threads : 1;
}

void mps_pool_for(struct mps_pool *p, int64_t n, int64_t cost, mps_pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    int64_t min_chunk = MPS_POOL_GRAIN / (cost > 0 ? cost : 1);
    if (min_chunk < 1)
        min_chunk = 1;
    if (!p || p->n_threads == 1 || n <= min_chunk) {
        fn(ctx, 0, n);
        return;
    }
    /* about four chunks per thread balances uneven chunks without much overhead */
    int64_t chunk = (n + 4 * p->n_threads - 1) / (4 * p->n_threads);
    if (chunk < min_chunk)
        chunk = min_chunk;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    uint64_t g = atomic_load_explicit(&p->generation, memory_order_relaxed) + 1;
    /* the fields above before it (release); and before sleepers is read (a full fence, see mps_pool_main:
       seq_cst stores and loads alone let qemu-aarch64 on x86 lose a wake-up, every worker asleep) */
    atomic_store(&p->generation, g);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
    }
    mps_pool_work(p, 0, g);
    int64_t until = mps_pool_now_ns() + MPS_POOL_SPIN_NS;
    for (int t = 1, i = 0; t < p->n_threads; i++) {
        if (atomic_load_explicit(&p->done[t].generation, memory_order_acquire) == g) {
            t++;
            continue;
        }
        if ((i & 63) == 63 && mps_pool_now_ns() > until) {
            /* caller_sleeps before done is read again, as a worker stores done before it reads that */
            pthread_mutex_lock(&p->lock);
            atomic_store(&p->caller_sleeps, true);
            atomic_thread_fence(memory_order_seq_cst);
            while (atomic_load(&p->done[t].generation) != g)
                pthread_cond_wait(&p->idle, &p->lock);
            atomic_store(&p->caller_sleeps, false);
            pthread_mutex_unlock(&p->lock);
            continue;
        }
        mps_pool_relax();
    }
}

/* Waits, spinning and now and then yielding the core (the other thread may
   be waiting for it), until *ball is want or negative, or (when give_up is
   not 0) the clock passes give_up; returns its last value. */
static int_fast64_t mps_pool_await(atomic_int_fast64_t *ball, int_fast64_t want, int64_t give_up)
{
    int_fast64_t v;
    for (int spin = 1; (v = atomic_load_explicit(ball, memory_order_acquire)) != want && v >= 0; spin++) {
        if (spin % 1024)
            mps_pool_relax();
        else if (give_up && mps_pool_now_ns() > give_up)
            break;
        else
            sched_yield();
    }
    return v;
}

/* The second thread of mps_pool_round_trip_ns: says it runs (1), then
   answers each even value of the line with the next odd one, until the line
   goes negative. */
static void *mps_pool_pong(void *arg)
{
    atomic_int_fast64_t *ball = arg;
    int_fast64_t v = 0;
    atomic_compare_exchange_strong(ball, &v, 1);
    for (int_fast64_t want = 2;; want += 2) {
        v = mps_pool_await(ball, want, 0);
        /* a compare-exchange: the caller may give up meanwhile */
        if (v < 0 || !atomic_compare_exchange_strong(ball, &v, want + 1))
            return NULL;
    }
}

double mps_pool_round_trip_ns(void)
{
    enum { ROUNDS = 5, TRIPS = 1000 };
    if (mps_pool_cores() < 2)
        return 0;
    struct {
        _Alignas(64) atomic_int_fast64_t ball;
    } *line = aligned_alloc(64, 64);
    pthread_t pong;
    if (!line)
        return 0;
    atomic_init(&line->ball, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
#ifdef __linux__
    /* on a CPU other than the caller's: a new thread that started on the
       caller's waited there up to 0.1 s before the scheduler moved it */
    cpu_set_t set, one;
    int here = sched_getcpu();
    CPU_ZERO(&one);
    if (here >= 0 && sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE && !CPU_COUNT(&one); c++)
            if (c != here && CPU_ISSET(c, &set))
                CPU_SET(c, &one);
    if (CPU_COUNT(&one))
        pthread_attr_setaffinity_np(&attr, sizeof one, &one);
#endif
    int started = pthread_create(&pong, &attr, mps_pool_pong, &line->ball);
    pthread_attr_destroy(&attr);
    if (started != 0) {
        free(line);
        return 0;
    }
    /* the new thread may first wait for a core, or share the caller's until
       the scheduler moves it: rounds until one has both running apart, for
       at most 200 ms */
    int64_t give_up = mps_pool_now_ns() + 200000000;
    double best = 0;
    int_fast64_t ball = 1;
    bool on = mps_pool_await(&line->ball, 1, give_up) == 1;
    for (int r = 0; r < ROUNDS && on; r++) {
        int64_t t0 = mps_pool_now_ns();
        for (int i = 0; i < TRIPS && on; i++, ball++) {
            atomic_store_explicit(&line->ball, ++ball, memory_order_release);
            on = mps_pool_await(&line->ball, ball + 1, give_up) == ball + 1;
        }
        double ns = (double)(mps_pool_now_ns() - t0) / TRIPS;
        if (on)
            best = best == 0 || ns < best ? ns : best;
    }
    atomic_store(&line->ball, -1);
    pthread_join(pong, NULL);
    free(line);
    return best;
}
