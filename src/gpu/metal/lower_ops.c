/* lower_ops.c: each op of ops.def as MPSGraph steps (the table at the end):
   here activations, products, windows, normalization, elementwise ops and
   reductions; lower_layout.c and lower_index.c hold the other families.
   Elementwise formulas follow the CPU kernels (cpu/unary.c, cpu/binary.c)
   so that both backends compute the same function; where MPSGraph has no
   single operation (Elu, Softplus, LogSoftmax, ...) the lowering composes it
   from ones it has. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "lower_impl.h"

/* ---- activations (standalone and fused into Conv/Gemm) --------------------------- */

static int mps_mtl_clamp01(struct mps_mtl_lowerer *L, int x)
{
    return mps_mtl_binary_scalar(L, MPS_MTL_MAX, mps_mtl_binary_scalar(L, MPS_MTL_MIN, x, 1.0), 0.0);
}

/* alpha * (exp(x) - 1), the negative branch of Elu and Selu (MPSGraph has no expm1). */
static int mps_mtl_expm1_scaled(struct mps_mtl_lowerer *L, int x, double alpha)
{
    return mps_mtl_binary_scalar(L, MPS_MTL_MUL,
                                 mps_mtl_binary_scalar(L, MPS_MTL_SUB, mps_mtl_unary(L, MPS_MTL_EXP, x), 1.0), alpha);
}

int mps_mtl_activation(struct mps_mtl_lowerer *L, enum mps_op op, const struct mps_act_params *a, int x)
{
    double alpha = a->alpha, beta = a->beta;
    switch (op) {
    case MPS_OP_RELU: return mps_mtl_unary(L, MPS_MTL_RELU, x);
    case MPS_OP_SIGMOID: return mps_mtl_unary(L, MPS_MTL_SIGMOID, x);
    case MPS_OP_TANH: return mps_mtl_unary(L, MPS_MTL_TANH, x);
    case MPS_OP_ERF: return mps_mtl_unary(L, MPS_MTL_ERF, x);
    case MPS_OP_EXP: return mps_mtl_unary(L, MPS_MTL_EXP, x);
    case MPS_OP_LOG: return mps_mtl_unary(L, MPS_MTL_LOG, x);
    case MPS_OP_SQRT: return mps_mtl_unary(L, MPS_MTL_SQRT, x);
    case MPS_OP_ABS: return mps_mtl_unary(L, MPS_MTL_ABS, x);
    case MPS_OP_NEG: return mps_mtl_unary(L, MPS_MTL_NEG, x);
    case MPS_OP_RECIPROCAL: return mps_mtl_unary(L, MPS_MTL_RECIPROCAL, x);
    case MPS_OP_FLOOR: return mps_mtl_unary(L, MPS_MTL_FLOOR, x);
    case MPS_OP_CEIL: return mps_mtl_unary(L, MPS_MTL_CEIL, x);
    case MPS_OP_SIGN: return mps_mtl_unary(L, MPS_MTL_SIGN, x);
    case MPS_OP_ROUND: return mps_mtl_unary(L, MPS_MTL_RINT, x);
    case MPS_OP_SIN: return mps_mtl_unary(L, MPS_MTL_SIN, x);
    case MPS_OP_COS: return mps_mtl_unary(L, MPS_MTL_COS, x);
    case MPS_OP_TAN: return mps_mtl_unary(L, MPS_MTL_TAN, x);
    case MPS_OP_ASIN: return mps_mtl_unary(L, MPS_MTL_ASIN, x);
    case MPS_OP_ACOS: return mps_mtl_unary(L, MPS_MTL_ACOS, x);
    case MPS_OP_ATAN: return mps_mtl_unary(L, MPS_MTL_ATAN, x);
    case MPS_OP_SINH: return mps_mtl_unary(L, MPS_MTL_SINH, x);
    case MPS_OP_COSH: return mps_mtl_unary(L, MPS_MTL_COSH, x);
    case MPS_OP_ASINH: return mps_mtl_unary(L, MPS_MTL_ASINH, x);
    case MPS_OP_ACOSH: return mps_mtl_unary(L, MPS_MTL_ACOSH, x);
    case MPS_OP_ATANH: return mps_mtl_unary(L, MPS_MTL_ATANH, x);
    case MPS_OP_THRESHOLDED_RELU: {
        int keep = mps_mtl_binary_scalar(L, MPS_MTL_GREATER, x, alpha);
        return mps_mtl_select(L, keep, x, mps_mtl_scalar(L, 0.0, mps_mtl_dtype(L, x)));
    }
    case MPS_OP_SHRINK: { /* x < -lambd: x + bias; x > lambd: x - bias; else 0 */
        int low = mps_mtl_binary_scalar(L, MPS_MTL_LESS, x, -alpha);
        int high = mps_mtl_binary_scalar(L, MPS_MTL_GREATER, x, alpha);
        int zero = mps_mtl_scalar(L, 0.0, mps_mtl_dtype(L, x));
        int upper = mps_mtl_select(L, high, mps_mtl_binary_scalar(L, MPS_MTL_SUB, x, beta), zero);
        return mps_mtl_select(L, low, mps_mtl_binary_scalar(L, MPS_MTL_ADD, x, beta), upper);
    }
    /* operands are built one statement at a time: C leaves argument order
       open, and the program (and its dump) must not depend on the compiler */
    case MPS_OP_LEAKY_RELU: {
        int keep = mps_mtl_binary_scalar(L, MPS_MTL_GREATER_EQUAL, x, 0.0);
        return mps_mtl_select(L, keep, x, mps_mtl_binary_scalar(L, MPS_MTL_MUL, x, alpha));
    }
    case MPS_OP_ELU: {
        int keep = mps_mtl_binary_scalar(L, MPS_MTL_GREATER_EQUAL, x, 0.0);
        return mps_mtl_select(L, keep, x, mps_mtl_expm1_scaled(L, x, alpha));
    }
    case MPS_OP_SELU: { /* gamma travels in beta */
        int pos = mps_mtl_binary_scalar(L, MPS_MTL_GREATER, x, 0.0);
        int scaled = mps_mtl_binary_scalar(L, MPS_MTL_MUL, x, beta);
        return mps_mtl_select(L, pos, scaled, mps_mtl_expm1_scaled(L, x, beta * alpha));
    }
    case MPS_OP_HARD_SIGMOID:
        return mps_mtl_clamp01(
            L, mps_mtl_binary_scalar(L, MPS_MTL_ADD, mps_mtl_binary_scalar(L, MPS_MTL_MUL, x, alpha), beta));
    case MPS_OP_HARD_SWISH:
        return mps_mtl_binary(
            L, MPS_MTL_MUL, x,
            mps_mtl_clamp01(L,
                            mps_mtl_binary_scalar(L, MPS_MTL_ADD, mps_mtl_binary_scalar(L, MPS_MTL_DIV, x, 6.0), 0.5)));
    case MPS_OP_SOFTPLUS: { /* max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x| */
        int pos = mps_mtl_binary_scalar(L, MPS_MTL_MAX, x, 0.0);
        int e = mps_mtl_unary(L, MPS_MTL_EXP, mps_mtl_unary(L, MPS_MTL_NEG, mps_mtl_unary(L, MPS_MTL_ABS, x)));
        return mps_mtl_binary(L, MPS_MTL_ADD, pos,
                              mps_mtl_unary(L, MPS_MTL_LOG, mps_mtl_binary_scalar(L, MPS_MTL_ADD, e, 1.0)));
    }
    case MPS_OP_SOFTSIGN:
        return mps_mtl_binary(L, MPS_MTL_DIV, x,
                              mps_mtl_binary_scalar(L, MPS_MTL_ADD, mps_mtl_unary(L, MPS_MTL_ABS, x), 1.0));
    case MPS_OP_GELU: {
        int inner;
        if (beta != 0.0) { /* tanh approximation */
            int cube = mps_mtl_binary(L, MPS_MTL_MUL, mps_mtl_binary(L, MPS_MTL_MUL, x, x), x);
            inner = mps_mtl_unary(
                L, MPS_MTL_TANH,
                mps_mtl_binary_scalar(
                    L, MPS_MTL_MUL,
                    mps_mtl_binary(L, MPS_MTL_ADD, x, mps_mtl_binary_scalar(L, MPS_MTL_MUL, cube, 0.044715)),
                    0.7978845608028654));
        } else {
            inner = mps_mtl_unary(L, MPS_MTL_ERF, mps_mtl_binary_scalar(L, MPS_MTL_MUL, x, 0.70710678118654752));
        }
        int half_x = mps_mtl_binary_scalar(L, MPS_MTL_MUL, x, 0.5);
        return mps_mtl_binary(L, MPS_MTL_MUL, half_x, mps_mtl_binary_scalar(L, MPS_MTL_ADD, inner, 1.0));
    }
    case MPS_OP_CLIP: /* bounds of +-inf mean "none" */
        if (isfinite(alpha))
            x = mps_mtl_binary_scalar(L, MPS_MTL_MAX, x, alpha);
        if (isfinite(beta))
            x = mps_mtl_binary_scalar(L, MPS_MTL_MIN, x, beta);
        return x;
    default: L->bug = "an activation without a lowering"; return -1;
    }
}

static int mps_mtl_fused(struct mps_mtl_lowerer *L, const struct mps_fused_act *a, int x)
{
    return a->on ? mps_mtl_activation(L, a->op, &a->p, x) : x;
}

/* ---- matrix products ------------------------------------------------------------------- */

/* MatMul's 1-D operands become [1,k] and [k,1] (numpy), and the result drops them again. */
static void mps_mtl_lower_matmul(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *sa = mps_mtl_vshape(L, n->in[0]), *sb = mps_mtl_vshape(L, n->in[1]);
    int a = sa->ndim == 1 ? mps_mtl_value_as(L, n->in[0], &(struct mps_shape){2, {1, sa->dim[0]}})
                          : mps_mtl_value(L, n->in[0]);
    int b = sb->ndim == 1 ? mps_mtl_value_as(L, n->in[1], &(struct mps_shape){2, {sb->dim[0], 1}})
                          : mps_mtl_value(L, n->in[1]);
    mps_mtl_define_as(L, n->out[0], mps_mtl_matmul_ids(L, a, b));
}

static int mps_mtl_transpose2(struct mps_mtl_lowerer *L, int x)
{
    if (x < 0)
        return -1;
    struct mps_shape s = *mps_mtl_shape(L, x);
    int64_t t = s.dim[0];
    s.dim[0] = s.dim[1];
    s.dim[1] = t;
    struct mps_mtl_step *st;
    int id = mps_mtl_emit(L, MPS_MTL_TRANSPOSE2, 0, mps_mtl_dtype(L, x), &s, &x, 1, &st);
    if (st) {
        st->p.ax.axis = 0;
        st->p.ax.axis2 = 1;
    }
    return id;
}

/* Y = act(alpha * A' B' + beta * C). */
static void mps_mtl_lower_gemm(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_gemm_params *q = &n->p.gemm;
    int a = mps_mtl_value(L, n->in[0]), b = mps_mtl_value(L, n->in[1]);
    if (q->trans_a)
        a = mps_mtl_transpose2(L, a);
    if (q->trans_b)
        b = mps_mtl_transpose2(L, b);
    int y = mps_mtl_matmul_ids(L, a, b);
    if (q->alpha != 1.0f)
        y = mps_mtl_binary_scalar(L, MPS_MTL_MUL, y, q->alpha);
    if (n->n_in > 2 && n->in[2] >= 0 && q->beta != 0.0f) {
        int c = mps_mtl_value(L, n->in[2]);
        if (q->beta != 1.0f)
            c = mps_mtl_binary_scalar(L, MPS_MTL_MUL, c, q->beta);
        y = mps_mtl_binary(L, MPS_MTL_ADD, y, c);
    }
    mps_mtl_define(L, n->out[0], mps_mtl_fused(L, &q->act, y));
}

/* ---- windows: convolution and pooling ------------------------------------------------------ */

void mps_mtl_window_2d(const struct mps_graph *g, const struct mps_node *n, struct mps_mtl_window_2d *w)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    bool pool = n->op == MPS_OP_MAX_POOL || n->op == MPS_OP_AVERAGE_POOL;
    const struct mps_window *win = pool ? &n->p.pool.win : &n->p.conv.win;
    int sp = x->ndim - 2, first = 2 - sp; /* 1-D fills only the width slot */
    memset(w, 0, sizeof *w);
    w->spatial = sp;
    for (int j = 0; j < 2; j++) {
        w->k[j] = w->s[j] = w->d[j] = 1;
        w->pb[j] = w->pe[j] = 0;
    }
    for (int j = 0; j < sp; j++) {
        int t = first + j;
        w->k[t] = win->kernel[j];
        w->s[t] = win->stride[j];
        w->d[t] = win->dilation[j] ? win->dilation[j] : 1;
        w->pb[t] = win->pad[j];
        w->pe[t] = win->pad[sp + j];
        if (pool) { /* ceil_mode: widen the end padding until floor division gives the inferred size */
            int64_t need = (y->dim[2 + j] - 1) * w->s[t] + w->d[t] * (w->k[t] - 1) + 1;
            int64_t have = x->dim[2 + j] + w->pb[t] + w->pe[t];
            if (need > have) {
                w->pe[t] += need - have;
                w->ceil_extra += need - have;
            }
        }
    }
}

/* [N,C,L] -> [N,C,1,L]: 1-D windows run as 2-D ones of height 1. */
static struct mps_shape mps_mtl_as_4d(const struct mps_shape *s)
{
    if (s->ndim != 3)
        return *s;
    return (struct mps_shape){4, {s->dim[0], s->dim[1], 1, s->dim[2]}};
}

static struct mps_mtl_conv mps_mtl_conv_desc(const struct mps_mtl_window_2d *w, int64_t groups)
{
    return (struct mps_mtl_conv){
        .stride_x = w->s[1],
        .stride_y = w->s[0],
        .dilation_x = w->d[1],
        .dilation_y = w->d[0],
        .groups = groups,
        .pad_left = w->pb[1],
        .pad_right = w->pe[1],
        .pad_top = w->pb[0],
        .pad_bottom = w->pe[0],
        .data_layout = MPS_MTL_LAYOUT_NCHW,
        .weights_layout = MPS_MTL_LAYOUT_OIHW,
    };
}

/* Conv and ConvTranspose: NCHW data, OIHW weights (ConvTranspose's ONNX
   weights [C_in, C_out/group, kH, kW] are the OIHW weights of the forward
   convolution it transposes), explicit padding, bias added after, then the
   fused activation. */
static void mps_mtl_lower_conv(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    struct mps_mtl_window_2d w;
    mps_mtl_window_2d(L->g, n, &w);
    struct mps_shape xs = mps_mtl_as_4d(mps_mtl_vshape(L, n->in[0])), ws = mps_mtl_as_4d(mps_mtl_vshape(L, n->in[1]));
    struct mps_shape ys = mps_mtl_as_4d(mps_mtl_vshape(L, n->out[0]));
    int x = mps_mtl_value_as(L, n->in[0], &xs), wt = mps_mtl_value_as(L, n->in[1], &ws);
    bool transpose = n->op == MPS_OP_CONV_TRANSPOSE;
    struct mps_mtl_step *st;
    int y = x < 0 || wt < 0 ? -1
                            : mps_mtl_emit(L, transpose ? MPS_MTL_CONV_TRANSPOSE2D : MPS_MTL_CONV2D, 0,
                                           mps_mtl_dtype(L, x), &ys, (int[]){x, wt}, 2, &st);
    if (y >= 0)
        st->p.conv = mps_mtl_conv_desc(&w, n->p.conv.group);
    if (n->n_in > 2 && n->in[2] >= 0)
        y = mps_mtl_binary(L, MPS_MTL_ADD, y,
                           mps_mtl_value_as(L, n->in[2], &(struct mps_shape){4, {1, ys.dim[1], 1, 1}}));
    mps_mtl_define_as(L, n->out[0], mps_mtl_fused(L, &n->p.conv.act, y));
}

static void mps_mtl_lower_pool(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    struct mps_mtl_window_2d w;
    mps_mtl_window_2d(L->g, n, &w);
    struct mps_shape xs = mps_mtl_as_4d(mps_mtl_vshape(L, n->in[0]));
    struct mps_shape ys = mps_mtl_as_4d(mps_mtl_vshape(L, n->out[0]));
    int x = mps_mtl_value_as(L, n->in[0], &xs);
    bool indices = n->op == MPS_OP_MAX_POOL && n->n_out > 1 && n->out[1] >= 0;
    struct mps_mtl_step *st;
    int y = x < 0 ? -1
                  : mps_mtl_emit(L, MPS_MTL_POOL2D, n->op == MPS_OP_MAX_POOL ? MPS_MTL_POOL_MAX : MPS_MTL_POOL_AVG,
                                 mps_mtl_dtype(L, x), &ys, &x, 1, &st);
    int idx = -1;
    if (y >= 0) {
        st->p.pool = (struct mps_mtl_pool_desc){
            .kernel_w = w.k[1],
            .kernel_h = w.k[0],
            .stride_x = w.s[1],
            .stride_y = w.s[0],
            .dilation_x = w.d[1],
            .dilation_y = w.d[0],
            .pad_left = w.pb[1],
            .pad_right = w.pe[1],
            .pad_top = w.pb[0],
            .pad_bottom = w.pe[0],
            .include_zero_pad = n->op == MPS_OP_AVERAGE_POOL && n->p.pool.count_include_pad,
            .return_indices = indices,
        };
        if (indices) { /* int32, flattened over N,C,H,W: ONNX's flat index into the input */
            st->out2 = idx = L->p->n_tensors++;
            L->t[idx] = (struct mps_mtl_tensor){MPS_I32, ys, MPS_MTL_POOL2D};
        }
    }
    mps_mtl_define_as(L, n->out[0], y);
    if (indices)
        mps_mtl_define_as(L, n->out[1], mps_mtl_cast(L, idx, MPS_I64));
}

/* ---- normalization ---------------------------------------------------------------------------- */

static int mps_mtl_normalize(struct mps_mtl_lowerer *L, int x, int mean, int var, int gamma, int beta, float eps)
{
    if (x < 0 || mean < 0 || var < 0)
        return -1;
    struct mps_mtl_step *st;
    int id = mps_mtl_emit(L, MPS_MTL_NORMALIZE, 0, mps_mtl_dtype(L, x), mps_mtl_shape(L, x),
                          (int[]){x, mean, var, gamma, beta}, 5, &st);
    if (st)
        st->p.epsilon = eps;
    return id;
}

/* The population variance of x over axes about mean (reduced dims kept as 1). */
static int mps_mtl_variance(struct mps_mtl_lowerer *L, int x, int mean, uint32_t axes)
{
    if (x < 0 || mean < 0)
        return -1;
    struct mps_mtl_step *st;
    int var =
        mps_mtl_emit(L, MPS_MTL_VARIANCE, 0, mps_mtl_dtype(L, mean), mps_mtl_shape(L, mean), (int[]){x, mean}, 2, &st);
    if (st)
        st->p.axes = axes;
    return var;
}

/* BatchNormalization (inference): the four [C] operands seen as [1,C,1,...]. */
static void mps_mtl_lower_batch_norm(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    struct mps_shape c = {xs->ndim, {0}};
    for (int i = 0; i < xs->ndim; i++)
        c.dim[i] = i == 1 ? xs->dim[1] : 1;
    int x = mps_mtl_value(L, n->in[0]);
    int gamma = mps_mtl_value_as(L, n->in[1], &c), beta = mps_mtl_value_as(L, n->in[2], &c);
    int mean = mps_mtl_value_as(L, n->in[3], &c), var = mps_mtl_value_as(L, n->in[4], &c);
    mps_mtl_define(L, n->out[0], mps_mtl_normalize(L, x, mean, var, gamma, beta, n->p.norm.epsilon));
}

/* InstanceNormalization: each (n, c) plane's mean and variance over the
   spatial axes; scale and bias seen as [1,C,1,...]. */
static void mps_mtl_lower_instance_norm(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    struct mps_shape c = {xs->ndim, {0}};
    for (int i = 0; i < xs->ndim; i++)
        c.dim[i] = i == 1 ? xs->dim[1] : 1;
    uint32_t axes = (uint32_t)((1u << xs->ndim) - 1) & ~3u;
    int x = mps_mtl_value(L, n->in[0]);
    int mean = mps_mtl_reduce(L, MPS_MTL_REDUCE_MEAN, x, axes), var = mps_mtl_variance(L, x, mean, axes);
    int gamma = mps_mtl_value_as(L, n->in[1], &c), beta = mps_mtl_value_as(L, n->in[2], &c);
    mps_mtl_define(L, n->out[0], mps_mtl_normalize(L, x, mean, var, gamma, beta, n->p.norm.epsilon));
}

/* LRN: the squares seen as [N, 1, C, positions], averaged over a (size x 1)
   window padded with zeros that count (the channel window's sum / size),
   then y = x * (bias + alpha * average)^-beta. */
static void mps_mtl_lower_lrn(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_lrn_params *p = &n->p.lrn;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    struct mps_shape s4 = {4, {xs->dim[0], 1, xs->dim[1], mps_shape_numel(xs) / (xs->dim[0] * xs->dim[1])}};
    int x = mps_mtl_value(L, n->in[0]);
    int sq = mps_mtl_reshape(L, mps_mtl_binary(L, MPS_MTL_MUL, x, x), &s4);
    struct mps_mtl_step *st;
    int avg = sq < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_POOL2D, MPS_MTL_POOL_AVG, mps_mtl_dtype(L, sq), &s4, &sq, 1, &st);
    if (avg >= 0)
        st->p.pool = (struct mps_mtl_pool_desc){
            .kernel_w = 1,
            .kernel_h = p->size,
            .stride_x = 1,
            .stride_y = 1,
            .dilation_x = 1,
            .dilation_y = 1,
            .pad_top = (p->size - 1) / 2,
            .pad_bottom = p->size - 1 - (p->size - 1) / 2,
            .include_zero_pad = true,
        };
    int base = mps_mtl_binary_scalar(L, MPS_MTL_ADD, mps_mtl_binary_scalar(L, MPS_MTL_MUL, avg, p->alpha), p->bias);
    int factor = mps_mtl_reshape(L, mps_mtl_binary_scalar(L, MPS_MTL_POW, base, -(double)p->beta), xs);
    mps_mtl_define_as(L, n->out[0], mps_mtl_binary(L, MPS_MTL_MUL, x, factor));
}

/* LayerNormalization over axes [axis, rank): population variance, scale and
   bias broadcast from the right; the optional Mean and InvStdDev outputs. */
static void mps_mtl_lower_layer_norm(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int rank = mps_mtl_vshape(L, n->in[0])->ndim;
    uint32_t axes = (uint32_t)((1u << rank) - 1) & ~(uint32_t)((1u << n->p.norm.axis) - 1);
    int x = mps_mtl_value(L, n->in[0]);
    int mean = mps_mtl_reduce(L, MPS_MTL_REDUCE_MEAN, x, axes), var = mps_mtl_variance(L, x, mean, axes);
    int gamma = mps_mtl_value(L, n->in[1]), beta = n->n_in > 2 ? mps_mtl_value(L, n->in[2]) : -1;
    mps_mtl_define(L, n->out[0], mps_mtl_normalize(L, x, mean, var, gamma, beta, n->p.norm.epsilon));
    if (n->n_out > 1)
        mps_mtl_define_as(L, n->out[1], mean);
    if (n->n_out > 2 && n->out[2] >= 0)
        mps_mtl_define_as(L, n->out[2],
                          mps_mtl_unary(L, MPS_MTL_RECIPROCAL,
                                        mps_mtl_unary(L, MPS_MTL_SQRT,
                                                      mps_mtl_binary_scalar(L, MPS_MTL_ADD, var, n->p.norm.epsilon))));
}

/* Softmax is one operation; LogSoftmax is x - max - log(sum(exp(x - max))). */
static void mps_mtl_lower_softmax(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]), axis = (int)n->p.norm.axis;
    if (n->op == MPS_OP_SOFTMAX) {
        struct mps_mtl_step *st;
        int y = x < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_SOFTMAX, 0, mps_mtl_dtype(L, x), mps_mtl_shape(L, x), &x, 1, &st);
        if (y >= 0)
            st->p.ax.axis = axis;
        mps_mtl_define(L, n->out[0], y);
        return;
    }
    int shifted = mps_mtl_binary(L, MPS_MTL_SUB, x, mps_mtl_reduce(L, MPS_MTL_REDUCE_MAX, x, 1u << axis));
    int lse = mps_mtl_unary(L, MPS_MTL_LOG,
                            mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_unary(L, MPS_MTL_EXP, shifted), 1u << axis));
    mps_mtl_define(L, n->out[0], mps_mtl_binary(L, MPS_MTL_SUB, shifted, lse));
}

/* ---- elementwise ---------------------------------------------------------------------------------- */

static void mps_mtl_lower_binary(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    static const enum mps_mtl_binary fns[MPS_OP_COUNT] = {
        [MPS_OP_ADD] = MPS_MTL_ADD, [MPS_OP_SUB] = MPS_MTL_SUB, [MPS_OP_MUL] = MPS_MTL_MUL,
        [MPS_OP_DIV] = MPS_MTL_DIV, [MPS_OP_POW] = MPS_MTL_POW, [MPS_OP_MAX] = MPS_MTL_MAX,
        [MPS_OP_MIN] = MPS_MTL_MIN, [MPS_OP_SUM] = MPS_MTL_ADD, [MPS_OP_MEAN] = MPS_MTL_ADD,
    };
    int y = mps_mtl_value(L, n->in[0]);
    for (int i = 1; i < n->n_in; i++)
        y = mps_mtl_binary(L, fns[n->op], y, mps_mtl_value(L, n->in[i]));
    if (n->op == MPS_OP_MEAN)
        y = mps_mtl_binary_scalar(L, MPS_MTL_DIV, y, n->n_in);
    const struct mps_fused_act *act = mps_node_act(n); /* Add+Relu from the fuse pass */
    mps_mtl_define_as(L, n->out[0], act ? mps_mtl_fused(L, act, y) : y);
}

/* PRelu: x < 0 ? x * slope : x (cpu/binary.c). */
static void mps_mtl_lower_prelu(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]), slope = mps_mtl_value(L, n->in[1]);
    int neg = mps_mtl_binary_scalar(L, MPS_MTL_LESS, x, 0.0);
    int y = mps_mtl_select(L, neg, mps_mtl_binary(L, MPS_MTL_MUL, x, slope), x);
    mps_mtl_define_as(L, n->out[0], y);
}

/* Comparisons and logic are MPSGraph's own (bool results); IsNaN is x != x,
   IsInf x == inf and/or x == -inf. Where is a select. */
static void mps_mtl_lower_logic(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    static const enum mps_mtl_binary fns[MPS_OP_COUNT] = {
        [MPS_OP_GREATER] = MPS_MTL_GREATER,
        [MPS_OP_LESS] = MPS_MTL_LESS,
        [MPS_OP_EQUAL] = MPS_MTL_EQUAL,
        [MPS_OP_GREATER_OR_EQUAL] = MPS_MTL_GREATER_EQUAL,
        [MPS_OP_LESS_OR_EQUAL] = MPS_MTL_LESS_EQUAL,
        [MPS_OP_AND] = MPS_MTL_AND,
        [MPS_OP_OR] = MPS_MTL_OR,
        [MPS_OP_XOR] = MPS_MTL_XOR,
    };
    int x = mps_mtl_value(L, n->in[0]), y;
    switch (n->op) {
    case MPS_OP_NOT: y = mps_mtl_unary(L, MPS_MTL_NOT, x); break;
    case MPS_OP_IS_NAN: y = mps_mtl_binary(L, MPS_MTL_NOT_EQUAL, x, x); break;
    case MPS_OP_IS_INF: {
        const struct mps_isinf_params *p = &n->p.isinf;
        int pos = p->positive ? mps_mtl_binary_scalar(L, MPS_MTL_EQUAL, x, INFINITY) : -1;
        int neg = p->negative ? mps_mtl_binary_scalar(L, MPS_MTL_EQUAL, x, -INFINITY) : -1;
        y = p->positive && p->negative ? mps_mtl_binary(L, MPS_MTL_OR, pos, neg)
            : p->positive              ? pos
            : p->negative              ? neg
                                       : mps_mtl_binary_scalar(L, MPS_MTL_EQUAL, x, NAN); /* false everywhere */
        break;
    }
    case MPS_OP_WHERE: y = mps_mtl_select(L, x, mps_mtl_value(L, n->in[1]), mps_mtl_value(L, n->in[2])); break;
    default: y = mps_mtl_binary(L, fns[n->op], x, mps_mtl_value(L, n->in[1])); break;
    }
    mps_mtl_define_as(L, n->out[0], y);
}

/* GlobalLpPool: (sum over the spatial axes of |x|^p)^(1/p); x * x and sqrt for p = 2. */
static void mps_mtl_lower_global_lp(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    double lp = n->p.act.alpha;
    int rank = mps_mtl_vshape(L, n->in[0])->ndim;
    int a = mps_mtl_unary(L, MPS_MTL_ABS, mps_mtl_value(L, n->in[0]));
    int s = lp == 2 ? mps_mtl_binary(L, MPS_MTL_MUL, a, a) : mps_mtl_binary_scalar(L, MPS_MTL_POW, a, lp);
    int sum = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, s, (uint32_t)((1u << rank) - 1) & ~3u);
    mps_mtl_define_as(L, n->out[0],
                      lp == 2 ? mps_mtl_unary(L, MPS_MTL_SQRT, sum)
                              : mps_mtl_binary_scalar(L, MPS_MTL_POW, sum, 1.0 / lp));
}

/* ---- reductions and layout -------------------------------------------------------------------------- */

/* The reductions MPSGraph has are one step; the others are built from them
   as their definitions read (reduce.h), LogSumExp shifted by its maximum
   (clamped to the finite range, so that an infinite maximum gives inf - inf
   nowhere and an all -inf box gives -inf). No axes: each element alone. */
static void mps_mtl_lower_reduce(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    static const enum mps_mtl_reduce fns[MPS_OP_COUNT] = {
        [MPS_OP_REDUCE_SUM] = MPS_MTL_REDUCE_SUM,           [MPS_OP_REDUCE_MAX] = MPS_MTL_REDUCE_MAX,
        [MPS_OP_REDUCE_MIN] = MPS_MTL_REDUCE_MIN,           [MPS_OP_REDUCE_MEAN] = MPS_MTL_REDUCE_MEAN,
        [MPS_OP_GLOBAL_AVERAGE_POOL] = MPS_MTL_REDUCE_MEAN, [MPS_OP_GLOBAL_MAX_POOL] = MPS_MTL_REDUCE_MAX,
        [MPS_OP_REDUCE_PROD] = MPS_MTL_REDUCE_PROD,
    };
    int x = mps_mtl_value(L, n->in[0]), rank = mps_mtl_vshape(L, n->in[0])->ndim, y;
    uint32_t axes = n->op == MPS_OP_GLOBAL_AVERAGE_POOL || n->op == MPS_OP_GLOBAL_MAX_POOL
                        ? (uint32_t)((1u << rank) - 1) & ~3u /* every spatial axis */
                        : n->p.reduce.axes;
    switch (n->op) {
    case MPS_OP_REDUCE_L1: y = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_unary(L, MPS_MTL_ABS, x), axes); break;
    case MPS_OP_REDUCE_L2:
    case MPS_OP_REDUCE_SUM_SQUARE:
        y = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_binary(L, MPS_MTL_MUL, x, x), axes);
        if (n->op == MPS_OP_REDUCE_L2)
            y = mps_mtl_unary(L, MPS_MTL_SQRT, y);
        break;
    case MPS_OP_REDUCE_LOG_SUM:
        y = mps_mtl_unary(L, MPS_MTL_LOG, mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, x, axes));
        break;
    case MPS_OP_REDUCE_LOG_SUM_EXP: {
        double big = mps_mtl_dtype(L, x) == MPS_F16 ? 65504.0 : FLT_MAX; /* the largest finite value */
        int m = mps_mtl_reduce(L, MPS_MTL_REDUCE_MAX, x, axes);
        m = mps_mtl_binary_scalar(L, MPS_MTL_MAX, mps_mtl_binary_scalar(L, MPS_MTL_MIN, m, big), -big);
        int e = mps_mtl_unary(L, MPS_MTL_EXP, mps_mtl_binary(L, MPS_MTL_SUB, x, m));
        y = mps_mtl_binary(L, MPS_MTL_ADD,
                           mps_mtl_unary(L, MPS_MTL_LOG, mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, e, axes)), m);
        break;
    }
    default: y = mps_mtl_reduce(L, fns[n->op], x, axes); break;
    }
    mps_mtl_define_as(L, n->out[0], y);
}

static void mps_mtl_lower_activation(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_activation(L, n->op, &n->p.act, mps_mtl_value(L, n->in[0])));
}

/* The lowering of each op; the elementwise unary ones (MPS_TR_UNARY) are all
   mps_mtl_lower_activation's, which mps_mtl_lowering_of adds. */
static const mps_mtl_lowering mps_mtl_lowerings[MPS_OP_COUNT] = {
    [MPS_OP_MATMUL] = mps_mtl_lower_matmul,
    [MPS_OP_RNN] = mps_mtl_lower_rnn,
    [MPS_OP_GRU] = mps_mtl_lower_rnn,
    [MPS_OP_LSTM] = mps_mtl_lower_rnn,
    [MPS_OP_GEMM] = mps_mtl_lower_gemm,
    [MPS_OP_CONV] = mps_mtl_lower_conv,
    [MPS_OP_CONV_TRANSPOSE] = mps_mtl_lower_conv,
    [MPS_OP_MAX_POOL] = mps_mtl_lower_pool,
    [MPS_OP_AVERAGE_POOL] = mps_mtl_lower_pool,
    [MPS_OP_GLOBAL_AVERAGE_POOL] = mps_mtl_lower_reduce,
    [MPS_OP_GLOBAL_MAX_POOL] = mps_mtl_lower_reduce,
    [MPS_OP_GLOBAL_LP_POOL] = mps_mtl_lower_global_lp,
    [MPS_OP_BATCH_NORM] = mps_mtl_lower_batch_norm,
    [MPS_OP_INSTANCE_NORM] = mps_mtl_lower_instance_norm,
    [MPS_OP_LRN] = mps_mtl_lower_lrn,
    [MPS_OP_LAYER_NORM] = mps_mtl_lower_layer_norm,
    [MPS_OP_SOFTMAX] = mps_mtl_lower_softmax,
    [MPS_OP_LOG_SOFTMAX] = mps_mtl_lower_softmax,
    [MPS_OP_IDENTITY] = mps_mtl_lower_alias,
    [MPS_OP_DROPOUT] = mps_mtl_lower_alias,
    [MPS_OP_CAST] = mps_mtl_lower_cast,
    [MPS_OP_GREATER] = mps_mtl_lower_logic,
    [MPS_OP_LESS] = mps_mtl_lower_logic,
    [MPS_OP_EQUAL] = mps_mtl_lower_logic,
    [MPS_OP_GREATER_OR_EQUAL] = mps_mtl_lower_logic,
    [MPS_OP_LESS_OR_EQUAL] = mps_mtl_lower_logic,
    [MPS_OP_AND] = mps_mtl_lower_logic,
    [MPS_OP_OR] = mps_mtl_lower_logic,
    [MPS_OP_XOR] = mps_mtl_lower_logic,
    [MPS_OP_NOT] = mps_mtl_lower_logic,
    [MPS_OP_IS_NAN] = mps_mtl_lower_logic,
    [MPS_OP_IS_INF] = mps_mtl_lower_logic,
    [MPS_OP_WHERE] = mps_mtl_lower_logic,
    [MPS_OP_PRELU] = mps_mtl_lower_prelu,
    [MPS_OP_ADD] = mps_mtl_lower_binary,
    [MPS_OP_SUB] = mps_mtl_lower_binary,
    [MPS_OP_MUL] = mps_mtl_lower_binary,
    [MPS_OP_DIV] = mps_mtl_lower_binary,
    [MPS_OP_POW] = mps_mtl_lower_binary,
    [MPS_OP_MAX] = mps_mtl_lower_binary,
    [MPS_OP_MIN] = mps_mtl_lower_binary,
    [MPS_OP_SUM] = mps_mtl_lower_binary,
    [MPS_OP_MEAN] = mps_mtl_lower_binary,
    [MPS_OP_ARG_MAX] = mps_mtl_lower_arg,
    [MPS_OP_ARG_MIN] = mps_mtl_lower_arg,
    [MPS_OP_HARDMAX] = mps_mtl_lower_arg,
    [MPS_OP_TRILU] = mps_mtl_lower_trilu,
    [MPS_OP_CUM_SUM] = mps_mtl_lower_cumsum,
    [MPS_OP_REDUCE_MEAN] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_SUM] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_MAX] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_MIN] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_PROD] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_L1] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_L2] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_SUM_SQUARE] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_LOG_SUM] = mps_mtl_lower_reduce,
    [MPS_OP_REDUCE_LOG_SUM_EXP] = mps_mtl_lower_reduce,
    [MPS_OP_RESHAPE] = mps_mtl_lower_reshape,
    [MPS_OP_FLATTEN] = mps_mtl_lower_reshape,
    [MPS_OP_TRANSPOSE] = mps_mtl_lower_transpose,
    [MPS_OP_SQUEEZE] = mps_mtl_lower_reshape,
    [MPS_OP_UNSQUEEZE] = mps_mtl_lower_reshape,
    [MPS_OP_CONCAT] = mps_mtl_lower_concat,
    [MPS_OP_SPLIT] = mps_mtl_lower_split,
    [MPS_OP_SLICE] = mps_mtl_lower_slice,
    [MPS_OP_GATHER] = mps_mtl_lower_gather,
    [MPS_OP_SHAPE] = mps_mtl_lower_shape,
    [MPS_OP_CONSTANT] = mps_mtl_lower_alias,
    [MPS_OP_CONSTANT_OF_SHAPE] = mps_mtl_lower_fill,
    [MPS_OP_EXPAND] = mps_mtl_lower_expand,
    [MPS_OP_PAD] = mps_mtl_lower_pad,
    [MPS_OP_RESIZE] = mps_mtl_lower_resize,
    [MPS_OP_DEPTH_TO_SPACE] = mps_mtl_lower_depth,
    [MPS_OP_SPACE_TO_DEPTH] = mps_mtl_lower_depth,
    [MPS_OP_TILE] = mps_mtl_lower_tile,
    [MPS_OP_TOP_K] = mps_mtl_lower_topk,
    [MPS_OP_GATHER_ELEMENTS] = mps_mtl_lower_index,
    [MPS_OP_GATHER_ND] = mps_mtl_lower_index,
    [MPS_OP_SCATTER_ND] = mps_mtl_lower_index,
    [MPS_OP_SCATTER_ELEMENTS] = mps_mtl_lower_index,
    [MPS_OP_RANGE] = mps_mtl_lower_range,
    [MPS_OP_ONE_HOT] = mps_mtl_lower_onehot,
};

static mps_mtl_lowering mps_mtl_lowering_of(enum mps_op op)
{
    if ((unsigned)op >= MPS_OP_COUNT)
        return NULL;
    return mps_op_is_unary(op) ? mps_mtl_lower_activation : mps_mtl_lowerings[op];
}

bool mps_mtl_op_lowered(enum mps_op op)
{
    return mps_mtl_lowering_of(op) != NULL;
}

void mps_mtl_lower_node(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    if (mps_mtl_op_lowered(n->op))
        mps_mtl_lowering_of(n->op)(L, n);
    else
        L->bug = "an op without a lowering";
}
