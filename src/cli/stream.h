/* stream.h: runs a model over a list of inputs in chunks, for infer and
   eval. Internal to src/cli.

   The inputs are decoded into chunks of up to `batch` items on a thread of
   their own while the chunk before runs, so memory is two chunks and the
   plans, whatever the number of inputs or the size of a .npy file. Each
   chunk, once run, goes to the caller's function with r->files holding its
   files (one that failed has st set and no items; a .npy of more items than
   a chunk takes comes a part at a time, files[i].item0 its first) and
   r->groups[0] its run (r->n_groups is 0 when no file of the chunk decoded):

       struct mps_stream_opts o = {.batch = 32, .keep_going = true, .co = &co, .backend = "auto"};
       mps_stream_run(&r, &list, &o, print_chunk, ctx, &err, &subject);

   The list may still be reading stdin (mps_inputs_begin, lazy): the
   decoder reads its lines as they come, and a chunk that has items waits
   50 ms for the next line before it runs part-full, so a producer that
   pauses sees its results. A model whose batch dim is free compiles once
   for `batch` and once for each other size a chunk needs (the last one, a
   pause of stdin). A model that fixes its batch runs one file a run, each
   file filling the batch. Without keep_going the stream stops at the first
   file that fails, after the chunk before it and the files of its own chunk
   that come before it have run and been reported; the status is then that
   file's, with *subject its path. When o->cancel says so (a signal), the
   stream ends after the chunk it is running, with r->interrupted set. */
#ifndef MPS_CLI_STREAM_H
#define MPS_CLI_STREAM_H

#include "infer.h"
#include "inputs.h"

struct mps_stream_opts {
    int64_t batch;   /* items a run takes, when the model's batch is free */
    bool keep_going; /* a file that fails is recorded and the stream goes on */
    const struct mps_compile_opts *co;
    const char *backend; /* "auto" or a name */
    int warmup, repeat;  /* runs of the first chunk again, untimed and timed (r->t_runs) */
    bool progress;       /* a progress line on stderr when it is a terminal: done/total, speed, time left */
    int (*cancel)(void); /* non-zero: stop after the chunk that runs (a signal's number); NULL: never */
};

/* Called with each chunk after its run; a status other than MPS_OK stops the stream with it. */
typedef enum mps_status (*mps_stream_fn)(void *ctx, struct mps_infer_result *r, struct mps_error *err);

/* Runs r->model over list. r holds the loaded model and prep (mps_infer_prep);
   the stream sets r->backend, device, why_backend, the timings and counts.
   The list is read on (stdin) by the stream's decoder thread until it returns. */
enum mps_status mps_stream_run(struct mps_infer_result *r, struct mps_inputs *list, const struct mps_stream_opts *o,
                               mps_stream_fn fn, void *ctx, struct mps_error *err, const char **subject);

/* Outputs whose size a run decides (graph.h, bounded: a NonMaxSuppression's,
   a Unique's): before a run (ran false) out[] takes the bound the plan
   checks, after it the run's size. Other outputs are left as they are. */
void mps_stream_bounded_shapes(const struct mps_plan *plan, struct mps_tensor *out, bool ran);

/* The batch to run a free-batch model at when --batch is not given: up to 32
   items, fewer where their activations would pass 256 MiB (r->model at batch
   1); 1 where an output's size is a run's (it cannot be split by input). */
int64_t mps_stream_default_batch(const struct mps_infer_result *r);

#endif
