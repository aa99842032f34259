/* onnx_quant.c: the quantization ops, loaded as compositions that compute
   in f32 on every backend, with notes (graph.h) from which the cpu's
   quantization pass (passes.c) makes int8 products: dequantizing is
   (Cast(x) - zero point) * scale, quantizing Cast(Clip(Round(x / scale) +
   zero point)) to the zero point's integer type (round half to even, then
   saturate, as ONNX defines it). The integer products (MatMulInteger,
   ConvInteger, QLinearMatMul, QLinearConv) subtract the zero points and
   multiply or convolve the integers held in f32, which is exact while every
   partial sum stays below 2^24: the Integer forms, whose int32 outputs are
   exact by definition, are refused by name where the operands' types and the
   reduced length could pass it; the QLinear forms requantize acc * (a_scale
   * b_scale) by y_scale, where the accumulator's relative error past 2^24
   (6e-8) moves a result by one step only at a rounding tie. Per-axis scales
   and zero points are reshaped to broadcast along their axis. A
   DequantizeLinear of constants (a model's weights) is computed at load in
   one pass, as the composition rounds it. Bad parameters (a scale not
   positive and finite, a zero point of another type, per-axis lengths that
   disagree) are load errors naming the node. */
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

/* *x cast to dtype to (in place). */
static enum mps_status mps_q_cast(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int *x, enum mps_dtype to,
                                  struct mps_error *err)
{
    union mps_op_params p;
    mps_op_params_default(MPS_OP_CAST, &p);
    p.cast.to = to;
    return mps_onnx_add(c, n, MPS_OP_CAST, x, 1, &p, x, err);
}

/* a op b into *out. */
static enum mps_status mps_q_bin(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, enum mps_op op, int a, int b,
                                 int *out, struct mps_error *err)
{
    return mps_onnx_add(c, n, op, (int[]){a, b}, 2, NULL, out, err);
}

/* Refuses a scale input i of n that holds a value that is not positive and
   finite (one known at load): quantizing divides by it. */
static enum mps_status mps_q_scale_ok(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i,
                                      struct mps_error *err)
{
    const struct mps_value *v = &c->g->values[n->in[i]];
    if (!v->data || !v->shape_known)
        return MPS_OK;
    for (int64_t k = 0; k < mps_shape_numel(&v->shape); k++) {
        double s = mps_elem_get(v->data, v->dtype, k);
        if (!(s > 0 && s <= 3.4e38))
            return mps_onnx_fail(n, err,
                                 "its scale (input %d, '%s') holds %g at %lld: a scale must be positive and "
                                 "finite",
                                 i, v->name, s, (long long)k);
    }
    return MPS_OK;
}

/* Checks scale or zero point input i of n for tensor xs quantized along
   axis: a scalar, one element or a 1-D one of xs->dim[axis] values (*len: how
   many); a scale's values positive and finite; a zero point of xs's type
   (xt; MPS_DTYPE_COUNT: any). */
static enum mps_status mps_q_check(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i,
                                   const struct mps_shape *xs, enum mps_dtype xt, int64_t axis, bool zero_point,
                                   int64_t *len, struct mps_error *err)
{
    struct mps_shape s;
    int rank = xs->ndim;
    enum mps_status st = mps_onnx_shape_of(c, n, n->in[i], &s, err); /* fails on an omitted input */
    if (st || (!zero_point && (st = mps_q_scale_ok(c, n, i, err))))
        return st;
    enum mps_dtype zt = c->g->values[n->in[i]].dtype;
    if (zero_point && xt != MPS_DTYPE_COUNT && zt != xt)
        return mps_onnx_fail(n, err,
                             "its zero point (input %d) is %s and the tensor it belongs to %s: they must be of "
                             "one type",
                             i, mps_dtype_name(zt), mps_dtype_name(xt));
    *len = 1;
    if (mps_shape_numel(&s) == 1 && s.ndim <= 1)
        return MPS_OK;
    if (s.ndim != 1 || axis < -rank || axis >= rank)
        return mps_onnx_fail(n, err, "input %d must be a scalar or 1-D along axis %lld of a rank-%d tensor", i,
                             (long long)axis, rank);
    axis += axis < 0 ? rank : 0;
    if (xs->dim[axis] >= 0 && s.dim[0] != xs->dim[axis])
        return mps_onnx_fail(n, err, "input %d has %lld values, axis %lld of the tensor it quantizes %lld", i,
                             (long long)s.dim[0], (long long)axis, (long long)xs->dim[axis]);
    *len = s.dim[0];
    return MPS_OK;
}

/* Scale or zero point v (input i) of tensor xs quantized along axis,
   checked (mps_q_check): a scalar or one element stays, a 1-D one becomes
   [len, 1, ...] (rank - axis - 1 ones) to broadcast there; a zero point is
   cast to f32 too. */
static enum mps_status mps_q_param(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i,
                                   const struct mps_shape *xs, int64_t axis, bool zero_point, int *v,
                                   struct mps_error *err)
{
    int64_t len;
    int rank = xs->ndim;
    *v = n->in[i];
    enum mps_status st = mps_q_check(c, n, i, xs, MPS_DTYPE_COUNT, axis, zero_point, &len, err);
    if (st || (zero_point && (st = mps_q_cast(c, n, v, MPS_F32, err))) || len == 1)
        return st;
    axis += axis < 0 ? rank : 0;
    struct mps_shape b = {rank - (int)axis, {len}};
    for (int d = 1; d < b.ndim; d++)
        b.dim[d] = 1;
    return mps_onnx_reshape(c, n, v, &b, err);
}

/* The f32 value of integer tensor x minus its zero point (input zi of n, or
   none when zi is past its inputs or omitted; of x's type), along axis. */
static enum mps_status mps_q_shifted(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int x, int zi, int64_t axis,
                                     int *out, struct mps_error *err)
{
    struct mps_shape s;
    int64_t len;
    int z;
    enum mps_status st = mps_onnx_shape_of(c, n, x, &s, err);
    *out = x;
    if (st || zi >= n->n_in || n->in[zi] < 0)
        return st ? st : mps_q_cast(c, n, out, MPS_F32, err);
    if ((st = mps_q_check(c, n, zi, &s, c->g->values[x].dtype, axis, true, &len, err)) ||
        (st = mps_q_cast(c, n, out, MPS_F32, err)) || (st = mps_q_param(c, n, zi, &s, axis, true, &z, err)))
        return st;
    return mps_q_bin(c, n, MPS_OP_SUB, *out, z, out, err);
}

/* The lowest and highest values of integer dtype dt. */
static bool mps_q_range(enum mps_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case MPS_U8: return *lo = 0, *hi = 255, true;
    case MPS_I8: return *lo = -128, *hi = 127, true;
    case MPS_U16: return *lo = 0, *hi = 65535, true;
    case MPS_I16: return *lo = -32768, *hi = 32767, true;
    case MPS_I32: return *lo = -2147483648.0, *hi = 2147483647.0, true;
    default: return false;
    }
}

/* x (f32) quantized by scale input si and zero point input zi (omitted:
   uint8, 0) along axis into *out (out_v >= 0: that value). */
static enum mps_status mps_q_quantize(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int x, int si, int zi,
                                      int64_t axis, int out_v, int *out, struct mps_error *err)
{
    struct mps_shape s, zs;
    bool zp = zi < n->n_in && n->in[zi] >= 0;
    double lo, hi;
    int scale, z, r;
    enum mps_status st = mps_onnx_shape_of(c, n, x, &s, err);
    if (st || (zp && (st = mps_onnx_shape_of(c, n, n->in[zi], &zs, err)))) /* zs: its dtype inferred */
        return st;
    enum mps_dtype dt = zp ? c->g->values[n->in[zi]].dtype : MPS_U8;
    if (!mps_q_range(dt, &lo, &hi))
        return mps_onnx_fail(n, err, "its zero point is %s: uint8, int8, uint16, int16 and int32 are supported",
                             mps_dtype_name(dt));
    if ((st = mps_q_param(c, n, si, &s, axis, false, &scale, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_DIV, x, scale, &r, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_ROUND, &r, 1, NULL, &r, err)) ||
        (zp &&
         ((st = mps_q_param(c, n, zi, &s, axis, true, &z, err)) || (st = mps_q_bin(c, n, MPS_OP_ADD, r, z, &r, err)))))
        return st;
    struct mps_shape one = {0, {0}};
    float bounds[2] = {(float)lo, (float)hi};
    int bl = mps_onnx_const(c, n->name, MPS_F32, &one, &bounds[0]),
        bh = mps_onnx_const(c, n->name, MPS_F32, &one, &bounds[1]);
    if (bl < 0 || bh < 0 || (st = mps_onnx_add(c, n, MPS_OP_CLIP, (int[]){r, bl, bh}, 3, NULL, &r, err)))
        return st ? st : mps_onnx_oom(err);
    union mps_op_params p;
    mps_op_params_default(MPS_OP_CAST, &p);
    p.cast.to = dt;
    if (out_v < 0)
        return mps_onnx_add(c, n, MPS_OP_CAST, &r, 1, &p, out, err);
    *out = out_v;
    return mps_graph_add_node(c->g, MPS_OP_CAST, n->name, &r, 1, &out_v, 1, &p, err);
}

/* Notes what node n composed (graph.h's mps_qnote) for the int8 pass: its
   inputs from first on (count of them), out, axis; QLINEAR: op and p. */
static enum mps_status mps_q_note(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, enum mps_qnote_kind kind,
                                  const int *in, int count, int out, int64_t axis, enum mps_op op,
                                  const union mps_op_params *p, struct mps_error *err)
{
    struct mps_qnote note = {.kind = kind, .out = out, .res = n->n_out ? n->out[0] : -1, .axis = axis, .op = op};
    for (int i = 0; i < 9; i++)
        note.in[i] = i < count && i < n->n_in ? in[i] : -1;
    if (p)
        note.p = *p;
    return mps_graph_add_qnote(c->g, &note) ? MPS_OK : mps_onnx_oom(err);
}

/* The row ends in an Identity of x. */
static enum mps_status mps_q_result(struct mps_onnx_node *n, union mps_op_params *p, int x)
{
    n->in[0] = x, n->n_in = 1;
    mps_op_params_default(MPS_OP_IDENTITY, p);
    return MPS_OK;
}

/* axis (default 1); block_size must be 0, saturate 1 (float8 only); the
   zero point (input 2), where given, of the scale's (input 1) shape. */
static enum mps_status mps_q_axis(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int64_t *axis,
                                  struct mps_error *err)
{
    int64_t block, saturate;
    struct mps_shape ss, zs;
    enum mps_status st = MPS_OK;
    if (n->n_in > 2 && n->in[2] >= 0 && n->in[1] >= 0 &&
        (!(st = mps_onnx_shape_of(c, n, n->in[1], &ss, err)) && !(st = mps_onnx_shape_of(c, n, n->in[2], &zs, err))) &&
        mps_shape_numel(&ss) != mps_shape_numel(&zs))
        return mps_onnx_fail(n, err, "its scale has %lld values and its zero point %lld: they must be of one shape",
                             (long long)mps_shape_numel(&ss), (long long)mps_shape_numel(&zs));
    if (st || (st = mps_attr_int(n, "axis", 1, axis, err)))
        return st;
    if ((st = mps_attr_int(n, "block_size", 0, &block, err)) || (st = mps_attr_int(n, "saturate", 1, &saturate, err)))
        return st;
    if (block != 0)
        return mps_onnx_fail(n, err, "blocked quantization (block_size %lld) is not supported", (long long)block);
    if (saturate != 1)
        return mps_onnx_fail(n, err, "saturate 0 applies to float8 types, which mpsrun does not have");
    return MPS_OK;
}

static enum mps_status mps_map_quantize(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    int64_t axis;
    int x = n->in[0], y;
    if (x < 0 || n->n_in < 2 || n->in[1] < 0) /* x omitted read values[-1] (the fuzzer's find) */
        return mps_onnx_fail(n, err, "an input it needs is omitted");
    enum mps_status st = mps_q_axis(c, n, &axis, err);
    if (st || (c->g->values[x].dtype != MPS_F32 && (st = mps_q_cast(c, n, &x, MPS_F32, err))) ||
        (st = mps_q_quantize(c, n, x, 1, 2, axis, -1, &y, err)) ||
        (st = mps_q_note(c, n, MPS_QNOTE_Q, (int[]){x, n->in[1], n->n_in > 2 ? n->in[2] : -1}, 3, y, axis,
                         MPS_OP_IDENTITY, NULL, err)))
        return st;
    return mps_q_result(n, p, y);
}

/* The dequantized value of constant x (integers), scale (f32) and zero
   point z (NULL: 0) along axis, as the composition computes it: (f32(x) -
   f32(z)) * scale, each step rounded as there. Folded here so that the
   weights of a quantized model cost one pass at load, not one per step. */
static int mps_q_fold(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int64_t axis)
{
    int v = mps_onnx_const(c, n->name, MPS_F32, &c->g->values[n->in[0]].shape, NULL);
    if (v < 0) /* values looked up after it: adding one may move them */
        return -1;
    const struct mps_value *x = &c->g->values[n->in[0]], *scale = &c->g->values[n->in[1]],
                           *z = n->n_in > 2 && n->in[2] >= 0 ? &c->g->values[n->in[2]] : NULL;
    float *y = (float *)c->g->values[v].data;
    int64_t per = mps_shape_numel(&scale->shape), inner = 1, total = mps_shape_numel(&x->shape);
    axis += axis < 0 ? x->shape.ndim : 0;
    for (int d = (int)axis + 1; per > 1 && d < x->shape.ndim; d++)
        inner *= x->shape.dim[d];
    inner = per > 1 ? inner : total;
    const float *s = scale->data;
    for (int64_t i0 = 0; i0 < total; i0 += inner) { /* a run of one channel */
        int64_t ch = per > 1 ? i0 / inner % per : 0;
        float zf = z ? (float)mps_elem_get_int(z->data, z->dtype, ch) : 0.0f, sc = s[ch], *yr = y + i0;
        switch (x->dtype) {
        case MPS_I8:
            for (int64_t i = 0; i < inner; i++)
                yr[i] = ((float)((const int8_t *)x->data)[i0 + i] - zf) * sc;
            break;
        case MPS_U8:
            for (int64_t i = 0; i < inner; i++)
                yr[i] = ((float)((const uint8_t *)x->data)[i0 + i] - zf) * sc;
            break;
        default:
            for (int64_t i = 0; i < inner; i++)
                yr[i] = ((float)mps_elem_get_int(x->data, x->dtype, i0 + i) - zf) * sc;
        }
    }
    return v;
}

static enum mps_status mps_map_dequantize(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          struct mps_error *err)
{
    int64_t axis;
    int x, scale;
    struct mps_shape s;
    enum mps_status st = mps_q_axis(c, n, &axis, err);
    const struct mps_value *vs = n->n_in > 1 && n->in[1] >= 0 ? &c->g->values[n->in[1]] : NULL;
    int zi = n->n_in > 2 && n->in[2] >= 0 ? n->in[2] : -1;
    double lo, hi;
    enum mps_dtype xt = n->in[0] >= 0 ? c->g->values[n->in[0]].dtype : MPS_F32; /* omitted: the composition says */
    if (!st && n->in[0] >= 0 && c->g->values[n->in[0]].data && vs && vs->data && vs->dtype == MPS_F32 &&
        (zi < 0 || c->g->values[zi].data) && mps_q_range(xt, &lo, &hi) &&
        !(st = mps_onnx_shape_of(c, n, n->in[0], &s, err))) { /* weights: checked as the composition checks them */
        int64_t len;
        if ((st = mps_q_check(c, n, 1, &s, MPS_DTYPE_COUNT, axis, false, &len, err)) ||
            (zi >= 0 && (st = mps_q_check(c, n, 2, &s, xt, axis, true, &len, err))))
            return st;
        if ((x = mps_q_fold(c, n, axis)) < 0)
            return mps_onnx_oom(err);
        if ((st = mps_q_note(c, n, MPS_QNOTE_DQ, n->in, 3, x, axis, MPS_OP_IDENTITY, NULL, err)))
            return st;
        return mps_q_result(n, p, x);
    }
    if (st || (st = mps_onnx_shape_of(c, n, n->in[0], &s, err)) ||
        (st = mps_q_shifted(c, n, n->in[0], 2, axis, &x, err)) ||
        (st = mps_q_param(c, n, 1, &s, axis, false, &scale, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, x, scale, &x, err)) ||
        (st = mps_q_note(c, n, MPS_QNOTE_DQ, n->in, 3, x, axis, MPS_OP_IDENTITY, NULL, err)))
        return st;
    return mps_q_result(n, p, x);
}

/* Refuses a product whose integer partial sums could pass 2^24 (f32 holds
   them exactly below): k terms of inputs a and b (integer dtypes). */
static enum mps_status mps_q_exact(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int a, int b, int64_t k,
                                   struct mps_error *err)
{
    double alo, ahi, blo, bhi;
    if (a < 0 || b < 0) /* ConvInteger's x is not shape-checked before (the fuzzer's find) */
        return mps_onnx_fail(n, err, "an input it needs is omitted");
    if (!mps_q_range(c->g->values[a].dtype, &alo, &ahi) || !mps_q_range(c->g->values[b].dtype, &blo, &bhi))
        return mps_onnx_fail(n, err, "its inputs must be 8- or 16-bit integers");
    double ma = ahi - alo, mb = bhi - blo; /* |x - zero point| at most */
    if ((double)k * ma * mb >= 16777216.0)
        return mps_onnx_fail(n, err,
                             "a sum of %lld products of its types could pass 2^24, which mpsrun's f32 "
                             "composition holds exactly (int8 kernels: not yet)",
                             (long long)k);
    return MPS_OK;
}

/* MatMulInteger (q false) and QLinearMatMul (q true): inputs a, b and their
   zero points at ai, ai + 1 (MatMulInteger: 2, 3) or 2, 5 (QLinear). */
static enum mps_status mps_map_matmul_q(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    bool q = !strcmp(n->np->op_type, "QLinearMatMul");
    int ia = 0, ib = q ? 3 : 1, za = q ? 2 : 2, zb = q ? 5 : 3, a, b, acc;
    struct mps_shape sa, sb;
    enum mps_status st;
    if ((st = mps_onnx_shape_of(c, n, n->in[ia], &sa, err)) || (st = mps_onnx_shape_of(c, n, n->in[ib], &sb, err)) ||
        (!q && (st = mps_q_exact(c, n, n->in[ia], n->in[ib], sa.ndim ? sa.dim[sa.ndim - 1] : 1, err))) ||
        (st = mps_q_shifted(c, n, n->in[ia], za, -2, &a, err)) ||
        (st = mps_q_shifted(c, n, n->in[ib], zb, -1, &b, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MATMUL, a, b, &acc, err)))
        return st;
    if (!q) {
        union mps_op_params cast;
        mps_op_params_default(MPS_OP_CAST, &cast);
        cast.cast.to = MPS_I32;
        n->in[0] = acc, n->n_in = 1;
        *p = cast;
        n->last_op = MPS_OP_CAST;
        return MPS_OK;
    }
    int sa_v, sb_v, y;
    if ((st = mps_q_param(c, n, 1, &sa, -2, false, &sa_v, err)) ||
        (st = mps_q_param(c, n, 4, &sb, -1, false, &sb_v, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, acc, sa_v, &acc, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, acc, sb_v, &acc, err)) ||
        (st = mps_q_quantize(c, n, acc, 6, 7, 1, -1, &y, err)) ||
        (st = mps_q_note(c, n, MPS_QNOTE_QLINEAR, n->in, 8, y, 0, MPS_OP_QLINEAR_MATMUL, NULL, err)))
        return st;
    return mps_q_result(n, p, y);
}

/* ConvInteger (x, w, x_zero_point, w_zero_point) and QLinearConv (x, x_scale,
   x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B): the
   weight's zero point and scale per output channel. */
static enum mps_status mps_map_conv_q(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    bool q = !strcmp(n->np->op_type, "QLinearConv");
    int iw = q ? 3 : 1, zx = q ? 2 : 2, zw = q ? 5 : 3, x, w, acc, in[3];
    struct mps_shape sw;
    union mps_op_params conv;
    mps_op_params_default(MPS_OP_CONV, &conv);
    enum mps_status st = mps_onnx_conv_params(c, n, &conv, err);
    if (st || (st = mps_onnx_shape_of(c, n, n->in[iw], &sw, err)))
        return st;
    int64_t k = 1;
    for (int d = 1; d < sw.ndim; d++)
        k *= sw.dim[d];
    if ((!q && (st = mps_q_exact(c, n, n->in[0], n->in[iw], k, err))) ||
        (st = mps_q_shifted(c, n, n->in[0], zx, 1, &x, err)) || (st = mps_q_shifted(c, n, n->in[iw], zw, 0, &w, err)))
        return st;
    in[0] = x, in[1] = w;
    int n_in = 2;
    if (q && n->n_in > 8 && n->in[8] >= 0) { /* the int32 bias, in the accumulator's units */
        in[2] = n->in[8];
        if ((st = mps_q_cast(c, n, &in[2], MPS_F32, err)))
            return st;
        n_in = 3;
    }
    if ((st = mps_onnx_add(c, n, MPS_OP_CONV, in, n_in, &conv, &acc, err)))
        return st;
    if (!q) {
        mps_op_params_default(MPS_OP_CAST, p);
        p->cast.to = MPS_I32;
        n->in[0] = acc, n->n_in = 1;
        n->last_op = MPS_OP_CAST;
        return MPS_OK;
    }
    int sx, sw_v, y;
    struct mps_shape sacc;
    if ((st = mps_onnx_shape_of(c, n, acc, &sacc, err)) || (st = mps_q_param(c, n, 1, &sacc, 1, false, &sx, err)) ||
        (st = mps_q_param(c, n, 4, &sacc, 1, false, &sw_v, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, acc, sx, &acc, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, acc, sw_v, &acc, err)) ||
        (st = mps_q_quantize(c, n, acc, 6, 7, 1, -1, &y, err)) ||
        (st = mps_q_note(c, n, MPS_QNOTE_QLINEAR, n->in, 9, y, 0, MPS_OP_QLINEAR_CONV, &conv, err)))
        return st;
    return mps_q_result(n, p, y);
}

/* DynamicQuantizeLinear: scale (max(0, max x) - min(0, min x)) / 255, zero
   point Round(-min / scale) saturated to [0, 255], y quantized by them
   (uint8). Outputs 1 and 2 written here, output 0 by the row. */
static enum mps_status mps_map_dyn_quant(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                         struct mps_error *err)
{
    union mps_op_params red;
    struct mps_shape one = {0, {0}};
    float k[4] = {0, 255, 0, 255};
    int zero = mps_onnx_const(c, n->name, MPS_F32, &one, &k[0]), top = mps_onnx_const(c, n->name, MPS_F32, &one, &k[1]);
    int mx, mn, range, scale, zf, r;
    if (zero < 0 || top < 0)
        return mps_onnx_oom(err);
    mps_op_params_default(MPS_OP_REDUCE_MAX, &red);
    red.reduce.keepdims = false;
    enum mps_status st;
    if ((st = mps_onnx_add(c, n, MPS_OP_REDUCE_MAX, &n->in[0], 1, &red, &mx, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_REDUCE_MIN, &n->in[0], 1, &red, &mn, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MAX, mx, zero, &mx, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MIN, mn, zero, &mn, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_SUB, mx, mn, &range, err)))
        return st;
    int sc = n->n_out > 1 && n->out[1] >= 0 ? n->out[1] : mps_onnx_temp(c, n->name);
    scale = sc;
    if (sc < 0 || (st = mps_graph_add_node(c->g, MPS_OP_DIV, n->name, (int[]){range, top}, 2, &scale, 1, NULL, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_SUB, zero, mn, &zf, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_DIV, zf, scale, &zf, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_ROUND, &zf, 1, NULL, &zf, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_CLIP, (int[]){zf, zero, top}, 3, NULL, &zf, err)))
        return st ? st : mps_onnx_oom(err);
    if (n->n_out > 2 && n->out[2] >= 0) {
        union mps_op_params cast;
        mps_op_params_default(MPS_OP_CAST, &cast);
        cast.cast.to = MPS_U8;
        if ((st = mps_graph_add_node(c->g, MPS_OP_CAST, n->name, &zf, 1, &n->out[2], 1, &cast, err)))
            return st;
    }
    if ((st = mps_q_bin(c, n, MPS_OP_DIV, n->in[0], scale, &r, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_ROUND, &r, 1, NULL, &r, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_ADD, r, zf, &r, err)) ||
        (st = mps_onnx_add(c, n, MPS_OP_CLIP, (int[]){r, zero, top}, 3, NULL, &r, err)))
        return st;
    mps_op_params_default(MPS_OP_CAST, p);
    p->cast.to = MPS_U8;
    n->in[0] = r, n->n_in = 1, n->n_out = 1;
    n->last_op = MPS_OP_CAST;
    return MPS_OK;
}

/* Input xi dequantized by scale si and zero point zi (a scalar each, or
   along axis) into *out (f32). */
static enum mps_status mps_q_deq(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int xi, int si, int zi,
                                 int64_t axis, int *out, struct mps_error *err)
{
    struct mps_shape s;
    int scale;
    enum mps_status st = mps_onnx_shape_of(c, n, n->in[xi], &s, err);
    if (st || (st = mps_q_shifted(c, n, n->in[xi], zi, axis, out, err)) ||
        (st = mps_q_param(c, n, si, &s, axis, false, &scale, err)))
        return st;
    return mps_q_bin(c, n, MPS_OP_MUL, *out, scale, out, err);
}

/* QGemm (com.microsoft): (A' - a_zero_point) (B' - b_zero_point) plus the
   int32 bias C, times alpha * a_scale * b_scale (b's per column), then
   quantized by y_scale and y_zero_point where they are given, else f32. */
static enum mps_status mps_map_qgemm(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    int64_t ta, tb;
    float alpha;
    int a, b, acc, sa, sb;
    enum mps_status st = mps_attr_int(n, "transA", 0, &ta, err);
    if (st || (st = mps_attr_int(n, "transB", 0, &tb, err)) || (st = mps_attr_float(n, "alpha", 1, &alpha, err)))
        return st;
    if (n->n_in < 6)
        return mps_onnx_fail(n, err, "QGemm needs A, a_scale, a_zero_point, B, b_scale and b_zero_point");
    union mps_op_params tr;
    mps_op_params_default(MPS_OP_TRANSPOSE, &tr);
    if ((st = mps_q_shifted(c, n, n->in[0], 2, 0, &a, err)) ||
        (st = mps_q_shifted(c, n, n->in[3], 5, tb ? 0 : 1, &b, err)) ||
        (ta && (st = mps_onnx_add(c, n, MPS_OP_TRANSPOSE, &a, 1, &tr, &a, err))) ||
        (tb && (st = mps_onnx_add(c, n, MPS_OP_TRANSPOSE, &b, 1, &tr, &b, err))) ||
        (st = mps_q_bin(c, n, MPS_OP_MATMUL, a, b, &acc, err)))
        return st;
    if (n->n_in > 6 && n->in[6] >= 0) {
        int bias = n->in[6];
        if ((st = mps_q_cast(c, n, &bias, MPS_F32, err)) || (st = mps_q_bin(c, n, MPS_OP_ADD, acc, bias, &acc, err)))
            return st;
    }
    struct mps_shape one = {0, {0}}, sacc, cols;
    int ca = mps_onnx_const(c, n->name, MPS_F32, &one, &alpha);
    if (ca < 0 || (st = mps_onnx_shape_of(c, n, acc, &sacc, err)))
        return st ? st : mps_onnx_oom(err);
    cols = (struct mps_shape){1, {sacc.dim[sacc.ndim - 1]}};
    if ((st = mps_q_param(c, n, 1, &sacc, 0, false, &sa, err)) ||
        (st = mps_q_param(c, n, 4, &cols, 0, false, &sb, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, acc, sa, &acc, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, acc, sb, &acc, err)) ||
        (st = mps_q_bin(c, n, MPS_OP_MUL, acc, ca, &acc, err)))
        return st;
    if (n->n_in > 7 && n->in[7] >= 0 && (st = mps_q_quantize(c, n, acc, 7, 8, 1, -1, &acc, err)))
        return st;
    return mps_q_result(n, p, acc);
}

/* The com.microsoft QLinear forms of an elementwise op, a pool or Concat:
   each input dequantized, the float op, the result quantized. */
static enum mps_status mps_map_qlinear(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    static const struct {
        const char *op;
        enum mps_op to;
        int n_x; /* quantized inputs (x, scale, zero point), then y_scale, y_zero_point; Concat: -1 */
    } forms[] = {{"QLinearAdd", MPS_OP_ADD, 2},
                 {"QLinearMul", MPS_OP_MUL, 2},
                 {"QLinearSigmoid", MPS_OP_SIGMOID, 1},
                 {"QLinearLeakyRelu", MPS_OP_LEAKY_RELU, 1},
                 {"QLinearGlobalAveragePool", MPS_OP_GLOBAL_AVERAGE_POOL, 1},
                 {"QLinearConcat", MPS_OP_CONCAT, -1},
                 {"QLinearSoftmax", MPS_OP_SOFTMAX, 1}};
    size_t f = 0;
    while (strcmp(forms[f].op, n->np->op_type))
        f++;
    int64_t last = 0, axis = 0, opset = 13;
    float alpha = 0.01f;
    bool softmax = forms[f].to == MPS_OP_SOFTMAX;
    enum mps_status st = mps_attr_int(n, "channels_last", 0, &last, err);
    if (st || (st = mps_attr_int(n, "axis", softmax ? -1 : 0, &axis, err)) ||
        (st = mps_attr_float(n, "alpha", 0.01f, &alpha, err)) || (st = mps_attr_int(n, "opset", 13, &opset, err)))
        return st;
    if (last)
        return mps_onnx_fail(n, err, "channels_last is not supported");
    struct mps_shape xs;
    if (softmax && opset < 13 && (st = mps_onnx_shape_of(c, n, n->in[0], &xs, err)))
        return st;
    if (softmax && opset < 13 && axis != -1 && axis != xs.ndim - 1) /* before 13: over the dims from axis on */
        return mps_onnx_fail(n, err, "opset %lld's softmax over the dims from axis %lld on is not supported",
                             (long long)opset, (long long)axis);
    bool cat = forms[f].n_x < 0;
    int n_x = cat ? (n->n_in - 2) / 3 : forms[f].n_x, first = cat ? 2 : 0, ys = cat ? 0 : 3 * n_x, x[8], y;
    if (n_x < 1 || n_x > 8 || n->n_in != 3 * n_x + 2)
        return mps_onnx_fail(n, err, "%d inputs: not %s's form", n->n_in, n->np->op_type);
    for (int i = 0; i < n_x; i++) { /* noted as DequantizeLinear's are, but for the node's output (res) */
        int at = first + 3 * i;
        struct mps_qnote dq = {.kind = MPS_QNOTE_DQ, .res = -1, .axis = 1, .op = MPS_OP_IDENTITY};
        for (int j = 0; j < 9; j++)
            dq.in[j] = j < 3 && at + j < n->n_in ? n->in[at + j] : -1;
        if ((st = mps_q_deq(c, n, at, at + 1, at + 2, 1, &x[i], err)))
            return st;
        dq.out = x[i];
        if (!mps_graph_add_qnote(c->g, &dq))
            return mps_onnx_oom(err);
    }
    union mps_op_params q;
    mps_op_params_default(forms[f].to, &q);
    if (forms[f].to == MPS_OP_LEAKY_RELU)
        q.act.alpha = alpha;
    if (cat)
        q.axis.axis = axis;
    if (softmax)
        q.norm.axis = axis;
    int yq;
    if ((st = mps_onnx_add(c, n, forms[f].to, x, n_x, &q, &y, err)) ||
        (st = mps_q_quantize(c, n, y, ys, ys + 1, 1, -1, &yq, err)) ||
        (st = mps_q_note(c, n, MPS_QNOTE_Q, (int[]){y, n->in[ys], ys + 1 < n->n_in ? n->in[ys + 1] : -1}, 3, yq, 1,
                         MPS_OP_IDENTITY, NULL, err)))
        return st;
    return mps_q_result(n, p, yq);
}

#define MPS_Q_CONV_ATTRS "auto_pad dilations group kernel_shape pads strides"
const struct mps_onnx_rule mps_onnx_rules_quant[] = {
    {"QuantizeLinear", MPS_OP_IDENTITY, "axis block_size saturate", mps_map_quantize},
    {"DequantizeLinear", MPS_OP_IDENTITY, "axis block_size", mps_map_dequantize},
    {"DynamicQuantizeLinear", MPS_OP_CAST, "", mps_map_dyn_quant},
    {"MatMulInteger", MPS_OP_CAST, "", mps_map_matmul_q},
    {"QLinearMatMul", MPS_OP_IDENTITY, "", mps_map_matmul_q},
    {"ConvInteger", MPS_OP_CAST, MPS_Q_CONV_ATTRS, mps_map_conv_q},
    {"QLinearConv", MPS_OP_IDENTITY, MPS_Q_CONV_ATTRS, mps_map_conv_q},
};
const size_t mps_onnx_n_rules_quant = sizeof mps_onnx_rules_quant / sizeof mps_onnx_rules_quant[0];

/* onnxruntime's quantizer writes these (domain com.microsoft) in its
   QOperator form. */
const struct mps_onnx_rule mps_onnx_rules_ms[] = {
    {"QGemm", MPS_OP_IDENTITY, "alpha transA transB", mps_map_qgemm},
    {"QLinearAdd", MPS_OP_IDENTITY, "", mps_map_qlinear},
    {"QLinearMul", MPS_OP_IDENTITY, "", mps_map_qlinear},
    {"QLinearSigmoid", MPS_OP_IDENTITY, "", mps_map_qlinear},
    {"QLinearLeakyRelu", MPS_OP_IDENTITY, "alpha", mps_map_qlinear},
    {"QLinearGlobalAveragePool", MPS_OP_IDENTITY, "channels_last", mps_map_qlinear},
    {"QLinearConcat", MPS_OP_IDENTITY, "axis", mps_map_qlinear},
    {"QLinearSoftmax", MPS_OP_IDENTITY, "axis opset", mps_map_qlinear},
};
const size_t mps_onnx_n_rules_ms = sizeof mps_onnx_rules_ms / sizeof mps_onnx_rules_ms[0];
