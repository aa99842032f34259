/* thread_pool.h: a small pthread pool for the CPU kernels (Apple's compiler has no
   OpenMP). Threads are created once, when a plan is compiled; between jobs
   they spin for a short while (a model's nodes come back to back), then wait
   on a condition variable. A job is a parallel for:

       static void body(void *ctx, int64_t begin, int64_t end) { ... }
       mps_pool_for(pool, n, cost, body, &ctx);   // returns when every chunk is done

   cost is the work of one item in rough scalar operations: a job too small
   to repay waking a thread runs inline, and chunks are never smaller than
   MPS_POOL_GRAIN operations. Thread t (the caller is 0) first works
   through the t-th of threads equal shares of [0, n), then takes what is
   left of the others': jobs split alike give each thread the same part of
   the data node after node, which its cache still holds. The calling
   thread spins briefly for the others to finish before it sleeps. One job at a
   time per pool: a pool belongs to one plan, and a plan is run by one
   thread at a time. */
#ifndef MPS_THREAD_POOL_H
#define MPS_THREAD_POOL_H

#include <stdint.h>

#include "../status.h"

struct mps_pool;

typedef void (*mps_pool_fn)(void *ctx, int64_t begin, int64_t end);

/* A pool of threads workers in all (the caller counts as one); threads <= 0:
   one per online core. */
enum mps_status mps_pool_new(int threads, struct mps_pool **pool, struct mps_error *err);
/* Joins the workers and frees the pool; NULL is a no-op. */
void mps_pool_free(struct mps_pool *pool);
int mps_pool_threads(const struct mps_pool *pool);
/* fn (NULL: nothing) is called by each worker after its part of every job:
   the CPU backend's kernel family cleaning up after itself (ukernels.h). */
void mps_pool_after(struct mps_pool *pool, void (*fn)(void));
/* The workers stop spinning for the next job and sleep now: the caller will
   not call for a while (a stream decoding its next chunk), and a spinning
   worker would take a core from whatever runs meanwhile. */
void mps_pool_rest(struct mps_pool *pool);
/* Operations a chunk of work must hold to be worth another thread. */
#define MPS_POOL_GRAIN 32768
/* A float that a job only copies (a padded copy of a conv's input), in cost:
   the grain counts a tile's flops, and a float copied takes as long as
   several. At 1, squeezenet1_1's 32 x 29 x 29 copies ran on one thread (5.6
   us between two jobs); at 16, fashion_cnn's small ones paid more for a
   second thread than they saved (1.05 at batch 1). */
#define MPS_POOL_COPY_COST 4

/* Calls fn over [0, n) in chunks spread over the pool; cost is one item's
   work. Runs inline when pool is NULL, has one thread, or the job is small. */
void mps_pool_for(struct mps_pool *pool, int64_t n, int64_t cost, mps_pool_fn fn, void *ctx);
/* The calling thread's index in pool: 0 for the thread that called
   mps_pool_for (and any thread outside the pool), 1 .. threads - 1 for its
   workers. For per-thread scratch inside a job. */
int mps_pool_self(const struct mps_pool *pool);
/* CPUs this process may run on (at least 1). */
int mps_pool_cores(void);
/* How long a cache line takes from the calling thread to one it starts and
   back, in nanoseconds: the best of a few rounds of a thousand. Tens where
   the two cores share a cache, hundreds between core complexes or sockets;
   a VM's virtual CPUs may move from one to the other while it runs. 0 where
   the process has one CPU or the second thread did not start or answer. */
double mps_pool_round_trip_ns(void);

#endif
