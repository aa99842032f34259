/* test_png.c: the PNG fast path (image.c) against libpng reading the same
   bytes. PNGs are written here, byte by byte, in each form the fast path
   takes (8-bit gray, gray+alpha, RGB, RGBA), with every row filter, random
   pixels (every branch of Paeth's predictor), the image data split over
   several IDAT chunks and ancillary chunks around them; then broken in each
   way a file can be (a CRC, a filter byte, a short or overlong stream, a
   missing IEND, a tRNS chunk). Every file is decoded to gray and to RGB, at
   its own size and resized, through both paths: the floats must be equal
   to the bit, the errors word for word, and a good file must take the fast
   path. PNG files named on the command line (real ones, as PIL writes
   them: 8-bit, not interlaced) are checked the same way, and must take the
   fast path too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "file.h"
#include "harness.h"
#include "image.h"

struct png {
    unsigned char *b;
    size_t n, cap;
};

static void put(struct png *p, const void *d, size_t n)
{
    if (n == 0)
        return;
    if (p->n + n > p->cap) {
        p->cap = 2 * (p->n + n);
        p->b = realloc(p->b, p->cap);
        if (!p->b)
            abort();
    }
    memcpy(p->b + p->n, d, n);
    p->n += n;
}

static void put32(struct png *p, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    put(p, b, 4);
}

static void chunk(struct png *p, const char *type, const unsigned char *d, uint32_t n)
{
    put32(p, n);
    size_t at = p->n;
    put(p, type, 4);
    put(p, d, n);
    put32(p, (uint32_t)crc32(0, p->b + at, n + 4));
}

/* The predictor as the PNG specification writes it. */
static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

enum fault { GOOD, BAD_IDAT_CRC, BAD_FILTER, SHORT_STREAM, LONG_STREAM, NO_IEND, TRNS, BAD_TYPE, N_FAULTS };
static const char *fault_name[] = {"good",    "an IDAT's CRC wrong", "filter byte 5", "a row short", "a row too many",
                                   "no IEND", "a tRNS chunk",        "a chunk type of bytes F9 00 00 00 after IDAT"};

/* A w x h PNG of k samples a pixel (1, 2, 3, 4) with random pixels, row y
   filtered with filter (y + first) % 5, broken as fault says. */
static struct png make_png(int w, int h, int k, int first, enum fault fault)
{
    static const unsigned char color[5] = {0, 0, 4, 2, 6};
    size_t stride = (size_t)w * (size_t)k;
    int rows = h + (fault == LONG_STREAM) - (fault == SHORT_STREAM);
    unsigned char *raw = calloc((size_t)rows + 1, stride), *filt = malloc((size_t)rows * (stride + 1));
    for (size_t i = 0; i < (size_t)rows * stride; i++) /* runs of equal bytes too, so predictors tie */
        raw[stride + i] = th_uniform(0, 1) < 0.3 ? raw[stride + i - 1] : (unsigned char)th_uniform(0, 256);
    for (int y = 0; y < rows; y++) {
        const unsigned char *x = raw + (size_t)(y + 1) * stride, *up = x - stride; /* row 0's up: zeros */
        unsigned char *f = filt + (size_t)y * (stride + 1);
        int type = (y + first) % 5;
        f[0] = (unsigned char)(fault == BAD_FILTER && y == h / 2 ? 5 : type);
        for (size_t i = 0; i < stride; i++) {
            int a = i >= (size_t)k ? x[i - (size_t)k] : 0, b = y ? up[i] : 0,
                c = i >= (size_t)k && y ? up[i - (size_t)k] : 0;
            int pred = type == 0 ? 0 : type == 1 ? a : type == 2 ? b : type == 3 ? (a + b) / 2 : paeth(a, b, c);
            f[1 + i] = (unsigned char)(x[i] - pred);
        }
    }
    uLongf zn = compressBound((uLong)rows * (stride + 1));
    unsigned char *z = malloc(zn);
    if (!raw || !filt || !z || compress2(z, &zn, filt, (uLong)rows * (stride + 1), 6) != Z_OK)
        abort();
    struct png p = {0};
    put(&p, "\x89PNG\r\n\x1a\n", 8);
    unsigned char ihdr[13] = {0,
                              0,
                              (unsigned char)(w >> 8),
                              (unsigned char)w,
                              0,
                              0,
                              (unsigned char)(h >> 8),
                              (unsigned char)h,
                              8,
                              color[k],
                              0,
                              0,
                              0};
    chunk(&p, "IHDR", ihdr, 13);
    chunk(&p, "tEXt", (const unsigned char *)"Comment\0mpsrun", 14);
    if (fault == TRNS)
        chunk(&p, "tRNS", (const unsigned char[]){0, 7, 0, 7, 0, 7}, k == 1 ? 2 : 6);
    for (uLongf at = 0, part = 1; at < zn; at += part, part = part * 3 + 1) { /* IDATs of 1, 4, 13, ... bytes */
        uLongf n = part < zn - at ? part : zn - at;
        size_t crc_at = p.n + 8 + n;
        chunk(&p, "IDAT", z + at, (uint32_t)n);
        if (fault == BAD_IDAT_CRC && at + n == zn)
            p.b[crc_at] ^= 1;
    }
    chunk(&p, fault == BAD_TYPE ? "\xf9\0\0\0" : "tIME", (const unsigned char[]){7, 234, 11, 26, 12, 0, 0}, 7);
    if (fault != NO_IEND)
        chunk(&p, "IEND", NULL, 0);
    free(raw);
    free(filt);
    free(z);
    return p;
}

/* Decodes buf both ways to each target; true when the fast path read it. */
static bool compare(const char *what, const unsigned char *buf, size_t len)
{
    bool fast = false;
    for (int t = 0; t < 4; t++) {
        struct mps_image_opts o = {
            .channels = t & 1 ? 3 : 1, .mean = {0.485f, 0.456f, 0.406f}, .std = {0.229f, 0.224f, 0.225f}};
        struct mps_image_info info;
        struct mps_error err = {{0}};
        if (mps_image_decode(buf, len, &(struct mps_image_opts){.channels = 1, .height = 1, .width = 1, .std = {1}},
                             (float[1]){0}, &info, &err) == MPS_OK &&
            t < 2)
            o.height = info.height, o.width = info.width; /* its own size: no resize */
        else
            o.height = 7, o.width = 40; /* shrinks one axis, enlarges the other */
        size_t n = (size_t)(o.channels * o.height * o.width);
        float *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
        struct mps_image_info ia = {0}, ib = {0};
        struct mps_error ea = {{0}}, eb = {{0}};
        enum mps_status sa = mps_image_decode(buf, len, &o, a, &ia, &ea);
        o.reference = true;
        enum mps_status sb = mps_image_decode(buf, len, &o, b, &ib, &eb);
        th_check(sa == sb && !strcmp(ea.msg, eb.msg) && !strcmp(ia.format, ib.format),
                 "%s, %d channels %lldx%lld: status %d '%s' (%s) vs libpng's %d '%s' (%s)", what, o.channels,
                 (long long)o.height, (long long)o.width, sa, ea.msg, ia.format, sb, eb.msg, ib.format);
        if (sa == MPS_OK && sb == MPS_OK)
            th_check(!memcmp(a, b, n * sizeof *a), "%s, %d channels %lldx%lld: the floats equal libpng's to the bit",
                     what, o.channels, (long long)o.height, (long long)o.width);
        th_check(ib.libpng || sb != MPS_OK, "%s: the reference is read by libpng", what);
        fast = fast || (sa == MPS_OK && !ia.libpng);
        free(a);
        free(b);
    }
    return fast;
}

int main(int argc, char **argv)
{
    th_seed("png");
    static const char *kinds[5] = {"", "gray", "gray+alpha", "RGB", "RGBA"};
    for (int k = 1; k <= 4; k++)
        for (int f = GOOD; f < N_FAULTS; f++) {
            int w = f ? 9 : 37, h = f ? 6 : 23; /* 23 rows: each filter follows each */
            struct png p = make_png(w, h, k, k, (enum fault)f);
            char what[96];
            snprintf(what, sizeof what, "%s %dx%d, %s", kinds[k], w, h, fault_name[f]);
            bool fast = compare(what, p.b, p.n);
            th_check(fast == (f == GOOD), "%s: %s the fast path", what, fast ? "took" : "did not take");
            for (size_t cut = p.n / 2; f == GOOD && cut < p.n; cut += (p.n - cut + 1) / 2) { /* truncated */
                snprintf(what, sizeof what, "%s %dx%d, cut at byte %zu of %zu", kinds[k], w, h, cut, p.n);
                compare(what, p.b, cut);
            }
            free(p.b);
        }
    for (int i = 1; i < argc; i++) {
        unsigned char *buf;
        size_t len;
        struct mps_error err;
        if (!th_check(mps_file_read(argv[i], (size_t)1 << 30, MPS_ERR_INPUT, &buf, &len, &err) == MPS_OK, "%s: read",
                      argv[i]))
            continue;
        th_check(compare(argv[i], buf, len), "%s: the fast path read it", argv[i]);
        free(buf);
    }
    return th_summary();
}
