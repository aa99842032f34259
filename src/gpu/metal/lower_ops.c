/* lower_ops.c: each op of ops.def as MPSGraph steps. Elementwise formulas
   follow the CPU kernels (cpu/unary.c, cpu/binary.c) so that both backends
   compute the same function; where MPSGraph has no single operation (Elu,
   Softplus, LogSoftmax, ...) the lowering composes it from ones it has. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "lower_impl.h"
#include "resize.h"

static const struct mps_shape *mps_mtl_vshape(const struct mps_mtl_lowerer *L, int v)
{
    return &L->g->values[v].shape;
}

/* Defines graph value v (a node output) as tensor id. */
static void mps_mtl_define(struct mps_mtl_lowerer *L, int v, int id)
{
    if (v < 0)
        return;
    if (id < 0 && !L->oom && !L->bug)
        L->bug = "an operand was never defined";
    L->vid[v] = id;
}

/* Defines v as x reshaped to v's inferred shape (same count). */
static void mps_mtl_define_as(struct mps_mtl_lowerer *L, int v, int x)
{
    mps_mtl_define(L, v, mps_mtl_reshape(L, x, mps_mtl_vshape(L, v)));
}

/* x broadcast to s (Expand); a reshape when only the rank differs. */
static int mps_mtl_broadcast_to(struct mps_mtl_lowerer *L, int x, const struct mps_shape *s)
{
    if (x < 0 || mps_shape_eq(mps_mtl_shape(L, x), s))
        return x;
    if (mps_shape_numel(mps_mtl_shape(L, x)) == mps_shape_numel(s))
        return mps_mtl_reshape(L, x, s);
    struct mps_mtl_step *st;
    return mps_mtl_emit(L, MPS_MTL_BROADCAST, 0, mps_mtl_dtype(L, x), s, &x, 1, &st);
}

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

static int mps_mtl_activation(struct mps_mtl_lowerer *L, enum mps_op op, const struct mps_act_params *a, int x)
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

static int mps_mtl_matmul_ids(struct mps_mtl_lowerer *L, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    struct mps_matmul_geom geo = mps_matmul_geom(mps_mtl_shape(L, a), mps_mtl_shape(L, b));
    struct mps_shape s = geo.batch;
    s.dim[s.ndim++] = geo.m;
    s.dim[s.ndim++] = geo.n;
    struct mps_mtl_step *st;
    return mps_mtl_emit(L, MPS_MTL_MATMUL, 0, mps_mtl_dtype(L, a), &s, (int[]){a, b}, 2, &st);
}

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

/* fn over axes, reduced dims kept as 1; x itself when axes is empty. */
static int mps_mtl_reduce(struct mps_mtl_lowerer *L, enum mps_mtl_reduce fn, int x, uint32_t axes)
{
    if (x < 0 || !axes)
        return x;
    struct mps_shape s = *mps_mtl_shape(L, x);
    for (int i = 0; i < s.ndim; i++)
        if (axes & (1u << i))
            s.dim[i] = 1;
    struct mps_mtl_step *st;
    int id = mps_mtl_emit(L, MPS_MTL_REDUCE, fn, mps_mtl_dtype(L, x), &s, &x, 1, &st);
    if (st)
        st->p.axes = axes;
    return id;
}

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
    int var = mps_mtl_emit(L, MPS_MTL_VARIANCE, 0, mps_mtl_dtype(L, mean), mps_mtl_shape(L, mean), (int[]){x, mean},
                           2, &st);
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
    mps_mtl_define_as(L, n->out[0], lp == 2 ? mps_mtl_unary(L, MPS_MTL_SQRT, sum)
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
    case MPS_OP_REDUCE_LOG_SUM: y = mps_mtl_unary(L, MPS_MTL_LOG, mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, x, axes)); break;
    case MPS_OP_REDUCE_LOG_SUM_EXP: {
        double big = mps_mtl_dtype(L, x) == MPS_F16 ? 65504.0 : FLT_MAX; /* the largest finite value */
        int m = mps_mtl_reduce(L, MPS_MTL_REDUCE_MAX, x, axes);
        m = mps_mtl_binary_scalar(L, MPS_MTL_MAX, mps_mtl_binary_scalar(L, MPS_MTL_MIN, m, big), -big);
        int e = mps_mtl_unary(L, MPS_MTL_EXP, mps_mtl_binary(L, MPS_MTL_SUB, x, m));
        y = mps_mtl_binary(L, MPS_MTL_ADD, mps_mtl_unary(L, MPS_MTL_LOG, mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, e, axes)), m);
        break;
    }
    default: y = mps_mtl_reduce(L, fns[n->op], x, axes); break;
    }
    mps_mtl_define_as(L, n->out[0], y);
}

/* ArgMax and ArgMin from steps whose results MPSGraph documents (its own
   argMax leaves ties and NaNs unsaid): the extremum along the axis, the
   positions equal to it (or, in a lane holding a NaN, its NaNs: a NaN beats
   every number), then the smallest such position from an int32 iota (the
   largest with select_last_index). Returns the int32 index, the axis kept
   as 1; *pos: the iota. */
static int mps_mtl_arg_index(struct mps_mtl_lowerer *L, int x, int axis, bool max, bool last, int *pos)
{
    if (x < 0)
        return -1;
    const struct mps_shape *xs = mps_mtl_shape(L, x);
    int64_t len = xs->dim[axis];
    uint32_t ax = 1u << axis;
    struct mps_shape is = {xs->ndim, {0}};
    for (int i = 0; i < xs->ndim; i++)
        is.dim[i] = i == axis ? len : 1;
    int32_t *iota = mps_mtl_alloc(L, sizeof(int32_t) * (size_t)len);
    struct mps_mtl_step *st;
    *pos = iota ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_I32, &is, NULL, 0, &st) : -1;
    if (*pos < 0)
        return -1;
    for (int64_t i = 0; i < len; i++)
        iota[i] = (int32_t)i;
    st->p.constant.data = iota;
    st->p.constant.bytes = sizeof(int32_t) * (size_t)len;
    int nan = mps_mtl_binary(L, MPS_MTL_NOT_EQUAL, x, x);
    int any = mps_mtl_binary_scalar(L, MPS_MTL_GREATER,
                                    mps_mtl_reduce(L, MPS_MTL_REDUCE_MAX, mps_mtl_cast(L, nan, MPS_I32), ax), 0.0);
    int ext = mps_mtl_reduce(L, max ? MPS_MTL_REDUCE_MAX : MPS_MTL_REDUCE_MIN, x, ax);
    int hit = mps_mtl_select(L, any, nan, mps_mtl_binary(L, MPS_MTL_EQUAL, x, ext));
    int cand = mps_mtl_select(L, hit, *pos, mps_mtl_scalar(L, last ? -1.0 : (double)len, MPS_I32));
    return mps_mtl_reduce(L, last ? MPS_MTL_REDUCE_MAX : MPS_MTL_REDUCE_MIN, cand, ax);
}

/* Trilu: a select by a constant bool mask of one matrix (broadcast over the others). */
static void mps_mtl_lower_trilu(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int64_t rows = xs->dim[xs->ndim - 2], cols = xs->dim[xs->ndim - 1];
    int x = mps_mtl_value(L, n->in[0]);
    uint8_t *keep = mps_mtl_alloc(L, (size_t)(rows * cols));
    struct mps_shape ms = {2, {rows, cols}};
    struct mps_mtl_step *st;
    int mask = keep && x >= 0 ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_BOOL, &ms, NULL, 0, &st) : -1;
    if (mask < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            keep[i * cols + j] = n->p.trilu.upper ? j - i >= n->p.trilu.k : j - i <= n->p.trilu.k;
    st->p.constant.data = keep;
    st->p.constant.bytes = (size_t)(rows * cols);
    mps_mtl_define_as(L, n->out[0], mps_mtl_select(L, mask, x, mps_mtl_scalar(L, 0.0, mps_mtl_dtype(L, x))));
}

static void mps_mtl_lower_cumsum(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]);
    struct mps_mtl_step *st;
    int y = x < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_CUMSUM, 0, mps_mtl_dtype(L, x), mps_mtl_shape(L, x), &x, 1, &st);
    if (y >= 0) {
        st->p.cumsum.axis = (int)n->p.cumsum.axis;
        st->p.cumsum.exclusive = n->p.cumsum.exclusive;
        st->p.cumsum.reverse = n->p.cumsum.reverse;
    }
    mps_mtl_define_as(L, n->out[0], y);
}

/* ArgMax, ArgMin: the index as int64; Hardmax: 1 where the iota is ArgMax's index. */
static void mps_mtl_lower_arg(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]), pos, y;
    if (n->op == MPS_OP_HARDMAX) {
        int idx = mps_mtl_arg_index(L, x, (int)n->p.norm.axis, true, false, &pos);
        y = mps_mtl_cast(L, mps_mtl_binary(L, MPS_MTL_EQUAL, pos, idx), mps_mtl_dtype(L, x));
    } else {
        const struct mps_arg_params *p = &n->p.arg;
        int idx = mps_mtl_arg_index(L, x, (int)p->axis, n->op == MPS_OP_ARG_MAX, p->last, &pos);
        y = mps_mtl_reshape(L, mps_mtl_cast(L, idx, MPS_I64), mps_mtl_vshape(L, n->out[0]));
    }
    mps_mtl_define_as(L, n->out[0], y);
}

static void mps_mtl_lower_transpose(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]);
    struct mps_mtl_step *st;
    int y =
        x < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_PERMUTE, 0, mps_mtl_dtype(L, x), mps_mtl_vshape(L, n->out[0]), &x, 1, &st);
    if (y >= 0)
        memcpy(st->p.perm, n->p.transpose.perm, sizeof st->p.perm);
    mps_mtl_define(L, n->out[0], y);
}

/* DepthToSpace, SpaceToDepth: reshaped to six dims, permuted, reshaped back (graph.h). */
static void mps_mtl_lower_depth(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    struct mps_shape view, out6;
    int perm[6];
    int64_t src[6];
    mps_depth_view(n, mps_mtl_vshape(L, n->in[0]), &view, perm);
    mps_depth_transpose(n, mps_mtl_vshape(L, n->in[0]), &out6, src);
    int x = mps_mtl_reshape(L, mps_mtl_value(L, n->in[0]), &view);
    struct mps_mtl_step *st;
    int y = x < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_PERMUTE, 0, mps_mtl_dtype(L, x), &out6, &x, 1, &st);
    if (y >= 0)
        for (int i = 0; i < 6; i++)
            st->p.perm[i] = perm[i];
    mps_mtl_define(L, n->out[0], mps_mtl_reshape(L, y, mps_mtl_vshape(L, n->out[0])));
}

static void mps_mtl_lower_concat(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int *ids = mps_mtl_alloc(L, sizeof(int) * (size_t)n->n_in), count = 0;
    if (!ids)
        return;
    for (int i = 0; i < n->n_in; i++)
        if ((ids[count++] = mps_mtl_value(L, n->in[i])) < 0) {
            mps_mtl_define(L, n->out[0], -1);
            return;
        }
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_CONCAT, 0, mps_mtl_dtype(L, ids[0]), mps_mtl_vshape(L, n->out[0]), ids, count, &st);
    if (y >= 0)
        st->p.ax.axis = (int)n->p.axis.axis;
    mps_mtl_define(L, n->out[0], y);
}

/* A strided slice (steps > 0) of x to shape s; nothing when it keeps everything. */
static int mps_mtl_slice(struct mps_mtl_lowerer *L, int x, const int64_t *start, const int64_t *step,
                         const struct mps_shape *s)
{
    if (x < 0)
        return -1;
    const struct mps_shape *xs = mps_mtl_shape(L, x);
    bool all = true;
    for (int i = 0; i < s->ndim; i++)
        all &= start[i] == 0 && step[i] == 1 && s->dim[i] == xs->dim[i];
    if (all)
        return x;
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_SLICE, 0, mps_mtl_dtype(L, x), s, &x, 1, &st);
    for (int i = 0; y >= 0 && i < s->ndim; i++) {
        st->p.slice.start[i] = start[i];
        st->p.slice.stride[i] = step[i];
        st->p.slice.end[i] = start[i] + step[i] * (s->dim[i] - 1) + 1;
    }
    return y;
}

/* Slice: axes read backwards are reversed first (MPSGraph's strides are taken positive here). */
static void mps_mtl_lower_slice(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int64_t start[MPS_MAX_DIMS], step[MPS_MAX_DIMS];
    uint32_t reversed = 0;
    for (int i = 0; i < xs->ndim; i++) {
        start[i] = n->p.slice.start[i];
        step[i] = n->p.slice.step[i];
        if (step[i] < 0) {
            reversed |= 1u << i;
            start[i] = xs->dim[i] - 1 - start[i];
            step[i] = -step[i];
        }
    }
    int x = mps_mtl_value(L, n->in[0]);
    if (reversed && x >= 0) {
        struct mps_mtl_step *st;
        x = mps_mtl_emit(L, MPS_MTL_REVERSE, 0, mps_mtl_dtype(L, x), xs, &x, 1, &st);
        if (x >= 0)
            st->p.axes = reversed;
    }
    mps_mtl_define(L, n->out[0], mps_mtl_slice(L, x, start, step, mps_mtl_vshape(L, n->out[0])));
}

static void mps_mtl_lower_split(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]), axis = (int)n->p.axis.axis;
    int64_t start[MPS_MAX_DIMS] = {0}, step[MPS_MAX_DIMS];
    for (int i = 0; i < MPS_MAX_DIMS; i++)
        step[i] = 1;
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0)
            continue;
        mps_mtl_define(L, n->out[k], mps_mtl_slice(L, x, start, step, mps_mtl_vshape(L, n->out[k])));
        start[axis] += mps_mtl_vshape(L, n->out[k])->dim[axis];
    }
}

/* Pad: positive pads through padTensor, negative ones (crops) as a slice after it. */
static void mps_mtl_lower_pad(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    static const enum mps_mtl_pad_mode modes[] = {
        [MPS_PAD_CONSTANT] = MPS_MTL_PAD_CONSTANT,
        [MPS_PAD_REFLECT] = MPS_MTL_PAD_REFLECT,
        [MPS_PAD_EDGE] = MPS_MTL_PAD_CLAMP_TO_EDGE,
    };
    const struct mps_pad_params *q = &n->p.pad;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int r = xs->ndim, x = mps_mtl_value(L, n->in[0]);
    struct mps_shape padded = *xs;
    bool grow = false;
    int64_t start[MPS_MAX_DIMS], step[MPS_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int64_t b = q->pads[i], e = q->pads[r + i];
        padded.dim[i] += (b > 0 ? b : 0) + (e > 0 ? e : 0);
        grow |= b > 0 || e > 0;
        start[i] = b < 0 ? -b : 0;
        step[i] = 1;
    }
    if (grow && x >= 0) {
        struct mps_mtl_step *st;
        x = mps_mtl_emit(L, MPS_MTL_PAD, 0, mps_mtl_dtype(L, x), &padded, &x, 1, &st);
        if (x >= 0) {
            st->p.pad.mode = modes[q->mode];
            st->p.pad.value = q->value;
            for (int i = 0; i < r; i++) {
                st->p.pad.left[i] = q->pads[i] > 0 ? q->pads[i] : 0;
                st->p.pad.right[i] = q->pads[r + i] > 0 ? q->pads[r + i] : 0;
            }
        }
    }
    mps_mtl_define(L, n->out[0], mps_mtl_slice(L, x, start, step, mps_mtl_vshape(L, n->out[0])));
}

/* A constant f32 matrix rows x cols (the step's data owned by the program), cast to the compute type. */
static int mps_mtl_matrix(struct mps_mtl_lowerer *L, const float *data, int64_t rows, int64_t cols)
{
    struct mps_shape s = {2, {rows, cols}};
    struct mps_mtl_step *st;
    int id = mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_F32, &s, NULL, 0, &st);
    if (id < 0)
        return -1;
    st->p.constant.data = data;
    st->p.constant.bytes = sizeof(float) * (size_t)(rows * cols);
    return mps_mtl_cast(L, id, mps_mtl_compute_dtype(L, MPS_F32));
}

/* Resize of the last two axes (the others keep their size: supports() checks)
   as two products with constant matrices, Y = Wh X Ww^T: row o of Wh holds
   output row o's taps (resize.h, the CPU kernel's rule), so every mode and
   coordinate transform is ONNX's exactly, on MPSGraph's matrix product. */
static void mps_mtl_lower_resize(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_resize_params *q = &n->p.resize;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]), *ys = mps_mtl_vshape(L, n->out[0]);
    int r = xs->ndim, x = mps_mtl_value(L, n->in[0]);
    int64_t ih = xs->dim[r - 2], iw = xs->dim[r - 1], oh = ys->dim[r - 2], ow = ys->dim[r - 1];
    float *wh = mps_mtl_alloc(L, sizeof(float) * (size_t)(oh * ih)), *wt = mps_mtl_alloc(L, sizeof(float) * (size_t)(iw * ow));
    if (!wh || !wt || x < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    memset(wh, 0, sizeof(float) * (size_t)(oh * ih));
    memset(wt, 0, sizeof(float) * (size_t)(iw * ow));
    struct mps_resize_taps t;
    for (int64_t o = 0; o < oh; o++) {
        mps_resize_taps(q, r - 2, o, ih, &t);
        for (int k = 0; k < t.n; k++)
            wh[o * ih + t.i[k]] += t.w[k];
    }
    for (int64_t o = 0; o < ow; o++) { /* Ww transposed: column o */
        mps_resize_taps(q, r - 1, o, iw, &t);
        for (int k = 0; k < t.n; k++)
            wt[t.i[k] * ow + o] += t.w[k];
    }
    int y = mps_mtl_matmul_ids(L, x, mps_mtl_matrix(L, wt, iw, ow));
    mps_mtl_define_as(L, n->out[0], mps_mtl_matmul_ids(L, mps_mtl_matrix(L, wh, oh, ih), y));
}

/* Gather with constant indices: negatives resolved here into an int32
   constant (rank >= 1; a scalar index becomes [1] and the result is
   reshaped to the inferred shape). */
static void mps_mtl_lower_gather(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_value *iv = &L->g->values[n->in[1]];
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int axis = (int)n->p.axis.axis;
    int64_t count = mps_shape_numel(&iv->shape), dim = xs->dim[axis];
    int32_t *idx = mps_mtl_alloc(L, sizeof(int32_t) * (size_t)count);
    int x = mps_mtl_value(L, n->in[0]);
    if (!idx || x < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t v = iv->dtype == MPS_I64 ? ((const int64_t *)iv->data)[i] : ((const int32_t *)iv->data)[i];
        idx[i] = (int32_t)(v < 0 ? v + dim : v);
    }
    struct mps_shape is = iv->shape.ndim ? iv->shape : (struct mps_shape){1, {1}};
    struct mps_mtl_step *st;
    int ids = mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_I32, &is, NULL, 0, &st);
    if (ids < 0)
        return;
    st->p.constant.data = idx;
    st->p.constant.bytes = sizeof(int32_t) * (size_t)count;
    struct mps_shape ys = {0, {0}};
    for (int i = 0; i < xs->ndim; i++)
        if (i != axis)
            ys.dim[ys.ndim++] = xs->dim[i];
        else
            for (int k = 0; k < is.ndim; k++)
                ys.dim[ys.ndim++] = is.dim[k];
    int y = mps_mtl_emit(L, MPS_MTL_GATHER, 0, mps_mtl_dtype(L, x), &ys, (int[]){x, ids}, 2, &st);
    if (y >= 0)
        st->p.ax.axis = axis;
    mps_mtl_define_as(L, n->out[0], y);
}

/* Shape: the static dims as an int64 constant. */
static void mps_mtl_lower_shape(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]), *ys = mps_mtl_vshape(L, n->out[0]);
    int64_t *dims = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(ys->dim[0] + 1));
    if (!dims)
        return;
    for (int64_t i = 0; i < ys->dim[0]; i++)
        dims[i] = xs->dim[n->p.shape.start + i];
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_I64, ys, NULL, 0, &st);
    if (y >= 0) {
        st->p.constant.data = dims;
        st->p.constant.bytes = sizeof(int64_t) * (size_t)ys->dim[0];
    }
    mps_mtl_define(L, n->out[0], y);
}

static void mps_mtl_lower_fill(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    struct mps_mtl_step *st;
    enum mps_dtype t = mps_mtl_compute_dtype(L, L->g->values[n->out[0]].dtype);
    int y = mps_mtl_emit(L, MPS_MTL_FILL, 0, t, mps_mtl_vshape(L, n->out[0]), NULL, 0, &st);
    if (y >= 0)
        st->p.scalar = n->p.fill.value;
    mps_mtl_define(L, n->out[0], y);
}

static void mps_mtl_lower_activation(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_activation(L, n->op, &n->p.act, mps_mtl_value(L, n->in[0])));
}

/* Identity, Dropout (inference) and Constant: the input's tensor itself. */
static void mps_mtl_lower_alias(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_value(L, n->in[0]));
}

static void mps_mtl_lower_cast(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_cast(L, mps_mtl_value(L, n->in[0]), mps_mtl_compute_dtype(L, n->p.cast.to)));
}

/* Reshape, Flatten, Squeeze, Unsqueeze: the inferred shape (a weight is reshaped for free). */
static void mps_mtl_lower_reshape(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_value_as(L, n->in[0], mps_mtl_vshape(L, n->out[0])));
}

static void mps_mtl_lower_expand(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_broadcast_to(L, mps_mtl_value(L, n->in[0]), mps_mtl_vshape(L, n->out[0])));
}

/* Tile: x seen as the view's [1, d0, 1, d1, ...] (graph.h), broadcast to
   [r0, d0, r1, d1, ...], then the output's shape. */
static void mps_mtl_lower_tile(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    struct mps_shape view, ones;
    int64_t src[MPS_MAX_DIMS];
    mps_tile_view(xs, n->p.tile.repeats, &view, src);
    ones.ndim = 0; /* the view with each repeat's dim 1, as mps_tile_view lays it out */
    for (int i = 0; i < xs->ndim; i++) {
        if (n->p.tile.repeats[i] != 1)
            ones.dim[ones.ndim++] = 1;
        ones.dim[ones.ndim++] = xs->dim[i];
    }
    int x = mps_mtl_reshape(L, mps_mtl_value(L, n->in[0]), &ones);
    mps_mtl_define_as(L, n->out[0], mps_mtl_reshape(L, mps_mtl_broadcast_to(L, x, &view), mps_mtl_vshape(L, n->out[0])));
}

/* OneHot: the indices (negative ones moved up by depth) seen with a 1 at the
   new axis, compared with an iota along it; on where equal, off elsewhere. */
static void mps_mtl_lower_onehot(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_onehot_params *p = &n->p.onehot;
    const struct mps_value *y = &L->g->values[n->out[0]];
    struct mps_shape is = y->shape, ones = y->shape;
    for (int i = 0; i < y->shape.ndim; i++)
        is.dim[i] = i == p->axis ? p->depth : 1;
    ones.dim[p->axis] = 1;
    int32_t *iota = mps_mtl_alloc(L, sizeof(int32_t) * (size_t)p->depth);
    struct mps_mtl_step *st;
    int pos = iota ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_I32, &is, NULL, 0, &st) : -1;
    if (pos < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    for (int64_t i = 0; i < p->depth; i++)
        iota[i] = (int32_t)i;
    st->p.constant.data = iota;
    st->p.constant.bytes = sizeof(int32_t) * (size_t)p->depth;
    int x = mps_mtl_cast(L, mps_mtl_value(L, n->in[0]), MPS_I32); /* floats truncate, as the CPU's (int64) does */
    int fixed = mps_mtl_select(L, mps_mtl_binary_scalar(L, MPS_MTL_LESS, x, 0.0),
                               mps_mtl_binary_scalar(L, MPS_MTL_ADD, x, (double)p->depth), x);
    enum mps_dtype t = mps_mtl_compute_dtype(L, y->dtype);
    int hit = mps_mtl_binary(L, MPS_MTL_EQUAL, mps_mtl_reshape(L, fixed, &ones), pos);
    mps_mtl_define(L, n->out[0], mps_mtl_select(L, hit, mps_mtl_scalar(L, p->on, t), mps_mtl_scalar(L, p->off, t)));
}

/* Range: its values as a constant (start, delta and the length are constants). */
static void mps_mtl_lower_range(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_value *y = &L->g->values[n->out[0]];
    int64_t len = y->shape.dim[0];
    size_t elem = mps_dtype_size(y->dtype);
    void *data = mps_mtl_alloc(L, elem * (size_t)(len + 1));
    struct mps_mtl_step *st;
    int id = data ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, y->dtype, &y->shape, NULL, 0, &st) : -1;
    if (id >= 0) {
        for (int64_t i = 0; i < len; i++) {
            double v = n->p.range.start + (double)i * n->p.range.delta;
            if (y->dtype == MPS_F32)
                ((float *)data)[i] = (float)v;
            else if (y->dtype == MPS_I64)
                ((int64_t *)data)[i] = (int64_t)v;
            else
                ((int32_t *)data)[i] = (int32_t)v;
        }
        st->p.constant.data = data;
        st->p.constant.bytes = elem * (size_t)len;
    }
    mps_mtl_define(L, n->out[0], mps_mtl_cast(L, id, mps_mtl_compute_dtype(L, y->dtype)));
}

/* GatherElements with constant indices: each output's flat offset into the
   data, computed here, gathered from the data seen as one row. */
static void mps_mtl_lower_gather_elements(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_value *iv = &L->g->values[n->in[1]];
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int axis = (int)n->p.axis.axis;
    int64_t count = mps_shape_numel(&iv->shape), len = xs->dim[axis];
    int32_t *at = mps_mtl_alloc(L, sizeof(int32_t) * (size_t)(count + 1));
    int x = mps_mtl_reshape(L, mps_mtl_value(L, n->in[0]), &(struct mps_shape){1, {mps_shape_numel(xs)}});
    struct mps_mtl_step *st;
    int ids = at && x >= 0 ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_I32, &iv->shape, NULL, 0, &st) : -1;
    if (ids < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    for (int64_t o = 0; o < count; o++) {
        int64_t v = iv->dtype == MPS_I64 ? ((const int64_t *)iv->data)[o] : ((const int32_t *)iv->data)[o];
        at[o] = (int32_t)mps_gather_elements_at(xs, &iv->shape, axis, o, v < 0 ? v + len : v);
    }
    st->p.constant.data = at;
    st->p.constant.bytes = sizeof(int32_t) * (size_t)count;
    int y = mps_mtl_emit(L, MPS_MTL_GATHER, 0, mps_mtl_dtype(L, x), &iv->shape, (int[]){x, ids}, 2, &st);
    if (y >= 0)
        st->p.ax.axis = 0;
    mps_mtl_define_as(L, n->out[0], y);
}

/* An int32 constant of shape s from int64 values. */
static int mps_mtl_int32s(struct mps_mtl_lowerer *L, const int64_t *v, const struct mps_shape *s)
{
    int64_t count = mps_shape_numel(s);
    int32_t *data = mps_mtl_alloc(L, sizeof(int32_t) * (size_t)(count + 1));
    struct mps_mtl_step *st;
    int id = data ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_I32, s, NULL, 0, &st) : -1;
    if (id < 0)
        return -1;
    for (int64_t i = 0; i < count; i++)
        data[i] = (int32_t)v[i];
    st->p.constant.data = data;
    st->p.constant.bytes = sizeof(int32_t) * (size_t)count;
    return id;
}

/* x seen as one row, gathered at the flat offsets idx (an int32 tensor of the result's shape). */
static int mps_mtl_gather_flat(struct mps_mtl_lowerer *L, int x, int idx)
{
    if (x < 0 || idx < 0)
        return -1;
    x = mps_mtl_reshape(L, x, &(struct mps_shape){1, {mps_shape_numel(mps_mtl_shape(L, x))}});
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_GATHER, 0, mps_mtl_dtype(L, x), mps_mtl_shape(L, idx), (int[]){x, idx}, 2, &st);
    if (y >= 0)
        st->p.ax.axis = 0;
    return y;
}

/* A scatter with a reduction: the updates each element gets, in index order,
   gathered into a row padded with the reduction's identity (appended after the
   updates), reduced, and combined with the data. */
static int mps_mtl_scatter_reduce(struct mps_mtl_lowerer *L, const struct mps_node *n, const int64_t *off,
                                  int64_t count, int x)
{
    static const enum mps_mtl_reduce reduce[] = {
        [MPS_SCATTER_ADD] = MPS_MTL_REDUCE_SUM, [MPS_SCATTER_MUL] = MPS_MTL_REDUCE_PROD,
        [MPS_SCATTER_MAX] = MPS_MTL_REDUCE_MAX, [MPS_SCATTER_MIN] = MPS_MTL_REDUCE_MIN};
    static const enum mps_mtl_binary combine[] = {[MPS_SCATTER_ADD] = MPS_MTL_ADD, [MPS_SCATTER_MUL] = MPS_MTL_MUL,
                                                  [MPS_SCATTER_MAX] = MPS_MTL_MAX, [MPS_SCATTER_MIN] = MPS_MTL_MIN};
    enum mps_scatter_reduction red = n->p.index.reduction;
    const struct mps_shape *ys = mps_mtl_vshape(L, n->out[0]);
    int64_t total = mps_shape_numel(ys), most = 1;
    int64_t *got = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(total + 1));
    if (!got)
        return -1;
    memset(got, 0, sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < count; i++)
        most = ++got[off[i]] > most ? got[off[i]] : most;
    int64_t *table = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(total * most + 1));
    if (!table)
        return -1;
    for (int64_t t = 0; t < total * most; t++)
        table[t] = count; /* the identity, appended after the updates */
    memset(got, 0, sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < count; i++)
        table[off[i] * most + got[off[i]]++] = i;
    enum mps_dtype t = mps_mtl_dtype(L, x);
    double identity = red == MPS_SCATTER_ADD ? 0 : red == MPS_SCATTER_MUL ? 1 : red == MPS_SCATTER_MAX ? -INFINITY : INFINITY;
    if (t != MPS_F32 && t != MPS_F16 && red >= MPS_SCATTER_MAX) /* integers: their extremes */
        identity = red == MPS_SCATTER_MAX ? (t == MPS_I32 ? INT32_MIN : (double)INT64_MIN)
                                          : (t == MPS_I32 ? INT32_MAX : (double)INT64_MAX);
    struct mps_mtl_step *st;
    int u = mps_mtl_reshape(L, mps_mtl_value(L, n->in[2]), &(struct mps_shape){1, {count}});
    int pad = mps_mtl_emit(L, MPS_MTL_FILL, 0, t, &(struct mps_shape){1, {1}}, NULL, 0, &st);
    if (pad >= 0)
        st->p.scalar = identity;
    int row = u < 0 || pad < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_CONCAT, 0, t, &(struct mps_shape){1, {count + 1}},
                                                   (int[]){u, pad}, 2, &st);
    if (row >= 0)
        st->p.ax.axis = 0;
    int each = mps_mtl_gather_flat(L, row, mps_mtl_int32s(L, table, &(struct mps_shape){2, {total, most}}));
    int r = mps_mtl_reshape(L, mps_mtl_reduce(L, reduce[red], each, 1u << 1), ys);
    return mps_mtl_binary(L, combine[red], x, r);
}

/* GatherND, ScatterND and ScatterElements with constant indices, from their
   flat offsets (graph.h: mps_index_plan): a gather; a scatter without a
   reduction as select(written, updates gathered at the last update each
   element gets, data); with one, mps_mtl_scatter_reduce. */
static void mps_mtl_lower_index(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int64_t count = mps_index_plan(L->g, n, NULL, NULL);
    int64_t *off = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(count + 1));
    if (!off || mps_index_plan(L->g, n, off, NULL) < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    int x = mps_mtl_value(L, n->in[0]);
    const struct mps_shape *ys = mps_mtl_vshape(L, n->out[0]);
    if (n->op == MPS_OP_GATHER_ND) {
        mps_mtl_define_as(L, n->out[0], mps_mtl_gather_flat(L, x, mps_mtl_int32s(L, off, ys)));
        return;
    }
    if (n->p.index.reduction != MPS_SCATTER_NONE) {
        mps_mtl_define_as(L, n->out[0], mps_mtl_scatter_reduce(L, n, off, count, x));
        return;
    }
    int64_t total = mps_shape_numel(ys), *src = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(total + 1));
    uint8_t *hit = mps_mtl_alloc(L, (size_t)(total + 1));
    struct mps_mtl_step *st;
    int mask = src && hit ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_BOOL, ys, NULL, 0, &st) : -1;
    if (mask < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    memset(hit, 0, (size_t)total);
    memset(src, 0, sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < count; i++)
        if (off[i] >= 0)
            src[off[i]] = i, hit[off[i]] = 1;
    st->p.constant.data = hit;
    st->p.constant.bytes = (size_t)total;
    int upd = mps_mtl_gather_flat(L, mps_mtl_value(L, n->in[2]), mps_mtl_int32s(L, src, ys));
    mps_mtl_define_as(L, n->out[0], mps_mtl_select(L, mask, upd, x));
}

/* TopK by ranks, from steps whose results MPSGraph documents (its topK
   leaves the order of equal values unsaid): x seen as [O, L, I] (L along
   the axis); element i's rank is the number of j ahead of it (the better
   value, a NaN above every number, then the lower index), from an [O, L, L, I]
   comparison; output r takes the element of rank r, by a one-hot select and
   a sum in which only that element is not 0. */
static void mps_mtl_lower_topk(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_topk_params *p = &n->p.topk;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int64_t len = xs->dim[p->axis], k = p->k, outer = 1, inner = 1;
    for (int d = 0; d < xs->ndim; d++)
        if (d < p->axis)
            outer *= xs->dim[d];
        else if (d > p->axis)
            inner *= xs->dim[d];
    int64_t *iv = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(len + k + 1));
    uint8_t *lt = mps_mtl_alloc(L, (size_t)(len * len + 1));
    int x = mps_mtl_value(L, n->in[0]);
    struct mps_mtl_step *st;
    struct mps_shape ls = {4, {1, len, len, 1}};
    int jlt = iv && lt && x >= 0 ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, MPS_BOOL, &ls, NULL, 0, &st) : -1;
    if (jlt < 0) {
        mps_mtl_define(L, n->out[0], -1);
        mps_mtl_define(L, n->out[1], -1);
        return;
    }
    for (int64_t i = 0; i < len; i++)
        for (int64_t j = 0; j < len; j++)
            lt[i * len + j] = j < i; /* [i][j]: j comes before i on a tie */
    st->p.constant.data = lt;
    st->p.constant.bytes = (size_t)(len * len);
    for (int64_t i = 0; i < len + k; i++)
        iv[i] = i < len ? i : i - len;
    int pos = mps_mtl_int32s(L, iv, &(struct mps_shape){4, {1, len, 1, 1}});
    int ranks = mps_mtl_int32s(L, iv + len, &(struct mps_shape){4, {1, 1, k, 1}});
    int xi = mps_mtl_reshape(L, x, &(struct mps_shape){4, {outer, len, 1, inner}});
    int xj = mps_mtl_reshape(L, x, &(struct mps_shape){4, {outer, 1, len, inner}});
    int ni = mps_mtl_binary(L, MPS_MTL_NOT_EQUAL, xi, xi), nj = mps_mtl_binary(L, MPS_MTL_NOT_EQUAL, xj, xj);
    /* j ahead of i: a NaN j over a number i (largest) or a number j over a NaN i (smallest), a
       better number, or a tie (equal, or both NaN) broken by the index */
    int nan_wins = p->largest ? mps_mtl_binary(L, MPS_MTL_AND, nj, mps_mtl_unary(L, MPS_MTL_NOT, ni))
                              : mps_mtl_binary(L, MPS_MTL_AND, ni, mps_mtl_unary(L, MPS_MTL_NOT, nj));
    int better = mps_mtl_binary(L, p->largest ? MPS_MTL_GREATER : MPS_MTL_LESS, xj, xi);
    int tie = mps_mtl_binary(L, MPS_MTL_OR, mps_mtl_binary(L, MPS_MTL_EQUAL, xj, xi), mps_mtl_binary(L, MPS_MTL_AND, nj, ni));
    int ahead = mps_mtl_binary(L, MPS_MTL_OR, mps_mtl_binary(L, MPS_MTL_OR, nan_wins, better),
                               mps_mtl_binary(L, MPS_MTL_AND, tie, jlt));
    int rank = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_cast(L, ahead, MPS_I32), 1u << 2); /* [O, L, 1, I] */
    int hot = mps_mtl_binary(L, MPS_MTL_EQUAL, rank, ranks);                                    /* [O, L, k, I] */
    int vals = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_select(L, hot, xi, mps_mtl_scalar(L, 0.0, mps_mtl_dtype(L, x))),
                              1u << 1);
    int idx = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_select(L, hot, pos, mps_mtl_scalar(L, 0.0, MPS_I32)), 1u << 1);
    mps_mtl_define_as(L, n->out[0], mps_mtl_reshape(L, vals, mps_mtl_vshape(L, n->out[0])));
    mps_mtl_define_as(L, n->out[1], mps_mtl_reshape(L, mps_mtl_cast(L, idx, MPS_I64), mps_mtl_vshape(L, n->out[1])));
}

typedef void (*mps_mtl_lowering)(struct mps_mtl_lowerer *L, const struct mps_node *n);

static const mps_mtl_lowering mps_mtl_lowerings[MPS_OP_COUNT] = {
    [MPS_OP_MATMUL] = mps_mtl_lower_matmul,
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
    [MPS_OP_RELU] = mps_mtl_lower_activation,
    [MPS_OP_LEAKY_RELU] = mps_mtl_lower_activation,
    [MPS_OP_ELU] = mps_mtl_lower_activation,
    [MPS_OP_SELU] = mps_mtl_lower_activation,
    [MPS_OP_SIGMOID] = mps_mtl_lower_activation,
    [MPS_OP_HARD_SIGMOID] = mps_mtl_lower_activation,
    [MPS_OP_HARD_SWISH] = mps_mtl_lower_activation,
    [MPS_OP_TANH] = mps_mtl_lower_activation,
    [MPS_OP_SOFTPLUS] = mps_mtl_lower_activation,
    [MPS_OP_SOFTSIGN] = mps_mtl_lower_activation,
    [MPS_OP_GELU] = mps_mtl_lower_activation,
    [MPS_OP_ERF] = mps_mtl_lower_activation,
    [MPS_OP_EXP] = mps_mtl_lower_activation,
    [MPS_OP_LOG] = mps_mtl_lower_activation,
    [MPS_OP_SQRT] = mps_mtl_lower_activation,
    [MPS_OP_ABS] = mps_mtl_lower_activation,
    [MPS_OP_NEG] = mps_mtl_lower_activation,
    [MPS_OP_RECIPROCAL] = mps_mtl_lower_activation,
    [MPS_OP_FLOOR] = mps_mtl_lower_activation,
    [MPS_OP_CEIL] = mps_mtl_lower_activation,
    [MPS_OP_SIGN] = mps_mtl_lower_activation,
    [MPS_OP_ROUND] = mps_mtl_lower_activation,
    [MPS_OP_THRESHOLDED_RELU] = mps_mtl_lower_activation,
    [MPS_OP_SHRINK] = mps_mtl_lower_activation,
    [MPS_OP_CLIP] = mps_mtl_lower_activation,
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
    [MPS_OP_GATHER_ELEMENTS] = mps_mtl_lower_gather_elements,
    [MPS_OP_GATHER_ND] = mps_mtl_lower_index,
    [MPS_OP_SCATTER_ND] = mps_mtl_lower_index,
    [MPS_OP_SCATTER_ELEMENTS] = mps_mtl_lower_index,
    [MPS_OP_RANGE] = mps_mtl_lower_range,
    [MPS_OP_ONE_HOT] = mps_mtl_lower_onehot,
};

bool mps_mtl_op_lowered(enum mps_op op)
{
    return op < MPS_OP_COUNT && mps_mtl_lowerings[op] != NULL;
}

void mps_mtl_lower_node(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    if (mps_mtl_op_lowered(n->op))
        mps_mtl_lowerings[n->op](L, n);
    else
        L->bug = "an op without a lowering";
}
