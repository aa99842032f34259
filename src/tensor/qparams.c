/* qparams.c: an int8 product's quantization parameters, per node and per
   column (qparams.h); the store they feed is described in cpu/qlinear.c. */
#include "qparams.h"

#include <math.h>

/* Value i of constant v (one element: every i) as a double. */
double mps_qlinear_at(const struct mps_value *v, int64_t i)
{
    if (!v)
        return 0.0;
    int64_t n = mps_shape_numel(&v->shape);
    i = n == 1 ? 0 : i;
    switch (v->dtype) {
    case MPS_U8: return ((const uint8_t *)v->data)[i];
    case MPS_I8: return ((const int8_t *)v->data)[i];
    case MPS_I32: return ((const int32_t *)v->data)[i];
    case MPS_F32: return ((const float *)v->data)[i];
    default: return 0.0;
    }
}

const struct mps_value *mps_qlinear_in(const struct mps_graph *g, const struct mps_node *n, int i)
{
    return i < n->n_in && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL;
}

bool mps_qlinear_one_plane(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_value *w = mps_qlinear_in(g, n, 3);
    return n->op == MPS_OP_QLINEAR_CONV && n->p.conv.group == 1 && w && w->shape.ndim == 4 && w->shape.dim[1] == 1 &&
           w->shape.dim[2] * w->shape.dim[3] <= 258;
}

/* The requantization's per-node values (h) and, where the arrays are
   given (cols each), its per-column ones. */
void mps_qlinear_columns(const struct mps_graph *g, const struct mps_node *n, bool planes, struct mps_qlinear_cols *h,
                         float *mult, float *add, int32_t *corr, int32_t *zw)
{
    const struct mps_value *x = mps_qlinear_in(g, n, 0), *w = mps_qlinear_in(g, n, 3), *xs = mps_qlinear_in(g, n, 1),
                           *ws = mps_qlinear_in(g, n, 4), *wz = mps_qlinear_in(g, n, 5), *ys = mps_qlinear_in(g, n, 6),
                           *bias = mps_qlinear_in(g, n, 8), *y = &g->values[n->out[0]];
    bool conv = n->op == MPS_OP_QLINEAR_CONV;
    *h = (struct mps_qlinear_cols){.flip = x->dtype == MPS_I8,
                                   .dw = conv && (n->p.conv.group > 1 || (planes && mps_qlinear_one_plane(g, n)))};
    h->cols = w->shape.dim[conv ? 0 : 1];
    h->k_real = conv ? mps_shape_numel(&w->shape) / (h->cols ? h->cols : 1) : w->shape.dim[0];
    h->zx = (uint8_t)((int)mps_qlinear_at(mps_qlinear_in(g, n, 2), 0) + (h->flip ? 128 : 0));
    h->quant = ys != NULL;
    h->out_signed = y->dtype == MPS_I8;
    h->yz = (int32_t)mps_qlinear_at(mps_qlinear_in(g, n, 7), 0);
    float lo = -INFINITY, hi = INFINITY, slope = 1.0f;
    mps_act_clamp(conv ? &n->p.conv.act : &n->p.gemm.act, &lo, &hi, &slope);
    float inv_f = h->quant ? 1.0f / (float)mps_qlinear_at(ys, 0) : 1.0f;
    h->lo = lo * inv_f, h->hi = hi * inv_f, h->slope = slope;
    if (h->quant) { /* the output's range, in steps less its zero point */
        float qlo = (h->out_signed ? -128.0f : 0.0f) - (float)h->yz,
              qhi = (h->out_signed ? 127.0f : 255.0f) - (float)h->yz;
        h->lo = h->lo > qlo ? h->lo : qlo;
        h->hi = h->hi < qhi ? h->hi : qhi;
    }
    double inv = h->quant ? 1.0 / mps_qlinear_at(ys, 0) : 1.0;
    bool ibias = bias && bias->dtype == MPS_I32;
    for (int64_t m = 0; m < h->cols; m++) {
        int32_t z = (int32_t)mps_qlinear_at(wz, m) - (w->dtype == MPS_U8 ? 128 : 0);
        h->rowsums |= z != 0 && !h->dw;
        if (!mult)
            continue;
        mult[m] = (float)(mps_qlinear_at(xs, 0) * mps_qlinear_at(ws, m) * inv);
        add[m] = bias && !ibias ? (float)(mps_qlinear_at(bias, m) * inv) : 0.0f;
        if (h->dw) { /* the taps less their zero point, x less its own: no correction terms */
            zw[m] = 0, corr[m] = ibias ? (int32_t)mps_qlinear_at(bias, m) : 0;
            continue;
        }
        int64_t sum = 0;
        for (int64_t k = 0; k < h->k_real; k++)
            sum += mps_qlinear_weight(g, n, m, k);
        zw[m] = z;
        /* wraps as int32 arithmetic does: the true sum fits (K * 255 * 255 < 2^31) */
        corr[m] = (int32_t)(uint32_t)((uint64_t)(-(int64_t)h->zx * sum + h->k_real * h->zx * z) +
                                      (uint64_t)(ibias ? (int64_t)mps_qlinear_at(bias, m) : 0));
    }
}

int mps_qlinear_weight(const struct mps_graph *g, const struct mps_node *n, int64_t m, int64_t k)
{
    const struct mps_value *w = mps_qlinear_in(g, n, 3);
    int64_t per = 1; /* a Conv's weights an output channel (not mps_shape_numel: this runs per weight, at load) */
    for (int d = 1; n->op == MPS_OP_QLINEAR_CONV && d < w->shape.ndim; d++)
        per *= w->shape.dim[d];
    int64_t src = n->op == MPS_OP_QLINEAR_CONV ? m * per + k : k * w->shape.dim[1] + m;
    return w->dtype == MPS_U8 ? (int)((const uint8_t *)w->data)[src] - 128 : (int)((const int8_t *)w->data)[src];
}
