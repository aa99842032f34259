/* file.h: reading a whole file into memory, with the failure reported as the
   status the caller's kind of file calls for (a bad model is MPS_ERR_MODEL,
   a bad input MPS_ERR_INPUT). */
#ifndef MPS_FILE_H
#define MPS_FILE_H

#include <stddef.h>

#include "status.h"

/* Reads path into *buf (free() it; one spare byte at the end), *len bytes.
   A missing, unreadable or larger than max file fails with status bad. */
enum mps_status mps_file_read(const char *path, size_t max, enum mps_status bad, unsigned char **buf, size_t *len,
                              struct mps_error *err);

#endif
