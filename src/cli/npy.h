/* npy.h: NumPy .npy files: arrays in C order in, outputs out.

       struct mps_tensor t;
       if (mps_npy_read("x.npy", &t, &err) == MPS_OK) { ...; free(t.data); }

   Reading accepts format versions 1 to 3, little-endian float32, float16,
   float64, int64, int32, uint8 and bool, C order, and checks that the data
   is exactly as long as the shape says before any of it is read; anything
   else is MPS_ERR_INPUT with the reason. */
#ifndef MPS_NPY_H
#define MPS_NPY_H

#include <stddef.h>

#include "tensor.h"

#define MPS_NPY_MAX_HEADER 65536 /* bytes of header dict read; numpy writes under 1 KB */

/* What a .npy header says. */
struct mps_npy_info {
    enum mps_dtype dtype;
    struct mps_shape shape;
    size_t offset; /* where the data starts */
    size_t bytes;  /* of data, as dtype and shape say */
};

/* Parses the header at the start of buf[len] (the data need not follow). */
enum mps_status mps_npy_header(const void *buf, size_t len, struct mps_npy_info *info, struct mps_error *err);
/* Opens path and reads its header only: *fd (close() it) is a .npy file
   whose data is as long as the header says. */
enum mps_status mps_npy_open(const char *path, struct mps_npy_info *info, int *fd, struct mps_error *err);
/* The same for fd, open on a file of size bytes. */
enum mps_status mps_npy_header_fd(int fd, int64_t size, struct mps_npy_info *info, struct mps_error *err);
/* MPS_ERR_INPUT naming the dtype unless it is float32. */
enum mps_status mps_npy_require_f32(const struct mps_npy_info *info, struct mps_error *err);
/* Parses the bytes of a whole .npy file into t (t->data a new buffer, free() it). */
enum mps_status mps_npy_parse(const void *buf, size_t len, struct mps_tensor *t, struct mps_error *err);
/* Reads the file at path (MPS_ERR_INPUT when it cannot be read). */
enum mps_status mps_npy_read(const char *path, struct mps_tensor *t, struct mps_error *err);

/* Writes t (contiguous) as a .npy file, whole or not at all (outfile.h). */
enum mps_status mps_npy_write(const char *path, const struct mps_tensor *t, struct mps_error *err);
/* The header of a .npy file of dtype and shape (512 bytes of room); its length. */
size_t mps_npy_header_bytes(enum mps_dtype dtype, const struct mps_shape *s, char *hdr);

/* A .npy written item by item (infer's --output over a stream), through
   outfile.h: a temporary file beside path from open on; each append writes
   items of the item shape, fill writes items of NaN (0 for an integer
   dtype) in the place of items that failed; close writes the count into
   the header and renames the file over path; abort removes it. */
struct mps_npy_stream;
enum mps_status mps_npy_stream_open(const char *path, enum mps_dtype dtype, const struct mps_shape *item,
                                    struct mps_npy_stream **s, struct mps_error *err);
enum mps_status mps_npy_stream_append(struct mps_npy_stream *s, const void *data, int64_t items,
                                      struct mps_error *err);
enum mps_status mps_npy_stream_fill(struct mps_npy_stream *s, int64_t items, struct mps_error *err);
/* Both free s; NULL is a no-op. */
enum mps_status mps_npy_stream_close(struct mps_npy_stream *s, struct mps_error *err);
void mps_npy_stream_abort(struct mps_npy_stream *s);

#endif
