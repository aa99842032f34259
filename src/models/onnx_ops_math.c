/* onnx_ops_math.c: the rows of onnx_ops.c for matrix products, convolution
   and pooling windows, normalization and the elementwise ops (activations,
   arithmetic, comparisons and logic), with their mappers. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "onnx_internal.h"

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

/* Clip: its bounds constants (attributes before opset 11, constant inputs
   after), or where a bound is computed at run time (a spectrogram's floor
   at its maximum less 80 dB), Max and Min nodes, which broadcast it. */
static enum mps_status mps_map_clip(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    enum mps_status st = MPS_OK;
    if (c->opset < 11) {
        st = mps_attr_float(n, "min", -INFINITY, &p->act.alpha, err);
        return st ? st : mps_attr_float(n, "max", INFINITY, &p->act.beta, err);
    }
    bool computed = false;
    for (int i = 1; i < n->n_in && i < 3 && !st; i++) {
        bool known = true;
        if (n->in[i] >= 0)
            st = mps_passes_fold_value(c->g, n->in[i], &known, err);
        computed = computed || !known;
    }
    if (st || !computed)
        return st;
    int x = n->in[0], lo = n->n_in > 1 ? n->in[1] : -1, hi = n->n_in > 2 ? n->in[2] : -1;
    if (lo >= 0 && hi >= 0) {
        int t = mps_onnx_temp(c, n->name);
        if (t < 0)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        char name[200];
        snprintf(name, sizeof name, "%s/max", n->name);
        if ((st = mps_graph_add_node(c->g, MPS_OP_MAX, name, (int[]){x, lo}, 2, &t, 1, NULL, err)))
            return st;
        x = t;
    }
    n->in[0] = x;
    n->in[1] = hi >= 0 ? hi : lo;
    n->n_in = 2;
    n->last_op = hi >= 0 ? MPS_OP_MIN : MPS_OP_MAX;
    return MPS_OK;
}

static enum mps_status mps_map_cast(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    int64_t to;
    enum mps_status st = mps_attr_int(n, "to", -1, &to, err);
    if (st)
        return st;
    if (to < INT32_MIN || to > INT32_MAX || !mps_onnx_dtype((int32_t)to, &p->cast.to))
        return mps_onnx_fail(n, err, "cast to %s is not supported", mps_onnx_dtype_name((int32_t)to));
    if ((p->cast.to != MPS_F16 && p->cast.to != MPS_BF16) || !c->widen)
        return MPS_OK;
    /* to f16 (bf16) in a model computed in f32 (model.h): rounds so, and the value read on is that f32 */
    int half = mps_onnx_temp(c, n->name);
    union mps_op_params to16 = *p;
    if (half < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    st = mps_graph_add_node(c->g, MPS_OP_CAST, n->name, n->in, 1, &half, 1, &to16, err);
    n->in[0] = half;
    p->cast.to = MPS_F32;
    c->n_widened++;
    return st;
}

/* CastLike: a Cast to the dtype of its second input, which shape inference
   reads (op.h). In a float16 model computed in f32 (model.h) a CastLike to
   an f16 tensor is to that tensor's f32, and does not round. */
static enum mps_status mps_map_castlike(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    (void)c;
    if (n->n_in != 2 || n->in[1] < 0)
        return mps_onnx_fail(n, err, "CastLike takes an input and the tensor whose type it takes");
    p->cast.to = MPS_DTYPE_COUNT;
    return MPS_OK;
}

/* RNN, GRU, LSTM: direction, layout, clip, hidden_size, input_forget,
   linear_before_reset, and the activations with their alpha and beta (each
   list consumed as onnxruntime does: an alpha by each function that takes
   one, in order). Outputs the file omits are made anyway (op.h). */
static enum mps_status mps_map_rnn(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    static const struct {
        const char *name;
        enum mps_rnn_fn fn;
        float alpha, beta; /* NaN: takes none */
    } fns[] = {
        {"Sigmoid", MPS_RNN_SIGMOID, NAN, NAN},
        {"Tanh", MPS_RNN_TANH, NAN, NAN},
        {"Relu", MPS_RNN_RELU, NAN, NAN},
        {"Affine", MPS_RNN_AFFINE, 1.0f, 0.0f},
        {"LeakyRelu", MPS_RNN_LEAKY_RELU, 0.01f, NAN},
        {"ThresholdedRelu", MPS_RNN_THRESHOLDED_RELU, 1.0f, NAN},
        {"ScaledTanh", MPS_RNN_SCALED_TANH, 1.0f, 1.0f},
        {"HardSigmoid", MPS_RNN_HARD_SIGMOID, 0.2f, 0.5f},
        {"Elu", MPS_RNN_ELU, 1.0f, NAN},
        {"Softsign", MPS_RNN_SOFTSIGN, NAN, NAN},
        {"Softplus", MPS_RNN_SOFTPLUS, NAN, NAN},
    };
    struct mps_rnn_params *r = &p->rnn;
    char dir[32], names[6][32];
    float alpha[6], beta[6];
    int64_t hidden, layout, input_forget, lbr;
    enum mps_op op = !strcmp(n->np->op_type, "LSTM")  ? MPS_OP_LSTM
                     : !strcmp(n->np->op_type, "GRU") ? MPS_OP_GRU
                                                      : MPS_OP_RNN;
    int n_names, n_alpha, n_beta, per = mps_rnn_fns(op);
    enum mps_status st;
    if ((st = mps_attr_string(n, "direction", "forward", dir, sizeof dir, err)) ||
        (st = mps_attr_int(n, "hidden_size", 0, &hidden, err)) || (st = mps_attr_int(n, "layout", 0, &layout, err)) ||
        (st = mps_attr_int(n, "input_forget", 0, &input_forget, err)) ||
        (st = mps_attr_int(n, "linear_before_reset", 0, &lbr, err)) ||
        (st = mps_attr_float(n, "clip", 0.0f, &r->clip, err)) ||
        (st = mps_attr_strings(n, "activations", names, 6, &n_names, err)) ||
        (st = mps_attr_floats(n, "activation_alpha", alpha, 6, &n_alpha, err)) ||
        (st = mps_attr_floats(n, "activation_beta", beta, 6, &n_beta, err)))
        return st;
    r->direction = !strcmp(dir, "forward") ? 0 : !strcmp(dir, "reverse") ? 1 : !strcmp(dir, "bidirectional") ? 2 : -1;
    if (r->direction < 0)
        return mps_onnx_fail(n, err, "direction '%s' is not forward, reverse or bidirectional", dir);
    if (hidden < 0 || (layout != 0 && layout != 1) || !(r->clip >= 0))
        return mps_onnx_fail(n, err, "hidden_size %lld, layout %lld or clip %g is out of range", (long long)hidden,
                             (long long)layout, (double)r->clip);
    r->hidden = hidden, r->batch_first = layout == 1, r->input_forget = input_forget != 0,
    r->linear_before_reset = lbr != 0;
    int dirs = r->direction == 2 ? 2 : 1, used_alpha = 0, used_beta = 0;
    if (n_names >= 0 && n_names != per && n_names != per * dirs)
        return mps_onnx_fail(n, err, "%d activations, not %d a direction", n_names, per);
    for (int k = 0; k < n_names; k++) {
        size_t f = 0;
        while (f < sizeof fns / sizeof fns[0] && strcasecmp(fns[f].name, names[k]))
            f++;
        if (f == sizeof fns / sizeof fns[0])
            return mps_onnx_fail(n, err, "activation '%s' is not one ONNX defines for it", names[k]);
        struct mps_rnn_act a = {fns[f].fn, fns[f].alpha, fns[f].beta};
        if (!isnan(a.alpha) && used_alpha < n_alpha)
            a.alpha = alpha[used_alpha++];
        if (!isnan(a.beta) && used_beta < n_beta)
            a.beta = beta[used_beta++];
        r->act[k / per * 3 + k % per] = a;
        if (n_names == per && dirs == 2) /* one list for both directions */
            r->act[3 + k] = a;
    }
    int outs = mps_op_info(op)->out_max;
    for (int o = 0; o < outs; o++)
        if ((o >= n->n_out || n->out[o] < 0) && (n->out[o] = mps_onnx_temp(c, n->name)) < 0)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    n->n_out = outs;
    return MPS_OK;
}

static enum mps_status mps_map_einsum(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, "equation");
    (void)c;
    if (!a)
        return mps_onnx_fail(n, err, "no equation");
    if (a->s.len >= sizeof p->einsum.equation)
        return mps_onnx_fail(n, err, "an equation of %zu characters; at most %zu are supported", a->s.len,
                             sizeof p->einsum.equation - 1);
    return mps_attr_string(n, "equation", "", p->einsum.equation, sizeof p->einsum.equation, err);
}

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: reduction and ignore_index (op.h). */
static enum mps_status mps_map_loss(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    char red[32];
    enum mps_status st;
    (void)c;
    if ((st = mps_attr_string(n, "reduction", "mean", red, sizeof red, err)) ||
        (st = mps_attr_int(n, "ignore_index", 0, &p->loss.ignore_index, err)))
        return st;
    p->loss.has_ignore = mps_attr(n, "ignore_index") != NULL;
    static const char *const names[] = {[MPS_LOSS_MEAN] = "mean", [MPS_LOSS_SUM] = "sum", [MPS_LOSS_NONE] = "none"};
    int r = 0;
    while (r < 3 && strcmp(red, names[r]))
        r++;
    p->loss.reduction = (enum mps_loss_reduction)r;
    if (r == 3)
        return mps_onnx_fail(n, err, "reduction '%s' is not none, sum or mean", red);
    return MPS_OK;
}

/* Dropout in inference: the output is the input; a requested mask is all true (training mode:
   onnx_train.c). */
static enum mps_status mps_map_dropout(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                       struct mps_error *err)
{
    bool training = false;
    enum mps_status train = mps_onnx_dropout_training(c, n, p, &training, err);
    if (train || training)
        return train;
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
        return mps_onnx_fail(n, err, "axis %lld does not fit inputs of rank %d and %d", (long long)axis, a->shape.ndim,
                             b->shape.ndim);
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

static enum mps_status mps_map_bitshift(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    char dir[16];
    (void)c;
    enum mps_status st = mps_attr_string(n, "direction", "", dir, sizeof dir, err);
    if (st)
        return st;
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
        return mps_onnx_fail(n, err, "direction '%s' is not LEFT or RIGHT", dir);
    p->binary.right = !strcmp(dir, "RIGHT");
    return MPS_OK;
}

static enum mps_status mps_map_isinf(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err)
{
    int64_t neg = 1, pos = 1;
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

enum mps_status mps_onnx_conv_params(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
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

static enum mps_status mps_map_unpool(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                      struct mps_error *err)
{
    (void)c;
    enum mps_status st = mps_map_window(n, &p->pool.win, true, err);
    if (!st && p->pool.win.auto_pad != MPS_AUTO_PAD_NOTSET)
        return mps_onnx_fail(n, err, "MaxUnpool takes no auto_pad");
    return st;
}

static enum mps_status mps_map_roialign(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                        struct mps_error *err)
{
    struct mps_roialign_params *r = &p->roialign;
    char mode[16], coord[32];
    enum mps_status st;
    /* opset 10 had no coordinate_transformation_mode and behaved as output_half_pixel */
    if ((st = mps_attr_string(n, "mode", "avg", mode, sizeof mode, err)) ||
        (st = mps_attr_string(n, "coordinate_transformation_mode", c->opset >= 16 ? "half_pixel" : "output_half_pixel",
                              coord, sizeof coord, err)) ||
        (st = mps_attr_int(n, "output_height", 1, &r->out_h, err)) ||
        (st = mps_attr_int(n, "output_width", 1, &r->out_w, err)) ||
        (st = mps_attr_int(n, "sampling_ratio", 0, &r->sampling, err)) ||
        (st = mps_attr_float(n, "spatial_scale", 1.0f, &r->scale, err)))
        return st;
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return mps_onnx_fail(n, err, "mode '%s' is not avg or max", mode);
    if (strcmp(coord, "half_pixel") && strcmp(coord, "output_half_pixel"))
        return mps_onnx_fail(n, err, "coordinate_transformation_mode '%s' is not half_pixel or output_half_pixel",
                             coord);
    if (r->out_h < 1 || r->out_w < 1 || r->sampling < 0 || r->out_h > 4096 || r->out_w > 4096 || r->sampling > 64)
        return mps_onnx_fail(n, err, "output_height %lld, output_width %lld or sampling_ratio %lld is out of range",
                             (long long)r->out_h, (long long)r->out_w, (long long)r->sampling);
    r->max = !strcmp(mode, "max");
    r->half_pixel = !strcmp(coord, "half_pixel");
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

/* Celu as alpha * Elu(x / alpha) (its definition: max(0, x) + min(0,
   alpha (exp(x / alpha) - 1))): the row's Mul by alpha last. */
static enum mps_status mps_map_celu(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                    struct mps_error *err)
{
    float alpha;
    enum mps_status st = mps_attr_float(n, "alpha", 1.0f, &alpha, err);
    if (st)
        return st;
    if (!(alpha != 0))
        return mps_onnx_fail(n, err, "alpha %g must not be 0", (double)alpha);
    union mps_op_params none, elu;
    mps_op_params_default(MPS_OP_DIV, &none);
    mps_op_params_default(MPS_OP_ELU, &elu);
    elu.act.alpha = 1.0f;
    struct mps_shape one = {0, {0}};
    int ca = mps_onnx_const(c, n->name, MPS_F32, &one, &alpha), q = mps_onnx_temp(c, n->name),
        e = mps_onnx_temp(c, n->name);
    if (ca < 0 || q < 0 || e < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    if ((st = mps_graph_add_node(c->g, MPS_OP_DIV, n->name, (int[]){n->in[0], ca}, 2, &q, 1, &none, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_ELU, n->name, &q, 1, &e, 1, &elu, err)))
        return st;
    n->in[0] = e, n->in[1] = ca, n->n_in = 2;
    *p = none;
    return MPS_OK;
}

/* MeanVarianceNormalization as ONNX's function writes it: (X - mean) /
   (sqrt(mean(X^2) - mean^2) + 1e-9) over axes (default 0, 2, 3); the row's
   Div last. */
static enum mps_status mps_map_mvn(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                   struct mps_error *err)
{
    int64_t axes[MPS_MAX_DIMS] = {0, 2, 3};
    int count;
    enum mps_status st = mps_attr_ints(n, "axes", axes, MPS_MAX_DIMS, &count, err);
    if (st)
        return st;
    struct mps_shape one = {0, {0}}, sa = {1, {count < 0 ? 3 : count}};
    float eps = 1e-9f;
    union mps_op_params none, mean;
    mps_op_params_default(MPS_OP_SUB, &none);
    mps_op_params_default(MPS_OP_REDUCE_MEAN, &mean);
    int x = n->in[0], ax = mps_onnx_const(c, n->name, MPS_I64, &sa, axes),
        ce = mps_onnx_const(c, n->name, MPS_F32, &one, &eps);
    int v[8];
    for (int i = 0; i < 8; i++)
        v[i] = mps_onnx_temp(c, n->name);
    if (ax < 0 || ce < 0 || v[7] < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    /* v: mean, x^2, mean(x^2), mean^2, variance, std, x - mean, std + eps */
    if ((st = mps_graph_add_node(c->g, MPS_OP_REDUCE_MEAN, n->name, (int[]){x, ax}, 2, &v[0], 1, &mean, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_MUL, n->name, (int[]){x, x}, 2, &v[1], 1, &none, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_REDUCE_MEAN, n->name, (int[]){v[1], ax}, 2, &v[2], 1, &mean, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_MUL, n->name, (int[]){v[0], v[0]}, 2, &v[3], 1, &none, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_SUB, n->name, (int[]){v[2], v[3]}, 2, &v[4], 1, &none, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_SQRT, n->name, &v[4], 1, &v[5], 1, NULL, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_SUB, n->name, (int[]){x, v[0]}, 2, &v[6], 1, &none, err)) ||
        (st = mps_graph_add_node(c->g, MPS_OP_ADD, n->name, (int[]){v[5], ce}, 2, &v[7], 1, &none, err)))
        return st;
    n->in[0] = v[6], n->in[1] = v[7], n->n_in = 2;
    *p = none;
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
    if (spatial != 1)
        return mps_onnx_fail(n, err, "spatial=0 (per-element statistics) is not supported");
    if (training)
        return mps_onnx_bn_training(c, n, p, err);
    if (n->n_out > 1) /* before opset 14 extra outputs meant training: which statistics Y used is unsaid */
        return mps_onnx_fail(n, err, "outputs beside Y without training_mode (running statistics) are not supported");
    return MPS_OK;
}

static enum mps_status mps_map_instance_norm(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                             struct mps_error *err)
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
    n->last_op = MPS_OP_RESHAPE;
    n->in[0] = y;
    n->in[1] = s;
    n->n_in = 2;
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

const struct mps_onnx_rule mps_onnx_rules_math[] = {
    {"MatMul", MPS_OP_MATMUL, "", NULL},
    {"Einsum", MPS_OP_EINSUM, "equation", mps_map_einsum},
    {"Det", MPS_OP_DET, "", NULL},
    {"Gemm", MPS_OP_GEMM, "alpha beta transA transB broadcast", mps_map_gemm},
    {"Conv", MPS_OP_CONV, "auto_pad dilations group kernel_shape pads strides", mps_onnx_conv_params},
    {"ConvTranspose", MPS_OP_CONV_TRANSPOSE,
     "auto_pad dilations group kernel_shape pads strides output_padding output_shape", mps_onnx_conv_params},
    {"MaxPool", MPS_OP_MAX_POOL, "auto_pad ceil_mode dilations kernel_shape pads storage_order strides", mps_map_pool},
    {"AveragePool", MPS_OP_AVERAGE_POOL, "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides",
     mps_map_pool},
    {"GlobalAveragePool", MPS_OP_GLOBAL_AVERAGE_POOL, "", NULL},
    {"GlobalLpPool", MPS_OP_GLOBAL_LP_POOL, "p", mps_map_global_lp},
    {"Celu", MPS_OP_MUL, "alpha", mps_map_celu},
    {"MeanVarianceNormalization", MPS_OP_DIV, "axes", mps_map_mvn},
    {"LpPool", MPS_OP_POW, "auto_pad ceil_mode dilations kernel_shape p pads strides", mps_map_lppool},
    {"GlobalMaxPool", MPS_OP_GLOBAL_MAX_POOL, "", NULL},
    {"MaxUnpool", MPS_OP_MAX_UNPOOL, "kernel_shape pads strides", mps_map_unpool},
    {"RoiAlign", MPS_OP_ROI_ALIGN,
     "coordinate_transformation_mode mode output_height output_width sampling_ratio spatial_scale", mps_map_roialign},
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
    {"Sin", MPS_OP_SIN, "", NULL},
    {"Cos", MPS_OP_COS, "", NULL},
    {"Tan", MPS_OP_TAN, "", NULL},
    {"Asin", MPS_OP_ASIN, "", NULL},
    {"Acos", MPS_OP_ACOS, "", NULL},
    {"Atan", MPS_OP_ATAN, "", NULL},
    {"Sinh", MPS_OP_SINH, "", NULL},
    {"Cosh", MPS_OP_COSH, "", NULL},
    {"Asinh", MPS_OP_ASINH, "", NULL},
    {"Acosh", MPS_OP_ACOSH, "", NULL},
    {"Atanh", MPS_OP_ATANH, "", NULL},
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
    {"RNN", MPS_OP_RNN, "activation_alpha activation_beta activations clip direction hidden_size layout", mps_map_rnn},
    {"GRU", MPS_OP_GRU,
     "activation_alpha activation_beta activations clip direction hidden_size layout linear_before_reset", mps_map_rnn},
    {"LSTM", MPS_OP_LSTM, "activation_alpha activation_beta activations clip direction hidden_size input_forget layout",
     mps_map_rnn},
    {"NegativeLogLikelihoodLoss", MPS_OP_NLL_LOSS, "ignore_index reduction", mps_map_loss},
    {"SoftmaxCrossEntropyLoss", MPS_OP_SCE_LOSS, "ignore_index reduction", mps_map_loss},
    {"Cast", MPS_OP_CAST, "to saturate", mps_map_cast},
    {"CastLike", MPS_OP_CAST, "saturate", mps_map_castlike},
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
    {"BitShift", MPS_OP_BIT_SHIFT, "direction", mps_map_bitshift},
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
};
const size_t mps_onnx_n_rules_math = sizeof mps_onnx_rules_math / sizeof mps_onnx_rules_math[0];
