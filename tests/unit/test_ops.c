/* test_ops.c: every op on every available backend against the double
   reference (ref.c), one row per case: a one-node graph with random inputs,
   its expected output shapes (checking shape inference), compared by
   normalized error (floats) or exactly (integers). Adding a case is adding
   a row. Backends not compiled in or unavailable are reported skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

struct th_input {
    enum mps_dtype dt;
    struct mps_shape shape;
    bool is_const, omitted;
    const double *vals; /* constant values; NULL: random */
    const char *const *words; /* of a string input (MPS_STRING): numel(shape) of them */
    int n_vals;
    double lo, hi;      /* random range; [-1, 1) when both are 0 */
};

struct th_case {
    const char *name;
    enum mps_op op;
    bool has_p; /* else the op's defaults */
    union mps_op_params p;
    int n_in;
    struct th_input in[9];
    int n_out;
    struct mps_shape out[4]; /* expected shapes (of a bounded output, the bound) */
    double tol;              /* NMSE bound for float outputs; 0: 1e-9 */
};

#define N_OF(T, ...) ((int)(sizeof((T[]){__VA_ARGS__}) / sizeof(T)))
#define S(...) {N_OF(int64_t, __VA_ARGS__), {__VA_ARGS__}}
#define SCALAR {0, {0}}
#define F(...) {.dt = MPS_F32, .shape = S(__VA_ARGS__)}
#define FR(l, h, ...) {.dt = MPS_F32, .shape = S(__VA_ARGS__), .lo = l, .hi = h}
#define FS {.dt = MPS_F32, .shape = SCALAR}
#define H(...) {.dt = MPS_F16, .shape = S(__VA_ARGS__)}
#define IR(t, l, h, ...) {.dt = t, .shape = S(__VA_ARGS__), .lo = l, .hi = h}
#define CI(...) {.dt = MPS_I64, .shape = {1, {N_OF(double, __VA_ARGS__)}}, .is_const = true, \
                 .vals = (const double[]){__VA_ARGS__}, .n_vals = N_OF(double, __VA_ARGS__)}
#define CI_EMPTY {.dt = MPS_I64, .shape = {1, {0}}, .is_const = true}
#define CI_SCALAR(v) {.dt = MPS_I64, .shape = SCALAR, .is_const = true, .vals = (const double[]){v}, .n_vals = 1}
#define CI32(...) {.dt = MPS_I32, .shape = {1, {N_OF(double, __VA_ARGS__)}}, .is_const = true, \
                   .vals = (const double[]){__VA_ARGS__}, .n_vals = N_OF(double, __VA_ARGS__)}
/* an RNN's activations, the same for both directions */
#define ACTS(f, g, h) {{MPS_RNN_##f}, {MPS_RNN_##g}, {MPS_RNN_##h}, {MPS_RNN_##f}, {MPS_RNN_##g}, {MPS_RNN_##h}}
#define CB(v) {.dt = MPS_BOOL, .shape = {1, {1}}, .is_const = true, .vals = (const double[]){v}, .n_vals = 1}
#define CF_SCALAR(v) {.dt = MPS_F32, .shape = SCALAR, .is_const = true, .vals = (const double[]){v}, .n_vals = 1}
#define CF(...) {.dt = MPS_F32, .shape = S(__VA_ARGS__), .is_const = true}
#define CFL(...) {.dt = MPS_F32, .shape = {1, {N_OF(double, __VA_ARGS__)}}, .is_const = true, \
                  .vals = (const double[]){__VA_ARGS__}, .n_vals = N_OF(double, __VA_ARGS__)}
#define WORDS(rows, ...) {.dt = MPS_STRING, .shape = {rows ? 2 : 1, {rows ? 1 : N_OF(const char *, __VA_ARGS__), \
                                  N_OF(const char *, __VA_ARGS__)}}, .words = (const char *const[]){__VA_ARGS__}}
#define CWORDS(...) {.dt = MPS_STRING, .shape = {1, {N_OF(const char *, __VA_ARGS__)}}, .is_const = true, \
                     .words = (const char *const[]){__VA_ARGS__}}
#define OMIT {.omitted = true}
/* a constant scalar of type t and value v; a random constant of type t in [l, h] */
#define CT(t, v) {.dt = t, .shape = SCALAR, .is_const = true, .vals = (const double[]){v}, .n_vals = 1}
#define CR(t, l, h, ...) {.dt = t, .shape = S(__VA_ARGS__), .is_const = true, .lo = l, .hi = h}
#define IN(...) .n_in = N_OF(struct th_input, __VA_ARGS__), .in = {__VA_ARGS__}
#define OUT(...) .n_out = N_OF(struct mps_shape, __VA_ARGS__), .out = {__VA_ARGS__}
#define P(member, ...) .has_p = true, .p.member = {__VA_ARGS__}
#define WIN2(kh, kw, sh, sw, dh, dw, pt, pl, pb, pr) \
    {.kernel = {kh, kw}, .stride = {sh, sw}, .dilation = {dh, dw}, .pad = {pt, pl, pb, pr}}
#define WIN1(k, s, d, pb, pe) {.kernel = {k}, .stride = {s}, .dilation = {d}, .pad = {pb, pe}}
#define AUTO(w, mode) {.kernel = w.kernel, .stride = w.stride, .dilation = w.dilation, .auto_pad = mode}

static const struct th_case th_cases[] = {
    /* MatMul: batched, broadcasting, 1-D promotion */
    {"MatMul 2-D", MPS_OP_MATMUL, IN(F(3, 4), F(4, 5)), OUT(S(3, 5))},
    {"MatMul big, batch folded, split", MPS_OP_MATMUL, IN(F(2, 90, 96), F(96, 75)), OUT(S(2, 90, 75))},
    {"MatMul batch broadcast", MPS_OP_MATMUL, IN(F(2, 1, 3, 4), F(5, 4, 2)), OUT(S(2, 5, 3, 2))},
    {"MatMul 1-D x 2-D", MPS_OP_MATMUL, IN(F(4), F(4, 3)), OUT(S(3))},
    {"MatMul 2-D x 1-D", MPS_OP_MATMUL, IN(F(3, 4), F(4)), OUT(S(3))},
    {"MatMul batch x matrix", MPS_OP_MATMUL, IN(F(2, 3, 4), F(4, 5)), OUT(S(2, 3, 5))},
    {"MatMul matrix x batch", MPS_OP_MATMUL, IN(F(3, 4), F(2, 4, 5)), OUT(S(2, 3, 5))},
    {"MatMul k=1", MPS_OP_MATMUL, IN(F(5, 1), F(1, 6)), OUT(S(5, 6))},
    {"MatMul 64x96x80", MPS_OP_MATMUL, IN(F(64, 96), F(96, 80)), OUT(S(64, 80))},
    /* B constant: cpu packs it at compile for its micro-kernels (A's batch folded into rows) */
    {"MatMul batch x const matrix", MPS_OP_MATMUL, IN(F(2, 3, 40), CF(40, 21)), OUT(S(2, 3, 21))},
    {"MatMul 1-D x const matrix", MPS_OP_MATMUL, IN(F(33), CF(33, 7)), OUT(S(7))},
    /* f16 (cpu: widened to f32; cuda: half GEMM, f32 accumulation): the output's rounding to f16
       is an NMSE of ~1e-7 */
    {"MatMul f16", MPS_OP_MATMUL, IN(H(33, 70), H(70, 20)), OUT(S(33, 20)), .tol = 1e-6},
    {"MatMul f16 batched", MPS_OP_MATMUL, IN(H(2, 1, 9, 16), H(3, 16, 8)), OUT(S(2, 3, 9, 8)), .tol = 1e-6},
    {"MatMul f16 const B", MPS_OP_MATMUL, IN(H(4, 64), {.dt = MPS_F16, .shape = S(64, 24), .is_const = true}),
     OUT(S(4, 24)), .tol = 1e-6},
    /* Gemm */
    {"Gemm C row", MPS_OP_GEMM, P(gemm, .alpha = 1, .beta = 1), IN(F(3, 4), F(4, 5), F(5)), OUT(S(3, 5))},
    {"Gemm transA transB alpha beta C column", MPS_OP_GEMM,
     P(gemm, .trans_a = true, .trans_b = true, .alpha = 0.5f, .beta = 2), IN(F(4, 3), F(5, 4), F(3, 1)), OUT(S(3, 5))},
    {"Gemm no C", MPS_OP_GEMM, P(gemm, .alpha = 1, .beta = 1), IN(F(2, 3), F(3, 4)), OUT(S(2, 4))},
    /* over 2^20 multiply-adds: split over the pool's threads, by rows (m > n) and by columns */
    {"Gemm big transA transB split by rows", MPS_OP_GEMM,
     P(gemm, .trans_a = true, .trans_b = true, .alpha = 0.5f, .beta = 2), IN(F(96, 200), F(70, 96), F(70)),
     OUT(S(200, 70))},
    {"Gemm big split by columns", MPS_OP_GEMM, P(gemm, .alpha = 1, .beta = 1), IN(F(70, 96), F(96, 210), F(210)),
     OUT(S(70, 210))},
    {"Gemm C scalar", MPS_OP_GEMM, P(gemm, .trans_b = true, .alpha = 1, .beta = 1), IN(F(2, 3), F(4, 3), FS),
     OUT(S(2, 4))},
    {"Gemm fused LeakyRelu", MPS_OP_GEMM,
     P(gemm, .trans_b = true, .alpha = 1, .beta = 1,
       .act = {.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.1f}}),
     IN(F(3, 8), F(5, 8), F(5)), OUT(S(3, 5))},
    /* a Linear layer at batch 1 to 8 (cuda: one kernel with bias and activation), and at 9 rows */
    {"Gemm Linear 1 row, k 130, fused Relu", MPS_OP_GEMM,
     P(gemm, .trans_b = true, .alpha = 1, .beta = 1, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(F(1, 130), F(70, 130), F(70)), OUT(S(1, 70))},
    {"Gemm Linear 8 rows, k 256, alpha beta", MPS_OP_GEMM, P(gemm, .trans_b = true, .alpha = 0.5f, .beta = 2),
     IN(F(8, 256), F(33, 256), F(33)), OUT(S(8, 33))},
    /* cuda splits long rows of w over 64, 128 or 256 threads a column (n not a multiple of a block's columns;
       k 4100: 1025 float4s, four or five a thread), w a weight (const) or computed */
    {"Gemm Linear 1 row, k 400, const w", MPS_OP_GEMM, P(gemm, .trans_b = true, .alpha = 1, .beta = 1),
     IN(F(1, 400), CF(37, 400), CF(37)), OUT(S(1, 37))},
    {"Gemm Linear 3 rows, k 4100, const w", MPS_OP_GEMM, P(gemm, .trans_b = true, .alpha = 1, .beta = 1),
     IN(F(3, 4100), CF(6, 4100), CF(6)), OUT(S(3, 6))},
    {"Gemm Linear 5 rows, k 1568, fused Relu", MPS_OP_GEMM,
     P(gemm, .trans_b = true, .alpha = 1, .beta = 1, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(F(5, 1568), CF(19, 1568), F(19)), OUT(S(5, 19))},
    /* cuda instantiates the kernel per row count: the rows not above */
    {"Gemm Linear 4 rows, k 512, const w and bias, fused Tanh", MPS_OP_GEMM,
     P(gemm, .trans_b = true, .alpha = 1, .beta = 1, .act = {.on = true, .op = MPS_OP_TANH}),
     IN(F(4, 512), CF(20, 512), CF(20)), OUT(S(4, 20))},
    {"Gemm Linear 6 rows, k 784, const w", MPS_OP_GEMM, P(gemm, .trans_b = true, .alpha = 1, .beta = 1),
     IN(F(6, 784), CF(11, 784), CF(11)), OUT(S(6, 11))},
    {"Gemm Linear 7 rows, k 20, const w", MPS_OP_GEMM, P(gemm, .trans_b = true, .alpha = 1.5f, .beta = 0.5f),
     IN(F(7, 20), CF(45, 20), CF(45)), OUT(S(7, 45))},
    {"Gemm Linear 2 rows, k 1001", MPS_OP_GEMM, P(gemm, .trans_b = true, .alpha = 1, .beta = 1),
     IN(F(2, 1001), F(9, 1001), F(9)), OUT(S(2, 9))},
    {"Gemm Linear 9 rows, no C, fused Sigmoid", MPS_OP_GEMM,
     P(gemm, .trans_b = true, .alpha = 1, .beta = 1, .act = {.on = true, .op = MPS_OP_SIGMOID}),
     IN(F(9, 64), F(40, 64)), OUT(S(9, 40))},
    /* B constant: cpu packs B and alpha at compile and beta * C as a bias per column only where C is the
       same for every row; a constant C that varies by row stays a full C */
    {"Gemm const w, const C of every row", MPS_OP_GEMM, P(gemm, .alpha = 1, .beta = 0.5f),
     IN(F(3, 4), CF(4, 5), CF(3, 5)), OUT(S(3, 5))},
    {"Gemm const w, const C [1, n], transA", MPS_OP_GEMM, P(gemm, .trans_a = true, .alpha = 2, .beta = 1),
     IN(F(4, 3), CF(4, 5), CF(1, 5)), OUT(S(3, 5))},
    {"Gemm C full beta 0", MPS_OP_GEMM, P(gemm, .alpha = 2, .beta = 0), IN(F(3, 4), F(4, 5), F(3, 5)), OUT(S(3, 5))},
    /* Einsum */
    {"Einsum batched matmul", MPS_OP_EINSUM, P(einsum, "bij, bjk -> bik"), IN(F(3, 4, 5), F(3, 5, 2)), OUT(S(3, 4, 2))},
    {"Einsum attention scores, i32", MPS_OP_EINSUM, P(einsum, "bhid,bhjd->bhij"),
     IN(IR(MPS_I32, -5, 5, 2, 3, 4, 6), IR(MPS_I32, -5, 5, 2, 3, 5, 6)), OUT(S(2, 3, 4, 5))},
    {"Einsum trace and outer product", MPS_OP_EINSUM, P(einsum, "ii,j->j"), IN(F(4, 4), F(3)), OUT(S(3))},
    {"Einsum three inputs, a sum over two letters", MPS_OP_EINSUM, P(einsum, "ab,bc,cd->ad"),
     IN(F(2, 3), F(3, 4), F(4, 5)), OUT(S(2, 5))},
    {"Einsum f64 transpose and sum", MPS_OP_EINSUM, P(einsum, "ijk->ki"), IN(IR(MPS_F64, -1, 1, 3, 4, 5)),
     OUT(S(5, 3))},
    {"Det of 3 4x4 matrices", MPS_OP_DET, IN(F(3, 4, 4)), OUT(S(3))},
    {"Det of a singular 3x3, f64", MPS_OP_DET,
     IN({.dt = MPS_F64, .shape = {2, {3, 3}}, .vals = (const double[]){1, 2, 3, 2, 4, 6, 0, 1, 5}, .n_vals = 9}),
     OUT(SCALAR)},
    {"MaxUnpool 2x2 stride 2 (indices anywhere in the 6x8 output)", MPS_OP_MAX_UNPOOL,
     P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(F(2, 3, 3, 4), IR(MPS_I64, 0, 287, 2, 3, 3, 4)),
     OUT(S(2, 3, 6, 8))},
    {"MaxUnpool 3x3 stride 2 pads 1, output_shape larger", MPS_OP_MAX_UNPOOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1)),
     IN(F(1, 2, 3, 3), IR(MPS_I64, 0, 49, 1, 2, 3, 3), CI(1, 2, 6, 7)), OUT(S(1, 2, 6, 7))},
    {"RoiAlign avg, half_pixel, sampling 2", MPS_OP_ROI_ALIGN,
     P(roialign, .half_pixel = true, .out_h = 3, .out_w = 4, .sampling = 2, .scale = 0.5f),
     IN(F(2, 3, 10, 12),
        {.dt = MPS_F32,
         .shape = S(3, 4),
         .is_const = true,
         .vals = (const double[]){1, 2, 15, 18, 0, 0, 23, 19, 6, 3, 9, 5},
         .n_vals = 12},
        CI(1, 0, 1)),
     OUT(S(3, 3, 3, 4))},
    {"RoiAlign max, output_half_pixel, adaptive sampling", MPS_OP_ROI_ALIGN,
     P(roialign, .max = true, .out_h = 2, .out_w = 2, .scale = 1.0f),
     IN(FR(0, 1, 1, 2, 8, 8),
        {.dt = MPS_F32,
         .shape = S(2, 4),
         .is_const = true,
         .vals = (const double[]){0.5, 0.5, 6.5, 7, -2, -1, 3, 2},
         .n_vals = 8},
        CI(0, 0)),
     OUT(S(2, 2, 2, 2))},
    /* Conv */
    {"Conv 3x3 pad 1 bias", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(F(1, 3, 8, 8), F(4, 3, 3, 3), F(4)), OUT(S(1, 4, 8, 8))},
    /* a style-transfer net's last layer: 9x9 to 3 channels (cuda: all of a position's channels a thread) */
    {"Conv 9x9 pads 4, 8 to 3 channels, 2 images", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 4, 4, 4, 4), .group = 1), IN(F(2, 8, 13, 11), F(3, 8, 9, 9), F(3)),
     OUT(S(2, 3, 13, 11))},
    {"Conv stride 2 odd sizes", MPS_OP_CONV, P(conv, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .group = 1),
     IN(F(2, 3, 9, 7), F(5, 3, 3, 3)), OUT(S(2, 5, 4, 3))},
    {"Conv batch 3 bias (the images in one GEMM)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1), IN(F(3, 2, 5, 5), F(4, 2, 3, 3), F(4)),
     OUT(S(3, 4, 5, 5))},
    {"Conv asymmetric pads and kernel", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 0, 2, 1), .group = 1),
     IN(F(1, 2, 6, 6), F(3, 2, 3, 2)), OUT(S(1, 3, 7, 6))},
    {"Conv dilation 2", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 2, 2, 0, 0, 0, 0), .group = 1),
     IN(F(1, 2, 9, 9), F(2, 2, 3, 3)), OUT(S(1, 2, 5, 5))},
    {"Conv groups 2", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 2),
     IN(F(1, 4, 6, 6), F(6, 2, 3, 3), F(6)), OUT(S(1, 6, 6, 6))},
    {"Conv groups 2 batch 3 fused Relu", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 2, 1, 1, 1, 1, 0, 1, 1), .group = 2, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(F(3, 4, 7, 6), F(6, 2, 3, 2), F(6)), OUT(S(3, 6, 4, 6))},
    {"Conv 1x1 batch 2 groups 2", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 2),
     IN(F(2, 4, 3, 5), F(6, 2, 1, 1), F(6)), OUT(S(2, 6, 3, 5))},
    {"Conv depthwise stride 2", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 1, 1, 1), .group = 4),
     IN(F(2, 4, 7, 7), F(4, 1, 3, 3), F(4)), OUT(S(2, 4, 4, 4))},
    {"Conv depthwise multiplier 2", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 3),
     IN(F(1, 3, 5, 5), F(6, 1, 3, 3)), OUT(S(1, 6, 3, 3))},
    {"Conv depthwise 3x3 stride 1 pad 1, wide rows", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 8), IN(F(2, 8, 9, 37), F(8, 1, 3, 3), F(8)),
     OUT(S(2, 8, 9, 37))},
    {"Conv depthwise 3x3 stride 1, HardSwish in the store", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 5, .act = {.on = true, .op = MPS_OP_HARD_SWISH}),
     IN(FR(-8, 8, 2, 5, 11, 20), F(5, 1, 3, 3), F(5)), OUT(S(2, 5, 11, 20))},
    {"Conv depthwise 3x3 on 2x2: every output an edge", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 2), IN(F(1, 2, 2, 2), F(2, 1, 3, 3)),
     OUT(S(1, 2, 2, 2))},
    {"Conv depthwise 3x3 stride 2 asymmetric pads", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 0, 1, 1, 0), .group = 4), IN(F(1, 4, 10, 20), F(4, 1, 3, 3), F(4)),
     OUT(S(1, 4, 5, 10))},
    {"Conv depthwise 5x5 pad 2 (a family's general plane kernel), Relu", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 2, 2, 2, 2), .group = 6, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(F(2, 6, 14, 23), F(6, 1, 5, 5), F(6)), OUT(S(2, 6, 14, 23))},
    {"Conv depthwise 5x5 pad 2 on 14x14, 3 images, HardSwish (planes of an image share the padding)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 2, 2, 2, 2), .group = 7, .act = {.on = true, .op = MPS_OP_HARD_SWISH}),
     IN(FR(-8, 8, 3, 7, 14, 14), F(7, 1, 5, 5), F(7)), OUT(S(3, 7, 14, 14))},
    {"Conv depthwise 5x5 stride 2 pad 2 on 28x28, 2 images, HardSwish (LR-ASPP's, even and odd floats split)",
     MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 2, 2, 2, 2), .group = 6, .act = {.on = true, .op = MPS_OP_HARD_SWISH}),
     IN(FR(-8, 8, 2, 6, 28, 28), F(6, 1, 5, 5)), OUT(S(2, 6, 14, 14))},
    {"Conv depthwise 7x7 pad 3 on 70x9 (rows of 70: a row at a time), 2 images", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 3, 3, 3, 3), .group = 3), IN(F(2, 3, 9, 70), F(3, 1, 7, 7), F(3)),
     OUT(S(2, 3, 9, 70))},
    {"Conv depthwise 5x5 dilation 2 pad 4 (LR-ASPP's)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 2, 2, 4, 4, 4, 4), .group = 5), IN(F(1, 5, 14, 14), F(5, 1, 5, 5), F(5)),
     OUT(S(1, 5, 14, 14))},
    {"Conv depthwise 5x5 stride 2, uneven pads, odd sizes, Clip -0.5..0.5", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 2, 2, 1), .group = 3,
       .act = {.on = true, .op = MPS_OP_CLIP, .p = {.alpha = -0.5f, .beta = 0.5f}}),
     IN(F(1, 3, 19, 21), F(3, 1, 5, 5), F(3)), OUT(S(1, 3, 9, 10))},
    {"Conv depthwise 3x3 dilation 2, stride 2 (not the 3x3 kernel), LeakyRelu", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 2, 2, 2, 2, 2, 2), .group = 4,
       .act = {.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.1f}}),
     IN(F(1, 4, 16, 15), F(4, 1, 3, 3), F(4)), OUT(S(1, 4, 8, 8))},
    {"Conv depthwise 1x7 on rows of 9000 (wider than a band: the C loop)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 3, 0, 3), .group = 2), IN(F(1, 2, 3, 9000), F(2, 1, 1, 7), F(2)),
     OUT(S(1, 2, 3, 9000))},
    {"Conv depthwise 3x3 pad 1, 32 channels on 14x14, 2 images, Clip 0..6 (sixteen planes at once: dwb)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 32,
       .act = {.on = true, .op = MPS_OP_CLIP, .p = {.alpha = 0.0f, .beta = 6.0f}}),
     IN(FR(-4, 4, 2, 32, 14, 14), F(32, 1, 3, 3), F(32)), OUT(S(2, 32, 14, 14))},
    {"Conv depthwise 3x3 stride 2, 16 channels, odd sizes, no bias (dwb)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 1, 1, 1), .group = 16), IN(F(1, 16, 15, 13), F(16, 1, 3, 3)),
     OUT(S(1, 16, 8, 7))},
    {"Conv depthwise 3x3 pad 1, 160 channels on 40x47 (dwb in bands of rows, blocks a call: each band's zeros)",
     MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 160),
     IN(F(1, 160, 40, 47), F(160, 1, 3, 3), F(160)), OUT(S(1, 160, 40, 47))},
    {"Conv depthwise 3x3 pad 1, 64 channels on 7x7, 2 images (dwb: one call, the padding's zeros written once)",
     MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 64),
     IN(F(2, 64, 7, 7), F(64, 1, 3, 3), F(64)), OUT(S(2, 64, 7, 7))},
    {"Conv depthwise 3x3 stride 2 pad 1, 16 channels on 112x112 (dwb's bands, stride 2)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 1, 1, 1), .group = 16), IN(F(1, 16, 112, 112), F(16, 1, 3, 3), F(16)),
     OUT(S(1, 16, 56, 56))},
    {"Conv depthwise 5x5 pad 2, 16 channels on 7x7, 2 images, HardSwish (dwb, any window)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 2, 2, 2, 2), .group = 16, .act = {.on = true, .op = MPS_OP_HARD_SWISH}),
     IN(FR(-8, 8, 2, 16, 7, 7), F(16, 1, 5, 5), F(16)), OUT(S(2, 16, 7, 7))},
    {"Conv depthwise 3x3 dilation 2, uneven pads, 48 channels, LeakyRelu (dwb)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 2, 2, 2, 1, 2, 3), .group = 48,
       .act = {.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.1f}}),
     IN(F(1, 48, 9, 11), F(48, 1, 3, 3), F(48)), OUT(S(1, 48, 9, 11))},
    {"Conv depthwise 7x7 pad 3, 16 channels on 9x20 (49 taps: more than dwb takes, plane by plane)", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 3, 3, 3, 3), .group = 16), IN(F(1, 16, 9, 20), F(16, 1, 7, 7), F(16)),
     OUT(S(1, 16, 9, 20))},
    {"Conv 3-D depthwise 1x3x3, depth stride 2", MPS_OP_CONV,
     P(conv, .win = {.stride = {2, 1, 1}, .dilation = {1, 1, 1}, .pad = {0, 1, 1, 0, 1, 1}}, .group = 2),
     IN(F(1, 2, 4, 6, 7), F(2, 1, 1, 3, 3), F(2)), OUT(S(1, 2, 2, 6, 7))},
    {"Conv pointwise 1x1", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 1),
     IN(F(2, 8, 5, 5), F(4, 8, 1, 1), F(4)), OUT(S(2, 4, 5, 5))},
    {"Conv 1x1 stride 2", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 0, 0, 0, 0), .group = 1),
     IN(F(1, 4, 5, 5), F(3, 4, 1, 1)), OUT(S(1, 3, 3, 3))},
    {"Conv 1-D pad 1", MPS_OP_CONV, P(conv, .win = WIN1(0, 1, 1, 1, 1), .group = 1), IN(F(2, 3, 10), F(4, 3, 3), F(4)),
     OUT(S(2, 4, 10))},
    {"Conv 1-D stride 2 dilation 2", MPS_OP_CONV, P(conv, .win = WIN1(0, 2, 2, 0, 0), .group = 1),
     IN(F(1, 2, 11), F(3, 2, 3)), OUT(S(1, 3, 4))},
    {"Conv auto_pad SAME_UPPER", MPS_OP_CONV,
     P(conv, .win = {.stride = {2, 2}, .dilation = {1, 1}, .auto_pad = MPS_AUTO_PAD_SAME_UPPER}, .group = 1),
     IN(F(1, 2, 7, 7), F(3, 2, 4, 4)), OUT(S(1, 3, 4, 4))},
    {"Conv auto_pad SAME_LOWER", MPS_OP_CONV,
     P(conv, .win = {.stride = {2, 2}, .dilation = {1, 1}, .auto_pad = MPS_AUTO_PAD_SAME_LOWER}, .group = 1),
     IN(F(1, 2, 7, 7), F(3, 2, 4, 4)), OUT(S(1, 3, 4, 4))},
    {"Conv auto_pad VALID", MPS_OP_CONV,
     P(conv, .win = {.stride = {2, 2}, .dilation = {1, 1}, .pad = {1, 1, 1, 1}, .auto_pad = MPS_AUTO_PAD_VALID},
       .group = 1),
     IN(F(1, 2, 7, 7), F(2, 2, 3, 3)), OUT(S(1, 2, 3, 3))},
    {"Conv 3-D stride 2 pads", MPS_OP_CONV,
     P(conv, .win = {.stride = {2, 1, 2}, .dilation = {1, 1, 1}, .pad = {1, 0, 1, 1, 0, 0}}, .group = 1),
     IN(F(1, 2, 5, 4, 6), F(3, 2, 3, 2, 3), F(3)), OUT(S(1, 3, 3, 3, 3))},
    {"Conv 3-D depthwise dilation 2", MPS_OP_CONV,
     P(conv, .win = {.stride = {1, 1, 1}, .dilation = {2, 1, 2}}, .group = 2), IN(F(1, 2, 6, 4, 6), F(2, 1, 2, 2, 2)),
     OUT(S(1, 2, 4, 3, 4))},
    {"Conv fused Relu", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(F(1, 3, 6, 6), F(4, 3, 3, 3), F(4)), OUT(S(1, 4, 6, 6))},
    {"Conv fused Clip 0..6", MPS_OP_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 3,
       .act = {.on = true, .op = MPS_OP_CLIP, .p = {0, 0.2f}}),
     IN(F(1, 3, 6, 6), F(3, 1, 3, 3)), OUT(S(1, 3, 4, 4))},
    {"Conv 1x1 spatial", MPS_OP_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 1),
     IN(F(1, 3, 1, 1), F(2, 3, 1, 1)), OUT(S(1, 2, 1, 1))},
    /* ConvTranspose */
    {"ConvTranspose basic bias", MPS_OP_CONV_TRANSPOSE, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 1),
     IN(F(1, 3, 4, 4), F(3, 2, 3, 3), F(2)), OUT(S(1, 2, 6, 6))},
    {"ConvTranspose stride 2 pads output_padding", MPS_OP_CONV_TRANSPOSE,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 1, 1, 1), .group = 1, .output_padding = {1, 1}),
     IN(F(1, 2, 3, 3), F(2, 3, 3, 3)), OUT(S(1, 3, 6, 6))},
    {"ConvTranspose groups 2", MPS_OP_CONV_TRANSPOSE, P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 0, 0, 0, 0), .group = 2),
     IN(F(1, 4, 3, 3), F(4, 1, 2, 2)), OUT(S(1, 2, 6, 6))},
    {"ConvTranspose dilation 2", MPS_OP_CONV_TRANSPOSE, P(conv, .win = WIN2(0, 0, 1, 1, 2, 2, 0, 0, 0, 0), .group = 1),
     IN(F(1, 2, 3, 3), F(2, 2, 3, 3)), OUT(S(1, 2, 7, 7))},
    {"ConvTranspose output_shape", MPS_OP_CONV_TRANSPOSE,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 0, 0, 0, 0), .group = 1, .output_shape = {6, 6}, .has_output_shape = true),
     IN(F(1, 2, 3, 3), F(2, 2, 3, 3)), OUT(S(1, 2, 6, 6))},
    {"ConvTranspose 1-D stride 2", MPS_OP_CONV_TRANSPOSE, P(conv, .win = WIN1(0, 2, 1, 0, 0), .group = 1),
     IN(F(1, 2, 5), F(2, 3, 3)), OUT(S(1, 3, 11))},
    {"ConvTranspose 3-D stride 2", MPS_OP_CONV_TRANSPOSE,
     P(conv, .win = {.stride = {2, 2, 1}, .dilation = {1, 1, 1}, .pad = {1, 0, 0, 0, 1, 0}}, .group = 1),
     IN(F(1, 2, 3, 2, 3), F(2, 2, 3, 3, 2), F(2)), OUT(S(1, 2, 6, 4, 4))},
    {"ConvTranspose auto_pad SAME_UPPER", MPS_OP_CONV_TRANSPOSE,
     P(conv, .win = {.stride = {2, 2}, .dilation = {1, 1}, .auto_pad = MPS_AUTO_PAD_SAME_UPPER}, .group = 1),
     IN(F(1, 1, 3, 3), F(1, 1, 3, 3)), OUT(S(1, 1, 6, 6))},
    /* MaxPool */
    {"MaxPool u8 3x3 stride 2 pads 1, dilation 1", MPS_OP_MAX_POOL, P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1)),
     IN(IR(MPS_U8, 0, 255, 2, 2, 7, 6)), OUT(S(2, 2, 4, 3))},
    {"MaxPool i8 3x3 stride 2 ceil_mode on 23x111 (bytes separably: rows, then columns)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true), IN(IR(MPS_I8, -128, 127, 2, 3, 23, 111)),
     OUT(S(2, 3, 11, 55))},
    {"MaxPool u8 2x3 stride 1x2 dilation 2 pads 1 2", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(2, 3, 1, 2, 2, 2, 1, 2, 1, 2)), IN(IR(MPS_U8, 0, 255, 1, 2, 9, 10)), OUT(S(1, 2, 9, 5))},
    {"MaxPool u8 2x2 stride 2 on 5x40 (the two rows read in place, eight outputs a step, the last moved back)",
     MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(IR(MPS_U8, 0, 255, 1, 3, 5, 40)),
     OUT(S(1, 3, 2, 20))},
    {"MaxPool i8 2x2 stride 2 on 6x28 (mnist_cnn's rows of 14: eight outputs a step, compared flipped)",
     MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(IR(MPS_I8, -128, 127, 2, 2, 6, 28)),
     OUT(S(2, 2, 3, 14))},
    {"MaxPool i8 3x3 stride 2 ceil_mode on 27x27 (squeezenet1_1's last: rows of 13)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true), IN(IR(MPS_I8, -128, 127, 1, 2, 27, 27)),
     OUT(S(1, 2, 13, 13))},
    {"MaxPool u8 2x2 stride 2 ceil_mode on 4x41 (the last window half outside: rows of maxima, sixteen at once)",
     MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true),
     IN(IR(MPS_U8, 0, 255, 1, 2, 4, 41)), OUT(S(1, 2, 2, 21))},
    {"MaxPool i8 2x2 stride 2 on 9x13 (under eight outputs a row: a step whose loads run past the row)",
     MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(IR(MPS_I8, -128, 127, 1, 3, 9, 13)),
     OUT(S(1, 3, 4, 6))},
    {"MaxPool u8 2x2 stride 2 on 14x15 (seven outputs a row, a step; the last row's loads would end a byte past x's)",
     MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(IR(MPS_U8, 0, 255, 2, 5, 14, 15)),
     OUT(S(2, 5, 7, 7))},
    {"MaxPool i8 2x2 stride 1 with Indices", MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 1, 1, 1, 1, 0, 0, 0, 0)),
     IN(IR(MPS_I8, -128, 127, 1, 2, 5, 4)), OUT(S(1, 2, 4, 3), S(1, 2, 4, 3))},
    {"MaxPool 2x2 stride 2", MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(F(1, 3, 8, 8)),
     OUT(S(1, 3, 4, 4))},
    {"MaxPool 2x2 stride 2, odd sizes, rows over 64 outputs", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(F(2, 2, 7, 133)), OUT(S(2, 2, 3, 66))},
    {"MaxPool 2x2 stride 2 on 15x13, 2 images of 3 planes (rows of 6 outputs: two output rows a step, the 7th alone)",
     MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)), IN(F(2, 3, 15, 13)), OUT(S(2, 3, 7, 6))},
    {"MaxPool 3x3 stride 2 pad 1", MPS_OP_MAX_POOL, P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1)),
     IN(F(2, 2, 7, 7)), OUT(S(2, 2, 4, 4))},
    {"MaxPool ceil_mode", MPS_OP_MAX_POOL, P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true),
     IN(F(1, 1, 6, 6)), OUT(S(1, 1, 3, 3))},
    {"MaxPool 3x3 stride 2 ceil_mode on 27x27 (a row in two vectors: avx512's registers)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true), IN(F(2, 3, 27, 27)), OUT(S(2, 3, 13, 13))},
    {"MaxPool 3x3 stride 2 ceil_mode on 55x56 (four vectors, the last window past the row)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true), IN(F(1, 2, 55, 56)), OUT(S(1, 2, 27, 28))},
    {"MaxPool 3x3 stride 2 ceil_mode on 20x64 (the last window's third column in no vector, two rows)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true), IN(F(1, 2, 20, 64)), OUT(S(1, 2, 10, 32))},
    {"MaxPool 3x3 stride 2 ceil_mode on 23x111 (eight vectors: squeezenet1_1's first pool)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true), IN(F(1, 2, 23, 111)), OUT(S(1, 2, 11, 55))},
    {"MaxPool 3x3 stride 2 ceil_mode on 5x128 (the widest row in registers)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0), .ceil_mode = true), IN(F(1, 1, 5, 128)), OUT(S(1, 1, 2, 64))},
    {"MaxPool 3x3 stride 2 pads 1 on 15x112 (resnet18's: column -1 in the first lane)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1)), IN(F(2, 2, 15, 112)), OUT(S(2, 2, 8, 56))},
    {"MaxPool 3x3 stride 2 pads 1 on 6x127 (columns -1 to 126 in eight vectors)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1)), IN(F(1, 1, 6, 127)), OUT(S(1, 1, 3, 64))},
    {"MaxPool 3x3 stride 2 on 11x33 (sixteen outputs a row: the second vector stores none)", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0)), IN(F(1, 2, 11, 33)), OUT(S(1, 2, 5, 16))},
    {"MaxPool ceil_mode pad, last window kept", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1), .ceil_mode = true), IN(F(1, 1, 4, 4)), OUT(S(1, 1, 3, 3))},
    {"MaxPool ceil_mode, window in padding dropped", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 1, 1, 1, 1), .ceil_mode = true), IN(F(1, 1, 5, 5)), OUT(S(1, 1, 3, 3))},
    {"MaxPool with Indices, pads", MPS_OP_MAX_POOL, P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1)),
     IN(F(2, 2, 5, 5)), OUT(S(2, 2, 3, 3), S(2, 2, 3, 3))},
    {"MaxPool with Indices, column major", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(2, 3, 2, 1, 1, 1, 0, 0, 0, 0), .column_major = true), IN(F(1, 2, 6, 5)),
     OUT(S(1, 2, 3, 3), S(1, 2, 3, 3))},
    {"MaxPool 3x3 stride 1 pad 1, rows over 64 outputs", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1)), IN(F(1, 2, 5, 150)), OUT(S(1, 2, 5, 150))},
    {"MaxPool 3x3 stride 2, rows over 64 outputs", MPS_OP_MAX_POOL, P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 0, 0, 0, 0)),
     IN(F(1, 2, 7, 301)), OUT(S(1, 2, 3, 150))},
    {"MaxPool 3x3 stride 2 pads 1, 2, ceil_mode, rows of 19 (a family's kernel, the step after masked)",
     MPS_OP_MAX_POOL, P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 2, 2), .ceil_mode = true), IN(F(2, 3, 9, 37)),
     OUT(S(2, 3, 5, 19))},
    {"MaxPool dilation 2", MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 2, 1, 1, 2, 2, 0, 0, 0, 0)), IN(F(1, 2, 8, 8)),
     OUT(S(1, 2, 6, 6))},
    {"MaxPool 1-D", MPS_OP_MAX_POOL, P(pool, .win = WIN1(3, 2, 1, 0, 0)), IN(F(2, 3, 9)), OUT(S(2, 3, 4))},
    {"MaxPool auto_pad SAME_UPPER", MPS_OP_MAX_POOL,
     P(pool, .win = {.kernel = {3, 3}, .stride = {2, 2}, .dilation = {1, 1}, .auto_pad = MPS_AUTO_PAD_SAME_UPPER}),
     IN(F(1, 1, 5, 5)), OUT(S(1, 1, 3, 3))},
    {"MaxPool 2x3 kernel strides 1x2", MPS_OP_MAX_POOL, P(pool, .win = WIN2(2, 3, 1, 2, 1, 1, 0, 0, 0, 0)),
     IN(F(1, 1, 5, 7)), OUT(S(1, 1, 4, 3))},
    {"MaxPool 4x4 stride 3, pads 2, 1, 1, 2", MPS_OP_MAX_POOL, P(pool, .win = WIN2(4, 4, 3, 3, 1, 1, 2, 1, 1, 2)),
     IN(F(1, 2, 11, 13)), OUT(S(1, 2, 4, 5))},
    {"MaxPool 2x2 stride 1, rows wider than the plane path holds", MPS_OP_MAX_POOL,
     P(pool, .win = WIN2(2, 2, 1, 1, 1, 1, 0, 0, 0, 0)), IN(F(1, 1, 2, 4200)), OUT(S(1, 1, 1, 4199))},
    /* AveragePool */
    {"AveragePool 2x2 stride 2", MPS_OP_AVERAGE_POOL, P(pool, .win = WIN2(2, 2, 2, 2, 1, 1, 0, 0, 0, 0)),
     IN(F(1, 2, 6, 6)), OUT(S(1, 2, 3, 3))},
    {"AveragePool pad, padding excluded", MPS_OP_AVERAGE_POOL, P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1)),
     IN(F(1, 2, 5, 5)), OUT(S(1, 2, 3, 3))},
    {"AveragePool pad, count_include_pad", MPS_OP_AVERAGE_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1), .count_include_pad = true), IN(F(1, 2, 5, 5)),
     OUT(S(1, 2, 3, 3))},
    {"AveragePool ceil_mode count_include_pad", MPS_OP_AVERAGE_POOL,
     P(pool, .win = WIN2(3, 3, 2, 2, 1, 1, 1, 1, 1, 1), .ceil_mode = true, .count_include_pad = true),
     IN(F(1, 1, 6, 6)), OUT(S(1, 1, 4, 4))},
    {"AveragePool 3-D pads count_include_pad", MPS_OP_AVERAGE_POOL,
     P(pool, .win = {.kernel = {2, 3, 3}, .stride = {1, 2, 2}, .dilation = {1, 1, 1}, .pad = {0, 1, 1, 1, 1, 0}},
       .count_include_pad = true),
     IN(F(1, 2, 4, 5, 5)), OUT(S(1, 2, 4, 3, 2))},
    {"MaxPool 3-D ceil_mode", MPS_OP_MAX_POOL,
     P(pool, .win = {.kernel = {2, 2, 2}, .stride = {2, 2, 2}, .dilation = {1, 1, 1}}, .ceil_mode = true),
     IN(F(1, 2, 5, 4, 3)), OUT(S(1, 2, 3, 2, 2))},
    {"AveragePool 1-D", MPS_OP_AVERAGE_POOL, P(pool, .win = WIN1(2, 2, 1, 0, 0)), IN(F(1, 2, 7)), OUT(S(1, 2, 3))},
    {"GlobalAveragePool", MPS_OP_GLOBAL_AVERAGE_POOL, IN(F(2, 3, 5, 4)), OUT(S(2, 3, 1, 1))},
    {"GlobalAveragePool 1-D", MPS_OP_GLOBAL_AVERAGE_POOL, IN(F(2, 3, 7)), OUT(S(2, 3, 1))},
    {"GlobalAveragePool on 23x29 planes (runs of 256, sixteen sums, a tail)", MPS_OP_GLOBAL_AVERAGE_POOL,
     IN(F(2, 3, 23, 29)), OUT(S(2, 3, 1, 1))},
    {"GlobalMaxPool", MPS_OP_GLOBAL_MAX_POOL, IN(F(2, 3, 5, 4)), OUT(S(2, 3, 1, 1))},
    /* normalization */
    {"GlobalLpPool p 2", MPS_OP_GLOBAL_LP_POOL, IN(F(2, 3, 5, 4)), OUT(S(2, 3, 1, 1))},
    {"GlobalLpPool p 3, 1-D", MPS_OP_GLOBAL_LP_POOL, P(act, .alpha = 3), IN(F(2, 4, 9)), OUT(S(2, 4, 1))},
    {"BatchNormalization 4-D", MPS_OP_BATCH_NORM, IN(F(2, 3, 4, 4), F(3), F(3), F(3), FR(0.5, 2, 3)),
     OUT(S(2, 3, 4, 4))},
    {"LRN size 5 (AlexNet's)", MPS_OP_LRN, P(lrn, .alpha = 1e-4f, .beta = 0.75f, .bias = 2.0f, .size = 5),
     IN(FR(-9, 9, 2, 7, 4, 3)), OUT(S(2, 7, 4, 3))},
    {"LRN size 4 (uneven window), strong", MPS_OP_LRN, P(lrn, .alpha = 0.5f, .beta = 0.6f, .bias = 1.0f, .size = 4),
     IN(F(1, 6, 5)), OUT(S(1, 6, 5))},
    {"InstanceNormalization 4-D", MPS_OP_INSTANCE_NORM, IN(F(2, 3, 5, 7), F(3), F(3)), OUT(S(2, 3, 5, 7))},
    {"InstanceNormalization 3-D, offset values, eps 1e-2", MPS_OP_INSTANCE_NORM, P(norm, .epsilon = 1e-2f),
     IN(FR(100, 101, 1, 4, 9), F(4), F(4)), OUT(S(1, 4, 9))},
    /* planes of several 4096-element chunks (cuda merges the chunks' statistics), one far from 0 */
    {"InstanceNormalization, planes of 5250", MPS_OP_INSTANCE_NORM, IN(F(1, 2, 70, 75), F(2), F(2)),
     OUT(S(1, 2, 70, 75))},
    {"InstanceNormalization, planes of 9000 at 100..101", MPS_OP_INSTANCE_NORM,
     IN(FR(100, 101, 1, 3, 90, 100), F(3), F(3)), OUT(S(1, 3, 90, 100))},
    {"InstanceNormalization 5-D", MPS_OP_INSTANCE_NORM, IN(F(1, 2, 3, 4, 5), F(2), F(2)), OUT(S(1, 2, 3, 4, 5))},
    {"BatchNormalization 2-D eps 1e-3", MPS_OP_BATCH_NORM, P(norm, .epsilon = 1e-3f),
     IN(F(4, 3), F(3), F(3), F(3), FR(0.5, 2, 3)), OUT(S(4, 3))},
    {"LayerNormalization last axis", MPS_OP_LAYER_NORM, P(norm, .axis = -1, .epsilon = 1e-5f),
     IN(F(2, 3, 8), F(8), F(8)), OUT(S(2, 3, 8))},
    {"LayerNormalization axis 1, mean and inv std", MPS_OP_LAYER_NORM, P(norm, .axis = 1, .epsilon = 1e-5f),
     IN(F(2, 3, 4), F(3, 4)), OUT(S(2, 3, 4), S(2, 1, 1), S(2, 1, 1))},
    {"Softmax last axis", MPS_OP_SOFTMAX, P(norm, .axis = -1), IN(FR(-5, 5, 3, 10)), OUT(S(3, 10))},
    {"Softmax middle axis", MPS_OP_SOFTMAX, P(norm, .axis = 1), IN(FR(-5, 5, 2, 5, 3)), OUT(S(2, 5, 3))},
    {"Softmax axis 0", MPS_OP_SOFTMAX, P(norm, .axis = 0), IN(F(4, 3)), OUT(S(4, 3))},
    {"LogSoftmax last axis", MPS_OP_LOG_SOFTMAX, P(norm, .axis = -1), IN(FR(-5, 5, 3, 10)), OUT(S(3, 10))},
    {"LogSoftmax middle axis", MPS_OP_LOG_SOFTMAX, P(norm, .axis = 1), IN(F(2, 4, 3)), OUT(S(2, 4, 3))},
    /* rows longer than a warp (cuda: 32 threads per row, each over every 32nd element) */
    {"Softmax 1000 classes", MPS_OP_SOFTMAX, P(norm, .axis = -1), IN(FR(-8, 8, 3, 1000)), OUT(S(3, 1000))},
    {"LogSoftmax 70 along a middle axis", MPS_OP_LOG_SOFTMAX, P(norm, .axis = 1), IN(FR(-8, 8, 2, 70, 3)),
     OUT(S(2, 70, 3))},
    /* elementwise unary */
    {"Relu", MPS_OP_RELU, IN(F(3, 7)), OUT(S(3, 7))},
    {"LeakyRelu alpha 0.1", MPS_OP_LEAKY_RELU, P(act, .alpha = 0.1f), IN(F(2, 3, 4)), OUT(S(2, 3, 4))},
    {"Elu", MPS_OP_ELU, IN(FR(-3, 3, 2, 9)), OUT(S(2, 9))},
    {"Selu", MPS_OP_SELU, IN(FR(-3, 3, 2, 9)), OUT(S(2, 9))},
    {"Sigmoid", MPS_OP_SIGMOID, IN(FR(-8, 8, 4, 5)), OUT(S(4, 5))},
    {"HardSigmoid", MPS_OP_HARD_SIGMOID, IN(FR(-5, 5, 4, 5)), OUT(S(4, 5))},
    {"HardSwish", MPS_OP_HARD_SWISH, IN(FR(-5, 5, 4, 5)), OUT(S(4, 5))},
    {"Tanh", MPS_OP_TANH, IN(FR(-3, 3, 4, 5)), OUT(S(4, 5))},
    {"Softplus", MPS_OP_SOFTPLUS, IN(FR(-10, 10, 4, 5)), OUT(S(4, 5))},
    {"Softsign", MPS_OP_SOFTSIGN, IN(FR(-5, 5, 4, 5)), OUT(S(4, 5))},
    {"Gelu", MPS_OP_GELU, IN(FR(-4, 4, 4, 5)), OUT(S(4, 5))},
    {"Gelu tanh", MPS_OP_GELU, P(act, .beta = 1), IN(FR(-4, 4, 4, 5)), OUT(S(4, 5))},
    {"Erf", MPS_OP_ERF, IN(FR(-2, 2, 4, 5)), OUT(S(4, 5))},
    /* the trigonometric and hyperbolic functions over their domains (Tan short of its poles) */
    {"Sin", MPS_OP_SIN, IN(FR(-7, 7, 4, 9)), OUT(S(4, 9))},
    {"Cos", MPS_OP_COS, IN(FR(-7, 7, 4, 9)), OUT(S(4, 9))},
    {"Tan", MPS_OP_TAN, IN(FR(-1.4, 1.4, 4, 9)), OUT(S(4, 9))},
    {"Asin", MPS_OP_ASIN, IN(FR(-0.99, 0.99, 4, 9)), OUT(S(4, 9))},
    {"Acos", MPS_OP_ACOS, IN(FR(-0.99, 0.99, 4, 9)), OUT(S(4, 9))},
    {"Atan", MPS_OP_ATAN, IN(FR(-9, 9, 4, 9)), OUT(S(4, 9))},
    {"Sinh", MPS_OP_SINH, IN(FR(-4, 4, 4, 9)), OUT(S(4, 9))},
    {"Cosh", MPS_OP_COSH, IN(FR(-4, 4, 4, 9)), OUT(S(4, 9))},
    {"Asinh", MPS_OP_ASINH, IN(FR(-9, 9, 4, 9)), OUT(S(4, 9))},
    {"Acosh", MPS_OP_ACOSH, IN(FR(1, 9, 4, 9)), OUT(S(4, 9))},
    {"Atanh", MPS_OP_ATANH, IN(FR(-0.99, 0.99, 4, 9)), OUT(S(4, 9))},
    {"Exp", MPS_OP_EXP, IN(FR(-3, 3, 4, 5)), OUT(S(4, 5))},
    {"Log", MPS_OP_LOG, IN(FR(0.1, 3, 4, 5)), OUT(S(4, 5))},
    {"Sqrt", MPS_OP_SQRT, IN(FR(0.1, 3, 4, 5)), OUT(S(4, 5))},
    {"Abs", MPS_OP_ABS, IN(F(4, 5)), OUT(S(4, 5))},
    {"Neg", MPS_OP_NEG, IN(F(4, 5)), OUT(S(4, 5))},
    {"Neg i64", MPS_OP_NEG, IN(IR(MPS_I64, -99, 99, 4, 5)), OUT(S(4, 5))},
    {"Abs i8", MPS_OP_ABS, IN(IR(MPS_I8, -127, 127, 9)), OUT(S(9))},
    {"Sign i32", MPS_OP_SIGN, IN(IR(MPS_I32, -3, 3, 9)), OUT(S(9))},
    {"Sign f64", MPS_OP_SIGN, IN(IR(MPS_F64, -1, 1, 9)), OUT(S(9))},
    {"Relu i16", MPS_OP_RELU, IN(IR(MPS_I16, -99, 99, 9)), OUT(S(9))},
    {"Clip u8 to [20, 200]", MPS_OP_CLIP,
     IN(IR(MPS_U8, 0, 255, 12),
        {.dt = MPS_U8, .shape = SCALAR, .is_const = true, .vals = (const double[]){20}, .n_vals = 1},
        {.dt = MPS_U8, .shape = SCALAR, .is_const = true, .vals = (const double[]){200}, .n_vals = 1}),
     OUT(S(12))},
    {"Clip i8, no bounds", MPS_OP_CLIP, IN(IR(MPS_I8, -128, 127, 12)), OUT(S(12))},
    {"Clip f64 to [-0.5, 0.3]", MPS_OP_CLIP,
     IN(IR(MPS_F64, -1, 1, 12),
        {.dt = MPS_F64, .shape = SCALAR, .is_const = true, .vals = (const double[]){-0.5}, .n_vals = 1},
        {.dt = MPS_F64, .shape = SCALAR, .is_const = true, .vals = (const double[]){0.3}, .n_vals = 1}),
     OUT(S(12))},
    {"Reciprocal", MPS_OP_RECIPROCAL, IN(FR(0.5, 2, 4, 5)), OUT(S(4, 5))},
    {"Floor", MPS_OP_FLOOR, IN(FR(-3, 3, 4, 5)), OUT(S(4, 5))},
    {"Ceil", MPS_OP_CEIL, IN(FR(-3, 3, 4, 5)), OUT(S(4, 5))},
    {"Sign", MPS_OP_SIGN, IN(FR(-3, 3, 4, 5)), OUT(S(4, 5))},
    {"Sign of 0, inf", MPS_OP_SIGN, IN(CFL(0, 2, -INFINITY, -7)), OUT(S(4))},
    {"Round: halves to even", MPS_OP_ROUND, IN(CFL(0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6, 7)), OUT(S(10))},
    {"Round random", MPS_OP_ROUND, IN(FR(-9, 9, 6, 7)), OUT(S(6, 7))},
    {"ThresholdedRelu alpha 0.5", MPS_OP_THRESHOLDED_RELU, P(act, .alpha = 0.5f), IN(FR(-2, 2, 5, 6)), OUT(S(5, 6))},
    {"Shrink lambd 0.3 bias 0.1", MPS_OP_SHRINK, P(act, .alpha = 0.3f, .beta = 0.1f), IN(FR(-1, 1, 5, 6)),
     OUT(S(5, 6))},
    {"Clip min and max", MPS_OP_CLIP, IN(F(4, 5), CF_SCALAR(-0.5), CF_SCALAR(0.3)), OUT(S(4, 5))},
    {"Clip max only", MPS_OP_CLIP, IN(F(4, 5), OMIT, CF_SCALAR(0.2)), OUT(S(4, 5))},
    {"Clip no bounds", MPS_OP_CLIP, IN(F(4, 5)), OUT(S(4, 5))},
    {"Identity i64", MPS_OP_IDENTITY, IN(IR(MPS_I64, -9, 9, 3, 4)), OUT(S(3, 4))},
    {"Dropout (inference)", MPS_OP_DROPOUT, IN(F(3, 4)), OUT(S(3, 4))},
    {"Cast f32 to i64 truncates", MPS_OP_CAST, P(cast, .to = MPS_I64), IN(FR(-5, 5, 3, 4)), OUT(S(3, 4))},
    {"Cast i64 to f32", MPS_OP_CAST, P(cast, .to = MPS_F32), IN(IR(MPS_I64, -100, 100, 3, 4)), OUT(S(3, 4))},
    {"Cast f32 to f16", MPS_OP_CAST, P(cast, .to = MPS_F16), IN(FR(-100, 100, 3, 4)), OUT(S(3, 4)), .tol = 1e-6},
    {"Cast f32 to f64", MPS_OP_CAST, P(cast, .to = MPS_F64), IN(FR(-9, 9, 3, 4)), OUT(S(3, 4))},
    {"Cast f32 to bool", MPS_OP_CAST, P(cast, .to = MPS_BOOL), IN(FR(-1, 1, 3, 4)), OUT(S(3, 4))},
    {"Cast i64 to i32", MPS_OP_CAST, P(cast, .to = MPS_I32), IN(IR(MPS_I64, -1000, 1000, 5)), OUT(S(5))},
    {"Cast u64 to f32", MPS_OP_CAST, P(cast, .to = MPS_F32), IN(IR(MPS_U64, 0, 1e6, 5)), OUT(S(5))},
    {"Cast f32 to i8", MPS_OP_CAST, P(cast, .to = MPS_I8), IN(FR(-120, 120, 5)), OUT(S(5))},
    {"Cast i16 to u32", MPS_OP_CAST, P(cast, .to = MPS_U32), IN(IR(MPS_I16, 0, 30000, 5)), OUT(S(5))},
    {"Cast u16 to i64", MPS_OP_CAST, P(cast, .to = MPS_I64), IN(IR(MPS_U16, 0, 65535, 5)), OUT(S(5))},
    {"Cast f32 to bf16, to nearest even", MPS_OP_CAST, P(cast, .to = MPS_BF16), IN(FR(-100, 100, 3, 4)), OUT(S(3, 4))},
    {"Cast bf16 to f64", MPS_OP_CAST, P(cast, .to = MPS_F64), IN(IR(MPS_BF16, -100, 100, 3, 4)), OUT(S(3, 4))},
    /* elementwise with broadcasting */
    {"Add same shape", MPS_OP_ADD, IN(F(2, 3, 4), F(2, 3, 4)), OUT(S(2, 3, 4))},
    {"Add broadcast last axis", MPS_OP_ADD, IN(F(2, 3, 4), F(4)), OUT(S(2, 3, 4))},
    {"Add scalar", MPS_OP_ADD, IN(F(2, 3), FS), OUT(S(2, 3))},
    {"Sub broadcast both ways", MPS_OP_SUB, IN(F(2, 1, 4), F(3, 1)), OUT(S(2, 3, 4))},
    {"Mul size-1 dims", MPS_OP_MUL, IN(F(1), F(2, 3)), OUT(S(2, 3))},
    {"Div", MPS_OP_DIV, IN(F(3, 4), FR(0.5, 2, 3, 1)), OUT(S(3, 4))},
    {"Pow", MPS_OP_POW, IN(FR(0.5, 2, 3, 4), FR(-2, 2, 4)), OUT(S(3, 4))},
    {"Max of three", MPS_OP_MAX, IN(F(2, 3), F(3), F(2, 1)), OUT(S(2, 3))},
    {"Min of two", MPS_OP_MIN, IN(F(4, 1, 3), F(2, 1)), OUT(S(4, 2, 3))},
    {"Sum of three", MPS_OP_SUM, IN(F(2, 3), F(2, 3), F(3)), OUT(S(2, 3))},
    {"Sum of one", MPS_OP_SUM, IN(F(2, 3)), OUT(S(2, 3))},
    {"Mean of two", MPS_OP_MEAN, IN(F(2, 3), F(1, 3)), OUT(S(2, 3))},
    {"Mul by a per-channel scale (squeeze-excitation), rows of 37", MPS_OP_MUL, IN(F(2, 5, 37), F(2, 5, 1)),
     OUT(S(2, 5, 37))},
    {"Div of a scalar by rows of 37 (the first operand broadcast)", MPS_OP_DIV, IN(FR(0.5, 2, 3, 1), FR(0.5, 2, 3, 37)),
     OUT(S(3, 37))},
    {"Max with NaNs on both sides, 20 contiguous (a vector loop)", MPS_OP_MAX,
     IN(CFL(1, NAN, -2, 0, NAN, 3, -INFINITY, 5, 6, NAN, 0.5, 0.25, -1, -3, NAN, 2, 7, 8, -9, 10), F(20)), OUT(S(20))},
    {"Min with NaNs, broadcast across rows of 20", MPS_OP_MIN,
     IN(F(3, 20), CFL(1, NAN, -2, 0, NAN, 3, -INFINITY, 5, 6, NAN, 0.5, 0.25, -1, -3, NAN, 2, 7, 8, -9, 10)),
     OUT(S(3, 20))},
    /* with the activation the fuse pass puts into a two-input f32 Add, Sub, Mul, Div */
    {"Add+Relu residual", MPS_OP_ADD, P(binary, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(F(2, 4, 5, 5), F(2, 4, 5, 5)), OUT(S(2, 4, 5, 5))},
    {"Add+Relu broadcast rows", MPS_OP_ADD, P(binary, .act = {.on = true, .op = MPS_OP_RELU}), IN(F(3, 70), F(70)),
     OUT(S(3, 70))},
    /* rows over 4096 elements are split into items for the threads (cpu): broadcast, and one flat run */
    {"Add+Relu broadcast long rows", MPS_OP_ADD, P(binary, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(F(12, 5000), F(5000)), OUT(S(12, 5000))},
    {"Mul+Tanh same shape, flat", MPS_OP_MUL, P(binary, .act = {.on = true, .op = MPS_OP_TANH}),
     IN(F(2, 3, 9001), F(2, 3, 9001)), OUT(S(2, 3, 9001))},
    {"Sub+Clip broadcast both ways", MPS_OP_SUB, P(binary, .act = {.on = true, .op = MPS_OP_CLIP, .p = {-0.3f, 0.4f}}),
     IN(F(2, 1, 4), F(3, 1)), OUT(S(2, 3, 4))},
    {"Mul+Sigmoid", MPS_OP_MUL, P(binary, .act = {.on = true, .op = MPS_OP_SIGMOID}), IN(F(1), F(2, 3)), OUT(S(2, 3))},
    {"Div+LeakyRelu", MPS_OP_DIV, P(binary, .act = {.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.2f}}),
     IN(F(3, 4), FR(0.5, 2, 3, 1)), OUT(S(3, 4))},
    {"Add i64", MPS_OP_ADD, IN(IR(MPS_I64, -50, 50, 3, 4), IR(MPS_I64, -50, 50, 4)), OUT(S(3, 4))},
    {"Mul i64 broadcast", MPS_OP_MUL, IN(IR(MPS_I64, -50, 50, 3, 1), IR(MPS_I64, -50, 50, 1, 4)), OUT(S(3, 4))},
    {"Div i64 truncates", MPS_OP_DIV, IN(IR(MPS_I64, -20, 20, 8), IR(MPS_I64, 1, 5, 8)), OUT(S(8))},
    {"Sub i32", MPS_OP_SUB, IN(IR(MPS_I32, -50, 50, 6), IR(MPS_I32, -50, 50, 6)), OUT(S(6))},
    {"Mod f32 fmod", MPS_OP_MOD, P(binary, .fmod = true), IN(FR(-9, 9, 4, 5), FR(0.5, 3, 5)), OUT(S(4, 5))},
    {"Mod f32, the divisor's sign", MPS_OP_MOD, P(binary, .fmod = false), IN(FR(-9, 9, 4, 5), FR(-3, 3, 4, 1)),
     OUT(S(4, 5))},
    {"Mod i64, the divisor's sign, by 0", MPS_OP_MOD, P(binary, .fmod = false),
     IN(IR(MPS_I64, -20, 20, 6, 4), IR(MPS_I64, -4, 4, 4)), OUT(S(6, 4))},
    {"Mod i32 fmod", MPS_OP_MOD, P(binary, .fmod = true), IN(IR(MPS_I32, -20, 20, 8), IR(MPS_I32, -5, 5, 8)),
     OUT(S(8))},
    /* the other number dtypes (cpu only: the GPU backends refuse them, backend.h) */
    {"Add u8 broadcast", MPS_OP_ADD, IN(IR(MPS_U8, 0, 120, 3, 4), IR(MPS_U8, 0, 120, 4)), OUT(S(3, 4))},
    {"Sub i8", MPS_OP_SUB, IN(IR(MPS_I8, -60, 60, 4, 3), IR(MPS_I8, -60, 60, 3)), OUT(S(4, 3))},
    {"Mul u16", MPS_OP_MUL, IN(IR(MPS_U16, 0, 250, 2, 5), IR(MPS_U16, 0, 250, 2, 1)), OUT(S(2, 5))},
    {"Div u32 truncates", MPS_OP_DIV, IN(IR(MPS_U32, 0, 4000, 7), IR(MPS_U32, 1, 9, 7)), OUT(S(7))},
    {"Mod u64", MPS_OP_MOD, IN(IR(MPS_U64, 0, 4000, 7), IR(MPS_U64, 1, 9, 7)), OUT(S(7))},
    {"Max i16 of three", MPS_OP_MAX,
     IN(IR(MPS_I16, -999, 999, 2, 3), IR(MPS_I16, -999, 999, 3), IR(MPS_I16, -999, 999, 2, 1)), OUT(S(2, 3))},
    {"Min f64", MPS_OP_MIN, IN(IR(MPS_F64, -5, 5, 3, 4), IR(MPS_F64, -5, 5, 3, 4)), OUT(S(3, 4))},
    {"Div f64 broadcast", MPS_OP_DIV, IN(IR(MPS_F64, -5, 5, 3, 4), IR(MPS_F64, 0.5, 2, 1, 4)), OUT(S(3, 4))},
    {"Mean f64 of two", MPS_OP_MEAN, IN(IR(MPS_F64, -5, 5, 2, 3), IR(MPS_F64, -5, 5, 3)), OUT(S(2, 3))},
    {"BitShift left u8", MPS_OP_BIT_SHIFT, IN(IR(MPS_U8, 0, 31, 3, 4), IR(MPS_U8, 0, 3, 4)), OUT(S(3, 4))},
    {"BitShift right u64", MPS_OP_BIT_SHIFT, P(binary, .right = true), IN(IR(MPS_U64, 0, 1e6, 6), IR(MPS_U64, 0, 9, 6)),
     OUT(S(6))},
    {"BitShift left u32 broadcast", MPS_OP_BIT_SHIFT, IN(IR(MPS_U32, 0, 999, 2, 3), IR(MPS_U32, 0, 12, 1)),
     OUT(S(2, 3))},
    {"Pow f32 by i64", MPS_OP_POW, IN(FR(0.5, 2, 3, 4), IR(MPS_I64, -3, 3, 4)), OUT(S(3, 4))},
    {"Pow i64 by i64", MPS_OP_POW, IN(IR(MPS_I64, -6, 6, 5), IR(MPS_I64, 0, 5, 5)), OUT(S(5))},
    {"Pow i32 by f32", MPS_OP_POW, IN(IR(MPS_I32, -4, 4, 6), CFL(0, 1, 2, 3, 1, 2)), OUT(S(6))},
    {"PRelu channel slope", MPS_OP_PRELU, IN(F(2, 3, 4, 4), F(3, 1, 1)), OUT(S(2, 3, 4, 4))},
    {"PRelu scalar slope", MPS_OP_PRELU, IN(F(2, 5), F(1)), OUT(S(2, 5))},
    /* comparisons and logic: bool results, compared exactly */
    {"Greater f32 broadcast", MPS_OP_GREATER, IN(F(2, 3, 4), F(4)), OUT(S(2, 3, 4))},
    {"Less i64 broadcast", MPS_OP_LESS, IN(IR(MPS_I64, -3, 3, 3, 4), IR(MPS_I64, -3, 3, 3, 1)), OUT(S(3, 4))},
    {"Equal i32 (many ties)", MPS_OP_EQUAL, IN(IR(MPS_I32, -2, 2, 5, 6), IR(MPS_I32, -2, 2, 6)), OUT(S(5, 6))},
    {"Equal f32: a NaN equals nothing", MPS_OP_EQUAL, IN(CFL(0.5, NAN, -1, 2), F(3, 4)), OUT(S(3, 4))},
    {"Equal bool", MPS_OP_EQUAL, IN(IR(MPS_BOOL, 0, 1, 3, 4), IR(MPS_BOOL, 0, 1, 4)), OUT(S(3, 4))},
    {"Less u32 (many ties)", MPS_OP_LESS, IN(IR(MPS_U32, 0, 3, 5, 6), IR(MPS_U32, 0, 3, 6)), OUT(S(5, 6))},
    {"GreaterOrEqual i8", MPS_OP_GREATER_OR_EQUAL, IN(IR(MPS_I8, -3, 3, 5, 6), IR(MPS_I8, -3, 3, 6)), OUT(S(5, 6))},
    {"Equal f64", MPS_OP_EQUAL,
     IN(IR(MPS_F64, -2, 2, 3, 4),
        {.dt = MPS_F64, .shape = {1, {4}}, .is_const = true, .vals = (const double[]){0.5, -1, 2, 1}, .n_vals = 4}),
     OUT(S(3, 4))},
    {"GreaterOrEqual i64 ties", MPS_OP_GREATER_OR_EQUAL, IN(IR(MPS_I64, -2, 2, 4, 5), IR(MPS_I64, -2, 2, 1, 5)),
     OUT(S(4, 5))},
    {"LessOrEqual f32 with NaN and -inf", MPS_OP_LESS_OR_EQUAL, IN(CFL(1, NAN, -0.5, -INFINITY), F(2, 4)),
     OUT(S(2, 4))},
    {"And bool broadcast", MPS_OP_AND, IN(IR(MPS_BOOL, 0, 1, 2, 3, 4), IR(MPS_BOOL, 0, 1, 3, 1)), OUT(S(2, 3, 4))},
    {"Or bool", MPS_OP_OR, IN(IR(MPS_BOOL, 0, 1, 6, 5), IR(MPS_BOOL, 0, 1, 6, 5)), OUT(S(6, 5))},
    {"Xor bool broadcast", MPS_OP_XOR, IN(IR(MPS_BOOL, 0, 1, 4, 1), IR(MPS_BOOL, 0, 1, 1, 7)), OUT(S(4, 7))},
    {"Not bool", MPS_OP_NOT, IN(IR(MPS_BOOL, 0, 1, 3, 5)), OUT(S(3, 5))},
    {"IsNaN", MPS_OP_IS_NAN, IN(CFL(1, NAN, INFINITY, -INFINITY, 0, -NAN)), OUT(S(6))},
    {"IsInf both", MPS_OP_IS_INF, IN(CFL(1, NAN, INFINITY, -INFINITY, 0)), OUT(S(5))},
    {"IsInf positive only", MPS_OP_IS_INF, P(isinf, .positive = true), IN(CFL(1, NAN, INFINITY, -INFINITY, 0)),
     OUT(S(5))},
    {"IsInf negative only", MPS_OP_IS_INF, P(isinf, .negative = true), IN(CFL(1, NAN, INFINITY, -INFINITY, 0)),
     OUT(S(5))},
    {"Where f32, three-way broadcast", MPS_OP_WHERE, IN(IR(MPS_BOOL, 0, 1, 2, 1, 4), F(3, 4), F(2, 3, 1)),
     OUT(S(2, 3, 4))},
    {"Where i64", MPS_OP_WHERE, IN(IR(MPS_BOOL, 0, 1, 5), IR(MPS_I64, -9, 9, 5), IR(MPS_I64, -9, 9, 1)), OUT(S(5))},
    /* a run-time If's outputs (cpu only: the GPU backends refuse it), the condition random, then a true and a
       false one given as constants */
    {"If, two outputs", MPS_OP_IF,
     IN(IR(MPS_BOOL, 0, 1, 1), F(3, 4), IR(MPS_I64, -9, 9, 2), F(3, 4), IR(MPS_I64, -9, 9, 2)), OUT(S(3, 4), S(2))},
    {"If, true", MPS_OP_IF, IN(CB(1), F(2, 5), F(2, 5)), OUT(S(2, 5))},
    {"If, false", MPS_OP_IF, IN(CB(0), F(2, 5), F(2, 5)), OUT(S(2, 5))},
    /* recurrent nets (cpu and cuda; the Metal lowering refuses them by name) */
    {"LSTM forward, defaults", MPS_OP_LSTM, P(rnn, .hidden = 4, .act = ACTS(SIGMOID, TANH, TANH)),
     IN(F(5, 2, 3), F(1, 16, 3), F(1, 16, 4)), OUT(S(5, 1, 2, 4), S(1, 2, 4), S(1, 2, 4))},
    {"LSTM bidirectional, B, sequence_lens, initial h and c, peepholes, clip", MPS_OP_LSTM,
     P(rnn, .hidden = 3, .direction = 2, .clip = 0.8f, .act = ACTS(SIGMOID, TANH, TANH)),
     IN(F(6, 3, 5), F(2, 12, 5), F(2, 12, 3), F(2, 24), IR(MPS_I32, 1, 6, 3), F(2, 3, 3), F(2, 3, 3), F(2, 9)),
     OUT(S(6, 2, 3, 3), S(2, 3, 3), S(2, 3, 3))},
    {"LSTM bidirectional, B, initial h and c, peepholes, clip, full-length sequence_lens", MPS_OP_LSTM,
     P(rnn, .hidden = 3, .direction = 2, .clip = 0.8f, .act = ACTS(SIGMOID, TANH, TANH)),
     IN(F(6, 3, 5), F(2, 12, 5), F(2, 12, 3), F(2, 24), CI32(6, 6, 6), F(2, 3, 3), F(2, 3, 3), F(2, 9)),
     OUT(S(6, 2, 3, 3), S(2, 3, 3), S(2, 3, 3))},
    {"GRU bidirectional, B, initial h, Affine and LeakyRelu, clip", MPS_OP_GRU,
     P(rnn, .hidden = 3, .direction = 2, .clip = 1.5f,
       .act = {{MPS_RNN_AFFINE, 0.5f, 0.2f},
               {MPS_RNN_LEAKY_RELU, 0.1f},
               {0},
               {MPS_RNN_SIGMOID},
               {MPS_RNN_THRESHOLDED_RELU, 0.1f}}),
     IN(F(4, 2, 3), F(2, 9, 3), F(2, 9, 3), F(2, 18), OMIT, F(2, 2, 3)), OUT(S(4, 2, 2, 3), S(2, 2, 3))},
    {"LSTM batch first, reverse, input_forget, HardSigmoid, ScaledTanh, Softsign", MPS_OP_LSTM,
     P(rnn, .hidden = 2, .direction = 1, .batch_first = true, .input_forget = true,
       .act = {{MPS_RNN_HARD_SIGMOID, 0.3f, 0.4f}, {MPS_RNN_SCALED_TANH, 1.5f, 0.7f}, {MPS_RNN_SOFTSIGN}}),
     IN(F(2, 4, 3), F(1, 8, 3), F(1, 8, 2), F(1, 16), OMIT, F(2, 1, 2), F(2, 1, 2)),
     OUT(S(2, 4, 1, 2), S(2, 1, 2), S(2, 1, 2))},
    {"GRU bidirectional, B, sequence_lens (one empty), initial h", MPS_OP_GRU,
     P(rnn, .hidden = 3, .direction = 2, .act = ACTS(SIGMOID, TANH, TANH)),
     IN(F(4, 2, 3), F(2, 9, 3), F(2, 9, 3), F(2, 18), CI32(0, 3), F(2, 2, 3)), OUT(S(4, 2, 2, 3), S(2, 2, 3))},
    {"GRU linear_before_reset, reverse, Elu and Softsign", MPS_OP_GRU,
     P(rnn, .hidden = 2, .direction = 1, .linear_before_reset = true, .act = {{MPS_RNN_SOFTSIGN}, {MPS_RNN_ELU, 0.5f}}),
     IN(F(5, 3, 4), F(1, 6, 4), F(1, 6, 2), F(1, 12)), OUT(S(5, 1, 3, 2), S(1, 3, 2))},
    {"RNN batch first, Relu, B", MPS_OP_RNN, P(rnn, .hidden = 5, .batch_first = true, .act = {{MPS_RNN_RELU}}),
     IN(F(3, 4, 2), F(1, 5, 2), F(1, 5, 5), F(1, 10)), OUT(S(3, 4, 1, 5), S(3, 1, 5))},
    /* constant W and R: packed at compile for the micro-kernels (odd sizes: partial panels) */
    {"LSTM, constant W and R, batch 3", MPS_OP_LSTM, P(rnn, .hidden = 13, .act = ACTS(SIGMOID, TANH, TANH)),
     IN(F(6, 3, 7), CF(1, 52, 7), CF(1, 52, 13), CF(1, 104)), OUT(S(6, 1, 3, 13), S(1, 3, 13), S(1, 3, 13))},
    {"GRU bidirectional, constant W and R, r * h before R", MPS_OP_GRU,
     P(rnn, .hidden = 9, .direction = 2, .act = ACTS(SIGMOID, TANH, TANH)),
     IN(F(5, 2, 6), CF(2, 27, 6), CF(2, 27, 9), CF(2, 54)), OUT(S(5, 2, 2, 9), S(2, 2, 9))},
    {"RNN, constant W and R, batch first", MPS_OP_RNN,
     P(rnn, .hidden = 17, .batch_first = true, .act = {{MPS_RNN_TANH}}), IN(F(2, 4, 5), CF(1, 17, 5), CF(1, 17, 17)),
     OUT(S(2, 4, 1, 17), S(2, 1, 17))},
    {"RNN bidirectional, initial h, Tanh and Softplus", MPS_OP_RNN,
     P(rnn, .hidden = 3, .direction = 2, .act = {{MPS_RNN_TANH}, {0}, {0}, {MPS_RNN_SOFTPLUS}}),
     IN(F(4, 2, 3), F(2, 3, 3), F(2, 3, 3), OMIT, OMIT, F(2, 2, 3)), OUT(S(4, 2, 2, 3), S(2, 2, 3))},
    /* losses: targets drawn over the classes and, where one is set, the ignore_index */
    {"NegativeLogLikelihoodLoss none", MPS_OP_NLL_LOSS, P(loss, .reduction = MPS_LOSS_NONE),
     IN(F(3, 5), IR(MPS_I64, 0, 4, 3)), OUT(S(3))},
    {"NegativeLogLikelihoodLoss mean, weights, N C d1 d2", MPS_OP_NLL_LOSS, P(loss, .reduction = MPS_LOSS_MEAN),
     IN(F(2, 4, 3, 2), IR(MPS_I64, 0, 3, 2, 3, 2), FR(0.1, 2, 4)), OUT(SCALAR)},
    {"NegativeLogLikelihoodLoss sum, i32 targets, ignore_index -1", MPS_OP_NLL_LOSS,
     P(loss, .reduction = MPS_LOSS_SUM, .has_ignore = true, .ignore_index = -1),
     IN(F(4, 3, 5), IR(MPS_I32, -1, 2, 4, 5)), OUT(SCALAR)},
    {"NegativeLogLikelihoodLoss mean, weights, ignore_index 2", MPS_OP_NLL_LOSS,
     P(loss, .reduction = MPS_LOSS_MEAN, .has_ignore = true, .ignore_index = 2),
     IN(F(6, 4), IR(MPS_I64, 0, 3, 6), FR(0.1, 2, 4)), OUT(SCALAR)},
    {"SoftmaxCrossEntropyLoss mean and log_prob", MPS_OP_SCE_LOSS, P(loss, .reduction = MPS_LOSS_MEAN),
     IN(FR(-4, 4, 4, 6), IR(MPS_I64, 0, 5, 4)), OUT(SCALAR, S(4, 6))},
    {"SoftmaxCrossEntropyLoss none, weights, ignore_index 2, N C d1", MPS_OP_SCE_LOSS,
     P(loss, .reduction = MPS_LOSS_NONE, .has_ignore = true, .ignore_index = 2),
     IN(FR(-4, 4, 2, 3, 4), IR(MPS_I64, 0, 2, 2, 4), FR(0.1, 2, 3)), OUT(S(2, 4), S(2, 3, 4))},
    {"SoftmaxCrossEntropyLoss sum, N C d1 d2", MPS_OP_SCE_LOSS, P(loss, .reduction = MPS_LOSS_SUM),
     IN(FR(-4, 4, 3, 5, 2, 2), IR(MPS_I32, 0, 4, 3, 2, 2)), OUT(SCALAR)},
    /* reductions */
    {"ReduceMean axis 1 keepdims", MPS_OP_REDUCE_MEAN, P(reduce, .keepdims = true), IN(F(2, 3, 4), CI(1)),
     OUT(S(2, 1, 4))},
    {"ReduceSum axes 0 2", MPS_OP_REDUCE_SUM, P(reduce, .keepdims = false), IN(F(2, 3, 4), CI(0, 2)), OUT(S(3))},
    {"ReduceSum f64 axes 0 2", MPS_OP_REDUCE_SUM, P(reduce, .keepdims = false),
     IN(IR(MPS_F64, -9, 9, 2, 3, 4), CI(0, 2)), OUT(S(3))},
    {"ReduceLogSumExp f64 axis 1", MPS_OP_REDUCE_LOG_SUM_EXP, P(reduce, .keepdims = true),
     IN(IR(MPS_F64, -9, 9, 2, 3, 4), CI(1)), OUT(S(2, 1, 4))},
    {"ReduceMax all axes", MPS_OP_REDUCE_MAX, P(reduce, .keepdims = true), IN(F(2, 3, 4)), OUT(S(1, 1, 1))},
    {"ReduceMin axis -1", MPS_OP_REDUCE_MIN, P(reduce, .keepdims = false), IN(F(2, 3, 4), CI(-1)), OUT(S(2, 3))},
    {"ReduceSum noop_with_empty_axes", MPS_OP_REDUCE_SUM, P(reduce, .keepdims = true, .noop_with_empty_axes = true),
     IN(F(2, 3), CI_EMPTY), OUT(S(2, 3))},
    {"ReduceProd axis 1", MPS_OP_REDUCE_PROD, P(reduce, .keepdims = true), IN(FR(0.5, 1.5, 3, 5, 2), CI(1)),
     OUT(S(3, 1, 2))},
    {"ReduceL1 axes 0 2 dropped", MPS_OP_REDUCE_L1, P(reduce, .keepdims = false), IN(F(2, 3, 4), CI(0, 2)), OUT(S(3))},
    {"ReduceL2 all axes", MPS_OP_REDUCE_L2, P(reduce, .keepdims = true), IN(F(2, 3, 4)), OUT(S(1, 1, 1))},
    {"ReduceSumSquare axis -1", MPS_OP_REDUCE_SUM_SQUARE, P(reduce, .keepdims = false), IN(F(2, 3, 7), CI(-1)),
     OUT(S(2, 3))},
    {"ReduceLogSum axis 0", MPS_OP_REDUCE_LOG_SUM, P(reduce, .keepdims = true), IN(FR(0.1, 2, 4, 3), CI(0)),
     OUT(S(1, 3))},
    /* exp(v) of these overflows even a double: the kernels must shift by the maximum */
    {"ReduceLogSumExp of large values", MPS_OP_REDUCE_LOG_SUM_EXP, P(reduce, .keepdims = true),
     IN(FR(700, 900, 2, 30), CI(1)), OUT(S(2, 1))},
    {"ReduceLogSumExp axes 1 2", MPS_OP_REDUCE_LOG_SUM_EXP, P(reduce, .keepdims = false), IN(F(3, 4, 5), CI(1, 2)),
     OUT(S(3))},
    {"ReduceProd of an empty axis is 1", MPS_OP_REDUCE_PROD, P(reduce, .keepdims = true), IN(F(2, 0, 3), CI(1)),
     OUT(S(2, 1, 3))},
    {"ReduceL2 of an empty axis is 0", MPS_OP_REDUCE_L2, P(reduce, .keepdims = false), IN(F(2, 0), CI(1)), OUT(S(2))},
    {"ReduceL1 noop_with_empty_axes: |x|", MPS_OP_REDUCE_L1, P(reduce, .keepdims = true, .noop_with_empty_axes = true),
     IN(F(2, 3), CI_EMPTY), OUT(S(2, 3))},
    /* layout and shape */
    {"Reshape with -1", MPS_OP_RESHAPE, IN(F(2, 3, 4), CI(4, -1)), OUT(S(4, 6))},
    {"Reshape with 0", MPS_OP_RESHAPE, IN(F(2, 3, 4), CI(0, 12)), OUT(S(2, 12))},
    {"Flatten axis 1", MPS_OP_FLATTEN, P(axis, .axis = 1), IN(F(2, 3, 4)), OUT(S(2, 12))},
    {"Flatten axis 0", MPS_OP_FLATTEN, P(axis, .axis = 0), IN(F(2, 3, 4)), OUT(S(1, 24))},
    {"Flatten axis -1", MPS_OP_FLATTEN, P(axis, .axis = -1), IN(F(2, 3, 4)), OUT(S(6, 4))},
    {"Flatten axis rank", MPS_OP_FLATTEN, P(axis, .axis = 3), IN(F(2, 3, 4)), OUT(S(24, 1))},
    {"Transpose default reverses", MPS_OP_TRANSPOSE, IN(F(2, 3, 4)), OUT(S(4, 3, 2))},
    {"Transpose perm 0 2 3 1", MPS_OP_TRANSPOSE, P(transpose, .n_perm = 4, .perm = {0, 2, 3, 1}), IN(F(2, 3, 4, 5)),
     OUT(S(2, 4, 5, 3))},
    {"Transpose perm 0 2 3 1, 2 x 40 x 33 x 31 (over the pool)", MPS_OP_TRANSPOSE,
     P(transpose, .n_perm = 4, .perm = {0, 2, 3, 1}), IN(F(2, 40, 33, 31)), OUT(S(2, 33, 31, 40))},
    {"Transpose i64", MPS_OP_TRANSPOSE, P(transpose, .n_perm = 2, .perm = {1, 0}), IN(IR(MPS_I64, 0, 99, 3, 5)),
     OUT(S(5, 3))},
    {"Squeeze axis 1", MPS_OP_SQUEEZE, IN(F(2, 1, 3), CI(1)), OUT(S(2, 3))},
    {"Squeeze all size-1", MPS_OP_SQUEEZE, IN(F(1, 2, 1, 3)), OUT(S(2, 3))},
    {"Squeeze axis -1", MPS_OP_SQUEEZE, IN(F(2, 3, 1), CI(-1)), OUT(S(2, 3))},
    {"Unsqueeze axis 0", MPS_OP_UNSQUEEZE, IN(F(3, 4), CI(0)), OUT(S(1, 3, 4))},
    {"Unsqueeze axes 1 -1", MPS_OP_UNSQUEEZE, IN(F(3, 4), CI(1, -1)), OUT(S(3, 1, 4, 1))},
    {"Concat axis 1 three inputs", MPS_OP_CONCAT, P(axis, .axis = 1), IN(F(2, 1, 3), F(2, 4, 3), F(2, 2, 3)),
     OUT(S(2, 7, 3))},
    {"Concat axis -1 i64", MPS_OP_CONCAT, P(axis, .axis = -1), IN(IR(MPS_I64, 0, 9, 2), IR(MPS_I64, 0, 9, 1)),
     OUT(S(3))},
    {"Concat axis 0", MPS_OP_CONCAT, P(axis, .axis = 0), IN(F(1, 4), F(3, 4)), OUT(S(4, 4))},
    {"Concat axis 1 of 4-D, 2 images (each part a run an image, cut in pieces over the pool)", MPS_OP_CONCAT,
     P(axis, .axis = 1), IN(F(2, 24, 30, 31), F(2, 9, 30, 31)), OUT(S(2, 33, 30, 31))},
    {"Split axis 2 of 4-D (rows of parts: strided runs)", MPS_OP_SPLIT, P(axis, .axis = 2),
     IN(F(2, 3, 50, 40), CI(20, 30)), OUT(S(2, 3, 20, 40), S(2, 3, 30, 40))},
    {"Split sizes", MPS_OP_SPLIT, P(axis, .axis = 1), IN(F(2, 5), CI(2, 3)), OUT(S(2, 2), S(2, 3))},
    {"Split equal", MPS_OP_SPLIT, P(axis, .axis = 0), IN(F(6, 2)), OUT(S(2, 2), S(2, 2), S(2, 2))},
    {"Split uneven last part", MPS_OP_SPLIT, P(axis, .axis = 0), IN(F(7)), OUT(S(3), S(3), S(1))},
    {"Slice rows", MPS_OP_SLICE, IN(F(5, 6), CI(1, 0), CI(4, 6)), OUT(S(3, 6))},
    {"Slice reverse", MPS_OP_SLICE, IN(F(5), CI(-1), CI(-100), CI(0), CI(-1)), OUT(S(5))},
    {"Slice step 2 axis -1", MPS_OP_SLICE, IN(F(4, 7), CI(1), CI(100), CI(-1), CI(2)), OUT(S(4, 3))},
    {"Slice step -2 from the end", MPS_OP_SLICE, IN(F(3, 8), CI(7), CI(0), CI(1), CI(-2)), OUT(S(3, 4))},
    {"Slice empty", MPS_OP_SLICE, IN(F(3, 5), CI(10), CI(20), CI(1)), OUT(S(3, 0))},
    {"Gather axis 0 negative indices", MPS_OP_GATHER, IN(F(5, 4), IR(MPS_I64, -5, 4, 3)), OUT(S(3, 4))},
    {"Gather axis 1 2-D indices", MPS_OP_GATHER, P(axis, .axis = 1), IN(F(3, 6, 2), IR(MPS_I64, 0, 5, 2, 2)),
     OUT(S(3, 2, 2, 2))},
    {"Gather scalar index", MPS_OP_GATHER, IN(F(4, 3), CI_SCALAR(-1)), OUT(S(3))},
    {"Gather i64 data, i32 indices", MPS_OP_GATHER, IN(IR(MPS_I64, 0, 99, 4), IR(MPS_I32, 0, 3, 2)), OUT(S(2))},
    {"Shape", MPS_OP_SHAPE, IN(F(2, 3, 4)), OUT(S(3))},
    {"Shape start 1", MPS_OP_SHAPE, P(shape, .start = 1, .end = INT64_MAX), IN(F(2, 3, 4)), OUT(S(2))},
    {"Shape end -1", MPS_OP_SHAPE, P(shape, .start = 0, .end = -1), IN(F(2, 3, 4)), OUT(S(2))},
    {"Constant", MPS_OP_CONSTANT, IN(CF(2, 3)), OUT(S(2, 3))},
    {"ConstantOfShape f32", MPS_OP_CONSTANT_OF_SHAPE, P(fill, .dtype = MPS_F32, .value = 1.5), IN(CI(2, 3)),
     OUT(S(2, 3))},
    {"ConstantOfShape i64", MPS_OP_CONSTANT_OF_SHAPE, P(fill, .dtype = MPS_I64, .value = 7), IN(CI(4)), OUT(S(4))},
    {"Expand", MPS_OP_EXPAND, IN(F(3, 1), CI(2, 3, 4)), OUT(S(2, 3, 4))},
    {"Expand both ways", MPS_OP_EXPAND, IN(F(1, 4), CI(3, 1)), OUT(S(3, 4))},
    {"Pad constant value", MPS_OP_PAD, P(pad, .mode = MPS_PAD_CONSTANT), IN(F(2, 3), CI(1, 0, 2, 1), CF_SCALAR(0.5)),
     OUT(S(5, 4))},
    {"Pad reflect", MPS_OP_PAD, P(pad, .mode = MPS_PAD_REFLECT), IN(F(1, 2, 4, 5), CI(0, 0, 1, 2, 0, 0, 2, 1)),
     OUT(S(1, 2, 7, 8))},
    {"Pad reflect on every axis, i64", MPS_OP_PAD, P(pad, .mode = MPS_PAD_REFLECT),
     IN(IR(MPS_I64, -50, 50, 3, 4, 5), CI(1, 2, 3, 2, 1, 4)), OUT(S(6, 7, 12))},
    {"Pad edge, the last axis cropped", MPS_OP_PAD, P(pad, .mode = MPS_PAD_EDGE),
     IN(F(3, 4, 6), CI(2, 0, -2, 1, 1, -1)), OUT(S(6, 5, 3))},
    {"Pad edge", MPS_OP_PAD, P(pad, .mode = MPS_PAD_EDGE), IN(F(3, 4), CI(2, 1, 0, 3)), OUT(S(5, 8))},
    {"Pad negative crops", MPS_OP_PAD, P(pad, .mode = MPS_PAD_CONSTANT), IN(F(4, 5), CI(-1, 1, 0, -2)), OUT(S(3, 4))},
    {"Pad with axes", MPS_OP_PAD, P(pad, .mode = MPS_PAD_CONSTANT), IN(F(2, 3, 4), CI(1, 1), OMIT, CI(-1)),
     OUT(S(2, 3, 6))},
    /* Resize: X, roi, scales, sizes */
    {"Resize nearest x2 (ONNX defaults: half_pixel, round_prefer_floor)", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_NEAREST), IN(F(1, 2, 3, 4), OMIT, CFL(1, 1, 2, 2)), OUT(S(1, 2, 6, 8))},
    {"Resize nearest 0.6 and x2 round_prefer_ceil asymmetric (ties along W)", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_NEAREST, .coord = MPS_COORD_ASYMMETRIC, .nearest = MPS_NEAREST_ROUND_PREFER_CEIL),
     IN(F(1, 1, 5, 7), OMIT, CFL(1, 1, 0.6, 2)), OUT(S(1, 1, 3, 14))},
    {"Resize nearest x2 round_prefer_floor asymmetric (ties)", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_NEAREST, .coord = MPS_COORD_ASYMMETRIC), IN(F(1, 2, 3, 4), OMIT, CFL(1, 1, 2, 2)),
     OUT(S(1, 2, 6, 8))},
    {"Resize nearest sizes floor align_corners", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_NEAREST, .coord = MPS_COORD_ALIGN_CORNERS, .nearest = MPS_NEAREST_FLOOR),
     IN(F(2, 3, 4, 5), OMIT, OMIT, CI(2, 3, 7, 9)), OUT(S(2, 3, 7, 9))},
    {"Resize nearest sizes ceil tf_half_pixel_for_nn, shrinking", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_NEAREST, .coord = MPS_COORD_TF_HALF_PIXEL_FOR_NN, .nearest = MPS_NEAREST_CEIL),
     IN(F(1, 2, 9, 10), OMIT, OMIT, CI(1, 2, 4, 3)), OUT(S(1, 2, 4, 3))},
    {"Resize nearest legacy (Upsample, opset 10): x3 and 0.5", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_NEAREST, .coord = MPS_COORD_ASYMMETRIC, .nearest = MPS_NEAREST_LEGACY),
     IN(F(1, 1, 4, 6), OMIT, CFL(1, 1, 3, 0.5)), OUT(S(1, 1, 12, 3))},
    {"Resize linear x2 half_pixel (bilinear, align_corners=False)", MPS_OP_RESIZE, P(resize, .mode = MPS_RESIZE_LINEAR),
     IN(F(1, 3, 5, 6), OMIT, CFL(1, 1, 2, 2)), OUT(S(1, 3, 10, 12))},
    {"Resize linear x8, 2 images of 7 planes (each input row resized once, kept across output rows and threads)",
     MPS_OP_RESIZE, P(resize, .mode = MPS_RESIZE_LINEAR), IN(F(2, 7, 9, 11), OMIT, CFL(1, 1, 8, 8)),
     OUT(S(2, 7, 72, 88))},
    {"Resize cubic x3 on 2 planes of 4x5 (four kept rows a step)", MPS_OP_RESIZE, P(resize, .mode = MPS_RESIZE_CUBIC),
     IN(F(1, 2, 4, 5), OMIT, CFL(1, 1, 3, 3)), OUT(S(1, 2, 12, 15))},
    {"Resize linear sizes align_corners", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_LINEAR, .coord = MPS_COORD_ALIGN_CORNERS),
     IN(F(2, 2, 4, 4), OMIT, OMIT, CI(2, 2, 7, 9)), OUT(S(2, 2, 7, 9))},
    {"Resize linear pytorch_half_pixel to a 1-pixel axis", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_LINEAR, .coord = MPS_COORD_PYTORCH_HALF_PIXEL),
     IN(F(1, 2, 6, 5), OMIT, OMIT, CI(1, 2, 1, 3)), OUT(S(1, 2, 1, 3))},
    {"Resize linear asymmetric 0.5 with a roi given", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_LINEAR, .coord = MPS_COORD_ASYMMETRIC), IN(F(1, 1, 8, 6), CF(8), CFL(1, 1, 0.5, 0.5)),
     OUT(S(1, 1, 4, 3))},
    {"Resize linear 3-D volume (each output from eight inputs)", MPS_OP_RESIZE, P(resize, .mode = MPS_RESIZE_LINEAR),
     IN(F(1, 1, 3, 4, 5), OMIT, CFL(1, 1, 2, 1.5, 2)), OUT(S(1, 1, 6, 6, 10))},
    {"Resize linear along the leading axis (element by element)", MPS_OP_RESIZE, P(resize, .mode = MPS_RESIZE_LINEAR),
     IN(F(3, 2, 4), OMIT, CFL(2, 1, 1)), OUT(S(6, 2, 4))},
    {"Resize linear, axes [-1] (opset 18)", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_LINEAR, .axes = {-1}, .n_axes = 1), IN(F(1, 2, 3, 4), OMIT, CFL(2.5)),
     OUT(S(1, 2, 3, 10))},
    {"Resize cubic x2 half_pixel", MPS_OP_RESIZE, P(resize, .mode = MPS_RESIZE_CUBIC, .cubic_a = -0.75f),
     IN(F(1, 2, 4, 5), OMIT, CFL(1, 1, 2, 2)), OUT(S(1, 2, 8, 10))},
    {"Resize cubic A -0.5 exclude_outside, sizes shrinking", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_CUBIC, .cubic_a = -0.5f, .exclude_outside = true),
     IN(F(1, 1, 8, 8), OMIT, OMIT, CI(1, 1, 5, 3)), OUT(S(1, 1, 5, 3))},
    {"Resize linear tf_crop_and_resize, extrapolating past the input", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_LINEAR, .coord = MPS_COORD_TF_CROP_AND_RESIZE, .extrapolation = 7.5f),
     IN(F(1, 1, 4, 5), CFL(0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4), OMIT, CI(1, 1, 5, 6)), OUT(S(1, 1, 5, 6))},
    {"Resize nearest tf_crop_and_resize by scales, axes [2, 3]", MPS_OP_RESIZE,
     P(resize, .mode = MPS_RESIZE_NEAREST, .coord = MPS_COORD_TF_CROP_AND_RESIZE, .axes = {2, 3}, .n_axes = 2),
     IN(F(1, 2, 6, 6), CFL(0.2, 0.1, 0.8, 0.7), CFL(2, 1.5)), OUT(S(1, 2, 7, 5))},
    {"ArgMax along the channels, kept (a segmentation head)", MPS_OP_ARG_MAX, P(arg, .axis = 1, .keepdims = true),
     IN(F(2, 5, 3, 4)), OUT(S(2, 1, 3, 4))},
    {"ArgMin along the last axis, dropped", MPS_OP_ARG_MIN, P(arg, .axis = -1), IN(F(3, 2, 7)), OUT(S(3, 2))},
    {"ArgMax of int64 ties: the first", MPS_OP_ARG_MAX, P(arg, .axis = 0, .keepdims = true),
     IN(IR(MPS_I64, 0, 3, 9, 4)), OUT(S(1, 4))},
    {"ArgMax: the first NaN beats every number", MPS_OP_ARG_MAX, P(arg, .axis = 0, .keepdims = true),
     IN(CFL(1, NAN, INFINITY, NAN, 3)), OUT(S(1))},
    {"ArgMin: the last NaN with select_last_index", MPS_OP_ARG_MIN, P(arg, .axis = 0, .last = true),
     IN(CFL(NAN, -INFINITY, NAN, 0)), OUT(SCALAR)},
    {"GatherElements axis 1, negative indices", MPS_OP_GATHER_ELEMENTS, P(axis, .axis = 1),
     IN(F(3, 5, 2), IR(MPS_I64, -5, 4, 3, 4, 2)), OUT(S(3, 4, 2))},
    {"GatherElements axis 0 of i64, i32 indices, smaller off the axis", MPS_OP_GATHER_ELEMENTS, P(axis, .axis = 0),
     IN(IR(MPS_I64, -50, 50, 4, 6), IR(MPS_I32, 0, 3, 7, 5)), OUT(S(7, 5))},
    {"GatherElements constant indices, axis -1", MPS_OP_GATHER_ELEMENTS, P(axis, .axis = -1),
     IN(F(2, 3),
        {.dt = MPS_I64, .shape = S(2, 2), .is_const = true, .vals = (const double[]){2, 0, -1, 1}, .n_vals = 4}),
     OUT(S(2, 2))},
    {"GatherND slices", MPS_OP_GATHER_ND, IN(F(4, 3, 5), IR(MPS_I64, -3, 2, 2, 3, 2)), OUT(S(2, 3, 5))},
    {"GatherND elements, batch_dims 1", MPS_OP_GATHER_ND, P(index, .batch_dims = 1),
     IN(IR(MPS_I32, -9, 9, 3, 4, 2), IR(MPS_I64, 0, 1, 3, 5, 2)), OUT(S(3, 5))},
    {"ScatterND rows, add with repeats", MPS_OP_SCATTER_ND, P(index, .reduction = MPS_SCATTER_ADD),
     IN(F(5, 3), IR(MPS_I64, -5, 4, 7, 1), F(7, 3)), OUT(S(5, 3))},
    {"ScatterND elements, none", MPS_OP_SCATTER_ND,
     IN(F(4, 4),
        {.dt = MPS_I64, .shape = S(3, 2), .is_const = true, .vals = (const double[]){0, 1, 3, -1, 2, 2}, .n_vals = 6},
        F(3)),
     OUT(S(4, 4))},
    {"ScatterElements axis 1, max", MPS_OP_SCATTER_ELEMENTS, P(index, .axis = 1, .reduction = MPS_SCATTER_MAX),
     IN(F(3, 5), IR(MPS_I64, -5, 4, 3, 4), F(3, 4)), OUT(S(3, 5))},
    {"ScatterElements axis 0, none, constant indices", MPS_OP_SCATTER_ELEMENTS, P(index, .axis = 0),
     IN(F(3, 3),
        {.dt = MPS_I64, .shape = S(2, 3), .is_const = true, .vals = (const double[]){2, 0, 1, 1, 2, 0}, .n_vals = 6},
        F(2, 3)),
     OUT(S(3, 3))},
    {"ScatterElements none, a repeated index: the last wins", MPS_OP_SCATTER_ELEMENTS, P(index, .axis = 0),
     IN(F(3, 3),
        {.dt = MPS_I64, .shape = S(2, 3), .is_const = true, .vals = (const double[]){2, 0, 1, 2, 0, -1}, .n_vals = 6},
        F(2, 3)),
     OUT(S(3, 3))},
    {"GatherND constant indices, slices", MPS_OP_GATHER_ND,
     IN(F(3, 4, 2),
        {.dt = MPS_I64, .shape = S(2, 2), .is_const = true, .vals = (const double[]){2, -1, 0, 1}, .n_vals = 4}),
     OUT(S(2, 2))},
    {"ScatterND add, constant repeated indices", MPS_OP_SCATTER_ND, P(index, .reduction = MPS_SCATTER_ADD),
     IN(F(4, 3),
        {.dt = MPS_I64, .shape = S(4, 1), .is_const = true, .vals = (const double[]){1, -1, 1, 0}, .n_vals = 4},
        F(4, 3)),
     OUT(S(4, 3))},
    {"ScatterElements min, constant repeated indices", MPS_OP_SCATTER_ELEMENTS,
     P(index, .axis = 1, .reduction = MPS_SCATTER_MIN),
     IN(F(2, 3),
        {.dt = MPS_I64, .shape = S(2, 3), .is_const = true, .vals = (const double[]){0, 0, 2, 1, 1, 1}, .n_vals = 6},
        F(2, 3)),
     OUT(S(2, 3))},
    {"ScatterElements i64 mul, constant indices", MPS_OP_SCATTER_ELEMENTS,
     P(index, .axis = 0, .reduction = MPS_SCATTER_MUL),
     IN(IR(MPS_I64, -3, 3, 4),
        {.dt = MPS_I64, .shape = S(5), .is_const = true, .vals = (const double[]){3, 0, 3, 1, 3}, .n_vals = 5},
        IR(MPS_I64, -3, 3, 5)),
     OUT(S(4))},
    {"ScatterElements i64 mul", MPS_OP_SCATTER_ELEMENTS, P(index, .axis = 0, .reduction = MPS_SCATTER_MUL),
     IN(IR(MPS_I64, -3, 3, 4), IR(MPS_I32, 0, 3, 6), IR(MPS_I64, -3, 3, 6)), OUT(S(4))},
    {"Tile 3-D", MPS_OP_TILE, IN(F(2, 3, 4), CI(2, 1, 3)), OUT(S(4, 3, 12))},
    {"Tile i64 by 1 and 4", MPS_OP_TILE, IN(IR(MPS_I64, -9, 9, 3, 2), CI(1, 4)), OUT(S(3, 8))},
    {"Tile to empty", MPS_OP_TILE, IN(F(3, 2), CI(0, 2)), OUT(S(0, 4))},
    {"OneHot last axis, negative and out-of-range indices", MPS_OP_ONE_HOT, P(onehot, .axis = -1),
     IN(IR(MPS_I64, -6, 6, 3, 4), CI_SCALAR(5), CFL(-1, 3)), OUT(S(3, 4, 5))},
    {"OneHot axis 1, i32 values", MPS_OP_ONE_HOT, P(onehot, .axis = 1),
     IN(IR(MPS_I32, 0, 3, 2, 3), CI_SCALAR(4),
        {.dt = MPS_I32, .shape = S(2), .is_const = true, .vals = (const double[]){0, 7}, .n_vals = 2}),
     OUT(S(2, 4, 3))},
    {"Range f32", MPS_OP_RANGE, IN(CF_SCALAR(1.5), CF_SCALAR(7), CF_SCALAR(0.5)), OUT(S(11))},
    {"Range i64 down", MPS_OP_RANGE, IN(CI_SCALAR(10), CI_SCALAR(-3), CI_SCALAR(-4)), OUT(S(4))},
    {"GridSample linear, zeros", MPS_OP_GRID_SAMPLE, P(gridsample, .mode = MPS_RESIZE_LINEAR),
     IN(F(2, 3, 5, 6), FR(-1.3, 1.3, 2, 4, 7, 2)), OUT(S(2, 3, 4, 7))},
    {"GridSample nearest, border, align_corners", MPS_OP_GRID_SAMPLE,
     P(gridsample, .mode = MPS_RESIZE_NEAREST, .padding = MPS_PAD_EDGE, .align_corners = true),
     IN(F(1, 2, 4, 5), FR(-1.5, 1.5, 1, 6, 3, 2)), OUT(S(1, 2, 6, 3))},
    {"GridSample cubic, reflection", MPS_OP_GRID_SAMPLE,
     P(gridsample, .mode = MPS_RESIZE_CUBIC, .padding = MPS_PAD_REFLECT), IN(F(1, 2, 5, 4), FR(-2.5, 2.5, 1, 5, 5, 2)),
     OUT(S(1, 2, 5, 5))},
    {"GridSample linear, reflection, align_corners", MPS_OP_GRID_SAMPLE,
     P(gridsample, .mode = MPS_RESIZE_LINEAR, .padding = MPS_PAD_REFLECT, .align_corners = true),
     IN(F(1, 1, 4, 4), FR(-3, 3, 1, 6, 6, 2)), OUT(S(1, 1, 6, 6))},
    {"ReverseSequence time-major", MPS_OP_REVERSE_SEQUENCE, P(revseq, .batch_axis = 1, .time_axis = 0),
     IN(F(5, 3, 2), IR(MPS_I64, 0, 5, 3)), OUT(S(5, 3, 2))},
    {"ReverseSequence batch-major, i32 lengths, i64 data", MPS_OP_REVERSE_SEQUENCE,
     P(revseq, .batch_axis = 0, .time_axis = 1), IN(IR(MPS_I64, -9, 9, 4, 6), IR(MPS_I32, 0, 6, 4)), OUT(S(4, 6))},
    {"Compress axis 1, a condition shorter than the axis", MPS_OP_COMPRESS, P(compress, .has_axis = true, .axis = 1),
     IN(F(2, 5, 3),
        {.dt = MPS_BOOL, .shape = {1, {4}}, .is_const = true, .vals = (const double[]){1, 0, 1, 1}, .n_vals = 4}),
     OUT(S(2, 3, 3))},
    {"Compress flat, i64 data", MPS_OP_COMPRESS,
     IN(IR(MPS_I64, -9, 9, 2, 3),
        {.dt = MPS_BOOL, .shape = {1, {6}}, .is_const = true, .vals = (const double[]){0, 1, 1, 0, 0, 1}, .n_vals = 6}),
     OUT(S(3))},
    {"NonZero of a constant", MPS_OP_NON_ZERO,
     IN({.dt = MPS_F32,
         .shape = {2, {2, 3}},
         .is_const = true,
         .vals = (const double[]){0, 2, 0, -1, 0, 3},
         .n_vals = 6}),
     OUT(S(2, 3))},
    {"NonZero of a run-time input: the run's count", MPS_OP_NON_ZERO, IN(IR(MPS_I64, 0, 1, 3, 4)), OUT(S(2, 12))},
    {"Compress along axis 1 by a run-time condition", MPS_OP_COMPRESS, P(compress, .has_axis = true, .axis = 1),
     IN(F(2, 5, 3), IR(MPS_BOOL, 0, 1, 4)), OUT(S(2, 4, 3))},
    {"NonMaxSuppression 2 batches, 3 classes, at most 5 each, thresholds", MPS_OP_NON_MAX_SUPPRESSION,
     IN(FR(0, 1, 2, 20, 4), FR(0, 1, 2, 3, 20), CI_SCALAR(5), CF_SCALAR(0.3), CF_SCALAR(0.2)), OUT(S(30, 3))},
    {"NonMaxSuppression center_point_box, no score threshold", MPS_OP_NON_MAX_SUPPRESSION,
     P(nms, .center_point_box = true), IN(FR(0.2, 1, 1, 30, 4), F(1, 2, 30), CI_SCALAR(30), CF_SCALAR(0.5)),
     OUT(S(60, 3))},
    {"NonMaxSuppression without max_output_boxes_per_class: no box", MPS_OP_NON_MAX_SUPPRESSION,
     IN(F(1, 4, 4), F(1, 1, 4)), OUT(S(0, 3))},
    {"Unique flat, sorted, every output", MPS_OP_UNIQUE, P(unique, .sorted = true), IN(IR(MPS_I64, 0, 6, 4, 5)),
     OUT(S(20), S(20), S(20), S(20))},
    {"Unique columns in order of first occurrence", MPS_OP_UNIQUE, P(unique, .has_axis = true, .axis = 1),
     IN(IR(MPS_I64, 0, 1, 2, 8)), OUT(S(2, 8), S(8), S(8), S(8))},
    {"Unique f32 rows sorted lexicographically, axis -2", MPS_OP_UNIQUE,
     P(unique, .sorted = true, .has_axis = true, .axis = -2), IN(IR(MPS_F32, -1, 1, 6, 3)),
     OUT(S(6, 3), S(6), S(6), S(6))},
    {"Unique i32, Y alone", MPS_OP_UNIQUE, P(unique, .sorted = true), IN(IR(MPS_I32, -3, 3, 10)), OUT(S(10))},
    {"StringNormalizer upper, stopwords whatever their case; UTF-8 left", MPS_OP_STRING_NORMALIZER,
     P(strnorm, .change = MPS_STRNORM_UPPER),
     IN(WORDS(1, "Monday", "tuesday", "WEDNESDAY", "monday",
              "Stra\xc3\x9f"
              "e"),
        CWORDS("MONDAY")),
     OUT(S(1, 5))},
    {"StringNormalizer lower, case-sensitive stopwords", MPS_OP_STRING_NORMALIZER,
     P(strnorm, .change = MPS_STRNORM_LOWER, .case_sensitive = true), IN(WORDS(0, "Aa", "aa", "BB"), CWORDS("aa", "b")),
     OUT(S(3))},
    {"StringNormalizer, every word a stopword: one empty string", MPS_OP_STRING_NORMALIZER,
     IN(WORDS(0, "x", "x"), CWORDS("X")), OUT(S(2))},
    {"RandomLike uniform [-2, 3), seed 7", MPS_OP_RANDOM_LIKE,
     P(random, .dtype = MPS_DTYPE_COUNT, .a = -2, .b = 3, .seed = 7), IN(F(3, 4)), OUT(S(3, 4))},
    {"RandomLike normal (1, 2) as f64", MPS_OP_RANDOM_LIKE, P(random, .dtype = MPS_F64, .normal = true, .a = 1, .b = 2),
     IN(F(2, 5)), OUT(S(2, 5))},
    /* TfIdfVectorizer over tokens 0..3: a pool of 3 unigrams and 4 bigrams (16 pairs: many occur) */
    {"TfIdfVectorizer TF, 1- and 2-grams, skip up to 2", MPS_OP_TFIDF,
     P(tfidf, .min_n = 1, .max_n = 2, .max_skip = 2, .mode = MPS_TFIDF_TF),
     IN(IR(MPS_I64, 0, 4, 2, 9), CI(0, 2, 3, 0, 1, 1, 1, 3, 2, 2, 0), CI(0, 3), CI(6, 0, 4, 1, 3, 5, 2)), OUT(S(2, 7))},
    {"TfIdfVectorizer TFIDF, bigrams only, i32 tokens, weights", MPS_OP_TFIDF,
     P(tfidf, .min_n = 2, .max_n = 2, .max_skip = 1, .mode = MPS_TFIDF_TFIDF),
     IN(IR(MPS_I32, 0, 4, 11), CI(0, 2, 3, 0, 1, 1, 1, 3, 2, 2, 0), CI(0, 3), CI(6, 0, 4, 1, 3, 5, 2),
        CFL(0.5, 1, 2, 3, 4, 5, 6)),
     OUT(S(7))},
    {"TfIdfVectorizer IDF, unigrams", MPS_OP_TFIDF, P(tfidf, .min_n = 1, .max_n = 1, .mode = MPS_TFIDF_IDF),
     IN(IR(MPS_I64, 0, 4, 3, 5), CI(0, 2, 3), CI(0), CI(2, 0, 1), CFL(0.25, 2, 3)), OUT(S(3, 3))},
    {"EyeLike k 1", MPS_OP_EYE_LIKE, P(eye, .dtype = MPS_DTYPE_COUNT, .k = 1), IN(F(4, 5)), OUT(S(4, 5))},
    {"EyeLike to f32 of an i64, k -2", MPS_OP_EYE_LIKE, P(eye, .dtype = MPS_F32, .k = -2), IN(IR(MPS_I64, 0, 9, 5, 3)),
     OUT(S(5, 3))},
    {"Trilu upper", MPS_OP_TRILU, P(trilu, .upper = true), IN(F(2, 4, 5)), OUT(S(2, 4, 5))},
    {"Trilu lower, k = -1, i64", MPS_OP_TRILU, P(trilu, .upper = false), IN(IR(MPS_I64, -9, 9, 5, 3), CI_SCALAR(-1)),
     OUT(S(5, 3))},
    {"Trilu upper, k = 2", MPS_OP_TRILU, P(trilu, .upper = true), IN(F(3, 3, 6), CI_SCALAR(2)), OUT(S(3, 3, 6))},
    {"CumSum axis 1", MPS_OP_CUM_SUM, IN(F(3, 7, 2), CI_SCALAR(1)), OUT(S(3, 7, 2))},
    {"CumSum exclusive reverse, axis -1", MPS_OP_CUM_SUM, P(cumsum, .exclusive = true, .reverse = true),
     IN(F(4, 9), CI_SCALAR(-1)), OUT(S(4, 9))},
    {"CumSum i32, reverse", MPS_OP_CUM_SUM, P(cumsum, .reverse = true), IN(IR(MPS_I32, -99, 99, 6, 5), CI_SCALAR(0)),
     OUT(S(6, 5))},
    {"CumSum f64, exclusive", MPS_OP_CUM_SUM, P(cumsum, .exclusive = true), IN(IR(MPS_F64, -9, 9, 6, 5), CI_SCALAR(1)),
     OUT(S(6, 5))},
    {"CumSum u16", MPS_OP_CUM_SUM, IN(IR(MPS_U16, 0, 999, 7), CI_SCALAR(0)), OUT(S(7))},
    {"TopK 3 largest, last axis", MPS_OP_TOP_K, P(topk, .axis = -1, .largest = true), IN(F(4, 9), CI(3)),
     OUT(S(4, 3), S(4, 3))},
    {"TopK 2 smallest along axis 1, i64 ties in index order", MPS_OP_TOP_K, P(topk, .axis = 1, .largest = false),
     IN(IR(MPS_I64, 0, 3, 2, 7, 3), CI(2)), OUT(S(2, 2, 3), S(2, 2, 3))},
    {"TopK with NaN: the largest", MPS_OP_TOP_K, P(topk, .axis = 0, .largest = true),
     IN(CFL(1, NAN, 5, 5, -INFINITY), CI(4)), OUT(S(4), S(4))},
    {"TopK with NaN: never among the smallest", MPS_OP_TOP_K, P(topk, .axis = 0, .largest = false),
     IN(CFL(1, NAN, 5, 5, -INFINITY), CI(4)), OUT(S(4), S(4))},
    {"Hardmax along the last axis", MPS_OP_HARDMAX, P(norm, .axis = -1), IN(F(3, 4, 6)), OUT(S(3, 4, 6))},
    {"Hardmax of ties: the first", MPS_OP_HARDMAX, P(norm, .axis = 0), IN(CFL(2, 1, 2, 0)), OUT(S(4))},
    {"Hardmax: the first NaN", MPS_OP_HARDMAX, P(norm, .axis = 0), IN(CFL(1, NAN, 3, NAN, -1)), OUT(S(5))},
    {"ArgMin of int64 ties, select_last_index", MPS_OP_ARG_MIN, P(arg, .axis = 1, .last = true),
     IN(IR(MPS_I64, 0, 3, 4, 9)), OUT(S(4))},
    {"DepthToSpace DCR, block 2", MPS_OP_DEPTH_TO_SPACE, P(depth, .block = 2), IN(F(2, 8, 3, 2)), OUT(S(2, 2, 6, 4))},
    {"DepthToSpace CRD (PixelShuffle), block 3", MPS_OP_DEPTH_TO_SPACE, P(depth, .block = 3, .crd = true),
     IN(F(1, 18, 2, 3)), OUT(S(1, 2, 6, 9))},
    {"DepthToSpace block 1 (as it is)", MPS_OP_DEPTH_TO_SPACE, P(depth, .block = 1), IN(F(1, 3, 2, 2)),
     OUT(S(1, 3, 2, 2))},
    {"SpaceToDepth block 2", MPS_OP_SPACE_TO_DEPTH, P(depth, .block = 2), IN(F(2, 3, 4, 6)), OUT(S(2, 12, 2, 3))},
    {"SpaceToDepth of int64, block 3", MPS_OP_SPACE_TO_DEPTH, P(depth, .block = 3),
     IN(IR(MPS_I64, -50, 50, 1, 2, 3, 6)), OUT(S(1, 18, 1, 2))},
    /* the int8 products (the quantization pass makes them from QDQ and QLinear compositions): x, x_scale,
       x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B; exact integers but for a rounding tie */
    {"QLinearConv 3x3 pad 1, 5 channels, per-channel scales, int32 bias", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_U8, 0, 255, 2, 5, 9, 9), CF_SCALAR(0.02), CT(MPS_U8, 131), CR(MPS_I8, -127, 127, 7, 5, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 7), CR(MPS_I8, 0, 0, 7), CF_SCALAR(0.5), CT(MPS_U8, 100), CR(MPS_I32, -900, 900, 7)),
     OUT(S(2, 7, 9, 9))},
    {"QLinearConv 3x3 64 channels to 40 (two panels), stride 2, f32 out and bias, Clip", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 0, 1, 1), .group = 1,
       .act = {.on = true, .op = MPS_OP_CLIP, .p = {-1.5f, 2.0f}}),
     IN(IR(MPS_U8, 0, 255, 1, 64, 11, 10), CF_SCALAR(0.01), CT(MPS_U8, 128), CR(MPS_I8, -127, 127, 40, 64, 3, 3),
        CR(MPS_F32, 0.0005, 0.002, 40), CT(MPS_I8, 0), OMIT, OMIT, CR(MPS_F32, -1, 1, 40)),
     OUT(S(1, 40, 6, 5))},
    {"QLinearConv 3x3 pad 1, a float bias (the pass's, of a Conv between DequantizeLinears) and uint8 out",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_U8, 0, 255, 1, 12, 6, 7), CF_SCALAR(0.02), CT(MPS_U8, 128), CR(MPS_I8, -30, 30, 9, 12, 3, 3),
        CR(MPS_F32, 0.002, 0.01, 9), CT(MPS_I8, 0), CF_SCALAR(0.05), CT(MPS_U8, 120), CR(MPS_F32, -2, 2, 9)),
     OUT(S(1, 9, 6, 7))},
    {"QLinearConv 1x1 (read from the planes), 6 channels (padded to 8), int8 x and out, uint8 weights' zero points per "
     "channel, Relu",
     MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 1, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(IR(MPS_I8, -128, 127, 2, 6, 6, 7), CF_SCALAR(0.03), CT(MPS_I8, -3), CR(MPS_U8, 0, 255, 16, 6, 1, 1),
        CF_SCALAR(0.004), CR(MPS_U8, 100, 150, 16), CF_SCALAR(0.05), CT(MPS_I8, -10)),
     OUT(S(2, 16, 6, 7))},
    {"QLinearConv 5x5 stride 2 pad 2, three channels (padded to four: a word a tap)", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 2, 2, 2, 2), .group = 1),
     IN(IR(MPS_U8, 0, 255, 2, 3, 11, 12), CF_SCALAR(0.02), CT(MPS_U8, 120), CR(MPS_I8, -127, 127, 6, 3, 5, 5),
        CR(MPS_F32, 0.004, 0.02, 6), CR(MPS_I8, 0, 0, 6), CF_SCALAR(0.3), CT(MPS_U8, 100)),
     OUT(S(2, 6, 6, 6))},
    {"QLinearConv 3x3, 20 channels to 9, f32 out, LeakyRelu 0.1 (the store's slope), 35 positions", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 0, 0, 0), .group = 1,
       .act = {.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.1f}}),
     IN(IR(MPS_U8, 0, 255, 1, 20, 7, 9), CF_SCALAR(0.02), CT(MPS_U8, 128), CR(MPS_I8, -127, 127, 9, 20, 3, 3),
        CR(MPS_F32, 0.0005, 0.002, 9), CR(MPS_I8, 0, 0, 9)),
     OUT(S(1, 9, 5, 7))},
    {"QLinearConv 3x3 pad 1, int8 x of 36 channels, rows of 21 (sixteen channels transposed at once, then four)",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_I8, -128, 127, 2, 36, 5, 21), CF_SCALAR(0.02), CT(MPS_I8, 6), CR(MPS_I8, -127, 127, 10, 36, 3, 3),
        CR(MPS_F32, 0.0005, 0.002, 10), CR(MPS_I8, 0, 0, 10), CF_SCALAR(0.4), CT(MPS_U8, 120)),
     OUT(S(2, 10, 5, 21))},
    {"QLinearConv one channel, dilation 2 pad 2, int8 x, rows of 30 (a group's taps for sixteen lanes at once)",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 2, 2, 2, 2, 2, 2), .group = 1),
     IN(IR(MPS_I8, -128, 127, 2, 1, 9, 30), CF_SCALAR(0.02), CT(MPS_I8, -9), CR(MPS_I8, -127, 127, 8, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 8), CR(MPS_I8, 0, 0, 8), CF_SCALAR(0.3), CT(MPS_U8, 128)),
     OUT(S(2, 8, 9, 30))},
    {"QLinearConv one channel 17x16 (272 taps, past the float direct conv's 258: on the int8 tile), int8 x",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(17, 16, 1, 1, 1, 1, 0, 1, 0, 1), .group = 1),
     IN(IR(MPS_I8, -128, 127, 2, 1, 20, 20), CF_SCALAR(0.02), CT(MPS_I8, 3), CR(MPS_I8, -127, 127, 6, 1, 17, 16),
        CR(MPS_F32, 0.0005, 0.002, 6), CR(MPS_I8, 0, 0, 6), CF_SCALAR(0.5), CT(MPS_U8, 128)),
     OUT(S(2, 6, 4, 7))},
    {"QLinearConv dilation 2, pads asymmetric", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 2, 2, 2, 1, 0, 2), .group = 1),
     IN(IR(MPS_U8, 0, 255, 1, 3, 9, 8), CF_SCALAR(0.02), CT(MPS_U8, 120), CR(MPS_I8, -127, 127, 5, 3, 3, 3),
        CF_SCALAR(0.01), CT(MPS_I8, 0), CF_SCALAR(0.2), CT(MPS_U8, 128)),
     OUT(S(1, 5, 7, 7))},
    {"QLinearConv one channel (k packed densely, 9 of 12), uint8 weights' zero points, 33 planes of 130",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_U8, 0, 255, 2, 1, 10, 13), CF_SCALAR(0.02), CT(MPS_U8, 7), CR(MPS_U8, 0, 255, 33, 1, 3, 3),
        CF_SCALAR(0.01), CR(MPS_U8, 90, 160, 33), CF_SCALAR(0.3), CT(MPS_U8, 60)),
     OUT(S(2, 33, 10, 13))},
    {"QLinearConv 3x3 stride 2 pad 1, three channels (a stem: a lane's k as three runs of nine bytes), int8 x, 2 "
     "images",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_I8, -128, 127, 2, 3, 15, 37), CF_SCALAR(0.02), CT(MPS_I8, 5), CR(MPS_I8, -127, 127, 10, 3, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 10), CR(MPS_I8, 0, 0, 10), CF_SCALAR(0.3), CT(MPS_U8, 100)),
     OUT(S(2, 10, 8, 19))},
    {"QLinearConv 1x9 pad 4, two channels (runs of 18: a byte a lane, k 18 of 20, full panels), uint8 weights' zero "
     "points, 2 images",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 0, 4, 0, 4), .group = 1),
     IN(IR(MPS_U8, 0, 255, 2, 2, 3, 40), CF_SCALAR(0.02), CT(MPS_U8, 7), CR(MPS_U8, 0, 255, 5, 2, 1, 9),
        CR(MPS_F32, 0.004, 0.02, 5), CR(MPS_U8, 90, 160, 5), CF_SCALAR(0.5), CT(MPS_U8, 128)),
     OUT(S(2, 5, 3, 40))},
    {"QLinearConv 5x3 dilation 2x1, two channels (runs of six, k 30 of 32), uint8 weights' zero points per channel",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 2, 1, 0, 0, 0, 0), .group = 1),
     IN(IR(MPS_U8, 0, 255, 1, 2, 11, 12), CF_SCALAR(0.02), CT(MPS_U8, 130), CR(MPS_U8, 0, 255, 6, 2, 5, 3),
        CR(MPS_F32, 0.004, 0.02, 6), CR(MPS_U8, 100, 150, 6), CF_SCALAR(0.5), CT(MPS_U8, 128)),
     OUT(S(1, 6, 3, 10))},
    {"QLinearConv depthwise 3x3 pad 1 (dw3), 24 channels, int8 weights' zero points, int32 bias, Clip",
     MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 24,
       .act = {.on = true, .op = MPS_OP_CLIP, .p = {.alpha = 0.0f, .beta = 6.0f}}),
     IN(IR(MPS_U8, 0, 255, 2, 24, 9, 11), CF_SCALAR(0.02), CT(MPS_U8, 120), CR(MPS_I8, -127, 127, 24, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 24), CR(MPS_I8, -3, 3, 24), CF_SCALAR(0.03), CT(MPS_U8, 5),
        CR(MPS_I32, -900, 900, 24)),
     OUT(S(2, 24, 9, 11))},
    {"QLinearConv depthwise 3x3 stride 2, int8 x and out, uint8 weights with zero points", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 1, 1, 1), .group = 5),
     IN(IR(MPS_I8, -128, 127, 1, 5, 12, 13), CF_SCALAR(0.03), CT(MPS_I8, -7), CR(MPS_U8, 0, 255, 5, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 5), CR(MPS_U8, 100, 150, 5), CF_SCALAR(0.2), CT(MPS_I8, 3)),
     OUT(S(1, 5, 6, 7))},
    {"QLinearConv depthwise 5x5 dilation 2 (dwk), f32 out", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 2, 2, 4, 4, 4, 4), .group = 6),
     IN(IR(MPS_U8, 0, 255, 1, 6, 10, 9), CF_SCALAR(0.02), CT(MPS_U8, 128), CR(MPS_I8, -127, 127, 6, 1, 5, 5),
        CR(MPS_F32, 0.004, 0.02, 6), CR(MPS_I8, 0, 0, 6)),
     OUT(S(1, 6, 10, 9))},
    {"QLinearConv depthwise 3x3 stride 2, 32 channels of 14x13 (dwb: sixteen planes at once), int32 bias, Relu",
     MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 1, 1, 1, 1), .group = 32, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(IR(MPS_U8, 0, 255, 2, 32, 14, 13), CF_SCALAR(0.02), CT(MPS_U8, 117), CR(MPS_I8, -127, 127, 32, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 32), CR(MPS_I8, -3, 3, 32), CF_SCALAR(0.03), CT(MPS_U8, 9),
        CR(MPS_I32, -900, 900, 32)),
     OUT(S(2, 32, 7, 7))},
    {"QLinearConv depthwise 5x5 pad 2, int8 x, 16 channels of 9x10 (dwb), f32 out", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 2, 2, 2, 2), .group = 16),
     IN(IR(MPS_I8, -128, 127, 1, 16, 9, 10), CF_SCALAR(0.02), CT(MPS_I8, -4), CR(MPS_I8, -127, 127, 16, 1, 5, 5),
        CR(MPS_F32, 0.004, 0.02, 16), CR(MPS_I8, 0, 0, 16)),
     OUT(S(1, 16, 9, 10))},
    {"QLinearConv depthwise 3x3 pad 1, 16 channels of 9x10 (dwb), f32 out, LeakyRelu 0.1 (the slope in dwb's store)",
     MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 16,
       .act = {.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.1f}}),
     IN(IR(MPS_U8, 0, 255, 2, 16, 9, 10), CF_SCALAR(0.02), CT(MPS_U8, 131), CR(MPS_I8, -127, 127, 16, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 16), CR(MPS_I8, -2, 2, 16)),
     OUT(S(2, 16, 9, 10))},
    {"QLinearConv depthwise 3x3 pad 1, 8 channels of 20x17 (planes past the float-sums store's 256 a chunk)",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 8),
     IN(IR(MPS_U8, 0, 255, 1, 8, 20, 17), CF_SCALAR(0.02), CT(MPS_U8, 110), CR(MPS_I8, -127, 127, 8, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 8), CR(MPS_I8, -2, 2, 8), CF_SCALAR(0.05), CT(MPS_U8, 7)),
     OUT(S(1, 8, 20, 17))},
    /* the int8 plane kernel (avx512 with VBMI): taps of a few steps, so that a sum one off moves bytes */
    {"QLinearConv depthwise 3x3 pad 1, 18 channels of 11x70 (the int8 plane kernel: two rows a step, five steps a "
     "row), int32 bias, Relu",
     MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 18, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(IR(MPS_U8, 0, 255, 2, 18, 11, 70), CF_SCALAR(0.02), CT(MPS_U8, 128), CR(MPS_I8, -8, 8, 18, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 18), CT(MPS_I8, 0), CF_SCALAR(0.004), CT(MPS_U8, 100), CR(MPS_I32, -300, 300, 18)),
     OUT(S(2, 18, 11, 70))},
    {"QLinearConv depthwise 3x3 stride 2, pads 0 1 1 0, int8 x, 7 channels of 14x45 (the plane kernel a row a "
     "step, a tail of 6), f32 out",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 2, 2, 1, 1, 0, 1, 1, 0), .group = 7),
     IN(IR(MPS_I8, -128, 127, 1, 7, 14, 45), CF_SCALAR(0.02), CT(MPS_I8, -5), CR(MPS_I8, -8, 8, 7, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 7), CT(MPS_I8, 0)),
     OUT(S(1, 7, 7, 22))},
    {"QLinearConv depthwise 3x3 stride 1x2 pad 1 (two rows a step at stride 2 across), uint8 weights of zero point "
     "128, int8 out",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 2, 1, 1, 1, 1, 1, 1), .group = 4),
     IN(IR(MPS_U8, 0, 255, 1, 4, 9, 40), CF_SCALAR(0.02), CT(MPS_U8, 3), CR(MPS_U8, 120, 136, 4, 1, 3, 3),
        CF_SCALAR(0.01), CT(MPS_U8, 128), CF_SCALAR(0.004), CT(MPS_I8, -10)),
     OUT(S(1, 4, 9, 20))},
    {"QLinearConv depthwise 3x3 stride 2x1 pad 1, 5 channels of 8x9 (rows under ten on the plane kernel: no dwb "
     "for 5), Clip",
     MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 2, 1, 1, 1, 1, 1, 1, 1), .group = 5,
       .act = {.on = true, .op = MPS_OP_CLIP, .p = {.alpha = -0.1f, .beta = 0.3f}}),
     IN(IR(MPS_U8, 0, 255, 2, 5, 8, 9), CF_SCALAR(0.02), CT(MPS_U8, 120), CR(MPS_I8, -8, 8, 5, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 5), CT(MPS_I8, 0), CF_SCALAR(0.004), CT(MPS_U8, 128)),
     OUT(S(2, 5, 4, 9))},
    {"QLinearConv depthwise 3x3 stride 3 (the loop of taps)", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 3, 3, 1, 1, 0, 0, 0, 0), .group = 4),
     IN(IR(MPS_U8, 0, 255, 1, 4, 10, 11), CF_SCALAR(0.02), CT(MPS_U8, 100), CR(MPS_I8, -127, 127, 4, 1, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 4), CR(MPS_I8, 0, 0, 4), CF_SCALAR(0.1), CT(MPS_U8, 128)),
     OUT(S(1, 4, 3, 3))},
    {"QLinearConv 3x3 pad 1, int8 x of 8 channels (a word a pixel into the padded copy), 2 images", MPS_OP_QLINEAR_CONV,
     P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_I8, -128, 127, 2, 8, 6, 9), CF_SCALAR(0.02), CT(MPS_I8, 11), CR(MPS_I8, -127, 127, 12, 8, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 12), CR(MPS_I8, 0, 0, 12), CF_SCALAR(0.4), CT(MPS_I8, -20)),
     OUT(S(2, 12, 6, 9))},
    {"QLinearConv 3x3 pad 1, int8 x of 20 channels of 6x13, 2 images (rows under 16: sixteen channels transposed, the "
     "last rows' from a copy, then four as words)",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_I8, -128, 127, 2, 20, 6, 13), CF_SCALAR(0.02), CT(MPS_I8, -7), CR(MPS_I8, -127, 127, 9, 20, 3, 3),
        CR(MPS_F32, 0.002, 0.01, 9), CR(MPS_I8, 0, 0, 9), CF_SCALAR(0.4), CT(MPS_U8, 100)),
     OUT(S(2, 9, 6, 13))},
    {"QLinearConv 3x3 pad 1, 16 -> 136 channels on 5x5, one image (one panel, its channel blocks in two units)",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_U8, 0, 255, 1, 16, 5, 5), CF_SCALAR(0.02), CT(MPS_U8, 120), CR(MPS_I8, -127, 127, 136, 16, 3, 3),
        CR(MPS_F32, 0.004, 0.02, 136), CR(MPS_I8, -2, 2, 136), CF_SCALAR(0.4), CT(MPS_U8, 10)),
     OUT(S(1, 136, 5, 5))},
    {"QLinearMatMul batch dims, K 37 (padded), per-column scales, f32 bias, Relu", MPS_OP_QLINEAR_MATMUL,
     P(gemm, .alpha = 1, .beta = 1, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(IR(MPS_U8, 0, 255, 2, 5, 37), CF_SCALAR(0.02), CT(MPS_U8, 125), CR(MPS_I8, -127, 127, 37, 45),
        CR(MPS_F32, 0.004, 0.02, 45), CR(MPS_I8, 0, 0, 45), CF_SCALAR(0.3), CT(MPS_U8, 0), CR(MPS_F32, -2, 2, 45)),
     OUT(S(2, 5, 45))},
    {"QLinearMatMul int8 a, uint8 b, f32 out", MPS_OP_QLINEAR_MATMUL,
     IN(IR(MPS_I8, -128, 127, 3, 64), CF_SCALAR(0.02), CT(MPS_I8, 5), CR(MPS_U8, 0, 255, 64, 10), CF_SCALAR(0.01),
        CT(MPS_U8, 128)),
     OUT(S(3, 10))},
    {"QLinearConv 3x3 pad 1, 48 channels (cuda sums k in parts), uint8 weights' zero points per channel, 2 images",
     MPS_OP_QLINEAR_CONV, P(conv, .win = WIN2(0, 0, 1, 1, 1, 1, 1, 1, 1, 1), .group = 1),
     IN(IR(MPS_U8, 0, 255, 2, 48, 5, 6), CF_SCALAR(0.02), CT(MPS_U8, 110), CR(MPS_U8, 0, 255, 20, 48, 3, 3),
        CR(MPS_F32, 0.0005, 0.002, 20), CR(MPS_U8, 100, 150, 20), CF_SCALAR(0.6), CT(MPS_U8, 128)),
     OUT(S(2, 20, 5, 6))},
    {"QLinearMatMul K 300 (cuda sums k in parts), uint8 b with zero points per column, int8 out", MPS_OP_QLINEAR_MATMUL,
     IN(IR(MPS_U8, 0, 255, 3, 300), CF_SCALAR(0.02), CT(MPS_U8, 120), CR(MPS_U8, 0, 255, 300, 17),
        CR(MPS_F32, 0.001, 0.003, 17), CR(MPS_U8, 100, 150, 17), CF_SCALAR(0.5), CT(MPS_I8, 4)),
     OUT(S(3, 17))},
    {"DequantizeLinear uint8, per tensor", MPS_OP_DEQUANTIZE,
     IN(IR(MPS_U8, 0, 255, 3, 70), CF_SCALAR(0.05), CT(MPS_U8, 131)), OUT(S(3, 70))},
    {"DequantizeLinear int8 along axis 1", MPS_OP_DEQUANTIZE, P(axis, .axis = 1),
     IN(IR(MPS_I8, -128, 127, 2, 5, 9), CR(MPS_F32, 0.01, 0.2, 5), CR(MPS_I8, -5, 5, 5)), OUT(S(2, 5, 9))},
    {"QuantizeLinear to uint8, saturating", MPS_OP_QUANTIZE, IN(FR(-8, 8, 4, 33), CF_SCALAR(0.03), CT(MPS_U8, 100)),
     OUT(S(4, 33))},
    {"QuantizeLinear per tensor of 40000 to int8 (three items)", MPS_OP_QUANTIZE,
     IN(FR(-5, 5, 40000), CF_SCALAR(0.037), CT(MPS_I8, -3)), OUT(S(40000))},
    {"DequantizeLinear int8 per tensor of 20000 (two items)", MPS_OP_DEQUANTIZE,
     IN(IR(MPS_I8, -128, 127, 20000), CF_SCALAR(0.05), CT(MPS_I8, 9)), OUT(S(20000))},
    {"QuantizeLinear of NaN and infinities to int8 (NaN as 0, as the composition's Cast; sixteen lanes, then four)",
     MPS_OP_QUANTIZE,
     IN(CFL(1, NAN, -2, INFINITY, 0.5, 3, -INFINITY, 5, 6, NAN, 0.5, 0.25, -1, -3, 0.1, 2, 7, NAN, -9, 10),
        CF_SCALAR(0.05), CT(MPS_I8, -3)),
     OUT(S(20))},
    {"QuantizeLinear to int8 along axis -3", MPS_OP_QUANTIZE, P(axis, .axis = -3),
     IN(FR(-3, 3, 1, 6, 4, 5), CR(MPS_F32, 0.01, 0.05, 6), CR(MPS_I8, -20, 20, 6)), OUT(S(1, 6, 4, 5))},
    /* Add and Concat of bytes (the pass makes them of DequantizeLinear, the float op, QuantizeLinear): exact
       integers but for a rounding tie */
    {"QLinearAdd uint8 + int8 to uint8, Relu", MPS_OP_QLINEAR_ADD, P(binary, .act = {.on = true, .op = MPS_OP_RELU}),
     IN(IR(MPS_U8, 0, 255, 2, 3, 5, 7), CF_SCALAR(0.05), CT(MPS_U8, 128), IR(MPS_I8, -128, 127, 2, 3, 5, 7),
        CF_SCALAR(0.03), CT(MPS_I8, -5), CF_SCALAR(0.07), CT(MPS_U8, 10)),
     OUT(S(2, 3, 5, 7))},
    {"QLinearAdd to int8, zero points omitted, Clip, 9000 elements (three chunks)", MPS_OP_QLINEAR_ADD,
     P(binary, .act = {.on = true, .op = MPS_OP_CLIP, .p = {.alpha = -2.0f, .beta = 3.0f}}),
     IN(IR(MPS_U8, 0, 255, 9000), CF_SCALAR(0.02), OMIT, IR(MPS_U8, 0, 255, 9000), CF_SCALAR(0.04), OMIT,
        CF_SCALAR(0.05), CT(MPS_I8, 3)),
     OUT(S(9000))},
    {"QLinearConcat of uint8 and int8 along axis 1 into uint8, saturating", MPS_OP_QLINEAR_CONCAT, P(axis, .axis = 1),
     IN(CF_SCALAR(0.1), CT(MPS_U8, 100), IR(MPS_U8, 0, 255, 2, 3, 4, 5), CF_SCALAR(0.0473), CT(MPS_U8, 120),
        IR(MPS_I8, -128, 127, 2, 6, 4, 5), CF_SCALAR(0.1337), CT(MPS_I8, 7)),
     OUT(S(2, 9, 4, 5))},
    {"QLinearConcat of runs of 80000 and 40000 (items of 65536: two of one, one of the other)", MPS_OP_QLINEAR_CONCAT,
     P(axis, .axis = 1),
     IN(CF_SCALAR(0.09), CT(MPS_U8, 90), IR(MPS_U8, 0, 255, 1, 2, 200, 200), CF_SCALAR(0.0473), CT(MPS_U8, 120),
        IR(MPS_U8, 0, 255, 1, 1, 200, 200), CF_SCALAR(0.1337), CT(MPS_U8, 7)),
     OUT(S(1, 3, 200, 200))},
    {"QLinearConcat along axis -1 into int8, the parts' zero points omitted", MPS_OP_QLINEAR_CONCAT,
     P(axis, .axis = -1),
     IN(CF_SCALAR(0.03), CT(MPS_I8, -2), IR(MPS_U8, 0, 255, 3, 4), CF_SCALAR(0.01), OMIT, IR(MPS_U8, 0, 255, 3, 7),
        CF_SCALAR(0.02), OMIT),
     OUT(S(3, 11))},
    {"QLinearMul uint8 x int8 to uint8, b per channel [2, 5, 1, 1] of a [2, 5, 9, 31] (runs of 279: blocks of 256 "
     "and 23)",
     MPS_OP_QLINEAR_MUL,
     IN(IR(MPS_U8, 0, 255, 2, 5, 9, 31), CF_SCALAR(0.0473), CT(MPS_U8, 120), IR(MPS_I8, -128, 127, 2, 5, 1, 1),
        CF_SCALAR(0.0061), CT(MPS_I8, -9), CF_SCALAR(0.0233), CT(MPS_U8, 101)),
     OUT(S(2, 5, 9, 31))},
    {"QLinearMul of one shape, 9000 elements (three chunks) to int8, zero points omitted", MPS_OP_QLINEAR_MUL,
     IN(IR(MPS_U8, 0, 255, 9000), CF_SCALAR(0.0213), OMIT, IR(MPS_U8, 0, 255, 9000), CF_SCALAR(0.0137), OMIT,
        CF_SCALAR(0.431), CT(MPS_I8, -100)),
     OUT(S(9000))},
    {"QLinearGlobalAveragePool uint8, planes of 600 (runs of 256, 256, 88)", MPS_OP_QLINEAR_GAP,
     IN(IR(MPS_U8, 0, 255, 2, 3, 20, 30), CF_SCALAR(0.0473), CT(MPS_U8, 100), CF_SCALAR(0.0119), CT(MPS_U8, 70)),
     OUT(S(2, 3, 1, 1))},
    {"QLinearGlobalAveragePool int8 to int8, 3-D", MPS_OP_QLINEAR_GAP,
     IN(IR(MPS_I8, -128, 127, 3, 7, 17), CF_SCALAR(0.031), CT(MPS_I8, 3), CF_SCALAR(0.0031), CT(MPS_I8, -4)),
     OUT(S(3, 7, 1))},
    /* an elementwise op of bytes (the pass makes it of DequantizeLinear, the op, QuantizeLinear): a table */
    {"QLinearUnary HardSwish, uint8 to uint8", MPS_OP_QLINEAR_UNARY,
     P(binary, .act = {.on = true, .op = MPS_OP_HARD_SWISH}),
     IN(IR(MPS_U8, 0, 255, 2, 3, 5, 7), CF_SCALAR(0.0473), CT(MPS_U8, 128), CF_SCALAR(0.0291), CT(MPS_U8, 20)),
     OUT(S(2, 3, 5, 7))},
    {"QLinearUnary Sigmoid, int8 to uint8, 150000 elements (three items)", MPS_OP_QLINEAR_UNARY,
     P(binary, .act = {.on = true, .op = MPS_OP_SIGMOID}),
     IN(IR(MPS_I8, -128, 127, 150000), CF_SCALAR(0.06), CT(MPS_I8, -7), CF_SCALAR(0.0039), CT(MPS_U8, 0)),
     OUT(S(150000))},
    {"QLinearUnary LeakyRelu 0.1 to int8, x's zero point omitted", MPS_OP_QLINEAR_UNARY,
     P(binary, .act = {.on = true, .op = MPS_OP_LEAKY_RELU, .p = {.alpha = 0.1f}}),
     IN(IR(MPS_U8, 0, 255, 3, 67), CF_SCALAR(0.02), OMIT, CF_SCALAR(0.015), CT(MPS_I8, -10)), OUT(S(3, 67))},
    {"QLinearUnary HardSwish, uint8 to f32 (y's scale and zero point omitted: a table of floats), 70000 elements",
     MPS_OP_QLINEAR_UNARY, P(binary, .act = {.on = true, .op = MPS_OP_HARD_SWISH}),
     IN(IR(MPS_U8, 0, 255, 70000), CF_SCALAR(0.0473), CT(MPS_U8, 118), OMIT, OMIT), OUT(S(70000))},
    {"QLinearUnary HardSigmoid 0.2 0.5, int8 to f32", MPS_OP_QLINEAR_UNARY,
     P(binary, .act = {.on = true, .op = MPS_OP_HARD_SIGMOID, .p = {.alpha = 0.2f, .beta = 0.5f}}),
     IN(IR(MPS_I8, -128, 127, 2, 8, 1, 1), CF_SCALAR(0.06), CT(MPS_I8, 12), OMIT, OMIT), OUT(S(2, 8, 1, 1))},
    {"QLinearUnary Clip -1 to 2, int8 in and out", MPS_OP_QLINEAR_UNARY,
     P(binary, .act = {.on = true, .op = MPS_OP_CLIP, .p = {.alpha = -1.0f, .beta = 2.0f}}),
     IN(IR(MPS_I8, -128, 127, 4, 33), CF_SCALAR(0.0313), CT(MPS_I8, 5), CF_SCALAR(0.0207), CT(MPS_I8, -30)),
     OUT(S(4, 33))},
    {"Resize to an empty axis", MPS_OP_RESIZE, P(resize, .mode = MPS_RESIZE_LINEAR),
     IN(F(1, 1, 3, 3), OMIT, OMIT, CI(1, 1, 0, 3)), OUT(S(1, 1, 0, 3))},
};

#define TH_N_CASES (int)(sizeof th_cases / sizeof th_cases[0])

static bool th_is_int(enum mps_dtype t)
{
    return !mps_dtype_is_float(t);
}

/* Data for one case: graph, runtime inputs and their reference copies. */
struct th_data {
    struct mps_graph *g;
    struct mps_tensor rt[9]; /* runtime inputs, in graph input order */
    int n_rt;
    struct ref_tensor ref_in[9];
};

static enum mps_status th_build(const struct th_case *c, const union mps_op_params *p, struct th_data *d,
                                struct mps_error *err)
{
    struct mps_graph *g = d->g = mps_graph_new();
    int in[9], out[4];
    for (int i = 0; i < c->n_in; i++) {
        const struct th_input *x = &c->in[i];
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        if (x->omitted) {
            in[i] = -1;
            continue;
        }
        int64_t n = mps_shape_numel(&x->shape);
        double *v = calloc((size_t)n + 1, sizeof *v);
        double lo = x->lo, hi = x->hi;
        if (lo == 0 && hi == 0)
            lo = -1, hi = 1;
        for (int64_t k = 0; k < n; k++)
            v[k] = x->vals ? x->vals[k] : th_is_int(x->dt) ? floor(th_uniform(lo, hi + 1)) : th_uniform(lo, hi);
        void *raw = th_alloc(x->dt, n);
        if (x->dt == MPS_STRING) { /* the words themselves: static strings */
            memcpy(raw, x->words, sizeof(const char *) * (size_t)n);
        } else {
            th_from_double(x->dt, v, n, raw);
            th_to_double(x->dt, raw, n, v); /* the reference sees exactly what the backend sees */
        }
        d->ref_in[i] = (struct ref_tensor){x->shape, v, th_is_int(x->dt), (const char **)x->words, x->dt};
        if (x->is_const) {
            in[i] = mps_graph_add_const(g, name, x->dt, &x->shape, raw);
            free(raw);
        } else {
            in[i] = mps_graph_add_value(g, name, x->dt, &x->shape);
            d->rt[d->n_rt++] = mps_tensor_make(x->dt, &x->shape, raw);
            if (mps_graph_add_input(g, in[i], err))
                return MPS_ERR_MODEL;
        }
    }
    for (int i = 0; i < c->n_out; i++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        out[i] = mps_graph_add_value(g, name, MPS_F32, NULL);
    }
    enum mps_status st = mps_graph_add_node(g, c->op, c->name, in, c->n_in, out, c->n_out, p, err);
    for (int i = 0; !st && i < c->n_out; i++)
        st = mps_graph_add_output(g, out[i], err);
    if (!st)
        st = mps_graph_sort(g, err);
    if (!st)
        st = mps_graph_infer(g, err);
    return st;
}

static void th_run_case(const struct th_case *c, const struct mps_backend *const *backends, int n_backends)
{
    union mps_op_params p;
    if (c->has_p)
        p = c->p;
    else
        mps_op_params_default(c->op, &p);
    th_seed(c->name);
    struct th_data d = {0};
    struct mps_error err = {{0}};
    char a[96], b[96];
    if (th_build(c, &p, &d, &err) != MPS_OK) {
        th_fail("%s: graph: %s", c->name, err.msg);
        goto out;
    }
    bool shapes_ok = true;
    for (int i = 0; i < c->n_out; i++) {
        const struct mps_value *v = &d.g->values[d.g->outputs[i]];
        if (!mps_shape_eq(&v->shape, &c->out[i])) {
            th_fail("%s: output %d has shape %s, expected %s", c->name, i, mps_shape_str(&v->shape, a, sizeof a),
                    mps_shape_str(&c->out[i], b, sizeof b));
            shapes_ok = false;
        }
    }
    if (!shapes_ok)
        goto out;
    struct ref_tensor want[4];
    for (int i = 0; i < c->n_out; i++) {
        bool words = d.g->values[d.g->outputs[i]].dtype == MPS_STRING;
        want[i] = (struct ref_tensor){c->out[i], calloc((size_t)ref_numel(&c->out[i]) + 1, sizeof(double)), false,
                                      words ? calloc((size_t)ref_numel(&c->out[i]) + 1, sizeof(char *)) : NULL,
                                      d.g->values[d.g->outputs[i]].dtype};
    }
    ref_op(c->op, &p, d.ref_in, c->n_in, want, c->n_out);
    double tol = c->tol > 0 ? c->tol : 1e-9;
    for (int k = 0; k < n_backends; k++) {
        const struct mps_backend *be = backends[k];
        if (mps_backend_unsupported(be, d.g, NULL, 0)) {
            th_skip("%s [%s]: the backend does not support this node", c->name, be->name);
            continue;
        }
        struct mps_tensor got[4];
        if (th_run(be, d.g, d.rt, got, &err) != MPS_OK) {
            th_fail("%s [%s]: %s", c->name, be->name, err.msg);
            th_free_tensors(got, c->n_out);
            continue;
        }
        for (int i = 0; i < c->n_out; i++) {
            int64_t n = ref_numel(&want[i].shape);
            if (!mps_shape_eq(&got[i].shape, &want[i].shape)) { /* a bounded output's size */
                th_fail("%s [%s] output %d: ran as %s, expected %s", c->name, be->name, i,
                        mps_shape_str(&got[i].shape, a, sizeof a), mps_shape_str(&want[i].shape, b, sizeof b));
                continue;
            }
            if (got[i].dtype == MPS_STRING) {
                int64_t bad = -1;
                for (int64_t j = 0; j < n && bad < 0; j++)
                    if (strcmp(((const char *const *)got[i].data)[j], want[i].s[j]))
                        bad = j;
                th_check(bad < 0, "%s [%s] output %d: %s", c->name, be->name, i, bad < 0 ? "the same strings" :
                         (snprintf(a, sizeof a, "string %lld is \"%s\", expected \"%s\"", (long long)bad,
                                   ((const char *const *)got[i].data)[bad], want[i].s[bad]), a));
                continue;
            }
            double *g = calloc((size_t)n + 1, sizeof *g);
            th_to_double(got[i].dtype, got[i].data, n, g);
            if (th_is_int(got[i].dtype)) {
                int64_t bad = -1;
                for (int64_t j = 0; j < n && bad < 0; j++)
                    if (g[j] != want[i].d[j])
                        bad = j;
                th_check(bad < 0, "%s [%s] output %d: %s%s", c->name, be->name, i,
                         bad < 0 ? "exact" : "differs at element ", bad < 0 ? "" : (snprintf(a, sizeof a,
                         "%lld: %g, expected %g", (long long)bad, g[bad], want[i].d[bad]), a));
            } else {
                double e = th_nmse(g, want[i].d, n);
                th_check(e <= tol, "%s [%s] output %d: nmse %.2e (bound %.0e)", c->name, be->name, i, e, tol);
            }
            free(g);
        }
        th_free_tensors(got, c->n_out);
    }
    for (int i = 0; i < c->n_out; i++) {
        for (int64_t j = 0; want[i].s && j < ref_numel(&want[i].shape); j++)
            free((void *)want[i].s[j]);
        free(want[i].s);
        free(want[i].d);
    }
out:
    for (int i = 0; i < d.n_rt; i++)
        free(d.rt[i].data);
    for (int i = 0; i < c->n_in; i++)
        free(d.ref_in[i].d);
    mps_graph_free(d.g);
}

/* NaN in a pooling window: MaxPool gives NaN (as PyTorch and onnxruntime do),
   through the dense interior path (no pads) and the border path (pads). */
/* A k x k stride-2 MaxPool (pads pad, ceil_mode ceil) over in, a [1, 1, h, w]
   input, on the cpu: its outputs (free them), NULL when it did not run. */
static float *th_maxpool(const float *in, int64_t h, int64_t w, int k, int pad, bool ceil, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_shape xs = {4, {1, 1, h, w}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &xs), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
    union mps_op_params p;
    mps_op_params_default(MPS_OP_MAX_POOL, &p);
    p.pool.win.kernel[0] = p.pool.win.kernel[1] = k;
    p.pool.win.stride[0] = p.pool.win.stride[1] = 2;
    for (int i = 0; i < 4; i++)
        p.pool.win.pad[i] = pad;
    p.pool.ceil_mode = ceil;
    mps_graph_add_input(g, x, err);
    mps_graph_add_node(g, MPS_OP_MAX_POOL, "pool", &x, 1, &y, 1, &p, err);
    mps_graph_add_output(g, y, err);
    struct mps_tensor t = mps_tensor_make(MPS_F32, &xs, (void *)in), out[1];
    bool ok = mps_graph_sort(g, err) == MPS_OK && mps_graph_infer(g, err) == MPS_OK &&
              th_run(mps_backend_find("cpu"), g, &t, out, err) == MPS_OK;
    mps_graph_free(g);
    return ok ? out[0].data : NULL;
}

/* A k x k stride-2 MaxPool without pads on an h x w plane of i % mod with a
   NaN at nan_at: checks that exactly the outputs listed in want are NaN. */
static void th_maxpool_nans(const char *what, int64_t h, int64_t w, int k, int mod, int64_t nan_at, const char *want)
{
    struct mps_error err = {{0}};
    float *in = malloc(sizeof(float) * (size_t)(h * w));
    for (int64_t i = 0; i < h * w; i++)
        in[i] = (float)(i % mod);
    in[nan_at] = NAN;
    float *o = th_maxpool(in, h, w, k, 0, false, &err);
    char got[256] = "";
    for (int64_t i = 0, n = ((h - k) / 2 + 1) * ((w - k) / 2 + 1); o && i < n; i++)
        if (isnan(o[i]))
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", *got ? " " : "", (long long)i);
    th_check(o && !strcmp(got, want), "MaxPool %s with a NaN: outputs %s NaN (want %s) %s", what, got, want, err.msg);
    free(o);
    free(in);
}

static void test_maxpool_nan(void)
{
    struct mps_error err = {{0}};
    for (int pad = 0; pad <= 1; pad++) {
        float in[8] = {1, NAN, 3, 4, 5, 6, 7, 8};
        float *o = th_maxpool(in, 2, 4, 2, pad, false, &err);
        /* no pads: windows {1,NaN,5,6} {3,4,7,8}; pads 1: {1} {NaN,3} {4} (a border, an inner, a border) */
        th_check(o && (pad ? o[0] == 1.0f && isnan(o[1]) && o[2] == 4.0f : isnan(o[0]) && o[1] == 8.0f),
                 "MaxPool with a NaN in a window gives NaN (pads %d) %s", pad, err.msg);
        free(o);
    }
    /* a row of 40 (20 outputs: a family's kernel on its wide rows), a NaN at the first row's column 32:
       the first cell of window 16 (vmaxps returns its second operand when either is NaN) */
    th_maxpool_nans("2x2 on a row of 40", 2, 40, 2, 7, 32, "16");
    /* 6x7 (3x3 outputs: a family's two output rows a step, then the last alone), a NaN in the
       upper row of output row 1's windows (vmaxps would drop it), an odd column: only (1, 2) */
    th_maxpool_nans("2x2 on 6x7", 6, 7, 2, 5, 2 * 7 + 5, "5");
    /* 3x3 stride 2 on 9x9 (4x4 outputs: rows narrower than a step), a NaN at row 4, column 6: the
       last row of output row 1's windows and the first of output row 2's (there vmaxps would drop
       it), columns of outputs 2 and 3 */
    th_maxpool_nans("3x3 on 9x9", 9, 9, 3, 11, 4 * 9 + 6, "6 7 10 11");
    /* 3x3 stride 2 on 7x50 (3x24 outputs: avx512's row in four vectors), a NaN at row 2, column
       32: the third tap of output 15 (the first lane of the next vector) and the first of 16 */
    th_maxpool_nans("3x3 on 7x50", 7, 50, 3, 13, 2 * 50 + 32, "15 16 39 40");
    /* 3x3 stride 2 ceil_mode on 3x128 and 3x26, every value -1: the last window's third column lies
       past the row, -inf there (past the last vector, or a masked lane), so it gives -1 */
    float neg[3 * 128];
    for (int i = 0; i < 3 * 128; i++)
        neg[i] = -1.0f;
    for (int r = 0; r < 2; r++) {
        int64_t w = r ? 128 : 26, ow = r ? 64 : 13;
        float *o = th_maxpool(neg, 3, w, 3, 0, true, &err);
        int bad = 0;
        for (int64_t i = 0; o && i < ow; i++)
            bad += o[i] != -1.0f;
        th_check(o && bad == 0, "MaxPool 3x3 stride 2 ceil_mode on 3x%lld of -1: every output -1 (%d not) %s",
                 (long long)w, bad, err.msg);
        free(o);
    }
    /* 3x3 stride 2, pads 1, ceil_mode on 6x6 (4x4 outputs): the last output row's windows hold
       the input's last row alone; a NaN there at column 2 makes outputs (2, 1) and (3, 1) NaN */
    float six[36];
    for (int i = 0; i < 36; i++)
        six[i] = (float)(i % 7);
    six[5 * 6 + 2] = NAN;
    float *o = th_maxpool(six, 6, 6, 3, 1, true, &err);
    char got[64] = "";
    for (int i = 0; o && i < 16; i++)
        if (isnan(o[i]))
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%d", *got ? " " : "", i);
    th_check(o && !strcmp(got, "9 13"), "MaxPool 3x3 pads 1 ceil_mode on 6x6, a NaN in the last row: outputs %s NaN "
             "(want 9 13) %s", got, err.msg);
    free(o);
}

/* a float read as an integer (a shape or count given as a float constant) saturates, NaN as 0:
   the conversion itself is undefined past int64's range (the fuzzer's find) */
static void test_elem_get_int(void)
{
    const float f[] = {2.7f, -2.7f, NAN, 1e30f, -1e30f, INFINITY};
    const double d[] = {2.7, -2.7, NAN, 1e300, -1e300, -INFINITY};
    const int64_t want[] = {2, -2, 0, 9223372036854774784, INT64_MIN, 9223372036854774784};
    for (int i = 0; i < 6; i++) {
        int64_t gf = mps_elem_get_int(f, MPS_F32, i), gd = mps_elem_get_int(d, MPS_F64, i);
        th_check(gf == want[i] && gd == (i == 5 ? INT64_MIN : want[i]),
                 "float %g / double %g read as an integer: %lld / %lld", (double)f[i], d[i], (long long)gf,
                 (long long)gd);
    }
}

int main(int argc, char **argv)
{
    const struct mps_backend *backends[4];
    int n_backends = th_backends(backends, 4);
    bool covered[MPS_OP_COUNT] = {false};
    for (int i = 0; i < TH_N_CASES; i++) {
        covered[th_cases[i].op] = true;
        if (argc > 1 && !strstr(th_cases[i].name, argv[1]))
            continue; /* `test_ops Conv` runs the Conv rows */
        th_run_case(&th_cases[i], backends, n_backends);
    }
    for (int op = 0; op < MPS_OP_COUNT; op++)
        th_check(covered[op], "op %s has rows in the op test", mps_op_name((enum mps_op)op));
    test_maxpool_nan();
    test_elem_get_int();
    return th_summary();
}
