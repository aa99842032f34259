/* inputs.h: the list of input files a command runs over, from its INPUT
   arguments, and the share of it one process takes (--shard).

       struct mps_inputs in = {0};
       mps_inputs_add(&in, "imgs/", &err);      // every .png and .npy below, sorted
       mps_inputs_add(&in, "@list.txt", &err);  // one path per line
       mps_inputs_add(&in, "-", &err);          // one path per line on stdin
       mps_inputs_shard(&in, 1, 4);             // the second quarter
       for (int64_t i = 0; i < in.n; i++) puts(mps_inputs_path(&in, i));
       mps_inputs_free(&in);

   A folder is walked recursively; its entries are taken in byte order of
   their names (the same order on every machine and locale), files whose
   name ends in .png or .npy (any case) and folders; names starting with '.'
   are skipped, and so are links to folders (no loops). A file named
   directly, in a list or on stdin is taken whatever its name (its bytes say
   what it is); a folder named there is walked. Lines of a list may end in
   CRLF; empty lines are skipped. Paths in a list are relative to the
   current folder, as xargs and tar -T read them. The paths are stored in
   one buffer: 100,000 of them take a few MB. */
#ifndef MPS_INPUTS_H
#define MPS_INPUTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct mps_inputs {
    char *text;      /* the paths, each '\0'-terminated; owned */
    size_t len, cap; /* bytes of text used, allocated */
    size_t *at;      /* per path: its offset in text; owned */
    int64_t n, cap_n;
    int64_t first; /* after mps_inputs_shard: index (in the whole list) of path 0 */
    int64_t total; /* after mps_inputs_shard: paths in the whole list */
    bool listed;   /* a folder, a list or stdin was among the arguments (not only files named) */
};

/* Adds what arg names: a file, a folder (walked), "@FILE" (a list of
   paths), or "-" (a list on stdin, read once). MPS_ERR_INPUT naming the
   path when it cannot be read; a folder without inputs adds nothing. */
enum mps_status mps_inputs_add(struct mps_inputs *in, const char *arg, struct mps_error *err);

/* Keeps shard k of n (0 <= k < n): the paths [k * total / n, (k + 1) * total / n),
   so that shards 0..n-1 in order are the whole list in order. */
void mps_inputs_shard(struct mps_inputs *in, int64_t k, int64_t n);

/* Parses --shard's value: "K/N" (0 <= K < N), or "auto" / "auto/N": K (and
   N) from the scheduler's environment: a Slurm array job
   (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT), or a Kubernetes indexed Job
   (JOB_COMPLETION_INDEX; its pods are not told the count, so N is given).
   MPS_ERR_USAGE naming the option and what is missing; *from says where
   the shard came from ("--shard", "Slurm array task", "Kubernetes job index"). */
enum mps_status mps_inputs_shard_parse(const char *value, int64_t *k, int64_t *n, const char **from,
                                       struct mps_error *err);

/* The names in folder dir, but those starting with '.', in byte order:
 *names (n of them) to free with mps_inputs_names_free. */
enum mps_status mps_inputs_names(const char *dir, char ***names, size_t *n, struct mps_error *err);
void mps_inputs_names_free(char **names, size_t n);

static inline const char *mps_inputs_path(const struct mps_inputs *in, int64_t i)
{
    return in->text + in->at[i];
}

void mps_inputs_free(struct mps_inputs *in);

#endif
