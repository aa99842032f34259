/* ukernel_avx2_pool.c: the avx2 family's MaxPool plane kernel (ukernels.h's
   maxpool), as ukernel_avx512_pool.c's: 2x2 and 3x3 stride-2 windows
   straight from the input rows, the others through column maxima on the
   stack. Built with -mavx2 -mfma. */
#include "ukernel_avx2.h"

/* v[pl + j] = the maximum of input column j down output row oh's window rows, j < cols. */
static void mps_avx2_maxpool_cols(const struct mps_maxpool_geom *g, const float *x, int64_t oh, int64_t cols, float *v)
{
    int64_t r0 = oh * g->sh - g->pt, r1 = r0 + g->kh;
    r0 = r0 > 0 ? r0 : 0;
    r1 = r1 < g->h ? r1 : g->h;
    int64_t j = 0;
    if (r1 - r0 == 3) /* a 3-row window (a 3x3 pool's rows but at a pad): the rows written out, no loop a chunk,
                         so that the chunks' chains of maxima overlap */
        for (const float *col = x + r0 * g->w; j + 8 <= cols; j += 8)
            _mm256_storeu_ps(v + g->pl + j,
                             mps_avx2_nanmax(mps_avx2_nanmax(_mm256_loadu_ps(col + j), _mm256_loadu_ps(col + g->w + j)),
                                             _mm256_loadu_ps(col + 2 * g->w + j)));
    for (; j < cols; j += 8) {
        __m256i m = mps_avx2_mask((int)(cols - j));
        bool whole = cols - j >= 8;
        const float *col = x + r0 * g->w + j;
        __m256 acc = mps_avx2_get(col, m, whole);
        for (int64_t r = 1; r < r1 - r0; r++)
            acc = mps_avx2_nanmax(acc, mps_avx2_get(col + r * g->w, m, whole));
        mps_avx2_put(v + g->pl + j, m, whole, acc);
    }
}

/* Eight floats from at: one apart (sw 1), or the even ones of sixteen (sw 2). */
static inline __m256 mps_avx2_taps(const float *at, int sw)
{
    if (sw == 1)
        return _mm256_loadu_ps(at);
    __m256 even, odd;
    mps_avx2_deinterleave(_mm256_loadu_ps(at), _mm256_loadu_ps(at + 8), &even, &odd);
    return even;
}

/* The 2x2 stride-2 window without pads straight from its two input rows:
   their maximum, then of the even and odd columns, eight outputs a step
   (through the row on the stack mnist_cnn's 16 x 28x28 pool at batch 8 took
   longer than the C loops). */
static void mps_avx2_maxpool2(const struct mps_maxpool_geom *g, const float *x, float *y)
{
    int64_t span = 2 * g->out_w; /* input columns the windows cover */
    for (int64_t oh = 0; oh < g->out_h; oh++, y += g->out_w) {
        const float *r0 = x + 2 * oh * g->w, *r1 = r0 + g->w;
        for (int64_t o = 0; o < g->out_w; o += 8) {
            int64_t n0 = span - 2 * o, n1 = n0 - 8;
            __m256i m0 = mps_avx2_mask((int)n0), m1 = mps_avx2_mask((int)n1);
            __m256 lo = mps_avx2_nanmax(mps_avx2_get(r0 + 2 * o, m0, n0 >= 8), mps_avx2_get(r1 + 2 * o, m0, n0 >= 8));
            __m256 hi =
                mps_avx2_nanmax(mps_avx2_get(r0 + 2 * o + 8, m1, n1 >= 8), mps_avx2_get(r1 + 2 * o + 8, m1, n1 >= 8));
            __m256 even, odd;
            mps_avx2_deinterleave(lo, hi, &even, &odd);
            mps_avx2_put(y + o, mps_avx2_mask((int)(g->out_w - o)), g->out_w - o >= 8, mps_avx2_nanmax(even, odd));
        }
    }
}

/* The maximum down n (1..3) rows, w apart, of the eight columns from
   column c of row (lanes outside [0, w) -inf: none read). */
__attribute__((always_inline)) static inline __m256 mps_avx2_down3(const float *row, int64_t w, int64_t c, int64_t n)
{
    if (c >= 0 && c + 8 <= w) {
        __m256 acc = _mm256_loadu_ps(row + c);
        for (int64_t r = 1; r < n; r++)
            acc = mps_avx2_nanmax(acc, _mm256_loadu_ps(row + r * w + c));
        return acc;
    }
    __m256i m = mps_avx2_lanes(c, w);
    __m256 acc = _mm256_maskload_ps(row + c, m);
    for (int64_t r = 1; r < n; r++)
        acc = mps_avx2_nanmax(acc, _mm256_maskload_ps(row + r * w + c, m));
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), acc, _mm256_castsi256_ps(m));
}

/* One output row of mps_avx2_maxpool3s2 from the n (1..3) input rows at row (a constant 3 where inlined: the loops
   down the rows with a variable count and their branches had cost as much as the maxima). */
__attribute__((always_inline)) static inline void mps_avx2_pool3_row(const struct mps_maxpool_geom *g, const float *row,
                                                                     int64_t n, float *y)
{
    const __m256i shift = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
    __m256 a = mps_avx2_down3(row, g->w, -g->pl, n);
    for (int64_t o = 0; o < g->out_w; o += 8) {
        int64_t c = 2 * o - g->pl; /* the step's columns [c, c + 17) */
        __m256 b = mps_avx2_down3(row, g->w, c + 8, n), next = mps_avx2_down3(row, g->w, c + 16, n);
        __m256 even, odd;
        mps_avx2_deinterleave(a, b, &even, &odd);
        __m256 t2 = _mm256_blend_ps(_mm256_permutevar8x32_ps(even, shift),
                                    _mm256_broadcastss_ps(_mm256_castps256_ps128(next)), 0x80);
        __m256 v = mps_avx2_nanmax(mps_avx2_nanmax(even, odd), t2);
        if (g->out_w - o >= 8)
            _mm256_storeu_ps(y + o, v);
        else
            mps_avx2_put_n(y + o, (int)(g->out_w - o), v);
        a = next;
    }
}

/* The 3x3 stride-2 window, begin pads 0 or 1 (squeezenet1_1's pools,
   resnet18's), as avx512's mps_avx512_maxpool3s2: an output row eight
   outputs a step in registers, the maxima down the window's rows of
   sixteen columns and of the next vector (carried to the next step), then
   the even columns, the odd ones and the even ones a column on. Through
   the row on the stack squeezenet1_1's 128 x 55x55 pool took 2.7 times
   onnxruntime's time on one thread. */
static void mps_avx2_maxpool3s2(const struct mps_maxpool_geom *g, const float *x, float *y)
{
    for (int64_t oh = 0; oh < g->out_h; oh++, y += g->out_w) {
        int64_t r0 = 2 * oh - g->pt, rs = r0 > 0 ? r0 : 0, n = (r0 + 3 < g->h ? r0 + 3 : g->h) - rs;
        for (int64_t r = r0 + 3; r < r0 + 5 && r < g->h; r++) /* the next output row's two new rows: the */
            for (int64_t j = 0; j < g->w; j += 16)            /* hardware's prefetcher fell behind (avx512's) */
                _mm_prefetch((const char *)(x + r * g->w + j), _MM_HINT_T0);
        if (n == 3)
            mps_avx2_pool3_row(g, x + rs * g->w, 3, y);
        else
            mps_avx2_pool3_row(g, x + rs * g->w, n, y);
    }
}

/* The MaxPool plane (ukernels.h), as ukernel_avx512_pool.c's general path:
   an output row at a time, the maximum down the window's rows into a row on
   the stack padded with -inf (the next row's filled before this one's is read
   across), then across each window's columns, eight outputs a step. avx2
   had none: its pools ran the C loops (squeezenet1_1's three at batch 1 0.55
   ms on one thread, the avx512 family's 0.07). A 3x3 stride-2 window (the
   CNNs' usual pool) with begin pads of 1 or less runs mps_avx2_maxpool3s2, in
   registers (squeezenet1_1's 55 -> 27 and 27 -> 13 pools in the model, one
   thread: 0.85 and 0.71 of the time here, whose unrolled taps for that
   window it replaced). */
void mps_avx2_maxpool(const struct mps_maxpool_geom *g, const float *x, float *y)
{
    if (g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->pt == 0 && g->pl == 0 && 2 * g->out_h <= g->h &&
        2 * g->out_w <= g->w) {
        mps_avx2_maxpool2(g, x, y);
        return;
    }
    if (g->kh == 3 && g->kw == 3 && g->sh == 2 && g->sw == 2 && g->pt <= 1 && g->pl <= 1) {
        mps_avx2_maxpool3s2(g, x, y);
        return;
    }
    float va[MPS_UMAXPOOL_SPAN + 48], vb[MPS_UMAXPOOL_SPAN + 48], *v = va, *next = vb;
    int64_t span = (g->out_w - 1) * g->sw + g->kw, cols = g->w < span - g->pl ? g->w : span - g->pl;
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int b = 0; b < 2; b++, v = vb) {
        for (int64_t j = 0; j < g->pl; j += 8) /* the padding, and past the span what the last steps read and drop */
            _mm256_storeu_ps(v + j, ninf);
        for (int64_t j = g->pl + cols; j < span + 32; j += 8)
            _mm256_storeu_ps(v + j, ninf);
    }
    v = va;
    mps_avx2_maxpool_cols(g, x, 0, cols, v);
    for (int64_t oh = 0; oh < g->out_h; oh++, y += g->out_w) {
        if (oh + 1 < g->out_h)
            mps_avx2_maxpool_cols(g, x, oh + 1, cols, next);
        for (int64_t o = 0; o < g->out_w; o += 8) {
            const float *at = v + o * g->sw;
            __m256 acc = mps_avx2_taps(at, g->sw);
            for (int t = 1; t < g->kw; t++)
                acc = mps_avx2_nanmax(acc, mps_avx2_taps(at + t, g->sw));
            mps_avx2_put(y + o, mps_avx2_mask((int)(g->out_w - o)), g->out_w - o >= 8, acc);
        }
        float *t = v;
        v = next, next = t;
    }
}
