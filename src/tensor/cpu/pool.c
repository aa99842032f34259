#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
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

/* A thread's share of a job's items: [next, end) are unclaimed. */
struct mps_pool_range {
    _Alignas(64) atomic_int_fast64_t next;
    int64_t end;
};

struct mps_pool {
    int n_threads; /* including the caller */
    void (*after)(void); /* NULL, or what a worker calls after its part of each job (mps_pool_after) */
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* a new job, or shutdown */
    pthread_cond_t idle;    /* the last worker finished the job */
    atomic_uint_fast64_t generation; /* bumped per job, under lock */
    atomic_uint_fast64_t resting;    /* the generation after which workers sleep at once (mps_pool_rest) */
    atomic_int running;     /* workers still on the current job */
    atomic_bool stop;
    /* the current job */
    mps_pool_fn fn;
    void *ctx;
    int64_t chunk;
    struct mps_pool_range *ranges; /* [n_threads]: thread t's share of the items */
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

/* Thread self's own share first, chunk by chunk, then what is left of the
   others'. */
static void mps_pool_work(struct mps_pool *p, int self)
{
    for (int i = 0; i < p->n_threads; i++) {
        struct mps_pool_range *r = &p->ranges[(self + i) % p->n_threads];
        for (;;) {
            int64_t b = atomic_fetch_add(&r->next, p->chunk);
            if (b >= r->end)
                break;
            p->fn(p->ctx, b, b + p->chunk < r->end ? b + p->chunk : r->end);
        }
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
        for (int i = 0; atomic_load(&p->generation) == seen && atomic_load(&p->resting) != seen &&
                        !atomic_load(&p->stop);
             i++) {
            if ((i & 63) == 63 && mps_pool_now_ns() > until)
                break;
            mps_pool_relax();
        }
        /* the lock only to sleep: a worker that saw the job while spinning and
           then took the lock found it still held by the caller's broadcast and
           slept in the kernel (1.2-3.8 us from a job's start to a worker's, on
           average over a model's jobs) */
        if (atomic_load(&p->generation) == seen) {
            pthread_mutex_lock(&p->lock);
            while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = atomic_load(&p->generation);
        mps_pool_work(p, start.index);
        if (p->after)
            p->after();
        if (atomic_fetch_sub(&p->running, 1) == 1) { /* the last one out wakes the caller */
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
    struct mps_pool *p = calloc(1, sizeof *p);
    if (!p)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    p->n_threads = 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->resting, UINT64_MAX);
    atomic_init(&p->running, 0);
    atomic_init(&p->stop, false);
    if (threads > 1) {
        p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
        p->ranges = aligned_alloc(64, sizeof *p->ranges * (size_t)threads);
        if (!p->workers || !p->ranges) {
            mps_pool_free(p);
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
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
    free(p->ranges);
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
    p->chunk = chunk;
    for (int t = 0; t < p->n_threads; t++) {
        atomic_store(&p->ranges[t].next, n * t / p->n_threads);
        p->ranges[t].end = n * (t + 1) / p->n_threads;
    }
    atomic_store(&p->running, p->n_threads - 1);
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    mps_pool_work(p, 0);
    int64_t until = mps_pool_now_ns() + MPS_POOL_SPIN_NS;
    for (int i = 0; atomic_load(&p->running) > 0; i++) {
        if ((i & 63) == 63 && mps_pool_now_ns() > until) {
            pthread_mutex_lock(&p->lock);
            while (atomic_load(&p->running) > 0)
                pthread_cond_wait(&p->idle, &p->lock);
            pthread_mutex_unlock(&p->lock);
            break;
        }
        mps_pool_relax();
    }
}
