/* ukernel_avx2.c: the avx2 family (AVX2 and FMA): 6 x 16 tiles, twelve
   256-bit accumulators (two fused multiply-adds a cycle, four cycles each,
   need eight in flight). Built with -mavx2 -mfma; called only where cpuid
   says the CPU runs it (isa.c). */
#include <stddef.h>

#include "ukernel_act.h"
#include "ukernel_avx2.h"
#include "ukernel_dw.h"
#include "ukernel_x86.h"

#define MR 6
#define NR 16
#define KC 256

/* What a GEMM tile's row stores share, worked out once a tile (as
   ukernel_avx512.c's storev): in registers, since loaded per row from e
   and flags (a store might have changed them) with the masks from a table
   they cost ~92 cycles a tile, a fifth of a k = 64 tile's time. */
struct mps_avx2_storev {
    const float *bias, *res; /* NULL where the tile does not finish */
    int64_t ldr;
    struct mps_avx2_actc act;
    __m256i m0, m1;
    int n0, n1;     /* the lanes of m0 and m1 */
    __m256i tail;   /* lane i: float n1 + i of the row's sixteen (mps_avx2_store_row) */
    __m256 tail_lo; /* where that float is lo's */
    bool acc, bias_cols, act_any;
    bool plain;  /* no accumulate and no epilogue: the rows are stored as they are */
    bool whole0; /* the first eight columns all there */
    bool two;    /* columns past 8 */
};

static inline struct mps_avx2_storev mps_avx2_storev_of(int cols, int flags, const struct mps_tile_epi *e)
{
    struct mps_avx2_storev v; /* field by field: an initializer zeroed the padding first */
    bool finish = flags & MPS_TILE_FINISH;
    v.bias = finish ? e->bias : NULL;
    v.res = finish ? e->res : NULL;
    v.ldr = e->ldr;
    v.bias_cols = e->bias_cols;
    v.act = mps_avx2_actc_of(e);
    v.m0 = mps_avx2_mask(cols);
    v.m1 = mps_avx2_mask(cols - 8);
    v.n0 = cols < 8 ? cols : 8;
    v.n1 = cols > 16 ? 8 : cols > 8 ? cols - 8 : 0;
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    v.tail = _mm256_add_epi32(lane, _mm256_set1_epi32(v.n1));
    v.tail_lo = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8 - v.n1), lane));
    v.acc = flags & MPS_TILE_ACCUMULATE;
    v.act_any = finish && mps_avx2_act_any(e);
    v.plain = !v.acc && !v.bias && !v.res && !v.act_any;
    v.whole0 = cols >= 8;
    v.two = cols > 8;
    return v;
}

/* One row's epilogue on eight columns from c0 (mask m) of c. */
__attribute__((always_inline)) static inline __m256 mps_avx2_epi_row(const float *c, __m256 acc, __m256i m,
                                                                      bool whole, const struct mps_avx2_storev *v,
                                                                      int r, int c0)
{
    if (v->acc)
        acc = _mm256_add_ps(acc, mps_avx2_get(c + c0, m, whole));
    if (v->bias)
        acc = _mm256_add_ps(acc, v->bias_cols ? mps_avx2_get(v->bias + c0, m, whole) : _mm256_broadcast_ss(v->bias + r));
    if (v->res)
        acc = _mm256_add_ps(acc, mps_avx2_get(v->res + r * v->ldr + c0, m, whole));
    return v->act_any ? mps_avx2_actc(acc, &v->act) : acc;
}

/* Row r of a GEMM tile: lo its first eight columns, hi the next; full: all
   16 columns (a constant, so that every mask test folds away). */
__attribute__((always_inline)) static inline void mps_avx2_store_row(float *c, __m256 lo, __m256 hi,
                                                                      const struct mps_avx2_storev *v, int r, bool full)
{
    bool whole0 = full || v->whole0, two = full || v->two;
    if (!v->plain) {
        lo = mps_avx2_epi_row(c, lo, v->m0, whole0, v, r, 0);
        if (two)
            hi = mps_avx2_epi_row(c, hi, v->m1, full, v, r, 8);
    }
    /* No masked store (vmaskmovps, slow on AMD's cores: a 6 x 16 tile at k = 32 took 74 ns with 1 to 15 of its
       columns, 55 with all 16; Zen 5): 9 to 15 columns store their last eight floats as one vector that ends at
       the row's end, taken from lo and hi in registers (62 ns); 8 or fewer through put_n (43). */
    if (!whole0) {
        mps_avx2_put_n(c, v->n0, lo);
        return;
    }
    _mm256_storeu_ps(c, lo);
    if (full)
        _mm256_storeu_ps(c + 8, hi);
    else if (two)
        _mm256_storeu_ps(c + v->n1, _mm256_blendv_ps(_mm256_permutevar8x32_ps(hi, v->tail),
                                                     _mm256_permutevar8x32_ps(lo, v->tail), v->tail_lo));
}

/* What the direct convolution's row stores share, once a tile: the bias a
   row and the activation (the family adds no residual: conv_res is false). */
struct mps_avx2_keepv {
    const float *bias;
    struct mps_avx2_actc act;
    uint64_t keep;
    bool act_any, all;
};

static inline struct mps_avx2_keepv mps_avx2_keepv_of(uint64_t keep, const struct mps_tile_epi *e)
{
    struct mps_avx2_keepv v;
    v.bias = e->bias;
    v.act = mps_avx2_actc_of(e);
    v.keep = keep;
    v.act_any = mps_avx2_act_any(e);
    v.all = keep == 0xffffu;
    return v;
}

/* The conv tile's store of a row whose keep drops columns (ukernels.h): the
   row's 16 floats, lo and hi, run by run to c, each run's first float
   moved to lane 0 in registers (a permute of each half and a blend), then
   stored as 8 lanes and put_n's rest. GCC made mps_tile_keep_copy's loop
   an inline memcpy of rep movsq, whose start-up on AMD's cores cost a
   tenth of the conv tile's time on planes of 111 columns (a dropped column
   in one tile of 7); from the stack, loads across the two halves' stores
   waited on them. */
__attribute__((noinline)) static void mps_avx2_keep_copy(float *c, __m256 lo, __m256 hi, uint64_t keep)
{
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    while (keep) {
        int j = __builtin_ctzll(keep), len = __builtin_ctzll(~(keep >> j));
        __m256i idx = _mm256_and_si256(_mm256_add_epi32(lane, _mm256_set1_epi32(j)), _mm256_set1_epi32(7));
        __m256 pl = _mm256_permutevar8x32_ps(lo, idx), ph = _mm256_permutevar8x32_ps(hi, idx);
        /* lane i: float j + i of the row (lo's where j + i < 8), and (hi's) float j + 8 + i */
        __m256 first =
            _mm256_blendv_ps(ph, pl, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8 - j), lane)));
        if (len >= 8) {
            _mm256_storeu_ps(c, first);
            if (len > 8)
                mps_avx2_put_n(c + 8, len - 8, ph);
        } else {
            mps_avx2_put_n(c, len, first);
        }
        c += len;
        keep &= ~0ull << (j + len);
    }
}

/* The direct convolution's store of one row (ukernels.h): the epilogue (bias
   a row, activation), then the kept columns packed together from c. */
__attribute__((always_inline)) static inline void mps_avx2_keep(float *c, __m256 lo, __m256 hi,
                                                                const struct mps_avx2_keepv *v, int r)
{
    if (v->bias) {
        __m256 b = _mm256_broadcast_ss(v->bias + r);
        lo = _mm256_add_ps(lo, b);
        hi = _mm256_add_ps(hi, b);
    }
    if (v->act_any) {
        lo = mps_avx2_actc(lo, &v->act);
        hi = mps_avx2_actc(hi, &v->act);
    }
    if (v->all) {
        _mm256_storeu_ps(c, lo);
        _mm256_storeu_ps(c + 8, hi);
    } else {
        mps_avx2_keep_copy(c, lo, hi, v->keep);
    }
}

/* What the pooled tile's row stores share (mps_avx2_conv_pooled): the bias,
   the activation's constants, the n <= 4 outputs a row, and
   whether the pool may come first (the activation rises: the maximum's
   epilogue is the epilogue's maximum). */
struct mps_avx2_poolv {
    const float *bias;
    struct mps_avx2_actc act;
    int n;
    bool whole, first;
};

static inline struct mps_avx2_poolv mps_avx2_poolv_of(int n, const struct mps_tile_epi *e)
{
    struct mps_avx2_poolv v;
    v.bias = e->bias;
    v.act = mps_avx2_actc_of(e);
    v.n = n;
    v.whole = n >= 4;
    v.first = mps_avx2_act_rises(e);
    return v;
}

/* Row r of the pooled tile (ukernels.h's pconv, the family's nr = 16: eight
   columns of two output rows, four outputs): lo and hi through the epilogue
   (or, where the activation rises, their maximum alone), the maximum down
   each column, then across each pair (a NaN kept, in the order avx512's
   pooled rows and the MaxPool kernel take it). */
__attribute__((always_inline)) static inline void mps_avx2_pool_row(float *c, __m256 lo, __m256 hi,
                                                                    const struct mps_avx2_poolv *v, int r)
{
    if (!v->first) {
        if (v->bias) {
            __m256 b = _mm256_broadcast_ss(v->bias + r);
            lo = _mm256_add_ps(lo, b), hi = _mm256_add_ps(hi, b);
        }
        lo = mps_avx2_actc(lo, &v->act), hi = mps_avx2_actc(hi, &v->act);
    }
    __m256 down = mps_avx2_nanmax(lo, hi); /* [d0 .. d7]: then [d0 d2 d0 d2 | d4 d6 ..] against the odd ones */
    __m256 p = mps_avx2_nanmax(_mm256_shuffle_ps(down, down, 0x88), _mm256_shuffle_ps(down, down, 0xdd));
    __m128 out = _mm256_castps256_ps128(_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(p), 0x08)));
    if (v->first) {
        if (v->bias)
            out = _mm_add_ps(out, _mm_broadcast_ss(v->bias + r));
        out = _mm256_castps256_ps128(mps_avx2_actc(_mm256_castps128_ps256(out), &v->act));
    }
    if (v->whole)
        _mm_storeu_ps(c, out);
    else
        mps_avx2_put_n(c, v->n, _mm256_castps128_ps256(out));
}

/* The pooled tile's rows (its STORE, as ukernel_tile.h's MPS_TILE_STORE). */
#define MPS_AVX2_POOL(R, r)                                                                                            \
    if (R > r)                                                                                                         \
        mps_avx2_pool_row(c + r * ldc, lo##r, hi##r, &pv, r);
#define MPS_AVX2_POOL_BOTH(ROWS) ROWS
#define MPS_AVX2_POOL_PREP const struct mps_avx2_poolv pv = mps_avx2_poolv_of(cols, e);

/* Row kk of a tile's B panel: packed, or at an offset of the direct
   convolution's input (ukernels.h). */
#define MPS_AVX2_PACKED(kk) (b + (kk) * NR)
#define MPS_AVX2_OFFSET(kk) (b + off[kk])
/* The same, and the row 64 floats on (four tiles ahead along a plane) asked
   for (conv_pf, conv_direct.c's mps_direct_streams) */
#define MPS_AVX2_OFFSET_PF(kk) (_mm_prefetch((const char *)(b + off[kk] + 64), _MM_HINT_T0), b + off[kk])

/* The tile itself (ukernel_tile.h) over the avx2 vector layer: 6 rows of
   two 8-lane vectors. */
#define MPS_V __m256
#define MPS_V_ZERO() _mm256_setzero_ps()
#define MPS_V_LOAD(p) _mm256_loadu_ps(p)
#define MPS_V_BCAST(p) _mm256_broadcast_ss(p)
#define MPS_V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define MPS_V_ADD(a, b) _mm256_add_ps(a, b)
#define MPS_V_COLS 16
#define MPS_V_ROWS 6
#define MPS_V_STOREV struct mps_avx2_storev
#define MPS_V_STOREV_OF mps_avx2_storev_of
#define MPS_V_STORE_ROW mps_avx2_store_row
#define MPS_V_KEEPV struct mps_avx2_keepv
#define MPS_V_KEEPV_OF mps_avx2_keepv_of
#define MPS_V_KEEP_ROW mps_avx2_keep
#include "ukernel_tile.h"

MPS_TILES(mps_avx2_gemm_packed, MPS_AVX2_PACKED, MPS_TILE_STORE, int, 1, MR, 8)
MPS_TILES(mps_avx2_conv, MPS_AVX2_OFFSET, MPS_TILE_KEEP, uint64_t, 1, MR, 8)
MPS_TILES(mps_avx2_conv_pf, MPS_AVX2_OFFSET_PF, MPS_TILE_KEEP, uint64_t, 1, MR, 8)
MPS_TILES(mps_avx2_gemm_rows, MPS_AVX2_PACKED, MPS_TILE_STORE, int, lda, 1, 8)
MPS_TILES(mps_avx2_conv_pooled, MPS_AVX2_OFFSET, MPS_AVX2_POOL, int, 1, MR, lda) /* lda: the pitch */

/* A GEMM tile of 8 columns or fewer, 4 rows or more (avx512's quarter
   tile): one vector a row, two k steps in flight so that 8 to 12
   accumulators hide the fused multiply-add's latency, folded and stored as
   the full tile's first half. The full tile ran such an edge at its own
   cost: Winograd's last block of 17 tiles (fashion_cnn and mnist_cnn at
   batch 1: 49 tiles, blocks of 32) as 16 + 16 columns. */
#define MPS_AVX2_NDECL(r) __m256 q##r = _mm256_setzero_ps(), x##r = q##r;
#define MPS_AVX2_NFMA2(R, r)                                                                                           \
    if (R > r) {                                                                                                       \
        q##r = _mm256_fmadd_ps(_mm256_broadcast_ss(MPS_TILE_A(r, 0)), b0, q##r);                                       \
        x##r = _mm256_fmadd_ps(_mm256_broadcast_ss(MPS_TILE_A(r, 1)), b1, x##r);                                       \
    }
#define MPS_AVX2_NFMA(R, r)                                                                                            \
    if (R > r)                                                                                                         \
        q##r = _mm256_fmadd_ps(_mm256_broadcast_ss(MPS_TILE_A(r, 0)), b0, q##r);
#define MPS_AVX2_NSTORE(R, r)                                                                                          \
    if (R > r) {                                                                                                       \
        __m256 v = _mm256_add_ps(q##r, x##r);                                                                          \
        mps_avx2_store_row(c + r * ldc, v, v, &sv, r, false);                                                          \
    }
#define MPS_AVX2_ROWS6(M, R) M(R, 0) M(R, 1) M(R, 2) M(R, 3) M(R, 4) M(R, 5)
#define MPS_AVX2_TILE_NARROW(NAME, LDA, KS, R)                                                                         \
    static void NAME##_##R##x8(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,          \
                               int cols, int flags, const struct mps_tile_epi *e)                                      \
    {                                                                                                                  \
        (void)lda;                                                                                                     \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_AVX2_NDECL(0)                                                                                              \
        MPS_AVX2_NDECL(1) MPS_AVX2_NDECL(2) MPS_AVX2_NDECL(3) MPS_AVX2_NDECL(4) MPS_AVX2_NDECL(5) int64_t kk = 0;      \
        for (; kk + 2 <= k; kk += 2, a += 2 * a_ks) {                                                                  \
            __m256 b0 = _mm256_loadu_ps(b + kk * NR), b1 = _mm256_loadu_ps(b + (kk + 1) * NR);                         \
            MPS_AVX2_ROWS6(MPS_AVX2_NFMA2, R)                                                                          \
        }                                                                                                              \
        if (kk < k) {                                                                                                  \
            __m256 b0 = _mm256_loadu_ps(b + kk * NR);                                                                  \
            MPS_AVX2_ROWS6(MPS_AVX2_NFMA, R)                                                                           \
        }                                                                                                              \
        const struct mps_avx2_storev sv = mps_avx2_storev_of(cols, flags, e);                                          \
        MPS_AVX2_ROWS6(MPS_AVX2_NSTORE, R)                                                                             \
    }
#define MPS_AVX2_NARROW(NAME, LDA, KS)                                                                                 \
    MPS_AVX2_TILE_NARROW(NAME, LDA, KS, 4) MPS_AVX2_TILE_NARROW(NAME, LDA, KS, 5) MPS_AVX2_TILE_NARROW(NAME, LDA, KS, 6)
/* the narrow tile where cols <= 8 and rows >= 4, by height; returns after it */
#define MPS_AVX2_NARROW_BY_ROWS(NAME)                                                                                  \
    if (cols <= 8 && rows >= 4) {                                                                                      \
        switch (rows) {                                                                                                \
        case 4: NAME##_4x8(k, a, lda, b, c, ldc, cols, flags, e); return;                                              \
        case 5: NAME##_5x8(k, a, lda, b, c, ldc, cols, flags, e); return;                                              \
        default: NAME##_6x8(k, a, lda, b, c, ldc, cols, flags, e); return;                                             \
        }                                                                                                              \
    }

MPS_AVX2_NARROW(mps_avx2_gemm_packed, 1, MR)
MPS_AVX2_NARROW(mps_avx2_gemm_rows, lda, 1)

/* A GEMM tile's one column from packed A, stored plainly (no epilogue, no accumulate: Winograd's products):
   a k step of A (its MR rows, loaded masked) the vector, B's float the broadcast, four k steps in flight,
   the rows' sums stored a float each. Winograd's one tile past 48 (49 at batch 1) had taken the narrow
   tile at 0.9 of a full tile's time. */
static void mps_avx2_gemm_col(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows)
{
    const __m256i m = mps_avx2_mask(MR);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t kk = 0;
    for (; kk + 4 <= k; kk += 4) {
        s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + kk * MR, m), _mm256_broadcast_ss(b + kk * NR), s0);
        s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + (kk + 1) * MR, m), _mm256_broadcast_ss(b + (kk + 1) * NR), s1);
        s2 = _mm256_fmadd_ps(_mm256_maskload_ps(a + (kk + 2) * MR, m), _mm256_broadcast_ss(b + (kk + 2) * NR), s2);
        s3 = _mm256_fmadd_ps(_mm256_maskload_ps(a + (kk + 3) * MR, m), _mm256_broadcast_ss(b + (kk + 3) * NR), s3);
    }
    for (; kk < k; kk++)
        s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + kk * MR, m), _mm256_broadcast_ss(b + kk * NR), s0);
    float out[8];
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (int r = 0; r < rows; r++)
        c[r * ldc] = out[r];
}

static void mps_avx2_gemm(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                          int flags, const struct mps_tile_epi *e)
{
    const int32_t *off = NULL;
    const int64_t lda = 0;
    if (cols == 1 && mps_avx2_storev_of(cols, flags, e).plain) {
        mps_avx2_gemm_col(k, a, b, c, ldc, rows);
        return;
    }
    MPS_AVX2_NARROW_BY_ROWS(mps_avx2_gemm_packed)
    MPS_TILE_BY_ROWS(mps_avx2_gemm_packed)
}

static void mps_avx2_gemm_rows(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc, int rows,
                               int cols, int flags, const struct mps_tile_epi *e)
{
    const int32_t *off = NULL;
    MPS_AVX2_NARROW_BY_ROWS(mps_avx2_gemm_rows)
    MPS_TILE_BY_ROWS(mps_avx2_gemm_rows)
}

static void mps_avx2_pconv(int64_t k, const float *a, const float *b, const int32_t *off, int64_t pitch, float *c,
                           int64_t ldc, int rows, int n, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    const int64_t lda = pitch;
    for (int o = 0; o < n; o += 4, b += 2 * 4, c += 4) {
        int cols = n - o < 4 ? n - o : 4;
        MPS_TILE_BY_ROWS(mps_avx2_conv_pooled)
    }
}

static void mps_avx2_conv(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                          int rows, uint64_t cols, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    const int64_t lda = 0;
    MPS_TILE_BY_ROWS(mps_avx2_conv)
}

static void mps_avx2_conv_pf(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                             int rows, uint64_t cols, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    const int64_t lda = 0;
    MPS_TILE_BY_ROWS(mps_avx2_conv_pf)
}

/* gemm_dot (ukernels.h), as avx512's: k in blocks of DK, B's columns copied
   out of their panel as rows of DK floats (zeros past k), so that every row
   of A reads them from L1 as vectors; rows in groups of DR(C), at most
   sixteen registers with the broadcast-free A vector (8 rows for one
   column, 6 for two, 4 for three, 3 for four); a row's sums end in lanes
   0 .. C - 1, stored as a tile's row. */
#define DK 256
#define DR(C) ((C) == 1 ? 8 : (C) == 2 ? 6 : (C) == 3 ? 4 : 3)

/* The sums of a0 .. a3's eight lanes in lanes 0 .. 3. */
static inline __m256 mps_avx2_sum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3)
{
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3)); /* each half: a0 .. a3's half sums */
    return _mm256_castps128_ps256(_mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}

/* The sums of rows [0, R) of a over k <= DK steps of bt, in out[r]. */
__attribute__((always_inline)) static inline void mps_avx2_dot_rows(int64_t k, const float *a, int64_t lda,
                                                                     const float *bt, const int R, const int C,
                                                                     __m256 *out)
{
    __m256 acc[8][4];
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            acc[r][j] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < k; kk += 8) {
        bool whole = k - kk >= 8; /* A's last steps: nothing past its row is read */
        __m256i m = mps_avx2_mask((int)(k - kk));
#pragma GCC unroll 8
        for (int r = 0; r < R; r++) {
            __m256 av = mps_avx2_get(a + r * lda + kk, m, whole);
#pragma GCC unroll 4
            for (int j = 0; j < C; j++)
                acc[r][j] = _mm256_fmadd_ps(av, _mm256_load_ps(bt + j * DK + kk), acc[r][j]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; r++)
        out[r] = mps_avx2_sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
}

__attribute__((always_inline)) static inline void mps_avx2_dot_cols(int64_t k, const float *a, int64_t lda,
                                                                     const float *b, float *c, int64_t ldc,
                                                                     int64_t rows, const int C, int flags,
                                                                     const struct mps_tile_epi *e)
{
    float bt[4 * DK] __attribute__((aligned(32)));
    for (int64_t pc = 0; pc < k || pc == 0; pc += DK) {
        int64_t kb = k - pc < DK ? k - pc : DK, kb8 = (kb + 7) / 8 * 8;
        for (int j = 0; j < C; j++)
            for (int64_t t = 0; t < kb8; t++)
                bt[j * DK + t] = t < kb ? b[(pc + t) * NR + j] : 0.0f;
        int f = (pc > 0 ? MPS_TILE_ACCUMULATE : flags & MPS_TILE_ACCUMULATE) |
                (pc + DK >= k ? flags & MPS_TILE_FINISH : 0);
        const struct mps_avx2_storev sv = mps_avx2_storev_of(C, f, e);
        __m256 out[8];
        int64_t r0 = 0;
        for (; r0 + DR(C) <= rows; r0 += DR(C)) {
            mps_avx2_dot_rows(kb, a + r0 * lda + pc, lda, bt, DR(C), C, out);
            for (int r = 0; r < DR(C); r++)
                mps_avx2_store_row(c + (r0 + r) * ldc, out[r], out[r], &sv, (int)(r0 + r), false);
        }
        for (; r0 < rows; r0++) {
            mps_avx2_dot_rows(kb, a + r0 * lda + pc, lda, bt, 1, C, out);
            mps_avx2_store_row(c + r0 * ldc, out[0], out[0], &sv, (int)r0, false);
        }
    }
}

static void mps_avx2_gemm_dot(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc,
                              int64_t rows, int cols, int flags, const struct mps_tile_epi *e)
{
    switch (cols) {
    case 1: mps_avx2_dot_cols(k, a, lda, b, c, ldc, rows, 1, flags, e); break;
    case 2: mps_avx2_dot_cols(k, a, lda, b, c, ldc, rows, 2, flags, e); break;
    case 3: mps_avx2_dot_cols(k, a, lda, b, c, ldc, rows, 3, flags, e); break;
    default: mps_avx2_dot_cols(k, a, lda, b, c, ldc, rows, 4, flags, e); break;
    }
}


/* The transposed tile (ukernels.h's convt): MT positions x 16 channels, two
   accumulators a position (channels 0-7 and 8-15), each position's input
   broadcast once for both: twelve of the sixteen registers that VEX code
   has, so each weight vector loaded serves six FMAs. Without it a 7x7
   plane's 49 positions filled 64 lanes of the conv tile, whose B panel of
   positions is read across the input planes (mobilenet_v2's 320 -> 1280 on
   7x7 took twice the avx512 family's time on the same FMA peak). The store
   adds the bias and the activation in registers, then writes the tile
   transposed: each channel's positions one run. */
#define MT 6
#define MPS_AVX2_TDECL(R, j) __m256 l##j = _mm256_setzero_ps(), h##j = l##j;
#define MPS_AVX2_TFMA(R, j)                                                                                            \
    if (R > j) {                                                                                                       \
        __m256 xv = _mm256_broadcast_ss(bk + j);                                                                       \
        l##j = _mm256_fmadd_ps(xv, w0, l##j);                                                                          \
        h##j = _mm256_fmadd_ps(xv, w1, h##j);                                                                          \
    }
#define MPS_AVX2_TPUT(R, j)                                                                                            \
    if (R > j) {                                                                                                       \
        _mm256_storeu_ps(t + j * NR, mps_avx2_actc(_mm256_add_ps(l##j, b0), &act));                                    \
        _mm256_storeu_ps(t + j * NR + 8, mps_avx2_actc(_mm256_add_ps(h##j, b1), &act));                                \
    }
#define MPS_AVX2_T6(M, R) M(R, 0) M(R, 1) M(R, 2) M(R, 3) M(R, 4) M(R, 5)
#define MPS_AVX2_TTILE(R)                                                                                              \
    static void mps_avx2_ttile##R(int64_t k, const float *a, const float *b, const int32_t *off, float *c,             \
                                  int64_t ldc, int cols, const struct mps_tile_epi *e)                                 \
    {                                                                                                                  \
        MPS_AVX2_T6(MPS_AVX2_TDECL, R)                                                                                 \
        for (int64_t kk = 0; kk < k; kk++, a += NR) {                                                                  \
            __m256 w0 = _mm256_loadu_ps(a), w1 = _mm256_loadu_ps(a + 8);                                               \
            const float *bk = b + off[kk];                                                                             \
            MPS_AVX2_T6(MPS_AVX2_TFMA, R)                                                                              \
        }                                                                                                              \
        __m256 b0 = _mm256_setzero_ps(), b1 = b0;                                                                      \
        if (e->bias) {                                                                                                 \
            b0 = _mm256_maskload_ps(e->bias, mps_avx2_mask(cols));                                                     \
            b1 = _mm256_maskload_ps(e->bias + 8, mps_avx2_mask(cols - 8));                                             \
        }                                                                                                              \
        const struct mps_avx2_actc act = mps_avx2_actc_of(e);                                                          \
        float t[R * NR];                                                                                               \
        MPS_AVX2_T6(MPS_AVX2_TPUT, R)                                                                                  \
        for (int o = 0; o < cols; o++)                                                                                 \
            for (int j = 0; j < R; j++)                                                                                \
                c[o * ldc + j] = t[j * NR + o];                                                                        \
    }
MPS_AVX2_TTILE(1)
MPS_AVX2_TTILE(2)
MPS_AVX2_TTILE(3)
MPS_AVX2_TTILE(4)
MPS_AVX2_TTILE(5)
MPS_AVX2_TTILE(6)

static void mps_avx2_convt(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                           int rows, int cols, const struct mps_tile_epi *e)
{
    static void (*const by_rows[MT])(int64_t, const float *, const float *, const int32_t *, float *, int64_t, int,
                                     const struct mps_tile_epi *) = {
        mps_avx2_ttile1, mps_avx2_ttile2, mps_avx2_ttile3, mps_avx2_ttile4, mps_avx2_ttile5, mps_avx2_ttile6};
    by_rows[(rows < MT ? rows : MT) - 1](k, a, b, off, c, ldc, cols, e);
}

/* Columns [from, from + 8) of a row of w floats, zeros outside the row
   (masked lanes never fault); before the row's start, its first floats are
   loaded and moved up to the lanes they belong to. */
static inline __m256 mps_avx2_cols(const float *row, int64_t w, int64_t from)
{
    int64_t a = from < 0 ? (-from < 8 ? -from : 8) : 0, b = w - from < 8 ? w - from : 8;
    if (b <= a)
        return _mm256_setzero_ps();
    if (from >= 0)
        return b == 8 ? _mm256_loadu_ps(row + from) : _mm256_maskload_ps(row + from, mps_avx2_mask((int)b));
    __m256 v = _mm256_maskload_ps(row, mps_avx2_mask((int)(b - a)));
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    v = _mm256_permutevar8x32_ps(v, _mm256_sub_epi32(lanes, _mm256_set1_epi32((int)a)));
    return _mm256_andnot_ps(_mm256_castsi256_ps(mps_avx2_mask((int)a)), v); /* lanes below a: zeros */
}

/* acc plus one input row's three taps for eight outputs from column c (see ukernel_avx512_dw.c). */
static inline __m256 mps_avx2_dw3_row(__m256 acc, const float *row, int64_t w, int64_t c, int s, bool inside,
                                      __m256 k0, __m256 k1, __m256 k2)
{
    __m256 x0, x1, x2, unused;
    if (s == 1) {
        x0 = inside ? _mm256_loadu_ps(row + c) : mps_avx2_cols(row, w, c);
        x1 = inside ? _mm256_loadu_ps(row + c + 1) : mps_avx2_cols(row, w, c + 1);
        x2 = inside ? _mm256_loadu_ps(row + c + 2) : mps_avx2_cols(row, w, c + 2);
    } else { /* x0, x1: columns c .. c + 15 apart; x2: the evens of c + 2 .. c + 16 */
        mps_avx2_deinterleave(inside ? _mm256_loadu_ps(row + c) : mps_avx2_cols(row, w, c),
                              inside ? _mm256_loadu_ps(row + c + 8) : mps_avx2_cols(row, w, c + 8), &x0, &x1);
        mps_avx2_deinterleave(inside ? _mm256_loadu_ps(row + c + 2) : mps_avx2_cols(row, w, c + 2),
                              inside ? _mm256_maskload_ps(row + c + 10, mps_avx2_mask(7))
                                     : mps_avx2_cols(row, w, c + 10),
                              &x2, &unused);
    }
    acc = _mm256_fmadd_ps(k0, x0, acc);
    acc = _mm256_fmadd_ps(k1, x1, acc);
    return _mm256_fmadd_ps(k2, x2, acc);
}

/* Floats of mps_avx2_dw3's band: zero-padded input rows on the stack (16 KB). */
enum { MPS_AVX2_DW3_BAND = 4096 };

/* Lays the padded input rows of band rows [oh0, oh0 + rows) of a stride-1
   plane into buf, pw floats a row, zeros outside the input, then 16 zeros
   that the last steps read into lanes they drop (ukernel_avx512_dw.c's). */
static void mps_avx2_dw3_band(const struct mps_dw3_geom *g, const float *x, int64_t oh0, int64_t rows, int64_t pw,
                              float *buf)
{
    for (int64_t r = 0; r < rows + 2; r++, buf += pw) {
        int64_t ih = oh0 + r - g->pt;
        bool inside = ih >= 0 && ih < g->h;
        for (int64_t j = 0; j < pw; j += 8)
            mps_avx2_put(buf + j, mps_avx2_mask((int)(pw - j)), pw - j >= 8,
                         inside ? mps_avx2_cols(x + ih * g->w, g->w, j - g->pl) : _mm256_setzero_ps());
    }
    _mm256_storeu_ps(buf, _mm256_setzero_ps());
    _mm256_storeu_ps(buf + 8, _mm256_setzero_ps());
}

/* Stride-1 planes of 8 outputs a row or more, as ukernel_avx512_dw.c's
   pairs: bands of padded input rows, two output rows a step sharing two of
   their four input rows, two chains of sums an output. Row by row (every
   step's nine sums one chain, both ends of a row through masked loads)
   mobilenet_v2's 144 x 56x56 layer took 0.41 ms on one thread. */
static void mps_avx2_dw3_pairs(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                               const struct mps_avx2_actc *act, int64_t pw, int64_t band)
{
    float buf[MPS_AVX2_DW3_BAND];
    __m256 kv[9];
    for (int t = 0; t < 9; t++)
        kv[t] = _mm256_set1_ps(k[t]);
    const __m256 bv = _mm256_set1_ps(bias);
    for (int64_t oh0 = 0; oh0 < g->out_h; oh0 += band) {
        int64_t rows = g->out_h - oh0 < band ? g->out_h - oh0 : band;
        mps_avx2_dw3_band(g, x, oh0, rows, pw, buf);
        for (int64_t r = 0; r < rows; r += 2) {
            const float *b0 = buf + r * pw, *b1 = b0 + pw, *b2 = b1 + pw, *b3 = b2 + pw;
            float *ya = y + (oh0 + r) * g->out_w, *yb = ya + g->out_w;
            bool two = r + 1 < rows; /* b3 exists only then */
            for (int64_t c = 0; c < g->out_w; c += 8) {
                __m256i m = mps_avx2_mask((int)(g->out_w - c));
                bool whole = g->out_w - c >= 8;
                __m256 x10 = _mm256_loadu_ps(b1 + c), x11 = _mm256_loadu_ps(b1 + c + 1);
                __m256 x12 = _mm256_loadu_ps(b1 + c + 2), x20 = _mm256_loadu_ps(b2 + c);
                __m256 x21 = _mm256_loadu_ps(b2 + c + 1), x22 = _mm256_loadu_ps(b2 + c + 2);
                __m256 a = _mm256_fmadd_ps(kv[0], _mm256_loadu_ps(b0 + c), bv);
                __m256 a1 = _mm256_mul_ps(kv[1], _mm256_loadu_ps(b0 + c + 1));
                a = _mm256_fmadd_ps(kv[2], _mm256_loadu_ps(b0 + c + 2), a);
                a1 = _mm256_fmadd_ps(kv[3], x10, a1);
                a = _mm256_fmadd_ps(kv[4], x11, a);
                a1 = _mm256_fmadd_ps(kv[5], x12, a1);
                a = _mm256_fmadd_ps(kv[6], x20, a);
                a1 = _mm256_fmadd_ps(kv[7], x21, a1);
                a = _mm256_fmadd_ps(kv[8], x22, a);
                mps_avx2_put(ya + c, m, whole, mps_avx2_actc(_mm256_add_ps(a, a1), act));
                if (!two)
                    continue;
                __m256 bb = _mm256_fmadd_ps(kv[0], x10, bv), bb1 = _mm256_mul_ps(kv[1], x11);
                bb = _mm256_fmadd_ps(kv[2], x12, bb);
                bb1 = _mm256_fmadd_ps(kv[3], x20, bb1);
                bb = _mm256_fmadd_ps(kv[4], x21, bb);
                bb1 = _mm256_fmadd_ps(kv[5], x22, bb1);
                bb = _mm256_fmadd_ps(kv[6], _mm256_loadu_ps(b3 + c), bb);
                bb1 = _mm256_fmadd_ps(kv[7], _mm256_loadu_ps(b3 + c + 1), bb1);
                bb = _mm256_fmadd_ps(kv[8], _mm256_loadu_ps(b3 + c + 2), bb);
                mps_avx2_put(yb + c, m, whole, mps_avx2_actc(_mm256_add_ps(bb, bb1), act));
            }
        }
    }
}

/* 3x3 depthwise planes, eight outputs a step (see ukernel_avx512_dw.c):
   stride 1 in bands of padded rows, two rows a step (mps_avx2_dw3_pairs);
   stride 2, narrow planes and rows too wide for the band, row by row. */
static void mps_avx2_dw3(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                         const struct mps_tile_epi *e)
{
    const struct mps_avx2_actc act = mps_avx2_actc_of(e);
    int64_t pw = g->out_w + 2, band = (MPS_AVX2_DW3_BAND - 16) / pw - 2;
    if (g->s == 1 && band >= 1 && g->out_w >= 8) {
        mps_avx2_dw3_pairs(g, x, k, bias, y, &act, pw, band);
        return;
    }
    __m256 k0 = _mm256_broadcast_ss(k), k1 = _mm256_broadcast_ss(k + 1), k2 = _mm256_broadcast_ss(k + 2);
    __m256 k3 = _mm256_broadcast_ss(k + 3), k4 = _mm256_broadcast_ss(k + 4), k5 = _mm256_broadcast_ss(k + 5);
    __m256 k6 = _mm256_broadcast_ss(k + 6), k7 = _mm256_broadcast_ss(k + 7), k8 = _mm256_broadcast_ss(k + 8);
    int s = g->s;
    for (int64_t oh = 0; oh < g->out_h; oh++) {
        int64_t i0 = oh * s - g->pt; /* input rows i0 .. i0 + 2; only those in [0, h) are addressed */
        bool r0 = i0 >= 0 && i0 < g->h, r1 = i0 + 1 >= 0 && i0 + 1 < g->h, r2 = i0 + 2 >= 0 && i0 + 2 < g->h;
        for (int64_t ow = 0; ow < g->out_w; ow += 8) {
            int64_t c = ow * s - g->pl; /* the step reads columns [c, c + 7 s + 3) */
            bool inside = c >= 0 && c + 7 * s + 3 <= g->w;
            __m256 acc = _mm256_set1_ps(bias);
            if (r0)
                acc = mps_avx2_dw3_row(acc, x + i0 * g->w, g->w, c, s, inside, k0, k1, k2);
            if (r1)
                acc = mps_avx2_dw3_row(acc, x + (i0 + 1) * g->w, g->w, c, s, inside, k3, k4, k5);
            if (r2)
                acc = mps_avx2_dw3_row(acc, x + (i0 + 2) * g->w, g->w, c, s, inside, k6, k7, k8);
            int n = g->out_w - ow < 8 ? (int)(g->out_w - ow) : 8;
            mps_avx2_put(y + oh * g->out_w + ow, mps_avx2_mask(n), n == 8, mps_avx2_actc(acc, &act));
        }
    }
}

const struct mps_ukernels mps_ukernels_avx2 = {
    .name = "avx2",
    .describe = "AVX2 + FMA, 6 x 16 float tiles",
    .mr = MR,
    .nr = NR,
    .kc = KC,
    .mt = MT,
    .supported = mps_x86_has_avx2,
    .gemm = mps_avx2_gemm,
    .gemm_rows = mps_avx2_gemm_rows,
    .gemm_dot = mps_avx2_gemm_dot,
    .dw3 = mps_avx2_dw3,
    .dwk = mps_dwk,
    .dwb = mps_avx2_dwb,
    .conv = mps_avx2_conv,
    .conv_pf = mps_avx2_conv_pf,
    .convt = mps_avx2_convt,
    .maxpool = mps_avx2_maxpool,
    .pconv = mps_avx2_pconv,
    .wino_in = mps_avx2_wino_in,
    .wino_out = mps_avx2_wino_out,
    .wino_pool = mps_avx2_wino_pool,
    .sigmoid = mps_act_sigmoid,
    .tanh = mps_act_tanh,
    .q = {&mps_uqgemm_avxvnni, &mps_uqgemm_avx2}, /* AVX-VNNI where the CPU has it (Alder Lake on, Zen 5) */
};
