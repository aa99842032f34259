/* onnx_ops.c: maps each ONNX node to IR nodes, one row per ONNX op. A row
   lists every attribute the op has in opsets 6 to 21; any other attribute,
   or a value mpsrun cannot honour, fails the load naming node, op and
   reason, so that nothing runs with wrong numbers. Older opsets' attribute
   forms become the constant inputs of the newest form (ops.def). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- attributes -------------------------------------------------------------- */

static const Onnx__AttributeProto *mps_attr(const struct mps_onnx_node *n, const char *name)
{
    for (size_t i = 0; i < n->np->n_attribute; i++)
        if (n->np->attribute[i]->name && strcmp(n->np->attribute[i]->name, name) == 0)
            return n->np->attribute[i];
    return NULL;
}

/* The type an attribute has, from its type field or, in old files, its content. */
static Onnx__AttributeProto__AttributeType mps_attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return a->type;
    if (a->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->t)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
}

static enum mps_status mps_attr_int(const struct mps_onnx_node *n, const char *name, int64_t def, int64_t *v,
                                    struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *v = def;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return mps_onnx_fail(n, err, "attribute '%s' must be an int", name);
    *v = a->i;
    return MPS_OK;
}

static enum mps_status mps_attr_float(const struct mps_onnx_node *n, const char *name, float def, float *v,
                                      struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *v = def;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return mps_onnx_fail(n, err, "attribute '%s' must be a float", name);
    *v = a->f;
    return MPS_OK;
}

/* Reads ints attribute name into v[max]; *count is -1 when it is absent. */
static enum mps_status mps_attr_ints(const struct mps_onnx_node *n, const char *name, int64_t *v, int max, int *count,
                                     struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *count = -1;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return mps_onnx_fail(n, err, "attribute '%s' must be a list of ints", name);
    if (a->n_ints > (size_t)max)
        return mps_onnx_fail(n, err, "attribute '%s' has %zu values; at most %d are supported", name, a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++)
        v[i] = a->ints[i];
    *count = (int)a->n_ints;
    return MPS_OK;
}

static enum mps_status mps_attr_string(const struct mps_onnx_node *n, const char *name, const char *def, char *v,
                                       size_t size, struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    snprintf(v, size, "%s", def);
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return mps_onnx_fail(n, err, "attribute '%s' must be a string", name);
    snprintf(v, size, "%.*s", (int)(a->s.len < size ? a->s.len : size - 1), (const char *)a->s.data);
    return MPS_OK;
}

/* Appends a constant i64 vector as input slot `slot` of n. */
static enum mps_status mps_attr_to_input(struct mps_onnx_ctx *c, struct mps_onnx_node *n, int slot,
                                         const int64_t *v, int count, struct mps_error *err)
{
    struct mps_shape s = {1, {count}};
    int id = mps_onnx_const(c, n->name, MPS_I64, &s, v);
    if (id < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    while (n->n_in < slot)
        n->in[n->n_in++] = -1;
    n->in[slot] = id;
    if (n->n_in <= slot)
        n->n_in = slot + 1;
    return MPS_OK;
}

/* ---- mappers --------------------------------------------------------------------- */

typedef enum mps_status (*mps_onnx_mapper)(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                           struct mps_error *err);

static enum mps_status mps_map_act(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    struct mps_act_params *a = &p->act;
    enum mps_status st = mps_attr_float(n, "alpha", a->alpha, &a->alpha, err);
    if (!st)
        st = mps_attr_float(n, strcmp(n->np->op_type, "Selu") == 0 ? "gamma" : "beta", a->beta, &a->beta, err);
    if (!st && strcmp(n->np->op_type, "Gelu") == 0) {
        char approx[16];
        if ((st = mps_attr_string(n, "approximate", "none", approx, sizeof approx, err)))
            return st;
        if (strcmp(approx, "none") != 0 && strcmp(approx, "tanh") != 0)
            return mps_onnx_fail(n, err, "approximate '%s' is not 'none' or 'tanh'", approx);
        a->beta = strcmp(approx, "tanh") == 0;
    }
    (void)c;
    return st;
}

static enum mps_status mps_map_shrink(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    (void)c;
    enum mps_status st = mps_attr_float(n, "lambd", 0.5f, &p->act.alpha, err);
    return st ? st : mps_attr_float(n, "bias", 0.0f, &p->act.beta, err);
}

static enum mps_status mps_map_clip(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    (void)c;
    if (c->opset >= 11)
        return MPS_OK;
    enum mps_status st = mps_attr_float(n, "min", -INFINITY, &p->act.alpha, err);
    return st ? st : mps_attr_float(n, "max", INFINITY, &p->act.beta, err);
}

static enum mps_status mps_map_cast(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    int64_t to;
    (void)c;
    enum mps_status st = mps_attr_int(n, "to", -1, &to, err);
    if (st)
        return st;
    if (to < INT32_MIN || to > INT32_MAX || !mps_onnx_dtype((int32_t)to, &p->cast.to))
        return mps_onnx_fail(n, err, "cast to %s is not supported", mps_onnx_dtype_name((int32_t)to));
    return MPS_OK;
}

/* Dropout in inference: the output is the input; a requested mask is all true. */
static enum mps_status mps_map_dropout(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    (void)p;
    if (n->n_out < 2 || n->out[1] < 0)
        return MPS_OK;
    int shape = mps_onnx_temp(c, n->name);
    union mps_op_params fill;
    mps_op_params_default(MPS_OP_CONSTANT_OF_SHAPE, &fill);
    fill.fill.dtype = MPS_BOOL;
    fill.fill.value = 1;
    enum mps_status st = shape < 0 ? mps_fail(err, MPS_ERR_RUNTIME, "out of memory")
                                   : mps_graph_add_node(c->g, MPS_OP_SHAPE, n->name, n->in, 1, &shape, 1, NULL, err);
    if (!st)
        st = mps_graph_add_node(c->g, MPS_OP_CONSTANT_OF_SHAPE, n->name, &shape, 1, &n->out[1], 1, &fill, err);
    n->n_out = 1;
    return st;
}

/* Replaces input slot of n by a constant copy of it with trailing size-1 dims
   up to rank: how opsets before 7 aligned a broadcast operand at an axis. */
static enum mps_status mps_map_align(struct mps_onnx_ctx *c, struct mps_onnx_node *n, int slot, int rank,
                                     struct mps_error *err)
{
    const struct mps_value *v = &c->g->values[n->in[slot]];
    struct mps_shape s = v->shape;
    if (!v->data || rank > MPS_MAX_DIMS)
        return mps_onnx_fail(n, err, "legacy broadcasting of a computed tensor is not supported");
    while (s.ndim < rank)
        s.dim[s.ndim++] = 1;
    int id = mps_onnx_const(c, n->name, v->dtype, &s, v->data);
    if (id < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    n->in[slot] = id;
    return MPS_OK;
}

/* Opset 6 binary ops: broadcast=1 aligns B at A's dim 'axis' (default: the
   trailing dims, numpy's rule). */
static enum mps_status mps_map_binary(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    int64_t axis;
    (void)p;
    enum mps_status st = mps_attr_int(n, "axis", -1, &axis, err);
    if (st || !mps_attr(n, "axis") || n->n_in < 2 || n->in[0] < 0 || n->in[1] < 0)
        return st;
    const struct mps_value *a = &c->g->values[n->in[0]], *b = &c->g->values[n->in[1]];
    if (!a->shape_known || !b->shape_known)
        return mps_onnx_fail(n, err, "legacy broadcasting along 'axis' needs inputs of known shape");
    int rank = (int)(a->shape.ndim - axis);
    if (axis < 0 || rank < b->shape.ndim)
        return mps_onnx_fail(n, err, "axis %lld does not fit inputs of rank %d and %d", (long long)axis,
                             a->shape.ndim, b->shape.ndim);
    return rank == b->shape.ndim ? MPS_OK : mps_map_align(c, n, 1, rank, err);
}

static enum mps_status mps_map_mod(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    int64_t f;
    (void)c;
    enum mps_status st = mps_attr_int(n, "fmod", 0, &f, err);
    p->binary.fmod = f != 0;
    return st;
}

static enum mps_status mps_map_isinf(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    int64_t neg, pos;
    enum mps_status st = mps_attr_int(n, "detect_negative", 1, &neg, err);
    if (!st)
        st = mps_attr_int(n, "detect_positive", 1, &pos, err);
    p->isinf.negative = neg != 0;
    p->isinf.positive = pos != 0;
    (void)c;
    return st;
}

/* PRelu before opset 7: a slope of C values is per channel (axis 1). */
static enum mps_status mps_map_prelu(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    (void)p;
    if (c->opset >= 7 || n->n_in < 2 || n->in[0] < 0 || n->in[1] < 0) /* a missing input: refused later */
        return MPS_OK;
    const struct mps_value *x = &c->g->values[n->in[0]], *slope = &c->g->values[n->in[1]];
    if (!slope->shape_known || slope->shape.ndim != 1 || slope->shape.dim[0] == 1)
        return MPS_OK;
    if (!x->shape_known)
        return mps_onnx_fail(n, err, "a per-channel slope (opset < 7) needs an input of known rank");
    return mps_map_align(c, n, 1, x->shape.ndim - 1, err);
}

static enum mps_status mps_map_gemm(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    int64_t ta, tb;
    (void)c;
    enum mps_status st = mps_attr_float(n, "alpha", 1.0f, &p->gemm.alpha, err);
    if (!st)
        st = mps_attr_float(n, "beta", 1.0f, &p->gemm.beta, err);
    if (!st)
        st = mps_attr_int(n, "transA", 0, &ta, err);
    if (!st)
        st = mps_attr_int(n, "transB", 0, &tb, err);
    p->gemm.trans_a = !st && ta;
    p->gemm.trans_b = !st && tb;
    return st;
}

static enum mps_status mps_map_window(const struct mps_onnx_node *n, struct mps_window *w, bool need_kernel,
                                      struct mps_error *err)
{
    int nk, ns, nd, np;
    char pad[32];
    enum mps_status st = mps_attr_ints(n, "kernel_shape", w->kernel, MPS_MAX_SPATIAL, &nk, err);
    if (!st)
        st = mps_attr_ints(n, "strides", w->stride, MPS_MAX_SPATIAL, &ns, err);
    if (!st)
        st = mps_attr_ints(n, "dilations", w->dilation, MPS_MAX_SPATIAL, &nd, err);
    if (!st)
        st = mps_attr_ints(n, "pads", w->pad, 2 * MPS_MAX_SPATIAL, &np, err);
    if (!st)
        st = mps_attr_string(n, "auto_pad", "NOTSET", pad, sizeof pad, err);
    if (st)
        return st;
    if (need_kernel && nk < 1)
        return mps_onnx_fail(n, err, "attribute 'kernel_shape' is required");
    int sp = nk > 0 ? nk : ns > 0 ? ns : nd > 0 ? nd : np > 0 ? np / 2 : -1;
    if ((nk >= 0 && nk != sp) || (ns >= 0 && ns != sp) || (nd >= 0 && nd != sp) || (np >= 0 && np != 2 * sp))
        return mps_onnx_fail(n, err, "kernel_shape, strides, dilations and pads disagree on the spatial rank");
    if (!strcmp(pad, "NOTSET"))
        w->auto_pad = MPS_AUTO_PAD_NOTSET;
    else if (!strcmp(pad, "SAME_UPPER"))
        w->auto_pad = MPS_AUTO_PAD_SAME_UPPER;
    else if (!strcmp(pad, "SAME_LOWER"))
        w->auto_pad = MPS_AUTO_PAD_SAME_LOWER;
    else if (!strcmp(pad, "VALID"))
        w->auto_pad = MPS_AUTO_PAD_VALID;
    else
        return mps_onnx_fail(n, err, "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", pad);
    return MPS_OK;
}

static enum mps_status mps_map_conv(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    struct mps_conv_params *q = &p->conv;
    int nop = 0, nos = 0;
    (void)c;
    enum mps_status st = mps_map_window(n, &q->win, false, err);
    if (!st)
        st = mps_attr_int(n, "group", 1, &q->group, err);
    if (!st)
        st = mps_attr_ints(n, "output_padding", q->output_padding, MPS_MAX_SPATIAL, &nop, err);
    if (!st)
        st = mps_attr_ints(n, "output_shape", q->output_shape, MPS_MAX_SPATIAL, &nos, err);
    q->has_output_shape = nos > 0;
    return st;
}

static enum mps_status mps_map_pool(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    int64_t ceil_mode, include_pad, storage;
    (void)c;
    enum mps_status st = mps_map_window(n, &p->pool.win, true, err);
    if (!st)
        st = mps_attr_int(n, "ceil_mode", 0, &ceil_mode, err);
    if (!st)
        st = mps_attr_int(n, "count_include_pad", 0, &include_pad, err);
    if (!st)
        st = mps_attr_int(n, "storage_order", 0, &storage, err);
    if (st)
        return st;
    if (storage != 0 && storage != 1)
        return mps_onnx_fail(n, err, "storage_order %lld is not 0 or 1", (long long)storage);
    p->pool.column_major = storage == 1;
    p->pool.ceil_mode = ceil_mode;
    p->pool.count_include_pad = include_pad;
    return MPS_OK;
}

/* GlobalLpPool: p, an integer >= 1. */
static enum mps_status mps_map_lp(const struct mps_onnx_node *n, int64_t *p, struct mps_error *err)
{
    enum mps_status st = mps_attr_int(n, "p", 2, p, err);
    if (!st && (*p < 1 || *p > 64))
        return mps_onnx_fail(n, err, "p %lld is not 1 to 64", (long long)*p);
    return st;
}

static enum mps_status mps_map_global_lp(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                         struct mps_error *err)
{
    int64_t lp;
    (void)c;
    enum mps_status st = mps_map_lp(n, &lp, err);
    p->act.alpha = (float)lp;
    return st;
}

/* LpPool: (sum over the window of |x|^p)^(1/p) built from ops every backend
   has: Abs, Pow (Mul for p = 2), AveragePool counting the padding, times the
   window's size, and the caller's last node, Pow(., 1/p). ceil_mode (windows
   past the padding, whose average has a smaller divisor) is refused. */
static enum mps_status mps_map_lppool(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    int64_t lp, ceil_mode;
    union mps_op_params pool, none;
    mps_op_params_default(MPS_OP_AVERAGE_POOL, &pool);
    mps_op_params_default(MPS_OP_MUL, &none);
    enum mps_status st = mps_map_lp(n, &lp, err);
    if (!st)
        st = mps_map_window(n, &pool.pool.win, true, err);
    if (!st)
        st = mps_attr_int(n, "ceil_mode", 0, &ceil_mode, err);
    if (st)
        return st;
    if (ceil_mode)
        return mps_onnx_fail(n, err, "ceil_mode is not supported for LpPool");
    pool.pool.count_include_pad = true;
    double taps = 1;
    for (int i = 0; i < MPS_MAX_SPATIAL && pool.pool.win.kernel[i]; i++)
        taps *= (double)pool.pool.win.kernel[i];
    float pf = (float)lp, inv = 1.0f / (float)lp, k = (float)taps;
    struct mps_shape one = {0, {0}};
    int a = mps_onnx_temp(c, n->name), s = mps_onnx_temp(c, n->name), avg = mps_onnx_temp(c, n->name);
    int sum = mps_onnx_temp(c, n->name), cp = mps_onnx_const(c, n->name, MPS_F32, &one, &pf);
    int ck = mps_onnx_const(c, n->name, MPS_F32, &one, &k), ci = mps_onnx_const(c, n->name, MPS_F32, &one, &inv);
    if (a < 0 || s < 0 || avg < 0 || sum < 0 || cp < 0 || ck < 0 || ci < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    if ((st = mps_graph_add_node(c->g, MPS_OP_ABS, n->name, n->in, 1, &a, 1, NULL, err)) ||
        (st = mps_graph_add_node(c->g, lp == 2 ? MPS_OP_MUL : MPS_OP_POW, n->name, (int[]){a, lp == 2 ? a : cp}, 2, &s,
                                 1, &none, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_AVERAGE_POOL, n->name, &s, 1, &avg, 1, &pool, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_MUL, n->name, (int[]){avg, ck}, 2, &sum, 1, &none, err)))
        return st;
    n->in[0] = sum; /* the caller adds Pow(sum, 1/p) into the output */
    n->in[1] = ci;
    n->n_in = 2;
    (void)p;
    return MPS_OK;
}

static enum mps_status mps_map_batch_norm(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          struct mps_error *err)
{
    int64_t training, spatial, is_test;
    (void)c;
    enum mps_status st = mps_attr_float(n, "epsilon", 1e-5f, &p->norm.epsilon, err);
    if (!st)
        st = mps_attr_int(n, "training_mode", 0, &training, err);
    if (!st)
        st = mps_attr_int(n, "spatial", 1, &spatial, err);
    if (!st)
        st = mps_attr_int(n, "is_test", 1, &is_test, err);
    if (st)
        return st;
    if (training || n->n_out > 1)
        return mps_onnx_fail(n, err, "training mode (running statistics outputs) is not supported");
    if (spatial != 1)
        return mps_onnx_fail(n, err, "spatial=0 (per-element statistics) is not supported");
    return MPS_OK;
}

static enum mps_status mps_map_instance_norm(struct mps_onnx_ctx *c, struct mps_onnx_node *n,
                                             union mps_op_params *p, struct mps_error *err)
{
    (void)c;
    return mps_attr_float(n, "epsilon", 1e-5f, &p->norm.epsilon, err);
}

static enum mps_status mps_map_layer_norm(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          struct mps_error *err)
{
    int64_t stash;
    (void)c;
    enum mps_status st = mps_attr_int(n, "axis", -1, &p->norm.axis, err);
    if (!st)
        st = mps_attr_float(n, "epsilon", 1e-5f, &p->norm.epsilon, err);
    if (!st)
        st = mps_attr_int(n, "stash_type", 1, &stash, err);
    if (!st && stash != 1)
        return mps_onnx_fail(n, err, "stash_type %lld is not supported (only float)", (long long)stash);
    return st;
}

/* Softmax, LogSoftmax and Hardmax. Before opset 13 they work on the input flattened to
   2-D at axis (default 1): Flatten, then the op on the last axis, then Reshape
   back to the input's shape (a Shape node that the fold pass makes constant). */
static enum mps_status mps_map_softmax(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    enum mps_op op = mps_op_from_name(n->np->op_type);
    enum mps_status st = mps_attr_int(n, "axis", c->opset >= 13 ? -1 : 1, &p->norm.axis, err);
    if (st || c->opset >= 13)
        return st;
    union mps_op_params flat;
    mps_op_params_default(MPS_OP_FLATTEN, &flat);
    flat.axis.axis = p->norm.axis;
    p->norm.axis = -1;
    int f = mps_onnx_temp(c, n->name), s = mps_onnx_temp(c, n->name), y = mps_onnx_temp(c, n->name);
    if (f < 0 || s < 0 || y < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    if ((st = mps_graph_add_node(c->g, MPS_OP_FLATTEN, n->name, n->in, 1, &f, 1, &flat, err)) ||
        (st = mps_graph_add_node(c->g, op, n->name, &f, 1, &y, 1, p, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_SHAPE, n->name, n->in, 1, &s, 1, NULL, err)))
        return st;
    /* the caller adds the last node: Reshape(y, shape) into the output */
    n->in[0] = y;
    n->in[1] = s;
    n->n_in = 2;
    return MPS_OK;
}

static enum mps_status mps_map_reduce(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    int64_t keep, noop, axes[MPS_MAX_DIMS];
    int count;
    enum mps_status st = mps_attr_int(n, "keepdims", 1, &keep, err);
    if (!st)
        st = mps_attr_int(n, "noop_with_empty_axes", 0, &noop, err);
    if (!st)
        st = mps_attr_ints(n, "axes", axes, MPS_MAX_DIMS, &count, err);
    if (st)
        return st;
    p->reduce.keepdims = keep;
    p->reduce.noop_with_empty_axes = noop;
    if (count >= 0 && n->n_in > 1)
        return mps_onnx_fail(n, err, "axes given both as attribute and as input");
    return count > 0 ? mps_attr_to_input(c, n, 1, axes, count, err) : MPS_OK;
}

static enum mps_status mps_map_reshape(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    int64_t allowzero;
    (void)c;
    enum mps_status st = mps_attr_int(n, "allowzero", 0, &allowzero, err);
    p->axis.allowzero = allowzero;
    return st;
}

/* Flatten (axis 1), Concat (axis required), Gather (axis 0). */
static enum mps_status mps_map_axis(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    (void)c;
    bool concat = strcmp(n->np->op_type, "Concat") == 0;
    if (concat && !mps_attr(n, "axis"))
        return mps_onnx_fail(n, err, "attribute 'axis' is required");
    return mps_attr_int(n, "axis", strcmp(n->np->op_type, "Flatten") == 0 ? 1 : 0, &p->axis.axis, err);
}

static enum mps_status mps_map_transpose(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                         struct mps_error *err)
{
    int64_t perm[MPS_MAX_DIMS];
    int count;
    (void)c;
    enum mps_status st = mps_attr_ints(n, "perm", perm, MPS_MAX_DIMS, &count, err);
    p->transpose.n_perm = count > 0 ? count : 0;
    for (int i = 0; i < count; i++)
        p->transpose.perm[i] = perm[i] < 0 || perm[i] >= MPS_MAX_DIMS ? -1 : (int)perm[i];
    return st;
}

/* Squeeze and Unsqueeze: axes was an attribute before opset 13. */
static enum mps_status mps_map_axes_input(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          struct mps_error *err)
{
    int64_t axes[MPS_MAX_DIMS];
    int count;
    (void)p;
    enum mps_status st = mps_attr_ints(n, "axes", axes, MPS_MAX_DIMS, &count, err);
    if (st || count < 0)
        return st;
    return mps_attr_to_input(c, n, 1, axes, count, err);
}

static enum mps_status mps_map_split(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    int64_t split[8], num;
    int count;
    enum mps_status st = mps_attr_int(n, "axis", 0, &p->axis.axis, err);
    if (!st)
        st = mps_attr_int(n, "num_outputs", n->n_out, &num, err);
    if (!st)
        st = mps_attr_ints(n, "split", split, 8, &count, err);
    if (st)
        return st;
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i] < 0)
            return mps_onnx_fail(n, err, "output %d has no name", i);
    if (num != n->n_out)
        return mps_onnx_fail(n, err, "num_outputs %lld but %d outputs", (long long)num, n->n_out);
    return count > 0 ? mps_attr_to_input(c, n, 1, split, count, err) : MPS_OK;
}

static enum mps_status mps_map_slice(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    (void)p;
    if (c->opset >= 10)
        return MPS_OK;
    int64_t v[MPS_MAX_DIMS];
    int count;
    static const char *const names[] = {"starts", "ends", "axes"};
    for (int i = 0; i < 3; i++) {
        enum mps_status st = mps_attr_ints(n, names[i], v, MPS_MAX_DIMS, &count, err);
        if (st)
            return st;
        if (count < 0 && i < 2)
            return mps_onnx_fail(n, err, "attribute '%s' is required", names[i]);
        if (count >= 0 && (st = mps_attr_to_input(c, n, 1 + i, v, count, err)))
            return st;
    }
    return MPS_OK;
}

static enum mps_status mps_map_shape(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    (void)c;
    enum mps_status st = mps_attr_int(n, "start", 0, &p->shape.start, err);
    return st ? st : mps_attr_int(n, "end", INT64_MAX, &p->shape.end, err);
}

/* Constant: its value becomes an initializer that the Constant node reads. */
static enum mps_status mps_map_constant(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    (void)p;
    if (n->np->n_attribute != 1)
        return mps_onnx_fail(n, err, "must have exactly one value attribute");
    const Onnx__AttributeProto *a = n->np->attribute[0];
    const char *an = a->name ? a->name : "";
    struct mps_shape s = {0, {0}};
    int v = -1;
    if (strcmp(an, "value") == 0 && a->t) {
        enum mps_dtype dt;
        const void *data;
        enum mps_status st = mps_onnx_tensor(c, a->t, n->name, &dt, &s, &data, err);
        if (st)
            return st;
        v = mps_onnx_const(c, n->name, dt, &s, data);
    } else if (strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0) {
        bool one = an[11] == '\0';
        s = one ? (struct mps_shape){0, {0}} : (struct mps_shape){1, {(int64_t)a->n_floats}};
        v = mps_onnx_const(c, n->name, MPS_F32, &s, one ? &a->f : (const void *)a->floats);
    } else if (strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0) {
        bool one = an[9] == '\0';
        s = one ? (struct mps_shape){0, {0}} : (struct mps_shape){1, {(int64_t)a->n_ints}};
        v = mps_onnx_const(c, n->name, MPS_I64, &s, one ? &a->i : (const void *)a->ints);
    } else {
        return mps_onnx_fail(n, err, "attribute '%s' is not supported (strings and sparse tensors are not)", an);
    }
    if (v < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    n->in[0] = v;
    n->n_in = 1;
    return MPS_OK;
}

static enum mps_status mps_map_constant_of_shape(struct mps_onnx_ctx *c, struct mps_onnx_node *n,
                                                 union mps_op_params *p, struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, "value");
    p->fill.dtype = MPS_F32;
    p->fill.value = 0;
    if (!a)
        return MPS_OK;
    enum mps_dtype dt;
    struct mps_shape s;
    const void *data;
    if (!a->t)
        return mps_onnx_fail(n, err, "attribute 'value' must be a tensor");
    enum mps_status st = mps_onnx_tensor(c, a->t, n->name, &dt, &s, &data, err);
    if (st)
        return st;
    if (mps_shape_numel(&s) != 1)
        return mps_onnx_fail(n, err, "attribute 'value' must hold one element");
    double v[1];
    switch (dt) {
    case MPS_F32: v[0] = *(const float *)data; break;
    case MPS_F16: v[0] = mps_f16_to_f32(*(const uint16_t *)data); break;
    case MPS_F64: v[0] = *(const double *)data; break;
    case MPS_I64: v[0] = (double)*(const int64_t *)data; break;
    case MPS_I32: v[0] = *(const int32_t *)data; break;
    default: v[0] = *(const uint8_t *)data; break;
    }
    p->fill.dtype = dt;
    p->fill.value = v[0];
    return MPS_OK;
}

static enum mps_status mps_map_pad(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    char mode[16];
    enum mps_status st = mps_attr_string(n, "mode", "constant", mode, sizeof mode, err);
    if (st)
        return st;
    if (!strcmp(mode, "constant"))
        p->pad.mode = MPS_PAD_CONSTANT;
    else if (!strcmp(mode, "reflect"))
        p->pad.mode = MPS_PAD_REFLECT;
    else if (!strcmp(mode, "edge"))
        p->pad.mode = MPS_PAD_EDGE;
    else
        return mps_onnx_fail(n, err, "mode '%s' is not supported (constant, reflect, edge are)", mode);
    if (c->opset >= 11)
        return MPS_OK;
    int64_t pads[2 * MPS_MAX_DIMS];
    int count;
    float value;
    if ((st = mps_attr_ints(n, "pads", pads, 2 * MPS_MAX_DIMS, &count, err)) ||
        (st = mps_attr_float(n, "value", 0.0f, &value, err)))
        return st;
    if (count < 0)
        return mps_onnx_fail(n, err, "attribute 'pads' is required");
    struct mps_shape scalar = {0, {0}};
    int cv = mps_onnx_const(c, n->name, MPS_F32, &scalar, &value);
    if (cv < 0 || (st = mps_attr_to_input(c, n, 1, pads, count, err)))
        return st ? st : mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    n->in[2] = cv;
    n->n_in = 3;
    return MPS_OK;
}

/* Resize (opsets 10 to 19) and Upsample (7 to 9): the inputs become Resize's
   newest form (X, roi, scales, sizes); opset 10's Resize and every Upsample
   map coordinates as "asymmetric" and take the nearest input as onnxruntime
   does for them (MPS_NEAREST_LEGACY). */
static enum mps_status mps_map_resize(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                         "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    struct mps_resize_params *r = &p->resize;
    bool legacy = strcmp(n->np->op_type, "Upsample") == 0 || c->opset < 11;
    char mode[32], coord[32], nearest[32], policy[32];
    int64_t antialias, exclude, axes[MPS_MAX_DIMS];
    int n_axes;
    enum mps_status st = mps_attr_string(n, "mode", "nearest", mode, sizeof mode, err);
    if (!st)
        st = mps_attr_string(n, "coordinate_transformation_mode", "half_pixel", coord, sizeof coord, err);
    if (!st)
        st = mps_attr_string(n, "nearest_mode", "round_prefer_floor", nearest, sizeof nearest, err);
    if (!st)
        st = mps_attr_string(n, "keep_aspect_ratio_policy", "stretch", policy, sizeof policy, err);
    if (!st)
        st = mps_attr_int(n, "antialias", 0, &antialias, err);
    if (!st)
        st = mps_attr_int(n, "exclude_outside", 0, &exclude, err);
    if (!st)
        st = mps_attr_float(n, "cubic_coeff_a", -0.75f, &r->cubic_a, err);
    if (!st)
        st = mps_attr_float(n, "extrapolation_value", 0.0f, &r->extrapolation, err);
    if (!st)
        st = mps_attr_ints(n, "axes", axes, MPS_MAX_DIMS, &n_axes, err);
    if (st)
        return st;
    if (!strcmp(mode, "nearest"))
        r->mode = MPS_RESIZE_NEAREST;
    else if (!strcmp(mode, "linear") || (legacy && !strcmp(mode, "bilinear")))
        r->mode = MPS_RESIZE_LINEAR;
    else if (!strcmp(mode, "cubic") && !legacy)
        r->mode = MPS_RESIZE_CUBIC;
    else
        return mps_onnx_fail(n, err, "mode '%s' is not supported (nearest, linear%s are)", mode,
                             legacy ? "" : ", cubic");
    r->exclude_outside = exclude != 0;
    r->coord = MPS_COORD_ASYMMETRIC;
    r->nearest = MPS_NEAREST_LEGACY;
    if (!legacy) {
        int i = 0;
        while (i < 6 && strcmp(coord, coords[i]))
            i++;
        if (i == 6)
            return mps_onnx_fail(n, err, "coordinate_transformation_mode '%s' is not supported", coord);
        r->coord = (enum mps_resize_coord)i;
        for (i = 0; i < 4 && strcmp(nearest, nearests[i]); i++)
            ;
        if (i == 4)
            return mps_onnx_fail(n, err, "nearest_mode '%s' is not supported", nearest);
        r->nearest = (enum mps_resize_nearest)i;
    }
    if (antialias)
        return mps_onnx_fail(n, err, "antialias is not supported");
    if (strcmp(policy, "stretch"))
        return mps_onnx_fail(n, err, "keep_aspect_ratio_policy '%s' is not supported (stretch is)", policy);
    r->n_axes = n_axes > 0 ? n_axes : 0;
    for (int i = 0; i < r->n_axes; i++)
        r->axes[i] = axes[i];
    if (!legacy)
        return MPS_OK;
    /* Upsample 7: scales as an attribute; Upsample 9 and Resize 10: (X, scales) */
    const Onnx__AttributeProto *a = mps_attr(n, "scales");
    int scales = n->n_in > 1 ? n->in[1] : -1;
    if (a) {
        if (n->n_in > 1)
            return mps_onnx_fail(n, err, "scales given both as attribute and as input");
        if (a->n_floats > MPS_MAX_DIMS)
            return mps_onnx_fail(n, err, "attribute 'scales' has %zu values", a->n_floats);
        struct mps_shape s = {1, {(int64_t)a->n_floats}};
        if ((scales = mps_onnx_const(c, n->name, MPS_F32, &s, a->floats)) < 0)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    if (scales < 0)
        return mps_onnx_fail(n, err, "scales are required");
    n->in[1] = -1;
    n->in[2] = scales;
    n->n_in = 3;
    return MPS_OK;
}

static enum mps_status mps_map_lrn(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    struct mps_lrn_params *q = &p->lrn;
    (void)c;
    if (!mps_attr(n, "size"))
        return mps_onnx_fail(n, err, "attribute 'size' is required");
    enum mps_status st = mps_attr_int(n, "size", 1, &q->size, err);
    if (!st)
        st = mps_attr_float(n, "alpha", q->alpha, &q->alpha, err);
    if (!st)
        st = mps_attr_float(n, "beta", q->beta, &q->beta, err);
    if (!st)
        st = mps_attr_float(n, "bias", q->bias, &q->bias, err);
    if (!st && q->size < 1)
        return mps_onnx_fail(n, err, "size %lld is not 1 or more", (long long)q->size);
    return st;
}

static enum mps_status mps_map_topk(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    int64_t largest, sorted, k;
    enum mps_status st = mps_attr_int(n, "axis", -1, &p->topk.axis, err);
    if (!st)
        st = mps_attr_int(n, "largest", 1, &largest, err);
    if (!st)
        st = mps_attr_int(n, "sorted", 1, &sorted, err);
    if (st)
        return st;
    p->topk.largest = largest != 0;
    if (c->opset < 10) { /* k was an attribute */
        if ((st = mps_attr_int(n, "k", 0, &k, err)))
            return st;
        return mps_attr_to_input(c, n, 1, &k, 1, err);
    }
    return MPS_OK;
}

static enum mps_status mps_map_onehot(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    (void)c;
    return mps_attr_int(n, "axis", -1, &p->onehot.axis, err);
}

static enum mps_status mps_map_index(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    char red[16];
    (void)c;
    enum mps_status st = mps_attr_int(n, "axis", 0, &p->index.axis, err);
    if (!st)
        st = mps_attr_int(n, "batch_dims", 0, &p->index.batch_dims, err);
    if (!st)
        st = mps_attr_string(n, "reduction", "none", red, sizeof red, err);
    if (st)
        return st;
    for (int i = 0; i < 5; i++)
        if (!strcmp(red, names[i])) {
            p->index.reduction = (enum mps_scatter_reduction)i;
            return MPS_OK;
        }
    return mps_onnx_fail(n, err, "reduction '%s' is not none, add, mul, max or min", red);
}

static enum mps_status mps_map_trilu(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    int64_t upper;
    (void)c;
    enum mps_status st = mps_attr_int(n, "upper", 1, &upper, err);
    p->trilu.upper = upper != 0;
    return st;
}

static enum mps_status mps_map_cumsum(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    int64_t exclusive, reverse;
    (void)c;
    enum mps_status st = mps_attr_int(n, "exclusive", 0, &exclusive, err);
    if (!st)
        st = mps_attr_int(n, "reverse", 0, &reverse, err);
    p->cumsum.exclusive = exclusive != 0;
    p->cumsum.reverse = reverse != 0;
    return st;
}

static enum mps_status mps_map_depth(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    char mode[16];
    (void)c;
    if (!mps_attr(n, "blocksize"))
        return mps_onnx_fail(n, err, "attribute 'blocksize' is required");
    enum mps_status st = mps_attr_int(n, "blocksize", 0, &p->depth.block, err);
    if (!st)
        st = mps_attr_string(n, "mode", "DCR", mode, sizeof mode, err);
    if (st)
        return st;
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
        return mps_onnx_fail(n, err, "mode '%s' is not DCR or CRD", mode);
    p->depth.crd = !strcmp(mode, "CRD");
    return MPS_OK;
}

static enum mps_status mps_map_arg(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    int64_t keep, last;
    (void)c;
    enum mps_status st = mps_attr_int(n, "axis", 0, &p->arg.axis, err);
    if (!st)
        st = mps_attr_int(n, "keepdims", 1, &keep, err);
    if (!st)
        st = mps_attr_int(n, "select_last_index", 0, &last, err);
    p->arg.keepdims = keep != 0;
    p->arg.last = last != 0;
    return st;
}

/* ---- the table ---------------------------------------------------------------------- */

struct mps_onnx_rule {
    const char *op_type;
    enum mps_op op;
    const char *attrs; /* every attribute accepted, space separated */
    mps_onnx_mapper map;
};

static const struct mps_onnx_rule mps_onnx_rules[] = {
    {"MatMul", MPS_OP_MATMUL, "", NULL},
    {"Gemm", MPS_OP_GEMM, "alpha beta transA transB broadcast", mps_map_gemm},
    {"Conv", MPS_OP_CONV, "auto_pad dilations group kernel_shape pads strides", mps_map_conv},
    {"ConvTranspose", MPS_OP_CONV_TRANSPOSE,
     "auto_pad dilations group kernel_shape pads strides output_padding output_shape", mps_map_conv},
    {"MaxPool", MPS_OP_MAX_POOL, "auto_pad ceil_mode dilations kernel_shape pads storage_order strides", mps_map_pool},
    {"AveragePool", MPS_OP_AVERAGE_POOL, "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides",
     mps_map_pool},
    {"GlobalAveragePool", MPS_OP_GLOBAL_AVERAGE_POOL, "", NULL},
    {"GlobalLpPool", MPS_OP_GLOBAL_LP_POOL, "p", mps_map_global_lp},
    {"LpPool", MPS_OP_POW, "auto_pad ceil_mode dilations kernel_shape p pads strides", mps_map_lppool},
    {"GlobalMaxPool", MPS_OP_GLOBAL_MAX_POOL, "", NULL},
    {"BatchNormalization", MPS_OP_BATCH_NORM, "epsilon momentum spatial is_test training_mode", mps_map_batch_norm},
    {"LayerNormalization", MPS_OP_LAYER_NORM, "axis epsilon stash_type", mps_map_layer_norm},
    {"InstanceNormalization", MPS_OP_INSTANCE_NORM, "epsilon", mps_map_instance_norm},
    {"Softmax", MPS_OP_SOFTMAX, "axis", mps_map_softmax},
    {"LogSoftmax", MPS_OP_LOG_SOFTMAX, "axis", mps_map_softmax},
    {"Hardmax", MPS_OP_HARDMAX, "axis", mps_map_softmax},
    {"LRN", MPS_OP_LRN, "alpha beta bias size", mps_map_lrn},
    {"Relu", MPS_OP_RELU, "", NULL},
    {"LeakyRelu", MPS_OP_LEAKY_RELU, "alpha", mps_map_act},
    {"Elu", MPS_OP_ELU, "alpha", mps_map_act},
    {"Selu", MPS_OP_SELU, "alpha gamma", mps_map_act},
    {"Sigmoid", MPS_OP_SIGMOID, "", NULL},
    {"HardSigmoid", MPS_OP_HARD_SIGMOID, "alpha beta", mps_map_act},
    {"HardSwish", MPS_OP_HARD_SWISH, "", NULL},
    {"Tanh", MPS_OP_TANH, "", NULL},
    {"Softplus", MPS_OP_SOFTPLUS, "", NULL},
    {"Softsign", MPS_OP_SOFTSIGN, "", NULL},
    {"Gelu", MPS_OP_GELU, "approximate", mps_map_act},
    {"Erf", MPS_OP_ERF, "", NULL},
    {"Exp", MPS_OP_EXP, "", NULL},
    {"Log", MPS_OP_LOG, "", NULL},
    {"Sqrt", MPS_OP_SQRT, "", NULL},
    {"Abs", MPS_OP_ABS, "", NULL},
    {"Neg", MPS_OP_NEG, "", NULL},
    {"Reciprocal", MPS_OP_RECIPROCAL, "", NULL},
    {"Floor", MPS_OP_FLOOR, "", NULL},
    {"Ceil", MPS_OP_CEIL, "", NULL},
    {"Sign", MPS_OP_SIGN, "", NULL},
    {"Round", MPS_OP_ROUND, "", NULL},
    {"ThresholdedRelu", MPS_OP_THRESHOLDED_RELU, "alpha", mps_map_act},
    {"Shrink", MPS_OP_SHRINK, "lambd bias", mps_map_shrink},
    {"Clip", MPS_OP_CLIP, "min max", mps_map_clip},
    {"Identity", MPS_OP_IDENTITY, "", NULL},
    {"Dropout", MPS_OP_DROPOUT, "ratio seed is_test", mps_map_dropout},
    {"Cast", MPS_OP_CAST, "to saturate", mps_map_cast},
    {"PRelu", MPS_OP_PRELU, "", mps_map_prelu},
    {"Add", MPS_OP_ADD, "broadcast axis", mps_map_binary},
    {"Sub", MPS_OP_SUB, "broadcast axis", mps_map_binary},
    {"Mul", MPS_OP_MUL, "broadcast axis", mps_map_binary},
    {"Div", MPS_OP_DIV, "broadcast axis", mps_map_binary},
    {"Pow", MPS_OP_POW, "broadcast axis", mps_map_binary},
    {"Max", MPS_OP_MAX, "", NULL},
    {"Min", MPS_OP_MIN, "", NULL},
    {"Sum", MPS_OP_SUM, "", NULL},
    {"Mean", MPS_OP_MEAN, "", NULL},
    {"Mod", MPS_OP_MOD, "fmod", mps_map_mod},
    {"Greater", MPS_OP_GREATER, "broadcast axis", mps_map_binary},
    {"Less", MPS_OP_LESS, "broadcast axis", mps_map_binary},
    {"Equal", MPS_OP_EQUAL, "broadcast axis", mps_map_binary},
    {"GreaterOrEqual", MPS_OP_GREATER_OR_EQUAL, "", NULL},
    {"LessOrEqual", MPS_OP_LESS_OR_EQUAL, "", NULL},
    {"And", MPS_OP_AND, "broadcast axis", mps_map_binary},
    {"Or", MPS_OP_OR, "broadcast axis", mps_map_binary},
    {"Xor", MPS_OP_XOR, "broadcast axis", mps_map_binary},
    {"Not", MPS_OP_NOT, "", NULL},
    {"IsNaN", MPS_OP_IS_NAN, "", NULL},
    {"IsInf", MPS_OP_IS_INF, "detect_negative detect_positive", mps_map_isinf},
    {"Where", MPS_OP_WHERE, "", NULL},
    {"ReduceMean", MPS_OP_REDUCE_MEAN, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceSum", MPS_OP_REDUCE_SUM, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceMax", MPS_OP_REDUCE_MAX, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceMin", MPS_OP_REDUCE_MIN, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceProd", MPS_OP_REDUCE_PROD, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceL1", MPS_OP_REDUCE_L1, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceL2", MPS_OP_REDUCE_L2, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceSumSquare", MPS_OP_REDUCE_SUM_SQUARE, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceLogSum", MPS_OP_REDUCE_LOG_SUM, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"ReduceLogSumExp", MPS_OP_REDUCE_LOG_SUM_EXP, "axes keepdims noop_with_empty_axes", mps_map_reduce},
    {"Reshape", MPS_OP_RESHAPE, "allowzero", mps_map_reshape},
    {"Flatten", MPS_OP_FLATTEN, "axis", mps_map_axis},
    {"Transpose", MPS_OP_TRANSPOSE, "perm", mps_map_transpose},
    {"Squeeze", MPS_OP_SQUEEZE, "axes", mps_map_axes_input},
    {"Unsqueeze", MPS_OP_UNSQUEEZE, "axes", mps_map_axes_input},
    {"Concat", MPS_OP_CONCAT, "axis", mps_map_axis},
    {"Split", MPS_OP_SPLIT, "axis split num_outputs", mps_map_split},
    {"Slice", MPS_OP_SLICE, "starts ends axes", mps_map_slice},
    {"Gather", MPS_OP_GATHER, "axis", mps_map_axis},
    {"GatherElements", MPS_OP_GATHER_ELEMENTS, "axis", mps_map_axis},
    {"GatherND", MPS_OP_GATHER_ND, "batch_dims", mps_map_index},
    {"ScatterElements", MPS_OP_SCATTER_ELEMENTS, "axis reduction", mps_map_index},
    {"Scatter", MPS_OP_SCATTER_ELEMENTS, "axis", mps_map_index},
    {"ScatterND", MPS_OP_SCATTER_ND, "reduction", mps_map_index},
    {"Shape", MPS_OP_SHAPE, "start end", mps_map_shape},
    {"Constant", MPS_OP_CONSTANT, "value value_float value_floats value_int value_ints value_string value_strings "
                                  "sparse_value", mps_map_constant},
    {"ConstantOfShape", MPS_OP_CONSTANT_OF_SHAPE, "value", mps_map_constant_of_shape},
    {"Expand", MPS_OP_EXPAND, "", NULL},
    {"Pad", MPS_OP_PAD, "mode pads value", mps_map_pad},
    {"Resize", MPS_OP_RESIZE,
     "mode coordinate_transformation_mode nearest_mode cubic_coeff_a exclude_outside extrapolation_value antialias "
     "axes keep_aspect_ratio_policy",
     mps_map_resize},
    {"Upsample", MPS_OP_RESIZE, "mode scales", mps_map_resize},
    {"DepthToSpace", MPS_OP_DEPTH_TO_SPACE, "blocksize mode", mps_map_depth},
    {"Trilu", MPS_OP_TRILU, "upper", mps_map_trilu},
    {"CumSum", MPS_OP_CUM_SUM, "exclusive reverse", mps_map_cumsum},
    {"Tile", MPS_OP_TILE, "", NULL},
    {"Range", MPS_OP_RANGE, "", NULL},
    {"OneHot", MPS_OP_ONE_HOT, "axis", mps_map_onehot},
    {"TopK", MPS_OP_TOP_K, "axis largest sorted k", mps_map_topk},
    {"ArgMax", MPS_OP_ARG_MAX, "axis keepdims select_last_index", mps_map_arg},
    {"ArgMin", MPS_OP_ARG_MIN, "axis keepdims select_last_index", mps_map_arg},
    {"SpaceToDepth", MPS_OP_SPACE_TO_DEPTH, "blocksize", mps_map_depth},
};

static bool mps_onnx_listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return false; /* and strstr would find "" everywhere, forever */
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
            return true;
    return false;
}

enum mps_status mps_onnx_map_node(struct mps_onnx_ctx *c, struct mps_onnx_node *n, struct mps_error *err)
{
    const struct mps_onnx_rule *r = NULL;
    for (size_t i = 0; i < sizeof mps_onnx_rules / sizeof mps_onnx_rules[0] && !r; i++)
        if (strcmp(mps_onnx_rules[i].op_type, n->np->op_type) == 0)
            r = &mps_onnx_rules[i];
    if (!r)
        return mps_onnx_fail(n, err, "op %s is not supported", n->np->op_type);
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->np->attribute[i];
        if (!a->name || !mps_onnx_listed(r->attrs, a->name))
            return mps_onnx_fail(n, err, "attribute '%s' is not supported", a->name ? a->name : "");
        if (a->ref_attr_name)
            return mps_onnx_fail(n, err, "attribute '%s' refers to a function attribute", a->name);
    }
    union mps_op_params p;
    mps_op_params_default(r->op, &p);
    enum mps_status st = r->map ? r->map(c, n, &p, err) : MPS_OK;
    if (st)
        return st;
    enum mps_op op = r->op;
    if ((op == MPS_OP_SOFTMAX || op == MPS_OP_LOG_SOFTMAX || op == MPS_OP_HARDMAX) && c->opset < 13) {
        op = MPS_OP_RESHAPE; /* the last node of the legacy expansion */
        mps_op_params_default(op, &p);
    }
    /* Trailing omitted outputs are dropped; an omitted one in the middle gets a throwaway value. */
    while (n->n_out > 0 && n->out[n->n_out - 1] < 0)
        n->n_out--;
    while (n->n_in > 0 && n->in[n->n_in - 1] < 0)
        n->n_in--;
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i] < 0 && (n->out[i] = mps_onnx_temp(c, n->name)) < 0)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    const struct mps_op_info *info = mps_op_info(op);
    if (n->n_in < info->in_min || (info->in_max >= 0 && n->n_in > info->in_max))
        return mps_onnx_fail(n, err, "%d inputs; %s takes %d to %d here", n->n_in, n->np->op_type, info->in_min,
                             info->in_max);
    if (n->n_out < 1 || (info->out_max >= 0 && n->n_out > info->out_max))
        return mps_onnx_fail(n, err, "%d outputs; at most %d are supported", n->n_out, info->out_max);
    st = mps_graph_add_node(c->g, op, n->name, n->in, n->n_in, n->out, n->n_out, &p, err);
    if (st == MPS_ERR_MODEL && err && !strstr(err->msg, n->name)) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        return mps_onnx_fail(n, err, "%s", why);
    }
    return st;
}
