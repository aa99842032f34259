#include "image.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "file.h"
#include "outfile.h"

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
    size_t px = *wide ? 8 : 4;             /* bytes a pixel */
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

/* Where decoded pixels go: the model's planes, values 0..255 with alpha
   applied, and normalized when no resize follows. */
struct mps_image_dst {
    const struct mps_image_opts *o;
    float *planes;
    size_t pixels; /* a plane's */
    bool normalize;
    float lut[3][256]; /* an 8-bit sample's value per channel (opaque pixels): filled by mps_image_lut */
};

/* One pixel (samples 0..255, alpha 0..1) into planes at i: gray stays exact,
   color becomes luma, alpha composites over black. */
static inline void mps_image_px(const struct mps_image_dst *d, size_t i, float r, float g, float b, float a)
{
    const struct mps_image_opts *o = d->o;
    for (int c = 0; c < o->channels; c++) {
        float v = o->channels == 1 ? (r == g && g == b ? r : 0.299f * r + 0.587f * g + 0.114f * b) * a
                                   : (c == 0   ? r
                                      : c == 1 ? g
                                               : b) *
                                         a;
        d->planes[(size_t)c * d->pixels + i] = d->normalize ? (v / 255.0f - o->mean[c]) / o->std[c] : v;
    }
}

/* The table of what mps_image_px gives an opaque gray or color sample v. */
static void mps_image_lut(struct mps_image_dst *d)
{
    for (int c = 0; c < d->o->channels; c++)
        for (int v = 0; v < 256; v++) {
            float x = (float)v;
            d->lut[c][v] = d->normalize ? (x / 255.0f - d->o->mean[c]) / d->o->std[c] : x;
        }
}

/* A row of w pixels of k 8-bit samples (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA)
   into the planes from pixel `at`; opaque gray and RGB through the table. */
static void mps_image_row8(const struct mps_image_dst *d, const unsigned char *p, int k, size_t w, size_t at)
{
    float *restrict y0 = d->planes + at, *restrict y1 = y0 + d->pixels, *restrict y2 = y1 + d->pixels;
    const float *restrict l0 = d->lut[0], *restrict l1 = d->lut[1], *restrict l2 = d->lut[2];
    if (k == 1 && d->o->channels == 1) {
        for (size_t x = 0; x < w; x++)
            y0[x] = l0[p[x]];
    } else if (k == 1) {
        for (size_t x = 0; x < w; x++)
            y0[x] = l0[p[x]], y1[x] = l1[p[x]], y2[x] = l2[p[x]];
    } else if (k == 3 && d->o->channels == 3) {
        for (size_t x = 0; x < w; x++, p += 3)
            y0[x] = l0[p[0]], y1[x] = l1[p[1]], y2[x] = l2[p[2]];
    } else {
        for (size_t x = 0; x < w; x++, p += k) {
            float a = k == 2 || k == 4 ? p[k - 1] / 255.0f : 1.0f;
            mps_image_px(d, at + x, p[0], k < 3 ? p[0] : p[1], k < 3 ? p[0] : p[2], a);
        }
    }
}

/* ---- the fast path -------------------------------------------------------------
   Non-interlaced 8-bit gray, gray+alpha, RGB and RGBA without tRNS (what
   cameras, datasets and PIL write) are read here: the chunks walked, IDAT
   inflated a row at a time, each row unfiltered and converted while it is
   in cache. libpng reads everything else, and any file this path finds
   wrong in any way (a CRC, a short or long stream, an odd chunk): so its
   errors are libpng's, and this path only ever succeeds on a file libpng
   reads to the same pixels (the fuzz target checks both on every input). */

static uint32_t mps_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The chunk at *at in buf[len]: its type and data; *at moves past it. False
   when it does not fit, its type is not four ASCII letters (libpng fails on
   any chunk's: the fuzz target found an ancillary one of bytes F9 00 00 00
   after IDAT), or it is critical (IHDR, IDAT, IEND, ...: libpng fails on
   those) and its CRC is wrong; an ancillary chunk's CRC, which libpng only
   warns about, is not read. */
static bool mps_png_chunk(const unsigned char *buf, size_t len, size_t *at, const unsigned char **type,
                          const unsigned char **data, uint32_t *n)
{
    if (len - *at < 12)
        return false;
    *n = mps_be32(buf + *at);
    if (*n > 0x7fffffffu || len - *at - 12 < *n)
        return false;
    *type = buf + *at + 4;
    *data = buf + *at + 8;
    for (int i = 0; i < 4; i++)
        if (!(((*type)[i] | 0x20) >= 'a' && ((*type)[i] | 0x20) <= 'z'))
            return false;
    if (!(**type & 0x20) && crc32(crc32(0, NULL, 0), *type, *n + 4) != mps_be32(*data + *n))
        return false;
    *at += 12 + (size_t)*n;
    return true;
}

/* IHDR of a file the fast path reads: its size and samples a pixel, else 0. */
static int mps_png_fast_kind(const unsigned char *buf, size_t len, uint32_t *w, uint32_t *h)
{
    size_t at = 8;
    const unsigned char *type, *d;
    uint32_t n;
    if (!mps_png_chunk(buf, len, &at, &type, &d, &n) || memcmp(type, "IHDR", 4) || n != 13)
        return 0;
    *w = mps_be32(d);
    *h = mps_be32(d + 4);
    static const int samples[7] = {1, 0, 3, 0, 2, 0, 4};
    if (*w == 0 || *h == 0 || *w > 1u << 16 || *h > 1u << 16 || (uint64_t)*w * *h > MPS_IMAGE_MAX_PIXELS || d[8] != 8 ||
        d[9] > 6 || d[10] || d[11] || d[12])
        return 0;
    return samples[d[9]];
}

/* Paeth's predictor, without branches (Fabian Giesen's form, as stb_image has it). */
static inline int mps_paeth(int a, int b, int c)
{
    int thresh = 3 * c - (a + b), lo = a < b ? a : b, hi = a < b ? b : a;
    int t0 = hi <= thresh ? lo : c;
    return thresh <= lo ? hi : t0;
}

/* Paeth's filter undone along a row of n bytes, pixels of bpp bytes (a
   constant where it is inlined): the left and upper-left bytes kept in
   registers, 0 left of the first pixel as the PNG specification has it. */
static inline void mps_png_paeth(unsigned char *x, const unsigned char *b, size_t n, const int bpp)
{
    int a[4] = {0}, c[4] = {0};
    for (size_t i = 0; i < n; i += (size_t)bpp)
        for (int j = 0; j < bpp; j++) {
            int up = b[i + (size_t)j];
            a[j] = (x[i + (size_t)j] + mps_paeth(a[j], up, c[j])) & 255;
            x[i + (size_t)j] = (unsigned char)a[j];
            c[j] = up;
        }
}

/* Undoes row's filter (its first byte) against prev (zeros above the first row). */
static bool mps_png_unfilter(unsigned char *row, const unsigned char *prev, size_t n, int bpp)
{
    unsigned char *x = row + 1;
    const unsigned char *b = prev + 1;
    switch (row[0]) {
    case 0: return true;
    case 1:
        for (size_t i = (size_t)bpp; i < n; i++)
            x[i] = (unsigned char)(x[i] + x[i - (size_t)bpp]);
        return true;
    case 2:
        for (size_t i = 0; i < n; i++)
            x[i] = (unsigned char)(x[i] + b[i]);
        return true;
    case 3:
        for (size_t i = 0; i < (size_t)bpp; i++)
            x[i] = (unsigned char)(x[i] + (b[i] >> 1));
        for (size_t i = (size_t)bpp; i < n; i++)
            x[i] = (unsigned char)(x[i] + ((x[i - (size_t)bpp] + b[i]) >> 1));
        return true;
    case 4: /* the common filter of photos: one body per pixel size */
        if (bpp == 1)
            mps_png_paeth(x, b, n, 1);
        else if (bpp == 2)
            mps_png_paeth(x, b, n, 2);
        else if (bpp == 3)
            mps_png_paeth(x, b, n, 3);
        else
            mps_png_paeth(x, b, n, 4);
        return true;
    default: return false;
    }
}

/* The image data being inflated. */
struct mps_png_idat {
    const unsigned char *buf;
    size_t len, at; /* the chunk after the one being inflated */
    z_stream z;
};

/* Inflates up to n bytes of image data into out, moving through IDAT
   chunks: Z_OK with all n, Z_STREAM_END where the stream ends (its check
   value read; s->z.avail_out says what is missing), or an error. */
static int mps_png_inflate(struct mps_png_idat *s, unsigned char *out, size_t n)
{
    s->z.next_out = out;
    s->z.avail_out = (uInt)n;
    while (s->z.avail_out > 0) {
        if (s->z.avail_in == 0) {
            const unsigned char *type, *d;
            uint32_t len;
            size_t at = s->at;
            if (!mps_png_chunk(s->buf, s->len, &at, &type, &d, &len) || memcmp(type, "IDAT", 4))
                return Z_DATA_ERROR;
            s->at = at;
            s->z.next_in = (unsigned char *)d;
            s->z.avail_in = len;
            continue;
        }
        int z = inflate(&s->z, Z_NO_FLUSH);
        if (z != Z_OK)
            return z;
    }
    return Z_OK;
}

/* Decodes a file of mps_png_fast_kind k into d, or says false (libpng then reads it). */
static bool mps_png_fast(const unsigned char *buf, size_t len, int k, uint32_t w, uint32_t h,
                         const struct mps_image_dst *d)
{
    struct mps_png_idat s = {.buf = buf, .len = len, .at = 8 + 25};
    const unsigned char *type, *data;
    uint32_t n;
    for (size_t at = s.at;; s.at = at) { /* to the first IDAT: ancillary chunks are skipped, tRNS and PLTE not */
        if (!mps_png_chunk(buf, len, &at, &type, &data, &n))
            return false;
        if (!memcmp(type, "IDAT", 4))
            break;
        if (!(type[0] & 0x20) || !memcmp(type, "tRNS", 4))
            return false;
    }
    size_t stride = (size_t)w * (size_t)k;
    unsigned char *rows = calloc(2, stride + 1);
    if (!rows || inflateInit(&s.z) != Z_OK) {
        free(rows);
        return false;
    }
    int z = Z_OK;
    bool ok = true;
    for (uint32_t y = 0; ok && y < h; y++) {
        unsigned char *row = rows + (y & 1) * (stride + 1), *prev = rows + (~y & 1) * (stride + 1);
        z = mps_png_inflate(&s, row, stride + 1);
        ok = (z == Z_OK || (z == Z_STREAM_END && s.z.avail_out == 0 && y == h - 1)) &&
             mps_png_unfilter(row, prev, stride, k);
        if (ok)
            mps_image_row8(d, row + 1, k, w, (size_t)y * w);
    }
    if (ok && z != Z_STREAM_END) { /* the stream must end with the image: its check value read */
        unsigned char extra;
        ok = mps_png_inflate(&s, &extra, 1) == Z_STREAM_END && s.z.avail_out == 1;
    }
    inflateEnd(&s.z);
    free(rows);
    for (size_t at = s.at; ok;) { /* to IEND, past ancillary chunks */
        ok = mps_png_chunk(buf, len, &at, &type, &data, &n) && (type[0] & 0x20 || !memcmp(type, "IEND", 4));
        if (ok && !memcmp(type, "IEND", 4))
            return true;
    }
    return false;
}

/* ---- decode -------------------------------------------------------------------- */

enum mps_status mps_image_decode(const void *buf, size_t len, const struct mps_image_opts *o, float *out,
                                 struct mps_image_info *info, struct mps_error *err)
{
    if (!mps_image_is_png(buf, len))
        return mps_fail(err, MPS_ERR_INPUT, "not a PNG file (no PNG signature)");
    uint32_t w = 0, h = 0;
    int k = o->reference ? 0 : mps_png_fast_kind(buf, len, &w, &h);
    void *rgba = NULL;
    bool wide = false;
    enum mps_status st = MPS_OK;
    info->libpng = !k;
    if (k) {
        info->width = w;
        info->height = h;
        mps_image_describe(
            (int[]){0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA}[k],
            8, PNG_INTERLACE_NONE, info);
    } else if ((st = mps_image_rgba(buf, len, &rgba, &wide, info, err))) {
        return st;
    }
    size_t pixels = (size_t)info->width * info->height;
    bool same = info->width == o->width && info->height == o->height; /* no resize: straight into out */
    struct mps_image_dst *d = malloc(sizeof *d);
    float *planes = same ? out : malloc(sizeof(float) * pixels * (size_t)o->channels);
    struct mps_tap *ty = malloc(sizeof *ty * (size_t)o->height), *tx = malloc(sizeof *tx * (size_t)o->width);
    if (!d || !planes || !ty || !tx) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory decoding a %ux%u PNG", info->width, info->height);
        goto out;
    }
    *d = (struct mps_image_dst){.o = o, .planes = planes, .pixels = pixels, .normalize = same};
    mps_image_lut(d);
    if (k && !mps_png_fast(buf, len, k, w, h, d)) {
        info->libpng = true;
        if ((st = mps_image_rgba(buf, len, &rgba, &wide, info, err)))
            goto out;
    }
    for (size_t y = 0; rgba && !wide && y < info->height; y++)
        mps_image_row8(d, (const unsigned char *)rgba + y * info->width * 4, 4, info->width, y * info->width);
    for (size_t i = 0; rgba && wide && i < pixels; i++) {
        /* 0..255, and alpha 0..1: a 16-bit v * 257 divides back to the v of 8 bits exactly, and
           a * 257 / 65535 rounds as a / 255 does (the same rational number) */
        const uint16_t *p = (const uint16_t *)rgba + 4 * i;
        mps_image_px(d, i, p[0] / 257.0f, p[1] / 257.0f, p[2] / 257.0f, p[3] / 65535.0f);
    }
    if (!same) {
        mps_image_taps(info->height, o->height, ty);
        mps_image_taps(info->width, o->width, tx);
    }
    for (int c = 0; !same && c < o->channels; c++)
        mps_image_resize(planes + (size_t)c * pixels, info->height, info->width,
                         out + (size_t)c * (size_t)(o->height * o->width), o->height, o->width, ty, tx, o->mean[c],
                         o->std[c]);
out:
    free(rgba);
    if (!same)
        free(planes);
    free(d);
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

enum mps_status mps_image_check_head(const void *buf, size_t len, uint32_t *w, uint32_t *h, struct mps_error *err)
{
    const unsigned char *b = buf;
    *w = *h = 0;
    if (len < 24 || memcmp(b + 12, "IHDR", 4) != 0)
        return MPS_OK; /* libpng says what is wrong */
    *w = (uint32_t)b[16] << 24 | (uint32_t)b[17] << 16 | (uint32_t)b[18] << 8 | b[19];
    *h = (uint32_t)b[20] << 24 | (uint32_t)b[21] << 16 | (uint32_t)b[22] << 8 | b[23];
    if (*w > 1u << 16 || *h > 1u << 16 || (uint64_t)*w * *h > MPS_IMAGE_MAX_PIXELS)
        return mps_fail(err, MPS_ERR_INPUT,
                        "a PNG of %ux%u pixels is larger than mpsrun decodes (2^26 pixels, 65,536 a side)", *w, *h);
    return MPS_OK;
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
    struct mps_out out; /* written beside its name, renamed over it when whole */
    enum mps_status st = mps_out_open(path, &out, err);
    if (st)
        return st;
    FILE *f = out.f;
    char why[sizeof err->msg] = "out of memory";
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, why, mps_png_error, mps_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    volatile bool ok = false;
    if (png && info && !setjmp(png_jmpbuf(png))) {
        png_color pal[256];
        png_init_io(png, f);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8,
                     palette         ? PNG_COLOR_TYPE_PALETTE
                     : channels == 3 ? PNG_COLOR_TYPE_RGB
                                     : PNG_COLOR_TYPE_GRAY,
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
    if (ok)
        return mps_out_commit(&out, err);
    mps_out_abort(&out);
    return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, why);
}
