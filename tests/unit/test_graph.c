/* test_graph.c: the tensor core's own functions: f16 conversion, shapes and
   broadcasting, the graph IR (topological order, cycles and undefined
   inputs rejected, the nodes a run-time If's branches alone need), shape
   inference errors that name the node, backend selection, and input checks
   of a compiled plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static void test_f16(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = mps_f16_to_f32((uint16_t)h);
        if (f == f && mps_f32_to_f16(f) != h)
            bad++;
    }
    th_check(bad == 0, "f16 -> f32 -> f16 round-trips every non-NaN pattern (%d differ)", bad);
    static const struct {
        float f;
        uint16_t h;
    } rows[] = {
        {0.1f, 0x2e66}, {65504.0f, 0x7bff}, {65520.0f, 0x7c00}, {-2.0f, 0xc000},
        {5.9604645e-8f, 0x0001}, {1e-8f, 0x0000}, {1.0009766f, 0x3c01}, {1.00048828125f, 0x3c00} /* tie: even */,
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        th_check(mps_f32_to_f16(rows[i].f) == rows[i].h, "f32 %g -> f16 0x%04x (got 0x%04x)", (double)rows[i].f,
                 rows[i].h, mps_f32_to_f16(rows[i].f));
    th_check(isnan(mps_f16_to_f32(mps_f32_to_f16(NAN))), "NaN stays NaN through f16");
    /* bf16: the top half of an f32, rounded to nearest even */
    static const struct {
        float f;
        uint16_t h;
    } brows[] = {
        {1.0f, 0x3f80},        {1.00390625f, 0x3f80} /* tie: even */, {1.01171875f, 0x3f82} /* tie: even */,
        {1.0078125f, 0x3f81},  {-3.0f, 0xc040},                       {3.4028235e38f, 0x7f80} /* rounds to inf */,
        {1.00390637f, 0x3f81}, {INFINITY, 0x7f80},
    };
    for (size_t i = 0; i < sizeof brows / sizeof brows[0]; i++)
        th_check(mps_f32_to_bf16(brows[i].f) == brows[i].h, "f32 %.9g -> bf16 0x%04x (got 0x%04x)",
                 (double)brows[i].f, brows[i].h, mps_f32_to_bf16(brows[i].f));
    th_check(isnan(mps_bf16_to_f32(mps_f32_to_bf16(NAN))) && mps_bf16_to_f32(0x3f81) == 1.0078125f,
             "NaN stays NaN through bf16; 0x3f81 is 1.0078125");
}

static void test_shapes(void)
{
    struct mps_shape big = {2, {(int64_t)1 << 30, (int64_t)1 << 30}}, neg = {2, {3, -1}}, ok = {3, {2, 3, 4}};
    th_check(mps_shape_numel(&big) == -1, "numel rejects more than 2^40 elements");
    th_check(mps_shape_numel(&neg) == -1, "numel rejects a negative dim");
    th_check(mps_shape_numel(&ok) == 24, "numel of [2,3,4] is 24");
    struct mps_shape empty_huge = {3, {0, (int64_t)1 << 30, (int64_t)1 << 30}}, empty = {2, {0, 5}};
    th_check(mps_shape_numel(&empty_huge) == -1, "an empty shape with huge other dims is refused (found by fuzz_npy)");
    th_check(mps_shape_numel(&empty) == 0, "numel of [0,5] is 0");
    struct mps_shape a = {2, {2, 3}}, b = {1, {4}}, c = {3, {5, 1, 3}}, out;
    struct mps_error err = {{0}};
    th_check(mps_shape_broadcast(&a, &b, &out, &err) == MPS_ERR_MODEL && strstr(err.msg, "[2,3]"),
             "[2,3] and [4] do not broadcast: %s", err.msg);
    th_check(mps_shape_broadcast(&a, &c, &out, &err) == MPS_OK && out.ndim == 3 && out.dim[0] == 5 &&
                 out.dim[1] == 2 && out.dim[2] == 3,
             "[2,3] and [5,1,3] broadcast to [5,2,3]");
    th_check(mps_axis(-1, 3) == 2 && mps_axis(3, 3) == -1 && mps_axis(-4, 3) == -1, "axis normalization");
}

/* x -> Relu a -> Relu b, with the nodes added in reverse order. */
static void test_sort(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {1, {4}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &s), a = mps_graph_add_value(g, "a", MPS_F32, NULL),
        b = mps_graph_add_value(g, "b", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_RELU, "second", &a, 1, &b, 1, NULL, &err);
    mps_graph_add_node(g, MPS_OP_RELU, "first", &x, 1, &a, 1, NULL, &err);
    mps_graph_add_output(g, b, &err);
    enum mps_status st = mps_graph_sort(g, &err);
    th_check(st == MPS_OK && strcmp(g->nodes[0].name, "first") == 0 && g->values[b].producer == 1,
             "topological sort puts the producer first");
    th_check(mps_graph_infer(g, &err) == MPS_OK && g->values[b].shape_known && g->values[b].shape.dim[0] == 4,
             "shapes flow through the sorted graph");
    /* in order already: x -> p, x -> q, p -> r; kept as listed (a queue of ready nodes would give p q r) */
    struct mps_graph *h = mps_graph_new();
    int hx = mps_graph_add_value(h, "x", MPS_F32, &s), hp = mps_graph_add_value(h, "p", MPS_F32, NULL),
        hq = mps_graph_add_value(h, "q", MPS_F32, NULL), hr = mps_graph_add_value(h, "r", MPS_F32, NULL);
    mps_graph_add_input(h, hx, &err);
    mps_graph_add_node(h, MPS_OP_RELU, "p", &hx, 1, &hp, 1, NULL, &err);
    mps_graph_add_node(h, MPS_OP_RELU, "r", &hp, 1, &hr, 1, NULL, &err);
    mps_graph_add_node(h, MPS_OP_RELU, "q", &hx, 1, &hq, 1, NULL, &err);
    mps_graph_add_output(h, hr, &err);
    mps_graph_add_output(h, hq, &err);
    th_check(mps_graph_sort(h, &err) == MPS_OK && !strcmp(h->nodes[0].name, "p") && !strcmp(h->nodes[1].name, "r") &&
                 !strcmp(h->nodes[2].name, "q"),
             "a graph already in order keeps its order");
    mps_graph_free(h);
    th_check(mps_graph_add_node(g, MPS_OP_RELU, "again", &x, 1, &b, 1, NULL, &err) == MPS_ERR_MODEL &&
                 strstr(err.msg, "already defined"),
             "a value written by two nodes is rejected: %s", err.msg);
    th_check(mps_graph_add_node(g, MPS_OP_ADD, "arity", &x, 1, &b, 1, NULL, &err) == MPS_ERR_MODEL &&
                 strstr(err.msg, "(Add)"),
             "wrong input count is rejected: %s", err.msg);
    mps_graph_free(g);
}

static void test_cycle(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {1, {4}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &s), b = mps_graph_add_value(g, "b", MPS_F32, NULL),
        c = mps_graph_add_value(g, "c", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_ADD, "add", (int[]){x, c}, 2, &b, 1, NULL, &err);
    mps_graph_add_node(g, MPS_OP_RELU, "relu", &b, 1, &c, 1, NULL, &err);
    mps_graph_add_output(g, c, &err);
    th_check(mps_graph_sort(g, &err) == MPS_ERR_MODEL && strstr(err.msg, "cycle") && strstr(err.msg, "add"),
             "a cycle is rejected and named: %s", err.msg);
    mps_graph_free(g);

    /* a node that reads the cycle, listed first: the message names a node on the cycle, not it */
    g = mps_graph_new();
    x = mps_graph_add_value(g, "x", MPS_F32, &s);
    b = mps_graph_add_value(g, "b", MPS_F32, NULL);
    c = mps_graph_add_value(g, "c", MPS_F32, NULL);
    int t = mps_graph_add_value(g, "t", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_NEG, "tail", &c, 1, &t, 1, NULL, &err);
    mps_graph_add_node(g, MPS_OP_ADD, "add", (int[]){x, c}, 2, &b, 1, NULL, &err);
    mps_graph_add_node(g, MPS_OP_RELU, "relu", &b, 1, &c, 1, NULL, &err);
    mps_graph_add_output(g, t, &err);
    th_check(mps_graph_sort(g, &err) == MPS_ERR_MODEL && strstr(err.msg, "cycle") && !strstr(err.msg, "tail"),
             "the cycle is named by a node on it: %s", err.msg);
    mps_graph_free(g);

    g = mps_graph_new();
    x = mps_graph_add_value(g, "x", MPS_F32, &s);
    int ghost = mps_graph_add_value(g, "ghost", MPS_F32, &s), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_ADD, "add", (int[]){x, ghost}, 2, &y, 1, NULL, &err);
    mps_graph_add_output(g, y, &err);
    th_check(mps_graph_sort(g, &err) == MPS_ERR_MODEL && strstr(err.msg, "'ghost'"),
             "an input nothing defines is rejected: %s", err.msg);
    mps_graph_free(g);
}

/* Shape inference errors: each names the node and op, and says why. */
struct th_bad {
    const char *name;
    enum mps_op op;
    int n_in;
    struct mps_shape in[3];
    enum mps_dtype dt0;
    const int64_t *ints; /* constant i64 second input when set */
    int n_ints;
    const char *expect;
};

static const int64_t th_shape_7[] = {7}, th_shape_bad2[] = {-1, -1}, th_axes_1[] = {1};

static const struct th_bad th_bad_rows[] = {
    {"mm", MPS_OP_MATMUL, 2, {{2, {3, 4}}, {2, {5, 6}}}, MPS_F32, NULL, 0, "inner dims"},
    {"mm_mixed", MPS_OP_MATMUL, 2, {{2, {3, 4}}, {2, {4, 6}}}, MPS_F16, NULL, 0, "dtypes f16 and f32"},
    {"mm_int", MPS_OP_MATMUL, 2, {{2, {3, 4}}, {2, {4, 6}}}, MPS_I64, NULL, 0, "dtype i64"},
    {"add", MPS_OP_ADD, 2, {{2, {2, 3}}, {1, {4}}}, MPS_F32, NULL, 0, "broadcast"},
    {"reshape", MPS_OP_RESHAPE, 1, {{2, {2, 3}}}, MPS_F32, th_shape_7, 1, "elements"},
    {"reshape2", MPS_OP_RESHAPE, 1, {{2, {2, 3}}}, MPS_F32, th_shape_bad2, 2, "more than one -1"},
    {"reshape3", MPS_OP_RESHAPE, 2, {{2, {2, 3}}, {1, {2}}}, MPS_F32, NULL, 0, "constant"},
    {"conv", MPS_OP_CONV, 2, {{4, {1, 3, 8, 8}}, {4, {4, 2, 3, 3}}}, MPS_F32, NULL, 0, "weight"},
    {"conv_big", MPS_OP_CONV, 2, {{4, {1, 3, 2, 2}}, {4, {4, 3, 3, 3}}}, MPS_F32, NULL, 0, "empty"},
    {"conv4d", MPS_OP_CONV, 2, {{6, {1, 3, 2, 2, 2, 2}}, {6, {4, 3, 1, 1, 1, 1}}}, MPS_F32, NULL, 0, "rank 3 to 5"},
    {"sigmoid", MPS_OP_SIGMOID, 1, {{1, {4}}}, MPS_I64, NULL, 0, "dtype i64"},
    {"concat", MPS_OP_CONCAT, 2, {{2, {2, 3}}, {1, {3}}}, MPS_F32, NULL, 0, "rank"},
    {"squeeze", MPS_OP_SQUEEZE, 1, {{2, {2, 3}}}, MPS_F32, th_axes_1, 1, "cannot squeeze"},
    {"gemm", MPS_OP_GEMM, 2, {{2, {2, 3}}, {2, {4, 5}}}, MPS_F32, NULL, 0, "inner dims"},
    {"pool", MPS_OP_MAX_POOL, 1, {{4, {1, 1, 4, 4}}}, MPS_F32, NULL, 0, "positive"},
};

/* Node op over in[n_in] (params p, NULL: the defaults) writing y, made g's
   output; g sorted and its shapes inferred: the first failure. */
static enum mps_status th_infer_one(struct mps_graph *g, enum mps_op op, const char *name, const int *in, int n_in,
                                    int y, const union mps_op_params *p, struct mps_error *err)
{
    enum mps_status st = mps_graph_add_node(g, op, name, in, n_in, &y, 1, p, err);
    if (!st)
        st = mps_graph_add_output(g, y, err);
    if (!st)
        st = mps_graph_sort(g, err);
    return st ? st : mps_graph_infer(g, err);
}

static void test_infer_errors(void)
{
    for (size_t r = 0; r < sizeof th_bad_rows / sizeof th_bad_rows[0]; r++) {
        const struct th_bad *row = &th_bad_rows[r];
        struct mps_graph *g = mps_graph_new();
        struct mps_error err = {{0}};
        int in[3], y = -1;
        for (int i = 0; i < row->n_in; i++) {
            char name[16];
            snprintf(name, sizeof name, "x%d", i);
            in[i] = mps_graph_add_value(g, name, i == 0 ? row->dt0 : MPS_F32, &row->in[i]);
            mps_graph_add_input(g, in[i], &err);
        }
        int n_in = row->n_in;
        if (row->ints) {
            struct mps_shape s = {1, {row->n_ints}};
            in[n_in++] = mps_graph_add_const(g, "c", MPS_I64, &s, row->ints);
        }
        y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        enum mps_status st = th_infer_one(g, row->op, row->name, in, n_in, y, NULL, &err);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "node '%s' (%s): ", row->name, mps_op_name(row->op));
        th_check(st == MPS_ERR_MODEL && strncmp(err.msg, prefix, strlen(prefix)) == 0 && strstr(err.msg, row->expect),
                 "%s is rejected with its name and '%s': %s", row->name, row->expect, err.msg);
        mps_graph_free(g);
    }
}

static void test_backends(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {2, {2, 3}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &s), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_RELU, "relu", &x, 1, &y, 1, NULL, &err);
    mps_graph_add_output(g, y, &err);
    mps_graph_sort(g, &err);
    mps_graph_infer(g, &err);
    const struct mps_backend *be = NULL;
    char why[256];
    enum mps_status st = mps_backend_choose(g, "auto", &be, why, sizeof why, &err);
    th_check(st == MPS_OK && be && why[0], "auto chooses %s and says why: %s", be ? be->name : "nothing", why);
    th_check(mps_backend_choose(g, "tpu", &be, why, sizeof why, &err) == MPS_ERR_USAGE && strstr(err.msg, "tpu"),
             "an unknown backend is a usage error: %s", err.msg);
    th_check(mps_backend_choose(g, "cpu", &be, why, sizeof why, &err) == MPS_OK && be == &mps_backend_cpu,
             "cpu can be chosen by name");
    struct mps_plan *plan;
    th_check(mps_plan_compile(&mps_backend_cpu, g, &(struct mps_compile_opts){.precision = MPS_PRECISION_FP16},
                              &plan, &err) == MPS_ERR_USAGE,
             "cpu refuses fp16: %s", err.msg);
    /* each available backend compiles in exactly the precisions it declares (bench checks them before running) */
    const struct mps_backend *bes[8];
    int nb = th_backends(bes, 8);
    for (int b = 0; b < nb; b++)
        for (int p = MPS_PRECISION_FP32; p <= MPS_PRECISION_FP16; p++) {
            bool declared = bes[b]->precisions & MPS_PRECISION_BIT(p);
            st = mps_plan_compile(bes[b], g, &(struct mps_compile_opts){.precision = (enum mps_precision)p}, &plan,
                                  &err);
            th_check(declared ? st == MPS_OK : st == MPS_ERR_USAGE, "%s %s %s as it declares", bes[b]->name,
                     declared ? "compiles in" : "refuses", (const char *[]){"fp32", "tf32", "fp16"}[p]);
            if (st == MPS_OK)
                mps_plan_free(plan);
        }
    if (mps_plan_compile(&mps_backend_cpu, g, &(struct mps_compile_opts){0}, &plan, &err) == MPS_OK) {
        float in[6] = {-1, 2, -3, 4, -5, 6}, out[6];
        struct mps_shape wrong = {2, {3, 2}};
        struct mps_tensor ti = mps_tensor_make(MPS_F32, &wrong, in), to = mps_tensor_make(MPS_F32, &s, out);
        th_check(mps_plan_run(plan, &ti, &to, &err) == MPS_ERR_INPUT && strstr(err.msg, "[2,3]"),
                 "an input of the wrong shape is refused: %s", err.msg);
        ti = mps_tensor_make(MPS_F32, &s, in);
        th_check(mps_plan_run(plan, &ti, &to, &err) == MPS_OK && out[0] == 0 && out[1] == 2 && out[5] == 6,
                 "the plan runs");
        mps_plan_free(plan);
    } else {
        th_fail("cpu compiles a Relu: %s", err.msg);
    }
    mps_graph_free(g);
}

/* A bad Einsum equation is refused at load, naming the node and what is wrong. */
static void test_einsum_errors(void)
{
    static const struct {
        const char *eq, *expect;
    } rows[] = {
        {"ij,jk->ik", "'j' is 3 in one place and 5 in another"},
        {"ij,kl->iq", "'q' is in no input"},
        {"ij,k.l->ik", "ellipsis"},
        {"ijk,kl->il", "2 dims for the term's 3 letters"},
        {"ij,kl->ii", "twice"},
        {"ij", "1 terms for 2 inputs"},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct mps_graph *g = mps_graph_new();
        struct mps_error err = {{0}};
        struct mps_shape sa = {2, {2, 3}}, sb = {2, {5, 4}};
        int a = mps_graph_add_value(g, "a", MPS_F32, &sa), b = mps_graph_add_value(g, "b", MPS_F32, &sb),
            y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        union mps_op_params p = {0};
        snprintf(p.einsum.equation, sizeof p.einsum.equation, "%s", rows[r].eq);
        mps_graph_add_input(g, a, &err);
        mps_graph_add_input(g, b, &err);
        mps_graph_add_node(g, MPS_OP_EINSUM, "es", (int[]){a, b}, 2, &y, 1, &p, &err);
        mps_graph_add_output(g, y, &err);
        th_check(mps_graph_infer(g, &err) == MPS_ERR_MODEL && strstr(err.msg, "'es'") &&
                     strstr(err.msg, rows[r].expect),
                 "Einsum '%s' is refused: %s", rows[r].eq, err.msg);
        mps_graph_free(g);
    }
}

/* MaxUnpool reads its indices at run time: one outside its output fails the run, naming the node. */
static void test_unpool_index(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape sx = {4, {1, 1, 1, 2}}, sy = {4, {1, 1, 2, 4}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &sx), ix = mps_graph_add_value(g, "i", MPS_I64, &sx),
        y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    union mps_op_params p;
    mps_op_params_default(MPS_OP_MAX_UNPOOL, &p);
    p.pool.win.kernel[0] = p.pool.win.kernel[1] = p.pool.win.stride[0] = p.pool.win.stride[1] = 2;
    mps_graph_add_input(g, x, &err);
    mps_graph_add_input(g, ix, &err);
    mps_graph_add_node(g, MPS_OP_MAX_UNPOOL, "unpool", (int[]){x, ix}, 2, &y, 1, &p, &err);
    mps_graph_add_output(g, y, &err);
    struct mps_plan *plan = NULL;
    if (mps_graph_sort(g, &err) || mps_graph_infer(g, &err) ||
        mps_plan_compile(&mps_backend_cpu, g, &(struct mps_compile_opts){0}, &plan, &err)) {
        th_fail("a MaxUnpool compiles: %s", err.msg);
        mps_graph_free(g);
        return;
    }
    float xv[2] = {1, 2}, yv[8];
    int64_t iv[2] = {1, 8};
    struct mps_tensor in[2] = {mps_tensor_make(MPS_F32, &sx, xv), mps_tensor_make(MPS_I64, &sx, iv)},
                      out = mps_tensor_make(MPS_F32, &sy, yv);
    th_check(mps_plan_run(plan, in, &out, &err) == MPS_ERR_INPUT && strstr(err.msg, "'unpool'") &&
                 strstr(err.msg, "index 8"),
             "a MaxUnpool index outside the output fails the run: %s", err.msg);
    iv[1] = 6;
    th_check(mps_plan_run(plan, in, &out, &err) == MPS_OK && yv[1] == 1 && yv[6] == 2 && yv[0] == 0,
             "MaxUnpool puts each value at its index");
    mps_plan_free(plan);
    mps_graph_free(g);
}

/* Numbers of one RandomLike node of shape s (uniform in [a, b), or normal
   of mean a and scale b) into out (numel(s) doubles). */
static bool th_random_run(bool normal, float a, float b, uint64_t seed, int64_t count, double *out)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {1, {count}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &s), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    union mps_op_params p;
    mps_op_params_default(MPS_OP_RANDOM_LIKE, &p);
    p.random.normal = normal, p.random.a = a, p.random.b = b, p.random.seed = seed, p.random.dtype = MPS_F64;
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_RANDOM_LIKE, "random", &x, 1, &y, 1, &p, &err);
    mps_graph_add_output(g, y, &err);
    float *xv = calloc((size_t)count, sizeof *xv);
    struct mps_tensor in = mps_tensor_make(MPS_F32, &s, xv), o;
    bool ok =
        xv && !mps_graph_sort(g, &err) && !mps_graph_infer(g, &err) && !th_run(&mps_backend_cpu, g, &in, &o, &err);
    if (ok) {
        memcpy(out, o.data, sizeof(double) * (size_t)count);
        th_free_tensors(&o, 1);
    } else {
        th_fail("a RandomLike node runs: %s", err.msg);
    }
    free(xv);
    mps_graph_free(g);
    return ok;
}

/* RandomLike (op.h): within its range, with the mean and spread of its
   distribution over 200,000 numbers (a broken generator or Box-Muller is
   off by far more than these bounds, 4 to 6 standard errors), the same on
   every run, another with another seed. */
static void test_random(void)
{
    enum { N = 200000 };
    double *u = malloc(sizeof(double) * N), *v = malloc(sizeof(double) * N), *z = malloc(sizeof(double) * N);
    if (!u || !v || !z || !th_random_run(false, -1, 3, 5, N, u) || !th_random_run(false, -1, 3, 5, N, v) ||
        !th_random_run(true, 2, 0.5f, 9, N, z)) {
        free(u), free(v), free(z);
        return;
    }
    double lo = 1e9, hi = -1e9, mu = 0, m2 = 0, zmu = 0, z2 = 0;
    bool same = true;
    for (int i = 0; i < N; i++) {
        lo = u[i] < lo ? u[i] : lo, hi = u[i] > hi ? u[i] : hi;
        mu += u[i] / N, m2 += u[i] * u[i] / N, zmu += z[i] / N, z2 += z[i] * z[i] / N;
        same = same && u[i] == v[i];
    }
    double var = m2 - mu * mu, zsd = sqrt(z2 - zmu * zmu);
    th_check(lo >= -1 && hi < 3 && fabs(mu - 1) < 0.02 && fabs(var - 16.0 / 12) < 0.02,
             "uniform [-1, 3): min %.4f, max %.4f, mean %.4f (1), variance %.4f (1.3333)", lo, hi, mu, var);
    th_check(fabs(zmu - 2) < 0.006 && fabs(zsd - 0.5) < 0.006, "normal (2, 0.5): mean %.4f, sd %.4f", zmu, zsd);
    th_check(same, "the same seed gives the same numbers on another run");
    th_random_run(false, -1, 3, 6, N, v);
    int equal = 0;
    for (int i = 0; i < N; i++)
        equal += u[i] == v[i];
    th_check(equal < 10, "another seed gives other numbers (%d of %d equal)", equal, N);
    free(u), free(v), free(z);
}

/* The GPU backends' dtype rule (backend.h): what each computes, and what it leaves to the cpu. */
static void test_gpu_dtypes(void)
{
    static const struct {
        enum mps_op op;
        enum mps_dtype a, b;
        bool gpu;
    } rows[] = {
        {MPS_OP_ADD, MPS_F32, MPS_F32, true},     {MPS_OP_ADD, MPS_I64, MPS_I64, true},
        {MPS_OP_ADD, MPS_U8, MPS_U8, false},      {MPS_OP_ADD, MPS_F64, MPS_F64, false},
        {MPS_OP_MUL, MPS_I16, MPS_I16, false},    {MPS_OP_POW, MPS_F32, MPS_F32, true},
        {MPS_OP_POW, MPS_F32, MPS_I64, false},    {MPS_OP_POW, MPS_I32, MPS_I32, false},
        {MPS_OP_GREATER, MPS_U8, MPS_U8, true},   {MPS_OP_EQUAL, MPS_U16, MPS_U16, false},
        {MPS_OP_LESS, MPS_F64, MPS_F64, false},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct mps_graph *g = mps_graph_new();
        struct mps_error err = {{0}};
        struct mps_shape s = {1, {4}};
        int a = mps_graph_add_value(g, "a", rows[i].a, &s), b = mps_graph_add_value(g, "b", rows[i].b, &s),
            y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        mps_graph_add_input(g, a, &err);
        mps_graph_add_input(g, b, &err);
        mps_graph_add_node(g, rows[i].op, "n", (int[]){a, b}, 2, &y, 1, NULL, &err);
        mps_graph_add_output(g, y, &err);
        bool inferred = mps_graph_infer(g, &err) == MPS_OK;
        th_check(inferred && mps_node_gpu_dtypes(g, &g->nodes[0]) == rows[i].gpu, "%s of %s and %s: %s %s",
                 mps_op_name(rows[i].op), mps_dtype_name(rows[i].a), mps_dtype_name(rows[i].b),
                 rows[i].gpu ? "the GPUs compute it" : "the cpu's alone", inferred ? "" : err.msg);
        mps_graph_free(g);
    }
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {1, {4}};
    int x = mps_graph_add_value(g, "x", MPS_I64, &s), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_NEG, "neg", &x, 1, &y, 1, NULL, &err);
    mps_graph_add_output(g, y, &err);
    th_check(mps_graph_infer(g, &err) == MPS_OK && !mps_node_gpu_dtypes(g, &g->nodes[0]),
             "Neg of i64: the cpu's alone");
    mps_graph_free(g);
}

/* A loss's targets are read at run time: one outside the classes fails the
   run naming the node and the target, unless it is the ignore_index. */
static void test_loss_targets(void)
{
    for (int ignore = 0; ignore < 2; ignore++) {
        struct mps_graph *g = mps_graph_new();
        struct mps_error err = {{0}};
        struct mps_shape sx = {2, {2, 3}}, st = {1, {2}};
        int x = mps_graph_add_value(g, "x", MPS_F32, &sx), t = mps_graph_add_value(g, "t", MPS_I64, &st),
            y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        union mps_op_params p = {.loss = {MPS_LOSS_NONE, ignore == 1, 5}};
        mps_graph_add_input(g, x, &err);
        mps_graph_add_input(g, t, &err);
        mps_graph_add_node(g, MPS_OP_NLL_LOSS, "nll", (int[]){x, t}, 2, &y, 1, &p, &err);
        mps_graph_add_output(g, y, &err);
        struct mps_plan *plan = NULL;
        if (mps_graph_sort(g, &err) || mps_graph_infer(g, &err) ||
            mps_plan_compile(&mps_backend_cpu, g, &(struct mps_compile_opts){0}, &plan, &err)) {
            th_fail("a NegativeLogLikelihoodLoss compiles: %s", err.msg);
            mps_graph_free(g);
            continue;
        }
        float xv[6] = {1, 2, 3, 4, 5, 6}, yv[2] = {0};
        int64_t tv[2] = {2, 5};
        struct mps_tensor in[2] = {mps_tensor_make(MPS_F32, &sx, xv), mps_tensor_make(MPS_I64, &st, tv)},
                          out = mps_tensor_make(MPS_F32, &st, yv);
        enum mps_status r = mps_plan_run(plan, in, &out, &err);
        if (ignore)
            th_check(r == MPS_OK && yv[0] == -3 && yv[1] == 0, "the ignore_index 5 is skipped: %g %g", (double)yv[0],
                     (double)yv[1]);
        else
            th_check(r == MPS_ERR_INPUT && strstr(err.msg, "'nll'") && strstr(err.msg, "target 5"),
                     "a target outside the classes fails the run: %s", err.msg);
        mps_plan_free(plan);
        mps_graph_free(g);
    }
}

/* Removing nodes keeps each value's producer right: a fusion gives a kept
   node the output of the node it swallows (Conv then Relu: the Conv writes
   the Relu's value), and that node's removal must not take the producer
   away (the CPU plan's residual fusion relies on it to order the nodes). */
static void test_remove_nodes(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {1, {4}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &s), c = mps_graph_add_value(g, "c", MPS_F32, NULL),
        r = mps_graph_add_value(g, "r", MPS_F32, NULL), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    mps_graph_add_node(g, MPS_OP_SIGMOID, "first", &x, 1, &c, 1, NULL, &err);
    mps_graph_add_node(g, MPS_OP_RELU, "fused", &c, 1, &r, 1, NULL, &err);
    mps_graph_add_node(g, MPS_OP_RELU, "last", &r, 1, &y, 1, NULL, &err);
    mps_graph_add_output(g, y, &err);
    g->nodes[0].out[0] = r; /* what a fusion pass does: the first node writes r, the second goes */
    bool dead[3] = {false, true, false};
    mps_graph_remove_nodes(g, dead);
    th_check(g->n_nodes == 2 && g->values[r].producer == 0 && g->values[y].producer == 1 && g->values[c].producer == -1,
             "removing a fused node keeps its output's new producer (r: %d, y: %d, c: %d)", g->values[r].producer,
             g->values[y].producer, g->values[c].producer);
    mps_graph_free(g);
}

static bool test_branches_cond(int v, void *ctx)
{
    return ((const bool *)ctx)[v];
}

/* A run-time If (c ? [T2] : [E1]), an If inside its then branch (d ? T3 : x),
   and nodes the branches share: which node runs for which branch. */
static void test_branches(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {1, {4}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &s), c = mps_graph_add_value(g, "c", MPS_BOOL, NULL),
        d = mps_graph_add_value(g, "d", MPS_BOOL, NULL), sh = mps_graph_add_value(g, "shared", MPS_F32, NULL),
        t1 = mps_graph_add_value(g, "t1", MPS_F32, NULL), t3 = mps_graph_add_value(g, "t3", MPS_F32, NULL),
        inner = mps_graph_add_value(g, "inner", MPS_F32, NULL), t2 = mps_graph_add_value(g, "t2", MPS_F32, NULL),
        e1 = mps_graph_add_value(g, "e1", MPS_F32, NULL), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    mps_graph_add_input(g, x, &err);
    int nodes = 0;
    struct {
        enum mps_op op;
        int in[5], n_in, out;
    } rows[] = {
        {MPS_OP_IS_NAN, {x}, 1, c},        /* 0: the condition, always */
        {MPS_OP_RELU, {x}, 1, sh},         /* 1: read by both branches: always */
        {MPS_OP_SIGMOID, {sh}, 1, t1},     /* 2: then */
        {MPS_OP_IS_INF, {t1}, 1, d},       /* 3: then (the inner If's condition) */
        {MPS_OP_TANH, {t1}, 1, t3},        /* 4: then, and d */
        {MPS_OP_IF, {d, t3, x}, 3, inner}, /* 5: then */
        {MPS_OP_ADD, {inner, sh}, 2, t2},  /* 6: then */
        {MPS_OP_NEG, {sh}, 1, e1},         /* 7: else */
        {MPS_OP_IF, {c, t2, e1}, 3, y},    /* 8: always */
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        nodes += !mps_graph_add_node(g, rows[i].op, "n", rows[i].in, rows[i].n_in, &rows[i].out, 1, NULL, &err);
    mps_graph_add_output(g, y, &err);
    int guard[9];
    struct mps_branch br[18];
    int guarded = nodes == 9 ? mps_graph_branches(g, guard, br) : -1;
    th_check(guarded == 6, "6 of 9 nodes are in a branch (%d; %s)", guarded, err.msg);
    static const bool want[3][9] = {
        {1, 1, 1, 1, 0, 1, 1, 0, 1}, /* c holds, d not: T3 is the inner then branch's alone */
        {1, 1, 1, 1, 1, 1, 1, 0, 1}, /* c and d hold */
        {1, 1, 0, 0, 0, 0, 0, 1, 1}, /* c does not: the inner If's condition is not even computed */
    };
    bool cond[3][16] = {{0}};
    cond[0][c] = true, cond[1][c] = cond[1][d] = true;
    for (int w = 0; guarded == 6 && w < 3; w++) {
        char got[16] = "", exp[16] = "";
        for (int k = 0; k < 9; k++) {
            got[k] = guard[k] < 0 || mps_branch_holds(br, guard[k], test_branches_cond, cond[w]) ? '1' : '0';
            exp[k] = want[w][k] ? '1' : '0';
        }
        th_check(!strcmp(got, exp), "the nodes that run where c is %d and d %d: %s (want %s)", cond[w][c], cond[w][d],
                 got, exp);
    }
    mps_graph_free(g);
}

/* Strings (tensor.h) made by Cast, moved by the layout ops, changed by
   StringNormalizer, read back as numbers; a run's strings the next run's
   store replaces; an op that does not take strings refuses them by name. */
static void test_strings(void)
{
    static const char *const words[6] = {"a", "bb", "ccc", "d", "ee", "f"};
    static const char *const stop[1] = {"EE"};
    float x[6] = {1, 0.5f, -3, 1e-05f, 123456, 2.5f}, back[6];
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s23 = {2, {2, 3}}, s1 = {1, {1}}, s3 = {1, {3}};
    int in = mps_graph_add_value(g, "x", MPS_F32, &s23), c = mps_graph_add_const(g, "c", MPS_STRING, &s23, words),
        sw = mps_graph_add_const(g, "stop", MPS_STRING, &s1, stop),
        shape = mps_graph_add_const(g, "shape", MPS_I64, &s1, (int64_t[]){12}),
        idx = mps_graph_add_const(g, "idx", MPS_I64, &s3, (int64_t[]){0, 5, 11}), v[8];
    const char *names[8] = {"xs", "cat", "tr", "flat", "picked", "norm", "back", "bad"};
    for (int i = 0; i < 8; i++)
        v[i] = mps_graph_add_value(g, names[i], MPS_F32, NULL);
    mps_graph_add_input(g, in, &err);
    union mps_op_params to_s = {.cast = {.to = MPS_STRING}}, to_f = {.cast = {.to = MPS_F32}},
                        cat = {.axis = {.axis = 0}}, norm = {.strnorm = {.change = MPS_STRNORM_UPPER}};
    int ok = !mps_graph_add_node(g, MPS_OP_CAST, "to_s", &in, 1, &v[0], 1, &to_s, &err) +
             !mps_graph_add_node(g, MPS_OP_CONCAT, "cat", (int[]){c, v[0]}, 2, &v[1], 1, &cat, &err) +
             !mps_graph_add_node(g, MPS_OP_TRANSPOSE, "tr", &v[1], 1, &v[2], 1, NULL, &err) +
             !mps_graph_add_node(g, MPS_OP_RESHAPE, "flat", (int[]){v[2], shape}, 2, &v[3], 1, NULL, &err) +
             !mps_graph_add_node(g, MPS_OP_GATHER, "pick", (int[]){v[3], idx}, 2, &v[4], 1, &cat, &err) +
             !mps_graph_add_node(g, MPS_OP_STRING_NORMALIZER, "norm", (int[]){v[4], sw}, 2, &v[5], 1, &norm, &err) +
             !mps_graph_add_node(g, MPS_OP_CAST, "to_f", &v[0], 1, &v[6], 1, &to_f, &err);
    mps_graph_add_output(g, v[5], &err);
    mps_graph_add_output(g, v[6], &err);
    th_check(ok == 7 && !mps_graph_sort(g, &err) && !mps_graph_infer(g, &err), "a graph of strings infers: %s",
             err.msg);
    struct mps_plan *plan = NULL;
    struct mps_tensor xt = mps_tensor_make(MPS_F32, &s23, x),
                      out[2] = {mps_tensor_make(MPS_STRING, &g->values[v[5]].shape, (const char *[3]){0}),
                                mps_tensor_make(MPS_F32, &s23, back)};
    for (int run = 0; run < 2 && !err.msg[0]; run++) { /* the second run: the store emptied and filled again */
        x[5] = run ? 7.25f : 2.5f;
        if (!plan && mps_plan_compile(&mps_backend_cpu, g, &(struct mps_compile_opts){.threads = 1}, &plan, &err))
            break;
        if (mps_plan_run(plan, &xt, out, &err))
            break;
        struct mps_shape got;
        mps_plan_output_shape(plan, 0, &got);
        const char *const *w = out[0].data;
        const char *want = run ? "7.25" : "2.5";
        th_check(got.ndim == 1 && got.dim[0] == 2 && !strcmp(w[0], "A") && !strcmp(w[1], want),
                 "run %d: Cast, Concat, Transpose, Reshape, Gather, StringNormalizer: %lld strings \"%s\" \"%s\" "
                 "(want \"A\" \"%s\")",
                 run, (long long)got.dim[0], w[0], got.dim[0] > 1 ? w[1] : "", want);
        th_check(!memcmp(back, x, sizeof x), "run %d: the numbers as strings read back exactly", run);
    }
    th_check(!err.msg[0], "the strings ran: %s", err.msg);
    mps_plan_free(plan);
    int add = mps_graph_add_node(g, MPS_OP_ADD, "sum", (int[]){c, c}, 2, &v[7], 1, NULL, &err);
    th_check(!add && mps_graph_infer_node(g, &g->nodes[g->n_nodes - 1], &err) == MPS_ERR_MODEL &&
                 strstr(err.msg, "node 'sum' (Add): input 'c' is a tensor of strings"),
             "Add refuses strings by name: %s", err.msg);
    mps_graph_free(g);
}

/* ops.def's traits: what the code derives from them must hold of each op. An
   activation the fuse pass moves into a product's store is computed there by
   each backend's unary math, so it is unary, and a classifier ending in it
   gives scores; a view has one input's bytes as its one output. */
static void test_traits(void)
{
    int acts = 0, views = 0, bad = 0;
    for (int op = 0; op < MPS_OP_COUNT; op++) {
        const struct mps_op_info *info = mps_op_info((enum mps_op)op);
        if (mps_op_has((enum mps_op)op, MPS_TR_ACT)) {
            acts++;
            if (!mps_op_has((enum mps_op)op, MPS_TR_UNARY | MPS_TR_SCORES) || info->in_min != 1)
                bad++, printf("     %s: an activation that is not unary or not scores\n", info->name);
        }
        if (mps_op_is_view((enum mps_op)op)) {
            views++;
            if (info->out_max != 1 || info->in_min < 1 || mps_op_is_unary((enum mps_op)op))
                bad++, printf("     %s: a view whose output is not one input's bytes\n", info->name);
        }
        if (mps_op_is_unary((enum mps_op)op) && (info->in_min != 1 || info->out_max != 1))
            bad++, printf("     %s: unary with %d inputs, %d outputs\n", info->name, info->in_min, info->out_max);
    }
    th_check(bad == 0 && acts == 12 && views == 6, "ops.def's traits: %d activations, %d views, %d inconsistent", acts,
             views, bad);
    th_check(mps_op_has(MPS_OP_RELU, MPS_TR_ACT) && mps_op_has(MPS_OP_CLIP, MPS_TR_ACT) &&
                 !mps_op_has(MPS_OP_ERF, MPS_TR_ACT) && mps_op_has(MPS_OP_SQRT, MPS_TR_SCORES) &&
                 !mps_op_has(MPS_OP_ADD, MPS_TR_UNARY) && mps_op_is_reduce(MPS_OP_REDUCE_L2) &&
                 mps_op_is_logic(MPS_OP_WHERE) && !mps_op_has(MPS_OP_COUNT, 0),
             "traits of Relu, Clip, Erf, Sqrt, Add, ReduceL2, Where; none for an op out of range");
}

/* The shape rules of the elementwise ops of bytes the quantization pass
   makes (ops.def): each refuses what its kernel cannot take, by name. */
static void test_qelementwise_errors(void)
{
    static const struct {
        enum mps_op op;
        const char *expect;
        struct mps_shape a, b; /* b: QLinearMul's second operand */
        bool act, y_zero_only;
    } rows[] = {
        {MPS_OP_QLINEAR_MUL, "input 3's shape differs from input 0's", {4, {2, 3, 4, 5}}, {4, {2, 3, 1, 2}}, 0, 0},
        {MPS_OP_QLINEAR_MUL, "input 3's shape differs from input 0's", {4, {2, 3, 4, 5}}, {3, {2, 3, 1}}, 0, 0},
        {MPS_OP_QLINEAR_GAP, "it needs batch, channels and at least one more", {2, {2, 3}}, {0}, 0, 0},
        {MPS_OP_QLINEAR_UNARY, "its op is not an elementwise one of floats", {2, {2, 3}}, {0}, false, 0},
        {MPS_OP_QLINEAR_UNARY, "an output zero point but no output scale", {2, {2, 3}}, {0}, true, true},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct mps_graph *g = mps_graph_new();
        struct mps_error err = {{0}};
        struct mps_shape one = {0, {0}};
        int x = mps_graph_add_value(g, "x", MPS_U8, &rows[r].a),
            s = mps_graph_add_const(g, "s", MPS_F32, &one, (float[]){0.5f}),
            z = mps_graph_add_const(g, "z", MPS_U8, &one, (uint8_t[]){3}),
            y = mps_graph_add_value(g, "y", MPS_U8, NULL);
        mps_graph_add_input(g, x, &err);
        union mps_op_params p;
        mps_op_params_default(rows[r].op, &p);
        p.binary.act = (struct mps_fused_act){.on = rows[r].act, .op = MPS_OP_SIGMOID};
        int in[8] = {x, s, z, s, z, -1, -1, -1}, n_in = 5;
        if (rows[r].op == MPS_OP_QLINEAR_MUL) {
            int b = mps_graph_add_value(g, "b", MPS_U8, &rows[r].b);
            mps_graph_add_input(g, b, &err);
            in[3] = b, in[4] = s, in[5] = z, in[6] = s, in[7] = z, n_in = 8;
        }
        if (rows[r].y_zero_only)
            in[3] = -1;
        enum mps_status st = th_infer_one(g, rows[r].op, "q", in, n_in, y, &p, &err);
        th_check(st == MPS_ERR_MODEL && strstr(err.msg, "node 'q'") && strstr(err.msg, rows[r].expect),
                 "%s refuses by name: '%s': %s", mps_op_name(rows[r].op), rows[r].expect, err.msg);
        mps_graph_free(g);
    }
}

int main(void)
{
    test_traits();
    test_qelementwise_errors();
    test_strings();
    test_f16();
    test_branches();
    test_remove_nodes();
    test_shapes();
    test_sort();
    test_cycle();
    test_infer_errors();
    test_backends();
    test_loss_targets();
    test_gpu_dtypes();
    test_einsum_errors();
    test_unpool_index();
    test_random();
    return th_summary();
}
