/* fuzz_npy.c: libFuzzer target for the .npy reader: magic, version, header
   dict, shape and data length. Built with -DMPSRUN_FUZZ=ON (clang). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mps_tensor t;
    struct mps_error err;
    if (mps_npy_parse(data, size, &t, &err) == MPS_OK)
        free(t.data);
    return 0;
}
