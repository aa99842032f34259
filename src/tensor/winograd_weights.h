/* winograd_weights.h: what every backend's Winograd F(2x2, 3x3) shares: which
   convolutions it can compute, and the kernels' transform U = G g G^T, made
   once at compile (cpu/winograd.c packs it for its micro-kernels, cuda
   uploads it plain). The rules of when it pays are each backend's own. */
#ifndef MPS_WINOGRAD_WEIGHTS_H
#define MPS_WINOGRAD_WEIGHTS_H

#include "graph.h"

/* Whether n is a Conv Winograd F(2x2, 3x3) computes: 2-D, 3x3, stride 1,
   undilated, one group, constant weights, 16+ channels each way (below that
   the 16 products are too short to pay for the transforms). */
bool mps_winograd_shape(const struct mps_graph *g, const struct mps_node *n);
/* U for each 3x3 kernel g = W[m][c] of n: 16 [m x c] matrices, element (m,
   c) of matrix i at u[i * stride + m / mr * mr * c + c * mr + m % mr]
   (panels of mr rows; mr 1, stride m * c: plain U[i][m][c]). */
void mps_winograd_weights(const struct mps_graph *g, const struct mps_node *n, int64_t mr, int64_t stride, float *u);

#endif
