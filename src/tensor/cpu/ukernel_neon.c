/* ukernel_neon.c: the neon family (arm64 Advanced SIMD, every arm64 CPU and
   Apple silicon): 8 x 8 tiles, sixteen 128-bit accumulators; each k step
   loads eight values of a and multiplies by lane. Built on arm64 only. */
#include <arm_neon.h>
#include <math.h>
#include <stddef.h>

#include "ukernel_act.h"
#include "ukernel_dw.h"
#include "ukernel_wino.h"
#include "ukernels.h"

#define MR 8
#define NR 8
#define KC 256

/* Stores acc (lanes [0, n) of columns c0..) of one row, applying the flags. */
static inline void mps_neon_store(float *c, float32x4_t acc, int n, int flags, const struct mps_tile_epi *e, int r,
                                  int c0)
{
    float buf[4];
    if (n < 4) { /* the tile's last columns: through a buffer, so that nothing past them is touched */
        for (int i = 0; i < 4; i++)
            buf[i] = i < n && (flags & MPS_TILE_ACCUMULATE) ? c[i] : 0.0f;
        if (flags & MPS_TILE_ACCUMULATE)
            acc = vaddq_f32(acc, vld1q_f32(buf));
    } else if (flags & MPS_TILE_ACCUMULATE) {
        acc = vaddq_f32(acc, vld1q_f32(c));
    }
    if (flags & MPS_TILE_FINISH) {
        float tmp[4] = {0, 0, 0, 0};
        if (e->bias) {
            if (!e->bias_cols)
                acc = vaddq_f32(acc, vdupq_n_f32(e->bias[r]));
            else if (n >= 4)
                acc = vaddq_f32(acc, vld1q_f32(e->bias + c0));
            else {
                for (int i = 0; i < n; i++)
                    tmp[i] = e->bias[c0 + i];
                acc = vaddq_f32(acc, vld1q_f32(tmp));
            }
        }
        if (e->res) {
            const float *rp = e->res + r * e->ldr + c0;
            if (n >= 4)
                acc = vaddq_f32(acc, vld1q_f32(rp));
            else {
                for (int i = 0; i < n; i++)
                    tmp[i] = rp[i];
                acc = vaddq_f32(acc, vld1q_f32(tmp));
            }
        }
        if (e->lo > -INFINITY || e->hi < INFINITY) /* FMAX and FMIN return NaN when either operand is NaN */
            acc = vminq_f32(vmaxq_f32(acc, vdupq_n_f32(e->lo)), vdupq_n_f32(e->hi));
        if (e->slope != 1.0f)
            acc = vbslq_f32(vcltq_f32(acc, vdupq_n_f32(0.0f)), vmulq_n_f32(acc, e->slope), acc);
        if (e->hswish) { /* t is NaN only where acc is: the product is NaN as unary.c's */
            float32x4_t t = vaddq_f32(vdivq_f32(acc, vdupq_n_f32(6.0f)), vdupq_n_f32(0.5f));
            t = vmaxq_f32(vminq_f32(t, vdupq_n_f32(1.0f)), vdupq_n_f32(0.0f));
            acc = vmulq_f32(acc, t);
        }
    }
    if (n >= 4) {
        vst1q_f32(c, acc);
    } else {
        vst1q_f32(buf, acc);
        for (int i = 0; i < n; i++)
            c[i] = buf[i];
    }
}

/* The direct convolution's store of one row (ukernels.h): the epilogue (bias
   a row, activation), then the kept columns packed together from c. */
static inline void mps_neon_keep(float *c, float32x4_t lo, float32x4_t hi, uint64_t keep,
                                 const struct mps_tile_epi *e, int r)
{
    float row[8];
    mps_neon_store(keep == 0xffu ? c : row, lo, 4, MPS_TILE_FINISH, e, r, 0);
    mps_neon_store(keep == 0xffu ? c + 4 : row + 4, hi, 4, MPS_TILE_FINISH, e, r, 4);
    if (keep != 0xffu)
        mps_tile_keep_copy(c, row, keep);
}

/* Row kk of a tile's B panel: packed, or at an offset of the direct
   convolution's input (ukernels.h). */
#define MPS_NEON_PACKED(kk) (b + (kk) * NR)
#define MPS_NEON_OFFSET(kk) (b + off[kk])

#define MPS_NEON_FMA_ROW(acc0, acc1, av, lane)                                                                         \
    do {                                                                                                               \
        acc0 = vfmaq_laneq_f32(acc0, b0, av, lane);                                                                    \
        acc1 = vfmaq_laneq_f32(acc1, b1, av, lane);                                                                    \
    } while (0)
#define MPS_NEON_STORE(r)                                                                                              \
    do {                                                                                                               \
        mps_neon_store(c + (r) * ldc, lo[r], cols, flags, e, r, 0);                                                    \
        if (cols > 4)                                                                                                  \
            mps_neon_store(c + (r) * ldc + 4, hi[r], cols - 4, flags, e, r, 4);                                        \
    } while (0)
#define MPS_NEON_KEEP(r) mps_neon_keep(c + (r) * ldc, lo[r], hi[r], cols, e, r)

/* A tile of R rows (R <= 8): k steps of two b loads, two a loads and 2 R multiply-adds by lane. */
#define MPS_NEON_TILE(NAME, ROW, STORE, COLS, R)                                                                       \
    static void NAME##R(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,         \
                        COLS cols, int flags, const struct mps_tile_epi *e)                                            \
    {                                                                                                                  \
        (void)off, (void)flags;                                                                                        \
        float32x4_t lo[8], hi[8];                                                                                      \
        for (int r = 0; r < R; r++)                                                                                    \
            lo[r] = hi[r] = vdupq_n_f32(0.0f);                                                                         \
        for (int64_t kk = 0; kk < k; kk++, a += MR) {                                                                  \
            const float *bk = ROW(kk);                                                                                 \
            float32x4_t b0 = vld1q_f32(bk), b1 = vld1q_f32(bk + 4), a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);          \
            if (R > 0) MPS_NEON_FMA_ROW(lo[0], hi[0], a0, 0);                                                          \
            if (R > 1) MPS_NEON_FMA_ROW(lo[1], hi[1], a0, 1);                                                          \
            if (R > 2) MPS_NEON_FMA_ROW(lo[2], hi[2], a0, 2);                                                          \
            if (R > 3) MPS_NEON_FMA_ROW(lo[3], hi[3], a0, 3);                                                          \
            if (R > 4) MPS_NEON_FMA_ROW(lo[4], hi[4], a1, 0);                                                          \
            if (R > 5) MPS_NEON_FMA_ROW(lo[5], hi[5], a1, 1);                                                          \
            if (R > 6) MPS_NEON_FMA_ROW(lo[6], hi[6], a1, 2);                                                          \
            if (R > 7) MPS_NEON_FMA_ROW(lo[7], hi[7], a1, 3);                                                          \
        }                                                                                                              \
        for (int r = 0; r < R; r++)                                                                                    \
            STORE(r);                                                                                                  \
    }

/* One row: four k steps in flight, eight accumulators. */
#define MPS_NEON_TILE_ONE(NAME, ROW, STORE, COLS)                                                                      \
    static void NAME##1(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,         \
                        COLS cols, int flags, const struct mps_tile_epi *e)                                            \
    {                                                                                                                  \
        (void)off, (void)ldc, (void)flags;                                                                             \
        float32x4_t l4[4], h4[4];                                                                                      \
        for (int j = 0; j < 4; j++)                                                                                    \
            l4[j] = h4[j] = vdupq_n_f32(0.0f);                                                                         \
        int64_t kk = 0;                                                                                                \
        for (; kk + 4 <= k; kk += 4, a += 4 * MR)                                                                      \
            for (int j = 0; j < 4; j++) {                                                                              \
                const float *bk = ROW(kk + j);                                                                         \
                l4[j] = vfmaq_n_f32(l4[j], vld1q_f32(bk), a[j * MR]);                                                  \
                h4[j] = vfmaq_n_f32(h4[j], vld1q_f32(bk + 4), a[j * MR]);                                              \
            }                                                                                                          \
        for (; kk < k; kk++, a += MR) {                                                                                \
            const float *bk = ROW(kk);                                                                                 \
            l4[0] = vfmaq_n_f32(l4[0], vld1q_f32(bk), a[0]);                                                           \
            h4[0] = vfmaq_n_f32(h4[0], vld1q_f32(bk + 4), a[0]);                                                       \
        }                                                                                                              \
        float32x4_t lo[1] = {vaddq_f32(vaddq_f32(l4[0], l4[1]), vaddq_f32(l4[2], l4[3]))};                             \
        float32x4_t hi[1] = {vaddq_f32(vaddq_f32(h4[0], h4[1]), vaddq_f32(h4[2], h4[3]))};                             \
        STORE(0);                                                                                                      \
    }

/* Every tile height for one way of reading B, and the call by height. */
#define MPS_NEON_TILES(NAME, ROW, STORE, COLS)                                                                         \
    MPS_NEON_TILE_ONE(NAME, ROW, STORE, COLS)                                                                          \
    MPS_NEON_TILE(NAME, ROW, STORE, COLS, 2)                                                                           \
    MPS_NEON_TILE(NAME, ROW, STORE, COLS, 3)                                                                           \
    MPS_NEON_TILE(NAME, ROW, STORE, COLS, 4)                                                                           \
    MPS_NEON_TILE(NAME, ROW, STORE, COLS, 5)                                                                           \
    MPS_NEON_TILE(NAME, ROW, STORE, COLS, 6)                                                                           \
    MPS_NEON_TILE(NAME, ROW, STORE, COLS, 7) MPS_NEON_TILE(NAME, ROW, STORE, COLS, 8)
#define MPS_NEON_BY_ROWS(NAME)                                                                                         \
    switch (rows) {                                                                                                    \
    case 1: NAME##1(k, a, b, off, c, ldc, cols, flags, e); break;                                                      \
    case 2: NAME##2(k, a, b, off, c, ldc, cols, flags, e); break;                                                      \
    case 3: NAME##3(k, a, b, off, c, ldc, cols, flags, e); break;                                                      \
    case 4: NAME##4(k, a, b, off, c, ldc, cols, flags, e); break;                                                      \
    case 5: NAME##5(k, a, b, off, c, ldc, cols, flags, e); break;                                                      \
    case 6: NAME##6(k, a, b, off, c, ldc, cols, flags, e); break;                                                      \
    case 7: NAME##7(k, a, b, off, c, ldc, cols, flags, e); break;                                                      \
    default: NAME##8(k, a, b, off, c, ldc, cols, flags, e); break;                                                     \
    }

MPS_NEON_TILES(mps_neon_tile, MPS_NEON_PACKED, MPS_NEON_STORE, int)
MPS_NEON_TILES(mps_neon_ctile, MPS_NEON_OFFSET, MPS_NEON_KEEP, uint64_t)

static void mps_neon_gemm(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                          int flags, const struct mps_tile_epi *e)
{
    const int32_t *off = NULL;
    MPS_NEON_BY_ROWS(mps_neon_tile)
}

static void mps_neon_conv(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                          int rows, uint64_t cols, const struct mps_tile_epi *e)
{
    const int flags = MPS_TILE_FINISH;
    MPS_NEON_BY_ROWS(mps_neon_ctile)
}

/* Columns [c, c + need) of a row of w floats: in place where they lie inside
   the row, else copied into buf with zeros for those outside (need <= 9). */
static inline const float *mps_neon_cols(const float *row, int64_t w, int64_t c, int64_t need, float *buf)
{
    if (c >= 0 && c + need <= w)
        return row + c;
    for (int64_t i = 0; i < need; i++)
        buf[i] = c + i >= 0 && c + i < w ? row[c + i] : 0.0f;
    return buf;
}

/* acc plus one input row's three taps for four outputs from column c, s
   apart; stride 2 through vld2q (the even and the odd inputs apart). */
static inline float32x4_t mps_neon_dw3_row(float32x4_t acc, const float *row, int64_t w, int64_t c, int s,
                                           const float *k)
{
    float buf[12];
    const float *p = mps_neon_cols(row, w, c, 3 * s + 3, buf);
    float32x4_t x0, x1, x2;
    if (s == 1) {
        x0 = vld1q_f32(p), x1 = vld1q_f32(p + 1), x2 = vld1q_f32(p + 2);
    } else { /* p[0 .. 7] apart, then p[2 .. 8]'s evens: x0 shifted by one lane, p[8] last */
        float32x4x2_t v = vld2q_f32(p);
        x0 = v.val[0], x1 = v.val[1], x2 = vextq_f32(x0, vdupq_n_f32(p[8]), 1);
    }
    acc = vfmaq_n_f32(acc, x0, k[0]);
    acc = vfmaq_n_f32(acc, x1, k[1]);
    return vfmaq_n_f32(acc, x2, k[2]);
}

/* 3x3 depthwise planes, four outputs a step; input rows in the padding are
   skipped, the last step of a row stores only its outputs. */
static void mps_neon_dw3(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                         const struct mps_tile_epi *e)
{
    for (int64_t oh = 0; oh < g->out_h; oh++) {
        int64_t i0 = oh * g->s - g->pt;
        for (int64_t ow = 0; ow < g->out_w; ow += 4) {
            float32x4_t acc = vdupq_n_f32(bias);
            for (int64_t th = 0; th < 3; th++)
                if (i0 + th >= 0 && i0 + th < g->h)
                    acc = mps_neon_dw3_row(acc, x + (i0 + th) * g->w, g->w, ow * g->s - g->pl, g->s, k + 3 * th);
            int n = g->out_w - ow < 4 ? (int)(g->out_w - ow) : 4;
            mps_neon_store(y + oh * g->out_w + ow, acc, n, MPS_TILE_FINISH, e, 0, 0);
        }
    }
}

static bool mps_neon_supported(void)
{
    return true; /* Advanced SIMD is part of every arm64 CPU */
}

const struct mps_ukernels mps_ukernels_neon = {
    .name = "neon",
    .describe = "arm64 Advanced SIMD, 8 x 8 float tiles",
    .mr = MR,
    .nr = NR,
    .kc = KC,
    .supported = mps_neon_supported,
    .gemm = mps_neon_gemm,
    .dw3 = mps_neon_dw3,
    .dwk = mps_dwk,
    .conv = mps_neon_conv,
    .wino_in = mps_wino_in,
    .wino_out = mps_wino_out,
    .wino_pool = mps_wino_pool,
    .sigmoid = mps_act_sigmoid,
    .tanh = mps_act_tanh,
    .q = {&mps_uqgemm_neon, &mps_uqgemm_c}, /* sdot where the CPU has it (Apple M1 on, Cortex-A76 on) */
};
