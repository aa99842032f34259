/* ukernel_neon.c: the neon family (arm64 Advanced SIMD, every arm64 CPU and
   Apple silicon): 8 x 8 tiles, sixteen 128-bit accumulators; each k step
   loads eight values of a and multiplies by lane. Built on arm64 only. */
#include <arm_neon.h>
#include <math.h>

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
    }
    if (n >= 4) {
        vst1q_f32(c, acc);
    } else {
        vst1q_f32(buf, acc);
        for (int i = 0; i < n; i++)
            c[i] = buf[i];
    }
}

#define MPS_NEON_FMA_ROW(acc0, acc1, av, lane)                                                                         \
    do {                                                                                                               \
        acc0 = vfmaq_laneq_f32(acc0, b0, av, lane);                                                                    \
        acc1 = vfmaq_laneq_f32(acc1, b1, av, lane);                                                                    \
    } while (0)

/* A tile of R rows (R <= 8): k steps of two b loads, two a loads and 2 R multiply-adds by lane. */
#define MPS_NEON_TILE(R)                                                                                               \
    static void mps_neon_tile##R(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int cols,          \
                                 int flags, const struct mps_tile_epi *e)                                              \
    {                                                                                                                  \
        float32x4_t lo[8], hi[8];                                                                                      \
        for (int r = 0; r < R; r++)                                                                                    \
            lo[r] = hi[r] = vdupq_n_f32(0.0f);                                                                         \
        for (int64_t kk = 0; kk < k; kk++, a += MR, b += NR) {                                                         \
            float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), a0 = vld1q_f32(a), a1 = vld1q_f32(a + 4);            \
            if (R > 0) MPS_NEON_FMA_ROW(lo[0], hi[0], a0, 0);                                                          \
            if (R > 1) MPS_NEON_FMA_ROW(lo[1], hi[1], a0, 1);                                                          \
            if (R > 2) MPS_NEON_FMA_ROW(lo[2], hi[2], a0, 2);                                                          \
            if (R > 3) MPS_NEON_FMA_ROW(lo[3], hi[3], a0, 3);                                                          \
            if (R > 4) MPS_NEON_FMA_ROW(lo[4], hi[4], a1, 0);                                                          \
            if (R > 5) MPS_NEON_FMA_ROW(lo[5], hi[5], a1, 1);                                                          \
            if (R > 6) MPS_NEON_FMA_ROW(lo[6], hi[6], a1, 2);                                                          \
            if (R > 7) MPS_NEON_FMA_ROW(lo[7], hi[7], a1, 3);                                                          \
        }                                                                                                              \
        for (int r = 0; r < R; r++) {                                                                                  \
            mps_neon_store(c + r * ldc, lo[r], cols, flags, e, r, 0);                                                  \
            if (cols > 4)                                                                                              \
                mps_neon_store(c + r * ldc + 4, hi[r], cols - 4, flags, e, r, 4);                                      \
        }                                                                                                              \
    }
MPS_NEON_TILE(2)
MPS_NEON_TILE(3)
MPS_NEON_TILE(4)
MPS_NEON_TILE(5)
MPS_NEON_TILE(6)
MPS_NEON_TILE(7)
MPS_NEON_TILE(8)

/* One row: four k steps in flight, eight accumulators. */
static void mps_neon_tile1(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int cols, int flags,
                           const struct mps_tile_epi *e)
{
    float32x4_t lo[4], hi[4];
    for (int j = 0; j < 4; j++)
        lo[j] = hi[j] = vdupq_n_f32(0.0f);
    int64_t kk = 0;
    for (; kk + 4 <= k; kk += 4, a += 4 * MR, b += 4 * NR)
        for (int j = 0; j < 4; j++) {
            lo[j] = vfmaq_n_f32(lo[j], vld1q_f32(b + j * NR), a[j * MR]);
            hi[j] = vfmaq_n_f32(hi[j], vld1q_f32(b + j * NR + 4), a[j * MR]);
        }
    for (; kk < k; kk++, a += MR, b += NR) {
        lo[0] = vfmaq_n_f32(lo[0], vld1q_f32(b), a[0]);
        hi[0] = vfmaq_n_f32(hi[0], vld1q_f32(b + 4), a[0]);
    }
    float32x4_t l = vaddq_f32(vaddq_f32(lo[0], lo[1]), vaddq_f32(lo[2], lo[3]));
    float32x4_t h = vaddq_f32(vaddq_f32(hi[0], hi[1]), vaddq_f32(hi[2], hi[3]));
    (void)ldc;
    mps_neon_store(c, l, cols, flags, e, 0, 0);
    if (cols > 4)
        mps_neon_store(c + 4, h, cols - 4, flags, e, 0, 4);
}

static void mps_neon_gemm(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                          int flags, const struct mps_tile_epi *e)
{
    switch (rows) {
    case 1: mps_neon_tile1(k, a, b, c, ldc, cols, flags, e); break;
    case 2: mps_neon_tile2(k, a, b, c, ldc, cols, flags, e); break;
    case 3: mps_neon_tile3(k, a, b, c, ldc, cols, flags, e); break;
    case 4: mps_neon_tile4(k, a, b, c, ldc, cols, flags, e); break;
    case 5: mps_neon_tile5(k, a, b, c, ldc, cols, flags, e); break;
    case 6: mps_neon_tile6(k, a, b, c, ldc, cols, flags, e); break;
    case 7: mps_neon_tile7(k, a, b, c, ldc, cols, flags, e); break;
    default: mps_neon_tile8(k, a, b, c, ldc, cols, flags, e); break;
    }
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
};
