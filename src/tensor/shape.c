/* shape.c: shape and dtype inference for the math ops, and the pass that runs
   every rule over the graph. The layout ops' rules are in shape_layout.c. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shape_rules.h"

enum mps_status mps_shape_fail(const struct mps_node *n, struct mps_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum mps_status st = mps_vfail_node(err, n->name, mps_op_name(n->op), fmt, ap);
    va_end(ap);
    return st;
}

const struct mps_value *mps_shape_in(const struct mps_graph *g, const struct mps_node *n, int i)
{
    return mps_node_input(g, n, i);
}

void mps_shape_set(struct mps_graph *g, const struct mps_node *n, int i, enum mps_dtype dt,
                   const struct mps_shape *s)
{
    struct mps_value *v = &g->values[n->out[i]];
    v->dtype = dt;
    v->shape = *s;
    v->shape_known = true;
    v->bounded = false;
}

void mps_shape_set_bounded(struct mps_graph *g, const struct mps_node *n, int i, enum mps_dtype dt,
                           const struct mps_shape *s, int axis)
{
    mps_shape_set(g, n, i, dt, s);
    g->values[n->out[i]].bounded = true;
    g->values[n->out[i]].bound_axis = axis;
}

enum mps_status mps_shape_need_dtype(const struct mps_graph *g, const struct mps_node *n, int i, unsigned mask,
                                     struct mps_error *err)
{
    const struct mps_value *v = mps_shape_in(g, n, i);
    if (v && !(mask & MPS_DT(v->dtype)))
        return mps_shape_fail(n, err, "input %d ('%s') has dtype %s, which this op does not support", i,
                              v->name, mps_dtype_name(v->dtype));
    return MPS_OK;
}

enum mps_status mps_shape_const_ints(const struct mps_graph *g, const struct mps_node *n, int i, int64_t *v,
                                     int max, int *count, struct mps_error *err)
{
    const struct mps_value *c = mps_shape_in(g, n, i);
    if (!c || !c->data)
        return mps_shape_fail(n, err, "input %d must be a constant (computed shapes are folded before this)", i);
    if (c->dtype != MPS_I64 && c->dtype != MPS_I32)
        return mps_shape_fail(n, err, "input %d must be int64 or int32, not %s", i, mps_dtype_name(c->dtype));
    int64_t numel = mps_shape_numel(&c->shape);
    if (c->shape.ndim > 1 || numel > max)
        return mps_shape_fail(n, err, "input %d must be a list of at most %d integers", i, max);
    for (int64_t k = 0; k < numel; k++)
        v[k] = c->dtype == MPS_I64 ? ((const int64_t *)c->data)[k] : ((const int32_t *)c->data)[k];
    *count = (int)numel;
    return MPS_OK;
}

enum mps_status mps_shape_const_shape(const struct mps_graph *g, const struct mps_node *n, int i, struct mps_shape *s,
                                      struct mps_error *err)
{
    int64_t v[MPS_MAX_DIMS];
    int count;
    enum mps_status st = mps_shape_const_ints(g, n, i, v, MPS_MAX_DIMS, &count, err);
    if (st)
        return st;
    *s = (struct mps_shape){count, {0}};
    for (int k = 0; k < count; k++) {
        if (v[k] < 0)
            return mps_shape_fail(n, err, "shape entry %lld is negative", (long long)v[k]);
        s->dim[k] = v[k];
    }
    if (mps_shape_numel(s) < 0)
        return mps_shape_fail(n, err, "shape is too large");
    return MPS_OK;
}

double mps_shape_const_at(const struct mps_value *c, int64_t i)
{
    return mps_elem_get(c->data, c->dtype, i);
}

enum mps_status mps_shape_const_scalar(const struct mps_graph *g, const struct mps_node *n, int i, double *v,
                                       struct mps_error *err)
{
    const struct mps_value *c = mps_shape_in(g, n, i);
    *v = 0;
    if (!c || !c->data || mps_shape_numel(&c->shape) != 1)
        return mps_shape_fail(n, err, "input %d must be a constant scalar", i);
    *v = mps_shape_const_at(c, 0);
    return MPS_OK;
}

enum mps_status mps_shape_resolve_axis(const struct mps_node *n, int64_t *axis, int ndim, struct mps_error *err)
{
    int a = mps_axis(*axis, ndim);
    if (a < 0)
        return mps_shape_fail(n, err, "axis %lld is out of range for rank %d", (long long)*axis, ndim);
    *axis = a;
    return MPS_OK;
}

enum mps_status mps_shape_axes_mask(const struct mps_node *n, const int64_t *v, int count, int ndim,
                                    uint32_t *mask, struct mps_error *err)
{
    *mask = 0;
    for (int i = 0; i < count; i++) {
        int a = mps_axis(v[i], ndim);
        if (a < 0)
            return mps_shape_fail(n, err, "axis %lld is out of range for rank %d", (long long)v[i], ndim);
        if (*mask & (1u << a))
            return mps_shape_fail(n, err, "axis %lld is given twice", (long long)v[i]);
        *mask |= 1u << a;
    }
    return MPS_OK;
}

static enum mps_status mps_shape_same(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    mps_shape_set(g, n, 0, x->dtype, &x->shape);
    (void)err;
    return MPS_OK;
}

/* The unary ops: f32; Neg, Abs, Sign, Relu and Clip of every number dtype too. */
static enum mps_status mps_shape_unary(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    bool any = n->op == MPS_OP_NEG || n->op == MPS_OP_ABS || n->op == MPS_OP_SIGN || n->op == MPS_OP_RELU ||
               n->op == MPS_OP_CLIP;
    enum mps_status st = mps_shape_need_dtype(g, n, 0, any ? MPS_DT_NUMBER : MPS_DT_FLOAT, err);
    return st ? st : mps_shape_same(g, n, err);
}

static enum mps_status mps_shape_clip(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    double v;
    enum mps_status st;
    if (mps_shape_in(g, n, 1)) {
        if ((st = mps_shape_const_scalar(g, n, 1, &v, err)))
            return st;
        n->p.act.alpha = (float)v;
    }
    if (mps_shape_in(g, n, 2)) {
        if ((st = mps_shape_const_scalar(g, n, 2, &v, err)))
            return st;
        n->p.act.beta = (float)v;
    }
    return mps_shape_unary(g, n, err);
}

static enum mps_status mps_shape_dropout(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    double training = 0;
    if (mps_shape_in(g, n, 2)) {
        enum mps_status st = mps_shape_const_scalar(g, n, 2, &training, err);
        if (st)
            return st;
    }
    if (training != 0)
        return mps_shape_fail(n, err, "training_mode is true; mpsrun runs inference only");
    return mps_shape_same(g, n, err);
}

static enum mps_status mps_shape_cast(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *like = mps_shape_in(g, n, 1);
    if (like) /* CastLike */
        n->p.cast.to = like->dtype;
    if ((unsigned)n->p.cast.to >= MPS_DTYPE_COUNT)
        return mps_shape_fail(n, err, "unknown target dtype %d", (int)n->p.cast.to);
    mps_shape_set(g, n, 0, n->p.cast.to, &x->shape);
    return MPS_OK;
}

/* Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean, Mod, BitShift (unsigned): numpy broadcasting of
   all inputs, of one number dtype (Mean: f32 or f64); Pow's exponent may be
   of another, the result is the base's. */
static enum mps_status mps_shape_broadcast_op(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    unsigned want = n->op == MPS_OP_MEAN        ? MPS_DT_FLOAT | MPS_DT(MPS_F64)
                    : n->op == MPS_OP_BIT_SHIFT ? MPS_DT(MPS_U8) | MPS_DT(MPS_U16) | MPS_DT(MPS_U32) | MPS_DT(MPS_U64)
                                                : MPS_DT_NUMBER;
    const struct mps_value *x = mps_shape_in(g, n, 0);
    struct mps_shape s = x->shape;
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        if (!v)
            return mps_shape_fail(n, err, "input %d is missing", i);
        enum mps_status st = mps_shape_need_dtype(g, n, i, want, err);
        if (st)
            return st;
        if (v->dtype != x->dtype && n->op != MPS_OP_POW)
            return mps_shape_fail(n, err, "inputs have dtypes %s and %s; they must match", mps_dtype_name(x->dtype),
                                  mps_dtype_name(v->dtype));
        struct mps_error why;
        if (mps_shape_broadcast(&s, &v->shape, &s, &why))
            return mps_shape_fail(n, err, "%s", why.msg);
    }
    mps_shape_set(g, n, 0, x->dtype, &s);
    return MPS_OK;
}

/* Comparisons, And/Or/Xor, Not, IsNaN, IsInf: operands of one dtype, broadcast; a bool result.
   Where: a bool condition, x and y of one dtype; the result has theirs. */
static enum mps_status mps_shape_logic(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    bool logic = n->op == MPS_OP_AND || n->op == MPS_OP_OR || n->op == MPS_OP_XOR || n->op == MPS_OP_NOT;
    bool where = n->op == MPS_OP_WHERE;
    unsigned want = logic ? MPS_DT(MPS_BOOL)
                    : n->op == MPS_OP_IS_NAN || n->op == MPS_OP_IS_INF
                        ? MPS_DT_FLOAT
                        : MPS_DT_NUMBER | MPS_DT(MPS_BOOL);
    const struct mps_value *first = mps_shape_in(g, n, where ? 1 : 0);
    struct mps_shape s = mps_shape_in(g, n, 0)->shape;
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        enum mps_status st = mps_shape_need_dtype(g, n, i, where ? (i ? MPS_DT_ANY : MPS_DT(MPS_BOOL)) : want, err);
        if (st)
            return st;
        if ((i > 0 || !where) && v->dtype != first->dtype)
            return mps_shape_fail(n, err, "inputs have dtypes %s and %s; they must match", mps_dtype_name(first->dtype),
                                  mps_dtype_name(v->dtype));
        struct mps_error why;
        if (mps_shape_broadcast(&s, &v->shape, &s, &why))
            return mps_shape_fail(n, err, "%s", why.msg);
    }
    mps_shape_set(g, n, 0, where ? first->dtype : MPS_BOOL, &s);
    return MPS_OK;
}

/* PRelu: slope broadcasts to X (one direction only). */
static enum mps_status mps_shape_prelu(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *slope = mps_shape_in(g, n, 1);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT, err);
    if (!st)
        st = mps_shape_need_dtype(g, n, 1, MPS_DT_FLOAT, err);
    if (st)
        return st;
    struct mps_shape s;
    struct mps_error why;
    if (mps_shape_broadcast(&x->shape, &slope->shape, &s, &why) || !mps_shape_eq(&s, &x->shape))
        return mps_shape_fail(n, err, "slope does not broadcast to the input's shape");
    return mps_shape_same(g, n, err);
}

static enum mps_status mps_shape_matmul(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *a = mps_shape_in(g, n, 0), *b = mps_shape_in(g, n, 1);
    /* f16 too (both inputs): the tensor cores' own data, what `bench matmul --precision fp16` multiplies */
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT | MPS_DT(MPS_F16), err);
    if (!st)
        st = mps_shape_need_dtype(g, n, 1, MPS_DT_FLOAT | MPS_DT(MPS_F16), err);
    if (st)
        return st;
    if (a->dtype != b->dtype)
        return mps_shape_fail(n, err, "inputs have dtypes %s and %s; they must match", mps_dtype_name(a->dtype),
                              mps_dtype_name(b->dtype));
    if (a->shape.ndim < 1 || b->shape.ndim < 1)
        return mps_shape_fail(n, err, "inputs must have at least one dim");
    struct mps_shape sa = a->shape, sb = b->shape;
    bool a1 = sa.ndim == 1, b1 = sb.ndim == 1;
    if (a1)
        sa = (struct mps_shape){2, {1, sa.dim[0]}};
    if (b1)
        sb = (struct mps_shape){2, {sb.dim[0], 1}};
    int64_t k = sa.dim[sa.ndim - 1];
    if (sb.dim[sb.ndim - 2] != k)
        return mps_shape_fail(n, err, "inner dims differ: %lld and %lld", (long long)k,
                              (long long)sb.dim[sb.ndim - 2]);
    struct mps_shape ba = {sa.ndim - 2, {0}}, bb = {sb.ndim - 2, {0}}, out;
    memcpy(ba.dim, sa.dim, sizeof(int64_t) * (size_t)ba.ndim);
    memcpy(bb.dim, sb.dim, sizeof(int64_t) * (size_t)bb.ndim);
    struct mps_error why;
    if (mps_shape_broadcast(&ba, &bb, &out, &why))
        return mps_shape_fail(n, err, "batch dims: %s", why.msg);
    if (!a1)
        out.dim[out.ndim++] = sa.dim[sa.ndim - 2];
    if (!b1)
        out.dim[out.ndim++] = sb.dim[sb.ndim - 1];
    mps_shape_set(g, n, 0, a->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_gemm(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *a = mps_shape_in(g, n, 0), *b = mps_shape_in(g, n, 1), *c = mps_shape_in(g, n, 2);
    for (int i = 0; i < n->n_in; i++) {
        enum mps_status st = mps_shape_need_dtype(g, n, i, MPS_DT_FLOAT, err);
        if (st)
            return st;
    }
    if (a->shape.ndim != 2 || b->shape.ndim != 2)
        return mps_shape_fail(n, err, "A and B must be 2-D");
    const struct mps_gemm_params *p = &n->p.gemm;
    int64_t m = a->shape.dim[p->trans_a ? 1 : 0], k = a->shape.dim[p->trans_a ? 0 : 1];
    int64_t kb = b->shape.dim[p->trans_b ? 1 : 0], nn = b->shape.dim[p->trans_b ? 0 : 1];
    if (k != kb)
        return mps_shape_fail(n, err, "inner dims differ: %lld and %lld", (long long)k, (long long)kb);
    struct mps_shape out = {2, {m, nn}}, s;
    struct mps_error why;
    if (c && (c->shape.ndim > 2 || mps_shape_broadcast(&out, &c->shape, &s, &why) || !mps_shape_eq(&s, &out)))
        return mps_shape_fail(n, err, "C does not broadcast to [%lld,%lld]", (long long)m, (long long)nn);
    mps_shape_set(g, n, 0, MPS_F32, &out);
    return MPS_OK;
}

/* Checks the window geometry and resolves auto_pad for input spatial dims in[]. */
static enum mps_status mps_shape_window(const struct mps_node *n, struct mps_window *w, int sp, const int64_t *in,
                                        struct mps_error *err)
{
    for (int i = 0; i < sp; i++) {
        if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1)
            return mps_shape_fail(n, err, "kernel, strides and dilations must be positive");
        if (w->pad[i] < 0 || w->pad[i + sp] < 0)
            return mps_shape_fail(n, err, "pads must not be negative");
        if (w->auto_pad == MPS_AUTO_PAD_VALID) {
            w->pad[i] = w->pad[i + sp] = 0;
        } else if (w->auto_pad != MPS_AUTO_PAD_NOTSET) {
            int64_t out = (in[i] + w->stride[i] - 1) / w->stride[i];
            int64_t total = (out - 1) * w->stride[i] + (w->kernel[i] - 1) * w->dilation[i] + 1 - in[i];
            if (total < 0)
                total = 0;
            int64_t small = total / 2;
            w->pad[i] = w->auto_pad == MPS_AUTO_PAD_SAME_UPPER ? small : total - small;
            w->pad[i + sp] = total - w->pad[i];
        }
    }
    return MPS_OK;
}

/* Output size of a window over one spatial dim (floor, or ceil for pooling). */
static int64_t mps_shape_window_out(const struct mps_window *w, int i, int sp, int64_t in, bool ceil_mode)
{
    int64_t span = (w->kernel[i] - 1) * w->dilation[i] + 1;
    int64_t room = in + w->pad[i] + w->pad[i + sp] - span;
    if (room < 0)
        return 0;
    int64_t out = (ceil_mode ? (room + w->stride[i] - 1) / w->stride[i] : room / w->stride[i]) + 1;
    if (ceil_mode && (out - 1) * w->stride[i] >= in + w->pad[i])
        out--; /* the last window must start inside the input or the left padding */
    return out;
}

static enum mps_status mps_shape_spatial_input(const struct mps_graph *g, const struct mps_node *n, int *sp,
                                               struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    bool bytes = n->op == MPS_OP_MAX_POOL && !(n->n_out > 1 && n->p.pool.column_major); /* ONNX's int8 and uint8 */
    enum mps_status st =
        mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT | (bytes ? MPS_DT(MPS_U8) | MPS_DT(MPS_I8) : 0), err);
    if (st)
        return st;
    *sp = x->shape.ndim - 2;
    if (*sp < 1 || *sp > MPS_MAX_SPATIAL)
        return mps_shape_fail(n, err, "input must have rank 3 to 5 (N, C, 1 to 3 spatial dims), got rank %d", x->shape.ndim);
    return MPS_OK;
}

static enum mps_status mps_shape_conv(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    int sp;
    bool q = n->op == MPS_OP_QLINEAR_CONV; /* QLinearConv's order: w input 3, B input 8 */
    enum mps_dtype dt = MPS_F32;
    const struct mps_value *x = mps_shape_in(g, n, 0), *w = mps_shape_in(g, n, q ? 3 : 1),
                           *b = mps_shape_in(g, n, q ? 8 : 2);
    enum mps_status st = q ? mps_shape_quantized(g, n, &dt, err) : mps_shape_spatial_input(g, n, &sp, err);
    for (int i = 1; !q && !st && i < n->n_in; i++)
        st = mps_shape_need_dtype(g, n, i, MPS_DT_FLOAT, err);
    if (st)
        return st;
    if (q && ((sp = x->shape.ndim - 2) < 1 || sp > MPS_MAX_SPATIAL))
        return mps_shape_fail(n, err, "input must have rank 3 to 5, got rank %d", x->shape.ndim);
    struct mps_conv_params *p = &n->p.conv;
    bool tr = n->op == MPS_OP_CONV_TRANSPOSE;
    int64_t c = x->shape.dim[1], grp = p->group;
    if (w->shape.ndim != sp + 2)
        return mps_shape_fail(n, err, "weight must have rank %d, got %d", sp + 2, w->shape.ndim);
    if (grp < 1 || c % grp)
        return mps_shape_fail(n, err, "group %lld does not divide %lld input channels", (long long)grp, (long long)c);
    /* Conv weight: [M, C/group, k...]; ConvTranspose weight: [C, M/group, k...] */
    int64_t m = tr ? w->shape.dim[1] * grp : w->shape.dim[0];
    if (tr ? w->shape.dim[0] != c : (w->shape.dim[1] != c / grp || m % grp))
        return mps_shape_fail(n, err, "weight shape does not match %lld input channels in %lld groups", (long long)c,
                              (long long)grp);
    if (b && (b->shape.ndim != 1 || b->shape.dim[0] != m))
        return mps_shape_fail(n, err, "bias must have shape [%lld]", (long long)m);
    for (int i = 0; i < sp; i++) {
        if (p->win.kernel[i] == 0)
            p->win.kernel[i] = w->shape.dim[2 + i];
        if (p->win.kernel[i] != w->shape.dim[2 + i])
            return mps_shape_fail(n, err, "kernel_shape does not match the weight");
    }
    struct mps_shape out = {sp + 2, {x->shape.dim[0], m}};
    if (!tr) {
        if ((st = mps_shape_window(n, &p->win, sp, x->shape.dim + 2, err)))
            return st;
        for (int i = 0; i < sp; i++)
            out.dim[2 + i] = mps_shape_window_out(&p->win, i, sp, x->shape.dim[2 + i], false);
    } else {
        struct mps_window *wn = &p->win;
        for (int i = 0; i < sp; i++) {
            int64_t in = x->shape.dim[2 + i], span = (wn->kernel[i] - 1) * wn->dilation[i] + 1;
            if (wn->stride[i] < 1 || wn->dilation[i] < 1 || p->output_padding[i] < 0 ||
                p->output_padding[i] >= (wn->stride[i] > wn->dilation[i] ? wn->stride[i] : wn->dilation[i]))
                return mps_shape_fail(n, err, "strides, dilations or output_padding out of range");
            int64_t full = wn->stride[i] * (in - 1) + p->output_padding[i] + span;
            bool same = wn->auto_pad == MPS_AUTO_PAD_SAME_UPPER || wn->auto_pad == MPS_AUTO_PAD_SAME_LOWER;
            if (p->has_output_shape || same) {
                /* a negative total grows the output at its end, as output_padding would */
                int64_t want = p->has_output_shape ? p->output_shape[i] : in * wn->stride[i];
                int64_t total = full - want, half = total >= 0 ? total / 2 : -((1 - total) / 2);
                wn->pad[i] = wn->auto_pad == MPS_AUTO_PAD_SAME_UPPER ? half : total - half;
                wn->pad[i + sp] = total - wn->pad[i];
            } else if (wn->auto_pad == MPS_AUTO_PAD_VALID) {
                wn->pad[i] = wn->pad[i + sp] = 0;
            } else if (wn->pad[i] < 0 || wn->pad[i + sp] < 0) {
                return mps_shape_fail(n, err, "pads must not be negative");
            }
            out.dim[2 + i] = full - wn->pad[i] - wn->pad[i + sp];
        }
    }
    for (int i = 0; i < sp; i++)
        if (out.dim[2 + i] < 1)
            return mps_shape_fail(n, err, "the output would be empty along spatial axis %d", i);
    mps_shape_set(g, n, 0, dt, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_pool(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    int sp;
    enum mps_status st = mps_shape_spatial_input(g, n, &sp, err);
    if (st)
        return st;
    const struct mps_value *x = mps_shape_in(g, n, 0);
    struct mps_pool_params *p = &n->p.pool;
    if ((st = mps_shape_window(n, &p->win, sp, x->shape.dim + 2, err)))
        return st;
    struct mps_shape out = x->shape;
    for (int i = 0; i < sp; i++) {
        if (p->win.pad[i] >= p->win.kernel[i] || p->win.pad[i + sp] >= p->win.kernel[i])
            if (p->win.auto_pad == MPS_AUTO_PAD_NOTSET)
                return mps_shape_fail(n, err, "pads must be smaller than the kernel");
        out.dim[2 + i] = mps_shape_window_out(&p->win, i, sp, x->shape.dim[2 + i], p->ceil_mode);
        if (out.dim[2 + i] < 1)
            return mps_shape_fail(n, err, "the output would be empty along spatial axis %d", i);
    }
    mps_shape_set(g, n, 0, x->dtype, &out);
    if (n->n_out > 1) /* MaxPool's Indices */
        mps_shape_set(g, n, 1, MPS_I64, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_global_pool(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT, err);
    if (st)
        return st;
    if (x->shape.ndim < 3)
        return mps_shape_fail(n, err, "input must have rank 3 or more (N, C, spatial...)");
    struct mps_shape out = x->shape;
    for (int i = 2; i < out.ndim; i++)
        out.dim[i] = 1;
    mps_shape_set(g, n, 0, MPS_F32, &out);
    return MPS_OK;
}

/* BatchNormalization, InstanceNormalization: X (N, C, ...) and [C] operands. */
static enum mps_status mps_shape_batch_norm(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    if (x->shape.ndim < 2)
        return mps_shape_fail(n, err, "input must have rank 2 or more (N, C, ...)");
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        enum mps_status st = mps_shape_need_dtype(g, n, i, MPS_DT_FLOAT, err);
        if (st)
            return st;
        if (i > 0 && (v->shape.ndim != 1 || v->shape.dim[0] != x->shape.dim[1]))
            return mps_shape_fail(n, err, "input %d ('%s') must have shape [%lld]", i, v->name,
                                  (long long)x->shape.dim[1]);
    }
    return mps_shape_same(g, n, err);
}

static enum mps_status mps_shape_layer_norm(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_resolve_axis(n, &n->p.norm.axis, x->shape.ndim, err);
    if (st)
        return st;
    int axis = (int)n->p.norm.axis;
    struct mps_shape tail = {x->shape.ndim - axis, {0}}, stat = x->shape;
    memcpy(tail.dim, x->shape.dim + axis, sizeof(int64_t) * (size_t)tail.ndim);
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        if ((st = mps_shape_need_dtype(g, n, i, MPS_DT_FLOAT, err)))
            return st;
        struct mps_shape s;
        struct mps_error why;
        if (i > 0 && v && (mps_shape_broadcast(&tail, &v->shape, &s, &why) || !mps_shape_eq(&s, &tail)))
            return mps_shape_fail(n, err, "input %d does not broadcast to the normalized dims", i);
    }
    for (int i = axis; i < stat.ndim; i++)
        stat.dim[i] = 1;
    mps_shape_set(g, n, 0, MPS_F32, &x->shape);
    for (int i = 1; i < n->n_out; i++)
        mps_shape_set(g, n, i, MPS_F32, &stat);
    return MPS_OK;
}

static enum mps_status mps_shape_softmax(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT, err);
    if (st)
        return st;
    if ((st = mps_shape_resolve_axis(n, &n->p.norm.axis, x->shape.ndim, err)))
        return st;
    return mps_shape_same(g, n, err);
}

/* LRN: (N, C, ...) f32. */
static enum mps_status mps_shape_lrn(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT, err);
    if (st)
        return st;
    if (mps_shape_in(g, n, 0)->shape.ndim < 2)
        return mps_shape_fail(n, err, "input must have rank 2 or more (N, C, ...)");
    return mps_shape_same(g, n, err);
}

/* TopK: f32, i64 or i32; a constant k no larger than the axis; values and int64 indices. */
static enum mps_status mps_shape_topk(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT | MPS_DT_INT, err);
    double k;
    if (!st)
        st = mps_shape_const_scalar(g, n, 1, &k, err);
    if (!st)
        st = mps_shape_resolve_axis(n, &n->p.topk.axis, x->shape.ndim, err);
    if (st)
        return st;
    int64_t len = x->shape.dim[n->p.topk.axis];
    if (k < 0 || k > (double)len)
        return mps_shape_fail(n, err, "k %g is not in [0, %lld]", k, (long long)len);
    n->p.topk.k = (int64_t)k;
    struct mps_shape out = x->shape;
    out.dim[n->p.topk.axis] = n->p.topk.k;
    mps_shape_set(g, n, 0, x->dtype, &out);
    mps_shape_set(g, n, 1, MPS_I64, &out);
    return MPS_OK;
}

/* ArgMax, ArgMin: int64 indices along the axis, kept as 1 or dropped. */
static enum mps_status mps_shape_arg(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT | MPS_DT_INT, err);
    if (!st)
        st = mps_shape_resolve_axis(n, &n->p.arg.axis, x->shape.ndim, err);
    if (st)
        return st;
    int a = (int)n->p.arg.axis;
    if (x->shape.dim[a] == 0)
        return mps_shape_fail(n, err, "axis %d is empty: it has no largest or smallest element", a);
    struct mps_shape out = x->shape;
    if (n->p.arg.keepdims) {
        out.dim[a] = 1;
    } else {
        memmove(out.dim + a, out.dim + a + 1, sizeof(int64_t) * (size_t)(out.ndim - a - 1));
        out.ndim--;
    }
    mps_shape_set(g, n, 0, MPS_I64, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_reduce(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT | MPS_DT(MPS_F64), err);
    if (st)
        return st;
    int64_t axes[MPS_MAX_DIMS];
    int count = 0;
    if (mps_shape_in(g, n, 1) && (st = mps_shape_const_ints(g, n, 1, axes, MPS_MAX_DIMS, &count, err)))
        return st;
    uint32_t mask;
    if ((st = mps_shape_axes_mask(n, axes, count, x->shape.ndim, &mask, err)))
        return st;
    if (count == 0 && !n->p.reduce.noop_with_empty_axes)
        mask = (uint32_t)((1u << x->shape.ndim) - 1);
    n->p.reduce.axes = mask;
    struct mps_shape out = {0, {0}};
    for (int i = 0; i < x->shape.ndim; i++) {
        if (!(mask & (1u << i)))
            out.dim[out.ndim++] = x->shape.dim[i];
        else if (n->p.reduce.keepdims)
            out.dim[out.ndim++] = 1;
        if ((mask & (1u << i)) && x->shape.dim[i] == 0 &&
            (n->op == MPS_OP_REDUCE_MEAN || n->op == MPS_OP_REDUCE_MAX || n->op == MPS_OP_REDUCE_MIN))
            return mps_shape_fail(n, err, "cannot reduce an empty axis");
    }
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static const mps_shape_rule mps_shape_math_rules[MPS_OP_COUNT] = {
    [MPS_OP_MATMUL] = mps_shape_matmul,
    [MPS_OP_GEMM] = mps_shape_gemm,
    [MPS_OP_CONV] = mps_shape_conv,
    [MPS_OP_CONV_TRANSPOSE] = mps_shape_conv,
    [MPS_OP_QLINEAR_CONV] = mps_shape_conv,
    [MPS_OP_MAX_POOL] = mps_shape_pool,
    [MPS_OP_AVERAGE_POOL] = mps_shape_pool,
    [MPS_OP_GLOBAL_LP_POOL] = mps_shape_global_pool,
    [MPS_OP_GLOBAL_AVERAGE_POOL] = mps_shape_global_pool,
    [MPS_OP_GLOBAL_MAX_POOL] = mps_shape_global_pool,
    [MPS_OP_BATCH_NORM] = mps_shape_batch_norm,
    [MPS_OP_INSTANCE_NORM] = mps_shape_batch_norm,
    [MPS_OP_LAYER_NORM] = mps_shape_layer_norm,
    [MPS_OP_SOFTMAX] = mps_shape_softmax,
    [MPS_OP_LOG_SOFTMAX] = mps_shape_softmax,
    [MPS_OP_HARDMAX] = mps_shape_softmax,
    [MPS_OP_TOP_K] = mps_shape_topk,
    [MPS_OP_LRN] = mps_shape_lrn,
    [MPS_OP_RELU] = mps_shape_unary,
    [MPS_OP_LEAKY_RELU] = mps_shape_unary,
    [MPS_OP_ELU] = mps_shape_unary,
    [MPS_OP_SELU] = mps_shape_unary,
    [MPS_OP_SIGMOID] = mps_shape_unary,
    [MPS_OP_HARD_SIGMOID] = mps_shape_unary,
    [MPS_OP_HARD_SWISH] = mps_shape_unary,
    [MPS_OP_TANH] = mps_shape_unary,
    [MPS_OP_SOFTPLUS] = mps_shape_unary,
    [MPS_OP_SOFTSIGN] = mps_shape_unary,
    [MPS_OP_GELU] = mps_shape_unary,
    [MPS_OP_ERF] = mps_shape_unary,
    [MPS_OP_SIN] = mps_shape_unary,
    [MPS_OP_COS] = mps_shape_unary,
    [MPS_OP_TAN] = mps_shape_unary,
    [MPS_OP_ASIN] = mps_shape_unary,
    [MPS_OP_ACOS] = mps_shape_unary,
    [MPS_OP_ATAN] = mps_shape_unary,
    [MPS_OP_SINH] = mps_shape_unary,
    [MPS_OP_COSH] = mps_shape_unary,
    [MPS_OP_ASINH] = mps_shape_unary,
    [MPS_OP_ACOSH] = mps_shape_unary,
    [MPS_OP_ATANH] = mps_shape_unary,
    [MPS_OP_EXP] = mps_shape_unary,
    [MPS_OP_LOG] = mps_shape_unary,
    [MPS_OP_SQRT] = mps_shape_unary,
    [MPS_OP_ABS] = mps_shape_unary,
    [MPS_OP_NEG] = mps_shape_unary,
    [MPS_OP_RECIPROCAL] = mps_shape_unary,
    [MPS_OP_FLOOR] = mps_shape_unary,
    [MPS_OP_CEIL] = mps_shape_unary,
    [MPS_OP_SIGN] = mps_shape_unary,
    [MPS_OP_ROUND] = mps_shape_unary,
    [MPS_OP_THRESHOLDED_RELU] = mps_shape_unary,
    [MPS_OP_SHRINK] = mps_shape_unary,
    [MPS_OP_CLIP] = mps_shape_clip,
    [MPS_OP_IDENTITY] = mps_shape_same,
    [MPS_OP_DROPOUT] = mps_shape_dropout,
    [MPS_OP_CAST] = mps_shape_cast,
    [MPS_OP_PRELU] = mps_shape_prelu,
    [MPS_OP_GREATER] = mps_shape_logic,
    [MPS_OP_LESS] = mps_shape_logic,
    [MPS_OP_EQUAL] = mps_shape_logic,
    [MPS_OP_GREATER_OR_EQUAL] = mps_shape_logic,
    [MPS_OP_LESS_OR_EQUAL] = mps_shape_logic,
    [MPS_OP_AND] = mps_shape_logic,
    [MPS_OP_OR] = mps_shape_logic,
    [MPS_OP_XOR] = mps_shape_logic,
    [MPS_OP_NOT] = mps_shape_logic,
    [MPS_OP_IS_NAN] = mps_shape_logic,
    [MPS_OP_IS_INF] = mps_shape_logic,
    [MPS_OP_WHERE] = mps_shape_logic,
    [MPS_OP_MOD] = mps_shape_broadcast_op,
    [MPS_OP_BIT_SHIFT] = mps_shape_broadcast_op,
    [MPS_OP_ADD] = mps_shape_broadcast_op,
    [MPS_OP_SUB] = mps_shape_broadcast_op,
    [MPS_OP_MUL] = mps_shape_broadcast_op,
    [MPS_OP_DIV] = mps_shape_broadcast_op,
    [MPS_OP_POW] = mps_shape_broadcast_op,
    [MPS_OP_MAX] = mps_shape_broadcast_op,
    [MPS_OP_MIN] = mps_shape_broadcast_op,
    [MPS_OP_SUM] = mps_shape_broadcast_op,
    [MPS_OP_MEAN] = mps_shape_broadcast_op,
    [MPS_OP_REDUCE_MEAN] = mps_shape_reduce,
    [MPS_OP_REDUCE_SUM] = mps_shape_reduce,
    [MPS_OP_REDUCE_MAX] = mps_shape_reduce,
    [MPS_OP_REDUCE_MIN] = mps_shape_reduce,
    [MPS_OP_REDUCE_PROD] = mps_shape_reduce,
    [MPS_OP_REDUCE_L1] = mps_shape_reduce,
    [MPS_OP_REDUCE_L2] = mps_shape_reduce,
    [MPS_OP_REDUCE_SUM_SQUARE] = mps_shape_reduce,
    [MPS_OP_REDUCE_LOG_SUM] = mps_shape_reduce,
    [MPS_OP_REDUCE_LOG_SUM_EXP] = mps_shape_reduce,
    [MPS_OP_ARG_MAX] = mps_shape_arg,
    [MPS_OP_ARG_MIN] = mps_shape_arg,
};

/* Whether op takes strings (tensor.h): the ops that move elements whole, Cast and StringNormalizer. */
static bool mps_shape_takes_strings(enum mps_op op)
{
    if (mps_op_is_view(op))
        return true;
    switch (op) {
    case MPS_OP_TRANSPOSE:
    case MPS_OP_CONCAT:
    case MPS_OP_SPLIT:
    case MPS_OP_SLICE:
    case MPS_OP_GATHER:
    case MPS_OP_EXPAND:
    case MPS_OP_TILE:
    case MPS_OP_WHERE:
    case MPS_OP_IF:
    case MPS_OP_CAST:
    case MPS_OP_STRING_NORMALIZER: return true;
    default: return false;
    }
}

enum mps_status mps_graph_infer_node(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        if (v && !v->shape_known)
            return mps_shape_fail(n, err, "input '%s' has no known shape (is the graph sorted?)", v->name);
        if (v && v->dtype == MPS_STRING && !mps_shape_takes_strings(n->op))
            return mps_shape_fail(n, err, "input '%s' is a tensor of strings, which this op does not take", v->name);
        if (v && v->bounded && v->producer >= 0)
            return mps_shape_fail(n, err,
                                  "input '%s' is the output of node '%s' (%s), whose size depends on the values of a "
                                  "run: mpsrun takes such a value only as an output of the graph",
                                  v->name, g->nodes[v->producer].name, mps_op_name(g->nodes[v->producer].op));
    }
    mps_shape_rule rule = mps_shape_math_rules[n->op]     ? mps_shape_math_rules[n->op]
                          : mps_shape_layout_rules[n->op] ? mps_shape_layout_rules[n->op]
                                                          : mps_shape_seq_rules[n->op];
    if (!rule)
        return mps_shape_fail(n, err, "no shape rule for this op");
    enum mps_status st = rule(g, n, err);
    if (st)
        return st;
    for (int i = 0; i < n->n_out; i++) {
        const struct mps_value *v = &g->values[n->out[i]];
        if (mps_shape_numel(&v->shape) < 0)
            return mps_shape_fail(n, err, "output '%s' would have more than 2^40 elements", v->name);
    }
    return MPS_OK;
}

enum mps_status mps_graph_infer(struct mps_graph *g, struct mps_error *err)
{
    for (int i = 0; i < g->n_inputs; i++) {
        const struct mps_value *v = &g->values[g->inputs[i]];
        if (!v->shape_known)
            return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' has no shape", v->name);
    }
    for (int k = 0; k < g->n_nodes; k++) {
        enum mps_status st = mps_graph_infer_node(g, &g->nodes[k], err);
        if (st)
            return st;
    }
    return MPS_OK;
}
