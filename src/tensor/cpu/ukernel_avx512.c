/* ukernel_avx512.c: the avx512 family (AVX-512F): 8 x 32 tiles, sixteen
   512-bit accumulators; masked loads and stores for a tile's last columns;
   the transposed tile; the family's table (its depthwise kernels in
   ukernel_avx512_dw.c, MaxPool in ukernel_avx512_pool.c, Winograd's
   transforms in ukernel_avx512_wino.c). Built with
   -mavx512f; called only where cpuid says the CPU runs it (isa.c). */
#include "ukernel_avx512.h"
#include "ukernel_act.h"
#include "ukernel_dw.h"
#include "ukernel_x86.h"

#define MR 8
#define NR 32
#define KC 256

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
   columns' masks (loaded per row, after each store that might have changed
   them, the store of squeezenet1_1's stem, k = 27, is a third as long as
   its products). */
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

/* What the GEMM tile's row stores share, worked out once a tile: the
   columns' masks, the epilogue's constants, and whether a row is only
   stored (loaded per row from e, after each store that might have changed
   them, they make the stores a sixth of a tile: 64 x 64 x 64 at 0.82 of
   OpenBLAS's SkylakeX kernel instead of 0.92). */
struct mps_avx512_storev {
    const float *bias, *res; /* NULL where the tile does not finish */
    int64_t ldr;
    struct mps_avx512_actc act;
    __mmask16 m0, m1;
    bool acc, bias_cols, act_any;
    bool plain; /* no accumulate and no epilogue: the rows are stored as they are */
    bool two;   /* columns past 16 */
};

static inline struct mps_avx512_storev mps_avx512_storev_of(int cols, int flags, const struct mps_tile_epi *e)
{
    /* field by field: an initializer zeroed the struct's padding first (rep stos, 384 bytes a tile) */
    struct mps_avx512_storev v;
    bool finish = flags & MPS_TILE_FINISH;
    v.bias = finish ? e->bias : NULL;
    v.res = finish ? e->res : NULL;
    v.ldr = e->ldr;
    v.bias_cols = e->bias_cols;
    v.act = mps_avx512_actc_of(e);
    v.m0 = mps_avx512_mask(cols);
    v.m1 = mps_avx512_mask(cols - 16);
    v.acc = flags & MPS_TILE_ACCUMULATE;
    v.two = cols > 16;
    v.act_any = finish && mps_avx512_act_any(e);
    v.plain = !v.acc && !v.bias && !v.res && !v.act_any;
    return v;
}

/* The lanes in m of p, zeros elsewhere: a plain load where m is every lane. */
static inline __m512 mps_avx512_load(__mmask16 m, const float *p)
{
    return m == 0xffffu ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}

/* One row's epilogue on sixteen columns from c0 (mask m) of c. */
__attribute__((always_inline)) static inline __m512 mps_avx512_epi_row(const float *c, __m512 acc, __mmask16 m,
                                                                        const struct mps_avx512_storev *v, int r,
                                                                        int c0)
{
    if (v->acc)
        acc = _mm512_add_ps(acc, mps_avx512_load(m, c + c0));
    if (v->bias)
        acc = _mm512_add_ps(acc, v->bias_cols ? mps_avx512_load(m, v->bias + c0) : _mm512_set1_ps(v->bias[r]));
    if (v->res)
        acc = _mm512_add_ps(acc, mps_avx512_load(m, v->res + r * v->ldr + c0));
    return v->act_any ? mps_avx512_actc(acc, &v->act) : acc;
}

/* Row r of a GEMM tile: lo its first sixteen columns, hi the next; full: all
   32 columns (a constant, so that every mask test folds away). */
__attribute__((always_inline)) static inline void mps_avx512_store_row(float *c, __m512 lo, __m512 hi,
                                                                        const struct mps_avx512_storev *v, int r,
                                                                        bool full)
{
    __mmask16 m0 = full ? 0xffffu : v->m0, m1 = full ? 0xffffu : v->m1;
    bool two = full || v->two;
    if (!v->plain) {
        lo = mps_avx512_epi_row(c, lo, m0, v, r, 0);
        if (two)
            hi = mps_avx512_epi_row(c, hi, m1, v, r, 16);
    }
    mps_avx512_store(c, m0, lo);
    if (two)
        mps_avx512_store(c + 16, m1, hi);
}

/* What the pooled tile's row stores share (mps_avx512_conv_pooled): the
   activation's constants, the mask of the n outputs a row, the bias, and
   whether the pool may come first (mps_avx512_act_rises). */
struct mps_avx512_poolv {
    const float *bias;
    struct mps_avx512_actc act;
    __mmask16 m;
    bool first;
};

static inline struct mps_avx512_poolv mps_avx512_poolv_of(int n, const struct mps_tile_epi *e)
{
    struct mps_avx512_poolv v;
    v.bias = e->bias;
    v.act = mps_avx512_actc_of(e);
    v.m = mps_avx512_mask(n);
    v.first = mps_avx512_act_rises(e);
    return v;
}

/* Row r of the pooled tile (ukernels.h's pconv): lo and hi, sixteen columns
   of two output rows, through the epilogue, then the maximum down each
   column and across each pair of columns (a NaN kept, in the order the
   MaxPool kernel takes it): the row's outputs in lanes 0 .. 7. Where the
   activation rises, the maximum first and the epilogue on it alone (half
   the adds and activations: mnist_cnn's first layer with its pool, batch 8,
   one thread, 0.0322 -> 0.0295 ms on Zen 4). */
__attribute__((always_inline)) static inline void mps_avx512_pool_row(float *c, __m512 lo, __m512 hi,
                                                                       const struct mps_avx512_poolv *v, int r)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    if (v->first) {
        __m512 down = mps_avx512_nanmax(lo, hi);
        __m512 p = mps_avx512_nanmax(_mm512_permutexvar_ps(even, down), _mm512_permutexvar_ps(odd, down));
        if (v->bias)
            p = _mm512_add_ps(p, _mm512_set1_ps(v->bias[r]));
        mps_avx512_store(c, v->m, mps_avx512_actc(p, &v->act));
        return;
    }
    if (v->bias) {
        lo = _mm512_add_ps(lo, _mm512_set1_ps(v->bias[r]));
        hi = _mm512_add_ps(hi, _mm512_set1_ps(v->bias[r]));
    }
    __m512 down = mps_avx512_nanmax(mps_avx512_actc(lo, &v->act), mps_avx512_actc(hi, &v->act));
    mps_avx512_store(c, v->m, mps_avx512_nanmax(_mm512_permutexvar_ps(even, down), _mm512_permutexvar_ps(odd, down)));
}

/* Row kk of a tile's B panel: packed (the GEMM: nr floats a row, one after
   another), or at an offset of the direct convolution's input (ukernels.h). */
#define MPS_AVX512_PACKED(kk) (b + (kk) * NR)
#define MPS_AVX512_OFFSET(kk) (b + off[kk])
/* The same, and the row's two lines 128 floats on (four tiles ahead along a plane) asked for (conv_pf) */
#define MPS_AVX512_OFFSET_PF(kk)                                                                                       \
    (_mm_prefetch((const char *)(b + off[kk] + 128), _MM_HINT_T0),                                                     \
     _mm_prefetch((const char *)(b + off[kk] + 144), _MM_HINT_T0), b + off[kk])

/* Row r of A at k step kk + j, a pointing at step kk: a[r LDA + j KS]. A
   packed (LDA 1, KS MR: k groups of MR), or its rows read in place (LDA
   lda, KS 1: the GEMM's run-time A, no packing). */
#define MPS_AVX512_A(r, j) a[(r) * a_lda + (j) * a_ks]

/* The pooled tile's rows (its STORE, as ukernel_tile.h's MPS_TILE_STORE). */
#define MPS_AVX512_POOL(R, r)                                                                                          \
    if (R > r)                                                                                                         \
        mps_avx512_pool_row(c + r * ldc, lo##r, hi##r, &pv, r);
#define MPS_AVX512_POOL_BOTH(ROWS) ROWS
#define MPS_AVX512_POOL_PREP const struct mps_avx512_poolv pv = mps_avx512_poolv_of(cols, e);

/* The tile itself (ukernel_tile.h) over the avx512 vector layer: 8 rows of
   two 16-lane vectors. */
#define MPS_V __m512
#define MPS_V_ZERO() _mm512_setzero_ps()
#define MPS_V_LOAD(p) _mm512_loadu_ps(p)
#define MPS_V_BCAST(p) _mm512_set1_ps(*(p))
#define MPS_V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define MPS_V_ADD(a, b) _mm512_add_ps(a, b)
#define MPS_V_COLS 32
#define MPS_V_ROWS 8
#define MPS_V_STOREV struct mps_avx512_storev
#define MPS_V_STOREV_OF mps_avx512_storev_of
#define MPS_V_STORE_ROW mps_avx512_store_row
#define MPS_V_KEEPV struct mps_avx512_keepv
#define MPS_V_KEEPV_OF mps_avx512_keepv_of
#define MPS_V_KEEP_ROW mps_avx512_keep
#include "ukernel_tile.h"

MPS_TILES(mps_avx512_gemm_packed, MPS_AVX512_PACKED, MPS_TILE_STORE, int, 1, MR, 16)
MPS_TILES(mps_avx512_conv, MPS_AVX512_OFFSET, MPS_TILE_KEEP, uint64_t, 1, MR, 16)
MPS_TILES(mps_avx512_conv_pf, MPS_AVX512_OFFSET_PF, MPS_TILE_KEEP, uint64_t, 1, MR, 16)
MPS_TILES(mps_avx512_gemm_rows, MPS_AVX512_PACKED, MPS_TILE_STORE, int, lda, 1, 16)
MPS_TILES(mps_avx512_conv_pooled, MPS_AVX512_OFFSET, MPS_AVX512_POOL, int, 1, MR, lda) /* lda: the pitch */

/* A GEMM tile of 16 or of 8 columns or fewer, 4 rows or more: one
   accumulator a row, of 512 bits (W 16) or of 256 (W 8), the FMAs of every
   lane past cols left out; stored as the full tile's rows, masked. The
   16-column form: Winograd's last block of a few tiles (mnist_cnn's 8 of 32
   at batch 8) ran its products at full width. The 8-column one: Zen 4 runs
   two 256-bit FMAs a cycle where it runs one of 512 bits (an edge of 4
   columns in the 16-column tile: 64 x 68 x 64 at 0.85 of OpenBLAS's kernel,
   100 x 100 x 100 at 0.91, one thread); one k step in flight: without
   AVX-512VL only ymm0-15 take 256-bit operations, and two steps' sixteen
   accumulators spilled (7.1 cycles a step against 4.9). */
#define MPS_AVX512_NDECL(VT, ZERO, r) VT q##r = ZERO();
#define MPS_AVX512_NFMA(SET1, FMA, R, r)                                                                               \
    if (R > r)                                                                                                         \
        q##r = FMA(SET1(MPS_AVX512_A(r, 0)), b0, q##r);
#define MPS_AVX512_NSTORE(WIDEN, R, r)                                                                                 \
    if (R > r) {                                                                                                       \
        __m512 v = WIDEN(q##r);                                                                                        \
        mps_avx512_store_row(c + r * ldc, v, v, &sv, r, false);                                                        \
    }
#define MPS_AVX512_TILE_NARROW(NAME, W, VT, ZERO, LOAD, SET1, FMA, WIDEN, LDA, KS, R)                                  \
    static void NAME##_##R##x##W(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,        \
                                 int cols, int flags, const struct mps_tile_epi *e)                                    \
    {                                                                                                                  \
        (void)lda;                                                                                                     \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_AVX512_NDECL(VT, ZERO, 0)                                                                                  \
        MPS_AVX512_NDECL(VT, ZERO, 1)                                                                                  \
        MPS_AVX512_NDECL(VT, ZERO, 2) MPS_AVX512_NDECL(VT, ZERO, 3) MPS_AVX512_NDECL(VT, ZERO, 4)                      \
            MPS_AVX512_NDECL(VT, ZERO, 5) MPS_AVX512_NDECL(VT, ZERO, 6)                                                \
                MPS_AVX512_NDECL(VT, ZERO, 7) for (int64_t kk = 0; kk < k; kk++, a += a_ks)                            \
        {                                                                                                              \
            VT b0 = LOAD(b + kk * NR);                                                                                 \
            MPS_AVX512_NFMA(SET1, FMA, R, 0)                                                                           \
            MPS_AVX512_NFMA(SET1, FMA, R, 1) MPS_AVX512_NFMA(SET1, FMA, R, 2) MPS_AVX512_NFMA(SET1, FMA, R, 3)         \
                MPS_AVX512_NFMA(SET1, FMA, R, 4) MPS_AVX512_NFMA(SET1, FMA, R, 5) MPS_AVX512_NFMA(SET1, FMA, R, 6)     \
                    MPS_AVX512_NFMA(SET1, FMA, R, 7)                                                                   \
        }                                                                                                              \
        MPS_TILE_STORE_PREP                                                                                            \
        MPS_AVX512_NSTORE(WIDEN, R, 0)                                                                                 \
        MPS_AVX512_NSTORE(WIDEN, R, 1) MPS_AVX512_NSTORE(WIDEN, R, 2) MPS_AVX512_NSTORE(WIDEN, R, 3)                   \
            MPS_AVX512_NSTORE(WIDEN, R, 4) MPS_AVX512_NSTORE(WIDEN, R, 5) MPS_AVX512_NSTORE(WIDEN, R, 6)               \
                MPS_AVX512_NSTORE(WIDEN, R, 7)                                                                         \
    }
#define MPS_AVX512_SAME(v) (v)
#define MPS_AVX512_TILES_NARROW(NAME, W, VT, ZERO, LOAD, SET1, FMA, WIDEN, LDA, KS)                                    \
    MPS_AVX512_TILE_NARROW(NAME, W, VT, ZERO, LOAD, SET1, FMA, WIDEN, LDA, KS, 4)                                      \
    MPS_AVX512_TILE_NARROW(NAME, W, VT, ZERO, LOAD, SET1, FMA, WIDEN, LDA, KS, 5)                                      \
    MPS_AVX512_TILE_NARROW(NAME, W, VT, ZERO, LOAD, SET1, FMA, WIDEN, LDA, KS, 6)                                      \
    MPS_AVX512_TILE_NARROW(NAME, W, VT, ZERO, LOAD, SET1, FMA, WIDEN, LDA, KS, 7)                                      \
    MPS_AVX512_TILE_NARROW(NAME, W, VT, ZERO, LOAD, SET1, FMA, WIDEN, LDA, KS, 8)
#define MPS_AVX512_HALF(NAME, LDA, KS)                                                                                 \
    MPS_AVX512_TILES_NARROW(NAME, 16, __m512, _mm512_setzero_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps,     \
                            MPS_AVX512_SAME, LDA, KS)
#define MPS_AVX512_QUARTER(NAME, LDA, KS)                                                                              \
    MPS_AVX512_TILES_NARROW(NAME, 8, __m256, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps,      \
                            _mm512_zextps256_ps512, LDA, KS)
/* a narrow tile (quarter, three-quarter, half) where WHERE holds, by height; returns after it */
#define MPS_AVX512_NARROW_BY_ROWS(NAME, W, WHERE)                                                                      \
    if ((WHERE) && rows >= 4) {                                                                                        \
        switch (rows) {                                                                                                \
        case 4: NAME##_4x##W(k, a, lda, b, c, ldc, cols, flags, e); return;                                            \
        case 5: NAME##_5x##W(k, a, lda, b, c, ldc, cols, flags, e); return;                                            \
        case 6: NAME##_6x##W(k, a, lda, b, c, ldc, cols, flags, e); return;                                            \
        case 7: NAME##_7x##W(k, a, lda, b, c, ldc, cols, flags, e); return;                                            \
        default: NAME##_8x##W(k, a, lda, b, c, ldc, cols, flags, e); return;                                           \
        }                                                                                                              \
    }

MPS_AVX512_HALF(mps_avx512_gemm_packed, 1, MR)
MPS_AVX512_HALF(mps_avx512_gemm_rows, lda, 1)

/* A GEMM tile of 17 to 24 columns, 4 rows or more: the first sixteen in a
   512-bit vector a row, the rest in a 256-bit one (two a cycle on Zen 4:
   52 x 52 x 52, whose 20-column edge ran two 512-bit FMAs a row, at 0.87 of
   OpenBLAS's kernel). */
#define MPS_AVX512_TDECL3(r) __m512 lo##r = _mm512_setzero_ps(); __m256 hq##r = _mm256_setzero_ps();
#define MPS_AVX512_FMA_3Q(R, r)                                                                                        \
    if (R > r) {                                                                                                       \
        __m512 av = _mm512_set1_ps(MPS_AVX512_A(r, 0));                                                                \
        lo##r = _mm512_fmadd_ps(av, b0, lo##r);                                                                        \
        hq##r = _mm256_fmadd_ps(_mm512_castps512_ps256(av), b1, hq##r);                                                \
    }
#define MPS_AVX512_STORE_3Q(R, r)                                                                                      \
    if (R > r)                                                                                                         \
        mps_avx512_store_row(c + r * ldc, lo##r, _mm512_zextps256_ps512(hq##r), &sv, r, false);
#define MPS_AVX512_TILE_3Q(NAME, LDA, KS, R)                                                                           \
    static void NAME##_##R##x24(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,         \
                                int cols, int flags, const struct mps_tile_epi *e)                                     \
    {                                                                                                                  \
        (void)lda;                                                                                                     \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_AVX512_TDECL3(0)                                                                                           \
        MPS_AVX512_TDECL3(1)                                                                                           \
        MPS_AVX512_TDECL3(2)                                                                                           \
        MPS_AVX512_TDECL3(3)                                                                                           \
        MPS_AVX512_TDECL3(4) MPS_AVX512_TDECL3(5) MPS_AVX512_TDECL3(6)                                                 \
            MPS_AVX512_TDECL3(7) for (int64_t kk = 0; kk < k; kk++, a += a_ks)                                         \
        {                                                                                                              \
            __m512 b0 = _mm512_loadu_ps(b + kk * NR);                                                                  \
            __m256 b1 = _mm256_loadu_ps(b + kk * NR + 16);                                                             \
            MPS_AVX512_FMA_3Q(R, 0)                                                                                    \
            MPS_AVX512_FMA_3Q(R, 1)                                                                                    \
            MPS_AVX512_FMA_3Q(R, 2)                                                                                    \
            MPS_AVX512_FMA_3Q(R, 3)                                                                                    \
            MPS_AVX512_FMA_3Q(R, 4) MPS_AVX512_FMA_3Q(R, 5) MPS_AVX512_FMA_3Q(R, 6) MPS_AVX512_FMA_3Q(R, 7)            \
        }                                                                                                              \
        MPS_TILE_STORE_PREP                                                                                            \
        MPS_AVX512_STORE_3Q(R, 0)                                                                                      \
        MPS_AVX512_STORE_3Q(R, 1)                                                                                      \
        MPS_AVX512_STORE_3Q(R, 2)                                                                                      \
        MPS_AVX512_STORE_3Q(R, 3)                                                                                      \
        MPS_AVX512_STORE_3Q(R, 4) MPS_AVX512_STORE_3Q(R, 5) MPS_AVX512_STORE_3Q(R, 6) MPS_AVX512_STORE_3Q(R, 7)        \
    }
#define MPS_AVX512_TILES_3Q(NAME, LDA, KS)                                                                             \
    MPS_AVX512_TILE_3Q(NAME, LDA, KS, 4)                                                                               \
    MPS_AVX512_TILE_3Q(NAME, LDA, KS, 5)                                                                               \
    MPS_AVX512_TILE_3Q(NAME, LDA, KS, 6)                                                                               \
    MPS_AVX512_TILE_3Q(NAME, LDA, KS, 7) MPS_AVX512_TILE_3Q(NAME, LDA, KS, 8)

MPS_AVX512_QUARTER(mps_avx512_gemm_packed, 1, MR)
MPS_AVX512_QUARTER(mps_avx512_gemm_rows, lda, 1)
MPS_AVX512_TILES_3Q(mps_avx512_gemm_packed, 1, MR)
MPS_AVX512_TILES_3Q(mps_avx512_gemm_rows, lda, 1)

static void mps_avx512_gemm(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                            int flags, const struct mps_tile_epi *e)
{
    const int32_t *off = NULL;
    const int64_t lda = 0;
    MPS_AVX512_NARROW_BY_ROWS(mps_avx512_gemm_packed, 8, cols <= 8)
    MPS_AVX512_NARROW_BY_ROWS(mps_avx512_gemm_packed, 24, cols > 16 && cols <= 24)
    MPS_AVX512_NARROW_BY_ROWS(mps_avx512_gemm_packed, 16, cols <= 16)
    MPS_TILE_BY_ROWS(mps_avx512_gemm_packed)
}

static void mps_avx512_gemm_rows(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                                 int rows, int cols, int flags, const struct mps_tile_epi *e)
{
    const int32_t *off = NULL;
    MPS_AVX512_NARROW_BY_ROWS(mps_avx512_gemm_rows, 8, cols <= 8)
    MPS_AVX512_NARROW_BY_ROWS(mps_avx512_gemm_rows, 24, cols > 16 && cols <= 24)
    MPS_AVX512_NARROW_BY_ROWS(mps_avx512_gemm_rows, 16, cols <= 16)
    MPS_TILE_BY_ROWS(mps_avx512_gemm_rows)
}

/* gemm_dot (ukernels.h): k in blocks of DK, B's columns copied out of their
   panel as rows of DK floats, zeros past k, so that every row of A reads them
   from L1 as vectors. Rows in groups of DR(C) (eight for one or two columns,
   four for three or four: at most sixteen accumulators); a row's sums end in
   lanes 0 .. C - 1 of one vector, stored as a tile's row. */
#define DK 256
#define DR(C) ((C) <= 2 ? 8 : 4)

/* The sums of a0 .. a3 in lanes 0 .. 3: pairs within each 128-bit lane, then across the lanes. */
static inline __m512 mps_avx512_sum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3)
{
    __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
    __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
    __m512 t = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(s01), _mm512_castps_pd(s23))),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(s01), _mm512_castps_pd(s23))));
    t = _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm512_add_ps(t, _mm512_shuffle_f32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
}

/* The sums of rows [0, R) of a over k <= DK steps of bt, in out[r]. */
__attribute__((always_inline)) static inline void mps_avx512_dot_rows(int64_t k, const float *a, int64_t lda,
                                                                       const float *bt, const int R, const int C,
                                                                       __m512 *out)
{
    __m512 acc[8][4];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[r][j] = _mm512_setzero_ps();
    for (int64_t kk = 0; kk < k; kk += 16) {
        __mmask16 m = mps_avx512_mask((int)(k - kk)); /* A's last steps: nothing past its row is read */
        __m512 bv[4];
#pragma GCC unroll 4
        for (int j = 0; j < C; j++)
            bv[j] = _mm512_load_ps(bt + j * DK + kk);
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m512 av = mps_avx512_load(m, a + r * lda + kk);
#pragma GCC unroll 4
            for (int j = 0; j < C; j++)
                acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        out[r] = mps_avx512_sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
}

__attribute__((always_inline)) static inline void mps_avx512_dot_cols(int64_t k, const float *a, int64_t lda,
                                                                       const float *b, float *c, int64_t ldc,
                                                                       int64_t rows, const int C, int flags,
                                                                       const struct mps_tile_epi *e)
{
    float bt[4 * DK] __attribute__((aligned(64)));
    for (int64_t pc = 0; pc < k || pc == 0; pc += DK) {
        int64_t kb = k - pc < DK ? k - pc : DK, kb16 = (kb + 15) / 16 * 16;
        for (int j = 0; j < C; j++)
            for (int64_t t = 0; t < kb16; t++)
                bt[j * DK + t] = t < kb ? b[(pc + t) * NR + j] : 0.0f;
        int f = (pc > 0 ? MPS_TILE_ACCUMULATE : flags & MPS_TILE_ACCUMULATE) |
                (pc + DK >= k ? flags & MPS_TILE_FINISH : 0);
        const struct mps_avx512_storev sv = mps_avx512_storev_of(C, f, e);
        __m512 out[8];
        int64_t r0 = 0;
        for (; r0 + DR(C) <= rows; r0 += DR(C)) {
            mps_avx512_dot_rows(kb, a + r0 * lda + pc, lda, bt, DR(C), C, out);
            for (int r = 0; r < DR(C); r++)
                mps_avx512_store_row(c + (r0 + r) * ldc, out[r], out[r], &sv, (int)(r0 + r), false);
        }
        for (; r0 < rows; r0++) {
            mps_avx512_dot_rows(kb, a + r0 * lda + pc, lda, bt, 1, C, out);
            mps_avx512_store_row(c + r0 * ldc, out[0], out[0], &sv, (int)r0, false);
        }
    }
}

static void mps_avx512_gemm_dot(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                                int64_t rows, int cols, int flags, const struct mps_tile_epi *e)
{
    switch (cols) {
    case 1: mps_avx512_dot_cols(k, a, lda, b, c, ldc, rows, 1, flags, e); break;
    case 2: mps_avx512_dot_cols(k, a, lda, b, c, ldc, rows, 2, flags, e); break;
    case 3: mps_avx512_dot_cols(k, a, lda, b, c, ldc, rows, 3, flags, e); break;
    default: mps_avx512_dot_cols(k, a, lda, b, c, ldc, rows, 4, flags, e); break;
    }
}

static void mps_avx512_pconv(int64_t k, const float *a, const float *b, const int32_t *off, int64_t pitch, float *c,
                             int64_t ldc, int rows, int n, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    const int64_t lda = pitch;
    for (int o = 0; o < n; o += 8, b += 2 * 8, c += 8) {
        int cols = n - o < 8 ? n - o : 8;
        MPS_TILE_BY_ROWS(mps_avx512_conv_pooled)
    }
}

static void mps_avx512_conv(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                            int rows, uint64_t cols, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    const int64_t lda = 0;
    MPS_TILE_BY_ROWS(mps_avx512_conv)
}

static void mps_avx512_conv_pf(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                               int rows, uint64_t cols, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    const int64_t lda = 0;
    MPS_TILE_BY_ROWS(mps_avx512_conv_pf)
}

/* Sixteen channels of up to eight positions (p[j]: position j's channels,
   zero past the r positions) into each channel's run of positions: the
   interleaves leave lane L of u[4 g + i] holding channel 4 L + i at
   positions 4 g .. 4 g + 3; one two-source permute a channel then joins its
   two halves, and a masked store writes its r positions. 16 + cols shuffles
   a block, where the 16 x 16 transpose took 64 for the seven positions
   (the tile alone, k = 144: 210-218 -> 224-231 GFLOP/s). */
static inline void mps_avx512_ttile_put(const __m512 *p, float *c, int64_t ldc, int r, int cols)
{
    __m512 u[8];
    mps_avx512_interleave4(p, u);
    mps_avx512_interleave4(p + 4, u + 4);
    __mmask16 m = mps_avx512_mask(r);
    for (int o = 0; o < cols && o < 16; o++) {
        /* lane L of u[o % 4] then of u[4 + o % 4], L = o / 4 */
        __m512i at = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 0, 0, 0, 0, 0, 0, 0, 0),
                                      _mm512_set1_epi32(4 * (o / 4)));
        _mm512_mask_storeu_ps(c + o * ldc, m, _mm512_permutex2var_ps(u[o % 4], at, u[4 + o % 4]));
    }
}

/* The transposed tile's store: lo[j] and hi[j] hold position j's channels
   0-15 and 16-31 (zero past the r <= 8 positions); each channel's r
   positions are one masked store into its plane (the tile went out through
   the stack a float at a time: 224 scalar copies a tile). */
static inline void mps_avx512_ttile_store(const __m512 *lo, const __m512 *hi, float *c, int64_t ldc, int r, int cols)
{
    mps_avx512_ttile_put(lo, c, ldc, r, cols);
    if (cols > 16)
        mps_avx512_ttile_put(hi, c + 16 * ldc, ldc, r, cols - 16);
}

/* The transposed tile (ukernels.h): MT positions x 32 channels, two
   accumulators a position (its channels' low and high sixteen); each
   position's input broadcast once for both. The store adds the bias, then
   the activation in registers, and transposes the tile into each channel's
   run of positions, eight positions at a time (mps_avx512_ttile_store);
   the activation's constants worked out once a tile (at 14 positions GCC
   stopped inlining mps_avx512_act: 28 calls a tile, 2.6% of a layer).
   Fourteen positions, 28 of the 32 registers: each weight vector loaded
   serves 14 FMAs, not 7 (squeezenet1_1's classifier, 512 -> 1000 on 13x13:
   0.703 -> 0.678 ms on one thread; the model 0.975 of before on one thread,
   0.99 on two; mnist_cnn's 14-wide 16 -> 32 layer 1.01 of before). */
#define MT 14
_Static_assert(MT <= 16, "the store transposes two runs of eight positions at most (mps_avx512_ttile_put)");
#define MPS_AVX512_TDECL(j) __m512 l##j = _mm512_setzero_ps(), h##j = l##j;
#define MPS_AVX512_TFMA(R, j)                                                                                          \
    if (R > j) {                                                                                                       \
        __m512 xv = _mm512_set1_ps(bk[j]);                                                                             \
        l##j = _mm512_fmadd_ps(xv, w0, l##j);                                                                          \
        h##j = _mm512_fmadd_ps(xv, w1, h##j);                                                                          \
    }
#define MPS_AVX512_TPUT(R, j)                                                                                          \
    if (R > j) {                                                                                                       \
        lo[j] = mps_avx512_actc(_mm512_add_ps(l##j, b0), &act);                                                        \
        hi[j] = mps_avx512_actc(_mm512_add_ps(h##j, b1), &act);                                                        \
    }
#define MPS_AVX512_T14(M, R)                                                                                           \
    M(R, 0) M(R, 1) M(R, 2) M(R, 3) M(R, 4) M(R, 5) M(R, 6) M(R, 7) M(R, 8) M(R, 9) M(R, 10) M(R, 11) M(R, 12) M(R, 13)
#define MPS_AVX512_TTILE(R)                                                                                            \
    static void mps_avx512_ttile##R(int64_t k, const float *a, const float *b, const int32_t *off, float *c,           \
                                    int64_t ldc, int cols, const struct mps_tile_epi *e)                               \
    {                                                                                                                  \
        MPS_AVX512_TDECL(0) MPS_AVX512_TDECL(1) MPS_AVX512_TDECL(2) MPS_AVX512_TDECL(3) MPS_AVX512_TDECL(4)            \
        MPS_AVX512_TDECL(5) MPS_AVX512_TDECL(6) MPS_AVX512_TDECL(7) MPS_AVX512_TDECL(8) MPS_AVX512_TDECL(9)            \
        MPS_AVX512_TDECL(10) MPS_AVX512_TDECL(11) MPS_AVX512_TDECL(12) MPS_AVX512_TDECL(13)                            \
        for (int64_t kk = 0; kk < k; kk++, a += NR) {                                                                  \
            __m512 w0 = _mm512_loadu_ps(a), w1 = _mm512_loadu_ps(a + 16);                                              \
            const float *bk = b + off[kk];                                                                             \
            MPS_AVX512_T14(MPS_AVX512_TFMA, R)                                                                         \
        }                                                                                                              \
        __m512 b0 = _mm512_setzero_ps(), b1 = b0;                                                                      \
        if (e->bias) {                                                                                                 \
            b0 = _mm512_maskz_loadu_ps(mps_avx512_mask(cols), e->bias);                                                \
            b1 = _mm512_maskz_loadu_ps(mps_avx512_mask(cols - 16), e->bias + 16);                                      \
        }                                                                                                              \
        const struct mps_avx512_actc act = mps_avx512_actc_of(e);                                                      \
        __m512 lo[16], hi[16];                                                                                         \
        for (int j = R; j < 16; j++)                                                                                   \
            lo[j] = hi[j] = _mm512_setzero_ps();                                                                       \
        MPS_AVX512_T14(MPS_AVX512_TPUT, R)                                                                             \
        mps_avx512_ttile_store(lo, hi, c, ldc, R < 8 ? R : 8, cols);                                                   \
        if (R > 8)                                                                                                     \
            mps_avx512_ttile_store(lo + 8, hi + 8, c + 8, ldc, R - 8, cols);                                           \
    }
MPS_AVX512_TTILE(1)
MPS_AVX512_TTILE(2)
MPS_AVX512_TTILE(3)
MPS_AVX512_TTILE(4)
MPS_AVX512_TTILE(5)
MPS_AVX512_TTILE(6)
MPS_AVX512_TTILE(7)
MPS_AVX512_TTILE(8)
MPS_AVX512_TTILE(9)
MPS_AVX512_TTILE(10)
MPS_AVX512_TTILE(11)
MPS_AVX512_TTILE(12)
MPS_AVX512_TTILE(13)
MPS_AVX512_TTILE(14)

static void mps_avx512_convt(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                             int rows, int cols, const struct mps_tile_epi *e)
{
    static void (*const by_rows[MT])(int64_t, const float *, const float *, const int32_t *, float *, int64_t, int,
                                     const struct mps_tile_epi *) = {
        mps_avx512_ttile1, mps_avx512_ttile2,  mps_avx512_ttile3,  mps_avx512_ttile4,  mps_avx512_ttile5,
        mps_avx512_ttile6, mps_avx512_ttile7,  mps_avx512_ttile8,  mps_avx512_ttile9,  mps_avx512_ttile10,
        mps_avx512_ttile11, mps_avx512_ttile12, mps_avx512_ttile13, mps_avx512_ttile14};
    by_rows[(rows < MT ? rows : MT) - 1](k, a, b, off, c, ldc, cols, e);
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
    .gemm_dot = mps_avx512_gemm_dot,
    .dw3 = mps_avx512_dw3,
    .dwk = mps_dwk,
    .dwb = mps_avx512_dwb,
    .conv = mps_avx512_conv,
    .conv_pf = mps_avx512_conv_pf,
    .conv_res = true,
    .convt = mps_avx512_convt,
    .maxpool = mps_avx512_maxpool,
    .pconv = mps_avx512_pconv,
    .wino_in = mps_avx512_wino_in,
    .wino_out = mps_avx512_wino_out,
    .wino_pool = mps_avx512_wino_pool,
    .sigmoid = mps_act_sigmoid,
    .tanh = mps_act_tanh,
    .q = {&mps_uqgemm_avx512, &mps_uqgemm_avx2}, /* VNNI where the CPU has it (Zen 4 on, Ice Lake on) */
};
