/* ukernel_c.c: the c family: portable C, 4 x 8 tiles the compiler may keep in
   vector registers. Runs everywhere; the reference the other families are
   compared with, and what an unknown CPU gets. */
#include <math.h>
#include <stddef.h>

#include "ukernel_act.h"
#include "ukernel_dw.h"
#include "ukernel_q.h"
#include "ukernel_wino.h"
#include "ukernels.h"

#define MR 4
#define NR 8
#define KC 256

/* A tile's sums; row kk of B's panel at b + off[kk], or packed (off NULL);
   A's row r at step kk at a[r lda + kk ks] (packed: lda 1, ks MR; its
   rows in place: ks 1, and only rows < rows of them). */
static inline void mps_c_sums(int64_t k, const float *a, int64_t lda, int64_t ks, int rows, const float *b,
                              const int32_t *off, float acc[MR][NR])
{
    for (int64_t kk = 0; kk < k; kk++, a += ks) {
        const float *bk = off ? b + off[kk] : b + kk * NR;
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < NR; j++)
                acc[r][j] += a[r * lda] * bk[j];
    }
}

/* Stores a GEMM tile's sums (the flags, the epilogue). */
static void mps_c_store(float acc[MR][NR], float *c, int64_t ldc, int rows, int cols, int flags,
                        const struct mps_tile_epi *e)
{
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) {
            float *y = c + r * ldc + j, v = acc[r][j];
            if (flags & MPS_TILE_ACCUMULATE)
                v += *y;
            if (flags & MPS_TILE_FINISH) {
                if (e->bias)
                    v += e->bias[e->bias_cols ? j : r];
                if (e->res)
                    v += e->res[r * e->ldr + j];
                v = mps_tile_epi_act(e, v);
            }
            *y = v;
        }
}

static void mps_c_gemm(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                       int flags, const struct mps_tile_epi *e)
{
    float acc[MR][NR] = {{0}};
    mps_c_sums(k, a, 1, MR, MR, b, NULL, acc);
    mps_c_store(acc, c, ldc, rows, cols, flags, e);
}

static void mps_c_gemm_rows(int64_t k, const float *a, int64_t lda, const float *b, float *c, int64_t ldc, int rows,
                            int cols, int flags, const struct mps_tile_epi *e)
{
    float acc[MR][NR] = {{0}};
    mps_c_sums(k, a, lda, 1, rows, b, NULL, acc);
    mps_c_store(acc, c, ldc, rows, cols, flags, e);
}

static void mps_c_conv(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc,
                       int rows, uint64_t keep, const struct mps_tile_epi *e)
{
    float acc[MR][NR] = {{0}};
    mps_c_sums(k, a, 1, MR, MR, b, off, acc);
    for (int r = 0; r < rows; r++) {
        float *y = c + r * ldc;
        for (int j = 0; j < NR; j++)
            if (keep >> j & 1)
                *y++ = mps_tile_epi_act(e, acc[r][j] + (e->bias ? e->bias[r] : 0.0f));
    }
}

/* Row by row, tap by tap over the outputs the tap reaches inside the input
   (the order of the general depthwise loop); S a constant, so that the
   compiler vectorizes the strided loads. */
static inline void mps_c_dw3_plane(const struct mps_dw3_geom *g, const int S, const float *x, const float *k,
                                   float bias, float *y, const struct mps_tile_epi *e)
{
    for (int64_t oh = 0; oh < g->out_h; oh++) {
        float *yr = y + oh * g->out_w;
        for (int64_t ow = 0; ow < g->out_w; ow++)
            yr[ow] = bias;
        for (int64_t th = 0; th < 3; th++) {
            int64_t ih = oh * S - g->pt + th;
            if (ih < 0 || ih >= g->h)
                continue;
            for (int64_t tw = 0; tw < 3; tw++) {
                /* outputs [lo, hi) read columns ow S - pl + tw inside [0, w) */
                int64_t first = g->pl - tw, lo = first <= 0 ? 0 : (first + S - 1) / S;
                int64_t hi = g->w - 1 + g->pl - tw < 0 ? 0 : (g->w - 1 + g->pl - tw) / S + 1;
                hi = hi < g->out_w ? hi : g->out_w;
                const float *row = x + ih * g->w;
                int64_t off = tw - g->pl;
                float kv = k[th * 3 + tw];
                for (int64_t ow = lo; ow < hi; ow++)
                    yr[ow] += kv * row[ow * S + off];
            }
        }
        for (int64_t ow = 0; ow < g->out_w; ow++)
            yr[ow] = mps_tile_epi_act(e, yr[ow]);
    }
}

static void mps_c_dw3(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                      const struct mps_tile_epi *e)
{
    if (g->s == 1)
        mps_c_dw3_plane(g, 1, x, k, bias, y, e);
    else
        mps_c_dw3_plane(g, 2, x, k, bias, y, e);
}

/* The transposed tile (ukernels.h): MT positions x NR channels, in the
   order the other families sum (k ascending). */
#define MT 4
static void mps_c_convt(int64_t k, const float *a, const float *b, const int32_t *off, float *c, int64_t ldc, int rows,
                        int cols, const struct mps_tile_epi *e)
{
    float acc[MT][NR] = {{0}};
    for (int64_t kk = 0; kk < k; kk++, a += NR)
        for (int j = 0; j < rows; j++)
            for (int o = 0; o < NR; o++)
                acc[j][o] += b[off[kk] + j] * a[o];
    for (int o = 0; o < cols; o++)
        for (int j = 0; j < rows; j++)
            c[o * ldc + j] = mps_tile_epi_act(e, acc[j][o] + (e->bias ? e->bias[o] : 0.0f));
}

static bool mps_c_supported(void)
{
    return true;
}

enum { MPS_C_QMR = 4, MPS_C_QNR = 16 };
/* signed_a: a's bytes signed and b's unsigned (by_weights), else the other way. */
static inline int mps_c_qbyte(const void *p, int64_t i, bool is_signed)
{
    return is_signed ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* Row r's four bytes of group g at a + r rs + g gs. */
static inline void mps_c_qtile(int64_t k4, const void *a, int64_t rs, int64_t gs, const void *b, int32_t *c, int rows,
                               bool signed_a)
{
    int32_t acc[MPS_C_QMR][MPS_C_QNR] = {{0}};
    for (int64_t g = 0; g < k4; g++)
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < MPS_C_QNR; j++)
                for (int i = 0; i < 4; i++)
                    acc[r][j] += mps_c_qbyte(a, r * rs + g * gs + i, signed_a) *
                                 mps_c_qbyte(b, (g * MPS_C_QNR + j) * 4 + i, !signed_a);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < MPS_C_QNR; j++)
            c[r * MPS_C_QNR + j] = acc[r][j];
}

static void mps_c_qgemm(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    mps_c_qtile(k4, a, lda, 4, b, c, rows, false);
}

static void mps_c_qgemm_w(int64_t k4, const void *a, const uint8_t *b, int32_t *c)
{
    mps_c_qtile(k4, a, 4, 4 * MPS_C_QMR, b, c, MPS_C_QMR, true);
}

MPS_UQ_ROWS(mps_c)

const struct mps_uqgemm mps_uqgemm_c = {
    "c",           MPS_C_QMR,      MPS_C_QNR,      mps_c_supported, mps_c_qgemm,
    mps_c_qgemm_w, mps_c_qstore,   mps_c_qrequant, mps_c_qquantize, mps_c_qdequantize,
    NULL,          mps_c_qstore_f, NULL,           false,           NULL,
    mps_c_qmul,    mps_c_qsum};

const struct mps_ukernels mps_ukernels_c = {
    .name = "c",
    .describe = "portable C, 4 x 8 float tiles",
    .mr = MR,
    .nr = NR,
    .kc = KC,
    .mt = MT,
    .supported = mps_c_supported,
    .gemm = mps_c_gemm,
    .gemm_rows = mps_c_gemm_rows,
    .dw3 = mps_c_dw3,
    .dwk = mps_dwk,
    .conv = mps_c_conv,
    .convt = mps_c_convt,
    .wino_in = mps_wino_in,
    .wino_out = mps_wino_out,
    .wino_pool = mps_wino_pool,
    .sigmoid = mps_act_sigmoid,
    .tanh = mps_act_tanh,
    .q = {&mps_uqgemm_c},
};
