/* npy.h: NumPy .npy files: f32 arrays in C order in, outputs out.

       struct mps_tensor t;
       if (mps_npy_read("x.npy", &t, &err) == MPS_OK) { ...; free(t.data); }
       mps_npy_write("out.npy", &output, &err);

   Reading accepts format versions 1 to 3, little-endian float32 ('<f4'),
   C order, and checks that the data is exactly as long as the shape says;
   anything else is MPS_ERR_INPUT with the reason. */
#ifndef MPS_NPY_H
#define MPS_NPY_H

#include <stddef.h>

#include "tensor.h"

/* Parses the bytes of a .npy file into t (t->data a new buffer, free() it). */
enum mps_status mps_npy_parse(const void *buf, size_t len, struct mps_tensor *t, struct mps_error *err);
/* Reads the file at path (MPS_ERR_INPUT when it cannot be read). */
enum mps_status mps_npy_read(const char *path, struct mps_tensor *t, struct mps_error *err);
/* Writes t (f32, f16, f64, i64, i32, u8 or bool; contiguous) as a version 1.0 .npy file. */
enum mps_status mps_npy_write(const char *path, const struct mps_tensor *t, struct mps_error *err);

/* A .npy written item by item (infer's --output over a stream): the file
   is opened at once, each append writes items of the item shape, and close
   writes the count into the header. The file must be a regular file. */
struct mps_npy_stream;
enum mps_status mps_npy_stream_open(const char *path, enum mps_dtype dtype, const struct mps_shape *item,
                                    struct mps_npy_stream **s, struct mps_error *err);
enum mps_status mps_npy_stream_append(struct mps_npy_stream *s, const void *data, int64_t items,
                                      struct mps_error *err);
/* Writes the header and closes; NULL is a no-op. */
enum mps_status mps_npy_stream_close(struct mps_npy_stream *s, struct mps_error *err);

#endif
