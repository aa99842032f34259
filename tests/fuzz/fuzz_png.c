/* fuzz_png.c: libFuzzer target for the PNG path: libpng decoding through
   mpsrun's reader, channel conversion and resizing to a model's input.
   Built with -DMPSRUN_FUZZ=ON (clang); scripts/fuzz runs it. */
#include <stddef.h>
#include <stdint.h>

#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the first byte picks the target: 1 or 3 channels, shrink or enlarge */
    const struct mps_image_opts o[2] = {
        {.channels = 1, .height = 28, .width = 28, .mean = {0.5f}, .std = {0.5f, 1, 1}},
        {.channels = 3, .height = 7, .width = 40, .mean = {0}, .std = {1, 1, 1}},
    };
    static float out[3 * 28 * 40];
    struct mps_image_info info;
    struct mps_error err;
    if (size > 0)
        mps_image_decode(data + 1, size - 1, &o[data[0] & 1], out, &info, &err);
    return 0;
}
