/* ukernel_c.c: the c family: portable C, 4 x 8 tiles the compiler may keep in
   vector registers. Runs everywhere; the reference the other families are
   compared with, and what an unknown CPU gets. */
#include <math.h>

#include "ukernels.h"

#define MR 4
#define NR 8
#define KC 256

static void mps_c_gemm(int64_t k, const float *a, const float *b, float *c, int64_t ldc, int rows, int cols,
                       int flags, const struct mps_tile_epi *e)
{
    float acc[MR][NR] = {{0}};
    for (int64_t kk = 0; kk < k; kk++, a += MR, b += NR)
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++)
                acc[r][j] += a[r] * b[j];
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
                v = v < e->lo ? e->lo : v > e->hi ? e->hi : v; /* NaN stays NaN */
                v = v < 0 ? e->slope * v : v;
            }
            *y = v;
        }
}

static bool mps_c_supported(void)
{
    return true;
}

const struct mps_ukernels mps_ukernels_c = {
    .name = "c",
    .describe = "portable C, 4 x 8 float tiles",
    .mr = MR,
    .nr = NR,
    .kc = KC,
    .supported = mps_c_supported,
    .gemm = mps_c_gemm,
};
