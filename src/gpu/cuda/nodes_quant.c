/* nodes_quant.c: the CUDA backend's int8 nodes (the quantization pass makes
   them, passes.c): QLinearConv and QLinearMatMul on quant.cu's tensor-core kernels,
   their weights and requantization prepared at compile; DequantizeLinear,
   QuantizeLinear and MaxPool of bytes. The requantization is the cpu's
   (kernels.h's mps_qlinear_columns), so that both store the same bytes. */
#include <string.h>

#include "cuda_internal.h"
#include "nodes.h"
#include "qparams.h"

/* Where each part of an int8 product's prepared block lies (bytes from its
   start): per column mult, add, corr, zw; the weights (words of four k a
   column, [k / 4][cols]; depthwise: [cols][taps] int32 less their zero
   point); a conv's table of k (channel offset, tap row and column offsets). */
struct mps_cuda_qlayout {
    size_t mult, add, corr, zw, w, ktab, bytes;
};

static size_t mps_cuda_qup(size_t v)
{
    return (v + 255) / 256 * 256;
}

static struct mps_cuda_qlayout mps_cuda_qlayout(const struct mps_qlinear_cols *h)
{
    struct mps_cuda_qlayout l;
    size_t col = mps_cuda_qup((size_t)h->cols * 4);
    l.mult = 0, l.add = col, l.corr = 2 * col, l.zw = 3 * col, l.w = 4 * col;
    size_t words = (size_t)(h->k_real + 3) / 4;
    l.ktab = l.w + mps_cuda_qup(h->dw ? (size_t)(h->cols * h->k_real) * 4 : words * (size_t)h->cols * 4);
    l.bytes = l.ktab + (h->dw ? 0 : (size_t)h->k_real * 3 * 4);
    return l;
}

size_t mps_cuda_qlinear_prepared(const struct mps_graph *g, const struct mps_node *n, void *host)
{
    struct mps_qlinear_cols h;
    mps_qlinear_columns(g, n, false, &h, NULL, NULL, NULL, NULL);
    struct mps_cuda_qlayout l = mps_cuda_qlayout(&h);
    if (!host)
        return l.bytes;
    unsigned char *b = host;
    memset(b, 0, l.bytes);
    mps_qlinear_columns(g, n, false, &h, (float *)(b + l.mult), (float *)(b + l.add), (int32_t *)(b + l.corr),
                        (int32_t *)(b + l.zw));
    const struct mps_value *w = &g->values[n->in[3]], *wz = n->in[5] >= 0 ? &g->values[n->in[5]] : NULL;
    if (h.dw) {
        int32_t *taps = (int32_t *)(b + l.w);
        for (int64_t m = 0; m < h.cols; m++) {
            int64_t at = wz && mps_shape_numel(&wz->shape) > 1 ? m : 0;
            int32_t z = (wz ? (int32_t)mps_elem_get(wz->data, wz->dtype, at) : 0) - (w->dtype == MPS_U8 ? 128 : 0);
            for (int64_t k = 0; k < h.k_real; k++)
                taps[m * h.k_real + k] = mps_qlinear_weight(g, n, m, k) - z;
        }
        return l.bytes;
    }
    int8_t *wb = (int8_t *)(b + l.w);
    for (int64_t k = 0; k < h.k_real; k++)
        for (int64_t m = 0; m < h.cols; m++)
            wb[((k / 4) * h.cols + m) * 4 + k % 4] = (int8_t)mps_qlinear_weight(g, n, m, k);
    if (n->op == MPS_OP_QLINEAR_CONV) {
        const struct mps_shape *x = &g->values[n->in[0]].shape;
        const struct mps_window *win = &n->p.conv.win;
        int64_t taps = w->shape.dim[2] * w->shape.dim[3];
        int32_t *t = (int32_t *)(b + l.ktab);
        for (int64_t k = 0; k < h.k_real; k++, t += 3) {
            int64_t c = k / taps, i = k % taps / w->shape.dim[3], j = k % w->shape.dim[3];
            t[0] = (int32_t)(c * x->dim[2] * x->dim[3]);
            t[1] = (int32_t)(i * win->dilation[0]);
            t[2] = (int32_t)(j * win->dilation[1]);
        }
    }
    return l.bytes;
}

bool mps_cuda_quant_supports(const struct mps_graph *g, const struct mps_node *n)
{
    if (n->op == MPS_OP_MAX_POOL) /* of bytes: the values only */
        return n->n_out == 1;
    if (n->op != MPS_OP_QLINEAR_CONV)
        return true;
    const struct mps_value *x = &g->values[n->in[0]];
    /* int32 offsets into an image, and the table's channel offsets */
    return mps_shape_numel(&x->shape) / x->shape.dim[0] < INT32_MAX && x->shape.dim[2] < INT32_MAX / 4 &&
           x->shape.dim[3] < INT32_MAX / 4;
}

/* The product's geometry (kernels.h's h computed). */
static struct mps_cu_qgeom mps_cuda_qgeom(const struct mps_graph *g, const struct mps_node *n,
                                          const struct mps_qlinear_cols *h)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    struct mps_cu_qgeom q = {.cols = h->cols, .images = 1, .k_real = h->k_real, .zx = h->zx, .flip = h->flip};
    if (n->op == MPS_OP_QLINEAR_MATMUL) {
        q.rows = mps_shape_numel(x) / (h->k_real ? h->k_real : 1);
        return q;
    }
    const struct mps_window *win = &n->p.conv.win;
    q.images = x->dim[0], q.image = mps_shape_numel(x) / (x->dim[0] ? x->dim[0] : 1);
    q.rows = y->dim[2] * y->dim[3], q.ih = (int)x->dim[2], q.iw = (int)x->dim[3], q.ow = (int)y->dim[3];
    q.sh = (int)win->stride[0], q.sw = (int)win->stride[1], q.ph = (int)win->pad[0], q.pw = (int)win->pad[1];
    return q;
}

size_t mps_cuda_qlinear_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    struct mps_qlinear_cols h;
    mps_qlinear_columns(g, n, false, &h, NULL, NULL, NULL, NULL);
    if (h.dw)
        return 0;
    struct mps_cu_qgeom q = mps_cuda_qgeom(g, n, &h);
    return mps_cu_qgemm_scratch(&q);
}

static enum mps_status mps_cuda_qlinear(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    struct mps_qlinear_cols h;
    mps_qlinear_columns(g, n, false, &h, NULL, NULL, NULL, NULL);
    struct mps_cuda_qlayout l = mps_cuda_qlayout(&h);
    const unsigned char *b = s->packed[n - g->nodes];
    struct mps_cu_qstore st = {.mult = (const float *)(b + l.mult),
                               .add = (const float *)(b + l.add),
                               .corr = (const int32_t *)(b + l.corr),
                               .zw = (const int32_t *)(b + l.zw),
                               .lo = h.lo,
                               .hi = h.hi,
                               .slope = h.slope,
                               .yz = h.yz,
                               .quant = h.quant,
                               .rowsums = h.rowsums};
    struct mps_cu_qgeom q = mps_cuda_qgeom(g, n, &h);
    const int32_t *w = (const int32_t *)(b + l.w);
    if (h.dw) {
        const struct mps_window *win = &n->p.conv.win;
        struct mps_cu_qwin d = {(int)win->kernel[0], (int)win->kernel[1], (int)win->dilation[0], (int)win->dilation[1]};
        MPS_CU_CHECK(mps_cu_qdepthwise(MPS_IN(0), w, MPS_OUT(0), &q, &d, &st, s->stream));
        return MPS_OK;
    }
    const int32_t *ktab = n->op == MPS_OP_QLINEAR_CONV ? (const int32_t *)(b + l.ktab) : NULL;
    MPS_CU_CHECK(mps_cu_qgemm(MPS_IN(0), w, ktab, MPS_OUT(0), &q, &st, s->scratch, s->stream));
    return MPS_OK;
}

/* DequantizeLinear and QuantizeLinear: the bytes' scale per tensor or along axis. */
static enum mps_status mps_cuda_quantize(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    bool dq = n->op == MPS_OP_DEQUANTIZE;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    int64_t per = mps_shape_numel(&MPS_INV(1)->shape), inner = 1;
    if (per > 1) {
        int axis = (int)(n->p.axis.axis < 0 ? n->p.axis.axis + x->ndim : n->p.axis.axis);
        inner = mps_cuda_prod(x, axis + 1, x->ndim);
    }
    enum mps_dtype bytes = dq ? MPS_INV(0)->dtype : MPS_OUTV(0)->dtype;
    MPS_CU_CHECK(mps_cu_quantize(MPS_IN(0), MPS_IN(1), MPS_HAS(2) ? MPS_IN(2) : NULL, MPS_OUT(0), mps_shape_numel(x),
                                 inner, per, dq, bytes == MPS_I8, s->stream));
    return MPS_OK;
}

enum mps_status mps_cuda_pool_bytes(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    struct mps_cu_window w = mps_cuda_window(&n->p.pool.win, x, &MPS_OUTV(0)->shape);
    MPS_CU_CHECK(
        mps_cu_pool_bytes(MPS_IN(0), MPS_OUT(0), x->dim[0] * x->dim[1], &w, MPS_INV(0)->dtype == MPS_I8, s->stream));
    return MPS_OK;
}

mps_cuda_launcher mps_cuda_quant_launcher(enum mps_op op)
{
    switch (op) {
    case MPS_OP_QLINEAR_CONV:
    case MPS_OP_QLINEAR_MATMUL: return mps_cuda_qlinear;
    case MPS_OP_DEQUANTIZE:
    case MPS_OP_QUANTIZE: return mps_cuda_quantize;
    default: return NULL;
    }
}
