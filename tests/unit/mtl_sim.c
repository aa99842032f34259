/* mtl_sim.c: the Apple GPU backend's lowering, run without a Mac.

   A test backend ("mps-sim") that lowers the graph exactly as the real mps
   backend does (src/gpu/metal/lower.c) and then executes the program's steps
   in double, each as the MPSGraph call it stands for is documented to behave
   (the headers' descriptions; ONNX semantics where MPSGraph follows them),
   an f32 result rounded to f32 as MPSGraph holds it.
   Every step also checks the shape MPSGraph would give its result against
   the shape the lowering declared (convolution and pooling output sizes from
   the descriptor, strided-slice lengths, broadcasting), so a wrong padding,
   end or axis fails here. What it cannot prove is that MPSGraph behaves as
   documented: that is for the Mac CI job. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower.h"

#define MPS_MTL_SIM_MAX_IN 256 /* Concat inputs */

struct th_sim_state {
    const struct mps_graph *g;
    struct mps_mtl_program *p;
};

static bool th_sim_integer(enum mps_dtype t)
{
    return t == MPS_I64 || t == MPS_I32 || t == MPS_U8 || t == MPS_BOOL;
}

static struct ref_tensor th_sim_new(const struct mps_shape *s, enum mps_dtype t)
{
    return (struct ref_tensor){*s, calloc((size_t)ref_numel(s) + 1, sizeof(double)), th_sim_integer(t), NULL, t};
}

static void th_sim_unravel(const struct mps_shape *s, int64_t o, int64_t *idx)
{
    for (int i = s->ndim - 1; i >= 0; i--) {
        idx[i] = s->dim[i] ? o % s->dim[i] : 0;
        o = s->dim[i] ? o / s->dim[i] : 0;
    }
}

/* Element of t at the (right-aligned, broadcast) index idx of rank r. */
static double th_sim_bget(const struct ref_tensor *t, const int64_t *idx, int r)
{
    int64_t off = 0;
    for (int i = 0; i < t->shape.ndim; i++) {
        int64_t k = idx[r - t->shape.ndim + i];
        off = off * t->shape.dim[i] + (t->shape.dim[i] == 1 ? 0 : k);
    }
    return t->d[off];
}

#define TH_SIM_FAIL(...) (snprintf(why, size, __VA_ARGS__), false)

static bool th_sim_shape_is(const struct mps_shape *got, const struct mps_shape *want, const char *what, char *why,
                            size_t size)
{
    char a[96], b[96];
    if (mps_shape_eq(got, want))
        return true;
    return TH_SIM_FAIL("%s gives %s, the lowering declared %s", what, mps_shape_str(got, a, sizeof a),
                       mps_shape_str(want, b, sizeof b));
}

/* Output size of a 2-D window along one axis, MPSGraph's explicit padding, floor. */
static int64_t th_sim_window_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe)
{
    return (in + pb + pe - d * (k - 1) - 1) / s + 1;
}

static bool th_sim_conv(const struct mps_mtl_step *s, const struct ref_tensor *x, const struct ref_tensor *w,
                        struct ref_tensor *y, char *why, size_t size)
{
    const struct mps_mtl_conv *c = &s->p.conv;
    union mps_op_params p;
    bool transpose = s->kind == MPS_MTL_CONV_TRANSPOSE2D;
    mps_op_params_default(transpose ? MPS_OP_CONV_TRANSPOSE : MPS_OP_CONV, &p);
    if (c->data_layout != MPS_MTL_LAYOUT_NCHW || c->weights_layout != MPS_MTL_LAYOUT_OIHW)
        return TH_SIM_FAIL("a layout other than NCHW/OIHW");
    int64_t st[2] = {c->stride_y, c->stride_x}, dl[2] = {c->dilation_y, c->dilation_x};
    int64_t pb[2] = {c->pad_top, c->pad_left}, pe[2] = {c->pad_bottom, c->pad_right};
    for (int j = 0; j < 2; j++) {
        p.conv.win.kernel[j] = w->shape.dim[2 + j];
        p.conv.win.stride[j] = st[j];
        p.conv.win.dilation[j] = dl[j];
        p.conv.win.pad[j] = pb[j];
        p.conv.win.pad[2 + j] = pe[j];
    }
    p.conv.group = c->groups;
    struct mps_shape ys = s->shape;
    if (!transpose) {
        ys.dim[1] = w->shape.dim[0];
        for (int j = 0; j < 2; j++)
            ys.dim[2 + j] = th_sim_window_out(x->shape.dim[2 + j], w->shape.dim[2 + j], st[j], dl[j], pb[j], pe[j]);
        if (!th_sim_shape_is(&ys, &s->shape, "convolution2D", why, size))
            return false;
    } else {
        /* the forward convolution of the declared output must give the input back */
        for (int j = 0; j < 2; j++) {
            int64_t back = th_sim_window_out(s->shape.dim[2 + j], w->shape.dim[2 + j], st[j], dl[j], pb[j], pe[j]);
            if (back != x->shape.dim[2 + j])
                return TH_SIM_FAIL("convolutionTranspose2D: output size %lld maps back to %lld, not %lld",
                                   (long long)s->shape.dim[2 + j], (long long)back, (long long)x->shape.dim[2 + j]);
            p.conv.output_padding[j] = s->shape.dim[2 + j] - (st[j] * (x->shape.dim[2 + j] - 1) +
                                                              dl[j] * (w->shape.dim[2 + j] - 1) + 1 - pb[j] - pe[j]);
        }
    }
    ref_op(transpose ? MPS_OP_CONV_TRANSPOSE : MPS_OP_CONV, &p, (struct ref_tensor[]){*x, *w}, 2, y, 1);
    return true;
}

static bool th_sim_pool(const struct mps_mtl_step *s, const struct ref_tensor *x, struct ref_tensor *y, int n_out,
                        char *why, size_t size)
{
    const struct mps_mtl_pool_desc *q = &s->p.pool;
    union mps_op_params p;
    enum mps_op op = s->fn == MPS_MTL_POOL_MAX ? MPS_OP_MAX_POOL : MPS_OP_AVERAGE_POOL;
    mps_op_params_default(op, &p);
    int64_t k[2] = {q->kernel_h, q->kernel_w}, st[2] = {q->stride_y, q->stride_x},
            dl[2] = {q->dilation_y, q->dilation_x};
    int64_t pb[2] = {q->pad_top, q->pad_left}, pe[2] = {q->pad_bottom, q->pad_right};
    struct mps_shape ys = x->shape;
    for (int j = 0; j < 2; j++) {
        p.pool.win.kernel[j] = k[j];
        p.pool.win.stride[j] = st[j];
        p.pool.win.dilation[j] = dl[j];
        p.pool.win.pad[j] = pb[j];
        p.pool.win.pad[2 + j] = pe[j];
        ys.dim[2 + j] = th_sim_window_out(x->shape.dim[2 + j], k[j], st[j], dl[j], pb[j], pe[j]);
    }
    p.pool.count_include_pad = q->include_zero_pad;
    if (!th_sim_shape_is(&ys, &s->shape, "pooling2D (ceilMode off)", why, size))
        return false;
    ref_op(op, &p, x, 1, y, n_out);
    return true;
}

/* REDUCE and VARIANCE: reduced dims kept as 1. */
static bool th_sim_reduce(const struct mps_mtl_step *s, const struct ref_tensor *x, const struct ref_tensor *mean,
                          struct ref_tensor *y, char *why, size_t size)
{
    struct mps_shape ys = x->shape;
    for (int i = 0; i < ys.ndim; i++)
        if (s->p.axes & (1u << i))
            ys.dim[i] = 1;
    if (!th_sim_shape_is(&ys, &s->shape, "the reduction", why, size))
        return false;
    int64_t ny = ref_numel(&ys), *count = calloc((size_t)ny + 1, sizeof *count), idx[MPS_MAX_DIMS];
    bool is_max = s->kind == MPS_MTL_REDUCE && s->fn == MPS_MTL_REDUCE_MAX;
    bool is_min = s->kind == MPS_MTL_REDUCE && s->fn == MPS_MTL_REDUCE_MIN;
    bool is_prod = s->kind == MPS_MTL_REDUCE && s->fn == MPS_MTL_REDUCE_PROD;
    for (int64_t o = 0; o < ny; o++)
        y->d[o] = is_max ? -INFINITY : is_min ? INFINITY : is_prod ? 1 : 0;
    for (int64_t i = 0; i < ref_numel(&x->shape); i++) {
        th_sim_unravel(&x->shape, i, idx);
        int64_t o = 0;
        for (int a = 0; a < ys.ndim; a++)
            o = o * ys.dim[a] + (ys.dim[a] == 1 ? 0 : idx[a]);
        double v = x->d[i];
        if (mean)
            y->d[o] += (v - mean->d[o]) * (v - mean->d[o]);
        else
            y->d[o] = is_max ? fmax(y->d[o], v) : is_min ? fmin(y->d[o], v) : is_prod ? y->d[o] * v : y->d[o] + v;
        count[o]++;
    }
    for (int64_t o = 0; o < ny; o++)
        if (mean || s->fn == MPS_MTL_REDUCE_MEAN)
            y->d[o] /= (double)count[o];
    free(count);
    return true;
}

/* Elementwise steps with broadcasting: comparisons, select, normalize, broadcast. */
static bool th_sim_elementwise(const struct mps_mtl_step *s, const struct ref_tensor *in, struct ref_tensor *y,
                               char *why, size_t size)
{
    struct mps_shape want = s->kind == MPS_MTL_BROADCAST ? s->shape : in[0].shape, tmp;
    struct mps_error err;
    for (int k = 1; k < s->n_in && s->kind != MPS_MTL_BROADCAST; k++)
        if (in[k].d) {
            if (mps_shape_broadcast(&want, &in[k].shape, &tmp, &err) != MPS_OK)
                return TH_SIM_FAIL("operands that do not broadcast: %s", err.msg);
            want = tmp;
        }
    if (s->kind == MPS_MTL_BROADCAST && mps_shape_broadcast(&in[0].shape, &want, &tmp, &err) != MPS_OK)
        return TH_SIM_FAIL("broadcastTensor: %s", err.msg);
    if (!th_sim_shape_is(&want, &s->shape, mps_mtl_kind_name(s->kind), why, size))
        return false;
    int64_t idx[MPS_MAX_DIMS];
    int r = want.ndim;
    for (int64_t o = 0; o < ref_numel(&want); o++) {
        th_sim_unravel(&want, o, idx);
        double a = th_sim_bget(&in[0], idx, r), b = s->n_in > 1 && in[1].d ? th_sim_bget(&in[1], idx, r) : 0;
        switch (s->kind) {
        case MPS_MTL_BINARY:
            switch (s->fn) {
            case MPS_MTL_GREATER: y->d[o] = a > b; break;
            case MPS_MTL_GREATER_EQUAL: y->d[o] = a >= b; break;
            case MPS_MTL_LESS: y->d[o] = a < b; break;
            case MPS_MTL_LESS_EQUAL: y->d[o] = a <= b; break;
            case MPS_MTL_EQUAL: y->d[o] = a == b; break;
            case MPS_MTL_NOT_EQUAL: y->d[o] = a != b; break;
            case MPS_MTL_AND: y->d[o] = a != 0 && b != 0; break;
            case MPS_MTL_OR: y->d[o] = a != 0 || b != 0; break;
            default: y->d[o] = (a != 0) != (b != 0); break; /* XOR */
            }
            break;
        case MPS_MTL_SELECT: y->d[o] = a != 0 ? b : th_sim_bget(&in[2], idx, r); break;
        case MPS_MTL_NORMALIZE: {
            double v = (a - b) / sqrt(th_sim_bget(&in[2], idx, r) + s->p.epsilon);
            if (in[3].d)
                v *= th_sim_bget(&in[3], idx, r);
            if (in[4].d)
                v += th_sim_bget(&in[4], idx, r);
            y->d[o] = v;
            break;
        }
        default: y->d[o] = a; break; /* BROADCAST */
        }
    }
    return true;
}

/* sliceTensor:starts:ends:strides: (TensorFlow's strided slice, positive strides). */
static bool th_sim_slice(const struct mps_mtl_step *s, const struct ref_tensor *x, struct ref_tensor *y, char *why,
                         size_t size)
{
    const struct mps_mtl_slice *q = &s->p.slice;
    struct mps_shape ys = x->shape;
    for (int i = 0; i < ys.ndim; i++) {
        if (q->stride[i] <= 0 || q->start[i] < 0 || q->end[i] > x->shape.dim[i] || q->end[i] <= q->start[i])
            return TH_SIM_FAIL("slice axis %d: start %lld end %lld stride %lld out of [0, %lld]", i,
                               (long long)q->start[i], (long long)q->end[i], (long long)q->stride[i],
                               (long long)x->shape.dim[i]);
        ys.dim[i] = (q->end[i] - q->start[i] + q->stride[i] - 1) / q->stride[i];
    }
    if (!th_sim_shape_is(&ys, &s->shape, "sliceTensor", why, size))
        return false;
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(&ys); o++) {
        th_sim_unravel(&ys, o, idx);
        int64_t off = 0;
        for (int i = 0; i < ys.ndim; i++)
            off = off * x->shape.dim[i] + q->start[i] + idx[i] * q->stride[i];
        y->d[o] = x->d[off];
    }
    return true;
}

static void th_sim_reverse(uint32_t axes, const struct ref_tensor *x, struct ref_tensor *y)
{
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(&x->shape); o++) {
        th_sim_unravel(&x->shape, o, idx);
        int64_t off = 0;
        for (int i = 0; i < x->shape.ndim; i++)
            off = off * x->shape.dim[i] + ((axes & (1u << i)) ? x->shape.dim[i] - 1 - idx[i] : idx[i]);
        y->d[o] = x->d[off];
    }
}

static bool th_sim_step(const struct mps_mtl_step *s, struct ref_tensor *t, const struct mps_tensor *in, char *why,
                        size_t size)
{
    static const enum mps_op unary[MPS_MTL_UNARY_COUNT] = {
        [MPS_MTL_IDENTITY] = MPS_OP_IDENTITY, [MPS_MTL_RELU] = MPS_OP_RELU,
        [MPS_MTL_SIGMOID] = MPS_OP_SIGMOID,   [MPS_MTL_TANH] = MPS_OP_TANH,
        [MPS_MTL_EXP] = MPS_OP_EXP,           [MPS_MTL_LOG] = MPS_OP_LOG,
        [MPS_MTL_SQRT] = MPS_OP_SQRT,         [MPS_MTL_ABS] = MPS_OP_ABS,
        [MPS_MTL_NEG] = MPS_OP_NEG,           [MPS_MTL_RECIPROCAL] = MPS_OP_RECIPROCAL,
        [MPS_MTL_FLOOR] = MPS_OP_FLOOR,       [MPS_MTL_CEIL] = MPS_OP_CEIL,
        [MPS_MTL_ERF] = MPS_OP_ERF,           [MPS_MTL_NOT] = MPS_OP_NOT,
        [MPS_MTL_SIGN] = MPS_OP_SIGN,         [MPS_MTL_RINT] = MPS_OP_ROUND,
        [MPS_MTL_SIN] = MPS_OP_SIN,
        [MPS_MTL_COS] = MPS_OP_COS,
        [MPS_MTL_TAN] = MPS_OP_TAN,
        [MPS_MTL_ASIN] = MPS_OP_ASIN,
        [MPS_MTL_ACOS] = MPS_OP_ACOS,
        [MPS_MTL_ATAN] = MPS_OP_ATAN,
        [MPS_MTL_SINH] = MPS_OP_SINH,
        [MPS_MTL_COSH] = MPS_OP_COSH,
        [MPS_MTL_ASINH] = MPS_OP_ASINH,
        [MPS_MTL_ACOSH] = MPS_OP_ACOSH,
        [MPS_MTL_ATANH] = MPS_OP_ATANH,
    };
    static const enum mps_op binary[MPS_MTL_BINARY_COUNT] = {
        [MPS_MTL_ADD] = MPS_OP_ADD, [MPS_MTL_SUB] = MPS_OP_SUB, [MPS_MTL_MUL] = MPS_OP_MUL, [MPS_MTL_DIV] = MPS_OP_DIV,
        [MPS_MTL_POW] = MPS_OP_POW, [MPS_MTL_MAX] = MPS_OP_MAX, [MPS_MTL_MIN] = MPS_OP_MIN,
    };
    struct ref_tensor a[MPS_MTL_SIM_MAX_IN] = {{{0, {0}}, NULL, false, NULL, MPS_F32}};
    if (s->n_in > MPS_MTL_SIM_MAX_IN)
        return TH_SIM_FAIL("%d operands: the simulation takes %d", s->n_in, MPS_MTL_SIM_MAX_IN);
    for (int k = 0; k < s->n_in; k++)
        if (s->in[k] >= 0)
            a[k] = t[s->in[k]];
    struct ref_tensor *y = &t[s->out];
    *y = th_sim_new(&s->shape, s->dtype);
    int64_t ny = ref_numel(&s->shape);
    union mps_op_params p;
    switch (s->kind) {
    case MPS_MTL_PLACEHOLDER: th_to_double(in[s->p.index].dtype, in[s->p.index].data, ny, y->d); return true;
    case MPS_MTL_CONSTANT:
        if ((size_t)ny * mps_dtype_size(s->dtype) != s->p.constant.bytes)
            return TH_SIM_FAIL("constant of %zu bytes for %lld elements", s->p.constant.bytes, (long long)ny);
        th_to_double(s->dtype, s->p.constant.data, ny, y->d);
        return true;
    case MPS_MTL_FILL:
        for (int64_t i = 0; i < ny; i++)
            y->d[i] = s->p.scalar;
        return true;
    case MPS_MTL_CAST:
        mps_op_params_default(MPS_OP_CAST, &p);
        p.cast.to = s->dtype;
        ref_op(MPS_OP_CAST, &p, a, 1, y, 1);
        return th_sim_shape_is(&a[0].shape, &s->shape, "castTensor", why, size);
    case MPS_MTL_UNARY:
        mps_op_params_default(unary[s->fn], &p);
        ref_op(unary[s->fn], &p, a, 1, y, 1);
        return th_sim_shape_is(&a[0].shape, &s->shape, mps_mtl_unary_name(s->fn), why, size);
    case MPS_MTL_BINARY:
        if (s->fn >= MPS_MTL_GREATER)
            return th_sim_elementwise(s, a, y, why, size);
        {
            struct mps_shape want;
            struct mps_error err;
            if (mps_shape_broadcast(&a[0].shape, &a[1].shape, &want, &err) != MPS_OK)
                return TH_SIM_FAIL("%s: %s", mps_mtl_binary_name(s->fn), err.msg);
            if (!th_sim_shape_is(&want, &s->shape, mps_mtl_binary_name(s->fn), why, size))
                return false;
        }
        ref_op(binary[s->fn], &(union mps_op_params){.binary = {.act = {.on = false}}}, a, 2, y, 1); /* no act */
        return true;
    case MPS_MTL_SELECT:
    case MPS_MTL_NORMALIZE:
    case MPS_MTL_BROADCAST: return th_sim_elementwise(s, a, y, why, size);
    case MPS_MTL_MATMUL: {
        struct mps_matmul_geom geo = mps_matmul_geom(&a[0].shape, &a[1].shape);
        struct mps_shape want = geo.batch;
        want.dim[want.ndim++] = geo.m;
        want.dim[want.ndim++] = geo.n;
        if (a[0].shape.ndim < 2 || a[1].shape.ndim < 2 ||
            a[0].shape.dim[a[0].shape.ndim - 1] != a[1].shape.dim[a[1].shape.ndim - 2])
            return TH_SIM_FAIL("matrixMultiplication of ranks %d and %d", a[0].shape.ndim, a[1].shape.ndim);
        if (!th_sim_shape_is(&want, &s->shape, "matrixMultiplication", why, size))
            return false;
        ref_op(MPS_OP_MATMUL, NULL, a, 2, y, 1);
        return true;
    }
    case MPS_MTL_TRANSPOSE2:
    case MPS_MTL_PERMUTE: {
        mps_op_params_default(MPS_OP_TRANSPOSE, &p);
        p.transpose.n_perm = a[0].shape.ndim;
        struct mps_shape want = a[0].shape;
        for (int i = 0; i < a[0].shape.ndim; i++) {
            int from = s->kind == MPS_MTL_PERMUTE ? s->p.perm[i]
                       : i == s->p.ax.axis        ? s->p.ax.axis2
                       : i == s->p.ax.axis2       ? s->p.ax.axis
                                                  : i;
            p.transpose.perm[i] = from;
            want.dim[i] = a[0].shape.dim[from];
        }
        if (!th_sim_shape_is(&want, &s->shape, "transposeTensor", why, size))
            return false;
        ref_op(MPS_OP_TRANSPOSE, &p, a, 1, y, 1);
        return true;
    }
    case MPS_MTL_CONV2D:
    case MPS_MTL_CONV_TRANSPOSE2D: return th_sim_conv(s, &a[0], &a[1], y, why, size);
    case MPS_MTL_POOL2D: {
        if (s->out2 < 0)
            return th_sim_pool(s, &a[0], y, 1, why, size);
        struct ref_tensor both[2] = {*y, th_sim_new(&s->shape, MPS_I32)};
        t[s->out2] = both[1];
        return th_sim_pool(s, &a[0], both, 2, why, size);
    }
    case MPS_MTL_REDUCE: return th_sim_reduce(s, &a[0], NULL, y, why, size);
    case MPS_MTL_VARIANCE: return th_sim_reduce(s, &a[0], &a[1], y, why, size);
    case MPS_MTL_SOFTMAX:
        mps_op_params_default(MPS_OP_SOFTMAX, &p);
        p.norm.axis = s->p.ax.axis;
        ref_op(MPS_OP_SOFTMAX, &p, a, 1, y, 1);
        return th_sim_shape_is(&a[0].shape, &s->shape, "softMax", why, size);
    case MPS_MTL_RESHAPE:
        if (ref_numel(&a[0].shape) != ny)
            return TH_SIM_FAIL("reshape of %lld elements into %lld", (long long)ref_numel(&a[0].shape), (long long)ny);
        memcpy(y->d, a[0].d, sizeof(double) * (size_t)ny);
        return true;
    case MPS_MTL_SLICE: return th_sim_slice(s, &a[0], y, why, size);
    case MPS_MTL_CUMSUM: { /* exclusive: the first is 0; reverse: from the end of the axis */
        mps_op_params_default(MPS_OP_CUM_SUM, &p);
        p.cumsum.exclusive = s->p.cumsum.exclusive;
        p.cumsum.reverse = s->p.cumsum.reverse;
        double axis = s->p.cumsum.axis;
        struct ref_tensor ops[2] = {a[0], {{1, {1}}, &axis, true, NULL, MPS_I64}};
        ref_op(MPS_OP_CUM_SUM, &p, ops, 2, y, 1);
        return th_sim_shape_is(&a[0].shape, &s->shape, "cumulativeSum", why, size);
    }
    case MPS_MTL_REVERSE:
        th_sim_reverse(s->p.axes, &a[0], y);
        return th_sim_shape_is(&a[0].shape, &s->shape, "reverse", why, size);
    case MPS_MTL_CONCAT: {
        struct mps_shape want = a[0].shape;
        for (int k = 1; k < s->n_in; k++)
            want.dim[s->p.ax.axis] += a[k].shape.dim[s->p.ax.axis];
        if (!th_sim_shape_is(&want, &s->shape, "concatTensors", why, size))
            return false;
        mps_op_params_default(MPS_OP_CONCAT, &p);
        p.axis.axis = s->p.ax.axis;
        ref_op(MPS_OP_CONCAT, &p, a, s->n_in, y, 1);
        return true;
    }
    case MPS_MTL_PAD: {
        int r = a[0].shape.ndim;
        struct mps_shape ps = {1, {2 * r}}, want = a[0].shape;
        struct ref_tensor pads = th_sim_new(&ps, MPS_I64), value = th_sim_new(&(struct mps_shape){0, {0}}, MPS_F32);
        for (int i = 0; i < r; i++) {
            pads.d[i] = (double)s->p.pad.left[i];
            pads.d[r + i] = (double)s->p.pad.right[i];
            want.dim[i] += s->p.pad.left[i] + s->p.pad.right[i];
        }
        value.d[0] = s->p.pad.value;
        mps_op_params_default(MPS_OP_PAD, &p);
        p.pad.mode = s->p.pad.mode == MPS_MTL_PAD_REFLECT         ? MPS_PAD_REFLECT
                     : s->p.pad.mode == MPS_MTL_PAD_CLAMP_TO_EDGE ? MPS_PAD_EDGE
                                                                  : MPS_PAD_CONSTANT;
        bool ok = th_sim_shape_is(&want, &s->shape, "padTensor", why, size);
        if (ok)
            ref_op(MPS_OP_PAD, &p, (struct ref_tensor[]){a[0], pads, value}, 3, y, 1);
        free(pads.d);
        free(value.d);
        return ok;
    }
    case MPS_MTL_GATHER: {
        struct mps_shape want = {0, {0}};
        for (int i = 0; i < a[0].shape.ndim; i++)
            if (i != s->p.ax.axis)
                want.dim[want.ndim++] = a[0].shape.dim[i];
            else
                for (int k = 0; k < a[1].shape.ndim; k++)
                    want.dim[want.ndim++] = a[1].shape.dim[k];
        for (int64_t i = 0; i < ref_numel(&a[1].shape); i++)
            if (a[1].d[i] < 0 || a[1].d[i] >= (double)a[0].shape.dim[s->p.ax.axis])
                return TH_SIM_FAIL("gather index %g out of range", a[1].d[i]);
        if (!th_sim_shape_is(&want, &s->shape, "gather", why, size))
            return false;
        mps_op_params_default(MPS_OP_GATHER, &p);
        p.axis.axis = s->p.ax.axis;
        ref_op(MPS_OP_GATHER, &p, a, 2, y, 1);
        return true;
    }
    default: return TH_SIM_FAIL("no simulation of %s", mps_mtl_kind_name(s->kind));
    }
}

static bool th_sim_supports(const struct mps_graph *g, const struct mps_node *n)
{
    char why[256];
    return mps_mtl_node_supported(g, n, why, sizeof why);
}

static enum mps_status th_sim_compile(const struct mps_graph *g, const struct mps_compile_opts *opts, void **state,
                                      struct mps_error *err)
{
    if (opts->precision != MPS_PRECISION_FP32)
        return mps_fail(err, MPS_ERR_USAGE, "mps-sim: the simulation runs fp32 programs");
    struct th_sim_state *st = calloc(1, sizeof *st);
    st->g = g;
    enum mps_status s = mps_mtl_lower(g, opts->precision, &st->p, err);
    if (s) {
        free(st);
        return s;
    }
    *state = st;
    return MPS_OK;
}

static enum mps_status th_sim_run(void *state, const struct mps_tensor *in, struct mps_tensor *out,
                                  struct mps_error *err)
{
    const struct th_sim_state *st = state;
    const struct mps_mtl_program *p = st->p;
    struct ref_tensor *t = calloc((size_t)p->n_tensors + 1, sizeof *t);
    enum mps_status status = MPS_OK;
    char why[1024];
    for (int i = 0; i < p->n_steps && !status; i++) {
        const struct mps_mtl_step *s = &p->steps[i];
        if (!th_sim_step(s, t, in, why, sizeof why)) {
            const char *node = s->node >= 0 ? st->g->nodes[s->node].name : "-";
            status = mps_fail(err, MPS_ERR_MODEL, "mps-sim: step %d (%s, node '%s'): %s", i, mps_mtl_kind_name(s->kind),
                              node, why);
        } else if (s->dtype == MPS_F32 && t[s->out].d) { /* what an f32 MPSGraph tensor holds (a quantizer's
                                                             Round sees the f32 quotient, ties and all) */
            for (int64_t k = 0; k < ref_numel(&t[s->out].shape); k++)
                t[s->out].d[k] = (double)(float)t[s->out].d[k];
        }
    }
    for (int i = 0; i < p->n_outputs && !status; i++) {
        const struct ref_tensor *r = &t[p->outputs[i]];
        if (!mps_shape_eq(&r->shape, &out[i].shape) || out[i].dtype != st->g->values[st->g->outputs[i]].dtype)
            status = mps_fail(err, MPS_ERR_MODEL, "mps-sim: output %d has the wrong shape or type", i);
        else
            th_from_double(out[i].dtype, r->d, ref_numel(&r->shape), out[i].data);
    }
    for (int i = 0; i < p->n_tensors; i++)
        free(t[i].d);
    free(t);
    return status;
}

static void th_sim_free(void *state)
{
    struct th_sim_state *st = state;
    if (!st)
        return;
    mps_mtl_program_free(st->p);
    free(st);
}

static enum mps_status th_sim_probe(struct mps_backend_info *info, struct mps_error *err)
{
    (void)err;
    snprintf(info->device, sizeof info->device, "the mps lowering, simulated in double");
    info->memory_bytes = 0;
    info->threads = 1;
    snprintf(info->detail, sizeof info->detail, "tests/unit/mtl_sim.c");
    return MPS_OK;
}

const struct mps_backend th_backend_mps_sim = {
    .name = "mps-sim",
    .description = "the Apple GPU backend's lowering, executed in double by the tests",
    .precisions = MPS_PRECISION_BIT(MPS_PRECISION_FP32), /* it executes the fp32 lowering */
    .probe = th_sim_probe,
    .supports = th_sim_supports,
    .compile = th_sim_compile,
    .run = th_sim_run,
    .free = th_sim_free,
};
