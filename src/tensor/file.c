#include "file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum mps_status mps_file_read(const char *path, size_t max, enum mps_status bad, unsigned char **buf, size_t *len,
                              struct mps_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return mps_fail(err, bad, "cannot open: %s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return mps_fail(err, bad, "not a regular file");
    if ((unsigned long long)st.st_size > max)
        return mps_fail(err, bad, "file of %lld bytes is larger than mpsrun reads (%zu MiB)", (long long)st.st_size,
                        max >> 20);
    FILE *f = fopen(path, "rb");
    if (!f)
        return mps_fail(err, bad, "cannot open: %s", strerror(errno));
    size_t size = (size_t)st.st_size;
    *buf = malloc(size + 1);
    if (!*buf) {
        fclose(f);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading %zu bytes", size);
    }
    *len = fread(*buf, 1, size, f);
    fclose(f);
    if (*len != size) {
        free(*buf);
        return mps_fail(err, bad, "cannot read the whole file");
    }
    (*buf)[size] = 0;
    return MPS_OK;
}
