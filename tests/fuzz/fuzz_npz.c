/* fuzz_npz.c: libFuzzer target for the .npz reader: the zip's end record
   and directory, each entry's local header, stored and deflated data, its
   CRC and the .npy inside, read from a file as infer reads one (a memfd).
   Any crash, leak or sanitizer report is a bug. Built with -DMPSRUN_FUZZ=ON. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mps_npz *z;
    struct mps_error err;
    char path[64];
    int fd = memfd_create("fuzz_npz", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (mps_npz_open(path, &z, &err) == MPS_OK && z) {
        for (int i = 0; i < mps_npz_count(z); i++) {
            struct mps_tensor t;
            if (mps_npz_read(z, i, &t, &err) == MPS_OK)
                free(t.data);
        }
        mps_npz_close(z);
    }
    close(fd);
    return 0;
}
