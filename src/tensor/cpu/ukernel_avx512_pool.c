/* ukernel_avx512_pool.c: the avx512 family's MaxPool plane kernel
   (ukernels.h's maxpool): 2x2 and 3x3 stride-2 windows in registers, the
   others through column maxima on the stack. Built with -mavx512f. */
#include "ukernel_avx512.h"

/* Prefetches input rows [r0, r1) of a plane of w columns (those in [0, h)):
   the hardware's prefetcher did not keep up with MaxPool's row streams. */
static inline void mps_avx512_prefetch_rows(const float *x, int64_t h, int64_t w, int64_t r0, int64_t r1)
{
    for (int64_t r = r0 > 0 ? r0 : 0; r < r1 && r < h; r++)
        for (int64_t j = 0; j < w; j += 16)
            _mm_prefetch((const char *)(x + r * w + j), _MM_HINT_T0);
}

/* mps_avx512_maxpool2 on rows of n <= 8 outputs: output rows oh and oh + 1
   in one step (they lie together in y), each the maximum down its two
   input rows (2n columns, a masked load each), then of the even and odd
   columns of both at once: fashion_cnn's 7x7 pools filled 7 lanes of 16. */
static void mps_avx512_maxpool2_pairs(const struct mps_maxpool_geom *g, const float *x, float *y)
{
    int n = (int)g->out_w;
    /* even columns: row oh's in lanes 0 .. n (2 l), row oh + 1's (from 16 on) after them (16 + 2 (l - n));
       lanes from 2 n on are not stored */
    const __m512i iota2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i even = _mm512_mask_add_epi32(iota2, (__mmask16)(0xffffu << n), iota2, _mm512_set1_epi32(16 - 2 * n));
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __mmask16 cols = mps_avx512_mask(2 * n);
    for (int64_t oh = 0; oh < g->out_h; oh += 2, y += 2 * n) {
        const float *r = x + 2 * oh * g->w;
        bool two = oh + 1 < g->out_h;
        __mmask16 c2 = two ? cols : 0;
        __m512 a = mps_avx512_nanmax(_mm512_maskz_loadu_ps(cols, r), _mm512_maskz_loadu_ps(cols, r + g->w));
        __m512 b = mps_avx512_nanmax(_mm512_maskz_loadu_ps(c2, r + 2 * g->w), _mm512_maskz_loadu_ps(c2, r + 3 * g->w));
        __m512 v = mps_avx512_nanmax(_mm512_permutex2var_ps(a, even, b), _mm512_permutex2var_ps(a, odd, b));
        _mm512_mask_storeu_ps(y, mps_avx512_mask(two ? 2 * n : n), v);
    }
}

/* The 2x2 stride-2 window without pads (the small CNNs' pool), straight
   from the two input rows: their maximum, then the even and odd columns'
   (vpermt2ps), sixteen outputs a step. On rows of 7 and 14 outputs this
   beat both the row on the stack and the C loops (fashion_cnn's two pools
   at batch 8, single layers: 32x14x14 0.0069 -> 0.0049 ms, 16x28x28
   0.0089 -> 0.0045). Rows of 8 outputs or fewer: mps_avx512_maxpool2_pairs. */
static void mps_avx512_maxpool2(const struct mps_maxpool_geom *g, const float *x, float *y)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    int64_t span = 2 * g->out_w; /* input columns the windows cover */
    if (g->out_w <= 8) { /* rows of 8 outputs or fewer: two output rows a step */
        mps_avx512_maxpool2_pairs(g, x, y);
        return;
    }
    for (int64_t oh = 0; oh < g->out_h; oh++, y += g->out_w) {
        const float *r0 = x + 2 * oh * g->w, *r1 = r0 + g->w;
        for (int64_t o = 0; o < g->out_w; o += 16) {
            __mmask16 m0 = mps_avx512_mask((int)(span - 2 * o)), m1 = mps_avx512_mask((int)(span - 2 * o - 16));
            __m512 lo = mps_avx512_nanmax(_mm512_maskz_loadu_ps(m0, r0 + 2 * o), _mm512_maskz_loadu_ps(m0, r1 + 2 * o));
            __m512 hi = mps_avx512_nanmax(_mm512_maskz_loadu_ps(m1, r0 + 2 * o + 16),
                                          _mm512_maskz_loadu_ps(m1, r1 + 2 * o + 16));
            __m512 v = mps_avx512_nanmax(_mm512_permutex2var_ps(lo, even, hi), _mm512_permutex2var_ps(lo, odd, hi));
            _mm512_mask_storeu_ps(y + o, mps_avx512_mask((int)(g->out_w - o)), v);
        }
    }
}

/* The 3x3 stride-2 window, begin pads 0 or 1, on planes up to 128 wide
   (squeezenet1_1's three pools: 111 -> 55, 55 -> 27, 27 -> 13; resnet18's
   112 -> 56 with pads 1: the first lane of a row's vectors is column -1,
   -inf), an output
   row at a time in registers (vecs: 2, 4 or 8 vectors of a row, a constant
   where inlined, so that none goes to the stack): the maximum down the
   window's rows of each sixteen columns (-inf past the row), then across:
   the even columns, the odd ones and the even ones a column on (the last
   lane from the next vector), three permutes and a broadcast a sixteen
   outputs. Through the row on the stack (mps_avx512_maxpool below), with
   its calls, loops and reloads, an output had cost 1.7 cycles on 55-wide
   rows and 7 on 13-wide ones; squeezenet1_1's pools at batch 1, in the
   model, 2 threads: 0.0425 -> 0.0252, 0.0247 -> 0.0131, 0.0202 -> 0.0079
   ms (batch 8: 0.62 -> 0.48, 0.30 -> 0.15, 0.16 -> 0.064). */
__attribute__((always_inline)) static inline void mps_avx512_maxpool3s2_v(const struct mps_maxpool_geom *g,
                                                                           const float *x, float *y, int vecs)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1)), next = _mm512_add_epi32(even, _mm512_set1_epi32(2));
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    const int64_t h = g->h, w = g->w, out_w = g->out_w, pt = g->pt, pl = g->pl;
    for (int64_t oh = 0; oh < g->out_h; oh++, y += out_w) {
        int64_t r0 = 2 * oh - pt, rs = r0 > 0 ? r0 : 0, n = (r0 + 3 < h ? r0 + 3 : h) - rs; /* rows [rs, rs + n) */
        const float *row = x + rs * w - pl; /* lane j of vector i: column 16 i + j - pl */
        mps_avx512_prefetch_rows(x, h, w, r0 + 3, r0 + 5); /* the next output row's two new rows */
        __m512 c[9] = {ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf};
        for (int i = 0; i < vecs; i++) {
            __mmask16 m = (__mmask16)(mps_avx512_mask((int)(w + pl - 16 * i)) & (i ? 0xffffu : 0xffffu << pl));
            c[i] = _mm512_mask_loadu_ps(ninf, m, row + 16 * i);
            if (n > 1)
                c[i] = mps_avx512_nanmax(c[i], _mm512_mask_loadu_ps(ninf, m, row + w + 16 * i));
            if (n > 2)
                c[i] = mps_avx512_nanmax(c[i], _mm512_mask_loadu_ps(ninf, m, row + 2 * w + 16 * i));
        }
        for (int o = 0; o < vecs / 2; o++) { /* (a store of no lanes where the row has fewer outputs) */
            __m512 a = c[2 * o], b = c[2 * o + 1];
            __m512 t2 = _mm512_mask_broadcastss_ps(_mm512_permutex2var_ps(a, next, b), (__mmask16)0x8000,
                                                   _mm512_castps512_ps128(c[2 * o + 2]));
            __m512 v = mps_avx512_nanmax(mps_avx512_nanmax(_mm512_permutex2var_ps(a, even, b),
                                                           _mm512_permutex2var_ps(a, odd, b)), t2);
            _mm512_mask_storeu_ps(y + 16 * o, mps_avx512_mask((int)(out_w - 16 * o)), v);
        }
    }
}

static void mps_avx512_maxpool3s2(const struct mps_maxpool_geom *g, const float *x, float *y)
{
    if (g->w + g->pl <= 32)
        mps_avx512_maxpool3s2_v(g, x, y, 2);
    else if (g->w + g->pl <= 64)
        mps_avx512_maxpool3s2_v(g, x, y, 4);
    else
        mps_avx512_maxpool3s2_v(g, x, y, 8);
}

/* v[pl + j] = the maximum of input column j over output row oh's window
   rows, for the cols columns the windows read. */
/* The maximum down n rows w apart of sixteen columns (mask m) from col. */
__attribute__((always_inline)) static inline __m512 mps_avx512_down(const float *col, int64_t w, __mmask16 m, int n)
{
    __m512 acc = _mm512_maskz_loadu_ps(m, col);
    for (int r = 1; r < n; r++)
        acc = mps_avx512_nanmax(acc, _mm512_maskz_loadu_ps(m, col + r * w));
    return acc;
}

/* The maximum across kw taps of sixteen outputs from v + o sw (stride sw, 1 or 2). */
__attribute__((always_inline)) static inline __m512 mps_avx512_across(const float *v, int64_t o, int kw, int sw)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const float *at = v + o * sw;
    __m512 acc =
        sw == 1 ? _mm512_loadu_ps(at) : _mm512_permutex2var_ps(_mm512_loadu_ps(at), even, _mm512_loadu_ps(at + 16));
    for (int t = 1; t < kw; t++)
        acc = mps_avx512_nanmax(acc, sw == 1 ? _mm512_loadu_ps(at + t)
                                             : _mm512_permutex2var_ps(_mm512_loadu_ps(at + t), even,
                                                                      _mm512_loadu_ps(at + t + 16)));
    return acc;
}

static void mps_avx512_maxpool_cols(const struct mps_maxpool_geom *g, const float *x, int64_t oh, int64_t cols,
                                    float *v)
{
    int64_t r0 = oh * g->sh - g->pt, r1 = r0 + g->kh;
    r0 = r0 > 0 ? r0 : 0;
    r1 = r1 < g->h ? r1 : g->h;
    /* the rows two output rows on will add: the loads below stalled on memory
       (squeezenet1_1's first pool at batch 8, 25 MB in: 2.6 ms, onnxruntime 0.6) */
    mps_avx512_prefetch_rows(x, g->h, g->w, r1 + g->sh, r1 + 2 * g->sh);
    for (int64_t j = 0; j < cols; j += 16) {
        __mmask16 m = mps_avx512_mask((int)(cols - j));
        const float *col = x + r0 * g->w + j;
        /* three rows (3x3 windows) and two unrolled: loops of two or three steps
           were a fifth of the pool's time in their counters and branches */
        __m512 acc = r1 - r0 == 3   ? mps_avx512_down(col, g->w, m, 3)
                     : r1 - r0 == 2 ? mps_avx512_down(col, g->w, m, 2)
                                    : mps_avx512_down(col, g->w, m, (int)(r1 - r0));
        _mm512_mask_storeu_ps(v + g->pl + j, m, acc);
    }
}

/* The MaxPool plane (ukernels.h): unpadded 2x2 stride-2 windows and 3x3
   stride-2 ones (begin pads 0 or 1) on their kernels above; the others an output row at a time: the maximum
   down the window's rows into a row of the stack padded with -inf, sixteen
   columns a step and the row's end through masked loads; then across each
   window's columns, sixteen outputs a step (stride 2: the even columns of
   two loads, vpermt2ps), the last step's store masked. squeezenet1_1's
   first pool (64 planes, 111x111 -> 55x55, 3x3 stride 2) took four times as
   long as onnxruntime's through the C loops, whose rows of 55 end in scalar
   code: 0.119 -> 0.066 ms here (0.043 before it moved to
   mps_avx512_maxpool3s2, 0.025 after). (Reading each tap's columns from the
   input rows instead of the row on the stack was slower on wide rows:
   kh x kw masked pairs of loads a step.) The next output row's maxima down
   the rows go to a second buffer before this row's are read across: read
   right after their stores, the loads that straddle two stores waited for
   them (rows narrower than a step were twice as slow as the C loops for
   it; now they are faster, pooling.c). */
void mps_avx512_maxpool(const struct mps_maxpool_geom *g, const float *x, float *y)
{
    if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->pt == 0 && g->pl == 0 &&
        2 * g->out_h <= g->h && 2 * g->out_w <= g->w) {
        mps_avx512_maxpool2(g, x, y);
        return;
    }
    if (g->kh == 3 && g->kw == 3 && g->sh == 2 && g->sw == 2 && g->pt <= 1 && g->pl <= 1 && g->w + g->pl <= 128) {
        mps_avx512_maxpool3s2(g, x, y);
        return;
    }
    /* two rows of column maxima: an output row's, and the next one's, filled before the
       first is read across (read right after its stores, the loads that straddle two of
       them waited for the stores to retire) */
    float va[MPS_UMAXPOOL_SPAN + 80], vb[MPS_UMAXPOOL_SPAN + 80], *v = va, *next = vb;
    int64_t span = (g->out_w - 1) * g->sw + g->kw, cols = g->w < span - g->pl ? g->w : span - g->pl;
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (int b = 0; b < 2; b++, v = vb) {
        for (int64_t j = 0; j < g->pl; j += 16) /* the padding, and past the span what the last steps read and drop */
            _mm512_storeu_ps(v + j, ninf);
        for (int64_t j = g->pl + cols; j < span + 64; j += 16)
            _mm512_storeu_ps(v + j, ninf);
    }
    v = va;
    mps_avx512_maxpool_cols(g, x, 0, cols, v);
    for (int64_t oh = 0; oh < g->out_h; oh++, y += g->out_w) {
        if (oh + 1 < g->out_h)
            mps_avx512_maxpool_cols(g, x, oh + 1, cols, next);
        for (int64_t o = 0; o < g->out_w; o += 16) { /* 3 taps stride 2 (squeezenet1_1, resnet18) unrolled */
            __m512 acc =
                g->kw == 3 && g->sw == 2 ? mps_avx512_across(v, o, 3, 2) : mps_avx512_across(v, o, g->kw, g->sw);
            _mm512_mask_storeu_ps(y + o, mps_avx512_mask((int)(g->out_w - o)), acc);
        }
        float *t = v;
        v = next, next = t;
    }
}

