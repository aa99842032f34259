/* test_models.c: small models assembled directly in the graph IR (an MLP and
   a CNN with random weights) run on every available backend and match the
   double reference evaluated node by node; a plan gives the same answer on
   every run and with any thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SH(...) (&(struct mps_shape){(int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}})

/* Adds node op from in[] to a new value named out; returns the value. */
static int th_node(struct mps_graph *g, enum mps_op op, const char *out, const int *in, int n_in,
                   const union mps_op_params *p, struct mps_error *err)
{
    int y = mps_graph_add_value(g, out, MPS_F32, NULL);
    return mps_graph_add_node(g, op, out, in, n_in, &y, 1, p, err) == MPS_OK ? y : -1;
}

static union mps_op_params th_params(enum mps_op op)
{
    union mps_op_params p;
    mps_op_params_default(op, &p);
    return p;
}

/* x[batch,64] -> Gemm 32 -> Relu -> Gemm 10 -> Softmax, weights [out,in] as PyTorch stores them. */
static struct mps_graph *th_mlp(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 64));
    mps_graph_add_input(g, x, err);
    union mps_op_params gemm = th_params(MPS_OP_GEMM);
    gemm.gemm.trans_b = true;
    int w1 = th_add_random_const(g, "w1", SH(32, 64), -0.2, 0.2), b1 = th_add_random_const(g, "b1", SH(32), -0.1, 0.1);
    int w2 = th_add_random_const(g, "w2", SH(10, 32), -0.3, 0.3), b2 = th_add_random_const(g, "b2", SH(10), -0.1, 0.1);
    int h = th_node(g, MPS_OP_GEMM, "fc1", (int[]){x, w1, b1}, 3, &gemm, err);
    h = th_node(g, MPS_OP_RELU, "relu", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_GEMM, "fc2", (int[]){h, w2, b2}, 3, &gemm, err);
    h = th_node(g, MPS_OP_SOFTMAX, "prob", &h, 1, NULL, err);
    mps_graph_add_output(g, h, err);
    return g;
}

/* x[batch,1,12,12] -> Conv 8 3x3 pad 1 -> BatchNorm -> Relu -> MaxPool 2 -> Conv 8 groups 2
   -> Relu -> GlobalAveragePool -> Flatten -> Gemm 10 -> LogSoftmax. */
static struct mps_graph *th_cnn(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 1, 12, 12));
    mps_graph_add_input(g, x, err);
    union mps_op_params conv = th_params(MPS_OP_CONV), pool = th_params(MPS_OP_MAX_POOL), gemm = th_params(MPS_OP_GEMM);
    conv.conv.win.pad[0] = conv.conv.win.pad[1] = conv.conv.win.pad[2] = conv.conv.win.pad[3] = 1;
    pool.pool.win.kernel[0] = pool.pool.win.kernel[1] = 2;
    pool.pool.win.stride[0] = pool.pool.win.stride[1] = 2;
    gemm.gemm.trans_b = true;
    int w1 = th_add_random_const(g, "w1", SH(8, 1, 3, 3), -0.5, 0.5), b1 = th_add_random_const(g, "b1", SH(8), -0.1, 0.1);
    int scale = th_add_random_const(g, "bn.scale", SH(8), 0.5, 1.5), bias = th_add_random_const(g, "bn.bias", SH(8), -0.2, 0.2);
    int mean = th_add_random_const(g, "bn.mean", SH(8), -0.2, 0.2), var = th_add_random_const(g, "bn.var", SH(8), 0.5, 2);
    int w2 = th_add_random_const(g, "w2", SH(8, 4, 3, 3), -0.3, 0.3);
    int w3 = th_add_random_const(g, "w3", SH(10, 8), -0.5, 0.5), b3 = th_add_random_const(g, "b3", SH(10), -0.1, 0.1);
    int h = th_node(g, MPS_OP_CONV, "conv1", (int[]){x, w1, b1}, 3, &conv, err);
    h = th_node(g, MPS_OP_BATCH_NORM, "bn1", (int[]){h, scale, bias, mean, var}, 5, NULL, err);
    h = th_node(g, MPS_OP_RELU, "relu1", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_MAX_POOL, "pool1", &h, 1, &pool, err);
    conv.conv.group = 2;
    h = th_node(g, MPS_OP_CONV, "conv2", (int[]){h, w2}, 2, &conv, err);
    h = th_node(g, MPS_OP_RELU, "relu2", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_GLOBAL_AVERAGE_POOL, "gap", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_FLATTEN, "flat", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_GEMM, "fc", (int[]){h, w3, b3}, 3, &gemm, err);
    h = th_node(g, MPS_OP_LOG_SOFTMAX, "logprob", &h, 1, NULL, err);
    mps_graph_add_output(g, h, err);
    return g;
}

/* h[batch,in] -> a Linear layer of out units named y (weights [out,in] as PyTorch stores them, uniform
   in +-1/sqrt(in); with a bias row unless !bias), its activation fused (as the fuse pass leaves it). */
static int th_linear(struct mps_graph *g, const char *y, int h, int64_t in, int64_t out, bool bias,
                     union mps_op_params gemm, struct mps_error *err)
{
    char w[40], b[40];
    snprintf(w, sizeof w, "%s.w", y), snprintf(b, sizeof b, "%s.b", y);
    gemm.gemm.trans_b = true;
    double r = 1.0 / sqrt((double)in);
    int wv = th_add_random_const(g, w, SH(out, in), -r, r);
    if (!bias)
        return th_node(g, MPS_OP_GEMM, y, (int[]){h, wv}, 2, &gemm, err);
    int bv = th_add_random_const(g, b, SH(out), -r, r);
    return th_node(g, MPS_OP_GEMM, y, (int[]){h, wv, bv}, 3, &gemm, err);
}

/* Gemm's parameters with alpha, beta and activation act fused (MPS_OP_IDENTITY: none). */
static union mps_op_params th_gemm_act(enum mps_op act, float alpha, float beta)
{
    union mps_op_params gemm = th_params(MPS_OP_GEMM);
    gemm.gemm.act = (struct mps_fused_act){.on = act != MPS_OP_IDENTITY, .op = act};
    gemm.gemm.alpha = alpha, gemm.gemm.beta = beta;
    return gemm;
}

/* Linear layers, then a Softmax, at 1 to 9 rows (cuda: its one-kernel Linear and chains of them up to 8,
   cuBLAS and an epilogue at 9). wide: x[batch,784] -> 512 +Relu -> 512 +Relu -> 10 -> Softmax (cuda: the
   last layer and the Softmax one kernel); else x[batch,30] (not a multiple of 4) -> 100 +Relu -> 64 +Tanh
   (alpha 0.5, beta 2) -> 10 -> LogSoftmax (cuda: all one kernel). */
static struct mps_graph *th_chain(int batch, bool wide, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int64_t width[4] = {30, 100, 64, 10}, wide_width[4] = {784, 512, 512, 10};
    const int64_t *d = wide ? wide_width : width;
    int h = mps_graph_add_value(g, "x", MPS_F32, SH(batch, d[0]));
    mps_graph_add_input(g, h, err);
    for (int i = 0; i < 3; i++) {
        char y[8];
        snprintf(y, sizeof y, "fc%d", i);
        bool tanh = i == 1 && !wide;
        h = th_linear(g, y, h, d[i], d[i + 1], true,
                      th_gemm_act(i == 2 ? MPS_OP_IDENTITY : tanh ? MPS_OP_TANH : MPS_OP_RELU, tanh ? 0.5f : 1.0f,
                                  tanh ? 2.0f : 1.0f),
                      err);
    }
    h = th_node(g, wide ? MPS_OP_SOFTMAX : MPS_OP_LOG_SOFTMAX, "prob", &h, 1, NULL, err);
    mps_graph_add_output(g, h, err);
    return g;
}

/* Eleven Linear layers x[batch,30] -> 24 -> 20 ... -> 8 with no Softmax, some without a bias or with
   alpha, beta, Sigmoid or LeakyRelu: cuda's chains hold 8 layers, so a chain of 8 and one of 3. */
static struct mps_graph *th_chain_long(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int h = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 30));
    mps_graph_add_input(g, h, err);
    int64_t in = 30;
    for (int i = 0; i < 11; i++) {
        char y[8];
        snprintf(y, sizeof y, "fc%d", i);
        int64_t out = i < 6 ? 24 - 3 * i : 8 + i % 2;
        enum mps_op act = i % 3 == 0 ? MPS_OP_SIGMOID : i % 3 == 1 ? MPS_OP_LEAKY_RELU : MPS_OP_IDENTITY;
        union mps_op_params gemm = th_gemm_act(act, i % 4 == 1 ? 0.5f : 1.0f, i % 4 == 2 ? 1.5f : 1.0f);
        gemm.gemm.act.p.alpha = 0.1f;
        h = th_linear(g, y, h, in, out, i % 5 != 2, gemm, err);
        in = out;
    }
    mps_graph_add_output(g, h, err);
    return g;
}

/* Linear layers that cuda must not chain: x[batch,20] -> fc1 16 (no bias, alpha 0.5) -> fc2 16 +Sigmoid,
   then fc2 + fc1 (fc1's output has a second reader) -> fc3 6 -> Softmax along axis 0 (not the rows). */
static struct mps_graph *th_chain_refused(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 20));
    mps_graph_add_input(g, x, err);
    int h1 = th_linear(g, "fc1", x, 20, 16, false, th_gemm_act(MPS_OP_IDENTITY, 0.5f, 1.0f), err);
    int h2 = th_linear(g, "fc2", h1, 16, 16, true, th_gemm_act(MPS_OP_SIGMOID, 1.0f, 1.0f), err);
    int h = th_node(g, MPS_OP_ADD, "sum", (int[]){h2, h1}, 2, NULL, err);
    h = th_linear(g, "fc3", h, 16, 6, true, th_gemm_act(MPS_OP_IDENTITY, 1.0f, 1.0f), err);
    union mps_op_params sm = th_params(MPS_OP_SOFTMAX);
    sm.norm.axis = 0;
    h = th_node(g, MPS_OP_SOFTMAX, "prob", &h, 1, &sm, err);
    mps_graph_add_output(g, h, err);
    return g;
}

static struct mps_graph *th_chain_narrow(int batch, struct mps_error *err)
{
    return th_chain(batch, false, err);
}

static struct mps_graph *th_chain_wide(int batch, struct mps_error *err)
{
    return th_chain(batch, true, err);
}

/* Conv+act then a 2x2 MaxPool, three ways (cuda computes the pool in the conv's kernel for the first two):
   x[batch,1,24,24] -> Conv 16 3x3 pad 1 +Relu (direct: one input channel) -> MaxPool 2 -> Conv 16 3x3 pad 1
   +LeakyRelu (Winograd: 16 channels each way, 36 tiles) -> MaxPool 2 -> Conv 8 3x3 (im2col: not fused)
   -> MaxPool 2 -> Flatten -> Gemm 10. */
static struct mps_graph *th_conv_pool(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 1, 24, 24));
    mps_graph_add_input(g, x, err);
    union mps_op_params conv = th_params(MPS_OP_CONV), pool = th_params(MPS_OP_MAX_POOL), gemm = th_params(MPS_OP_GEMM);
    pool.pool.win.kernel[0] = pool.pool.win.kernel[1] = 2;
    pool.pool.win.stride[0] = pool.pool.win.stride[1] = 2;
    gemm.gemm.trans_b = true;
    int w1 = th_add_random_const(g, "w1", SH(16, 1, 3, 3), -0.5, 0.5);
    int b1 = th_add_random_const(g, "b1", SH(16), -0.1, 0.1);
    int w2 = th_add_random_const(g, "w2", SH(16, 16, 3, 3), -0.2, 0.2);
    int b2 = th_add_random_const(g, "b2", SH(16), -0.1, 0.1);
    int w3 = th_add_random_const(g, "w3", SH(8, 16, 3, 3), -0.2, 0.2);
    int w4 = th_add_random_const(g, "w4", SH(10, 32), -0.5, 0.5), b4 = th_add_random_const(g, "b4", SH(10), -0.1, 0.1);
    conv.conv.win.pad[0] = conv.conv.win.pad[1] = conv.conv.win.pad[2] = conv.conv.win.pad[3] = 1;
    conv.conv.act = (struct mps_fused_act){.on = true, .op = MPS_OP_RELU};
    int h = th_node(g, MPS_OP_CONV, "conv1", (int[]){x, w1, b1}, 3, &conv, err);
    h = th_node(g, MPS_OP_MAX_POOL, "pool1", &h, 1, &pool, err);
    conv.conv.act = (struct mps_fused_act){.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.1f}};
    h = th_node(g, MPS_OP_CONV, "conv2", (int[]){h, w2, b2}, 3, &conv, err);
    h = th_node(g, MPS_OP_MAX_POOL, "pool2", &h, 1, &pool, err);
    conv = th_params(MPS_OP_CONV);
    h = th_node(g, MPS_OP_CONV, "conv3", (int[]){h, w3}, 2, &conv, err);
    h = th_node(g, MPS_OP_MAX_POOL, "pool3", &h, 1, &pool, err);
    h = th_node(g, MPS_OP_FLATTEN, "flat", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_GEMM, "fc", (int[]){h, w4, b4}, 3, &gemm, err);
    mps_graph_add_output(g, h, err);
    return g;
}

/* Conv -> MaxPool 2x2 pairs that cuda must not fuse, beside one it may:
   x[batch,1,12,12] -> Conv 8 2x2 +Relu (direct, 11x11: odd) -> MaxPool 2 -> GlobalAveragePool;
   x -> Conv 8 3x3 pad 1 +Relu (direct, 12x12) -> MaxPool 2 -> GlobalAveragePool, and the same conv's
   output read again by a GlobalAveragePool (two readers); x -> Conv 8 3x3 pad 1 (12x12, one reader)
   -> MaxPool 2 -> GlobalAveragePool (fused); the four pooled means summed -> Flatten -> Gemm 10. */
static struct mps_graph *th_conv_pool_refused(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 1, 12, 12));
    mps_graph_add_input(g, x, err);
    union mps_op_params conv = th_params(MPS_OP_CONV), pool = th_params(MPS_OP_MAX_POOL);
    union mps_op_params gemm = th_params(MPS_OP_GEMM);
    pool.pool.win.kernel[0] = pool.pool.win.kernel[1] = 2;
    pool.pool.win.stride[0] = pool.pool.win.stride[1] = 2;
    gemm.gemm.trans_b = true;
    conv.conv.act = (struct mps_fused_act){.on = true, .op = MPS_OP_RELU};
    int w1 = th_add_random_const(g, "w1", SH(8, 1, 2, 2), -0.5, 0.5);
    int w2 = th_add_random_const(g, "w2", SH(8, 1, 3, 3), -0.5, 0.5);
    int w3 = th_add_random_const(g, "w3", SH(8, 1, 3, 3), -0.5, 0.5);
    int w4 = th_add_random_const(g, "w4", SH(10, 8), -0.5, 0.5), b4 = th_add_random_const(g, "b4", SH(10), -0.1, 0.1);
    int odd = th_node(g, MPS_OP_CONV, "odd", (int[]){x, w1}, 2, &conv, err);
    odd = th_node(g, MPS_OP_MAX_POOL, "odd_pool", &odd, 1, &pool, err);
    odd = th_node(g, MPS_OP_GLOBAL_AVERAGE_POOL, "odd_mean", &odd, 1, NULL, err);
    conv.conv.win.pad[0] = conv.conv.win.pad[1] = conv.conv.win.pad[2] = conv.conv.win.pad[3] = 1;
    int twice = th_node(g, MPS_OP_CONV, "twice", (int[]){x, w2}, 2, &conv, err);
    int pooled = th_node(g, MPS_OP_MAX_POOL, "twice_pool", &twice, 1, &pool, err);
    pooled = th_node(g, MPS_OP_GLOBAL_AVERAGE_POOL, "twice_pool_mean", &pooled, 1, NULL, err);
    twice = th_node(g, MPS_OP_GLOBAL_AVERAGE_POOL, "twice_mean", &twice, 1, NULL, err);
    conv.conv.act.on = false;
    int once = th_node(g, MPS_OP_CONV, "once", (int[]){x, w3}, 2, &conv, err);
    once = th_node(g, MPS_OP_MAX_POOL, "once_pool", &once, 1, &pool, err);
    once = th_node(g, MPS_OP_GLOBAL_AVERAGE_POOL, "once_mean", &once, 1, NULL, err);
    int h = th_node(g, MPS_OP_SUM, "sum", (int[]){odd, pooled, twice, once}, 4, NULL, err);
    h = th_node(g, MPS_OP_FLATTEN, "flat", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_GEMM, "fc", (int[]){h, w4, b4}, 3, &gemm, err);
    mps_graph_add_output(g, h, err);
    return g;
}

/* Weights [10,16] that a slow node computes: ReduceSum over the last axis of a [10,16,4096] constant, a
   thread summing 4096 values per weight. */
static int th_slow_weights(struct mps_graph *g, struct mps_error *err)
{
    int wc = th_add_random_const(g, "w2c", SH(10, 16, 4096), -0.01, 0.01);
    int axes = mps_graph_add_const(g, "axes", MPS_I64, SH(1), (int64_t[]){2});
    union mps_op_params sum = th_params(MPS_OP_REDUCE_SUM);
    sum.reduce.keepdims = false;
    return th_node(g, MPS_OP_REDUCE_SUM, "w2", (int[]){wc, axes}, 2, &sum, err);
}

/* squeezenet's fire modules, whose Concats the cpu has its inputs' nodes
   write into (at batch 2, the convolutions each image's part a stride
   apart; the Concats of other nodes' outputs copied): x[batch,8,9,9] -> squeeze 1x1 4 +Relu -> expand1x1 8
   +Relu and expand3x3 8 +Relu -> Concat (axis 1) -> the same again, where
   the expand1x1's output is also read by a Sigmoid (not written in place),
   the Concat's inputs in either order and a third, x's own Relu -> Concat ->
   GlobalAveragePool, plus the Sigmoid's mean -> Flatten -> Gemm 10. th_fire_wide
   has squeeze 16, expand1x1 8 and expand3x3 32 channels, which Winograd runs on
   every family (its output transform then writes each image's part a stride apart). */
static struct mps_graph *th_fire_of(int batch, int nsq, int n1, int n3, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 8, 9, 9));
    mps_graph_add_input(g, x, err);
    union mps_op_params conv = th_params(MPS_OP_CONV), cat = th_params(MPS_OP_CONCAT), gemm = th_params(MPS_OP_GEMM);
    cat.axis.axis = 1;
    gemm.gemm.trans_b = true;
    conv.conv.act = (struct mps_fused_act){.on = true, .op = MPS_OP_RELU};
    int h = x, seen = -1;
    for (int f = 0; f < 2; f++) {
        int ws = th_add_random_const(g, "ws", SH(nsq, f ? n1 + n3 : 8, 1, 1), -0.5, 0.5);
        int w1 = th_add_random_const(g, "w1", SH(n1, nsq, 1, 1), -0.5, 0.5);
        int w3 = th_add_random_const(g, "w3", SH(n3, nsq, 3, 3), -0.5, 0.5);
        int b3 = th_add_random_const(g, "b3", SH(n3), -0.1, 0.1);
        union mps_op_params c3 = conv;
        c3.conv.win.pad[0] = c3.conv.win.pad[1] = c3.conv.win.pad[2] = c3.conv.win.pad[3] = 1;
        int sq = th_node(g, MPS_OP_CONV, "squeeze", (int[]){h, ws}, 2, &conv, err);
        int e1 = th_node(g, MPS_OP_CONV, "expand1x1", (int[]){sq, w1}, 2, &conv, err);
        int e3 = th_node(g, MPS_OP_CONV, "expand3x3", (int[]){sq, w3, b3}, 3, &c3, err);
        if (f == 1) {
            seen = th_node(g, MPS_OP_SIGMOID, "seen", &e1, 1, NULL, err);
            seen = th_node(g, MPS_OP_GLOBAL_AVERAGE_POOL, "seen_mean", &seen, 1, NULL, err);
        }
        h = th_node(g, MPS_OP_CONCAT, "cat", f ? (int[]){e1, e3} : (int[]){e3, e1}, 2, &cat, err);
    }
    int r = th_node(g, MPS_OP_RELU, "relu", &x, 1, NULL, err);
    h = th_node(g, MPS_OP_CONCAT, "cat3", (int[]){h, r}, 2, &cat, err);
    h = th_node(g, MPS_OP_GLOBAL_AVERAGE_POOL, "mean", &h, 1, NULL, err);
    h = th_node(g, MPS_OP_CONCAT, "both", (int[]){h, seen}, 2, &cat, err);
    h = th_node(g, MPS_OP_FLATTEN, "flat", &h, 1, NULL, err);
    int w = th_add_random_const(g, "w", SH(10, 2 * n1 + n3 + 8), -0.5, 0.5);
    int b = th_add_random_const(g, "b", SH(10), -0.1, 0.1);
    h = th_node(g, MPS_OP_GEMM, "fc", (int[]){h, w, b}, 3, &gemm, err);
    mps_graph_add_output(g, h, err);
    return g;
}

static struct mps_graph *th_fire(int batch, struct mps_error *err)
{
    return th_fire_of(batch, 4, 8, 8, err);
}

static struct mps_graph *th_fire_wide(int batch, struct mps_error *err)
{
    return th_fire_of(batch, 16, 8, 32, err);
}

/* Linear layers whose weights a node computes just before, so cuda must not chain them (its chain reads
   the weights before it waits for the kernel before): fc2's weights th_slow_weights, then x[batch,24] ->
   fc1 16 +Relu -> fc2 10 -> Softmax. */
static struct mps_graph *th_chain_computed(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 24));
    mps_graph_add_input(g, x, err);
    int w2 = th_slow_weights(g, err);
    int h = th_linear(g, "fc1", x, 24, 16, true, th_gemm_act(MPS_OP_RELU, 1.0f, 1.0f), err);
    union mps_op_params gemm = th_gemm_act(MPS_OP_IDENTITY, 1.0f, 1.0f);
    gemm.gemm.trans_b = true;
    h = th_node(g, MPS_OP_GEMM, "fc2", (int[]){h, w2}, 2, &gemm, err);
    h = th_node(g, MPS_OP_SOFTMAX, "prob", &h, 1, NULL, err);
    mps_graph_add_output(g, h, err);
    return g;
}

/* One Linear layer whose weights the node just before computes (th_slow_weights), so cuda's Linear kernel
   must not read them before it waits (it does so for constant weights): x[batch,16] -> fc 10. */
static struct mps_graph *th_linear_computed(int batch, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    int x = mps_graph_add_value(g, "x", MPS_F32, SH(batch, 16));
    mps_graph_add_input(g, x, err);
    int w = th_slow_weights(g, err);
    union mps_op_params gemm = th_gemm_act(MPS_OP_IDENTITY, 1.0f, 1.0f);
    gemm.gemm.trans_b = true;
    int h = th_node(g, MPS_OP_GEMM, "fc", (int[]){x, w}, 2, &gemm, err);
    mps_graph_add_output(g, h, err);
    return g;
}

/* Through the backend's own staging (host_io), where it has some: the input
   written into each slot, run from there, the output read there, each slot
   against the reference and unchanged by a run of the other. */
static void th_staged(const char *name, struct mps_plan *plan, const struct mps_tensor *in, const double *want,
                      int64_t m, double *got)
{
    struct mps_error err = {{0}};
    struct mps_tensor sin[2][8], sout[2][8];
    if (!plan->backend->host_io) {
        th_skip("%s [%s]: staged runs: the backend has no staging of its own", name, plan->backend->name);
        return;
    }
    for (int k = 1; k >= 0; k--) {
        if (mps_plan_host_io(plan, k, sin[k], sout[k], &err)) {
            th_fail("%s [%s]: staging slot %d: %s", name, plan->backend->name, k, err.msg);
            return;
        }
        memcpy(sin[k][0].data, in->data, mps_tensor_bytes(in));
        memset(sout[k][0].data, 0, mps_tensor_bytes(&sout[k][0]));
        if (mps_plan_run(plan, sin[k], sout[k], &err)) {
            th_fail("%s [%s]: staged run, slot %d: %s", name, plan->backend->name, k, err.msg);
            return;
        }
    }
    for (int k = 0; k < 2; k++) {
        th_to_double(MPS_F32, sout[k][0].data, m, got);
        double e = th_nmse(got, want, m);
        th_check(e <= 1e-10, "%s [%s] from staging slot %d (after a run of the other): nmse %.2e", name,
                 plan->backend->name, k, e);
    }
}

static void th_model(const char *name, struct mps_graph *(*build)(int, struct mps_error *), int batch,
                     const struct mps_backend *const *backends, int n_backends)
{
    struct mps_error err = {{0}};
    th_seed(name);
    struct mps_graph *g = build(batch, &err);
    if (mps_graph_sort(g, &err) || mps_graph_infer(g, &err)) {
        th_fail("%s: builds: %s", name, err.msg);
        mps_graph_free(g);
        return;
    }
    const struct mps_value *xv = &g->values[g->inputs[0]];
    int64_t n = mps_shape_numel(&xv->shape);
    float *x = th_alloc(MPS_F32, n);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)th_uniform(0, 1);
    struct mps_tensor in = mps_tensor_make(MPS_F32, &xv->shape, x);
    struct ref_tensor want;
    th_ref_graph(g, &in, &want);
    int64_t m = ref_numel(&want.shape);
    double *got = calloc((size_t)m, sizeof *got);
    for (int k = 0; k < n_backends; k++) {
        const struct mps_backend *be = backends[k];
        int bad = mps_backend_unsupported(be, g, err.msg, sizeof err.msg);
        if (bad) {
            th_skip("%s [%s]: %d nodes unsupported: %s", name, be->name, bad, err.msg);
            continue;
        }
        /* 5: more threads than a small machine has cores, as a larger one runs by default */
        static const int thread_counts[] = {1, 2, 5};
        for (size_t t = 0; t < sizeof thread_counts / sizeof *thread_counts; t++) {
            int threads = thread_counts[t];
            struct mps_plan *plan;
            if (mps_plan_compile(be, g, &(struct mps_compile_opts){.threads = threads}, &plan, &err)) {
                th_fail("%s [%s]: compile: %s", name, be->name, err.msg);
                continue;
            }
            float *out = th_alloc(MPS_F32, m);
            struct mps_tensor to = mps_tensor_make(MPS_F32, &want.shape, out);
            for (int run = 0; run < 3; run++) {
                memset(out, 0, sizeof(float) * (size_t)m);
                if (mps_plan_run(plan, &in, &to, &err)) {
                    th_fail("%s [%s]: run: %s", name, be->name, err.msg);
                    break;
                }
                th_to_double(MPS_F32, out, m, got);
                double e = th_nmse(got, want.d, m);
                th_check(e <= 1e-10, "%s [%s] %d thread%s, run %d: nmse %.2e against the reference", name,
                         be->name, threads, threads > 1 ? "s" : "", run + 1, e);
            }
            free(out);
            if (t == 0)
                th_staged(name, plan, &in, want.d, m, got);
            mps_plan_free(plan);
        }
    }
    free(got);
    free(want.d);
    free(x);
    mps_graph_free(g);
}

int main(void)
{
    const struct mps_backend *backends[4];
    int n = th_backends(backends, 4);
    th_model("MLP 64-32-10 batch 1", th_mlp, 1, backends, n);
    th_model("MLP 64-32-10 batch 5", th_mlp, 5, backends, n);
    th_model("CNN conv-bn-relu-pool-conv(g2)-gap-fc batch 1", th_cnn, 1, backends, n);
    th_model("CNN conv-bn-relu-pool-conv(g2)-gap-fc batch 3", th_cnn, 3, backends, n);
    int rows[] = {1, 3, 8, 9};
    for (int i = 0; i < 4; i++) {
        char name[80];
        snprintf(name, sizeof name, "MLP chain 30-100+Relu-64+Tanh-10-LogSoftmax batch %d", rows[i]);
        th_model(name, th_chain_narrow, rows[i], backends, n);
        snprintf(name, sizeof name, "MLP chain 784-512+Relu-512+Relu-10-Softmax batch %d", rows[i]);
        th_model(name, th_chain_wide, rows[i], backends, n);
    }
    for (int i = 0; i < 3; i++) {
        char name[80];
        snprintf(name, sizeof name, "MLP chain of 11 layers, no Softmax, batch %d", (int[]){1, 8, 9}[i]);
        th_model(name, th_chain_long, (int[]){1, 8, 9}[i], backends, n);
    }
    th_model("MLP chain refusals (two readers, Softmax on axis 0) batch 3", th_chain_refused, 3, backends, n);
    th_model("MLP chain refusal (computed weights) batch 2", th_chain_computed, 2, backends, n);
    th_model("Linear layer, weights computed just before, batch 2", th_linear_computed, 2, backends, n);
    th_model("CNN conv+relu-pool, conv+leakyrelu-pool, conv-pool, fc batch 1", th_conv_pool, 1, backends, n);
    th_model("CNN conv+relu-pool, conv+leakyrelu-pool, conv-pool, fc batch 3", th_conv_pool, 3, backends, n);
    th_model("CNN conv-pool pairs not fused (odd size, two readers) beside one fused, batch 2", th_conv_pool_refused, 2,
             backends, n);
    th_model("fire modules, Concats written in place by their inputs' nodes, batch 1", th_fire, 1, backends, n);
    th_model("fire modules, Concats of two images written a stride apart, batch 2", th_fire, 2, backends, n);
    th_model("fire modules of Winograd's expand3x3, Concats written a stride apart, batch 3", th_fire_wide, 3, backends,
             n);
    return th_summary();
}
