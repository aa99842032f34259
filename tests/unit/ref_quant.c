/* ref_quant.c: the int8 products' reference (ops.def's QLinearConv and
   QLinearMatMul) from ONNX's definition, in double: the zero points taken
   from the integers, the product (ref_op's Conv or MatMul: exact, the
   values are small integers), times x_scale w_scale (the int32 bias added
   before, an f32 one after), the fused Relu, Clip or LeakyRelu, then
   quantized: round half to even of the value over y_scale, plus y's zero
   point, saturated to the output's type. */
#include <math.h>
#include <stdlib.h>

#include "ref.h"
#include "ref_window.h"

static double ref_q1(const struct ref_tensor *t, int64_t i)
{
    return !t->d ? 0.0 : ref_numel(&t->shape) == 1 ? t->d[0] : t->d[i];
}

void ref_qlinear(enum mps_op op, const union mps_op_params *p, const struct ref_tensor *in, int n_in,
                 struct ref_tensor *out)
{
    bool conv = op == MPS_OP_QLINEAR_CONV;
    const struct ref_tensor *x = &in[0], *w = &in[3], *b = n_in > 8 && in[8].d ? &in[8] : NULL;
    int64_t nx = ref_numel(&x->shape), nw = ref_numel(&w->shape), ny = ref_numel(&out[0].shape);
    int64_t ch = conv ? w->shape.dim[0] : w->shape.dim[w->shape.ndim - 1], per = conv ? nw / ch : 1;
    struct ref_tensor s[2] = {{.shape = x->shape, .d = malloc(sizeof(double) * (size_t)nx)},
                              {.shape = w->shape, .d = malloc(sizeof(double) * (size_t)nw)}};
    struct ref_tensor acc = {.shape = out[0].shape, .d = malloc(sizeof(double) * (size_t)ny)};
    for (int64_t i = 0; i < nx; i++)
        s[0].d[i] = x->d[i] - ref_q1(&in[2], 0);
    for (int64_t i = 0; i < nw; i++)
        s[1].d[i] = w->d[i] - ref_q1(&in[5], conv ? i / per : i % ch);
    union mps_op_params plain = *p;
    plain.conv.act.on = false, plain.gemm.act.on = false;
    ref_op(conv ? MPS_OP_CONV : MPS_OP_MATMUL, &plain, s, 2, &acc, 1);
    const struct mps_fused_act *act = conv ? &p->conv.act : &p->gemm.act;
    int64_t plane = conv ? ny / out[0].shape.dim[0] / ch : 1;
    for (int64_t o = 0; o < ny; o++) {
        int64_t m = conv ? o / plane % ch : o % ch;
        double scale = ref_q1(&in[1], 0) * ref_q1(&in[4], m), v = acc.d[o];
        v = b && b->integer ? (v + b->d[m]) * scale : v * scale + (b ? b->d[m] : 0.0);
        if (act->on && act->op == MPS_OP_RELU)
            v = v > 0 ? v : 0;
        else if (act->on && act->op == MPS_OP_CLIP)
            v = fmin(fmax(v, act->p.alpha), act->p.beta);
        else if (act->on && act->op == MPS_OP_LEAKY_RELU)
            v = v < 0 ? v * act->p.alpha : v;
        if (n_in > 6 && in[6].d) {
            bool sgn = out[0].dt == MPS_I8;
            v = nearbyint(v / in[6].d[0]) + ref_q1(&in[7], 0);
            v = fmin(fmax(v, sgn ? -128 : 0), sgn ? 127 : 255);
        }
        out[0].d[o] = v;
    }
    free(s[0].d), free(s[1].d), free(acc.d);
}

/* DequantizeLinear and QuantizeLinear (ops.def's DEQUANTIZE, QUANTIZE) by ONNX's definition. */
void ref_qcast(enum mps_op op, int64_t axis, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    int64_t n = ref_numel(xs), per = ref_numel(&in[1].shape), inner = 1;
    axis += axis < 0 ? xs->ndim : 0;
    for (int d = (int)axis + 1; d < xs->ndim; d++)
        inner *= xs->dim[d];
    bool sgn = out[0].dt == MPS_I8;
    for (int64_t i = 0; i < n; i++) {
        int64_t c = per > 1 ? i / inner % per : 0;
        double s = in[1].d[c], z = n_in > 2 && in[2].d ? ref_q1(&in[2], c) : 0.0, x = in[0].d[i];
        if (op == MPS_OP_DEQUANTIZE) {
            out[0].d[i] = (x - z) * s;
            continue;
        }
        double q = isnan(x) ? 0.0 : nearbyint((double)(float)(x / s)) + z;
        out[0].d[i] = fmin(fmax(q, sgn ? -128 : 0), sgn ? 127 : 255);
    }
}

/* Value v (a dequantized float, in double) quantized by scale s and zero
   point z into out's type, as ref_qcast. */
static double ref_qto(double v, double s, double z, enum mps_dtype dt)
{
    bool sgn = dt == MPS_I8;
    double q = nearbyint((double)(float)(v / s)) + z;
    return fmin(fmax(q, sgn ? -128 : 0), sgn ? 127 : 255);
}

void ref_qelementwise(enum mps_op op, const union mps_op_params *p, const struct ref_tensor *in, int n_in,
                      struct ref_tensor *out)
{
    int64_t ny = ref_numel(&out[0].shape);
    if (op == MPS_OP_QLINEAR_UNARY) { /* y = Q(op(DQ(x))), or op(DQ(x)) without y's scale */
        const struct mps_fused_act *act = &p->binary.act;
        for (int64_t i = 0; i < ny; i++) {
            double v = ref_unary1(act->op, &act->p, (in[0].d[i] - ref_q1(&in[2], 0)) * in[1].d[0]);
            out[0].d[i] = in[3].d ? ref_qto(v, in[3].d[0], ref_q1(&in[4], 0), out[0].dt) : v;
        }
        return;
    }
    if (op == MPS_OP_QLINEAR_GAP) { /* y = Q(mean of each plane of DQ(x)) */
        int64_t plane = ny ? ref_numel(&in[0].shape) / ny : 0;
        for (int64_t o = 0; o < ny; o++) {
            double sum = 0;
            for (int64_t i = 0; i < plane; i++)
                sum += (in[0].d[o * plane + i] - ref_q1(&in[2], 0)) * in[1].d[0];
            out[0].d[o] = ref_qto(sum / (double)plane, in[3].d[0], ref_q1(&in[4], 0), out[0].dt);
        }
        return;
    }
    if (op == MPS_OP_QLINEAR_MUL) { /* b of a's shape, or one value a run of inner of a's */
        int64_t nb = ref_numel(&in[3].shape), inner = nb ? ny / nb : 1;
        for (int64_t i = 0; i < ny; i++) {
            double v =
                (in[0].d[i] - ref_q1(&in[2], 0)) * in[1].d[0] * (in[3].d[i / inner] - ref_q1(&in[5], 0)) * in[4].d[0];
            out[0].d[i] = ref_qto(v, in[6].d[0], ref_q1(&in[7], 0), out[0].dt);
        }
        return;
    }
    if (op == MPS_OP_QLINEAR_ADD) {
        const struct mps_fused_act *act = &p->binary.act;
        for (int64_t i = 0; i < ny; i++) {
            double v = (in[0].d[i] - ref_q1(&in[2], 0)) * in[1].d[0] + (in[3].d[i] - ref_q1(&in[5], 0)) * in[4].d[0];
            if (act->on && act->op == MPS_OP_RELU)
                v = v > 0 ? v : 0;
            else if (act->on && act->op == MPS_OP_CLIP)
                v = fmin(fmax(v, act->p.alpha), act->p.beta);
            out[0].d[i] = ref_qto(v, in[6].d[0], ref_q1(&in[7], 0), out[0].dt);
        }
        return;
    }
    int axis = (int)(p->axis.axis < 0 ? p->axis.axis + out[0].shape.ndim : p->axis.axis), parts = (n_in - 2) / 3;
    int64_t outer = 1, run = ny, at = 0;
    for (int d = 0; d < axis; d++)
        outer *= out[0].shape.dim[d];
    run = outer ? ny / outer : 0;
    for (int k = 0; k < parts; k++) { /* part k's runs into y's, at its place */
        const struct ref_tensor *x = &in[2 + 3 * k];
        int64_t inner = outer ? ref_numel(&x->shape) / outer : 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                double v = (x->d[o * inner + i] - ref_q1(&in[4 + 3 * k], 0)) * in[3 + 3 * k].d[0];
                out[0].d[o * run + at + i] = ref_qto(v, in[0].d[0], ref_q1(&in[1], 0), out[0].dt);
            }
        at += inner;
    }
}
