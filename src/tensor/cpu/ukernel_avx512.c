/* ukernel_avx512.c: the avx512 family (AVX-512F): 8 x 32 tiles, sixteen
   512-bit accumulators; masked loads and stores for a tile's last columns.
   Built with -mavx512f; called only where cpuid says the CPU runs it (isa.c). */
#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#include "ukernel_dw.h"
#include "ukernel_wino.h"
#include "ukernel_x86.h"

#define MR 8
#define NR 32
#define KC 256

static inline __mmask16 mps_avx512_mask(int n)
{
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1u);
}

/* The activation of the epilogue from its constants: the clamp to [lo, hi],
   then the slope below zero, then HardSwish. */
struct mps_avx512_actc {
    __m512 lo, hi, slope;
    bool clamp, leaky, hswish;
};

static inline struct mps_avx512_actc mps_avx512_actc_of(const struct mps_tile_epi *e)
{
    return (struct mps_avx512_actc){.lo = _mm512_set1_ps(e->lo),
                                    .hi = _mm512_set1_ps(e->hi),
                                    .slope = _mm512_set1_ps(e->slope),
                                    .clamp = e->lo > -INFINITY || e->hi < INFINITY,
                                    .leaky = e->slope != 1.0f,
                                    .hswish = e->hswish};
}

static inline __m512 mps_avx512_actc(__m512 acc, const struct mps_avx512_actc *a)
{
    if (a->clamp) /* acc second: max and min return it when it is NaN */
        acc = _mm512_min_ps(a->hi, _mm512_max_ps(a->lo, acc));
    if (a->leaky) {
        __mmask16 neg = _mm512_cmp_ps_mask(acc, _mm512_setzero_ps(), _CMP_LT_OQ);
        acc = _mm512_mask_mul_ps(acc, neg, acc, a->slope);
    }
    if (a->hswish) { /* t is NaN only where acc is: the product is NaN whatever min and max made of t */
        __m512 t = _mm512_add_ps(_mm512_div_ps(acc, _mm512_set1_ps(6.0f)), _mm512_set1_ps(0.5f));
        t = _mm512_max_ps(_mm512_min_ps(t, _mm512_set1_ps(1.0f)), _mm512_setzero_ps());
        acc = _mm512_mul_ps(acc, t);
    }
    return acc;
}

static inline __m512 mps_avx512_act(__m512 acc, const struct mps_tile_epi *e)
{
    struct mps_avx512_actc a = mps_avx512_actc_of(e);
    return mps_avx512_actc(acc, &a);
}

/* Stores acc (lanes [0, n) of columns c0..) of one row, applying the flags. */
static inline void mps_avx512_store(float *c, __m512 acc, int n, int flags, const struct mps_tile_epi *e, int r, int c0)
{
    __mmask16 m = mps_avx512_mask(n);
    if (flags & MPS_TILE_ACCUMULATE)
        acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, c));
    if (flags & MPS_TILE_FINISH) {
        if (e->bias)
            acc =
                _mm512_add_ps(acc, e->bias_cols ? _mm512_maskz_loadu_ps(m, e->bias + c0) : _mm512_set1_ps(e->bias[r]));
        if (e->res)
            acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, e->res + r * e->ldr + c0));
        acc = mps_avx512_act(acc, e);
    }
    _mm512_mask_storeu_ps(c, m, acc);
}

/* mps_avx512_keep with a residual (row r of e->res, laid out as c): added to
   the kept columns once they are packed together, before the activation.
   Out of line: the plain store stays as short as it was (on k = 9 layers the
   store is as long as the products, and every instruction there showed). */
__attribute__((noinline)) static void mps_avx512_keep_res(float *c, __m512 lo, __m512 hi, uint64_t keep,
                                                         const struct mps_tile_epi *e, int r)
{
    __mmask16 k0 = (__mmask16)(keep & 0xffffu), k1 = (__mmask16)(keep >> 16 & 0xffffu);
    int n0 = __builtin_popcount(k0), n1 = __builtin_popcount(k1);
    const float *res = e->res + r * e->ldr;
    lo = _mm512_add_ps(_mm512_maskz_compress_ps(k0, lo), _mm512_maskz_loadu_ps(mps_avx512_mask(n0), res));
    hi = _mm512_add_ps(_mm512_maskz_compress_ps(k1, hi), _mm512_maskz_loadu_ps(mps_avx512_mask(n1), res + n0));
    _mm512_mask_storeu_ps(c, mps_avx512_mask(n0), mps_avx512_act(lo, e));
    _mm512_mask_storeu_ps(c + n0, mps_avx512_mask(n1), mps_avx512_act(hi, e));
}

/* What the direct convolution's row stores of a tile share, worked out once
   a tile and kept in registers: the activation's constants and the kept
   columns' masks (per row they were loaded again after every store, which
   might have changed them: on squeezenet1_1's stem, k = 27, the store was
   a third as long as the products). */
struct mps_avx512_keepv {
    const struct mps_tile_epi *e;
    struct mps_avx512_actc act;
    __mmask16 k0, k1, m0, m1;
    int n0;
    bool all; /* every column kept: plain stores */
};

static inline struct mps_avx512_keepv mps_avx512_keepv_of(uint64_t keep, const struct mps_tile_epi *e)
{
    __mmask16 k0 = (__mmask16)(keep & 0xffffu), k1 = (__mmask16)(keep >> 16 & 0xffffu);
    int n0 = __builtin_popcount(k0);
    return (struct mps_avx512_keepv){.e = e,
                                     .act = mps_avx512_actc_of(e),
                                     .k0 = k0,
                                     .k1 = k1,
                                     .m0 = mps_avx512_mask(n0),
                                     .m1 = mps_avx512_mask(__builtin_popcount(k1)),
                                     .n0 = n0,
                                     .all = (keep & 0xffffffffu) == 0xffffffffu};
}

/* The direct convolution's store of one row (ukernels.h): the epilogue (bias
   a row, activation), then the kept columns packed together from c; with a
   residual, mps_avx512_keep_res after the bias. */
__attribute__((always_inline)) static inline void mps_avx512_keep(float *c, __m512 lo, __m512 hi,
                                                                  const struct mps_avx512_keepv *v, int r)
{
    const struct mps_tile_epi *e = v->e;
    if (e->bias) {
        lo = _mm512_add_ps(lo, _mm512_set1_ps(e->bias[r]));
        hi = _mm512_add_ps(hi, _mm512_set1_ps(e->bias[r]));
    }
    if (__builtin_expect(e->res != NULL, 0)) {
        mps_avx512_keep_res(c, lo, hi, (uint64_t)v->k1 << 16 | v->k0, e, r);
        return;
    }
    lo = mps_avx512_actc(lo, &v->act);
    hi = mps_avx512_actc(hi, &v->act);
    if (v->all) {
        _mm512_storeu_ps(c, lo);
        _mm512_storeu_ps(c + 16, hi);
        return;
    }
    _mm512_mask_storeu_ps(c, v->m0, _mm512_maskz_compress_ps(v->k0, lo));
    _mm512_mask_storeu_ps(c + v->n0, v->m1, _mm512_maskz_compress_ps(v->k1, hi));
}

/* Row kk of a tile's B panel: packed (the GEMM: nr floats a row, one after
   another), or at an offset of the direct convolution's input (ukernels.h). */
#define MPS_AVX512_PACKED(kk) (b + (kk) * NR)
#define MPS_AVX512_OFFSET(kk) (b + off[kk])

/* Row r of A at k step kk + j, a pointing at step kk: a[r LDA + j KS]. A
   packed (LDA 1, KS MR: k groups of MR), or its rows read in place (LDA
   lda, KS 1: the GEMM's run-time A, no packing). */
#define MPS_AVX512_A(r, j) a[(r) * a_lda + (j) * a_ks]

/* A tile of R rows: two accumulators a row, named (see ukernel_avx2.c). */
#define MPS_AVX512_DECL(r) __m512 lo##r = _mm512_setzero_ps(), hi##r = _mm512_setzero_ps();
#define MPS_AVX512_FMA(R, r)                                                                                           \
    if (R > r) {                                                                                                       \
        __m512 av = _mm512_set1_ps(MPS_AVX512_A(r, 0));                                                                \
        lo##r = _mm512_fmadd_ps(av, b0, lo##r);                                                                        \
        hi##r = _mm512_fmadd_ps(av, b1, hi##r);                                                                        \
    }
#define MPS_AVX512_STORE(R, r)                                                                                         \
    if (R > r) {                                                                                                       \
        mps_avx512_store(c + r * ldc, lo##r, cols, flags, e, r, 0);                                                    \
        if (cols > 16)                                                                                                 \
            mps_avx512_store(c + r * ldc + 16, hi##r, cols - 16, flags, e, r, 16);                                     \
    }
#define MPS_AVX512_KEEP(R, r)                                                                                          \
    if (R > r)                                                                                                         \
        mps_avx512_keep(c + r * ldc, lo##r, hi##r, &kv, r);
/* What a tile's stores work out first (STORE##_PREP). */
#define MPS_AVX512_STORE_PREP
#define MPS_AVX512_KEEP_PREP const struct mps_avx512_keepv kv = mps_avx512_keepv_of(cols, e);
#define MPS_AVX512_TILE(NAME, ROW, STORE, COLS, LDA, KS, R)                                                           \
    static void NAME##R(int64_t k, const float *a, int64_t lda, const float *b, const int32_t *off, float *c,         \
                        int64_t ldc, COLS cols, int flags, const struct mps_tile_epi *e)                               \
    {                                                                                                                  \
        (void)off, (void)flags, (void)lda;                                                                             \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_AVX512_DECL(0)                                                                                             \
        MPS_AVX512_DECL(1) MPS_AVX512_DECL(2) MPS_AVX512_DECL(3) MPS_AVX512_DECL(4) MPS_AVX512_DECL(5)                 \
            MPS_AVX512_DECL(6) MPS_AVX512_DECL(7) for (int64_t kk = 0; kk < k; kk++, a += a_ks)                        \
        {                                                                                                              \
            const float *bk = ROW(kk);                                                                                 \
            __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);                                            \
            MPS_AVX512_FMA(R, 0)                                                                                       \
            MPS_AVX512_FMA(R, 1) MPS_AVX512_FMA(R, 2) MPS_AVX512_FMA(R, 3) MPS_AVX512_FMA(R, 4) MPS_AVX512_FMA(R, 5)   \
                MPS_AVX512_FMA(R, 6) MPS_AVX512_FMA(R, 7)                                                              \
        }                                                                                                              \
        STORE##_PREP                                                                                                   \
        STORE(R, 0) STORE(R, 1) STORE(R, 2) STORE(R, 3) STORE(R, 4) STORE(R, 5) STORE(R, 6) STORE(R, 7)                \
    }

/* Two or three rows: two k steps in flight (see ukernel_avx2.c). */
#define MPS_AVX512_DECL2(r) __m512 lo##r = _mm512_setzero_ps(), hi##r = lo##r, lx##r = lo##r, hx##r = lo##r;
#define MPS_AVX512_FMA2(R, r)                                                                                          \
    if (R > r) {                                                                                                       \
        __m512 av = _mm512_set1_ps(MPS_AVX512_A(r, 0)), ax = _mm512_set1_ps(MPS_AVX512_A(r, 1));                       \
        lo##r = _mm512_fmadd_ps(av, b0, lo##r);                                                                        \
        hi##r = _mm512_fmadd_ps(av, b1, hi##r);                                                                        \
        lx##r = _mm512_fmadd_ps(ax, b2, lx##r);                                                                        \
        hx##r = _mm512_fmadd_ps(ax, b3, hx##r);                                                                        \
    }
#define MPS_AVX512_FOLD2(R, r)                                                                                         \
    if (R > r) {                                                                                                       \
        lo##r = _mm512_add_ps(lo##r, lx##r);                                                                           \
        hi##r = _mm512_add_ps(hi##r, hx##r);                                                                           \
    }
#define MPS_AVX512_TILE_FEW(NAME, ROW, STORE, COLS, LDA, KS, R)                                                       \
    static void NAME##R(int64_t k, const float *a, int64_t lda, const float *b, const int32_t *off, float *c,         \
                        int64_t ldc, COLS cols, int flags, const struct mps_tile_epi *e)                               \
    {                                                                                                                  \
        (void)off, (void)flags, (void)lda;                                                                             \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_AVX512_DECL2(0) MPS_AVX512_DECL2(1) MPS_AVX512_DECL2(2)                                                    \
        int64_t kk = 0;                                                                                                \
        for (; kk + 2 <= k; kk += 2, a += 2 * a_ks) {                                                                  \
            const float *bk = ROW(kk), *bx = ROW(kk + 1);                                                              \
            __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16), b2 = _mm512_loadu_ps(bx),                 \
                   b3 = _mm512_loadu_ps(bx + 16);                                                                      \
            MPS_AVX512_FMA2(R, 0) MPS_AVX512_FMA2(R, 1) MPS_AVX512_FMA2(R, 2)                                          \
        }                                                                                                              \
        MPS_AVX512_FOLD2(R, 0) MPS_AVX512_FOLD2(R, 1) MPS_AVX512_FOLD2(R, 2)                                           \
        for (; kk < k; kk++, a += a_ks) {                                                                              \
            const float *bk = ROW(kk);                                                                                 \
            __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);                                            \
            MPS_AVX512_FMA(R, 0) MPS_AVX512_FMA(R, 1) MPS_AVX512_FMA(R, 2)                                             \
        }                                                                                                              \
        STORE##_PREP                                                                                                   \
        STORE(R, 0) STORE(R, 1) STORE(R, 2)                                                                            \
    }

/* One row: four k steps in flight, eight accumulators. */
#define MPS_AVX512_TILE_ONE(NAME, ROW, STORE, COLS, LDA, KS)                                                          \
    static void NAME##1(int64_t k, const float *a, int64_t lda, const float *b, const int32_t *off, float *c,         \
                        int64_t ldc, COLS cols, int flags, const struct mps_tile_epi *e)                               \
    {                                                                                                                  \
        (void)off, (void)ldc, (void)flags, (void)lda;                                                                  \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        __m512 l0 = _mm512_setzero_ps(), l1 = l0, l2 = l0, l3 = l0, h0 = l0, h1 = l0, h2 = l0, h3 = l0;                \
        int64_t kk = 0;                                                                                                \
        for (; kk + 4 <= k; kk += 4, a += 4 * a_ks) {                                                                  \
            const float *r0 = ROW(kk), *r1 = ROW(kk + 1), *r2 = ROW(kk + 2), *r3 = ROW(kk + 3);                        \
            __m512 a0 = _mm512_set1_ps(MPS_AVX512_A(0, 0)), a1 = _mm512_set1_ps(MPS_AVX512_A(0, 1)),                   \
                   a2 = _mm512_set1_ps(MPS_AVX512_A(0, 2)), a3 = _mm512_set1_ps(MPS_AVX512_A(0, 3));                   \
            l0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(r0), l0);                                                         \
            h0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(r0 + 16), h0);                                                    \
            l1 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(r1), l1);                                                         \
            h1 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(r1 + 16), h1);                                                    \
            l2 = _mm512_fmadd_ps(a2, _mm512_loadu_ps(r2), l2);                                                         \
            h2 = _mm512_fmadd_ps(a2, _mm512_loadu_ps(r2 + 16), h2);                                                    \
            l3 = _mm512_fmadd_ps(a3, _mm512_loadu_ps(r3), l3);                                                         \
            h3 = _mm512_fmadd_ps(a3, _mm512_loadu_ps(r3 + 16), h3);                                                    \
        }                                                                                                              \
        for (; kk < k; kk++, a += a_ks) {                                                                              \
            const float *r0 = ROW(kk);                                                                                 \
            __m512 av = _mm512_set1_ps(a[0]);                                                                          \
            l0 = _mm512_fmadd_ps(av, _mm512_loadu_ps(r0), l0);                                                         \
            h0 = _mm512_fmadd_ps(av, _mm512_loadu_ps(r0 + 16), h0);                                                    \
        }                                                                                                              \
        __m512 lo0 = _mm512_add_ps(_mm512_add_ps(l0, l1), _mm512_add_ps(l2, l3));                                      \
        __m512 hi0 = _mm512_add_ps(_mm512_add_ps(h0, h1), _mm512_add_ps(h2, h3));                                      \
        STORE##_PREP                                                                                                   \
        STORE(1, 0)                                                                                                    \
    }

/* Every tile height for one way of reading B, and the call by height. */
#define MPS_AVX512_TILES(NAME, ROW, STORE, COLS, LDA, KS)                                                              \
    MPS_AVX512_TILE_ONE(NAME, ROW, STORE, COLS, LDA, KS)                                                               \
    MPS_AVX512_TILE_FEW(NAME, ROW, STORE, COLS, LDA, KS, 2)                                                            \
    MPS_AVX512_TILE_FEW(NAME, ROW, STORE, COLS, LDA, KS, 3)                                                            \
    MPS_AVX512_TILE(NAME, ROW, STORE, COLS, LDA, KS, 4)                                                                \
    MPS_AVX512_TILE(NAME, ROW, STORE, COLS, LDA, KS, 5)                                                                \
    MPS_AVX512_TILE(NAME, ROW, STORE, COLS, LDA, KS, 6)                                                                \
    MPS_AVX512_TILE(NAME, ROW, STORE, COLS, LDA, KS, 7) MPS_AVX512_TILE(NAME, ROW, STORE, COLS, LDA, KS, 8)
#define MPS_AVX512_BY_ROWS(NAME)                                                                                       \
    switch (rows) {                                                                                                    \
    case 1: NAME##1(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                 \
    case 2: NAME##2(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                 \
    case 3: NAME##3(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                 \
    case 4: NAME##4(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                 \
    case 5: NAME##5(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                 \
    case 6: NAME##6(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                 \
    case 7: NAME##7(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                 \
    default: NAME##8(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                                \
    }

MPS_AVX512_TILES(mps_avx512_tile, MPS_AVX512_PACKED, MPS_AVX512_STORE, int, 1, MR)
MPS_AVX512_TILES(mps_avx512_ctile, MPS_AVX512_OFFSET, MPS_AVX512_KEEP, uint64_t, 1, MR)
MPS_AVX512_TILES(mps_avx512_rtile, MPS_AVX512_PACKED, MPS_AVX512_STORE, int, lda, 1)

static void mps_avx512_gemm(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                            int flags, const struct mps_tile_epi *e)
{
    const int32_t *off = NULL;
    const int64_t lda = 0;
    MPS_AVX512_BY_ROWS(mps_avx512_tile)
}

static void mps_avx512_gemm_rows(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                                 int rows, int cols, int flags, const struct mps_tile_epi *e)
{
    const int32_t *off = NULL;
    MPS_AVX512_BY_ROWS(mps_avx512_rtile)
}

static void mps_avx512_conv(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                            int rows, uint64_t cols, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    const int64_t lda = 0;
    MPS_AVX512_BY_ROWS(mps_avx512_ctile)
}

/* r[i][j] -> r[j][i] for a 16 x 16 block of floats in registers: 32-bit,
   then 64-bit interleaves leave lane L of u[4 i + j] holding column 4 L + j
   of rows 4 i .. 4 i + 3; two rounds of 128-bit lane shuffles gather them. */
static inline void mps_avx512_transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) {
            __m512d a = _mm512_castps_pd(t[4 * i + j]), b = _mm512_castps_pd(t[4 * i + j + 2]);
            u[4 * i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            u[4 * i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int j = 0; j < 4; j++) {
        __m512 ab0 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(1, 0, 1, 0));
        __m512 ab1 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
        __m512 cd0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(1, 0, 1, 0));
        __m512 cd1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 2, 3, 2));
        r[j] = _mm512_shuffle_f32x4(ab0, cd0, _MM_SHUFFLE(2, 0, 2, 0));
        r[4 + j] = _mm512_shuffle_f32x4(ab0, cd0, _MM_SHUFFLE(3, 1, 3, 1));
        r[8 + j] = _mm512_shuffle_f32x4(ab1, cd1, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + j] = _mm512_shuffle_f32x4(ab1, cd1, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* The transposed tile's store: lo[j] and hi[j] hold position j's channels
   0-15 and 16-31 (zero past the R positions); transposed in registers, each
   channel's R positions are one masked store into its plane (the tile went
   out through the stack a float at a time: 224 scalar copies a tile). */
static inline void mps_avx512_ttile_store(__m512 *lo, __m512 *hi, float *c, int64_t ldc, int r, int cols)
{
    __mmask16 m = mps_avx512_mask(r);
    mps_avx512_transpose16(lo);
    for (int o = 0; o < 16 && o < cols; o++)
        _mm512_mask_storeu_ps(c + o * ldc, m, lo[o]);
    if (cols <= 16)
        return;
    mps_avx512_transpose16(hi);
    for (int o = 16; o < cols; o++)
        _mm512_mask_storeu_ps(c + o * ldc, m, hi[o - 16]);
}

/* The transposed tile (ukernels.h): MT positions x 32 channels, two
   accumulators a position (its channels' low and high sixteen); each
   position's input broadcast once for both. The store adds the bias, then
   the activation in registers, and transposes the tile into each channel's
   run of positions (mps_avx512_ttile_store). */
#define MT 7
#define MPS_AVX512_TDECL(j) __m512 l##j = _mm512_setzero_ps(), h##j = l##j;
#define MPS_AVX512_TFMA(R, j)                                                                                          \
    if (R > j) {                                                                                                       \
        __m512 xv = _mm512_set1_ps(bk[j]);                                                                             \
        l##j = _mm512_fmadd_ps(xv, w0, l##j);                                                                          \
        h##j = _mm512_fmadd_ps(xv, w1, h##j);                                                                          \
    }
#define MPS_AVX512_TPUT(R, j)                                                                                          \
    if (R > j) {                                                                                                       \
        lo[j] = mps_avx512_act(_mm512_add_ps(l##j, b0), e);                                                            \
        hi[j] = mps_avx512_act(_mm512_add_ps(h##j, b1), e);                                                            \
    }
#define MPS_AVX512_TTILE(R)                                                                                            \
    static void mps_avx512_ttile##R(int64_t k, const float *a, const float *b, const int32_t *off, float *c,          \
                                    int64_t ldc, int cols, const struct mps_tile_epi *e)                               \
    {                                                                                                                  \
        MPS_AVX512_TDECL(0) MPS_AVX512_TDECL(1) MPS_AVX512_TDECL(2) MPS_AVX512_TDECL(3) MPS_AVX512_TDECL(4)            \
            MPS_AVX512_TDECL(5) MPS_AVX512_TDECL(6) for (int64_t kk = 0; kk < k; kk++, a += NR)                        \
        {                                                                                                              \
            __m512 w0 = _mm512_loadu_ps(a), w1 = _mm512_loadu_ps(a + 16);                                              \
            const float *bk = b + off[kk];                                                                             \
            MPS_AVX512_TFMA(R, 0)                                                                                      \
            MPS_AVX512_TFMA(R, 1) MPS_AVX512_TFMA(R, 2) MPS_AVX512_TFMA(R, 3) MPS_AVX512_TFMA(R, 4)                    \
                MPS_AVX512_TFMA(R, 5) MPS_AVX512_TFMA(R, 6)                                                            \
        }                                                                                                              \
        __m512 b0 = _mm512_setzero_ps(), b1 = b0;                                                                      \
        if (e->bias) {                                                                                                 \
            b0 = _mm512_maskz_loadu_ps(mps_avx512_mask(cols), e->bias);                                                \
            b1 = _mm512_maskz_loadu_ps(mps_avx512_mask(cols - 16), e->bias + 16);                                      \
        }                                                                                                              \
        __m512 lo[16], hi[16];                                                                                         \
        for (int j = R; j < 16; j++)                                                                                   \
            lo[j] = hi[j] = _mm512_setzero_ps();                                                                       \
        MPS_AVX512_TPUT(R, 0)                                                                                          \
        MPS_AVX512_TPUT(R, 1) MPS_AVX512_TPUT(R, 2) MPS_AVX512_TPUT(R, 3) MPS_AVX512_TPUT(R, 4) MPS_AVX512_TPUT(R, 5)  \
            MPS_AVX512_TPUT(R, 6) mps_avx512_ttile_store(lo, hi, c, ldc, R, cols);                                     \
    }
MPS_AVX512_TTILE(1)
MPS_AVX512_TTILE(2)
MPS_AVX512_TTILE(3)
MPS_AVX512_TTILE(4)
MPS_AVX512_TTILE(5)
MPS_AVX512_TTILE(6)
MPS_AVX512_TTILE(7)

static void mps_avx512_convt(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                             int rows, int cols, const struct mps_tile_epi *e)
{
    switch (rows) {
    case 1: mps_avx512_ttile1(k, a, b, off, c, ldc, cols, e); break;
    case 2: mps_avx512_ttile2(k, a, b, off, c, ldc, cols, e); break;
    case 3: mps_avx512_ttile3(k, a, b, off, c, ldc, cols, e); break;
    case 4: mps_avx512_ttile4(k, a, b, off, c, ldc, cols, e); break;
    case 5: mps_avx512_ttile5(k, a, b, off, c, ldc, cols, e); break;
    case 6: mps_avx512_ttile6(k, a, b, off, c, ldc, cols, e); break;
    default: mps_avx512_ttile7(k, a, b, off, c, ldc, cols, e); break;
    }
}

/* Prefetches input rows [r0, r1) of a plane of w columns (those in [0, h)):
   the hardware's prefetcher did not keep up with MaxPool's row streams. */
static inline void mps_avx512_prefetch_rows(const float *x, int64_t h, int64_t w, int64_t r0, int64_t r1)
{
    for (int64_t r = r0 > 0 ? r0 : 0; r < r1 && r < h; r++)
        for (int64_t j = 0; j < w; j += 16)
            _mm_prefetch((const char *)(x + r * w + j), _MM_HINT_T0);
}

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
            mps_avx512_store(y + oh * g->out_w + ow, acc, n, MPS_TILE_FINISH, e, 0, 0);
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
static void mps_avx512_dw3(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
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

/* The outputs of one band of sixteen planes (mps_avx512_dwb): output rows
   [oh0, oh0 + rows) from buf, whose row 0 is the input row oh0 sh - pt,
   sixteen positions (across rows) a step, transposed out to the planes.
   three and rest are constants where called, so that each form is a loop of
   its own: the 3x3 window at fixed offsets, and the activation past the clamp. */
static inline void mps_avx512_dwb_outputs(const struct mps_dwk_geom *g, const float *buf, int64_t pw, int64_t oh0,
                                          int64_t rows, const __m512 *kv, const int64_t *off, __m512 bv,
                                          const struct mps_tile_epi *act, float *y, bool three, bool rest)
{
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
        for (int c = 0; c < 16; c++)
            _mm512_mask_storeu_ps(y + c * out_plane + o, mps_avx512_mask(n), r[c]);
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
static bool mps_avx512_dwb(const struct mps_dwk_geom *g, const float *x, const float *k, const float *bias, float *y,
                           int64_t blocks, const struct mps_tile_epi *e, const struct mps_dwb_expand *ex)
{
    int taps = g->kh * g->kw;
    int64_t span_h = (g->kh - 1) * g->dh + 1, pw = (g->out_w - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    int64_t rows_in = MPS_AVX512_DWB_BUF / 16 / pw;
    int64_t band = rows_in >= span_h ? (rows_in - span_h) / g->sh + 1 : 0; /* output rows a band holds */
    if (band < 1 || taps > MPS_DWB_TAPS)
        return false;
    _Alignas(64) float buf[MPS_AVX512_DWB_BUF];
    __m512 kv[MPS_DWB_TAPS], r[16];
    int64_t off[MPS_DWB_TAPS], in_plane = g->h * g->w, out_plane = g->out_h * g->out_w;
    for (int u = 0; u < taps; u++)
        off[u] = 16 * ((u / g->kw) * g->dh * pw + (u % g->kw) * g->dw);
    struct mps_tile_epi act = *e;
    bool three = taps == 9 && g->dw == 1 && g->dh == 1, rest = act.slope != 1.0f || act.hswish;
    int64_t oh_end = g->oh1 ? g->oh1 : g->out_h;
    bool whole = band >= oh_end - g->oh0; /* one band for all the rows: the same zeros for every block */
    int64_t cols = g->w < pw - g->pl ? g->w : pw - g->pl; /* input columns the windows read */
    cols = cols > 0 ? cols : 0;
    if (ex && (ex->k > MPS_DWB_EXPAND_K || g->h * g->w < 16))
        return false;
    _Alignas(64) float wt[16 * MPS_DWB_EXPAND_K]; /* the 1x1's weights of a block, sixteen floats a channel */
    const struct mps_avx512_actc ex_act = mps_avx512_actc_of(ex ? &ex->act : e);
    const bool ex_rest = ex_act.leaky || ex_act.hswish;
    for (int64_t blk = 0; blk < blocks; blk++, x += 16 * in_plane, y += 16 * out_plane, k += 16 * taps) {
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
        for (int64_t oh0 = g->oh0; oh0 < oh_end; oh0 += band) {
            int64_t rows = oh_end - oh0 < band ? oh_end - oh0 : band;
            int64_t first = oh0 * g->sh - g->pt, count = (rows - 1) * g->sh + span_h; /* the buffer's input rows */
            int64_t r0 = first > 0 ? first : 0, r1 = first + count < g->h ? first + count : g->h;
            r1 = r1 > r0 ? r1 : r0;
            for (int64_t i = 0; i < count && (!whole || blk == 0); i++) { /* zeros around the input */
                float *row = buf + 16 * i * pw;
                if (first + i < r0 || first + i >= r1) {
                    memset(row, 0, sizeof(float) * 16 * (size_t)pw);
                    continue;
                }
                memset(row, 0, sizeof(float) * 16 * (size_t)g->pl);
                memset(row + 16 * (g->pl + cols), 0, sizeof(float) * 16 * (size_t)(pw - g->pl - cols));
            }
            if (ex && ex_rest)
                mps_avx512_dwb_expand(g, ex, wt, ex_bias, &ex_act, r0, r1, first, pw, cols, buf, true);
            else if (ex)
                mps_avx512_dwb_expand(g, ex, wt, ex_bias, &ex_act, r0, r1, first, pw, cols, buf, false);
            /* or input rows r0 .. r1 of the sixteen planes, sixteen floats a step (across rows), transposed in */
            int64_t ih = r0, iw = 0;
            for (int64_t q = r0 * g->w; !ex && q < r1 * g->w; q += 16) {
                int n = r1 * g->w - q < 16 ? (int)(r1 * g->w - q) : 16;
                for (int c = 0; c < 16; c++)
                    r[c] = _mm512_maskz_loadu_ps(mps_avx512_mask(n), x + c * in_plane + q);
                mps_avx512_transpose16(r);
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
                mps_avx512_dwb_outputs(g, buf, pw, oh0, rows, kv, off, bv, &act, y, true, false);
            else if (three)
                mps_avx512_dwb_outputs(g, buf, pw, oh0, rows, kv, off, bv, &act, y, true, true);
            else
                mps_avx512_dwb_outputs(g, buf, pw, oh0, rows, kv, off, bv, &act, y, false, rest);
        }
    }
    return true;
}

/* max(a, b), a NaN in either giving NaN (vmaxps returns b when either is one). */
static inline __m512 mps_avx512_nanmax(__m512 a, __m512 b)
{
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
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
        for (int64_t r = r0 + 3; r < r0 + 5 && r < h; r++) /* the next output row's two new rows */
            for (int64_t j = 0; j < w; j += 16)
                _mm_prefetch((const char *)(x + r * w + j), _MM_HINT_T0);
        __m512 c[9] = {ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf, ninf};
        for (int i = 0; i < vecs; i++) {
            __mmask16 m = mps_avx512_mask((int)(w + pl - 16 * i)) & (__mmask16)(i ? 0xffffu : 0xffffu << pl);
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
static void mps_avx512_maxpool(const struct mps_maxpool_geom *g, const float *x, float *y)
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

/* Zeros zmm16-31, then the upper halves of zmm0-15 (vzeroupper). The
   vzeroupper GCC puts at a function's end clears only zmm0-15's; with
   zmm16-31 left dirty, the SSE code of the generic ops that run next was
   four times slower on Zen 5 (LR-ASPP's final Resize, one core: 0.27 ->
   1.15 ms after a depthwise kernel that used all 32 registers). And once a
   node's own glue between the kernels (the direct conv's residual loop, the
   C library's copies) ran, zeroing zmm16-31 alone no longer sufficed: the
   same Resize 0.15 -> 0.59 ms at two threads until vzeroupper joined it.
   Called after each node and each worker's part of a job. */
static void mps_avx512_clean(void)
{
    __asm__ volatile("vpxord %%xmm16, %%xmm16, %%xmm16\n\tvpxord %%xmm17, %%xmm17, %%xmm17\n\t"
                     "vpxord %%xmm18, %%xmm18, %%xmm18\n\tvpxord %%xmm19, %%xmm19, %%xmm19\n\t"
                     "vpxord %%xmm20, %%xmm20, %%xmm20\n\tvpxord %%xmm21, %%xmm21, %%xmm21\n\t"
                     "vpxord %%xmm22, %%xmm22, %%xmm22\n\tvpxord %%xmm23, %%xmm23, %%xmm23\n\t"
                     "vpxord %%xmm24, %%xmm24, %%xmm24\n\tvpxord %%xmm25, %%xmm25, %%xmm25\n\t"
                     "vpxord %%xmm26, %%xmm26, %%xmm26\n\tvpxord %%xmm27, %%xmm27, %%xmm27\n\t"
                     "vpxord %%xmm28, %%xmm28, %%xmm28\n\tvpxord %%xmm29, %%xmm29, %%xmm29\n\t"
                     "vpxord %%xmm30, %%xmm30, %%xmm30\n\tvpxord %%xmm31, %%xmm31, %%xmm31\n\tvzeroupper" ::
                         : "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",
                           "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31");
}

const struct mps_ukernels mps_ukernels_avx512 = {
    .name = "avx512",
    .describe = "AVX-512F, 8 x 32 float tiles",
    .mr = MR,
    .nr = NR,
    .kc = KC,
    .mt = MT,
    .supported = mps_x86_has_avx512,
    .clean = mps_avx512_clean,
    .gemm = mps_avx512_gemm,
    .gemm_rows = mps_avx512_gemm_rows,
    .dw3 = mps_avx512_dw3,
    .dwk = mps_dwk,
    .dwb = mps_avx512_dwb,
    .conv = mps_avx512_conv,
    .conv_res = true,
    .convt = mps_avx512_convt,
    .maxpool = mps_avx512_maxpool,
    .wino_in = mps_wino_in,
    .wino_out = mps_wino_out,
};
