/* qparams.h: the quantization parameters of an int8 product (QLinearConv,
   QLinearMatMul, as the quantization pass makes them), read once at compile
   by every backend that runs it on int8 kernels (the cpu's qlinear.c, cuda's
   nodes_quant.c), so that their stores compute the same bytes. */
#ifndef MPS_QPARAMS_H
#define MPS_QPARAMS_H

#include "graph.h"

/* The requantizing store of an int8 product (QLinearConv, QLinearMatMul),
   which every backend's kernels share: the exact int32 sum acc of x times
   the signed weights (uint8 weights less 128; an int8 x plus 128, with zx),
   then v = (acc + corr - zw * rowsum) * mult + add, clamped to [lo, hi];
   quantized: rounded half to even plus yz, a byte; else below 0 times slope,
   a float. A depthwise node (dw) sums (x - zx)(w - zw) itself: zw is 0, corr
   only an int32 bias; so does a conv of one input channel where the caller
   asks (planes: the cpu's, which sums it in f32 on its float kernels,
   exactly: mps_qlinear_one_plane). */
struct mps_qlinear_cols {
    int64_t cols, k_real; /* output channels / columns; the summed length */
    uint8_t zx;           /* x's zero point, unsigned */
    bool flip, dw, quant, out_signed;
    bool rowsums; /* some zw is not 0 (never for dw) */
    float lo, hi, slope;
    int32_t yz;
};
/* h for node n and, where the arrays are given (cols each), per column. */
void mps_qlinear_columns(const struct mps_graph *g, const struct mps_node *n, bool planes, struct mps_qlinear_cols *h,
                         float *mult, float *add, int32_t *corr, int32_t *zw);
/* Whether QLinearConv n has one input channel (group 1) and at most 258
   taps: summed in f32, its partial sums are integers below 2^24 (258 255
   255), exact, as a depthwise one's. */
bool mps_qlinear_one_plane(const struct mps_graph *g, const struct mps_node *n);
/* Weight (column m, k) signed, k in the weights' own order: QLinearMatMul's
   row, QLinearConv's (channel, tap row, tap column). */
int mps_qlinear_weight(const struct mps_graph *g, const struct mps_node *n, int64_t m, int64_t k);
/* Input i of node n, or NULL where it is absent. */
const struct mps_value *mps_qlinear_in(const struct mps_graph *g, const struct mps_node *n, int i);
/* Element i of constant v as a double (one element: every i; NULL: 0). */
double mps_qlinear_at(const struct mps_value *v, int64_t i);

#endif
