/* image.h: PNG files to model input: decode (8-bit gray, gray+alpha, RGB
   and RGBA without interlacing: zlib and mpsrun's own unfiltering, straight
   into floats; everything else, and any file that path finds wrong: libpng,
   8- and 16-bit, palette, interlaced, tRNS), convert to the model's channel
   count, resize to its height and width (bilinear when enlarging, area
   averaging when shrinking), scale to [0,1], normalize by mean and std, and
   lay out as CHW floats.

       struct mps_image_opts o = {.channels = 1, .height = 28, .width = 28,
                                  .mean = {0.1307f}, .std = {0.3081f}};
       float chw[28 * 28];
       struct mps_image_info info;
       mps_image_load("digit.png", &o, chw, &info, &err);   // MPS_ERR_INPUT: corrupt, truncated, not a PNG

   Alpha is composited over black. Gray from color is ITU-R BT.601 luma. */
#ifndef MPS_IMAGE_H
#define MPS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct mps_image_opts {
    int channels;          /* 1 (gray) or 3 (RGB) */
    int64_t height, width; /* of the model's input */
    float mean[3], std[3]; /* per channel, applied after scaling to [0,1] */
    bool reference;        /* every file through libpng, none through the fast path (tests compare them) */
};

struct mps_image_info {
    uint32_t width, height; /* of the file */
    char format[32];        /* "gray 8-bit", "RGBA 16-bit", "palette 8-bit", ... */
    bool libpng;            /* read by libpng: not a file the fast path reads, or one it found wrong */
};

/* Largest image decoded, in pixels: a bound on memory, not on the use. */
#define MPS_IMAGE_MAX_PIXELS ((uint64_t)1 << 26)

/* Decodes the PNG in buf[len] into out (channels * height * width floats). */
enum mps_status mps_image_decode(const void *buf, size_t len, const struct mps_image_opts *o, float *out,
                                 struct mps_image_info *info, struct mps_error *err);
/* The same for the file at path. */
enum mps_status mps_image_load(const char *path, const struct mps_image_opts *o, float *out,
                               struct mps_image_info *info, struct mps_error *err);
/* Writes pixels (h rows of w pixels, 8 bits a channel, channels 1 or 3
   interleaved) as a gray or RGB PNG at path; with palette, pixels are one
   byte a pixel, class indices, written as a palette PNG whose colors are
   Pascal VOC's (class 0 black, 1 dark red, 2 dark green, ...). */
enum mps_status mps_image_write(const char *path, int channels, int64_t h, int64_t w, const uint8_t *pixels,
                                bool palette, struct mps_error *err);
/* Whether the start of a PNG file (its first 24 bytes or more) says an image
   mpsrun decodes: MPS_ERR_INPUT when its IHDR is larger, before the rest is
   read. *w and *h get the IHDR's size (0 when the head holds no IHDR). */
enum mps_status mps_image_check_head(const void *buf, size_t len, uint32_t *w, uint32_t *h, struct mps_error *err);
/* Whether buf starts with the PNG signature. */
int mps_image_is_png(const void *buf, size_t len);

#endif
