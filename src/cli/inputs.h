/* inputs.h: the list of input files a command runs over, from its INPUT
   arguments, and the share of it one process takes (--shard).

       struct mps_inputs in = {0};
       mps_inputs_add(&in, "imgs/", &err);      // every .png and .npy below, sorted
       mps_inputs_add(&in, "@list.txt", &err);  // one path per line
       mps_inputs_add(&in, "-", &err);          // one path per line on stdin, to its end
       mps_inputs_shard(&in, 1, 4);             // the second quarter
       for (int64_t i = 0; i < in.n; i++) puts(mps_inputs_path(&in, i));
       mps_inputs_free(&in);

   or, for a stream that reads stdin as the lines come:

       mps_inputs_begin(&in, args, n_args, true, &err);  // the arguments up to "-"
       while (mps_inputs_more(&in, want, 100, &err) == MPS_OK && ...)  // stdin's lines, as they come
           ... in.n so far; in.done once every argument has been read

   A folder is walked recursively; its entries are taken in byte order of
   their names (the same order on every machine and locale), files whose
   name ends in .png or .npy (any case) and folders; names starting with '.'
   are skipped, and so are links to folders (no loops). A folder that cannot
   be listed (no permission) or lies more than 256 deep is an entry of its
   own that failed (mps_inputs_why), in its place, so a stream can name it
   and go on. A file named directly, in a list or on stdin is taken whatever
   its name (its bytes say what it is); a folder named there is walked.
   A line of a list is a path exactly as written, spaces included; a line
   may end in CRLF; empty lines are skipped. Paths in a list are relative
   to the current folder, as xargs and tar -T read them, not to the list's.
   The paths are stored in blocks that never move (a path handed out stays
   valid while the list lives): 100,000 of them take a few MB. */
#ifndef MPS_INPUTS_H
#define MPS_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct mps_input {
    const char *path;
    const char *why; /* NULL, or why the entry failed before it could be read */
};

struct mps_inputs_block;
struct mps_inputs_reader;

struct mps_inputs {
    struct mps_input *item; /* n of them; owned */
    int64_t n, cap_n;
    struct mps_inputs_block *blocks; /* the text of the paths; owned */
    int64_t first;                   /* after mps_inputs_shard: index (in the whole list) of path 0 */
    int64_t total;                   /* after mps_inputs_shard: paths in the whole list */
    bool listed;                     /* a folder, a list or stdin was among the arguments (not only files named) */
    bool done;                       /* every argument has been read: n is the whole list */
    /* what mps_inputs_more has left to read */
    const char *const *args;
    int n_args, at_arg;
    struct mps_inputs_reader *lines; /* stdin, while it is being read */
};

/* Adds what arg names: a file, a folder (walked), "@FILE" (a list of
   paths), or "-" (a list on stdin, read to its end). MPS_ERR_INPUT naming
   the list when it cannot be read; a folder without inputs adds nothing. */
enum mps_status mps_inputs_add(struct mps_inputs *in, const char *arg, struct mps_error *err);

/* Adds args in order, reading stdin ("-") as far as mps_inputs_more asks
   when lazy (the arguments after it then wait for its end), else to its
   end now. Every @FILE is opened first: one that cannot be is an error
   here, before anything runs. args must outlive in. */
enum mps_status mps_inputs_begin(struct mps_inputs *in, const char *const *args, int n_args, bool lazy,
                                 struct mps_error *err);
/* Reads on until in->n >= want or in->done, waiting up to wait_ms (-1:
   as long as it takes) for stdin's next line when none is there. */
enum mps_status mps_inputs_more(struct mps_inputs *in, int64_t want, int wait_ms, struct mps_error *err);

/* Keeps shard k of n (0 <= k < n) of the whole list (in->done): the paths
   [k * total / n, (k + 1) * total / n), so that shards 0..n-1 in order are
   the whole list in order. */
void mps_inputs_shard(struct mps_inputs *in, int64_t k, int64_t n);

/* Parses --shard's value: "K/N" (0 <= K < N), or "auto" / "auto/N": K (and
   N) from the scheduler's environment: a Slurm array job
   (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT), or a Kubernetes indexed Job
   (JOB_COMPLETION_INDEX; its pods are not told the count, so N is given).
   Each number a whole number that fits 64 bits. MPS_ERR_USAGE naming the
   option, or the variable, and the value; *from says where the shard came
   from ("--shard", "Slurm array task", "Kubernetes job index"). */
enum mps_status mps_inputs_shard_parse(const char *value, int64_t *k, int64_t *n, const char **from,
                                       struct mps_error *err);

/* The names in folder dir, but those starting with '.', in byte order:
 *names (n of them) to free with mps_inputs_names_free. */
enum mps_status mps_inputs_names(const char *dir, char ***names, size_t *n, struct mps_error *err);
void mps_inputs_names_free(char **names, size_t n);

static inline const char *mps_inputs_path(const struct mps_inputs *in, int64_t i)
{
    return in->item[i].path;
}

static inline const char *mps_inputs_why(const struct mps_inputs *in, int64_t i)
{
    return in->item[i].why;
}

void mps_inputs_free(struct mps_inputs *in);

#endif
