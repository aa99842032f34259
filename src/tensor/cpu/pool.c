#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

struct mps_pool {
    int n_threads; /* including the caller */
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* a new job, or shutdown */
    pthread_cond_t idle;    /* the last worker finished the job */
    uint64_t generation;    /* bumped per job, under lock */
    int running;            /* workers still on the current job, under lock */
    bool stop;
    /* the current job */
    mps_pool_fn fn;
    void *ctx;
    int64_t n, chunk;
    atomic_int_fast64_t next; /* next unclaimed item */
};

int mps_pool_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void mps_pool_work(struct mps_pool *p)
{
    for (;;) {
        int64_t b = atomic_fetch_add(&p->next, p->chunk);
        if (b >= p->n)
            return;
        int64_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->ctx, b, e);
    }
}

static void *mps_pool_main(void *arg)
{
    struct mps_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        mps_pool_work(p);
        pthread_mutex_lock(&p->lock);
        if (--p->running == 0)
            pthread_cond_signal(&p->idle);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
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
    atomic_init(&p->next, 0);
    if (threads > 1) {
        p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
        if (!p->workers) {
            mps_pool_free(p);
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&p->workers[i], NULL, mps_pool_main, p) != 0) {
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
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_threads - 1; i++)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p);
}

int mps_pool_threads(const struct mps_pool *p)
{
    return p ? p->n_threads : 1;
}

void mps_pool_for(struct mps_pool *p, int64_t n, int64_t min_chunk, mps_pool_fn fn, void *ctx)
{
    if (n <= 0)
        return;
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
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->running = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    mps_pool_work(p);
    pthread_mutex_lock(&p->lock);
    while (p->running > 0)
        pthread_cond_wait(&p->idle, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
