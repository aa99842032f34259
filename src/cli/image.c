#include "image.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"

int mps_image_is_png(const void *buf, size_t len)
{
    return len >= 8 && png_sig_cmp((png_const_bytep)buf, 0, 8) == 0;
}

/* Source taps of one output index along an axis, with their weights. */
struct mps_tap {
    int64_t first, count; /* source range [first, first + count) */
    float w[64];          /* weights; an area tap wider than 64 pixels is split evenly (weights 1/count) */
    bool uniform;
};

/* Weights for resizing n_in to n_out along one axis: area averaging when
   shrinking (each output covers n_in/n_out inputs, partial ones in part),
   bilinear with half-pixel centers when enlarging or equal. */
static void mps_image_taps(int64_t n_in, int64_t n_out, struct mps_tap *taps)
{
    double scale = (double)n_in / (double)n_out;
    for (int64_t o = 0; o < n_out; o++) {
        struct mps_tap *t = &taps[o];
        memset(t, 0, sizeof *t);
        if (n_in > n_out) {
            double lo = (double)o * scale, hi = lo + scale;
            t->first = (int64_t)lo;
            int64_t last = (int64_t)hi < n_in ? (int64_t)hi : n_in - 1;
            if ((double)last == hi)
                last--;
            t->count = last - t->first + 1;
            if (t->count > 64) {
                t->uniform = true; /* over 64:1, plain averaging loses nothing that matters */
                continue;
            }
            for (int64_t i = 0; i < t->count; i++) {
                double a = (double)(t->first + i), b = a + 1;
                double cover = (b < hi ? b : hi) - (a > lo ? a : lo);
                t->w[i] = (float)(cover / scale);
            }
        } else {
            double x = ((double)o + 0.5) * scale - 0.5;
            if (x < 0)
                x = 0;
            int64_t x0 = (int64_t)x, x1 = x0 + 1 < n_in ? x0 + 1 : x0;
            float f = (float)(x - (double)x0);
            t->first = x0;
            t->count = x1 - x0 + 1;
            t->w[0] = t->count == 1 ? 1.0f : 1.0f - f;
            if (t->count == 2)
                t->w[1] = f;
        }
    }
}

static float mps_tap_weight(const struct mps_tap *t, int64_t i)
{
    return t->uniform ? 1.0f / (float)t->count : t->w[i];
}

/* plane[h][w] (values 0..255) resized into out[oh][ow], scaled and normalized. */
static void mps_image_resize(const float *plane, int64_t h, int64_t w, float *out, int64_t oh, int64_t ow,
                             const struct mps_tap *ty, const struct mps_tap *tx, float mean, float std)
{
    for (int64_t y = 0; y < oh; y++)
        for (int64_t x = 0; x < ow; x++) {
            float acc = 0;
            for (int64_t i = 0; i < ty[y].count; i++) {
                const float *row = plane + (ty[y].first + i) * w;
                float wy = mps_tap_weight(&ty[y], i), rx = 0;
                for (int64_t j = 0; j < tx[x].count; j++)
                    rx += mps_tap_weight(&tx[x], j) * row[tx[x].first + j];
                acc += wy * rx;
            }
            out[y * ow + x] = (acc / 255.0f - mean) / std;
        }
    (void)h;
}

/* libpng reads from memory through this; its errors longjmp back to decode. */
struct mps_png_src {
    const unsigned char *buf;
    size_t len, at;
};

static void mps_png_read(png_structp png, png_bytep out, png_size_t n)
{
    struct mps_png_src *src = png_get_io_ptr(png);
    if (n > src->len - src->at)
        png_error(png, "truncated: the file ends inside the image");
    memcpy(out, src->buf + src->at, n);
    src->at += n;
}

static void mps_png_error(png_structp png, png_const_charp msg)
{
    snprintf(png_get_error_ptr(png), sizeof(((struct mps_error *)0)->msg), "%s", msg);
    png_longjmp(png, 1);
}

static void mps_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* benign chunk problems: the pixels decide */
}

static void mps_image_describe(int color, int depth, int interlace, struct mps_image_info *info)
{
    const char *kind = color == PNG_COLOR_TYPE_PALETTE      ? "palette"
                       : color == PNG_COLOR_TYPE_RGB        ? "RGB"
                       : color == PNG_COLOR_TYPE_RGB_ALPHA  ? "RGBA"
                       : color == PNG_COLOR_TYPE_GRAY_ALPHA ? "gray+alpha"
                                                            : "gray";
    snprintf(info->format, sizeof info->format, "%s %d-bit%s", kind, depth,
             interlace == PNG_INTERLACE_ADAM7 ? " interlaced" : "");
}

/* Decodes buf into rows of RGBA: 8-bit samples for files of 8 bits or fewer
   (palettes, gray and low bit depths expanded, transparency to alpha), 16-bit
   ones (native byte order) for 16-bit files, *wide then set; interlacing
   undone, and no gamma transform, so values come back as the file has them. */
static enum mps_status mps_image_rgba(const void *buf, size_t len, void **rgba, bool *wide, struct mps_image_info *info,
                                      struct mps_error *err)
{
    char why[sizeof err->msg] = "";
    struct mps_png_src src = {buf, len, 0};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, why, mps_png_error, mps_png_warning);
    png_infop pi = png ? png_create_info_struct(png) : NULL;
    unsigned char *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    if (!pi) {
        png_destroy_read_struct(&png, NULL, NULL);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &pi, NULL);
        free(pixels);
        free(rows);
        return mps_fail(err, MPS_ERR_INPUT, "corrupt PNG: %s", why);
    }
    png_set_read_fn(png, &src, mps_png_read);
    png_set_user_limits(png, 1u << 16, 1u << 16);
    png_read_info(png, pi);
    png_uint_32 w = png_get_image_width(png, pi), h = png_get_image_height(png, pi);
    int color = png_get_color_type(png, pi), depth = png_get_bit_depth(png, pi);
    info->width = w;
    info->height = h;
    mps_image_describe(color, depth, png_get_interlace_type(png, pi), info);
    if ((uint64_t)w * h > MPS_IMAGE_MAX_PIXELS)
        png_error(png, "larger than mpsrun decodes (2^26 pixels)");
    *wide = depth == 16;
    size_t px = *wide ? 8 : 4; /* bytes a pixel */
    if (color == PNG_COLOR_TYPE_PALETTE) { /* indices read as bytes and looked up here: each one checked */
        png_set_packing(png);
        png_set_interlace_handling(png);
        png_read_update_info(png, pi);
        if (png_get_rowbytes(png, pi) != w)
            png_error(png, "unexpected row layout of palette indices");
        pixels = malloc((size_t)w * h * 4);
        rows = malloc(sizeof *rows * h);
        if (!pixels || !rows)
            png_error(png, "out of memory");
        for (png_uint_32 y = 0; y < h; y++) /* each row's indices at the end of its RGBA row, expanded in place */
            rows[y] = pixels + (size_t)y * w * 4 + (size_t)w * 3;
        png_read_image(png, rows);
        png_read_end(png, NULL);
        png_colorp pal = NULL;
        png_bytep trans = NULL;
        int n_pal = 0, n_trans = 0;
        png_get_PLTE(png, pi, &pal, &n_pal);
        png_get_tRNS(png, pi, &trans, &n_trans, NULL);
        for (png_uint_32 y = 0; y < h; y++)
            for (png_uint_32 x = 0; x < w; x++) {
                int i = rows[y][x];
                if (i >= n_pal)
                    png_error(png, n_pal ? "a pixel's palette index is past the palette" : "no palette");
                unsigned char *o = pixels + ((size_t)y * w + x) * 4; /* at or before the index it overwrites */
                o[0] = pal[i].red;
                o[1] = pal[i].green;
                o[2] = pal[i].blue;
                o[3] = i < n_trans ? trans[i] : 255;
            }
        png_destroy_read_struct(&png, &pi, NULL);
        free(rows);
        *rgba = pixels;
        return MPS_OK;
    }
    png_set_expand(png); /* gray < 8 bits to 8, tRNS to alpha */
    png_set_gray_to_rgb(png);
    png_set_add_alpha(png, *wide ? 0xffff : 0xff, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (*wide)
        png_set_swap(png); /* PNG stores 16-bit samples big-endian */
#endif
    png_read_update_info(png, pi);
    if (png_get_rowbytes(png, pi) != (size_t)w * px)
        png_error(png, "unexpected row layout after expansion");
    pixels = malloc((size_t)w * h * px);
    rows = malloc(sizeof *rows * h);
    if (!pixels || !rows)
        png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++)
        rows[y] = pixels + (size_t)y * w * px;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &pi, NULL);
    free(rows);
    *rgba = pixels;
    return MPS_OK;
}

enum mps_status mps_image_decode(const void *buf, size_t len, const struct mps_image_opts *o, float *out,
                                 struct mps_image_info *info, struct mps_error *err)
{
    if (!mps_image_is_png(buf, len))
        return mps_fail(err, MPS_ERR_INPUT, "not a PNG file (no PNG signature)");
    void *rgba = NULL;
    bool wide;
    enum mps_status st = mps_image_rgba(buf, len, &rgba, &wide, info, err);
    if (st)
        return st;
    size_t pixels = (size_t)info->width * info->height;
    bool same = info->width == o->width && info->height == o->height; /* no resize: straight into out */
    float *planes = same ? out : malloc(sizeof(float) * pixels * (size_t)o->channels);
    struct mps_tap *ty = malloc(sizeof *ty * (size_t)o->height), *tx = malloc(sizeof *tx * (size_t)o->width);
    if (!planes || !ty || !tx) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory decoding a %ux%u PNG", info->width, info->height);
    } else {
        const unsigned char *p8 = rgba;
        const uint16_t *p16 = rgba;
        for (size_t i = 0; i < pixels; i++) {
            /* 0..255, and alpha 0..1: a 16-bit v * 257 divides back to the v of 8 bits exactly, and
               a * 257 / 65535 rounds as a / 255 does (the same rational number) */
            float r = wide ? p16[4 * i] / 257.0f : p8[4 * i], g = wide ? p16[4 * i + 1] / 257.0f : p8[4 * i + 1],
                  b = wide ? p16[4 * i + 2] / 257.0f : p8[4 * i + 2],
                  a = wide ? p16[4 * i + 3] / 65535.0f : p8[4 * i + 3] / 255.0f;
            if (o->channels == 1) /* gray stays exact; color becomes luma; alpha composites over black */
                planes[i] = (r == g && g == b ? r : 0.299f * r + 0.587f * g + 0.114f * b) * a;
            else
                for (int c = 0; c < 3; c++)
                    planes[(size_t)c * pixels + i] = (c == 0 ? r : c == 1 ? g : b) * a;
        }
        for (int c = 0; same && c < o->channels; c++) /* what the resize computes at scale 1 (weights 1 and 0) */
            for (size_t i = 0; i < pixels; i++)
                out[(size_t)c * pixels + i] = (out[(size_t)c * pixels + i] / 255.0f - o->mean[c]) / o->std[c];
        if (!same) {
            mps_image_taps(info->height, o->height, ty);
            mps_image_taps(info->width, o->width, tx);
        }
        for (int c = 0; !same && c < o->channels; c++)
            mps_image_resize(planes + (size_t)c * pixels, info->height, info->width,
                             out + (size_t)c * (size_t)(o->height * o->width), o->height, o->width, ty, tx,
                             o->mean[c], o->std[c]);
    }
    free(rgba);
    if (!same)
        free(planes);
    free(ty);
    free(tx);
    return st;
}

enum mps_status mps_image_load(const char *path, const struct mps_image_opts *o, float *out,
                               struct mps_image_info *info, struct mps_error *err)
{
    unsigned char *buf;
    size_t len;
    enum mps_status st = mps_file_read(path, (size_t)1 << 30, MPS_ERR_INPUT, &buf, &len, err);
    if (st)
        return st;
    st = mps_image_decode(buf, len, o, out, info, err);
    free(buf);
    return st;
}

/* Pascal VOC's palette: class k's color from its bits, interleaved high to low. */
static void mps_image_palette(png_color *pal)
{
    for (int k = 0; k < 256; k++) {
        int c = k, rgb[3] = {0, 0, 0};
        for (int bit = 7; c; bit--, c >>= 3)
            for (int j = 0; j < 3; j++)
                rgb[j] |= ((c >> j) & 1) << bit;
        pal[k] = (png_color){(png_byte)rgb[0], (png_byte)rgb[1], (png_byte)rgb[2]};
    }
}

enum mps_status mps_image_write(const char *path, int channels, int64_t h, int64_t w, const uint8_t *pixels,
                                bool palette, struct mps_error *err)
{
    if (h <= 0 || w <= 0 || h > INT32_MAX || w > INT32_MAX || (uint64_t)h * (uint64_t)w > MPS_IMAGE_MAX_PIXELS)
        return mps_fail(err, MPS_ERR_USAGE, "%s: a %lldx%lld picture cannot be written", path, (long long)h,
                        (long long)w);
    FILE *f = fopen(path, "wb");
    if (!f)
        return mps_fail(err, MPS_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
    char why[sizeof err->msg] = "out of memory";
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, why, mps_png_error, mps_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    volatile bool ok = false;
    if (png && info && !setjmp(png_jmpbuf(png))) {
        png_color pal[256];
        png_init_io(png, f);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                     palette ? PNG_COLOR_TYPE_PALETTE : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        if (palette) {
            mps_image_palette(pal);
            png_set_PLTE(png, info, pal, 256);
        }
        png_write_info(png, info);
        for (int64_t y = 0; y < h; y++)
            png_write_row(png, (png_const_bytep)(pixels + (size_t)(y * w * (palette ? 1 : channels))));
        png_write_end(png, NULL);
        ok = true;
    }
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    if (fclose(f) != 0 && ok) {
        snprintf(why, sizeof why, "%s", strerror(errno));
        ok = false;
    }
    return ok ? MPS_OK : mps_fail(err, MPS_ERR_INPUT, "%s: cannot write: %s", path, why);
}
