/* test_passes.c: the graph passes change the graph as they claim and the
   results by float rounding at most. Each row builds a small graph twice,
   runs it with and without the passes on the CPU, and counts what is left. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model.h"

#define SH(...) (&(struct mps_shape){(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})

static int th_node(struct mps_graph *g, enum mps_op op, const char *out, const int *in, int n_in,
                   const union mps_op_params *p)
{
    struct mps_error err = {{0}};
    int y = mps_graph_add_value(g, out, MPS_F32, NULL);
    return mps_graph_add_node(g, op, out, in, n_in, &y, 1, p, &err) == MPS_OK ? y : -1;
}

/* BN with scale, bias, mean and variance drawn at random; the variances
   log-uniform in [1e-3, 2], as trained networks have them, so that the
   epsilon (1e-5) counts: dropping it moves an output by up to 0.5%. */
static int th_bn(struct mps_graph *g, const char *name, int x, int64_t c)
{
    char n[64];
    int in[5] = {x};
    static const double lo[3] = {0.5, -0.3, -0.3}, hi[3] = {1.5, 0.3, 0.3};
    for (int i = 0; i < 3; i++) {
        snprintf(n, sizeof n, "%s.p%d", name, i);
        in[1 + i] = th_add_random_const(g, n, SH(c), lo[i], hi[i]);
    }
    float var[16];
    assert(c <= 16);
    for (int64_t i = 0; i < c; i++)
        var[i] = (float)exp(th_uniform(log(1e-3), log(2.0)));
    snprintf(n, sizeof n, "%s.var", name);
    in[4] = mps_graph_add_const(g, n, MPS_F32, SH(c), var);
    return th_node(g, MPS_OP_BATCH_NORM, name, in, 5, NULL);
}

/* x[2,3,8,8] -> Conv 4 -> BN -> Relu -> Identity -> Conv 4 (same weights as a second user) -> Clip */
static struct mps_graph *th_conv_graph(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(2, 3, 8, 8));
    mps_graph_add_input(g, x, &err);
    union mps_op_params conv, clip;
    mps_op_params_default(MPS_OP_CONV, &conv);
    conv.conv.win.pad[0] = conv.conv.win.pad[1] = conv.conv.win.pad[2] = conv.conv.win.pad[3] = 1;
    mps_op_params_default(MPS_OP_CLIP, &clip);
    int w = th_add_random_const(g, "w", SH(4, 3, 3, 3), -0.5, 0.5), b = th_add_random_const(g, "b", SH(4), -0.1, 0.1);
    int w2 = th_add_random_const(g, "w2", SH(4, 4, 3, 3), -0.5, 0.5);
    struct mps_shape scalar = {0, {0}};
    int lo = mps_graph_add_const(g, "lo", MPS_F32, &scalar, &(float){0.0f});
    int hi = mps_graph_add_const(g, "hi", MPS_F32, &scalar, &(float){0.4f});
    int h = th_node(g, MPS_OP_CONV, "conv1", (int[]){x, w, b}, 3, &conv);
    h = th_bn(g, "bn1", h, 4);
    h = th_node(g, MPS_OP_RELU, "relu1", &h, 1, NULL);
    h = th_node(g, MPS_OP_IDENTITY, "id", &h, 1, NULL);
    int side = th_node(g, MPS_OP_CONV, "conv_side", (int[]){h, w2}, 2, &conv); /* shares w2 with conv2 */
    h = th_node(g, MPS_OP_CONV, "conv2", (int[]){h, w2}, 2, &conv);
    h = th_bn(g, "bn2", h, 4);
    h = th_node(g, MPS_OP_CLIP, "clip", (int[]){h, lo, hi}, 3, &clip);
    mps_graph_add_output(g, h, &err);
    mps_graph_add_output(g, side, &err);
    return g;
}

/* x[5,6] -> Gemm (B [6,7], C [7]) -> BN -> Sigmoid ; Gemm transB (B [7,6], no C) -> BN */
static struct mps_graph *th_gemm_graph(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(5, 6));
    mps_graph_add_input(g, x, &err);
    union mps_op_params gemm;
    mps_op_params_default(MPS_OP_GEMM, &gemm);
    gemm.gemm.alpha = 0.7f;
    gemm.gemm.beta = 1.3f;
    int b1 = th_add_random_const(g, "b1", SH(6, 7), -0.5, 0.5), c1 = th_add_random_const(g, "c1", SH(7), -0.2, 0.2);
    int h = th_node(g, MPS_OP_GEMM, "fc1", (int[]){x, b1, c1}, 3, &gemm);
    h = th_bn(g, "bn1", h, 7);
    h = th_node(g, MPS_OP_SIGMOID, "sig", &h, 1, NULL);
    gemm.gemm.trans_b = true;
    int b2 = th_add_random_const(g, "b2", SH(7, 6), -0.5, 0.5);
    int k = th_node(g, MPS_OP_GEMM, "fc2", (int[]){x, b2}, 2, &gemm);
    k = th_bn(g, "bn2", k, 7);
    mps_graph_add_output(g, h, &err);
    mps_graph_add_output(g, k, &err);
    return g;
}

/* x[2,4,6,6] -> Conv Relu -> Conv -> Add x -> Relu (a residual block: fuses) -> h;
   Add h x (also an output) -> Relu; Sum h x x -> Relu: neither fuses */
static struct mps_graph *th_residual_graph(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(2, 4, 6, 6));
    mps_graph_add_input(g, x, &err);
    union mps_op_params conv;
    mps_op_params_default(MPS_OP_CONV, &conv);
    conv.conv.win.pad[0] = conv.conv.win.pad[1] = conv.conv.win.pad[2] = conv.conv.win.pad[3] = 1;
    int w1 = th_add_random_const(g, "w1", SH(4, 4, 3, 3), -0.3, 0.3);
    int w2 = th_add_random_const(g, "w2", SH(4, 4, 3, 3), -0.3, 0.3);
    int h = th_node(g, MPS_OP_CONV, "conv1", (int[]){x, w1}, 2, &conv);
    h = th_node(g, MPS_OP_RELU, "relu1", &h, 1, NULL);
    h = th_node(g, MPS_OP_CONV, "conv2", (int[]){h, w2}, 2, &conv);
    h = th_node(g, MPS_OP_ADD, "add1", (int[]){h, x}, 2, NULL);
    h = th_node(g, MPS_OP_RELU, "relu2", &h, 1, NULL);
    int shared = th_node(g, MPS_OP_ADD, "add2", (int[]){h, x}, 2, NULL);
    int r = th_node(g, MPS_OP_RELU, "relu3", &shared, 1, NULL);
    int sum = th_node(g, MPS_OP_SUM, "sum", (int[]){h, x, x}, 3, NULL);
    sum = th_node(g, MPS_OP_RELU, "relu4", &sum, 1, NULL);
    mps_graph_add_output(g, r, &err);
    mps_graph_add_output(g, shared, &err);
    mps_graph_add_output(g, sum, &err);
    return g;
}

/* x[2,8,5,5] -> Conv -> h; h * HardSigmoid(h) with HardSwish's constants
   (becomes HardSwish, then fuses into the Conv) -> a; a * HardSigmoid(a)
   with alpha 0.2 (stays) -> b; x * HardSigmoid(x), that HardSigmoid also an
   output (stays) -> c */
static struct mps_graph *th_hswish_graph(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(2, 8, 5, 5));
    mps_graph_add_input(g, x, &err);
    union mps_op_params conv, hs, other;
    mps_op_params_default(MPS_OP_CONV, &conv);
    conv.conv.win.pad[0] = conv.conv.win.pad[1] = conv.conv.win.pad[2] = conv.conv.win.pad[3] = 1;
    mps_op_params_default(MPS_OP_HARD_SIGMOID, &hs);
    hs.act.alpha = 1.0f / 6.0f, hs.act.beta = 0.5f;
    other = hs;
    other.act.alpha = 0.2f;
    int w = th_add_random_const(g, "w", SH(8, 8, 3, 3), -0.5, 0.5);
    int h = th_node(g, MPS_OP_CONV, "conv", (int[]){x, w}, 2, &conv);
    int s = th_node(g, MPS_OP_HARD_SIGMOID, "hs1", &h, 1, &hs);
    int a = th_node(g, MPS_OP_MUL, "mul1", (int[]){h, s}, 2, NULL);
    int t = th_node(g, MPS_OP_HARD_SIGMOID, "hs2", &a, 1, &other);
    int b = th_node(g, MPS_OP_MUL, "mul2", (int[]){t, a}, 2, NULL);
    int u = th_node(g, MPS_OP_HARD_SIGMOID, "hs3", &x, 1, &hs);
    int c = th_node(g, MPS_OP_MUL, "mul3", (int[]){x, u}, 2, NULL);
    mps_graph_add_output(g, b, &err);
    mps_graph_add_output(g, c, &err);
    mps_graph_add_output(g, u, &err);
    return g;
}

static int th_count(const struct mps_graph *g, enum mps_op op)
{
    int n = 0;
    for (int k = 0; k < g->n_nodes; k++)
        n += g->nodes[k].op == op;
    return n;
}

/* labels: what is left, "Conv+Relu Gemm ..." (mps_node_label of each node). */
static void th_case(const char *name, struct mps_graph *(*build)(void), int bn_left, int acts_left, int id_left,
                    const char *labels)
{
    struct mps_error err = {{0}};
    th_seed(name);
    struct mps_graph *plain = build();
    th_seed(name);
    struct mps_graph *opt = build();
    if (mps_graph_sort(plain, &err) || mps_passes_fold(plain, &err) || mps_graph_sort(opt, &err) ||
        mps_passes_fold(opt, &err) || mps_passes_optimize(opt, &err) || mps_passes_fuse(opt, &mps_backend_cpu, &err)) {
        th_fail("%s: passes: %s", name, err.msg);
        goto out;
    }
    th_check(th_count(opt, MPS_OP_BATCH_NORM) == bn_left, "%s: %d BatchNormalization left (expected %d)", name,
             th_count(opt, MPS_OP_BATCH_NORM), bn_left);
    int acts = th_count(opt, MPS_OP_RELU) + th_count(opt, MPS_OP_CLIP) + th_count(opt, MPS_OP_SIGMOID);
    th_check(acts == acts_left, "%s: %d activation nodes left after fusion (expected %d)", name, acts, acts_left);
    th_check(th_count(opt, MPS_OP_IDENTITY) == id_left, "%s: %d Identity left", name, th_count(opt, MPS_OP_IDENTITY));
    char left[512] = "", label[64];
    for (int k = 0; k < opt->n_nodes; k++)
        snprintf(left + strlen(left), sizeof left - strlen(left), "%s%s", k ? " " : "",
                 mps_node_label(&opt->nodes[k], label, sizeof label));
    th_check(strcmp(left, labels) == 0, "%s: left \"%s\" (expected \"%s\")", name, left, labels);
    const struct mps_value *xv = &plain->values[plain->inputs[0]];
    int64_t n = mps_shape_numel(&xv->shape);
    float *x = th_alloc(MPS_F32, n);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)th_uniform(-1, 1);
    struct mps_tensor in = mps_tensor_make(MPS_F32, &xv->shape, x), a[4], b[4];
    if (th_run(&mps_backend_cpu, plain, &in, a, &err) || th_run(&mps_backend_cpu, opt, &in, b, &err)) {
        th_fail("%s: run: %s", name, err.msg);
    } else {
        for (int o = 0; o < plain->n_outputs; o++) {
            int64_t m = mps_shape_numel(&a[o].shape);
            double *da = calloc((size_t)m, sizeof *da), *db = calloc((size_t)m, sizeof *db);
            th_to_double(MPS_F32, a[o].data, m, da);
            th_to_double(MPS_F32, b[o].data, m, db);
            double e = th_nmse(db, da, m);
            /* 1e-9: folding multiplies weights by gamma / sqrt(var + eps), up to ~45 with
               variances at 1e-3, and the rounding with them (measured up to 6.3e-12); BN
               folded without eps scores 4e-8 to 2e-4 */
            th_check(e <= 1e-9, "%s output %d: with and without the passes nmse %.2e (bound 1e-09)", name, o, e);
            free(da);
            free(db);
        }
    }
    th_free_tensors(a, plain->n_outputs);
    th_free_tensors(b, plain->n_outputs);
    free(x);
out:
    mps_graph_free(plain);
    mps_graph_free(opt);
}

int main(void)
{
    /* relu1 fuses into conv1 (whose only reader it is) though two convs read relu1; clip fuses
       into conv2 once bn2 is folded; the Identity goes */
    th_case("Conv BN Relu Identity Conv BN Clip", th_conv_graph, 0, 0, 0, "Conv+Relu Conv Conv+Clip");
    th_case("Gemm BN Sigmoid, Gemm transB BN", th_gemm_graph, 0, 0, 0, "Gemm+Sigmoid Gemm");
    /* the residual Add -> Relu fuses; an Add read twice and a three-input Sum keep their Relu */
    th_case("Conv Relu Conv Add Relu, Add Relu, Sum Relu", th_residual_graph, 0, 2, 0,
            "Conv+Relu Conv Add+Relu Add Relu Sum Relu");
    /* x * HardSigmoid(x) becomes HardSwish (in the Conv); other constants, or a HardSigmoid read twice, stay */
    th_case("Conv, x HardSigmoid(x) three ways", th_hswish_graph, 0, 0, 0,
            "Conv+HardSwish HardSigmoid Mul HardSigmoid Mul");
    return th_summary();
}
