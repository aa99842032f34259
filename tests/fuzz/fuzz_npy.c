/* fuzz_npy.c: libFuzzer target for the .npy reader: magic, version, header
   dict, shape and data length, through both ways in: the bytes in memory
   (mps_npy_parse) and a file's header read before its data
   (mps_npy_header_fd, from a memfd). The two must agree, down to the shape
   and dtype; any disagreement aborts. Built with -DMPSRUN_FUZZ=ON (clang). */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mps_tensor t;
    struct mps_npy_info info;
    struct mps_error err;
    int fd = memfd_create("fuzz_npy", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    enum mps_status from_file = mps_npy_header_fd(fd, (int64_t)size, &info, &err);
    close(fd);
    enum mps_status parsed = mps_npy_parse(data, size, &t, &err);
    if ((parsed == MPS_OK) != (from_file == MPS_OK))
        abort();
    if (parsed == MPS_OK) {
        if (t.dtype != info.dtype || !mps_shape_eq(&t.shape, &info.shape) || mps_tensor_bytes(&t) != info.bytes)
            abort();
        free(t.data);
    }
    return 0;
}
