/* fuzz_png.c: libFuzzer target for the PNG path: mpsrun's fast path (zlib
   and its own unfiltering) and libpng through mpsrun's reader, channel
   conversion and resizing to a model's input. Every input is decoded both
   ways; any difference (status, message, a float's bits) aborts, so the
   fuzzer reports it. Built with -DMPSRUN_FUZZ=ON (clang); scripts/fuzz runs it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the first byte picks the target: 1 or 3 channels, shrink or enlarge */
    struct mps_image_opts o[2] = {
        {.channels = 1, .height = 28, .width = 28, .mean = {0.5f}, .std = {0.5f, 1, 1}},
        {.channels = 3, .height = 7, .width = 40, .mean = {0}, .std = {1, 1, 1}},
    };
    static float out[2][3 * 28 * 40];
    struct mps_image_info info[2];
    struct mps_error err[2] = {{{0}}, {{0}}};
    if (size == 0)
        return 0;
    struct mps_image_opts *t = &o[data[0] & 1];
    enum mps_status st = mps_image_decode(data + 1, size - 1, t, out[0], &info[0], &err[0]);
    t->reference = true;
    enum mps_status ref = mps_image_decode(data + 1, size - 1, t, out[1], &info[1], &err[1]);
    size_t n = (size_t)(t->channels * t->height * t->width);
    if (st != ref || strcmp(err[0].msg, err[1].msg) || (st == MPS_OK && memcmp(out[0], out[1], n * sizeof(float))))
        abort();
    return 0;
}
