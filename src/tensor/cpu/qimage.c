/* qimage.c: a QLinearConv's images as the int8 tile's B panels
   (qlinear.c says the product). Each image is copied once into a padded
   channels-last buffer of unsigned bytes (the border holds x's zero point,
   so that it adds nothing), from which each panel of nr positions is
   gathered in the tile's order, k over (tap row, tap column, channel); a
   1x1 stride-1 conv without padding reads its panels from the planes.
   SSE2 where the machine has it (x86-64 always), the plain loops
   elsewhere (arm64). */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>

#include "ukernel_x86.h" /* (x86-64 always has SSE2) */
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "qlinear.h"

#if defined(__SSE2__)
/* Sixteen rows of sixteen bytes (x + r stride, each byte xor flip)
   transposed: dst + p dst_stride gets byte p of each row, row order (a
   pixel's sixteen channels from sixteen planes). */
static void mps_qtranspose16(const uint8_t *x, int64_t stride, uint8_t flip, uint8_t *dst, int64_t dst_stride)
{
    __m128i t[16];
    mps_x86_transpose16_bytes(x, stride, flip, t);
    for (int p = 0; p < 16; p++)
        _mm_storeu_si128((__m128i *)(dst + p * dst_stride), t[p]);
}
#endif

/* count border pixels of cp bytes at d: x's zero point in each of cin
   channels (it adds nothing), 0 in the padding channels; the first pixel
   written, the rest copied from it. */
static void mps_qimage_border(uint8_t *d, int64_t count, int64_t cp, int64_t cin, uint8_t zx)
{
    if (count <= 0)
        return;
    memset(d, zx, (size_t)cin);
    memset(d + cin, 0, (size_t)(cp - cin));
    for (int64_t k = 1; k < count; k++)
        memcpy(d + k * cp, d, (size_t)cp);
}

void mps_qimage_fill(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qimage *im = ctx;
    const struct mps_qpack *h = im->h;
    int64_t pt = im->p->win.pad[0], pl = im->p->win.pad[1], cp = h->cp, cin = h->cin;
    uint8_t flip = h->flip ? 0x80 : 0;
    for (int64_t rg = begin; rg < end; rg++) { /* row rg % hp of image rg / hp */
        int64_t b = rg / im->hp, r = rg % im->hp;
        uint8_t *row = im->buf + b * im->buf_stride + r * im->wp * cp;
        const uint8_t *xb = im->x + b * cin * im->in_h * im->in_w;
        int64_t i = r - pt;
        bool inside = i >= 0 && i < im->in_h;
        if (!inside) {
            mps_qimage_border(row, im->wp, cp, cin, h->zx);
            continue;
        }
        mps_qimage_border(row, pl, cp, cin, h->zx);
        mps_qimage_border(row + (pl + im->in_w) * cp, im->wp - pl - im->in_w, cp, cin, h->zx);
        if (cp != cin) /* the padding channels of the pixels written below */
            memset(row + pl * cp, 0, (size_t)(im->in_w * cp));
        int64_t c = 0, plane = im->in_h * im->in_w;
#if defined(__SSE2__)
        /* rows under sixteen (13x13, 14x14 planes): sixteen bytes from each of sixteen channels' rows (from a
           copy where they would run past x's end), a pixel's sixteen channels stored for each of the row's
           pixels (a word of four channels a pixel had been 45% of the copy's time on MNIST's second layer) */
        for (const uint8_t *x_end = im->x + im->n * cin * plane; c + 16 <= cin && im->in_w < 16; c += 16) {
            const uint8_t *x = xb + (c * im->in_h + i) * im->in_w;
            uint8_t *d = row + pl * cp + c, tile[16 * 16];
            int64_t stride = plane;
            if (x + 15 * plane + 16 > x_end) {
                memset(tile, 0, sizeof tile);
                for (int t = 0; t < 16; t++)
                    memcpy(tile + 16 * t, x + t * plane, (size_t)im->in_w);
                x = tile, stride = 16;
            }
            __m128i t[16];
            mps_x86_transpose16_bytes(x, stride, flip, t);
            for (int64_t p = 0; p < im->in_w; p++)
                _mm_storeu_si128((__m128i *)(d + p * cp), t[p]);
        }
        for (; c + 16 <= cin && im->in_w >= 16; c += 16) { /* sixteen channels' rows, transposed */
            const uint8_t *x = xb + (c * im->in_h + i) * im->in_w;
            uint8_t *d = row + pl * cp + c;
            for (int64_t j = 0;; j += 16) { /* the last step moved back inside the row */
                j = j + 16 <= im->in_w ? j : im->in_w - 16;
                mps_qtranspose16(x + j, plane, flip, d + j * cp, cp);
                if (j + 16 == im->in_w)
                    break;
            }
        }
#endif
        for (; c + 4 <= cin; c += 4) { /* four channels' rows, a word a pixel */
            const uint8_t *x = xb + (c * im->in_h + i) * im->in_w;
            uint8_t *d = row + pl * cp + c;
            uint32_t f4 = flip * 0x01010101u;
            for (int64_t j = 0; j < im->in_w; j++) {
                uint32_t v = ((uint32_t)x[j] | (uint32_t)x[plane + j] << 8 | (uint32_t)x[2 * plane + j] << 16 |
                              (uint32_t)x[3 * plane + j] << 24) ^
                             f4;
                memcpy(d + j * cp, &v, 4);
            }
        }
        /* along the input's rows, written across (the row's length read once: GCC had reread it each byte) */
        for (int64_t w = im->in_w; c < cin; c++) {
            const uint8_t *x = xb + (c * im->in_h + i) * w;
            uint8_t *d = row + pl * cp + c;
            for (int64_t j = 0; j < w; j++)
                d[j * cp] = x[j] ^ flip;
        }
    }
}

/* The byte sums of a panel's first lanes positions into sums. */
static void mps_qpanel_sums(const struct mps_qpack *h, const uint8_t *panel, int lanes, int32_t *sums)
{
    int nr = h->q->nr;
    int32_t sum[32] = {0};
    for (int64_t g = 0; g < h->k / 4; g++)
        for (int l = 0; l < nr; l++)
            for (int b = 0; b < 4; b++)
                sum[l] += panel[(g * nr + l) * 4 + b];
    for (int l = 0; l < lanes; l++)
        sums[l] = sum[l];
}

#if defined(__SSE2__)
/* Sixteen channels of a tap for the lanes, into four rows of B's panel
   (dst, 4 nr bytes apart): lane l's sixteen bytes at src + off[l] are its
   words of the four groups. Four lanes a step, their words transposed in
   registers (a dword 4x4), the rest a word at a time. */
static void mps_qgather16(uint8_t *dst, int nr, const uint8_t *src, const int64_t *off, int lanes)
{
    int l = 0;
    for (; l + 4 <= lanes; l += 4) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + off[l])),
                b = _mm_loadu_si128((const __m128i *)(src + off[l + 1])),
                c = _mm_loadu_si128((const __m128i *)(src + off[l + 2])),
                d = _mm_loadu_si128((const __m128i *)(src + off[l + 3]));
        __m128i ab0 = _mm_unpacklo_epi32(a, b), ab1 = _mm_unpackhi_epi32(a, b), cd0 = _mm_unpacklo_epi32(c, d),
                cd1 = _mm_unpackhi_epi32(c, d);
        _mm_storeu_si128((__m128i *)(dst + 4 * l), _mm_unpacklo_epi64(ab0, cd0));
        _mm_storeu_si128((__m128i *)(dst + 4 * nr + 4 * l), _mm_unpackhi_epi64(ab0, cd0));
        _mm_storeu_si128((__m128i *)(dst + 8 * nr + 4 * l), _mm_unpacklo_epi64(ab1, cd1));
        _mm_storeu_si128((__m128i *)(dst + 12 * nr + 4 * l), _mm_unpackhi_epi64(ab1, cd1));
    }
    for (; l < lanes; l++)
        for (int g = 0; g < 4; g++)
            memcpy(dst + 4 * (g * nr + l), src + off[l] + 4 * g, 4);
}
#endif

#if defined(__SSE2__)
/* Four byte vectors v[i] (lane l's byte i in byte l) as sixteen lanes'
   words, into d (four vectors). */
static inline void mps_qwords16(const __m128i v[4], uint32_t *d)
{
    __m128i ab0 = _mm_unpacklo_epi8(v[0], v[1]), ab1 = _mm_unpackhi_epi8(v[0], v[1]),
            ce0 = _mm_unpacklo_epi8(v[2], v[3]), ce1 = _mm_unpackhi_epi8(v[2], v[3]);
    _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(ab0, ce0));
    _mm_storeu_si128((__m128i *)(d + 4), _mm_unpackhi_epi16(ab0, ce0));
    _mm_storeu_si128((__m128i *)(d + 8), _mm_unpacklo_epi16(ab1, ce1));
    _mm_storeu_si128((__m128i *)(d + 12), _mm_unpackhi_epi16(ab1, ce1));
}

#if defined(__x86_64__)
/* Thirty-two lanes' words of four byte rows (x[i] + l, each byte xor mask's
   byte i) into d: mps_qwords16 at 256 bits, where the CPU has AVX2 (the
   unpacks work within 128-bit halves; the permutes put the halves' words
   in order). */
__attribute__((target("avx2"))) static void mps_qwords32(const uint8_t *const x[4], int l, uint32_t mask, uint32_t *d)
{
    __m256i v[4];
    for (int i = 0; i < 4; i++)
        v[i] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(x[i] + l)),
                                _mm256_set1_epi8((char)(mask >> (8 * i))));
    __m256i ab0 = _mm256_unpacklo_epi8(v[0], v[1]), ab1 = _mm256_unpackhi_epi8(v[0], v[1]);
    __m256i cd0 = _mm256_unpacklo_epi8(v[2], v[3]), cd1 = _mm256_unpackhi_epi8(v[2], v[3]);
    /* lanes 0-3 | 16-19, 4-7 | 20-23, 8-11 | 24-27, 12-15 | 28-31 */
    __m256i w0 = _mm256_unpacklo_epi16(ab0, cd0), w1 = _mm256_unpackhi_epi16(ab0, cd0);
    __m256i w2 = _mm256_unpacklo_epi16(ab1, cd1), w3 = _mm256_unpackhi_epi16(ab1, cd1);
    _mm256_storeu_si256((__m256i *)d, _mm256_permute2x128_si256(w0, w1, 0x20));
    _mm256_storeu_si256((__m256i *)(d + 8), _mm256_permute2x128_si256(w2, w3, 0x20));
    _mm256_storeu_si256((__m256i *)(d + 16), _mm256_permute2x128_si256(w0, w1, 0x31));
    _mm256_storeu_si256((__m256i *)(d + 24), _mm256_permute2x128_si256(w2, w3, 0x31));
}
#endif

enum { MPS_QDENSE_K = 128 }; /* a dense panel's k at most, for its rows on the stack */

/* A panel of a dense conv (under four channels, unpadded) whose tap rows
   are runs of at most sixteen bytes of the copy (kw cp, dilation 1 along
   the rows: a 3x3 stem's nine): each lane's k bytes put together in a row
   of their own (a tap row a 16-byte load and store, the next run
   overwriting the excess; the copies' slack covers the last load), then
   the rows' words transposed into the panel four lanes at a time; false
   where the conv is not such. */
static bool mps_qpanel_dense(const struct mps_qimage *im, uint8_t *dst, const uint8_t *buf, const int64_t *off,
                             int lanes)
{
    const struct mps_qpack *h = im->h;
    const struct mps_window *w = &im->p->win;
    int nr = h->q->nr;
    int64_t run = h->kw * h->cp, down = w->dilation[0] * im->wp * h->cp, roff[32], kk = 0;
    if (h->cp % 4 == 0 || w->dilation[1] != 1 || run > 16 || h->k > MPS_QDENSE_K)
        return false;
    uint8_t rows[32][MPS_QDENSE_K + 16];
    for (int l = 0; l < lanes; l++) {
        for (int64_t i = 0; i < h->kh; i++)
            _mm_storeu_si128((__m128i *)(rows[l] + i * run),
                             _mm_loadu_si128((const __m128i *)(buf + off[l] + i * down)));
        memset(rows[l] + h->k_real, 0, (size_t)(h->k - h->k_real));
        roff[l] = l * (MPS_QDENSE_K + 16);
    }
    for (; kk + 16 <= h->k; kk += 16)
        mps_qgather16(dst + kk * nr, nr, rows[0] + kk, roff, lanes);
    for (; kk < h->k; kk += 4)
        for (int l = 0; l < lanes; l++)
            memcpy(dst + kk * nr + 4 * l, rows[l] + kk, 4);
    return true;
}
#endif

/* Panel pg into dst: B's order, b[(g nr + l) 4 + i] = byte 4 g + i of
   position l's k (zeros past the positions and past k); a tap and group
   of four channels at a time across the panel's positions. */
void mps_qimage_panel(const struct mps_qimage *im, int64_t pg, uint8_t *dst, int32_t *sums)
{
    const struct mps_qpack *h = im->h;
    const struct mps_window *w = &im->p->win;
    int nr = h->q->nr;
    int64_t cp = h->cp, plane = im->out_h * im->out_w, off[32], q0;
    const uint8_t *buf = im->buf;
    int lanes = mps_qpanel_span(im, pg, &q0);
    if (lanes < nr || cp % 4)
        memset(dst, 0, (size_t)(h->k * nr));
    /* each lane's top left tap, a step along the row at a time (five multiplies a lane had been a third of
       the panels' time on MNIST's layers) */
    int64_t b = q0 / plane, oh = q0 % plane / im->out_w, ow = q0 % im->out_w, step = w->stride[1] * cp;
    int64_t row = b * im->buf_stride + oh * w->stride[0] * im->wp * cp;
    for (int l = 0; l < lanes; l++) {
        off[l] = row + ow * step;
        if (++ow == im->out_w) {
            ow = 0, oh = oh + 1 == im->out_h ? 0 : oh + 1, b += oh == 0;
            row = b * im->buf_stride + oh * w->stride[0] * im->wp * cp;
        }
    }
    int64_t kk = 0;
#if defined(__SSE2__)
    if (mps_qpanel_dense(im, dst, buf, off, lanes)) /* (one channel: on the float direct conv, qlinear.c) */
        kk = h->k;
#endif
    for (int64_t i = 0; i < h->kh && kk < h->k; i++)
        for (int64_t j = 0; j < h->kw; j++) {
            const uint8_t *src = buf + (i * w->dilation[0] * im->wp + j * w->dilation[1]) * cp;
            int64_t c = 0;
#if defined(__SSE2__)
            for (; cp % 16 == 0 && c < cp; c += 16, kk += 16) /* four groups of four lanes' words at once */
                mps_qgather16(dst + kk * nr, nr, src + c, off, lanes);
#endif
            if (cp % 4 == 0) /* a word a group of four channels */
                for (; c < cp; c += 4, kk += 4) {
                    uint8_t *d = dst + kk * nr;
                    for (int l = 0; l < lanes; l++)
                        memcpy(d + 4 * l, src + off[l] + c, 4);
                }
            else
                for (; c < cp; c++, kk++) {
                    uint8_t *d = dst + kk / 4 * 4 * nr + kk % 4;
                    for (int l = 0; l < lanes; l++)
                        d[4 * l] = src[off[l] + c];
                }
        }
    if (h->rowsums)
        mps_qpanel_sums(h, dst, lanes, sums);
}

/* Panel pg of a 1x1 stride-1 conv without padding, read from the image's
   planes (no channels-last copy): a word of four channels' bytes per
   position. */
void mps_qimage_panel_1x1(const struct mps_qimage *im, int64_t pg, uint8_t *dst, int32_t *sums)
{
    static const uint8_t zeros[32];
    const struct mps_qpack *h = im->h;
    int nr = h->q->nr;
    int64_t plane = im->out_h * im->out_w, q0;
    uint32_t flip = h->flip ? 0x80808080u : 0;
    int lanes = mps_qpanel_span(im, pg, &q0);
    if (lanes < nr)
        memset(dst, 0, (size_t)(h->k * nr));
#if defined(__x86_64__)
    const bool wide = mps_x86_has_avx2();
#endif
    for (int l0 = 0, l1; l0 < lanes; l0 = l1) { /* the lanes of one image at a time */
        int64_t b = (q0 + l0) / plane, i0 = (q0 + l0) % plane;
        l1 = plane - i0 < lanes - l0 ? l0 + (int)(plane - i0) : lanes;
        const uint8_t *xb = im->x + b * h->cin * plane + i0;
        for (int64_t g = 0; g < h->k / 4; g++) {
            const uint8_t *x[4];
            for (int i = 0; i < 4; i++) /* a channel past cin: zeros, flipped back below */
                x[i] = 4 * g + i < h->cin ? xb + (4 * g + i) * plane : zeros;
            uint32_t pad = 0;
            for (int i = 0; i < 4; i++)
                pad |= (4 * g + i < h->cin ? 0u : 0x80u) << (8 * i);
            uint32_t *d = (uint32_t *)(dst + g * 4 * nr) + l0, mask = flip ^ (flip & pad);
            int l = 0, count = l1 - l0;
#if defined(__x86_64__)
            for (; wide && l + 32 <= count; l += 32)
                mps_qwords32(x, l, mask, d + l);
#endif
#if defined(__SSE2__)
            for (; l + 16 <= count; l += 16) { /* sixteen lanes' words */
                __m128i v[4];
                for (int i = 0; i < 4; i++) /* the words' flip is each byte's */
                    v[i] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(x[i] + l)),
                                         _mm_set1_epi8((char)(mask >> (8 * i))));
                mps_qwords16(v, d + l);
            }
            for (; l + 8 <= count; l += 8) { /* eight (the avx2 int8 tile's panel) */
                __m128i v[4];
                for (int i = 0; i < 4; i++)
                    v[i] = _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(x[i] + l)),
                                         _mm_set1_epi8((char)(mask >> (8 * i))));
                __m128i ab = _mm_unpacklo_epi8(v[0], v[1]), ce = _mm_unpacklo_epi8(v[2], v[3]);
                _mm_storeu_si128((__m128i *)(d + l), _mm_unpacklo_epi16(ab, ce));
                _mm_storeu_si128((__m128i *)(d + l + 4), _mm_unpackhi_epi16(ab, ce));
            }
#endif
            for (; l < count; l++)
                d[l] = ((uint32_t)x[0][l] | (uint32_t)x[1][l] << 8 | (uint32_t)x[2][l] << 16 |
                        (uint32_t)x[3][l] << 24) ^
                       mask;
        }
    }
    if (h->rowsums)
        mps_qpanel_sums(h, dst, lanes, sums);
}
