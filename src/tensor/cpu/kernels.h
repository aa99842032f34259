/* kernels.h: the CPU kernels' calling convention. Internal to the CPU backend.

   A kernel gets one node's tensors, already validated by shape inference:
   contiguous, with the dtypes and shapes the graph says, in[i].data NULL for
   an omitted optional input. It writes its outputs and may use scratch
   (scratch_bytes() of its family, planned at compile time). It fails only on
   data it could not check before the run (a Gather index out of range). */
#ifndef MPS_CPU_KERNELS_H
#define MPS_CPU_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "../backend.h"
#include "../graph.h"
#include "thread_pool.h"
#include "ukernels.h"

struct mps_cpu_args {
    const struct mps_node *node;
    const struct mps_tensor *in;
    struct mps_tensor *out;
    struct mps_pool *pool;
    void *scratch;
    const void *packed; /* what the op's pack function prepared at compile; NULL when none
                           (and always when a node is evaluated alone, by constant folding) */
    const struct mps_ukernels *uk; /* the plan's kernel family (isa.h); NULL with packed */
    void *gemm_scratch;            /* mps_pgemm_scratch bytes for the pool's threads, with packed */
    /* A Conv that computes the residual Add after it (cpu.c): res, laid out
       as out[0], is added before the activation, which is then res_act (the
       Add's) and not the Conv's own; out[0] is the Add's output. NULL: none. */
    const float *res;
    const struct mps_fused_act *res_act;
    /* A Conv that computes the MaxPool after it (cpu.c): pool_out is the
       MaxPool's output, pooled by the family's plane kernel with pool_geom
       from each band of the Conv's rows as soon as it is made; out[0], the
       Conv's own output, is not written. NULL: none. */
    struct mps_tensor *pool_out;
    const struct mps_maxpool_geom *pool_geom;
    /* A 1x1 Conv that computes the depthwise Conv dw after it (cpu.c): dw's
       weights and bias (or NULL), and its output, which dw_out receives;
       out[0], the 1x1's own output, is not written. NULL: none. */
    const struct mps_node *dw;
    const float *dw_w, *dw_bias;
    struct mps_tensor *dw_out;
    /* Floats from one image of out[0] to the next, where it is a part of a
       Concat's output (cpu.c; only where mps_cpu_conv_strided); 0: its own. */
    int64_t out_stride;
    /* The plan's store for the characters of strings a node makes, emptied
       at each run (strings.c); NULL when a node is evaluated alone. */
    struct mps_strings *strings;
};

/* qlinear.c: QLinearConv (2-D, group 1) and QLinearMatMul on the family's
   int8 tile, their weights packed at compile (a compiled plan only) */
enum mps_status mps_cpu_qlinear(const struct mps_cpu_args *a, struct mps_error *err);
/* qcast.c: DequantizeLinear, QuantizeLinear of bytes; QLinearAdd, QLinearConcat */
enum mps_status mps_cpu_quantize(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_qadd(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_qconcat(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_qunary(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_qmul(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_qgap(const struct mps_cpu_args *a, struct mps_error *err);
/* MaxPool of bytes: a plane's rows of maxima per thread. */
size_t mps_cpu_pool_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                            int threads);
size_t mps_cpu_qlinear_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                               int threads);
size_t mps_cpu_qlinear_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                            void *dst);

/* strings.c: a plan's string store, and the kernels that make strings */
struct mps_strings;
struct mps_strings *mps_strings_new(void);
void mps_strings_reset(struct mps_strings *s); /* every string put before is gone; NULL is a no-op */
void mps_strings_free(struct mps_strings *s);  /* NULL is a no-op */
enum mps_status mps_cpu_cast_string(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_strnorm(const struct mps_cpu_args *a, struct mps_error *err);

typedef enum mps_status (*mps_cpu_kernel)(const struct mps_cpu_args *a, struct mps_error *err);
/* Scratch bytes a node needs, from its inferred graph, when threads run it
   with the kernel family uk (NULL: evaluated alone, nothing packed). */
typedef size_t (*mps_cpu_scratch)(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                                  int threads);
/* Bytes of the data a node prepares once at compile (weights packed for the
   micro-kernels of uk), 0 for none; writes them to dst when dst is not NULL. */
typedef size_t (*mps_cpu_pack)(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                               void *dst);

/* probe.c: the backend table's probe and bench_baseline, and a monotonic clock */
enum mps_status mps_cpu_probe(struct mps_backend_info *info, struct mps_error *err);
enum mps_status mps_cpu_bench_baseline(int64_t m, int64_t n, int64_t k, enum mps_precision precision, int threads,
                                       int warmup, int repeat, double *times_ms, struct mps_error *err);
double mps_cpu_now_ms(void);

/* gemm.c */
/* C = alpha op(A) op(B) + beta C through cblas_sgemm (row-major, leading
   dimensions as cblas takes them), split into one block per pool thread when
   it is big enough: the BLAS itself runs one thread, so that its threads and
   the pool's never compete for the cores. */
void mps_cpu_sgemm_ld(struct mps_pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
enum mps_status mps_cpu_matmul(const struct mps_cpu_args *a, struct mps_error *err);
size_t mps_cpu_matmul_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                              int threads);
enum mps_status mps_cpu_gemm(const struct mps_cpu_args *a, struct mps_error *err);
/* Gemm and MatMul with constant weights: B packed for uk's micro-kernels (pgemm.h) */
size_t mps_cpu_gemm_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         void *dst);
size_t mps_cpu_matmul_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                           void *dst);
/* conv.c */
enum mps_status mps_cpu_conv(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_conv_transpose(const struct mps_cpu_args *a, struct mps_error *err);
size_t mps_cpu_conv_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                              int threads);
size_t mps_cpu_conv_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         void *dst);
/* Whether the Conv n, run with uk, can take a residual (mps_cpu_args.res):
   a 2-D layer with constant weights (direct, Winograd or packed). */
bool mps_cpu_conv_takes_residual(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk);
/* The MaxPool node a Conv n computes too (mps_cpu_args.pool_out), or -1:
   the only reader of a 2-D direct Conv's output (its activation in the
   tile's store) is a MaxPool the family's plane kernel runs (geom set). */
int mps_cpu_conv_pool(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                      struct mps_maxpool_geom *geom);
/* The depthwise Conv node a Conv n computes too (mps_cpu_args.dw), or -1:
   n is a 2-D 1x1 direct Conv (its activation in the tile's store) whose
   only reader is a depthwise layer that the family's dwb runs with its
   input made from n's on the fly (mps_dwb_expand). */
int mps_cpu_conv_expand(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk);
/* Whether the Conv n, run with uk, writes its output with any image stride
   (mps_cpu_args.out_stride): the direct and the Winograd paths. */
bool mps_cpu_conv_strided(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk);
/* Whether the family's plane kernel runs the MaxPool p (pooling.c), and its
   geometry; uk NULL: whether p is a plane pool at all (2-D, f32, no indices). */
bool mps_cpu_maxpool_plane(const struct mps_graph *g, const struct mps_node *p, const struct mps_ukernels *uk,
                           struct mps_maxpool_geom *geom);
/* The activation a Conv ends with: the Add's when it computes one, else its own. */
const struct mps_fused_act *mps_cpu_conv_act(const struct mps_cpu_args *a);
/* winograd.c: 3x3 stride-1 Conv as F(2x2, 3x3), weights transformed at compile.
   mps_winograd_cpu_applies: the CPU's rule, for the family uk (NULL: for
   some family, as scratch is sized). */
bool mps_winograd_cpu_applies(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk);
/* V and M of the fused run: per thread, each task a block of tiles at a time */
size_t mps_winograd_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                            int threads);
size_t mps_winograd_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         void *dst);
/* Whether Winograd's output transform computes the MaxPool of geometry pg
   after n: 2x2 windows of stride 2 and no pads, one a tile (mps_cpu_conv_pool). */
bool mps_winograd_pools(const struct mps_graph *g, const struct mps_node *n, const struct mps_maxpool_geom *pg);
/* Runs the convolution of a (u: what mps_winograd_pack wrote), bias and
   fused activation included, and the fused MaxPool where a has one. */
void mps_winograd_conv(const struct mps_cpu_args *a, const void *u);
/* pooling.c */
/* s plus x[0 .. n) (n <= 256) as GlobalAveragePool sums a run: sixteen float
   sums (loops the compiler vectorizes), then each added to s in double. */
double mps_cpu_sum_run(double s, const float *x, int64_t n);
enum mps_status mps_cpu_pool(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_unpool(const struct mps_cpu_args *a, struct mps_error *err); /* MaxUnpool */
enum mps_status mps_cpu_global_pool(const struct mps_cpu_args *a, struct mps_error *err);
/* norm.c */
enum mps_status mps_cpu_batch_norm(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_lrn(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_instance_norm(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_layer_norm(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_softmax(const struct mps_cpu_args *a, struct mps_error *err);
/* unary.c */
enum mps_status mps_cpu_unary(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_copy(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_cast(const struct mps_cpu_args *a, struct mps_error *err);
/* y[i] = op(x[i]) for i < n, f32 elementwise op (MPS_TR_UNARY) as its node computes it, on the calling thread. */
void mps_cpu_unary_f32(enum mps_op op, const struct mps_act_params *p, const float *x, float *y, int64_t n);
/* Applies a fused activation (when act->on) to y[0 .. n) in place, on the calling thread. */
void mps_cpu_act_inplace(const struct mps_fused_act *act, float *y, int64_t n);
/* y[i] = act(y[i] + r[i]) for i < n (a residual Add computed by the Conv before it). */
void mps_cpu_add_act(const struct mps_fused_act *act, float *y, const float *r, int64_t n);
/* Applies the activation fused into a Conv, ConvTranspose or Gemm node to its output. */
enum mps_status mps_cpu_fused_act(const struct mps_cpu_args *a, struct mps_error *err);
/* binary.c */
enum mps_status mps_cpu_binary(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_prelu(const struct mps_cpu_args *a, struct mps_error *err);
/* reduce.c */
enum mps_status mps_cpu_arg(const struct mps_cpu_args *a, struct mps_error *err); /* ArgMax, ArgMin, Hardmax */
enum mps_status mps_cpu_reduce(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_topk(const struct mps_cpu_args *a, struct mps_error *err);
/* Comparisons, And/Or/Xor/Not, IsNaN, IsInf (logic.c) */
enum mps_status mps_cpu_logic(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_where(const struct mps_cpu_args *a, struct mps_error *err);
/* a run-time If's outputs: the taken branch's, copied (the other's nodes did not run: cpu.c) */
enum mps_status mps_cpu_if(const struct mps_cpu_args *a, struct mps_error *err);
/* RNN, GRU, LSTM (rnn.c) */
enum mps_status mps_cpu_rnn(const struct mps_cpu_args *a, struct mps_error *err);
size_t mps_cpu_rnn_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                           int threads);
/* constant W and R packed for uk's micro-kernels, per direction */
size_t mps_cpu_rnn_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk, void *dst);
/* Det (det.c) */
enum mps_status mps_cpu_det(const struct mps_cpu_args *a, struct mps_error *err);
/* Einsum (einsum.c) */
enum mps_status mps_cpu_einsum(const struct mps_cpu_args *a, struct mps_error *err);
/* GridSample, RoiAlign (gridsample.c) */
enum mps_status mps_cpu_gridsample(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_roialign(const struct mps_cpu_args *a, struct mps_error *err);
/* A softmax lane's shift (norm.c): its largest element into *mx, and the log of the
   sum of exp(x - mx) over its n elements at stride st, in double. */
double mps_cpu_lane_shift(const float *x, int64_t n, int64_t st, float *mx);
/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (loss.c) */
enum mps_status mps_cpu_loss(const struct mps_cpu_args *a, struct mps_error *err);
/* layout.c */
enum mps_status mps_cpu_transpose(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_concat(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_split(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_slice(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_gather(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_gather_elements(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_gather_nd(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_scatter_nd(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_scatter_elements(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_shape(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_fill(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_expand(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_pad(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_depth(const struct mps_cpu_args *a, struct mps_error *err); /* DepthToSpace, SpaceToDepth */
/* resize.c */
enum mps_status mps_cpu_tile(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_range(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_onehot(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_trilu(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_eyelike(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_random(const struct mps_cpu_args *a, struct mps_error *err); /* RandomLike */
enum mps_status mps_cpu_tfidf(const struct mps_cpu_args *a, struct mps_error *err);  /* TfIdfVectorizer */
enum mps_status mps_cpu_revseq(const struct mps_cpu_args *a, struct mps_error *err); /* ReverseSequence */
enum mps_status mps_cpu_compress(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_nonzero(const struct mps_cpu_args *a, struct mps_error *err);
/* select.c: NonMaxSuppression and Unique, their sizes a run's (they set a->out[i].shape) */
size_t mps_cpu_select_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                              int threads);
enum mps_status mps_cpu_nms(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_unique(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_cumsum(const struct mps_cpu_args *a, struct mps_error *err);
enum mps_status mps_cpu_resize(const struct mps_cpu_args *a, struct mps_error *err);
size_t mps_cpu_resize_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                              int threads);

/* n floats from src to dst, 5 or 6 (avx2's transposed tile) in constant-size moves: a memcpy call of so few
   cost as much as the loop of scalar copies, and that loop had been a fifth of avx2's 960 -> 160 on 7x7
   (conv_direct.c's packed tiles). */
static inline void mps_cpu_copy_few(float *dst, const float *src, int64_t n)
{
    if (n == 6)
        memcpy(dst, src, 6 * sizeof(float));
    else if (n == 5)
        memcpy(dst, src, 5 * sizeof(float));
    else
        for (int64_t j = 0; j < n; j++)
            dst[j] = src[j];
}

/* Copies a strided view: dst[i] = src[i] over shape, strides in elements of
   elem bytes, over the pool (NULL: on the calling thread). The workhorse of
   transpose, slice, expand, concat and split. */
void mps_cpu_copy_strided(struct mps_pool *pool, void *dst, const int64_t *dst_stride, const void *src,
                          const int64_t *src_stride, const struct mps_shape *shape, size_t elem);

#endif
