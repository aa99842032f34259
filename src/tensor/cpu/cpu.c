/* cpu.c: the CPU backend: the reference and the fallback, runs every op.

   compile: plans one arena for all activations plus the largest scratch any
   node needs, packs what nodes prepare once (Winograd weights), starts the
   thread pool (the BLAS runs one thread inside it), and lays out each node's
   tensors.
   run: points the graph inputs at the caller's buffers, calls each node's
   kernel in order, copies the outputs out. Nothing is allocated per run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "../backend.h"
#include "../memplan.h"
#include "blas.h"
#include "cpu.h"
#include "isa.h"
#include "kernels.h"
#include "pgemm.h"

/* The kernel of each op; the elementwise unary ones (MPS_TR_UNARY) are all
   mps_cpu_unary's, which mps_cpu_kernel_of adds. */
static const mps_cpu_kernel mps_cpu_kernels[MPS_OP_COUNT] = {
    [MPS_OP_MATMUL] = mps_cpu_matmul,
    [MPS_OP_GEMM] = mps_cpu_gemm,
    [MPS_OP_CONV] = mps_cpu_conv,
    [MPS_OP_QLINEAR_CONV] = mps_cpu_qlinear,
    [MPS_OP_QLINEAR_MATMUL] = mps_cpu_qlinear,
    [MPS_OP_DEQUANTIZE] = mps_cpu_quantize,
    [MPS_OP_QUANTIZE] = mps_cpu_quantize,
    [MPS_OP_QLINEAR_ADD] = mps_cpu_qadd,
    [MPS_OP_QLINEAR_CONCAT] = mps_cpu_qconcat,
    [MPS_OP_QLINEAR_UNARY] = mps_cpu_qunary,
    [MPS_OP_QLINEAR_MUL] = mps_cpu_qmul,
    [MPS_OP_QLINEAR_GAP] = mps_cpu_qgap,
    [MPS_OP_CONV_TRANSPOSE] = mps_cpu_conv_transpose,
    [MPS_OP_MAX_POOL] = mps_cpu_pool,
    [MPS_OP_AVERAGE_POOL] = mps_cpu_pool,
    [MPS_OP_GLOBAL_AVERAGE_POOL] = mps_cpu_global_pool,
    [MPS_OP_GLOBAL_MAX_POOL] = mps_cpu_global_pool,
    [MPS_OP_GLOBAL_LP_POOL] = mps_cpu_global_pool,
    [MPS_OP_BATCH_NORM] = mps_cpu_batch_norm,
    [MPS_OP_LAYER_NORM] = mps_cpu_layer_norm,
    [MPS_OP_INSTANCE_NORM] = mps_cpu_instance_norm,
    [MPS_OP_LRN] = mps_cpu_lrn,
    [MPS_OP_SOFTMAX] = mps_cpu_softmax,
    [MPS_OP_LOG_SOFTMAX] = mps_cpu_softmax,
    [MPS_OP_IDENTITY] = mps_cpu_copy,
    [MPS_OP_DROPOUT] = mps_cpu_copy,
    [MPS_OP_CAST] = mps_cpu_cast,
    [MPS_OP_PRELU] = mps_cpu_prelu,
    [MPS_OP_ADD] = mps_cpu_binary,
    [MPS_OP_SUB] = mps_cpu_binary,
    [MPS_OP_MUL] = mps_cpu_binary,
    [MPS_OP_DIV] = mps_cpu_binary,
    [MPS_OP_POW] = mps_cpu_binary,
    [MPS_OP_MOD] = mps_cpu_binary,
    [MPS_OP_BIT_SHIFT] = mps_cpu_binary,
    [MPS_OP_EYE_LIKE] = mps_cpu_eyelike,
    [MPS_OP_RANDOM_LIKE] = mps_cpu_random,
    [MPS_OP_TFIDF] = mps_cpu_tfidf,
    [MPS_OP_GRID_SAMPLE] = mps_cpu_gridsample,
    [MPS_OP_EINSUM] = mps_cpu_einsum,
    [MPS_OP_DET] = mps_cpu_det,
    [MPS_OP_MAX_UNPOOL] = mps_cpu_unpool,
    [MPS_OP_ROI_ALIGN] = mps_cpu_roialign,
    [MPS_OP_REVERSE_SEQUENCE] = mps_cpu_revseq,
    [MPS_OP_COMPRESS] = mps_cpu_compress,
    [MPS_OP_NON_ZERO] = mps_cpu_nonzero,
    [MPS_OP_NON_MAX_SUPPRESSION] = mps_cpu_nms,
    [MPS_OP_UNIQUE] = mps_cpu_unique,
    [MPS_OP_STRING_NORMALIZER] = mps_cpu_strnorm,
    [MPS_OP_MAX] = mps_cpu_binary,
    [MPS_OP_MIN] = mps_cpu_binary,
    [MPS_OP_SUM] = mps_cpu_binary,
    [MPS_OP_MEAN] = mps_cpu_binary,
    [MPS_OP_REDUCE_MEAN] = mps_cpu_reduce,
    [MPS_OP_REDUCE_SUM] = mps_cpu_reduce,
    [MPS_OP_REDUCE_MAX] = mps_cpu_reduce,
    [MPS_OP_REDUCE_MIN] = mps_cpu_reduce,
    [MPS_OP_REDUCE_PROD] = mps_cpu_reduce,
    [MPS_OP_REDUCE_L1] = mps_cpu_reduce,
    [MPS_OP_REDUCE_L2] = mps_cpu_reduce,
    [MPS_OP_REDUCE_SUM_SQUARE] = mps_cpu_reduce,
    [MPS_OP_REDUCE_LOG_SUM] = mps_cpu_reduce,
    [MPS_OP_REDUCE_LOG_SUM_EXP] = mps_cpu_reduce,
    [MPS_OP_GREATER] = mps_cpu_logic,
    [MPS_OP_LESS] = mps_cpu_logic,
    [MPS_OP_EQUAL] = mps_cpu_logic,
    [MPS_OP_GREATER_OR_EQUAL] = mps_cpu_logic,
    [MPS_OP_LESS_OR_EQUAL] = mps_cpu_logic,
    [MPS_OP_AND] = mps_cpu_logic,
    [MPS_OP_OR] = mps_cpu_logic,
    [MPS_OP_XOR] = mps_cpu_logic,
    [MPS_OP_NOT] = mps_cpu_logic,
    [MPS_OP_IS_NAN] = mps_cpu_logic,
    [MPS_OP_IS_INF] = mps_cpu_logic,
    [MPS_OP_WHERE] = mps_cpu_where,
    [MPS_OP_ARG_MAX] = mps_cpu_arg,
    [MPS_OP_HARDMAX] = mps_cpu_arg,
    [MPS_OP_TOP_K] = mps_cpu_topk,
    [MPS_OP_ARG_MIN] = mps_cpu_arg,
    [MPS_OP_RESHAPE] = mps_cpu_copy,
    [MPS_OP_FLATTEN] = mps_cpu_copy,
    [MPS_OP_TRANSPOSE] = mps_cpu_transpose,
    [MPS_OP_SQUEEZE] = mps_cpu_copy,
    [MPS_OP_UNSQUEEZE] = mps_cpu_copy,
    [MPS_OP_CONCAT] = mps_cpu_concat,
    [MPS_OP_SPLIT] = mps_cpu_split,
    [MPS_OP_SLICE] = mps_cpu_slice,
    [MPS_OP_GATHER] = mps_cpu_gather,
    [MPS_OP_GATHER_ELEMENTS] = mps_cpu_gather_elements,
    [MPS_OP_GATHER_ND] = mps_cpu_gather_nd,
    [MPS_OP_SCATTER_ND] = mps_cpu_scatter_nd,
    [MPS_OP_SCATTER_ELEMENTS] = mps_cpu_scatter_elements,
    [MPS_OP_SHAPE] = mps_cpu_shape,
    [MPS_OP_CONSTANT] = mps_cpu_copy,
    [MPS_OP_CONSTANT_OF_SHAPE] = mps_cpu_fill,
    [MPS_OP_EXPAND] = mps_cpu_expand,
    [MPS_OP_PAD] = mps_cpu_pad,
    [MPS_OP_RESIZE] = mps_cpu_resize,
    [MPS_OP_DEPTH_TO_SPACE] = mps_cpu_depth,
    [MPS_OP_TRILU] = mps_cpu_trilu,
    [MPS_OP_CUM_SUM] = mps_cpu_cumsum,
    [MPS_OP_TILE] = mps_cpu_tile,
    [MPS_OP_RANGE] = mps_cpu_range,
    [MPS_OP_ONE_HOT] = mps_cpu_onehot,
    [MPS_OP_SPACE_TO_DEPTH] = mps_cpu_depth,
    [MPS_OP_IF] = mps_cpu_if,
    [MPS_OP_RNN] = mps_cpu_rnn,
    [MPS_OP_GRU] = mps_cpu_rnn,
    [MPS_OP_LSTM] = mps_cpu_rnn,
    [MPS_OP_NLL_LOSS] = mps_cpu_loss,
    [MPS_OP_SCE_LOSS] = mps_cpu_loss,
};

static mps_cpu_kernel mps_cpu_kernel_of(enum mps_op op)
{
    return mps_op_is_unary(op) ? mps_cpu_unary : mps_cpu_kernels[op];
}

static const mps_cpu_scratch mps_cpu_scratch_fns[MPS_OP_COUNT] = {
    [MPS_OP_MATMUL] = mps_cpu_matmul_scratch,
    [MPS_OP_CONV] = mps_cpu_conv_scratch,
    [MPS_OP_CONV_TRANSPOSE] = mps_cpu_conv_scratch,
    [MPS_OP_QLINEAR_CONV] = mps_cpu_qlinear_scratch,
    [MPS_OP_QLINEAR_MATMUL] = mps_cpu_qlinear_scratch,
    [MPS_OP_MAX_POOL] = mps_cpu_pool_scratch,
    [MPS_OP_RESIZE] = mps_cpu_resize_scratch,
    [MPS_OP_RNN] = mps_cpu_rnn_scratch,
    [MPS_OP_GRU] = mps_cpu_rnn_scratch,
    [MPS_OP_LSTM] = mps_cpu_rnn_scratch,
    [MPS_OP_NON_MAX_SUPPRESSION] = mps_cpu_select_scratch,
    [MPS_OP_UNIQUE] = mps_cpu_select_scratch,
};

static const mps_cpu_pack mps_cpu_pack_fns[MPS_OP_COUNT] = {
    [MPS_OP_CONV] = mps_cpu_conv_pack,
    [MPS_OP_GEMM] = mps_cpu_gemm_pack,
    [MPS_OP_MATMUL] = mps_cpu_matmul_pack,
    [MPS_OP_QLINEAR_CONV] = mps_cpu_qlinear_pack,
    [MPS_OP_QLINEAR_MATMUL] = mps_cpu_qlinear_pack,
    [MPS_OP_RNN] = mps_cpu_rnn_pack,
    [MPS_OP_GRU] = mps_cpu_rnn_pack,
    [MPS_OP_LSTM] = mps_cpu_rnn_pack,
};

struct mps_cpu_state {
    const struct mps_graph *g;
    const struct mps_ukernels *uk; /* the kernel family (isa.h) */
    struct mps_pool *pool;
    void *arena; /* activations, then scratch, then the micro-kernels' per-thread scratch */
    void *scratch;
    void *gemm_scratch;
    struct mps_tensor *vt;    /* per value: its tensor (inputs point at the caller's data during a run) */
    struct mps_tensor *slots; /* per node: its input slots then its output slots */
    int *first_slot;          /* per node: index of its first slot; n_nodes + 1 entries */
    void *packed_block;       /* every node's compile-time data, one block */
    const void **packed;      /* per node: its part of packed_block, or NULL */
    int *writer;              /* per node: the node that computes it (itself, or the Conv before a residual Add) */
    int *res_add;             /* per node: the residual Add a Conv computes too, or -1 */
    int *pool_after;          /* per node: the MaxPool a Conv computes too, or -1 */
    int *dw_after;            /* per node: the depthwise Conv a 1x1 Conv computes too, or -1 */
    int *alias;               /* per value: the value whose bytes it is (a view, memplan.h), or -1 */
    int *into;                /* per value: the Concat output it is written into, at into_at bytes on, or -1 */
    size_t *into_at;
    int64_t *into_stride;     /* per value so written: floats from an image's part to the next's, or 0 */
    struct mps_maxpool_geom *pool_geom; /* per node: that MaxPool's geometry */
    int *guard;                         /* per node: the branch of a run-time If it runs for, or -1 (graph.h) */
    struct mps_branch *branches;
    struct mps_strings *strings; /* the characters of strings nodes make, kept until the next run */
};

/* Slots a node's kernel may read: optional inputs and outputs up to the op's maximum. */
static void mps_cpu_slot_counts(const struct mps_node *n, int *ins, int *outs)
{
    const struct mps_op_info *info = mps_op_info(n->op);
    *ins = info->in_max > n->n_in ? info->in_max : n->n_in;
    *outs = info->out_max > n->n_out ? info->out_max : n->n_out;
}

static void mps_cpu_free(void *state)
{
    struct mps_cpu_state *s = state;
    if (!s)
        return;
    mps_pool_free(s->pool);
    free(s->arena);
    free(s->vt);
    free(s->slots);
    free(s->first_slot);
    free(s->packed_block);
    free(s->packed);
    free(s->writer);
    free(s->res_add);
    free(s->pool_after);
    free(s->dw_after);
    free(s->pool_geom);
    free(s->alias);
    free(s->into);
    free(s->into_at);
    free(s->into_stride);
    free(s->guard);
    free(s->branches);
    mps_strings_free(s->strings);
    free(s);
}

/* Memory for the packed weights and the arena: blocks of 1 MB and more are
   2 MB-aligned and, on Linux, asked for in huge pages (transparent huge
   pages in "madvise" mode give them only when asked), so that streaming a
   model's weights does not walk the page tables every 4 KB (resnet18 at
   batch 1, interleaved: 8.79 -> 8.53, 9.94 -> 9.63, 8.52 -> 8.44 ms; 48 of
   its 148 MB resident in huge pages). From 1 MB, not 2: mnist_cnn's arena at
   batch 8, 1.4 MB once its pooled Convs' outputs got no bytes, ran 4.5%
   slower in 4 KB pages; a huge page wastes at most half itself there. */
static void *mps_cpu_alloc(size_t bytes)
{
    size_t huge = (size_t)2 << 20;
    if (bytes < huge / 2)
        return aligned_alloc(64, (bytes + 63) / 64 * 64);
    void *p = aligned_alloc(huge, (bytes + huge - 1) / huge * huge);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p)
        madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE); /* a hint: failing it changes nothing */
#endif
    return p;
}

/* Bytes node n packs at compile for s's kernel family (mps_cpu_pack_fns). */
static size_t mps_cpu_packed_bytes(const struct mps_cpu_state *s, const struct mps_node *n)
{
    return mps_cpu_pack_fns[n->op] ? mps_cpu_pack_fns[n->op](s->g, n, s->uk, NULL) : 0;
}

/* Prepares each node's compile-time data (mps_cpu_pack_fns) in one block. */
static enum mps_status mps_cpu_pack_all(struct mps_cpu_state *s, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    size_t total = 0;
    for (int k = 0; k < g->n_nodes; k++)
        total += (mps_cpu_packed_bytes(s, &g->nodes[k]) + 63) / 64 * 64;
    if (total == 0)
        return MPS_OK;
    s->packed_block = mps_cpu_alloc(total);
    s->packed = calloc((size_t)g->n_nodes, sizeof *s->packed);
    if (!s->packed_block || !s->packed)
        return mps_fail(err, MPS_ERR_RUNTIME, "cannot allocate %zu bytes for packed weights", total);
    unsigned char *at = s->packed_block;
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        size_t bytes = mps_cpu_packed_bytes(s, n);
        if (!bytes)
            continue;
        mps_cpu_pack_fns[n->op](g, n, s->uk, at);
        s->packed[k] = at;
        at += (bytes + 63) / 64 * 64;
    }
    return MPS_OK;
}

/* A Conv whose output only an Add of the same shape reads, with the Add's
   other input computed before the Conv (resnet's conv2 -> Add -> Relu,
   mobilenet_v2's projection -> Add): the Conv adds it in its store and the
   Add's activation after it, writing the Add's output; the Add does nothing
   (measured: resnet18's eight Adds were 3% of it at batch 1). */
static void mps_cpu_plan_residuals(struct mps_cpu_state *s)
{
    const struct mps_graph *g = s->g;
    for (int k = 0; k < g->n_nodes; k++)
        s->writer[k] = k, s->res_add[k] = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        int only = -1;
        if (!mps_cpu_conv_takes_residual(g, n, s->uk) || n->p.conv.act.on ||
            mps_graph_uses(g, n->out[0], &only) != 1 || only < 0)
            continue;
        const struct mps_node *a = &g->nodes[only];
        if (a->op != MPS_OP_ADD || a->n_in != 2 || a->in[0] == a->in[1] || s->writer[only] != only)
            continue;
        int other = a->in[0] == n->out[0] ? a->in[1] : a->in[0];
        const struct mps_value *r = &g->values[other], *y = &g->values[n->out[0]];
        if (r->dtype != MPS_F32 || g->values[a->out[0]].dtype != MPS_F32 || !mps_shape_eq(&r->shape, &y->shape) ||
            !mps_shape_eq(&g->values[a->out[0]].shape, &y->shape) || r->producer >= k)
            continue;
        s->writer[only] = k;
        s->res_add[k] = only;
    }
}

/* A Conv whose output only a MaxPool reads (the small CNNs' Conv -> Relu ->
   MaxPool 2x2, the stems' 3x3 stride 2; mps_cpu_conv_pool): the Conv pools
   each band of its rows as soon as it has made it, and writes the MaxPool's
   output; the MaxPool does nothing. The conv's rows never leave the cache
   (mnist_cnn at batch 8: 0.88-0.97), nor get bytes in the arena. */
static void mps_cpu_plan_pools(struct mps_cpu_state *s)
{
    const struct mps_graph *g = s->g;
    for (int k = 0; k < g->n_nodes; k++) {
        s->pool_after[k] = -1;
        int p = s->res_add[k] < 0 ? mps_cpu_conv_pool(g, &g->nodes[k], s->uk, &s->pool_geom[k]) : -1;
        if (p >= 0 && s->writer[p] == p && s->writer[k] == k)
            s->writer[p] = k, s->pool_after[k] = p;
    }
}

/* A 1x1 Conv whose output only a depthwise Conv reads (mobilenet's
   expansions; mps_cpu_conv_expand): the depthwise makes each band of its
   input from the 1x1's input as it reads it, sixteen channels a position,
   and both run as the 1x1's node; the depthwise node does nothing. The
   1x1's output (6 times its input there) is never written nor read back,
   and the depthwise reads no planes it must transpose. */
static void mps_cpu_plan_expands(struct mps_cpu_state *s)
{
    const struct mps_graph *g = s->g;
    for (int k = 0; k < g->n_nodes; k++) {
        s->dw_after[k] = -1;
        int d = s->writer[k] == k && s->res_add[k] < 0 && s->pool_after[k] < 0
                    ? mps_cpu_conv_expand(g, &g->nodes[k], s->uk)
                    : -1;
        if (d >= 0 && s->writer[d] == d)
            s->writer[d] = k, s->dw_after[k] = d;
    }
}

/* A Concat whose inputs are each computed by a node for it alone, where the
   axes before the Concat's are all 1 (each input one run of its output), or
   the Concat is of channels and each node a Conv that writes its images
   any stride apart: the nodes write straight into their parts of its
   output, and the Concat does nothing (squeezenet1_1's eight Concats
   copied 3% of it at batch 1, 4% at batch 8). */
static void mps_cpu_plan_concats(struct mps_cpu_state *s)
{
    const struct mps_graph *g = s->g;
    for (int v = 0; v < g->n_values; v++)
        s->into[v] = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        if (n->op != MPS_OP_CONCAT || s->writer[k] != k)
            continue;
        const struct mps_value *y = &g->values[n->out[0]];
        bool ok = true, runs = true, strided = n->p.axis.axis == 1 && y->dtype == MPS_F32;
        for (int i = 0; i < n->p.axis.axis; i++)
            runs = runs && y->shape.dim[i] == 1;
        int first = k;
        for (int i = 0; ok && i < n->n_in; i++) {
            int v = n->in[i], p = v >= 0 ? g->values[v].producer : -1, only = -1;
            ok = p >= 0 && s->writer[p] == p && g->nodes[p].n_out == 1 && !mps_op_is_view(g->nodes[p].op) &&
                 g->nodes[p].op != MPS_OP_CONCAT && mps_graph_uses(g, v, &only) == 1 && only == k;
            strided = strided && ok && mps_cpu_conv_strided(g, &g->nodes[p], s->uk);
            first = ok && p < first ? p : first;
        }
        if (!ok || (!runs && !strided))
            continue;
        size_t at = 0; /* in the first image */
        int64_t image = runs ? 0 : mps_shape_numel(&y->shape) / y->shape.dim[0];
        for (int i = 0; i < n->n_in; i++) {
            const struct mps_value *x = &g->values[n->in[i]];
            s->into[n->in[i]] = n->out[0], s->into_at[n->in[i]] = at, s->into_stride[n->in[i]] = image;
            at += (size_t)(mps_shape_numel(&x->shape) / (runs ? 1 : x->shape.dim[0])) * mps_dtype_size(x->dtype);
        }
        s->writer[k] = first; /* its output lives from its first input's node on */
    }
}

static enum mps_status mps_cpu_compile(const struct mps_graph *g, const struct mps_compile_opts *opts, void **state,
                                       struct mps_error *err)
{
    if (opts->precision != MPS_PRECISION_FP32)
        return mps_fail(err, MPS_ERR_USAGE, "the cpu backend computes in fp32 only");
    const struct mps_ukernels *uk = NULL;
    if (opts->cpu_kernels) {
        struct mps_error why = {{0}};
        if (!(uk = mps_isa_find(opts->cpu_kernels, &why)))
            return mps_fail(err, MPS_ERR_USAGE, "%s", why.msg);
    } else {
        enum mps_status st = mps_isa_kernels(&uk, err);
        if (st)
            return st;
    }
    enum mps_status st8 = mps_isa_check_int8(uk, err);
    if (st8)
        return st8;
    struct mps_cpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    s->g = g;
    s->uk = uk;
    int threads = opts->threads > 0 ? opts->threads : mps_pool_cores();
    s->writer = calloc((size_t)g->n_nodes + 1, sizeof *s->writer);
    s->res_add = calloc((size_t)g->n_nodes + 1, sizeof *s->res_add);
    s->pool_after = calloc((size_t)g->n_nodes + 1, sizeof *s->pool_after);
    s->pool_geom = calloc((size_t)g->n_nodes + 1, sizeof *s->pool_geom);
    s->dw_after = calloc((size_t)g->n_nodes + 1, sizeof *s->dw_after);
    s->into = calloc((size_t)g->n_values + 1, sizeof *s->into);
    s->into_at = calloc((size_t)g->n_values + 1, sizeof *s->into_at);
    s->into_stride = calloc((size_t)g->n_values + 1, sizeof *s->into_stride);
    s->guard = calloc((size_t)g->n_nodes + 1, sizeof *s->guard);
    s->branches = calloc(2 * (size_t)g->n_nodes + 1, sizeof *s->branches);
    s->strings = mps_strings_new();
    if (!s->writer || !s->res_add || !s->pool_after || !s->pool_geom || !s->dw_after || !s->into || !s->into_at ||
        !s->into_stride || !s->guard || !s->branches || !s->strings) {
        mps_cpu_free(s);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    mps_graph_branches(g, s->guard, s->branches);
    mps_cpu_plan_residuals(s);
    mps_cpu_plan_pools(s);
    mps_cpu_plan_expands(s);
    mps_cpu_plan_concats(s);
    /* a Conv that computes the node after it (a MaxPool pooled band by band, a
       depthwise made from the 1x1's input) never makes its own output: no bytes */
    bool *skip = calloc((size_t)g->n_values + 1, sizeof *skip);
    for (int k = 0; skip && k < g->n_nodes; k++)
        if (s->dw_after[k] >= 0 || s->pool_after[k] >= 0)
            skip[g->nodes[k].out[0]] = true;
    struct mps_memplan mp;
    enum mps_status st =
        skip ? mps_memplan_build(g, 64, &(struct mps_memplan_opts){.views = true, .writer = s->writer, .skip = skip},
                                 &mp, err)
             : mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    free(skip);
    if (st) {
        mps_cpu_free(s);
        return st;
    }
    size_t scratch = 0, gemm_scratch = 0;
    int n_slots = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        if (mps_cpu_scratch_fns[n->op]) {
            size_t b = mps_cpu_scratch_fns[n->op](g, n, uk, threads);
            scratch = b > scratch ? b : scratch;
        }
        if (mps_cpu_packed_bytes(s, n))
            gemm_scratch = mps_pgemm_scratch(uk, threads);
        int ins, outs;
        mps_cpu_slot_counts(n, &ins, &outs);
        n_slots += ins + outs;
    }
    scratch = (scratch + 63) / 64 * 64;
    size_t bytes = (mp.size + scratch + gemm_scratch + 63) / 64 * 64;
    s->arena = bytes ? mps_cpu_alloc(bytes) : NULL;
    s->vt = calloc((size_t)g->n_values + 1, sizeof *s->vt);
    s->slots = calloc((size_t)n_slots + 1, sizeof *s->slots);
    s->first_slot = calloc((size_t)g->n_nodes + 1, sizeof *s->first_slot);
    s->alias = calloc((size_t)g->n_values + 1, sizeof *s->alias);
    if ((bytes && !s->arena) || !s->vt || !s->slots || !s->first_slot || !s->alias) {
        mps_memplan_free(&mp);
        mps_cpu_free(s);
        return mps_fail(err, MPS_ERR_RUNTIME, "cannot allocate %zu bytes for the activations", bytes);
    }
#ifdef MPSRUN_POISON_ARENA
    /* sanitizer builds: activations and scratch start as garbage, not the
       zeros fresh pages give, so that a kernel that reads a byte it never
       wrote (a panel's padding, a buffer's border) fails a test here */
    if (bytes)
        memset(s->arena, 0xa5, bytes);
#endif
    s->scratch = (unsigned char *)s->arena + mp.size;
    s->gemm_scratch = (unsigned char *)s->scratch + scratch;
    for (int v = 0; v < g->n_values; v++) {
        const struct mps_value *val = &g->values[v];
        void *data = mp.offset[v] >= 0 ? (unsigned char *)s->arena + mp.offset[v] : (void *)val->data;
        s->vt[v] = mps_tensor_make(val->dtype, &val->shape, data);
        s->alias[v] = mp.alias[v];
    }
    for (int i = 0; i < g->n_outputs; i++) /* the caller's buffer: its view node copies into it */
        s->alias[g->outputs[i]] = -1;
    mps_memplan_free(&mp);
    int slot = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        int ins, outs;
        mps_cpu_slot_counts(n, &ins, &outs);
        s->first_slot[k] = slot;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0)
                s->slots[slot + i] = s->vt[n->in[i]];
        for (int i = 0; i < n->n_out; i++)
            s->slots[slot + ins + i] = s->vt[n->out[i]];
        slot += ins + outs;
    }
    s->first_slot[g->n_nodes] = slot;
    if ((st = mps_cpu_pack_all(s, err))) {
        mps_cpu_free(s);
        return st;
    }
    if ((st = mps_pool_new(threads, &s->pool, err))) {
        mps_cpu_free(s);
        return st;
    }
    mps_pool_after(s->pool, s->uk ? s->uk->clean : NULL);
    mps_blas_set_threads(1); /* products are split over the pool's threads (gemm.c) */
    *state = s;
    return MPS_OK;
}

static bool mps_cpu_cond(int v, void *state)
{
    const struct mps_cpu_state *s = state;
    return ((const uint8_t *)s->vt[v].data)[0] != 0;
}

/* Runs every node; with node_ms, times each. Graph inputs are read where the
   caller keeps them and outputs computed by a node are written straight into
   the caller's buffers: nothing is copied but outputs that are inputs or constants. */
static enum mps_status mps_cpu_run_nodes(struct mps_cpu_state *s, const struct mps_tensor *in, struct mps_tensor *out,
                                         double *node_ms, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    mps_strings_reset(s->strings); /* the last run's strings: the caller has read them */
    for (int i = 0; i < g->n_inputs; i++)
        s->vt[g->inputs[i]].data = in[i].data;
    for (int i = 0; i < g->n_outputs; i++)
        if (g->values[g->outputs[i]].producer >= 0)
            s->vt[g->outputs[i]].data = out[i].data;
    for (int v = 0; v < g->n_values; v++) /* a Concat's inputs: their parts of its output */
        if (s->into[v] >= 0)
            s->vt[v].data = (unsigned char *)s->vt[s->into[v]].data + s->into_at[v];
    for (int v = 0; v < g->n_values; v++) /* views: their root's bytes, where they are this run */
        if (s->alias[v] >= 0)
            s->vt[v].data = s->vt[s->alias[v]].data;
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        struct mps_tensor *t = s->slots + s->first_slot[k];
        int ins, outs;
        if (s->writer[k] != k || (n->n_out == 1 && s->alias[n->out[0]] >= 0) ||
            (s->guard[k] >= 0 && !mps_branch_holds(s->branches, s->guard[k], mps_cpu_cond, s))) {
            /* a residual Add or a MaxPool its Conv computed; a Concat its inputs' nodes
               wrote; a view, its input's bytes; a branch of an If this run does not take
               (what it would have fused is in it too: read only by it) */
            if (node_ms)
                node_ms[k] = 0;
            continue;
        }
        mps_cpu_slot_counts(n, &ins, &outs);
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0)
                t[i].data = s->vt[n->in[i]].data;
        for (int i = 0; i < n->n_out; i++)
            t[ins + i].data = s->vt[n->out[i]].data;
        struct mps_cpu_args args = {.node = n,
                                    .in = t,
                                    .out = t + ins,
                                    .pool = s->pool,
                                    .scratch = s->scratch,
                                    .packed = s->packed ? s->packed[k] : NULL,
                                    .uk = s->uk,
                                    .gemm_scratch = s->gemm_scratch,
                                    .strings = s->strings};
        if (s->res_add[k] >= 0) { /* the Conv writes the Add's output, its other input added */
            const struct mps_node *add = &g->nodes[s->res_add[k]];
            args.out = &s->vt[add->out[0]];
            args.res = s->vt[add->in[0] == n->out[0] ? add->in[1] : add->in[0]].data;
            args.res_act = mps_node_act(add);
        }
        if (s->pool_after[k] >= 0) /* the Conv writes the MaxPool's output */
            args.pool_out = &s->vt[g->nodes[s->pool_after[k]].out[0]], args.pool_geom = &s->pool_geom[k];
        if (s->dw_after[k] >= 0) { /* the 1x1 Conv writes the depthwise's output */
            const struct mps_node *dw = &g->nodes[s->dw_after[k]];
            args.dw = dw, args.dw_out = &s->vt[dw->out[0]], args.dw_w = s->vt[dw->in[1]].data;
            args.dw_bias = dw->n_in > 2 && dw->in[2] >= 0 ? s->vt[dw->in[2]].data : NULL;
        }
        args.out_stride = s->into_stride[n->out[0]]; /* its images' parts of a Concat's output */
        double t0 = node_ms ? mps_cpu_now_ms() : 0;
        enum mps_status st = mps_cpu_kernel_of(n->op)(&args, err);
        if (s->uk && s->uk->clean) /* the workers did after their part (mps_pool_after) */
            s->uk->clean();
        for (int i = 0; i < n->n_out; i++)
            if (g->values[n->out[i]].bounded) { /* the kernel wrote its size: this run's, the slot's bound again */
                s->vt[n->out[i]].shape = t[ins + i].shape;
                t[ins + i].shape = g->values[n->out[i]].shape;
            }
        if (node_ms)
            node_ms[k] = mps_cpu_now_ms() - t0;
        if (st)
            return st;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const struct mps_tensor *src = &s->vt[g->outputs[i]];
        size_t bytes = mps_tensor_bytes(src);
        if (bytes && out[i].data != src->data)
            memcpy(out[i].data, src->data, bytes);
    }
    return MPS_OK;
}

static enum mps_status mps_cpu_run(void *state, const struct mps_tensor *in, struct mps_tensor *out,
                                   struct mps_error *err)
{
    return mps_cpu_run_nodes(state, in, out, NULL, err);
}

static void mps_cpu_run_shape(void *state, int output, struct mps_shape *shape)
{
    const struct mps_cpu_state *s = state;
    *shape = s->vt[s->g->outputs[output]].shape;
}

static void mps_cpu_rest(void *state)
{
    mps_pool_rest(((struct mps_cpu_state *)state)->pool);
}

static enum mps_status mps_cpu_profile(void *state, const struct mps_tensor *in, struct mps_tensor *out,
                                       double *node_ms, struct mps_error *err)
{
    return mps_cpu_run_nodes(state, in, out, node_ms, err);
}

enum mps_status mps_cpu_eval_node(const struct mps_graph *g, const struct mps_node *n, void *const *out,
                                  struct mps_shape *shapes, struct mps_error *err)
{
    int ins, outs;
    mps_cpu_slot_counts(n, &ins, &outs);
    struct mps_tensor *t = calloc((size_t)(ins + outs), sizeof *t);
    size_t scratch = mps_cpu_scratch_fns[n->op] ? mps_cpu_scratch_fns[n->op](g, n, NULL, 1) : 0;
    void *buf = scratch ? malloc(scratch) : NULL;
    if (!t || (scratch && !buf)) {
        free(t);
        free(buf);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] >= 0) {
            const struct mps_value *v = &g->values[n->in[i]];
            t[i] = mps_tensor_make(v->dtype, &v->shape, (void *)v->data);
        }
    for (int i = 0; i < n->n_out; i++) {
        const struct mps_value *v = &g->values[n->out[i]];
        t[ins + i] = mps_tensor_make(v->dtype, &v->shape, out[i]);
    }
    struct mps_cpu_args args = {.node = n, .in = t, .out = t + ins, .pool = NULL, .scratch = buf};
    enum mps_status st = mps_cpu_kernel_of(n->op)(&args, err);
    for (int i = 0; i < n->n_out; i++)
        shapes[i] = t[ins + i].shape;
    free(t);
    free(buf);
    return st;
}

const struct mps_backend mps_backend_cpu = {
    .name = "cpu",
    .description = "CPU: its own micro-kernels for layers with constant weights (AVX-512, AVX2, NEON or C), "
                   "cblas_sgemm for other products, over a pthread pool",
    .precisions = MPS_PRECISION_BIT(MPS_PRECISION_FP32),
    .probe = mps_cpu_probe,
    .supports = NULL, /* every op: the reference and the fallback */
    .compile = mps_cpu_compile,
    .run = mps_cpu_run,
    .free = mps_cpu_free,
    .rest = mps_cpu_rest,
    .run_shape = mps_cpu_run_shape,
    .profile = mps_cpu_profile,
    .bench_baseline = mps_cpu_bench_baseline,
};
