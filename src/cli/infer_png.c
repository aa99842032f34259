/* infer_png.c: `mpsrun infer --output-png`: the first output as pictures,
   a class mask (the class per pixel, Pascal VOC's palette) or an image of 1
   or 3 channels, one PNG an item, each written whole or not at all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "image.h"
#include "infer_run.h"
#include "outfile.h"

/* --output-png: whether the first output can be pictures, and which kind:
   [batch, C, H, W] or [batch, H, W]; a class mask when it is integer, when
   --mask asks, or when C is neither 1 nor 3 (the class per pixel is the
   argmax over C); else an image of C channels. */
enum mps_status mps_infer_png_kind(const struct mps_value *o, bool mask, bool *is_mask, struct mps_error *err)
{
    char buf[64];
    int r = o->shape.ndim;
    bool integer = o->dtype == MPS_I64 || o->dtype == MPS_I32 || o->dtype == MPS_U8;
    int64_t c = r == 4 ? o->shape.dim[1] : 1;
    if ((r != 3 && r != 4) || (!integer && o->dtype != MPS_F32))
        return mps_fail(err, MPS_ERR_USAGE, "--output-png writes pictures: the model's first output must be "
                        "[batch, channels, height, width] or [batch, height, width], not %s %s",
                        mps_dtype_name(o->dtype), mps_shape_str(&o->shape, buf, sizeof buf));
    if (integer && c != 1)
        return mps_fail(err, MPS_ERR_USAGE, "--output-png: an integer output is a class mask of one channel, not %lld",
                        (long long)c);
    if (mask && !integer && c < 2)
        return mps_fail(err, MPS_ERR_USAGE, "--mask takes the class with the largest score at each pixel: the output "
                        "has %lld channel", (long long)c);
    *is_mask = integer || mask || (c != 1 && c != 3);
    if (*is_mask && !integer && c > 256)
        return mps_fail(err, MPS_ERR_USAGE, "--output-png: %lld classes; a palette PNG holds 256", (long long)c);
    return MPS_OK;
}

/* Row `row` of the chunk's first output as one picture's bytes: a mask's class
   per pixel (the first largest score; NaN scores never win, and a pixel of NaN
   scores only is class 0; integers as they are, 0 to 255), an image's values
   v in [0, 1] as round(255 v), clamped (NaN: 0), channels interleaved.
   MPS_ERR_INPUT for an integer class outside the palette: that item's picture
   cannot be made. */
static enum mps_status mps_infer_pixels(const struct mps_infer_run *run, const struct mps_tensor *out, int64_t row,
                                        struct mps_error *err)
{
    int r = out->shape.ndim;
    int64_t c = r == 4 ? out->shape.dim[1] : 1, h = out->shape.dim[r - 2], w = out->shape.dim[r - 1], plane = h * w;
    const float *f = (const float *)out->data + row * c * plane;
    for (int64_t i = 0; i < plane; i++) {
        if (!run->png_mask) {
            for (int64_t k = 0; k < c; k++) {
                float v = f[k * plane + i];
                run->pixels[i * c + k] = (uint8_t)(v > 0 ? (v < 1 ? lrintf(v * 255.0f) : 255) : 0);
            }
        } else if (out->dtype == MPS_F32) {
            int64_t best = -1;
            for (int64_t k = 0; k < c; k++) {
                float v = f[k * plane + i];
                if (v == v && (best < 0 || v > f[best * plane + i]))
                    best = k;
            }
            run->pixels[i] = (uint8_t)(best < 0 ? 0 : best);
        } else {
            int64_t at = row * plane + i;
            int64_t v = out->dtype == MPS_I64   ? ((const int64_t *)out->data)[at]
                        : out->dtype == MPS_I32 ? ((const int32_t *)out->data)[at]
                                                : ((const uint8_t *)out->data)[at];
            if (v < 0 || v > 255)
                return mps_fail(err, MPS_ERR_INPUT,
                                "--output-png: class %lld at pixel %lld is outside the palette's "
                                "0 to 255",
                                (long long)v, (long long)i);
            run->pixels[i] = (uint8_t)v;
        }
    }
    return MPS_OK;
}

/* Notes that the chunk's item `row` has no picture, for the report. */
static enum mps_status mps_infer_picture_failed(struct mps_infer_report *rep, int64_t row, const char *why,
                                                struct mps_error *err)
{
    if (rep->n_pic_failed == rep->cap_pic_failed) {
        int cap = rep->cap_pic_failed ? 2 * rep->cap_pic_failed : 8;
        struct mps_infer_pic_failure *grown = realloc(rep->pic_failed, sizeof *grown * (size_t)cap);
        if (!grown)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        rep->pic_failed = grown;
        rep->cap_pic_failed = cap;
    }
    rep->pic_failed[rep->n_pic_failed].row = row;
    snprintf(rep->pic_failed[rep->n_pic_failed++].why, sizeof rep->pic_failed[0].why, "%s", why);
    return MPS_OK;
}

/* Writes the chunk's pictures: PATH itself for the one item of a .png PATH,
   else PATH/NNNNNN.png by the input's place in the list (NNNNNN_K.png for
   item K of a .npy holding several). An item whose picture cannot be made
   is named; under --keep-going the others go on, else the stream stops. A
   picture that cannot be written stops it. */
enum mps_status mps_infer_pictures(struct mps_infer_run *run, struct mps_infer_result *r, struct mps_error *err)
{
    const struct mps_tensor *out = &r->groups[0].out[0];
    int rank = out->shape.ndim;
    int64_t row = 0, h = out->shape.dim[rank - 2], w = out->shape.dim[rank - 1];
    int channels = run->png_mask ? 1 : (int)(rank == 4 ? out->shape.dim[1] : 1);
    run->rep.n_pic_failed = 0;
    if (h * w * 3 > run->cap_pixels) { /* a model of free sizes: the pictures grow with the inputs */
        uint8_t *grown = realloc(run->pixels, (size_t)(h * w * 3 + 1));
        if (!grown)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        run->pixels = grown;
        run->cap_pixels = h * w * 3;
    }
    for (int fi = 0; fi < r->n_files; fi++)
        for (int64_t it = 0; it < r->files[fi].items; it++, row++) {
            char path[4200];
            mps_infer_picture_path(&run->rep, &r->files[fi], r->files[fi].item0 + it, path, sizeof path);
            enum mps_status st = mps_infer_pixels(run, out, row, err);
            if (st) {
                char why[sizeof err->msg];
                memcpy(why, err->msg, sizeof why);
                run->png_failed++;
                if (run->keep_going) {
                    if ((st = mps_infer_picture_failed(&run->rep, row, why, err)))
                        return st;
                    continue;
                }
                r->stopped = run->stop_named = true; /* the report ends; the exit code is the item's */
                run->stop_subject = r->files[fi].path;
                enum mps_status noted = MPS_OK;
                for (int64_t rest = row; rest < r->groups[0].items && !noted; rest++)
                    noted = mps_infer_picture_failed(&run->rep, rest,
                                                     rest == row ? why
                                                                 : "not written: the run "
                                                                   "stopped at an earlier item",
                                                     err);
                return noted ? noted : mps_fail(err, MPS_ERR_INPUT, "%s", why);
            }
            if ((st = mps_image_write(path, channels, h, w, run->pixels, run->png_mask, err))) {
                run->write_failed = true;
                return st;
            }
            run->png_written++;
        }
    return MPS_OK;
}
