/* file.h: reading files, with the failure reported as the status the
   caller's kind of file calls for (a bad model is MPS_ERR_MODEL, a bad input
   MPS_ERR_INPUT). Only regular files are read: a folder, a device or a FIFO
   is refused without blocking on it. */
#ifndef MPS_FILE_H
#define MPS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Opens path for reading: a regular file (else status bad, without
   blocking on a FIFO); its descriptor in *fd (close() it), its size in *size. */
enum mps_status mps_file_open(const char *path, enum mps_status bad, int *fd, int64_t *size, struct mps_error *err);

/* Reads path into *buf (free() it; one spare byte at the end), *len bytes.
   A missing, unreadable or larger than max file fails with status bad. */
enum mps_status mps_file_read(const char *path, size_t max, enum mps_status bad, unsigned char **buf, size_t *len,
                              struct mps_error *err);

/* Opens rel, a relative path, inside the folder dir: each component is opened
   relative to the folder opened before it and none may be a symbolic link or
   "..", so the file reached lies inside dir whatever links the folder holds,
   and nothing can swap a link in between a check and the open. Fails with
   status bad unless the file is a regular file; returns its descriptor in *fd
   and its size in *size. */
enum mps_status mps_file_open_inside(const char *dir, const char *rel, enum mps_status bad, int *fd, int64_t *size,
                                     struct mps_error *err);

/* Reads bytes at offset of the open file fd into dst; fails with status bad. */
enum mps_status mps_file_pread(int fd, void *dst, size_t bytes, int64_t offset, enum mps_status bad,
                               struct mps_error *err);

#endif
