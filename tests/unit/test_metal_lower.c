/* test_metal_lower.c: the decisions of the Apple GPU backend's lowering
   (src/gpu/metal/lower.c), checked on every machine: for a one-node graph
   per row, the MPSGraph steps it produces (through the program dump), or
   the reason it refuses. Then every op has a lowering, and every row's
   program is well formed (each tensor defined once, before it is read). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "lower.h"

/* Operands as "name:type[dims]" separated by spaces; type f32/i64/f64 is a
   graph input, "w" an f32 weight of random values, "i64c=1,-2" an int64
   weight with those values. */
static int tl_operand(struct mps_graph *g, const char *spec)
{
    char name[32], type[32];
    int64_t dims[MPS_MAX_DIMS], vals[64];
    int nd = 0, nv = 0;
    const char *c = strchr(spec, ':'), *b = strchr(spec, '[');
    snprintf(name, sizeof name, "%.*s", (int)(c - spec), spec);
    snprintf(type, sizeof type, "%.*s", (int)(b - c - 1), c + 1);
    for (const char *q = b + 1; *q != ']'; q++)
        if (isdigit((unsigned char)*q)) {
            dims[nd++] = strtoll(q, (char **)&q, 10);
            q--;
        }
    char *eq = strchr(type, '=');
    if (eq) {
        *eq = 0;
        for (char *q = eq + 1; *q; q++)
            if (*q != ',') {
                vals[nv++] = strtoll(q, &q, 10);
                q--;
            }
    }
    struct mps_shape s = {nd, {0}};
    memcpy(s.dim, dims, sizeof(int64_t) * (size_t)nd);
    if (strcmp(type, "w") == 0)
        return th_add_random_const(g, name, &s, -1, 1);
    if (strcmp(type, "i64c") == 0)
        return mps_graph_add_const(g, name, MPS_I64, &s, vals);
    enum mps_dtype t = strcmp(type, "i64") == 0 ? MPS_I64 : strcmp(type, "f64") == 0 ? MPS_F64 : MPS_F32;
    int v = mps_graph_add_value(g, name, t, &s);
    struct mps_error err;
    mps_graph_add_input(g, v, &err);
    return v;
}

struct tl_row {
    const char *what;
    enum mps_op op;
    const char *in; /* operands, "-" for an omitted optional one */
    int n_out;      /* 0: one */
    void (*set)(union mps_op_params *p);
    enum mps_precision precision;
    const char *expect[8]; /* substrings found on dump lines, in this order */
    const char *refuse;    /* instead: lowering fails with this in the message */
};

/* Builds the row's graph: one node reading the operands, outputs y0, y1, ... */
static struct mps_graph *tl_graph(const struct tl_row *r, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int in[8], out[3], n_in = 0, n_out = r->n_out ? r->n_out : 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", r->in);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " "))
        in[n_in++] = strcmp(tok, "-") == 0 ? -1 : tl_operand(g, tok);
    for (int i = 0; i < n_out; i++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        out[i] = mps_graph_add_value(g, name, MPS_F32, NULL);
    }
    union mps_op_params p;
    mps_op_params_default(r->op, &p);
    if (r->set)
        r->set(&p);
    if (mps_graph_add_node(g, r->op, "n", in, n_in, out, n_out, &p, err) || mps_graph_sort(g, err) ||
        mps_graph_infer(g, err)) {
        mps_graph_free(g);
        return NULL;
    }
    for (int i = 0; i < n_out; i++)
        mps_graph_add_output(g, out[i], err);
    return g;
}

static void set_conv_g2(union mps_op_params *p)
{
    p->conv.group = 2;
    p->conv.win.stride[0] = p->conv.win.stride[1] = 2;
    p->conv.win.pad[0] = 1; /* top */
    p->conv.win.pad[1] = 1; /* left */
    p->conv.win.pad[2] = 0; /* bottom */
    p->conv.win.pad[3] = 2; /* right */
}
static void set_same_upper(union mps_op_params *p)
{
    p->conv.win.auto_pad = MPS_AUTO_PAD_SAME_UPPER;
}
static void set_same_lower(union mps_op_params *p)
{
    p->conv.win.auto_pad = MPS_AUTO_PAD_SAME_LOWER;
}
static void set_dilation2(union mps_op_params *p)
{
    p->conv.win.dilation[0] = 2;
}
static void set_depthwise(union mps_op_params *p)
{
    p->conv.group = 4;
}
static void set_fused_relu(union mps_op_params *p)
{
    p->conv.act = (struct mps_fused_act){true, MPS_OP_RELU, {0, 0}};
}
static void set_convt_s2(union mps_op_params *p)
{
    p->conv.win.stride[0] = p->conv.win.stride[1] = 2;
    p->conv.output_padding[0] = p->conv.output_padding[1] = 1;
}
static void set_convt_pad(union mps_op_params *p)
{
    p->conv.win.stride[0] = p->conv.win.stride[1] = 2;
    for (int i = 0; i < 4; i++)
        p->conv.win.pad[i] = 1;
}
static void set_pool3s2(union mps_op_params *p)
{
    p->pool.win.kernel[0] = p->pool.win.kernel[1] = 3;
    p->pool.win.stride[0] = p->pool.win.stride[1] = 2;
}
static void set_pool3s2_ceil(union mps_op_params *p)
{
    set_pool3s2(p);
    p->pool.ceil_mode = true;
}
static void set_avg_incl_pad(union mps_op_params *p)
{
    set_pool3s2(p);
    for (int i = 0; i < 4; i++)
        p->pool.win.pad[i] = 1;
    p->pool.count_include_pad = true;
}
static void set_avg_incl_pad_ceil(union mps_op_params *p)
{
    set_avg_incl_pad(p);
    p->pool.ceil_mode = true;
}
static void set_pool1d(union mps_op_params *p)
{
    p->pool.win.kernel[0] = 2;
    p->pool.win.stride[0] = 2;
}
static void set_pool_colmajor(union mps_op_params *p)
{
    set_pool3s2(p);
    p->pool.column_major = true;
}
static void set_gemm(union mps_op_params *p)
{
    p->gemm.trans_b = true;
    p->gemm.alpha = 0.5f;
    p->gemm.beta = 2.0f;
}
static void set_axis1(union mps_op_params *p)
{
    p->norm.axis = 1;
    p->axis.axis = 1;
}
static void set_keepdims0(union mps_op_params *p)
{
    p->reduce.keepdims = false;
}
static void set_perm(union mps_op_params *p)
{
    p->transpose.n_perm = 3;
    p->transpose.perm[0] = 2;
    p->transpose.perm[1] = 0;
    p->transpose.perm[2] = 1;
}
static void set_reflect(union mps_op_params *p)
{
    p->pad.mode = MPS_PAD_REFLECT;
}
static void set_cast_f32(union mps_op_params *p)
{
    p->cast.to = MPS_F32;
}
static void set_clip(union mps_op_params *p)
{
    p->act.alpha = 0.0f;
    p->act.beta = 6.0f;
}
static void set_gelu_tanh(union mps_op_params *p)
{
    p->act.beta = 1.0f;
}
static void set_layer_norm(union mps_op_params *p)
{
    p->norm.axis = -1;
    p->norm.epsilon = 1e-5f;
}

static const struct tl_row rows[] = {
    /* convolution: descriptor values */
    {"Conv groups 2, stride 2, asymmetric pads",
     MPS_OP_CONV,
     "x:f32[1,4,9,9] w:w[8,2,3,3] b:w[8]",
     0,
     set_conv_g2,
     MPS_PRECISION_FP32,
     {"constant() f32 [8,2,3,3]",
      "conv2d(t0, t1) f32 [1,8,4,5] stride 2x2 dilation 1x1 groups 2 pad l1 r2 t1 b0 NCHW/OIHW",
      "constant() f32 [1,8,1,1]", "binary(t2, t3) f32 [1,8,4,5] add"},
     NULL},
    {"Conv auto_pad SAME_UPPER puts the odd pad at the end",
     MPS_OP_CONV,
     "x:f32[1,1,5,5] w:w[1,1,4,4]",
     0,
     set_same_upper,
     MPS_PRECISION_FP32,
     {"conv2d(t0, t1) f32 [1,1,5,5] stride 1x1 dilation 1x1 groups 1 pad l1 r2 t1 b2"},
     NULL},
    {"Conv auto_pad SAME_LOWER puts it at the beginning",
     MPS_OP_CONV,
     "x:f32[1,1,5,5] w:w[1,1,4,4]",
     0,
     set_same_lower,
     MPS_PRECISION_FP32,
     {"pad l2 r1 t2 b1"},
     NULL},
    {"Conv 1-D runs as 2-D of height 1",
     MPS_OP_CONV,
     "x:f32[1,2,10] w:w[3,2,3]",
     0,
     set_dilation2,
     MPS_PRECISION_FP32,
     {"reshape(t0) f32 [1,2,1,10]", "constant() f32 [3,2,1,3]",
      "conv2d(t1, t2) f32 [1,3,1,6] stride 1x1 dilation 1x2 groups 1 pad l0 r0 t0 b0", "reshape(t3) f32 [1,3,6]"},
     NULL},
    {"Conv depthwise: groups = channels",
     MPS_OP_CONV,
     "x:f32[1,4,6,6] w:w[4,1,3,3]",
     0,
     set_depthwise,
     MPS_PRECISION_FP32,
     {"conv2d(t0, t1) f32 [1,4,4,4] stride 1x1 dilation 1x1 groups 4"},
     NULL},
    {"Conv with a fused Relu",
     MPS_OP_CONV,
     "x:f32[1,1,4,4] w:w[2,1,3,3]",
     0,
     set_fused_relu,
     MPS_PRECISION_FP32,
     {"conv2d(", "unary(t2) f32 [1,2,2,2] relu", "outputs: t3"},
     NULL},
    {"Conv 3-D is refused",
     MPS_OP_CONV,
     "x:f32[1,1,4,4,4] w:w[1,1,2,2,2]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {NULL},
     "3-D convolution"},
    {"ConvTranspose stride 2, output_padding 1",
     MPS_OP_CONV_TRANSPOSE,
     "x:f32[1,2,3,3] w:w[2,3,3,3]",
     0,
     set_convt_s2,
     MPS_PRECISION_FP32,
     {"conv_transpose2d(t0, t1) f32 [1,3,8,8] stride 2x2 dilation 1x1 groups 1 pad l0 r0 t0 b0 NCHW/OIHW"},
     NULL},
    {"ConvTranspose pads are the forward convolution's",
     MPS_OP_CONV_TRANSPOSE,
     "x:f32[1,2,3,3] w:w[2,3,4,4] b:w[3]",
     0,
     set_convt_pad,
     MPS_PRECISION_FP32,
     {"conv_transpose2d(t0, t1) f32 [1,3,6,6] stride 2x2 dilation 1x1 groups 1 pad l1 r1 t1 b1",
      "constant() f32 [1,3,1,1]", "add"},
     NULL},
    /* pooling */
    {"MaxPool floor mode",
     MPS_OP_MAX_POOL,
     "x:f32[1,1,6,6]",
     0,
     set_pool3s2,
     MPS_PRECISION_FP32,
     {"pool2d(t0) f32 [1,1,2,2] max kernel 3x3 stride 2x2 dilation 1x1 pad l0 r0 t0 b0"},
     NULL},
    {"MaxPool ceil_mode widens the end padding",
     MPS_OP_MAX_POOL,
     "x:f32[1,1,6,6]",
     0,
     set_pool3s2_ceil,
     MPS_PRECISION_FP32,
     {"pool2d(t0) f32 [1,1,3,3] max kernel 3x3 stride 2x2 dilation 1x1 pad l0 r1 t0 b1"},
     NULL},
    {"AveragePool count_include_pad",
     MPS_OP_AVERAGE_POOL,
     "x:f32[1,2,7,7]",
     0,
     set_avg_incl_pad,
     MPS_PRECISION_FP32,
     {"pool2d(t0) f32 [1,2,4,4] avg kernel 3x3 stride 2x2 dilation 1x1 pad l1 r1 t1 b1 include_zero_pad"},
     NULL},
    {"AveragePool count_include_pad with ceil cells is refused",
     MPS_OP_AVERAGE_POOL,
     "x:f32[1,2,6,6]",
     0,
     set_avg_incl_pad_ceil,
     MPS_PRECISION_FP32,
     {NULL},
     "count_include_pad with ceil_mode"},
    {"AveragePool 1-D",
     MPS_OP_AVERAGE_POOL,
     "x:f32[2,3,8]",
     0,
     set_pool1d,
     MPS_PRECISION_FP32,
     {"reshape(t0) f32 [2,3,1,8]", "pool2d(t1) f32 [2,3,1,4] avg kernel 1x2 stride 1x2", "reshape(t2) f32 [2,3,4]"},
     NULL},
    {"MaxPool Indices: int32 flattened, cast to int64",
     MPS_OP_MAX_POOL,
     "x:f32[1,2,6,6]",
     2,
     set_pool3s2,
     MPS_PRECISION_FP32,
     {"t1, t2 = pool2d(t0) f32 [1,2,2,2] max kernel 3x3 stride 2x2 dilation 1x1 pad l0 r0 t0 b0 indices",
      "cast(t2) i64 [1,2,2,2]"},
     NULL},
    {"MaxPool Indices with storage_order 1 is refused",
     MPS_OP_MAX_POOL,
     "x:f32[1,2,6,6]",
     2,
     set_pool_colmajor,
     MPS_PRECISION_FP32,
     {NULL},
     "storage_order 1"},
    {"GlobalAveragePool: mean over the spatial axes",
     MPS_OP_GLOBAL_AVERAGE_POOL,
     "x:f32[1,8,7,7]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"reduce(t0) f32 [1,8,1,1] mean axes 2 3"},
     NULL},
    /* matrix products */
    {"MatMul batch broadcast",
     MPS_OP_MATMUL,
     "a:f32[2,1,3,4] b:f32[5,4,6]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"matmul(t0, t1) f32 [2,5,3,6]"},
     NULL},
    {"MatMul of a vector: [1,k] then dropped",
     MPS_OP_MATMUL,
     "a:f32[3] b:w[3,4]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"reshape(t0) f32 [1,3]", "matmul(t1, t2) f32 [1,4]", "reshape(t3) f32 [4]"},
     NULL},
    {"Gemm transB, alpha, beta",
     MPS_OP_GEMM,
     "a:f32[2,3] b:w[4,3] c:w[4]",
     0,
     set_gemm,
     MPS_PRECISION_FP32,
     {"constant() f32 [4,3]", "transpose2(t1) f32 [3,4] dims 0,1", "matmul(t0, t2) f32 [2,4]",
      "fill() f32 [] value 0.5", "binary(t3, t4) f32 [2,4] mul", "fill() f32 [] value 2", "mul", "add"},
     NULL},
    /* fp16: cast inside the graph */
    {"fp16: inputs and weights cast in, outputs cast back",
     MPS_OP_MATMUL,
     "a:f32[2,3] b:w[3,4]",
     0,
     NULL,
     MPS_PRECISION_FP16,
     {"placeholder() f32 [2,3] input 0", "cast(t0) f16 [2,3]", "constant() f32 [3,4]", "cast(t2) f16 [3,4]",
      "matmul(t1, t3) f16 [2,4]", "cast(t4) f32 [2,4]", "outputs: t5"},
     NULL},
    {"fp16: a Cast to float computes in f16",
     MPS_OP_CAST,
     "a:i64[4]",
     0,
     set_cast_f32,
     MPS_PRECISION_FP16,
     {"placeholder() i64 [4]", "cast(t0) f16 [4]", "cast(t1) f32 [4]"},
     NULL},
    {"tf32 is refused", MPS_OP_RELU, "x:f32[4]", 0, NULL, MPS_PRECISION_TF32, {NULL}, "tf32 does not exist"},
    /* broadcasting */
    {"Add broadcasts numpy-style",
     MPS_OP_ADD,
     "a:f32[2,3,4] b:f32[4]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"binary(t0, t1) f32 [2,3,4] add"},
     NULL},
    {"Mul [3,1] x [1,4]",
     MPS_OP_MUL,
     "a:f32[3,1] b:f32[1,4]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"binary(t0, t1) f32 [3,4] mul"},
     NULL},
    {"Mean of three: two adds, one divide",
     MPS_OP_MEAN,
     "a:f32[4] b:f32[4] c:f32[4]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"add", "add", "fill() f32 [] value 3", "div"},
     NULL},
    {"PRelu: select(x < 0, x * slope, x)",
     MPS_OP_PRELU,
     "x:f32[1,3,2,2] s:w[3,1,1]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"less", "mul", "select(t3, t4, t0)"},
     NULL},
    {"Div of int64 is refused",
     MPS_OP_DIV,
     "a:i64[4] b:i64[4]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {NULL},
     "integer rounding"},
    /* normalization */
    {"BatchNormalization: [C] operands seen as [1,C,1,1]",
     MPS_OP_BATCH_NORM,
     "x:f32[2,3,4,4] s:w[3] b:w[3] m:w[3] v:w[3]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"constant() f32 [1,3,1,1]", "normalize(t0, t3, t4, t1, t2) f32 [2,3,4,4] epsilon 1e-05"},
     NULL},
    {"LayerNormalization: mean, variance, normalize",
     MPS_OP_LAYER_NORM,
     "x:f32[2,5,8] s:w[8] b:w[8]",
     0,
     set_layer_norm,
     MPS_PRECISION_FP32,
     {"reduce(t0) f32 [2,5,1] mean axes 2", "variance(t0, t1) f32 [2,5,1] axes 2", "normalize(t0, t1, t2, t3, t4)"},
     NULL},
    {"Softmax on axis 1",
     MPS_OP_SOFTMAX,
     "x:f32[2,10]",
     0,
     set_axis1,
     MPS_PRECISION_FP32,
     {"softmax(t0) f32 [2,10] axis 1"},
     NULL},
    {"LogSoftmax: x - max - log(sum(exp(x - max)))",
     MPS_OP_LOG_SOFTMAX,
     "x:f32[2,10]",
     0,
     set_axis1,
     MPS_PRECISION_FP32,
     {"reduce(t0) f32 [2,1] max axes 1", "sub", "exp", "reduce(t3) f32 [2,1] sum axes 1", "log", "sub"},
     NULL},
    /* elementwise compositions */
    {"Clip: max then min with scalars",
     MPS_OP_CLIP,
     "x:f32[8]",
     0,
     set_clip,
     MPS_PRECISION_FP32,
     {"fill() f32 [] value 0", "max", "fill() f32 [] value 6", "min"},
     NULL},
    {"Gelu tanh approximation",
     MPS_OP_GELU,
     "x:f32[8]",
     0,
     set_gelu_tanh,
     MPS_PRECISION_FP32,
     {"mul", "tanh", "mul"},
     NULL},
    {"Softplus without overflow",
     MPS_OP_SOFTPLUS,
     "x:f32[8]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"max", "abs", "neg", "exp", "add", "log", "binary(t2, t8) f32 [8] add"},
     NULL},
    /* reductions and layout */
    {"ReduceSum keepdims 0: reduce then reshape",
     MPS_OP_REDUCE_SUM,
     "x:f32[2,3,4] a:i64c=1[1]",
     0,
     set_keepdims0,
     MPS_PRECISION_FP32,
     {"reduce(t0) f32 [2,1,4] sum axes 1", "reshape(t1) f32 [2,4]"},
     NULL},
    {"Transpose: a permutation",
     MPS_OP_TRANSPOSE,
     "x:f32[2,3,4]",
     0,
     set_perm,
     MPS_PRECISION_FP32,
     {"permute(t0) f32 [4,2,3] perm 2,0,1"},
     NULL},
    {"Slice with a negative step: reverse, then slice",
     MPS_OP_SLICE,
     "x:f32[5,6] s:i64c=4,0[2] e:i64c=0,6[2] a:i64c=0,1[2] p:i64c=-2,3[2]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"reverse(t0) f32 [5,6] axes 0", "slice(t1) f32 [2,2] starts 0,0 ends 3,4 strides 2,3"},
     NULL},
    {"Split: one slice per output",
     MPS_OP_SPLIT,
     "x:f32[6,4] s:i64c=2,4[2]",
     2,
     NULL,
     MPS_PRECISION_FP32,
     {"slice(t0) f32 [2,4] starts 0,0 ends 2,4 strides 1,1", "slice(t0) f32 [4,4] starts 2,0 ends 6,4 strides 1,1"},
     NULL},
    {"Concat on axis 1",
     MPS_OP_CONCAT,
     "a:f32[2,3] b:f32[2,5]",
     0,
     set_axis1,
     MPS_PRECISION_FP32,
     {"concat(t0, t1) f32 [2,8] axis 1"},
     NULL},
    {"Pad: grow by the positive pads, crop the negative ones",
     MPS_OP_PAD,
     "x:f32[4,5] p:i64c=1,-1,2,0[4]",
     0,
     set_reflect,
     MPS_PRECISION_FP32,
     {"pad(t0) f32 [7,5] reflect left 1,0 right 2,0", "slice(t1) f32 [7,4] starts 0,1 ends 7,5 strides 1,1"},
     NULL},
    {"Gather: negative constant indices resolved to int32",
     MPS_OP_GATHER,
     "x:f32[5,3] i:i64c=-1,2[2]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"constant() i32 [2] 8 bytes", "gather(t0, t1) f32 [2,3] axis 0"},
     NULL},
    {"Gather with run-time indices is refused",
     MPS_OP_GATHER,
     "x:f32[5,3] i:i64[2]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {NULL},
     "indices computed at run time"},
    {"Expand broadcasts",
     MPS_OP_EXPAND,
     "x:f32[3,1] s:i64c=2,3,4[3]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"broadcast(t0) f32 [2,3,4]"},
     NULL},
    {"Shape becomes an int64 constant",
     MPS_OP_SHAPE,
     "x:f32[2,3,4]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"constant() i64 [3] 24 bytes", "identity"},
     NULL},
    /* graph edges */
    {"Identity of an input: an identity MPSGraph can target",
     MPS_OP_IDENTITY,
     "x:f32[4]",
     0,
     NULL,
     MPS_PRECISION_FP32,
     {"placeholder() f32 [4] input 0", "unary(t0) f32 [4] identity", "outputs: t1"},
     NULL},
    {"float64 is refused", MPS_OP_CAST, "x:f64[4]", 0, set_cast_f32, MPS_PRECISION_FP32, {NULL}, "f64"},
    {"empty tensors are refused", MPS_OP_RELU, "x:f32[0,4]", 0, NULL, MPS_PRECISION_FP32, {NULL}, "empty tensor"},
};

/* Each expected substring on a line after the previous one's. */
static bool tl_expect(const char *dump, const char *const *expect, const char **missing)
{
    const char *at = dump;
    for (int i = 0; i < 8 && expect[i]; i++) {
        const char *hit = strstr(at, expect[i]), *eol = hit ? strchr(hit, '\n') : NULL;
        if (!hit) {
            *missing = expect[i];
            return false;
        }
        at = eol ? eol + 1 : hit + strlen(hit);
    }
    return true;
}

/* SSA: every read tensor was defined by an earlier step; each defined once. */
static bool tl_well_formed(const struct mps_mtl_program *p, char *why, size_t size)
{
    char *defined = calloc((size_t)p->n_tensors + 1, 1);
    bool ok = true;
    for (int i = 0; ok && i < p->n_steps; i++) {
        const struct mps_mtl_step *s = &p->steps[i];
        for (int k = 0; ok && k < s->n_in; k++)
            if (s->in[k] >= 0 && !defined[s->in[k]])
                ok = (snprintf(why, size, "step %d reads t%d before it is defined", i, s->in[k]), false);
        for (int k = 0; ok && k < 2; k++) {
            int t = k ? s->out2 : s->out;
            if (t < 0)
                continue;
            if (t >= p->n_tensors || defined[t])
                ok = (snprintf(why, size, "step %d redefines t%d", i, t), false);
            else
                defined[t] = 1;
        }
        if (ok && s->kind == MPS_MTL_NORMALIZE && (s->in[0] < 0 || s->in[1] < 0 || s->in[2] < 0))
            ok = (snprintf(why, size, "normalize without x, mean or variance"), false);
    }
    for (int i = 0; ok && i < p->n_outputs; i++)
        if (p->outputs[i] < 0 || !defined[p->outputs[i]])
            ok = (snprintf(why, size, "output %d is not defined", i), false);
    free(defined);
    return ok;
}

static void test_rows(void)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const struct tl_row *r = &rows[i];
        struct mps_error err = {{0}};
        th_seed(r->what);
        struct mps_graph *g = tl_graph(r, &err);
        if (!th_check(g != NULL, "%s: the test graph builds (%s)", r->what, err.msg))
            continue;
        struct mps_mtl_program *p = NULL;
        enum mps_status st = mps_mtl_lower(g, r->precision, &p, &err);
        if (r->refuse) {
            char why[256] = "";
            bool supported = mps_mtl_node_supported(g, &g->nodes[0], why, sizeof why);
            th_check(st != MPS_OK && strstr(err.msg, r->refuse) && (r->precision == MPS_PRECISION_TF32 || !supported),
                     "%s: %s", r->what, st ? err.msg : "lowered");
        } else if (th_check(st == MPS_OK, "%s: lowers (%s)", r->what, err.msg)) {
            char *dump = NULL, why[128];
            size_t len = 0;
            FILE *f = open_memstream(&dump, &len);
            mps_mtl_program_dump(p, g, f);
            fclose(f);
            const char *missing = NULL;
            if (!th_check(tl_expect(dump, r->expect, &missing), "%s", r->what))
                printf("     expected \"%s\" in:\n%s", missing, dump);
            th_check(tl_well_formed(p, why, sizeof why), "%s: the program is well formed %s", r->what,
                     tl_well_formed(p, why, sizeof why) ? "" : why);
            free(dump);
        }
        mps_mtl_program_free(p);
        mps_graph_free(g);
    }
}

/* Every op of ops.def has a lowering but the ones listed here, each reported
   skipped by name (the backend refuses their nodes, saying so), and none is
   left a stub: each unary activation lowers to at least one step on its own.
   A listed op that gains a lowering fails the test until it leaves the list. */
static void test_coverage(void)
{
    /* Mod: MPSGraph's modulo does not document its sign rule, and a - trunc(a / b) * b is not exact;
       If (decided at run time): the cpu backend's alone, which runs the taken branch only;
       the losses: their targets are read at run time, where MPSGraph cannot refuse a bad one;
       BitShift: unsigned integers, which the GPU backends leave to the cpu (backend.h);
       EyeLike, RandomLike: folded at load, as Shape is; GridSample, Einsum, Det, ReverseSequence, MaxUnpool, RoiAlign,
       TfIdfVectorizer: not lowered yet; Compress, NonZero, NonMaxSuppression, Unique: sizes a run decides
       (graph.h, bounded), which only the cpu runs; StringNormalizer: strings, which no GPU holds */
    static const enum mps_op not_yet[] = {
        MPS_OP_MOD, MPS_OP_IF, MPS_OP_NLL_LOSS, MPS_OP_SCE_LOSS, MPS_OP_BIT_SHIFT, MPS_OP_EYE_LIKE, MPS_OP_GRID_SAMPLE,
        MPS_OP_EINSUM, MPS_OP_DET, MPS_OP_REVERSE_SEQUENCE, MPS_OP_MAX_UNPOOL, MPS_OP_ROI_ALIGN, MPS_OP_COMPRESS,
        MPS_OP_NON_ZERO, MPS_OP_RANDOM_LIKE, MPS_OP_TFIDF, MPS_OP_NON_MAX_SUPPRESSION, MPS_OP_UNIQUE,
        MPS_OP_STRING_NORMALIZER,
        /* the quantization pass leaves mps the f32 composition */
        MPS_OP_QLINEAR_CONV, MPS_OP_QLINEAR_MATMUL, MPS_OP_DEQUANTIZE, MPS_OP_QUANTIZE, MPS_OP_QLINEAR_ADD,
        MPS_OP_QLINEAR_CONCAT, MPS_OP_QLINEAR_UNARY, MPS_OP_QLINEAR_MUL, MPS_OP_QLINEAR_GAP};
    int missing = 0;
    for (int op = 0; op < MPS_OP_COUNT; op++) {
        bool listed = false;
        for (size_t i = 0; i < sizeof not_yet / sizeof not_yet[0]; i++)
            listed = listed || not_yet[i] == (enum mps_op)op;
        if (listed && !mps_mtl_op_lowered((enum mps_op)op)) {
            th_skip("%s: no MPSGraph lowering yet (the mps backend refuses its nodes, saying so)",
                    mps_op_name((enum mps_op)op));
        } else if (listed || !mps_mtl_op_lowered((enum mps_op)op)) {
            printf("     %s for %s\n", listed ? "a lowering (take it off the list)" : "no lowering",
                   mps_op_name((enum mps_op)op));
            missing++;
        }
    }
    th_check(missing == 0, "every op of ops.def has an MPSGraph lowering but the listed ones (%d wrong)", missing);
    static const enum mps_op acts[] = {
        MPS_OP_RELU,         MPS_OP_LEAKY_RELU, MPS_OP_ELU,        MPS_OP_SELU,     MPS_OP_SIGMOID,
        MPS_OP_HARD_SIGMOID, MPS_OP_HARD_SWISH, MPS_OP_TANH,       MPS_OP_SOFTPLUS, MPS_OP_SOFTSIGN,
        MPS_OP_GELU,         MPS_OP_ERF,        MPS_OP_EXP,        MPS_OP_LOG,      MPS_OP_SQRT,
        MPS_OP_ABS,          MPS_OP_NEG,        MPS_OP_RECIPROCAL, MPS_OP_FLOOR,    MPS_OP_CEIL,
        MPS_OP_SIGN,         MPS_OP_ROUND,      MPS_OP_THRESHOLDED_RELU, MPS_OP_SHRINK,
    };
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
        struct tl_row r = {mps_op_name(acts[i]), acts[i], "x:f32[2,3]", 0, NULL, MPS_PRECISION_FP16, {NULL}, NULL};
        struct mps_error err = {{0}};
        struct mps_graph *g = tl_graph(&r, &err);
        struct mps_mtl_program *p = NULL;
        char why[128] = "";
        bool ok = g && mps_mtl_lower(g, MPS_PRECISION_FP16, &p, &err) == MPS_OK && tl_well_formed(p, why, sizeof why);
        /* placeholder, cast in, the activation (one step or more), cast out */
        th_check(ok && p->n_steps >= 4 && p->steps[2].kind != MPS_MTL_CAST, "%s lowers in fp16 (%d steps) %s%s", r.what,
                 p ? p->n_steps : 0, err.msg, why);
        mps_mtl_program_free(p);
        mps_graph_free(g);
    }
}

int main(void)
{
    test_rows();
    test_coverage();
    return th_summary();
}
