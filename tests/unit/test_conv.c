/* test_conv.c: convolutions with constant weights on each path the cpu
   takes for a trained layer (Winograd, the direct convolution's tiles, the
   packed GEMM) and cuda's, and the nodes the cpu computes inside a Conv (a
   residual Add, a MaxPool, a 1x1 Conv made inside the depthwise after it),
   each against the double reference (ref.c) on every available backend;
   the fusions checked through the cpu's profile at 1, 2 and 3 threads.
   test_ops holds the one-node rows of every op. `test_conv pool` runs the
   table named pool (const, residual, pool, expand). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/tensor/cpu/isa.h"
#include "../../src/tensor/cpu/kernels.h"
#include "harness.h"

/* Convolutions with constant weights (the rows above feed weights as graph
   inputs), on the paths the cpu takes for a trained layer: 3x3 stride 1 as
   Winograd F(2x2, 3x3) (winograd.c: on avx2 and c from 16 channels, on
   avx512 the rows of 16+ input and 64+ output channels whose blocks of 32
   tiles are 3/4 full): odd and even output sizes (partial tiles), asymmetric pads, a
   single output row, a block of tiles across images, parts of the output
   channels per task, groups of blocks per task (U larger than L2), each
   activation (in the transform's store or after it), rows wider than the
   old form's 1024; every other
   2-D (and 1-D) layer as the direct convolution (conv_direct.c), reading a
   zero-padded copy of its input split into a stride's phases: outputs
   narrower than a tile (several output rows in one tile), wider ones,
   dilation, groups, strides 2 and 3, a 7x7 stem, more images and groups
   than one job takes (a job boundary inside an image's groups), bands of
   tiles, W's rows split over threads, W's panels inside or outside the tile
   loop; pointwise layers reading the input
   itself (the plane's last tile moved back inside it), or packed when the
   plane is narrower than a tile; the transposed tile (channels in the
   vectors) where it fills more lanes: 7x7 planes, a part-filled panel of
   channels, pointwise runs across rows, a stride's phases, groups; 3-D
   layers as the packed GEMM from a padded copy. Bias or none; Relu, LeakyRelu, HardSwish (in the tile's store),
   Sigmoid (after it) or none. The larger rows also take cuda's im2col + GEMM path
   (small convolutions run there as one direct kernel). */
static void test_conv_const_weights(const struct mps_backend *const *backends, int n_backends)
{
    static const struct {
        const char *name;
        int rank;
        int64_t size[3], k[3], stride, dilation, pads[6]; /* spatial; pads: ONNX order, rank begins then rank ends */
        bool bias;
        int act; /* 0 none, 1 Relu, 2 LeakyRelu 0.1, 3 Sigmoid, 4 HardSwish */
        int64_t cin, cout, group, images;
    } rows[] = {
        {"Conv 3x3 Winograd pads 1, odd sizes", 2, {13, 11}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, false, 64, 64, 1, 2},
        {"Conv 3x3 Winograd no pads", 2, {16, 14}, {3, 3}, 1, 1, {0, 0, 0, 0}, false, false, 64, 64, 1, 2},
        {"Conv 3x3 Winograd asymmetric pads, Relu", 2, {12, 13}, {3, 3}, 1, 1, {1, 0, 2, 1}, true, true, 64, 64, 1, 2},
        {"Conv 3x3 Winograd one output row", 2, {3, 66}, {3, 3}, 1, 1, {0, 1, 0, 1}, true, false, 64, 20, 1, 2},
        {"Conv 3x3 Winograd, 3 images (a block of tiles across images)", 2, {24, 24}, {3, 3}, 1, 1, {1, 1, 1, 1}, true,
         true, 64, 64, 1, 3},
        {"Conv 3x3 Winograd, LeakyRelu in the transform's store", 2, {10, 8}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, 2, 64,
         64, 1, 4},
        {"Conv 3x3 Winograd, HardSwish in the transform's store", 2, {12, 10}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, 4, 64,
         64, 1, 4},
        {"Conv 3x3 Winograd on 7x7, 256 channels, 6 images (odd sides, 3 blocks)", 2, {7, 7},
         {3, 3}, 1, 1, {1, 1, 1, 1}, true, 1, 256, 256, 1, 6},
        {"Conv 3x3 Winograd, Sigmoid after the transform, no bias", 2, {15, 8}, {3, 3}, 1, 1, {1, 1, 1, 1}, false, 3,
         64, 65, 1, 3},
        {"Conv 3x3 Winograd, rows wider than 1024", 2, {3, 1100}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, 1, 64, 64, 1, 1},
        /* enough blocks of tiles for groups of several at 3 threads (groups: at least two a thread) */
        {"Conv 3x3 Winograd, U past L2 (a task takes a group of blocks)", 2, {20, 20}, {3, 3}, 1, 1, {1, 1, 1, 1}, true,
         1, 64, 136, 1, 6},
        {"Conv 3x3 Winograd, a group's rows of tiles longer than a block", 2, {4, 150}, {3, 3}, 1, 1, {1, 1, 1, 1}, true,
         0, 64, 136, 1, 4},
        {"Conv 3x3 72 channels, Relu", 2, {9, 10}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, true, 72, 24, 1, 2},
        {"Conv 3x3 72 channels, one row, no pads", 2, {3, 40}, {3, 3}, 1, 1, {0, 0, 0, 0}, false, false, 72, 24, 1, 2},
        {"Conv 3x3 padded copy, 16 channels, Relu", 2, {14, 14}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, true, 16, 32, 1, 3},
        {"Conv 3x3 padded copy, one input channel", 2, {28, 28}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, true, 1, 16, 1, 2},
        {"Conv 3x3 padded copy, outputs 2 wide", 2, {7, 2}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, false, 8, 12, 1, 2},
        {"Conv 3x1 padded copy, outputs 1 wide", 2, {9, 1}, {3, 1}, 1, 1, {1, 0, 1, 0}, false, false, 5, 7, 1, 2},
        {"Conv 5x5 padded copy, asymmetric pads, wide rows", 2, {6, 45}, {5, 5}, 1, 1, {2, 0, 1, 3}, true, false, 6, 9,
         1, 2},
        {"Conv 3x3 padded copy, dilation 2", 2, {11, 17}, {3, 3}, 1, 2, {2, 1, 2, 2}, true, true, 4, 10, 1, 2},
        {"Conv 3x3 padded copy, groups 3, 23 images (a job ends inside an image)", 2, {5, 6}, {3, 3}, 1, 1,
         {1, 1, 1, 1}, true, false, 6, 9, 3, 23},
        {"Conv 1-D padded copy, k 5", 1, {37}, {5}, 1, 1, {2, 1}, true, true, 3, 8, 1, 2},
        {"Conv 3-D padded copy, 2x3x3", 3, {4, 6, 7}, {2, 3, 3}, 1, 1, {1, 1, 0, 0, 1, 2}, true, false, 3, 5, 1, 2},
        {"Conv 3x3 stride 2, Relu", 2, {15, 12}, {3, 3}, 2, 1, {1, 1, 1, 1}, true, true, 8, 12, 1, 2},
        {"Conv 7x7 stride 2 pads 3, 3 channels (a stem), LeakyRelu", 2, {23, 30}, {7, 7}, 2, 1, {3, 3, 3, 3}, true, 2,
         3, 16, 1, 2},
        {"Conv 3x3 stride 2, 3 -> 16 (mobilenet_v3's stem), HardSwish in the tile's store", 2, {30, 29}, {3, 3}, 2, 1,
         {1, 1, 1, 1}, true, 4, 3, 16, 1, 2},
        {"Conv 3x3 stride 2 dilation 2, asymmetric pads, Sigmoid", 2, {13, 16}, {3, 3}, 2, 2, {2, 1, 1, 2}, true, 3, 5,
         11, 1, 2},
        {"Conv 3x3 stride 3 (nine phases)", 2, {17, 20}, {3, 3}, 3, 1, {1, 0, 2, 1}, false, 0, 4, 12, 1, 2},
        {"Conv 2x2 stride 2, no pads (patches)", 2, {16, 16}, {2, 2}, 2, 1, {0, 0, 0, 0}, true, 1, 3, 24, 1, 1},
        {"Conv 3x3 48 channels on 40x40 (bands of tiles)", 2, {40, 40}, {3, 3}, 1, 1, {1, 1, 1, 1}, true, 1, 48, 20,
         1, 1},
        {"Conv 3x3 on 4x4, 50 output channels, one image (W's rows split)", 2, {4, 4}, {3, 3}, 1, 1, {1, 1, 1, 1},
         true, 3, 7, 50, 1, 1},
        {"Conv 1x1 in place, plane 63 (the last tile moved back), LeakyRelu", 2, {9, 7}, {1, 1}, 1, 1, {0, 0, 0, 0},
         true, 2, 40, 13, 1, 2},
        {"Conv 1x1 in place on 14x14, 40 -> 120, HardSwish", 2, {14, 14}, {1, 1}, 1, 1, {0, 0, 0, 0}, true, 4, 40, 120,
         1, 2},
        {"Conv 1x1 in place, plane 32, groups 2, 3 images, Sigmoid", 2, {4, 8}, {1, 1}, 1, 1, {0, 0, 0, 0}, true, 3, 6,
         10, 2, 3},
        {"Conv 1x1 in place on 96x96, 32 -> 16 (an input past L2: B's rows asked for ahead)", 2, {96, 96}, {1, 1}, 1,
         1, {0, 0, 0, 0}, true, 1, 32, 16, 1, 2},
        {"Conv 1x1 in place on 55x55, 96 -> 16 (past L2: the conv tile, rows asked for ahead, not the transposed)", 2,
         {55, 55}, {1, 1}, 1, 1, {0, 0, 0, 0}, true, 1, 96, 16, 1, 1},
        {"Conv 1x1 in place on 27x27, 96 -> 32 (280 KB on a wide plane: the conv tile, rows asked for ahead)", 2,
         {27, 27}, {1, 1}, 1, 1, {0, 0, 0, 0}, true, 1, 96, 32, 1, 2},
        {"Conv 1x1 on a plane of 31 (packed)", 1, {31}, {1}, 1, 1, {0, 0}, true, 1, 8, 9, 1, 2},
        {"Conv 1x1 in place on 11x11, 288 -> 260 (the conv tile's B packed: k and W's rows large), Relu", 2, {11, 11},
         {1, 1}, 1, 1, {0, 0, 0, 0}, true, 1, 288, 260, 1, 2},
        {"Conv 3x3 200 channels (W's panels outside the tiles: a tile's B exceeds L1)", 2, {6, 9}, {3, 3}, 1, 1,
         {1, 1, 1, 1}, true, 1, 200, 20, 1, 2},
        {"Conv 1x1 stride 2 (phases no tap reads)", 2, {15, 12}, {1, 1}, 2, 1, {0, 0, 0, 0}, true, 0, 24, 20, 1, 2},
        {"Conv 2x2 stride 3 dilation 2 (phases 0 and 2 copied, 1 read by no tap)", 2, {17, 14}, {2, 2}, 3, 2,
         {1, 0, 0, 1}, true, 1, 5, 9, 1, 2},
        {"Conv 3x3 on 7x7, 56 channels (the transposed tile, a part-filled panel)", 2, {7, 7}, {3, 3}, 1, 1,
         {1, 1, 1, 1}, true, 1, 48, 56, 1, 2},
        {"Conv 1x1 in place on 7x7, 72 -> 56 (transposed, runs across rows)", 2, {7, 7}, {1, 1}, 1, 1, {0, 0, 0, 0}, true,
         3, 72, 56, 1, 2},
        {"Conv 3x3 stride 2 on 14x13 (transposed, a stride's phases), 2 groups", 2, {14, 13}, {3, 3}, 2, 1,
         {1, 1, 1, 1}, true, 2, 64, 128, 2, 3},
        {"Conv 1x1 on 7x7, 96 -> 48 (transposed), HardSwish", 2, {7, 7}, {1, 1}, 1, 1, {0, 0, 0, 0}, true, 4, 96, 48,
         1, 2},
        {"Conv 1x1 in place on 13x13, 64 -> 64 (transposed: 13 tiles of 13 positions, none of 1)", 2, {13, 13},
         {1, 1}, 1, 1, {0, 0, 0, 0}, true, 1, 64, 64, 1, 2},
        {"Conv 3x3 on 27x27, 16 -> 32 (transposed: each row a tile of 14 and one of 13)", 2, {27, 27}, {3, 3}, 1, 1,
         {1, 1, 1, 1}, true, 2, 16, 32, 1, 1},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct mps_graph *g = mps_graph_new();
        struct mps_error err = {{0}};
        th_seed(rows[r].name);
        int rank = rows[r].rank;
        int64_t ci = rows[r].cin, co = rows[r].cout;
        struct mps_shape xs = {rank + 2, {rows[r].images, ci}}, ws = {rank + 2, {co, ci / rows[r].group}};
        union mps_op_params p;
        mps_op_params_default(MPS_OP_CONV, &p);
        for (int j = 0; j < rank; j++) {
            xs.dim[2 + j] = rows[r].size[j];
            ws.dim[2 + j] = rows[r].k[j];
            p.conv.win.stride[j] = rows[r].stride;
            p.conv.win.dilation[j] = rows[r].dilation;
            p.conv.win.pad[j] = rows[r].pads[j];
            p.conv.win.pad[rank + j] = rows[r].pads[rank + j];
        }
        p.conv.group = rows[r].group;
        static const enum mps_op acts[] = {MPS_OP_RELU, MPS_OP_RELU, MPS_OP_LEAKY_RELU, MPS_OP_SIGMOID,
                                           MPS_OP_HARD_SWISH};
        p.conv.act = (struct mps_fused_act){rows[r].act != 0, acts[rows[r].act], {.alpha = 0.1f}};
        int x = mps_graph_add_value(g, "x", MPS_F32, &xs);
        int in[3] = {x, th_add_random_const(g, "w", &ws, -1, 1),
                     rows[r].bias ? th_add_random_const(g, "b", &(struct mps_shape){1, {co}}, -1, 1) : -1};
        int y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        mps_graph_add_input(g, x, &err);
        mps_graph_add_node(g, MPS_OP_CONV, "conv", in, rows[r].bias ? 3 : 2, &y, 1, &p, &err);
        mps_graph_add_output(g, y, &err);
        if (!th_check(mps_graph_sort(g, &err) == MPS_OK && mps_graph_infer(g, &err) == MPS_OK, "%s: graph %s",
                      rows[r].name, err.msg)) {
            mps_graph_free(g);
            continue;
        }
        int64_t n = mps_shape_numel(&g->values[x].shape);
        float *xd = th_alloc(MPS_F32, n);
        for (int64_t i = 0; i < n; i++)
            xd[i] = (float)th_uniform(-1, 1);
        struct mps_tensor t = mps_tensor_make(MPS_F32, &g->values[x].shape, xd);
        struct ref_tensor want;
        th_ref_graph(g, &t, &want);
        for (int k = 0; k < n_backends; k++) {
            struct mps_tensor got[1];
            if (backends[k]->supports && !backends[k]->supports(g, &g->nodes[0])) {
                th_skip("%s [%s]: the backend does not support this node", rows[r].name, backends[k]->name);
                continue;
            }
            if (th_run(backends[k], g, &t, got, &err) != MPS_OK) {
                th_fail("%s [%s]: %s", rows[r].name, backends[k]->name, err.msg);
                continue;
            }
            int64_t ny = ref_numel(&want.shape);
            double *gd = calloc((size_t)ny + 1, sizeof *gd);
            th_to_double(MPS_F32, got[0].data, ny, gd);
            double e = th_nmse(gd, want.d, ny);
            th_check(e <= 1e-9, "%s [%s]: nmse %.2e (bound 1e-09)", rows[r].name, backends[k]->name, e);
            free(gd);
            th_free_tensors(got, 1);
        }
        free(want.d);
        free(xd);
        mps_graph_free(g);
    }
}

/* A tensor of shape sh, uniform in [-1, 1) (free its data). */
static struct mps_tensor th_uniform_tensor(const struct mps_shape *sh)
{
    int64_t n = mps_shape_numel(sh);
    float *d = th_alloc(MPS_F32, n);
    for (int64_t i = 0; i < n; i++)
        d[i] = (float)th_uniform(-1, 1);
    return mps_tensor_make(MPS_F32, sh, d);
}

/* Sorts and infers graph g (at most two outputs), runs it on each backend
   and checks every output against the double reference (nmse 1e-9); keep
   non-NULL: the reference goes there (the caller frees its data; NULL data
   where the graph did not sort). */
static void th_check_graph(const char *name, struct mps_graph *g, const struct mps_tensor *in,
                           const struct mps_backend *const *backends, int n_backends, struct ref_tensor *keep)
{
    struct ref_tensor want[2];
    struct mps_error err = {{0}};
    if (keep)
        keep[0].d = keep[1].d = NULL;
    if (!th_check(mps_graph_sort(g, &err) == MPS_OK && mps_graph_infer(g, &err) == MPS_OK, "%s: graph %s", name,
                  err.msg))
        return;
    th_ref_graph(g, in, want);
    for (int k = 0; k < n_backends; k++) {
        struct mps_tensor got[2];
        if (th_run(backends[k], g, in, got, &err) != MPS_OK) {
            th_fail("%s [%s]: %s", name, backends[k]->name, err.msg);
            continue;
        }
        for (int o = 0; o < g->n_outputs; o++) {
            int64_t ny = ref_numel(&want[o].shape);
            double *gd = calloc((size_t)ny + 1, sizeof *gd);
            th_to_double(MPS_F32, got[o].data, ny, gd);
            double e = th_nmse(gd, want[o].d, ny);
            th_check(e <= 1e-9, "%s [%s]: output %d nmse %.2e (bound 1e-09)", name, backends[k]->name, o, e);
            free(gd);
        }
        th_free_tensors(got, g->n_outputs);
    }
    for (int o = 0; o < g->n_outputs; o++)
        if (keep)
            keep[o] = want[o];
        else
            free(want[o].d);
}

/* Runs g (sorted, at most two outputs) on the cpu at 1, 2 and 3 threads,
   through its profile: each output against want (th_check_graph's double
   reference; freed here), and node taking no time of its own exactly where
   fused (the node before it ran it). */
static void th_check_cpu_fused(const char *name, const struct mps_graph *g, const struct mps_tensor *in,
                               struct ref_tensor *want, int node, bool fused)
{
    struct mps_error err = {{0}};
    const struct mps_ukernels *uk = NULL;
    const char *family = mps_isa_kernels(&uk, &err) == MPS_OK ? uk->name : "?";
    for (int threads = 1; want[0].d && threads <= 3; threads++) {
        struct mps_plan *plan;
        struct mps_tensor out[2];
        double ms[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
        if (!th_check(g->n_nodes <= 8 && mps_plan_compile(&mps_backend_cpu, g,
                                                          &(struct mps_compile_opts){.threads = threads}, &plan,
                                                          &err) == MPS_OK,
                      "%s: compile %s", name, err.msg))
            continue;
        for (int o = 0; o < g->n_outputs; o++) {
            const struct mps_value *v = &g->values[g->outputs[o]];
            out[o] = mps_tensor_make(MPS_F32, &v->shape, th_alloc(MPS_F32, mps_shape_numel(&v->shape)));
        }
        if (th_check(mps_backend_cpu.profile(plan->state, in, out, ms, &err) == MPS_OK, "%s: profile %s", name,
                     err.msg)) {
            for (int o = 0; o < g->n_outputs; o++) {
                int64_t ny = ref_numel(&want[o].shape);
                double *gd = calloc((size_t)ny + 1, sizeof *gd);
                th_to_double(MPS_F32, out[o].data, ny, gd);
                double e = th_nmse(gd, want[o].d, ny);
                th_check(e <= 1e-9, "%s [cpu %s, %d threads]: output %d nmse %.2e (bound 1e-09)", name, family,
                         threads, o, e);
                free(gd);
            }
            th_check((ms[node] == 0) == fused, "%s [cpu %s, %d threads]: %s %s (its own time %.4f ms)", name, family,
                     threads, g->nodes[node].name, fused ? "run by the node before it" : "run by itself", ms[node]);
        }
        th_free_tensors(out, g->n_outputs);
        mps_plan_free(plan);
    }
    for (int o = 0; o < g->n_outputs; o++)
        free(want[o].d);
}

/* A Conv whose output only a residual Add reads: the cpu computes the Add in
   the Conv's store (cpu.c), on each path a trained layer takes (the conv
   tile, the transposed tile, Winograd, the packed GEMM), the residual on
   either side of the Add, an activation in the tile's store or after it;
   and the cases it must leave as they are: the Conv's output read twice,
   a residual that broadcasts. Graph inputs x and r, output the Add's. */
static void test_conv_residual(const struct mps_backend *const *backends, int n_backends)
{
    static const struct {
        const char *name;
        int64_t h, w, k, pad, cin, cout, images;
        int act;          /* 0 none, 1 Relu, 3 Sigmoid (the Add's) */
        bool res_first;   /* Add(r, conv) */
        bool conv_output; /* the Conv's output is a graph output too: not fused */
        bool broadcast;   /* r is [1, cout, 1, 1]: not fused */
    } rows[] = {
        {"residual Add+Relu after a 3x3 conv (the conv tile)", 40, 40, 3, 1, 48, 20, 1, 1, false, false, false},
        {"residual Add+Relu after a 3x3 conv of 8 channels (the conv tile: a padded copy's columns dropped)", 40, 40, 3,
         1, 8, 20, 2, 1, false, false, false},
        {"residual Add after a 1x1 conv on 13x12 (the conv tile in place, its last moved back), r first", 13, 12, 1, 0,
         24, 20, 2, 0, true, false, false},
        {"residual Add after a 3x3 conv on 7x7 (the transposed tile), r first", 7, 7, 3, 1, 48, 56, 2, 0, true, false,
         false},
        {"residual Add+Relu after a 1x1 conv on 7x7 (the transposed tile: the sum, then Relu)", 7, 7, 1, 0, 64, 64, 2,
         1, false, false, false},
        {"residual Add+Relu after a Winograd conv, 3 images", 16, 16, 3, 1, 64, 64, 3, 1, true, false, false},
        {"residual Add+Sigmoid after a Winograd conv, odd sizes (a last column dropped)", 15, 13, 3, 1, 64, 64, 2, 3, false,
         false, false},
        {"residual Add+Sigmoid after a 1x1 conv on 5x6 (packed)", 5, 6, 1, 0, 12, 10, 2, 3, false, false, false},
        {"residual Add, the conv's output read twice (not fused)", 9, 9, 3, 1, 16, 8, 1, 1, false, true, false},
        {"residual Add of a broadcast bias (not fused)", 9, 9, 3, 1, 16, 8, 2, 1, false, false, true},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct mps_graph *g = mps_graph_new();
        struct mps_error err = {{0}};
        th_seed(rows[r].name);
        int64_t ci = rows[r].cin, co = rows[r].cout, oh = rows[r].h + 2 * rows[r].pad - rows[r].k + 1,
                ow = rows[r].w + 2 * rows[r].pad - rows[r].k + 1;
        struct mps_shape xs = {4, {rows[r].images, ci, rows[r].h, rows[r].w}}, ws = {4, {co, ci, rows[r].k, rows[r].k}};
        struct mps_shape rs = rows[r].broadcast ? (struct mps_shape){4, {1, co, 1, 1}}
                                                : (struct mps_shape){4, {rows[r].images, co, oh, ow}};
        union mps_op_params p, ap;
        mps_op_params_default(MPS_OP_CONV, &p);
        for (int j = 0; j < 4; j++)
            p.conv.win.pad[j] = rows[r].pad;
        int x = mps_graph_add_value(g, "x", MPS_F32, &xs), rv = mps_graph_add_value(g, "r", MPS_F32, &rs);
        int in[3] = {x, th_add_random_const(g, "w", &ws, -1, 1),
                     th_add_random_const(g, "b", &(struct mps_shape){1, {co}}, -1, 1)};
        int c = mps_graph_add_value(g, "c", MPS_F32, NULL), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        mps_graph_add_input(g, x, &err);
        mps_graph_add_input(g, rv, &err);
        mps_graph_add_node(g, MPS_OP_CONV, "conv", in, 3, &c, 1, &p, &err);
        mps_op_params_default(MPS_OP_ADD, &ap);
        static const enum mps_op acts[] = {MPS_OP_RELU, MPS_OP_RELU, MPS_OP_RELU, MPS_OP_SIGMOID};
        int ain[2] = {rows[r].res_first ? rv : c, rows[r].res_first ? c : rv};
        mps_graph_add_node(g, MPS_OP_ADD, "add", ain, 2, &y, 1, &ap, &err);
        *mps_node_act(&g->nodes[1]) = (struct mps_fused_act){rows[r].act != 0, acts[rows[r].act], {.alpha = 0.0f}};
        mps_graph_add_output(g, y, &err);
        if (rows[r].conv_output)
            mps_graph_add_output(g, c, &err);
        struct mps_tensor t[2] = {th_uniform_tensor(&g->values[g->inputs[0]].shape),
                                  th_uniform_tensor(&g->values[g->inputs[1]].shape)};
        th_check_graph(rows[r].name, g, t, backends, n_backends, NULL);
        free(t[0].data), free(t[1].data);
        mps_graph_free(g);
    }
}

/* A NaN at row and column 5 of image 0's first channel, and one at row and
   column 6 of image 1's, through a 3x3 pad-1 Conv (every output channel:
   rows and columns 4 .. 6, and 5 .. 7) and its fused 2x2 stride-2 MaxPool:
   exactly pool rows and columns 2 .. 3 of every channel of those two images
   are NaN, whichever path pooled them (Winograd's transform, the
   pooled tile, the band). Their windows hold NaNs beside numbers in the
   first row and column (image 0) and in the last (image 1): a maximum that
   drops a NaN as either operand fails. */
static void th_check_pool_nan(const char *name, const struct mps_graph *g, const struct mps_tensor *x)
{
    struct mps_error err = {{0}};
    struct mps_plan *plan;
    const struct mps_shape *ys = &g->values[g->outputs[0]].shape;
    int64_t n = mps_shape_numel(&x->shape), ny = mps_shape_numel(ys), ph = ys->dim[2], pw = ys->dim[3];
    struct mps_tensor in = mps_tensor_make(MPS_F32, &x->shape, th_alloc(MPS_F32, n));
    struct mps_tensor out = mps_tensor_make(MPS_F32, ys, th_alloc(MPS_F32, ny));
    memcpy(in.data, x->data, sizeof(float) * (size_t)n);
    int64_t image = mps_shape_numel(&x->shape) / x->shape.dim[0];
    ((float *)in.data)[5 * x->shape.dim[3] + 5] = NAN;
    ((float *)in.data)[image + 6 * x->shape.dim[3] + 6] = NAN;
    if (th_check(mps_plan_compile(&mps_backend_cpu, g, &(struct mps_compile_opts){.threads = 2}, &plan, &err) ==
                         MPS_OK &&
                     mps_plan_run(plan, &in, &out, &err) == MPS_OK,
                 "%s, a NaN in: run %s", name, err.msg)) {
        int64_t wrong = 0;
        for (int64_t i = 0; i < ny; i++) {
            int64_t py = i / pw % ph, px = i % pw, b = i / (ys->dim[1] * ph * pw);
            bool want = b < 2 && (py == 2 || py == 3) && (px == 2 || px == 3);
            wrong += isnan(((const float *)out.data)[i]) != want;
        }
        th_check(wrong == 0, "%s, a NaN in: %lld outputs NaN where they should not be, or not where they should",
                 name, (long long)wrong);
        mps_plan_free(plan);
    }
    free(in.data);
    free(out.data);
}

/* The Conv's activation in test_conv_pool's rows: Relu and Clip(0, 6) never
   fall, so a fused pool may come before them (the pooled tiles do);
   LeakyRelu with a negative slope and HardSwish fall somewhere, so the pool
   must take the activated outputs. */
enum th_pool_act { TH_RELU, TH_CLIP, TH_LEAKY_NEG, TH_HSWISH };
static const struct mps_fused_act th_pool_acts[] = {
    [TH_RELU] = {true, MPS_OP_RELU, {.alpha = 0.0f}},
    [TH_CLIP] = {true, MPS_OP_CLIP, {.alpha = 0.0f, .beta = 6.0f}},
    [TH_LEAKY_NEG] = {true, MPS_OP_LEAKY_RELU, {.alpha = -0.5f}},
    [TH_HSWISH] = {true, MPS_OP_HARD_SWISH, {.alpha = 0.0f}},
};

/* A Conv whose output only a MaxPool reads: on a family with a MaxPool
   kernel the cpu pools each band of the Conv's rows as it makes them
   (cpu.c), and the pool node takes no time of its own (checked through the
   profile, at 1, 2 and 3 threads): 2x2 windows on the pooled tile (avx512, avx2: the
   Conv's rows pooled in registers: odd sides, a stride-2 conv's phases,
   panels of fewer than 8 channels); on the conv tile (its columns cut at the
   bands' rows) and the transposed tile, after a stride-2 conv (the phase
   copy), with the Conv's Relu or Clip (which avx512 and avx2 pool before, adding
   the bias and activating once a window), LeakyRelu with a negative slope
   or HardSwish (pooled after, on the pooled tile and Winograd); a window clipped at the bottom
   (ceil_mode), batches and bands of rows; windows that overlap down the
   rows (3x3 stride 2 and stride 1, pads above), a band taking the rows it
   shares with the band before it, and the tiles that band made past its
   rows, where the same thread made that one; a 2x2 stride-2 pool after a
   layer Winograd takes, pooled by its output transform (each tile one
   window) on every family: odd sides (a last row and column of tiles in no
   window), ceil_mode on even sides, blocks of tiles across images, groups
   that do not divide between the threads (a tail split by channels); a NaN
   kept by every 2x2 pool after a 3x3 pad-1 layer (th_check_pool_nan); the
   Conv's output read twice, left as it is. Graph input x, output the
   MaxPool's (and the Conv's, where it is read twice). */
static void test_conv_pool(const struct mps_backend *const *backends, int n_backends)
{
    static const struct {
        const char *name;
        int64_t h, w, k, stride, pad, cin, cout, images;
        int64_t pk, ps, ppad; /* the pool's window, stride and pads */
        bool ceil;            /* ceil_mode */
        enum th_pool_act act; /* the Conv's activation */
        bool conv_output, fused;
        bool wino; /* fused where Winograd takes the Conv (avx2, neon and c take every such layer, avx512 by
                      its rule): its output transform pools; elsewhere the direct path, on a family with a
                      MaxPool kernel (avx512, avx2), 2x2 windows only with the pooled tile (avx512, avx2) */
    } rows[] = {
        {"Conv+Relu -> MaxPool 2x2, 3x3 on 28x28 (avx512, avx2: the pooled tile; others: the bands), 3 images", 28, 28,
         3, 1, 1, 8, 24, 3, 2, 2, 0, false, TH_RELU, false, true, false},
        {"Conv+Clip -> MaxPool 2x2, stride-2 conv on 30x29 (the phase copy)", 30, 29, 3, 2, 1, 5, 16, 1, 2, 2, 0,
         false, TH_CLIP, false, true, false},
        {"Conv+Relu -> MaxPool 2x2 ceil_mode on 13x13 (the last window one row)", 13, 13, 3, 1, 1, 16, 32, 2, 2, 2, 0,
         true, TH_RELU, false, true, false},
        {"Conv+Relu -> MaxPool 2x2, 3x3 on 7x7 (avx512: the transposed tile; others: Winograd)", 7, 7, 3, 1, 1, 64,
         64, 2, 2, 2, 0, false, TH_RELU, false, true, true},
        {"Conv+Relu 3x3 s2 -> MaxPool 3x3 s2 ceil_mode on 113x113, 64 channels, 2 images (squeezenet1_1's stem and "
         "pool: bands share a row)",
         113, 113, 3, 2, 0, 3, 64, 2, 3, 2, 0, true, TH_RELU, false, true, false},
        {"Conv+Relu 7x7 s2 -> MaxPool 3x3 s2 pad 1 on 96x90, 64 channels (resnet18's: a pad above)", 96, 90, 7, 2, 3,
         3, 64, 1, 3, 2, 1, false, TH_RELU, false, true, false},
        {"Conv+Clip 3x3 -> MaxPool 3x3 stride 1 pad 1 on 40x37, 48 channels, 3 images (bands share two rows)", 40, 37,
         3, 1, 1, 4, 48, 3, 3, 1, 1, false, TH_CLIP, false, true, false},
        {"Conv+Relu 3x3 -> MaxPool 3x3 s2 on 200x14, 7 -> 64 channels (the transposed tile, rows shared)", 200, 14, 3,
         1, 1, 7, 64, 1, 3, 2, 0, false, TH_RELU, false, true, false},
        {"Conv+Relu 3x3 -> MaxPool 2x2 on 14x14, 32 -> 64 channels, 8 images (fashion_cnn's second layer: "
         "Winograd pools it)",
         14, 14, 3, 1, 1, 32, 64, 8, 2, 2, 0, false, TH_RELU, false, true, true},
        {"Conv+Relu 3x3 -> MaxPool 2x2 on 15x13, 32 -> 64 channels, 6 images (Winograd: odd sides, blocks across "
         "images, 11 blocks: a tail of 1 at 2 threads, of 2 at 3)",
         15, 13, 3, 1, 1, 32, 64, 6, 2, 2, 0, false, TH_RELU, false, true, true},
        {"Conv+Clip 3x3 -> MaxPool 2x2 ceil_mode on 12x16, 16 -> 64 channels, 6 images (Winograd; even sides)", 12,
         16, 3, 1, 1, 16, 64, 6, 2, 2, 0, true, TH_CLIP, false, true, true},
        {"Conv+LeakyRelu(-0.5) -> MaxPool 2x2 on 28x28, 3 images (avx512, avx2: the pooled tile, pooling after a "
         "falling activation)",
         28, 28, 3, 1, 1, 8, 24, 3, 2, 2, 0, false, TH_LEAKY_NEG, false, true, false},
        {"Conv+HardSwish -> MaxPool 2x2 on 28x28, 3 images (avx512, avx2: the pooled tile, pooling after a "
         "falling activation)",
         28, 28, 3, 1, 1, 8, 24, 3, 2, 2, 0, false, TH_HSWISH, false, true, false},
        {"Conv+LeakyRelu(-0.5) -> MaxPool 2x2 on 14x14, 32 -> 64 channels, 8 images (Winograd, pooling after a "
         "falling activation)",
         14, 14, 3, 1, 1, 32, 64, 8, 2, 2, 0, false, TH_LEAKY_NEG, false, true, true},
        {"Conv+HardSwish -> MaxPool 2x2 on 14x14, 32 -> 64 channels, 8 images (Winograd, pooling after a falling "
         "activation)",
         14, 14, 3, 1, 1, 32, 64, 8, 2, 2, 0, false, TH_HSWISH, false, true, true},
        {"Conv+Relu -> MaxPool 2x2, the conv's output read twice (not fused)", 12, 12, 3, 1, 1, 4, 8, 1, 2, 2, 0,
         false, TH_RELU, true, false, false},
    };
    const struct mps_ukernels *uk = NULL;
    struct mps_error err = {{0}};
    bool family = mps_isa_kernels(&uk, &err) == MPS_OK && uk->maxpool; /* 2x2 windows: with pconv too */
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct mps_graph *g = mps_graph_new();
        th_seed(rows[r].name);
        int64_t ci = rows[r].cin, co = rows[r].cout;
        struct mps_shape xs = {4, {rows[r].images, ci, rows[r].h, rows[r].w}}, ws = {4, {co, ci, rows[r].k, rows[r].k}};
        union mps_op_params p, pp;
        mps_op_params_default(MPS_OP_CONV, &p);
        mps_op_params_default(MPS_OP_MAX_POOL, &pp);
        for (int j = 0; j < 2; j++) {
            p.conv.win.pad[j] = p.conv.win.pad[2 + j] = rows[r].pad;
            p.conv.win.stride[j] = rows[r].stride;
            pp.pool.win.kernel[j] = rows[r].pk;
            pp.pool.win.stride[j] = rows[r].ps;
            pp.pool.win.pad[j] = pp.pool.win.pad[2 + j] = rows[r].ppad;
        }
        pp.pool.ceil_mode = rows[r].ceil;
        p.conv.act = th_pool_acts[rows[r].act];
        int x = mps_graph_add_value(g, "x", MPS_F32, &xs);
        int in[3] = {x, th_add_random_const(g, "w", &ws, -1, 1),
                     th_add_random_const(g, "b", &(struct mps_shape){1, {co}}, -1, 1)};
        int c = mps_graph_add_value(g, "c", MPS_F32, NULL), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        mps_graph_add_input(g, x, &err);
        mps_graph_add_node(g, MPS_OP_CONV, "conv", in, 3, &c, 1, &p, &err);
        mps_graph_add_node(g, MPS_OP_MAX_POOL, "pool", &c, 1, &y, 1, &pp, &err);
        mps_graph_add_output(g, y, &err);
        if (rows[r].conv_output)
            mps_graph_add_output(g, c, &err);
        struct mps_tensor t = th_uniform_tensor(&xs);
        struct ref_tensor want[2];
        th_check_graph(rows[r].name, g, &t, backends, n_backends, want);
        bool wino = uk && mps_winograd_cpu_applies(g, &g->nodes[0], uk);
        bool direct = family && (uk->pconv || rows[r].pk != 2);
        th_check_cpu_fused(rows[r].name, g, &t, want, 1, (wino ? rows[r].wino : direct) && rows[r].fused);
        if (rows[r].k == 3 && rows[r].stride == 1 && rows[r].pad == 1 && rows[r].pk == 2 && rows[r].ps == 2 &&
            !rows[r].conv_output)
            th_check_pool_nan(rows[r].name, g, &t);
        free(t.data);
        mps_graph_free(g);
    }
}

/* A 1x1 Conv whose output only a depthwise Conv reads (mobilenet's
   expansions): on a family with dwb the cpu makes each band of the
   depthwise's input from the 1x1's input as it reads it (cpu.c), and the
   depthwise node takes no time of its own; checked through the profile.
   Stride 1 and 2, 3x3 (fixed taps) and 5x5 dilated (the general sums),
   every activation of the 1x1 and of the depthwise (clamp, LeakyRelu's
   slope, HardSwish, none), rows of 16 positions or more (a step splits
   across two rows) and narrower ones (a step spans several), a width
   prime to every family's step (a row ends at each lane of one), the last step
   moved back inside the plane, columns no window reads, bands of rows,
   several images, 1 to 256 input channels, blocks too few to split evenly
   between the threads (each block's rows in parts, the activation after
   the sums on its part's rows alone); and the pairs it must leave as
   they are: planes under 28x28, more than 256 input channels, the 1x1's
   output read twice, computed right. Graph input x, output the
   depthwise's (and the 1x1's where it is read twice). */
static void test_conv_expand(const struct mps_backend *const *backends, int n_backends)
{
    static const struct {
        const char *name;
        int64_t h, w, cin, mid, images;
        int k, stride, dilation, pad;
        int act1, act2; /* 0 none, 1 Clip(0, 6), 2 LeakyRelu 0.1, 3 HardSwish, 4 Sigmoid */
        bool bias1, twice, fused;
    } rows[] = {
        {"1x1 -> depthwise 3x3 s2 on 112x112, Clip both (mobilenet_v2's second block)", 112, 112, 16, 96, 1, 3, 2, 1,
         1, 1, 1, true, false, true},
        {"1x1 -> depthwise 3x3 s1 on 30x30, 3 images, HardSwish both", 30, 30, 24, 48, 3, 3, 1, 1, 1, 3, 3, true,
         false, true},
        {"1x1 -> depthwise 3x3 s1 on 60x9 (steps across rows), LeakyRelu then none, no bias", 60, 9, 5, 32, 2, 3, 1, 1,
         1, 2, 0, false, false, true},
        {"1x1 -> depthwise 3x3 s1 on 25x23 (a row ends at each lane of a step of 6, 8 or 16), Clip both", 25, 23, 7,
         16, 1, 3, 1, 1, 1, 1, 1, true, false, true},
        {"1x1 -> depthwise 5x5 dilation 2 s1 on 33x33, none then Clip", 33, 33, 3, 16, 1, 5, 1, 2, 4, 0, 1, true, false,
         true},
        {"1x1 -> depthwise 3x3 s2 pad 0 on 41x40 (a column no window reads), 256 channels in", 41, 40, 256, 16, 1, 3,
         2, 1, 0, 1, 1, true, false, true},
        {"1x1 -> depthwise 3x3 s1 on 60x60 (bands of rows), 2 images", 60, 60, 8, 32, 2, 3, 1, 1, 1, 1, 2, true, false,
         true},
        {"1x1 -> depthwise 3x3 s2 on 56x56, 144 channels (9 blocks: their rows in parts)", 56, 56, 24, 144, 1, 3, 2,
         1, 1, 1, 1, true, false, true},
        {"1x1 -> depthwise on 20x20, 144 channels, Sigmoid after (read twice: the depthwise alone, rows in parts)", 20,
         20, 8, 144, 1, 3, 1, 1, 1, 1, 4, true, true, false},
        {"1x1 -> depthwise 3x3 on 14x14 (not fused: a small plane)", 14, 14, 16, 32, 2, 3, 1, 1, 1, 1, 1, true, false,
         false},
        {"1x1 -> depthwise 3x3 on 28x28, 260 channels in (not fused)", 28, 28, 260, 16, 1, 3, 1, 1, 1, 1, 1, true,
         false, false},
        {"1x1 -> depthwise 3x3, the 1x1's output read twice (not fused)", 32, 32, 8, 16, 1, 3, 1, 1, 1, 1, 1, true,
         true, false},
    };
    static const struct mps_fused_act acts[] = {{false, MPS_OP_RELU, {.alpha = 0.0f}},
                                                {true, MPS_OP_CLIP, {.alpha = 0.0f, .beta = 6.0f}},
                                                {true, MPS_OP_LEAKY_RELU, {.alpha = 0.1f}},
                                                {true, MPS_OP_HARD_SWISH, {.alpha = 0.0f}},
                                                {true, MPS_OP_SIGMOID, {.alpha = 0.0f}}};
    const struct mps_ukernels *uk = NULL;
    struct mps_error err = {{0}};
    bool dwb = mps_isa_kernels(&uk, &err) == MPS_OK && uk->dwb;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct mps_graph *g = mps_graph_new();
        th_seed(rows[r].name);
        int64_t ci = rows[r].cin, cm = rows[r].mid;
        struct mps_shape xs = {4, {rows[r].images, ci, rows[r].h, rows[r].w}}, w1s = {4, {cm, ci, 1, 1}},
                         w2s = {4, {cm, 1, rows[r].k, rows[r].k}}, bs = {1, {cm}};
        union mps_op_params p1, p2;
        mps_op_params_default(MPS_OP_CONV, &p1);
        mps_op_params_default(MPS_OP_CONV, &p2);
        p1.conv.act = acts[rows[r].act1];
        p2.conv.act = acts[rows[r].act2];
        p2.conv.group = cm;
        for (int j = 0; j < 2; j++) {
            p2.conv.win.pad[j] = p2.conv.win.pad[2 + j] = rows[r].pad;
            p2.conv.win.stride[j] = rows[r].stride;
            p2.conv.win.dilation[j] = rows[r].dilation;
        }
        int x = mps_graph_add_value(g, "x", MPS_F32, &xs);
        int in1[3] = {x, th_add_random_const(g, "w1", &w1s, -1, 1), th_add_random_const(g, "b1", &bs, -1, 1)};
        int in2[3] = {-1, th_add_random_const(g, "w2", &w2s, -1, 1), th_add_random_const(g, "b2", &bs, -1, 1)};
        int e = mps_graph_add_value(g, "e", MPS_F32, NULL), y = mps_graph_add_value(g, "y", MPS_F32, NULL);
        in2[0] = e;
        mps_graph_add_input(g, x, &err);
        mps_graph_add_node(g, MPS_OP_CONV, "expand", in1, rows[r].bias1 ? 3 : 2, &e, 1, &p1, &err);
        mps_graph_add_node(g, MPS_OP_CONV, "depthwise", in2, 3, &y, 1, &p2, &err);
        mps_graph_add_output(g, y, &err);
        if (rows[r].twice)
            mps_graph_add_output(g, e, &err);
        struct mps_tensor t = th_uniform_tensor(&xs);
        struct ref_tensor want[2];
        th_check_graph(rows[r].name, g, &t, backends, n_backends, want);
        th_check_cpu_fused(rows[r].name, g, &t, want, 1, dwb && rows[r].fused);
        free(t.data);
        mps_graph_free(g);
    }
}

int main(int argc, char **argv)
{
    const struct mps_backend *backends[4];
    int n_backends = th_backends(backends, 4);
    static const struct {
        const char *name;
        void (*run)(const struct mps_backend *const *, int);
    } tables[] = {{"const", test_conv_const_weights},
                  {"residual", test_conv_residual},
                  {"pool", test_conv_pool},
                  {"expand", test_conv_expand}};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        if (argc < 2 || strstr(tables[i].name, argv[1]))
            tables[i].run(backends, n_backends);
    return th_summary();
}
