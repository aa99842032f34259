/* ukernel_avx512_dw.c: the avx512 family's depthwise kernels (ukernels.h's
   dw3 and dwb): 3x3 planes sixteen outputs a step, and blocks of sixteen
   planes with the channels in the vectors, their input transposed in or
   made by the 1x1 convolution before them. Built with -mavx512f. */

#include "ukernel_avx512.h"
#include "ukernel_avx512_qreq.h"
#include "ukernel_dwb.h"
#include "ukernel_x86.h"

/* Columns [from, from + 16) of a row of w floats, zeros outside the row:
   masked lanes never fault, and before the row's start an expanding load
   puts its first floats in the lanes they belong to. */
static inline __m512 mps_avx512_cols(const float *row, int64_t w, int64_t from)
{
    if (from >= 0 && from + 16 <= w)
        return _mm512_loadu_ps(row + from);
    int64_t a = from < 0 ? -from : 0, b = w - from < 16 ? w - from : 16;
    if (b <= a)
        return _mm512_setzero_ps();
    __mmask16 m = (__mmask16)(((1u << b) - 1u) & ~((1u << a) - 1u));
    if (from >= 0)
        return _mm512_maskz_loadu_ps(m, row + from);
    /* the row's first b - a floats moved up to lanes a .. b: a register-form
       expand (the load form is microcoded on AMD's Zen) */
    return _mm512_maskz_expand_ps(m, _mm512_maskz_loadu_ps((__mmask16)((1u << (b - a)) - 1u), row));
}

/* acc plus one input row's three taps for sixteen outputs from column c, s
   apart: inside the row plain loads, at its ends the columns that exist;
   stride 2 takes the even and odd inputs apart (vpermt2ps). */
static inline __m512 mps_avx512_dw3_row(__m512 acc, const float *row, int64_t w, int64_t c, int s, bool inside,
                                        __m512 k0, __m512 k1, __m512 k2)
{
    __m512 x0, x1, x2;
    if (s == 1) {
        x0 = inside ? _mm512_loadu_ps(row + c) : mps_avx512_cols(row, w, c);
        x1 = inside ? _mm512_loadu_ps(row + c + 1) : mps_avx512_cols(row, w, c + 1);
        x2 = inside ? _mm512_loadu_ps(row + c + 2) : mps_avx512_cols(row, w, c + 2);
    } else { /* x0, x1: columns c .. c + 31 apart; x2: the evens of c + 2 .. c + 32 */
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
        __m512 lo = inside ? _mm512_loadu_ps(row + c) : mps_avx512_cols(row, w, c);
        __m512 hi = inside ? _mm512_loadu_ps(row + c + 16) : mps_avx512_cols(row, w, c + 16);
        __m512 lo2 = inside ? _mm512_loadu_ps(row + c + 2) : mps_avx512_cols(row, w, c + 2);
        __m512 hi2 = inside ? _mm512_maskz_loadu_ps(0x7fff, row + c + 18) : mps_avx512_cols(row, w, c + 18);
        x0 = _mm512_permutex2var_ps(lo, even, hi);
        x1 = _mm512_permutex2var_ps(lo, odd, hi);
        x2 = _mm512_permutex2var_ps(lo2, even, hi2);
    }
    acc = _mm512_fmadd_ps(k0, x0, acc);
    acc = _mm512_fmadd_ps(k1, x1, acc);
    return _mm512_fmadd_ps(k2, x2, acc);
}

/* 3x3 depthwise planes row by row, sixteen outputs a step; input rows in
   the padding are skipped, the last step of a row stores only its outputs.
   For planes too wide for mps_avx512_dw3's band. */
static void mps_avx512_dw3_rows(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                                const struct mps_tile_epi *e)
{
    __m512 k0 = _mm512_set1_ps(k[0]), k1 = _mm512_set1_ps(k[1]), k2 = _mm512_set1_ps(k[2]);
    __m512 k3 = _mm512_set1_ps(k[3]), k4 = _mm512_set1_ps(k[4]), k5 = _mm512_set1_ps(k[5]);
    __m512 k6 = _mm512_set1_ps(k[6]), k7 = _mm512_set1_ps(k[7]), k8 = _mm512_set1_ps(k[8]);
    const struct mps_avx512_actc act = mps_avx512_actc_of(e); /* the epilogue's bias and residual are NULL */
    int s = g->s;
    for (int64_t oh = 0; oh < g->out_h; oh++) {
        int64_t i0 = oh * s - g->pt; /* input rows i0 .. i0 + 2; only those in [0, h) are addressed */
        bool r0 = i0 >= 0 && i0 < g->h, r1 = i0 + 1 >= 0 && i0 + 1 < g->h, r2 = i0 + 2 >= 0 && i0 + 2 < g->h;
        for (int64_t ow = 0; ow < g->out_w; ow += 16) {
            int64_t c = ow * s - g->pl; /* the step reads columns [c, c + 15 s + 3) */
            bool inside = c >= 0 && c + 15 * s + 3 <= g->w;
            __m512 acc = _mm512_set1_ps(bias);
            if (r0)
                acc = mps_avx512_dw3_row(acc, x + i0 * g->w, g->w, c, s, inside, k0, k1, k2);
            if (r1)
                acc = mps_avx512_dw3_row(acc, x + (i0 + 1) * g->w, g->w, c, s, inside, k3, k4, k5);
            if (r2)
                acc = mps_avx512_dw3_row(acc, x + (i0 + 2) * g->w, g->w, c, s, inside, k6, k7, k8);
            int n = g->out_w - ow < 16 ? (int)(g->out_w - ow) : 16;
            _mm512_mask_storeu_ps(y + oh * g->out_w + ow, mps_avx512_mask(n), mps_avx512_actc(acc, &act));
        }
    }
}

/* Floats of mps_avx512_dw3's band: zero-padded input rows on the stack (32 KB). */
enum { MPS_AVX512_DW3_BAND = 8192 };

/* Lays the padded input rows of band rows [oh0, oh0 + rows) of a stride-1
   plane into buf: row r, column j holding input (oh0 + r - pt, j - pl), pw
   floats a row, zeros outside the input; then two steps of zeros, which
   the last steps read into lanes they drop (not whatever the stack held: a
   denormal there would stall every step). */
static void mps_avx512_dw3_band(const struct mps_dw3_geom *g, const float *x, int64_t oh0, int64_t rows, int64_t pw,
                                float *buf)
{
    for (int64_t r = 0; r < rows + 2; r++, buf += pw) {
        int64_t ih = oh0 + r - g->pt;
        bool inside = ih >= 0 && ih < g->h;
        for (int64_t j = 0; j < pw; j += 16)
            _mm512_mask_storeu_ps(buf + j, mps_avx512_mask((int)(pw - j)),
                                  inside ? mps_avx512_cols(x + ih * g->w, g->w, j - g->pl) : _mm512_setzero_ps());
    }
    _mm512_storeu_ps(buf, _mm512_setzero_ps());
    _mm512_storeu_ps(buf + 16, _mm512_setzero_ps());
}

/* Stride-1 planes of 16 outputs a row or more: two output rows a step,
   which share two of their four input rows (12 loads for 32 outputs where
   the virtual rows below take 18), each row's last step through a masked
   store, no compress: one core, planes in L1, 144 x 56x56 0.158 -> 0.12
   ms, 32 x 112x112 0.124 -> 0.088. (Four rows a step, written as loops
   over rows, ran slower than either: the accumulators left the registers.) */
static void mps_avx512_dw3_pairs(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                                 const struct mps_tile_epi *e, int64_t pw, int64_t band)
{
    float buf[MPS_AVX512_DW3_BAND];
    __m512 k0 = _mm512_set1_ps(k[0]), k1 = _mm512_set1_ps(k[1]), k2 = _mm512_set1_ps(k[2]);
    __m512 k3 = _mm512_set1_ps(k[3]), k4 = _mm512_set1_ps(k[4]), k5 = _mm512_set1_ps(k[5]);
    __m512 k6 = _mm512_set1_ps(k[6]), k7 = _mm512_set1_ps(k[7]), k8 = _mm512_set1_ps(k[8]);
    const __m512 bv = _mm512_set1_ps(bias);
    struct mps_tile_epi act = *e; /* in locals: through e the stores made the compiler reload it */
    for (int64_t oh0 = 0; oh0 < g->out_h; oh0 += band) {
        int64_t rows = g->out_h - oh0 < band ? g->out_h - oh0 : band;
        mps_avx512_dw3_band(g, x, oh0, rows, pw, buf);
        for (int64_t r = 0; r < rows; r += 2) {
            const float *b0 = buf + r * pw, *b1 = b0 + pw, *b2 = b1 + pw, *b3 = b2 + pw;
            float *ya = y + (oh0 + r) * g->out_w, *yb = ya + g->out_w;
            bool two = r + 1 < rows; /* b3 exists only then */
            for (int64_t c = 0; c < g->out_w; c += 16) {
                __mmask16 m = mps_avx512_mask((int)(g->out_w - c));
                __m512 x10 = _mm512_loadu_ps(b1 + c), x11 = _mm512_loadu_ps(b1 + c + 1);
                __m512 x12 = _mm512_loadu_ps(b1 + c + 2), x20 = _mm512_loadu_ps(b2 + c);
                __m512 x21 = _mm512_loadu_ps(b2 + c + 1), x22 = _mm512_loadu_ps(b2 + c + 2);
                __m512 a = _mm512_fmadd_ps(k0, _mm512_loadu_ps(b0 + c), bv);
                __m512 a1 = _mm512_mul_ps(k1, _mm512_loadu_ps(b0 + c + 1));
                a = _mm512_fmadd_ps(k2, _mm512_loadu_ps(b0 + c + 2), a);
                a1 = _mm512_fmadd_ps(k3, x10, a1);
                a = _mm512_fmadd_ps(k4, x11, a);
                a1 = _mm512_fmadd_ps(k5, x12, a1);
                a = _mm512_fmadd_ps(k6, x20, a);
                a1 = _mm512_fmadd_ps(k7, x21, a1);
                a = _mm512_fmadd_ps(k8, x22, a);
                _mm512_mask_storeu_ps(ya + c, m, mps_avx512_act(_mm512_add_ps(a, a1), &act));
                if (!two)
                    continue;
                __m512 bb = _mm512_fmadd_ps(k0, x10, bv), bb1 = _mm512_mul_ps(k1, x11);
                bb = _mm512_fmadd_ps(k2, x12, bb);
                bb1 = _mm512_fmadd_ps(k3, x20, bb1);
                bb = _mm512_fmadd_ps(k4, x21, bb);
                bb1 = _mm512_fmadd_ps(k5, x22, bb1);
                bb = _mm512_fmadd_ps(k6, _mm512_loadu_ps(b3 + c), bb);
                bb1 = _mm512_fmadd_ps(k7, _mm512_loadu_ps(b3 + c + 1), bb1);
                bb = _mm512_fmadd_ps(k8, _mm512_loadu_ps(b3 + c + 2), bb);
                _mm512_mask_storeu_ps(yb + c, m, mps_avx512_act(_mm512_add_ps(bb, bb1), &act));
            }
        }
    }
}

/* 3x3 depthwise planes. Stride 1: bands of output rows whose padded input is
   copied once into a stack buffer, so that every tap is a plain load at a
   fixed offset over "virtual" positions r pw + ow (the buffer's layout, ow
   < pw = out_w + 2): sixteen a step, across output rows, the columns ow >=
   out_w dropped by a compressing store. Row by row (each input row read for
   three output rows, both ends through masked loads) the mobilenets' 14x14
   and 7x7 layers took 20-25% longer. Stride 2, and rows too wide for the
   band, row by row: splitting a band into phases cost more than it saved. */
void mps_avx512_dw3(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                    const struct mps_tile_epi *e)
{
    int64_t pw = g->out_w + 2, band = (MPS_AVX512_DW3_BAND - 32) / pw - 2;
    if (g->s != 1 || band < 1) {
        mps_avx512_dw3_rows(g, x, k, bias, y, e);
        return;
    }
    if (g->out_w >= 16) {
        mps_avx512_dw3_pairs(g, x, k, bias, y, e, pw, band);
        return;
    }
    float buf[MPS_AVX512_DW3_BAND];
    __m512 kv[9];
    int64_t off[9];
    for (int t = 0; t < 9; t++)
        kv[t] = _mm512_set1_ps(k[t]), off[t] = t / 3 * pw + t % 3;
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i pwv = _mm512_set1_epi32((int)pw), outw = _mm512_set1_epi32((int)g->out_w);
    int wraps = (int)((15 + pw - 1) / pw); /* rows a step of sixteen reaches into at most */
    float *out = y;
    for (int64_t oh0 = 0; oh0 < g->out_h; oh0 += band) {
        int64_t rows = g->out_h - oh0 < band ? g->out_h - oh0 : band, n = rows * pw, c0 = 0; /* c0: v's column */
        mps_avx512_dw3_band(g, x, oh0, rows, pw, buf);
        for (int64_t v = 0; v < n; v += 16, c0 = c0 + 16 >= pw ? (c0 + 16) % pw : c0 + 16) {
            const float *b = buf + v;
            __m512 a0 = _mm512_set1_ps(bias), a1 = _mm512_mul_ps(kv[1], _mm512_loadu_ps(b + off[1]));
            a0 = _mm512_fmadd_ps(kv[0], _mm512_loadu_ps(b + off[0]), a0);
            a1 = _mm512_fmadd_ps(kv[3], _mm512_loadu_ps(b + off[3]), a1);
            a0 = _mm512_fmadd_ps(kv[2], _mm512_loadu_ps(b + off[2]), a0);
            a1 = _mm512_fmadd_ps(kv[5], _mm512_loadu_ps(b + off[5]), a1);
            a0 = _mm512_fmadd_ps(kv[4], _mm512_loadu_ps(b + off[4]), a0);
            a1 = _mm512_fmadd_ps(kv[7], _mm512_loadu_ps(b + off[7]), a1);
            a0 = _mm512_fmadd_ps(kv[6], _mm512_loadu_ps(b + off[6]), a0);
            a0 = _mm512_fmadd_ps(kv[8], _mm512_loadu_ps(b + off[8]), a0);
            __m512 acc = mps_avx512_act(_mm512_add_ps(a0, a1), e);
            /* lane l is output (v + l) / pw, (v + l) % pw: kept when a real column of a band row */
            __m512i col = _mm512_add_epi32(_mm512_set1_epi32((int)c0), iota);
            for (int w = 0; w < wraps; w++) /* branch-free: the pattern depends on v */
                col = _mm512_mask_sub_epi32(col, _mm512_cmp_epi32_mask(col, pwv, _MM_CMPINT_NLT), col, pwv);
            __mmask16 keep = _mm512_cmp_epi32_mask(col, outw, _MM_CMPINT_LT) & mps_avx512_mask((int)(n - v));
            int kept = __builtin_popcount(keep);
            _mm512_mask_storeu_ps(out, mps_avx512_mask(kept), _mm512_maskz_compress_ps(keep, acc));
            out += kept;
        }
    }
}

/* Floats of mps_avx512_dwb's buffer (128 KB, in L2): a band's zero-padded
   input rows, sixteen channels a position. From 64 KB: the rows two bands
   share are made once less often (with the 1x1 made into the buffer,
   mobilenet_v2's 16 -> 96 channels, then 3x3 stride 2 on 112x112: 0.141 ->
   0.134 ms; 24 -> 144 on 56x56 0.107 -> 0.102). */
enum { MPS_AVX512_DWB_BUF = 32768 };

/* One output position's sixteen channels: bias plus each tap's weights times
   the input there (taps constant where inlined: the weights stay in registers). */
static inline __m512 mps_avx512_dwb_sum(const float *b, const int64_t *off, const __m512 *kv, int taps, __m512 bias)
{
    __m512 a0 = bias, a1 = _mm512_setzero_ps();
    for (int u = 0; u + 1 < taps; u += 2) {
        a0 = _mm512_fmadd_ps(kv[u], _mm512_load_ps(b + off[u]), a0);
        a1 = _mm512_fmadd_ps(kv[u + 1], _mm512_load_ps(b + off[u + 1]), a1);
    }
    if (taps % 2)
        a0 = _mm512_fmadd_ps(kv[taps - 1], _mm512_load_ps(b + off[taps - 1]), a0);
    return _mm512_add_ps(a0, a1);
}

/* The 3x3 undilated window's sums: three rows pr floats apart, the taps at
   fixed offsets (no offsets read from the stack). */
static inline __m512 mps_avx512_dwb_sum3(const float *b, int64_t pr, const __m512 *kv, __m512 bias)
{
    const float *b1 = b + pr, *b2 = b1 + pr;
    __m512 a0 = _mm512_fmadd_ps(kv[0], _mm512_load_ps(b), bias);
    __m512 a1 = _mm512_mul_ps(kv[1], _mm512_load_ps(b + 16));
    a0 = _mm512_fmadd_ps(kv[2], _mm512_load_ps(b + 32), a0);
    a1 = _mm512_fmadd_ps(kv[3], _mm512_load_ps(b1), a1);
    a0 = _mm512_fmadd_ps(kv[4], _mm512_load_ps(b1 + 16), a0);
    a1 = _mm512_fmadd_ps(kv[5], _mm512_load_ps(b1 + 32), a1);
    a0 = _mm512_fmadd_ps(kv[6], _mm512_load_ps(b2), a0);
    a1 = _mm512_fmadd_ps(kv[7], _mm512_load_ps(b2 + 16), a1);
    a0 = _mm512_fmadd_ps(kv[8], _mm512_load_ps(b2 + 32), a0);
    return _mm512_add_ps(a0, a1);
}

/* n (<= 16) bytes of a plane of a depthwise QLinearConv as dwb's floats,
   (x ^ flip) - zx (ukernels.h's mps_dwb_q). */
static inline __m512 mps_avx512_dwb_bytes(const uint8_t *x, int n, const struct mps_dwb_q *q)
{
    __m128i b = n == 16 ? _mm_loadu_si128((const __m128i *)x)
                        : _mm_set_epi64x((long long)(n > 8 ? mps_dwb_get_bytes(x + 8, n - 8) : 0),
                                         (long long)mps_dwb_get_bytes(x, n < 8 ? n : 8));
    b = _mm_xor_si128(b, _mm_set1_epi8((char)q->flip));
    return _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)), _mm512_set1_ps(q->zx));
}

/* Sixteen positions of sixteen planes of a depthwise QLinearConv, each plane's
   sixteen bytes at x + c plane, as dwb's floats (x ^ flip) - zx, position i's
   sixteen channels in r[i]: transposed as bytes (64 shuffles of 128 bits,
   where a 16 x 16 transpose of floats is 64 of 512), then widened. */
static inline void mps_avx512_dwb_bytes16(const uint8_t *x, int64_t plane, const struct mps_dwb_q *q, __m512 r[16])
{
    __m128i t[16];
    mps_x86_transpose16_bytes(x, plane, q->flip, t);
    const __m512 zx = _mm512_set1_ps(q->zx);
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(t[i])), zx);
}

/* The outputs of one band of sixteen planes (mps_avx512_dwb): output rows
   [oh0, oh0 + rows) from buf, whose row 0 is the input row oh0 sh - pt,
   sixteen positions (across rows) a step, transposed out to the planes
   (req: a QLinearConv's, stored by req[c], else floats). three and rest are
   constants where called, so that each form is a loop of its own: the 3x3
   window at fixed offsets, and the activation past the clamp. */
static inline void mps_avx512_dwb_outputs(const struct mps_dwk_geom *g, const float *buf, int64_t pw, int64_t oh0,
                                          int64_t rows, const __m512 *kv, const int64_t *off, __m512 bv,
                                          const struct mps_tile_epi *act, void *y, const struct mps_qreq *req,
                                          bool three, bool rest)
{
    size_t el = req && req->quant ? 1 : 4;
    int taps = g->kh * g->kw;
    int64_t ow = 0, end = (oh0 + rows) * g->out_w, step = 16 * g->sw, down = 16 * g->sh * pw;
    int64_t out_plane = g->out_h * g->out_w;
    const float *row = buf, *b = buf; /* the output row's first window; the position's */
    const __m512 lo = _mm512_set1_ps(act->lo), hi = _mm512_set1_ps(act->hi);
    __m512 r[16];
    for (int64_t o = oh0 * g->out_w; o < end; o += 16) {
        int n = end - o < 16 ? (int)(end - o) : 16;
        for (int i = 0; i < n; i++) {
            __m512 a = three ? mps_avx512_dwb_sum3(b, 16 * pw, kv, bv) : mps_avx512_dwb_sum(b, off, kv, taps, bv);
            a = _mm512_min_ps(hi, _mm512_max_ps(lo, a)); /* a NaN stays: max and min return it */
            r[i] = rest ? mps_avx512_act(a, act) : a;
            b += step;
            if (++ow == g->out_w)
                ow = 0, row += down, b = row;
        }
        mps_avx512_transpose16(r);
        for (int c = 0; c < 16; c++) {
            unsigned char *at = (unsigned char *)y + (size_t)(c * out_plane + o) * el;
            if (req)
                mps_avx512_qreq(_mm512_cvttps_epi32(r[c]), NULL, n, req + c, at); /* exact integers */
            else
                _mm512_mask_storeu_ps(at, mps_avx512_mask(n), r[c]);
        }
    }
}

/* A block's input rows [r0, r1) made by the 1x1 convolution ex (ukernels.h)
   into dwb's buffer: sixteen positions (across rows) a step, the last one
   moved back inside the plane, each position's sixteen planes an
   accumulator that takes a broadcast of the position's input per input
   channel; wt: the block's weights, its sixteen planes' a channel. The
   stores are branch-free (a position the buffer does not take goes to
   trash), so that the accumulators stay in registers; rest (a constant
   where called): the activation past the clamp. */
__attribute__((always_inline)) static inline void
mps_avx512_dwb_expand(const struct mps_dwk_geom *g, const struct mps_dwb_expand *ex, const float *wt, __m512 bias,
                      const struct mps_avx512_actc *act, int64_t r0, int64_t r1, int64_t first, int64_t pw,
                      int64_t cols, float *buf, bool rest)
{
    _Alignas(64) float trash[16];
    int64_t plane = g->h * g->w, end = r1 * g->w;
    for (int64_t q0 = r0 * g->w; q0 < end; q0 += 16) {
        /* positions q .. q + 16; those before q0 (a step moved back) are made again and not stored */
        int64_t q = q0 + 16 <= plane ? q0 : plane - 16, ih = q / g->w, iw = q % g->w;
        __m512 acc[16];
        for (int i = 0; i < 16; i++)
            acc[i] = bias;
        const float *xc = ex->x + q;
        for (int64_t c = 0; c < ex->k; c++, xc += plane) {
            __m512 wv = _mm512_load_ps(wt + 16 * c);
            for (int i = 0; i < 16; i++)
                acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(xc[i]), wv, acc[i]);
        }
        if (q == q0 && q0 + 16 <= end && cols == g->w && g->w >= 16) { /* this row, then the next */
            int64_t split = g->w - iw;
            float *d0 = buf + 16 * ((ih - first) * pw + g->pl + iw), *d1 = d0 + 16 * (split + pw - g->w);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) {
                __m512 v = _mm512_min_ps(act->hi, _mm512_max_ps(act->lo, acc[i])); /* a NaN stays */
                _mm512_store_ps(i < split ? d0 + 16 * i : d1 + 16 * (i - split), rest ? mps_avx512_actc(v, act) : v);
            }
            continue;
        }
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            bool keep = q + i >= q0 && q + i < end && iw < cols;
            float *d = keep ? buf + 16 * ((ih - first) * pw + g->pl + iw) : trash;
            __m512 v = _mm512_min_ps(act->hi, _mm512_max_ps(act->lo, acc[i])); /* a NaN stays */
            _mm512_store_ps(d, rest ? mps_avx512_actc(v, act) : v);
            bool wrap = ++iw == g->w;
            iw = wrap ? 0 : iw, ih += wrap;
        }
    }
}

/* Blocks of sixteen depthwise planes (ukernels.h's dwb), the channels in the
   vectors: a band's input rows are transposed into a zero-padded buffer,
   sixteen channels a position (no tap tests the padding, every load is
   aligned and full), each output position is its taps' sums, and sixteen
   positions at a time go back to the planes through a transpose. Where a
   band is the whole plane, the padding's zeros are written once a call.
   Planes in the vectors (dw3) computed 16 lanes for 14 outputs of a 14x14
   plane and copied each plane into a padded buffer of its own: one core,
   384 x 14x14 0.035 -> 0.021 ms, 960 x 7x7 0.042 -> 0.015, 960 x 14x14
   5x5 0.19 -> 0.16; 112x112 planes lose to dw3's pairs of rows (conv.c's
   rule). The transposes are about a third of the time; the sums run at
   about 10 cycles a position (a harness calling the kernel alone), near
   onnxruntime's own kernel on data already in blocks of 16 channels.
   Tried: a table of each position's place in the buffer instead of
   counting rows and columns (no faster; building it cost more than a
   14x14 block), the input's transposes interleaved with the sums (no
   faster), three chains of sums instead of two (no faster). With ex, each
   band's rows are made by the 1x1 convolution instead (its weights
   regathered a block at a time), and nothing is transposed in. */
bool mps_avx512_dwb(const struct mps_dwk_geom *g, const void *xv, const float *k, const float *bias, void *yv,
                    int64_t blocks, const struct mps_tile_epi *e, const struct mps_dwb_expand *ex,
                    const struct mps_dwb_q *q)
{
    struct mps_dwb_geom d;
    if (!mps_dwb_geom_of(g, MPS_AVX512_DWB_BUF, &d) || (ex && (ex->k > MPS_DWB_EXPAND_K || g->h * g->w < 16)))
        return false;
    /* bytes (q) or floats, a block's planes apart */
    const unsigned char *x = xv;
    unsigned char *y = yv;
    size_t in_el = q ? 1 : 4, out_el = q && q->req->quant ? 1 : 4;
    const int taps = d.taps;
    const int64_t pw = d.pw, cols = d.cols, *off = d.off, in_plane = g->h * g->w, out_plane = g->out_h * g->out_w;
    _Alignas(64) float buf[MPS_AVX512_DWB_BUF];
    __m512 kv[MPS_DWB_TAPS], r[16];
    struct mps_tile_epi act = *e;
    bool three = taps == 9 && g->dw == 1 && g->dh == 1, rest = act.slope != 1.0f || act.hswish;
    _Alignas(64) float wt[16 * MPS_DWB_EXPAND_K]; /* the 1x1's weights of a block, sixteen floats a channel */
    const struct mps_avx512_actc ex_act = mps_avx512_actc_of(ex ? &ex->act : e);
    const bool ex_rest = ex_act.leaky || ex_act.hswish;
    for (int64_t blk = 0; blk < blocks;
         blk++, x += 16 * in_plane * in_el, y += 16 * out_plane * out_el, k += 16 * taps) {
        const struct mps_qreq *req = q ? q->req + 16 * blk : NULL;
        for (int u = 0; u < taps; u++) { /* kv[u]: tap u of each of the sixteen planes */
            float t[16];
            for (int c = 0; c < 16; c++)
                t[c] = k[c * taps + u];
            kv[u] = _mm512_loadu_ps(t);
        }
        for (int64_t c0 = 0; ex && c0 < ex->k; c0 += 16) { /* sixteen channels of the block's rows, transposed */
            int n = ex->k - c0 < 16 ? (int)(ex->k - c0) : 16;
            for (int m = 0; m < 16; m++)
                r[m] = _mm512_maskz_loadu_ps(mps_avx512_mask(n), ex->w + (16 * blk + m) * ex->k + c0);
            mps_avx512_transpose16(r);
            for (int j = 0; j < n; j++)
                _mm512_store_ps(wt + 16 * (c0 + j), r[j]);
        }
        const __m512 ex_bias = ex && ex->bias ? _mm512_loadu_ps(ex->bias + 16 * blk) : _mm512_setzero_ps();
        const __m512 bv = bias ? _mm512_loadu_ps(bias + 16 * blk) : _mm512_setzero_ps();
        for (int64_t oh0 = g->oh0; oh0 < d.oh_end; oh0 += d.band) {
            const struct mps_dwb_band bd = mps_dwb_band_of(g, &d, oh0);
            const int64_t rows = bd.rows, first = bd.first, r0 = bd.r0, r1 = bd.r1;
            if (!d.whole || blk == 0)
                mps_dwb_zeros(g, &d, &bd, buf);
            if (ex && ex_rest)
                mps_avx512_dwb_expand(g, ex, wt, ex_bias, &ex_act, r0, r1, first, pw, cols, buf, true);
            else if (ex)
                mps_avx512_dwb_expand(g, ex, wt, ex_bias, &ex_act, r0, r1, first, pw, cols, buf, false);
            /* or input rows r0 .. r1 of the sixteen planes, sixteen floats a step (across rows), transposed in */
            int64_t ih = r0, iw = 0;
            for (int64_t p = r0 * g->w; !ex && p < r1 * g->w; p += 16) {
                int n = r1 * g->w - p < 16 ? (int)(r1 * g->w - p) : 16;
                if (q && n == 16)
                    mps_avx512_dwb_bytes16(x + p, in_plane, q, r);
                else {
                    for (int c = 0; c < 16; c++)
                        r[c] = q ? mps_avx512_dwb_bytes(x + c * in_plane + p, n, q)
                                 : _mm512_maskz_loadu_ps(mps_avx512_mask(n), (const float *)x + c * in_plane + p);
                    mps_avx512_transpose16(r);
                }
                if (n == 16 && cols == g->w && g->w >= 16) { /* every column kept: this row, then the next */
                    int64_t split = g->w - iw;
                    float *d0 = buf + 16 * ((ih - first) * pw + g->pl + iw), *d1 = d0 + 16 * (split + pw - g->w);
                    for (int i = 0; i < 16; i++)
                        _mm512_store_ps(i < split ? d0 + 16 * i : d1 + 16 * (i - split), r[i]);
                    iw += 16;
                    if (iw >= g->w)
                        iw -= g->w, ih++;
                    continue;
                }
                for (int i = 0; i < n; i++) {
                    if (iw < cols)
                        _mm512_store_ps(buf + 16 * ((ih - first) * pw + g->pl + iw), r[i]);
                    if (++iw == g->w)
                        iw = 0, ih++;
                }
            }
            if (three && !rest)
                mps_avx512_dwb_outputs(g, buf, pw, oh0, rows, kv, off, bv, &act, y, req, true, false);
            else if (three)
                mps_avx512_dwb_outputs(g, buf, pw, oh0, rows, kv, off, bv, &act, y, req, true, true);
            else
                mps_avx512_dwb_outputs(g, buf, pw, oh0, rows, kv, off, bv, &act, y, req, false, rest);
        }
    }
    return true;
}

