/* npz.h: NumPy .npz bundles, several named arrays in one zip file (what
   np.savez and np.savez_compressed write): the arrays of a model's inputs
   by name in, every output out.

       struct mps_npz *z;
       mps_npz_open("inputs.npz", &z, &err);
       for (int i = 0; i < mps_npz_count(z); i++) puts(mps_npz_name(z, i));   // "image", "scale"
       mps_npz_read(z, mps_npz_find(z, "image"), &t, &err);                   // t.data: free() it
       mps_npz_close(z);
       mps_npz_write("out.npz", n, names, tensors, &err);

   Reading takes entries stored or deflated, each checked as its .npy would
   be (npy.h) and against the sizes the zip says, before it is inflated; a
   zip64 bundle (over 4 GiB) is refused. Writing stores the arrays
   uncompressed, with their CRCs, written whole or not at all (outfile.h). */
#ifndef MPS_CLI_NPZ_H
#define MPS_CLI_NPZ_H

#include "tensor.h"

struct mps_npz;

/* *z NULL (and MPS_OK) when the file does not begin as a zip does: no
   bundle, a .npy perhaps; a zip that is broken is an error. */
enum mps_status mps_npz_open(const char *path, struct mps_npz **z, struct mps_error *err);
/* The arrays in it, and the name of array i (its entry's name without .npy). */
int mps_npz_count(const struct mps_npz *z);
const char *mps_npz_name(const struct mps_npz *z, int i);
/* The index of the array named name, or -1. */
int mps_npz_find(const struct mps_npz *z, const char *name);
/* Reads array i into t (t->data a new buffer, free() it); any dtype npy.h reads. */
enum mps_status mps_npz_read(struct mps_npz *z, int i, struct mps_tensor *t, struct mps_error *err);
/* NULL is a no-op. */
void mps_npz_close(struct mps_npz *z);

/* Writes n arrays under names[i] (".npy" added to each entry's name). */
enum mps_status mps_npz_write(const char *path, int n, const char *const *names, const struct mps_tensor *t,
                              struct mps_error *err);

/* Whether buf starts with a zip's local file header (PK\3\4). */
int mps_npz_is_zip(const void *buf, size_t len);

#endif
