/* cuda.c: the CUDA backend's plan and table (node launchers in nodes.c,
   cuBLAS in blas.c). Compile once: one device arena for every
   activation (the CPU backend's liveness plan), weights uploaded once, cuBLAS
   handle and workspace, and the whole run — input copies, every node's
   kernels and GEMMs, output copies — captured into one CUDA graph. A run
   copies the inputs into pinned memory, replays the graph, waits once, and
   copies the outputs out: no allocation, no per-op synchronization. A caller
   that writes its inputs straight into the pinned staging (host_io: two
   slots, each with its own graph) skips those host copies. A second
   graph without the copies replays the nodes alone on what the last run left
   on the device (rerun: bench's resident time); profile launches the nodes
   one by one between events.
   Every CUDA and cuBLAS call is checked; the failing statement is named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "memplan.h"
#include "nodes.h"
#include "winograd_weights.h"

/* Gather reads its indices on the device, where a bad one cannot be refused:
   only constant indices (checked here) run on the GPU. */
static bool mps_cuda_supports(const struct mps_graph *g, const struct mps_node *n)
{
    enum mps_dtype first = n->n_in > 0 && n->in[0] >= 0 ? g->values[n->in[0]].dtype : MPS_F32;
    if (n->op == MPS_OP_QLINEAR_CONV || n->op == MPS_OP_QLINEAR_MATMUL || n->op == MPS_OP_DEQUANTIZE ||
        n->op == MPS_OP_QUANTIZE || (n->op == MPS_OP_MAX_POOL && (first == MPS_U8 || first == MPS_I8)))
        return mps_cuda_quant_supports(g, n);                       /* the bytes of the int8 path (nodes_quant.c) */
    if (!mps_node_gpu_dtypes(g, n) || !mps_cuda_launcher_of(n->op)) /* the cpu computes those */
        return false;
    if (n->op == MPS_OP_IF) /* decided at run time: the cpu backend runs the taken branch alone (graph.h) */
        return false;
    if (n->op == MPS_OP_GATHER_ELEMENTS || n->op == MPS_OP_GATHER_ND || n->op == MPS_OP_SCATTER_ND ||
        n->op == MPS_OP_SCATTER_ELEMENTS) /* constant indices, checked at load: a bad one cannot fail a kernel */
        return g->values[n->in[1]].data != NULL;
    if (n->op != MPS_OP_GATHER)
        return true;
    const struct mps_value *ix = &g->values[n->in[1]], *x = &g->values[n->in[0]];
    if (!ix->data)
        return false;
    int64_t len = x->shape.dim[n->p.axis.axis], count = mps_shape_numel(&ix->shape);
    for (int64_t i = 0; i < count; i++) {
        int64_t v = ix->dtype == MPS_I64 ? ((const int64_t *)ix->data)[i] : ((const int32_t *)ix->data)[i];
        if (v < -len || v >= len)
            return false;
    }
    return true;
}

static void mps_cuda_free(void *state)
{
    struct mps_cuda_state *s = state;
    if (!s)
        return;
    for (int k = 0; k < 2; k++) {
        if (s->exec[k])
            cudaGraphExecDestroy(s->exec[k]);
        if (s->graph[k])
            cudaGraphDestroy(s->graph[k]);
        cudaFreeHost(s->pinned[k]);
    }
    if (s->nodes_exec)
        cudaGraphExecDestroy(s->nodes_exec);
    if (s->nodes_graph)
        cudaGraphDestroy(s->nodes_graph);
    for (int k = 0; s->events && k <= s->g->n_nodes; k++)
        if (s->events[k])
            cudaEventDestroy(s->events[k]);
    free(s->events);
    for (int i = 0; s->in_dev && i < s->g->n_inputs; i++)
        cudaFree(s->in_dev[i]);
    cudaFree(s->arena);
    cudaFree(s->weights);
    cudaFree(s->workspace);
    cudaFree(s->packed_block);
    free(s->packed);
    free(s->writer);
    if (s->blas)
        mps_cublas.destroy(s->blas);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    free(s->dptr);
    free(s->in_dev);
    free(s->in_pin);
    free(s->out_pin);
    free(s);
}

static size_t mps_cuda_bytes(const struct mps_value *v)
{
    return (size_t)mps_shape_numel(&v->shape) * mps_dtype_size(v->dtype);
}

#define MPS_CUDA_ALIGN(x) (((x) + 255) / 256 * 256)

/* What node n prepares once, on the host: Winograd's transformed weights
   (winograd_weights.h, plain U[k][m][c]), an int8 product's weights and
   requantization (nodes_quant.c), or an index op's flat offsets (graph.h:
   mps_index_plan). Its bytes; host NULL: only counts. */
static size_t mps_cuda_prepared(const struct mps_graph *g, const struct mps_node *n, void *host)
{
    if (mps_cuda_winograd(g, n)) {
        const struct mps_shape *ws = &g->values[n->in[1]].shape;
        int64_t mc = ws->dim[0] * ws->dim[1];
        if (host)
            mps_winograd_weights(g, n, 1, mc, host);
        return 16 * (size_t)mc * sizeof(float);
    }
    if (n->op == MPS_OP_QLINEAR_CONV || n->op == MPS_OP_QLINEAR_MATMUL)
        return mps_cuda_qlinear_prepared(g, n, host);
    if (n->op == MPS_OP_GATHER_ELEMENTS || n->op == MPS_OP_GATHER_ND || n->op == MPS_OP_SCATTER_ND ||
        n->op == MPS_OP_SCATTER_ELEMENTS)
        return sizeof(int64_t) * (size_t)mps_index_plan(g, n, host, NULL);
    return 0;
}

/* What the nodes prepare, copied into one device block. */
static enum mps_status mps_cuda_pack(struct mps_cuda_state *s, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    size_t total = 0, off = 0, most = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        size_t b = mps_cuda_prepared(g, &g->nodes[k], NULL);
        total += MPS_CUDA_ALIGN(b);
        most = b > most ? b : most;
    }
    if (!total)
        return MPS_OK;
    void *host = malloc(most);
    if (!host)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    cudaError_t e = cudaMalloc(&s->packed_block, total);
    for (int k = 0; k < g->n_nodes && e == cudaSuccess; k++) {
        if (!mps_cuda_prepared(g, &g->nodes[k], NULL))
            continue;
        size_t b = mps_cuda_prepared(g, &g->nodes[k], host);
        s->packed[k] = (unsigned char *)s->packed_block + off;
        e = cudaMemcpy(s->packed[k], host, b, cudaMemcpyHostToDevice);
        off += MPS_CUDA_ALIGN(b);
    }
    free(host);
    if (e != cudaSuccess)
        return mps_fail(err, MPS_ERR_RUNTIME, "preparing %zu bytes of packed weights: %s", total, cudaGetErrorString(e));
    return MPS_OK;
}

/* Device memory: the arena (activations then scratch), one block of weights, one buffer per input. */
static enum mps_status mps_cuda_memory(struct mps_cuda_state *s, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    struct mps_memplan mp;
    enum mps_status st = mps_memplan_build(g, 256, &(struct mps_memplan_opts){.views = true, .writer = s->writer},
                                           &mp, err);
    if (st)
        return st;
    size_t scratch = 0, weights = 0, pinned = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        size_t b = mps_cuda_scratch(g, &g->nodes[k]);
        scratch = b > scratch ? b : scratch;
    }
    for (int v = 0; v < g->n_values; v++)
        if (g->values[v].data)
            weights += MPS_CUDA_ALIGN(mps_cuda_bytes(&g->values[v]));
    for (int i = 0; i < g->n_inputs; i++)
        pinned += MPS_CUDA_ALIGN(mps_cuda_bytes(&g->values[g->inputs[i]]));
    for (int i = 0; i < g->n_outputs; i++)
        pinned += MPS_CUDA_ALIGN(mps_cuda_bytes(&g->values[g->outputs[i]]));
    cudaError_t e = cudaMalloc(&s->arena, mp.size + scratch + 256);
    if (e == cudaSuccess && weights)
        e = cudaMalloc(&s->weights, weights);
    s->pinned_bytes = pinned + 256;
    if (e == cudaSuccess)
        e = cudaMallocHost(&s->pinned[0], s->pinned_bytes);
    if (e != cudaSuccess) {
        mps_memplan_free(&mp);
        return mps_fail(err, MPS_ERR_RUNTIME, "cannot allocate %zu bytes of activations, %zu of weights: %s",
                        mp.size + scratch, weights, cudaGetErrorString(e));
    }
    s->scratch = (unsigned char *)s->arena + MPS_CUDA_ALIGN(mp.size);
    size_t woff = 0;
    for (int v = 0; v < g->n_values && !st; v++) {
        const struct mps_value *val = &g->values[v];
        if (mp.offset[v] >= 0) {
            s->dptr[v] = (unsigned char *)s->arena + mp.offset[v];
        } else if (val->data) {
            s->dptr[v] = (unsigned char *)s->weights + woff;
            e = cudaMemcpy(s->dptr[v], val->data, mps_cuda_bytes(val), cudaMemcpyHostToDevice);
            if (e != cudaSuccess)
                st = mps_fail(err, MPS_ERR_RUNTIME, "uploading '%s' failed: %s", val->name, cudaGetErrorString(e));
            woff += MPS_CUDA_ALIGN(mps_cuda_bytes(val));
        }
    }
    if (!st)
        st = mps_cuda_pack(s, err);
    size_t poff = 0;
    for (int i = 0; i < g->n_inputs && !st; i++) {
        const struct mps_value *v = &g->values[g->inputs[i]];
        e = cudaMalloc(&s->in_dev[i], mps_cuda_bytes(v) + 1);
        if (e != cudaSuccess)
            st = mps_fail(err, MPS_ERR_RUNTIME, "cannot allocate input '%s': %s", v->name, cudaGetErrorString(e));
        s->dptr[g->inputs[i]] = s->in_dev[i];
        s->in_pin[i] = poff;
        poff += MPS_CUDA_ALIGN(mps_cuda_bytes(v));
    }
    for (int i = 0; i < g->n_outputs; i++) {
        s->out_pin[i] = poff;
        poff += MPS_CUDA_ALIGN(mps_cuda_bytes(&g->values[g->outputs[i]]));
    }
    for (int v = 0; v < g->n_values; v++) /* views: their root's memory, an input's or a weight's too */
        if (mp.alias[v] >= 0)
            s->dptr[v] = s->dptr[mp.alias[v]];
    mps_memplan_free(&mp);
    return st;
}

/* Enqueues node k's work on the stream; a failure names the node. */
static enum mps_status mps_cuda_node(struct mps_cuda_state *s, int k, struct mps_error *err)
{
    const struct mps_node *n = &s->g->nodes[k];
    bool empty = true;
    for (int o = 0; o < n->n_out; o++)
        empty = empty && mps_shape_numel(&s->g->values[n->out[o]].shape) == 0;
    if (empty || s->writer[k] != k)
        return MPS_OK;
    enum mps_status st = mps_cuda_launcher_of(n->op)(s, n, err);
    if (st) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        return mps_fail(err, st, "node '%s' (%s): %s", n->name, mps_op_name(n->op), why);
    }
    return MPS_OK;
}

/* Enqueues the copies of the inputs from staging slot `slot` (in) or of the outputs to it. */
static enum mps_status mps_cuda_copies(struct mps_cuda_state *s, int slot, bool in, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    for (int i = 0; i < (in ? g->n_inputs : g->n_outputs); i++) {
        int v = in ? g->inputs[i] : g->outputs[i];
        size_t bytes = mps_cuda_bytes(&g->values[v]);
        unsigned char *pin = (unsigned char *)s->pinned[slot] + (in ? s->in_pin[i] : s->out_pin[i]);
        if (bytes)
            MPS_CUDA_CHECK(cudaMemcpyAsync(in ? s->dptr[v] : pin, in ? pin : s->dptr[v], bytes,
                                           in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s->stream));
    }
    return MPS_OK;
}

/* Records every node, between the copies from and to staging slot `slot` (-1: no copies). */
static enum mps_status mps_cuda_record(struct mps_cuda_state *s, int slot, struct mps_error *err)
{
    enum mps_status st = slot >= 0 ? mps_cuda_copies(s, slot, true, err) : MPS_OK;
    for (int k = 0; k < s->g->n_nodes && !st; k++)
        st = mps_cuda_node(s, k, err);
    return st || slot < 0 ? st : mps_cuda_copies(s, slot, false, err);
}

/* Captures the record into *graph and instantiates it; a failure inside still ends the capture. */
static enum mps_status mps_cuda_capture(struct mps_cuda_state *s, int slot, cudaGraph_t *graph,
                                        cudaGraphExec_t *exec, struct mps_error *err)
{
    MPS_CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
    enum mps_status st = mps_cuda_record(s, slot, err);
    cudaError_t e = cudaStreamEndCapture(s->stream, graph);
    if (st)
        return st;
    if (e != cudaSuccess)
        return mps_fail(err, MPS_ERR_RUNTIME, "capturing the CUDA graph failed: %s", cudaGetErrorString(e));
    MPS_CUDA_CHECK(cudaGraphInstantiate(exec, *graph, 0));
    return MPS_OK;
}

static enum mps_status mps_cuda_setup(struct mps_cuda_state *s, const struct mps_compile_opts *opts,
                                      struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    s->precision = opts->precision;
    s->dptr = calloc((size_t)g->n_values + 1, sizeof *s->dptr);
    s->in_dev = calloc((size_t)g->n_inputs + 1, sizeof *s->in_dev);
    s->in_pin = calloc((size_t)g->n_inputs + 1, sizeof *s->in_pin);
    s->out_pin = calloc((size_t)g->n_outputs + 1, sizeof *s->out_pin);
    s->packed = calloc((size_t)g->n_nodes + 1, sizeof *s->packed);
    s->writer = calloc((size_t)g->n_nodes + 1, sizeof *s->writer);
    if (!s->dptr || !s->in_dev || !s->in_pin || !s->out_pin || !s->packed || !s->writer)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    MPS_CUDA_CHECK(cudaSetDevice(0));
    MPS_CU_CHECK(mps_cu_setup());
    MPS_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    enum mps_status st = mps_cublas_open(err);
    if (st)
        return st;
    MPS_CUBLAS_CHECK(mps_cublas.create(&s->blas));
    MPS_CUBLAS_CHECK(mps_cublas.set_stream(s->blas, s->stream));
    MPS_CUDA_CHECK(cudaMalloc(&s->workspace, MPS_CUDA_WORKSPACE));
    MPS_CUBLAS_CHECK(mps_cublas.set_workspace(s->blas, s->workspace, MPS_CUDA_WORKSPACE));
    mps_cuda_fuse(s);
    st = mps_cuda_memory(s, err);
    if (!st)
        st = mps_cuda_capture(s, 0, &s->graph[0], &s->exec[0], err);
    return st ? st : mps_cuda_capture(s, -1, &s->nodes_graph, &s->nodes_exec, err);
}

static enum mps_status mps_cuda_compile(const struct mps_graph *g, const struct mps_compile_opts *opts, void **state,
                                        struct mps_error *err)
{
    struct mps_cuda_state *s = calloc(1, sizeof *s);
    if (!s)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    s->g = g;
    enum mps_status st = mps_cuda_setup(s, opts, err);
    if (st) {
        mps_cuda_free(s);
        return st;
    }
    *state = s;
    return MPS_OK;
}

/* The staging slot in[] already lies in (a caller that filled host_io's
   buffers), else -1. */
static int mps_cuda_slot_of(const struct mps_cuda_state *s, const struct mps_tensor *in)
{
    for (int k = 0; k < 2; k++)
        if (s->pinned[k] && s->g->n_inputs > 0 && in[0].data == (unsigned char *)s->pinned[k] + s->in_pin[0])
            return k;
    return -1;
}

/* The host side of a run: in[] into staging slot `slot`, or the slot into out[];
   a tensor that is the slot's own buffer is not copied. */
static void mps_cuda_stage(struct mps_cuda_state *s, int slot, const struct mps_tensor *in, struct mps_tensor *out)
{
    const struct mps_graph *g = s->g;
    unsigned char *pin = s->pinned[slot];
    for (int i = 0; in && i < g->n_inputs; i++)
        if (in[i].data != pin + s->in_pin[i])
            memcpy(pin + s->in_pin[i], in[i].data, mps_tensor_bytes(&in[i]));
    for (int i = 0; out && i < g->n_outputs; i++)
        if (out[i].data != pin + s->out_pin[i])
            memcpy(out[i].data, pin + s->out_pin[i], mps_tensor_bytes(&out[i]));
}

static enum mps_status mps_cuda_run(void *state, const struct mps_tensor *in, struct mps_tensor *out,
                                    struct mps_error *err)
{
    struct mps_cuda_state *s = state;
    int slot = mps_cuda_slot_of(s, in);
    slot = slot < 0 ? 0 : slot;
    mps_cuda_stage(s, slot, in, NULL);
    MPS_CUDA_CHECK(cudaGraphLaunch(s->exec[slot], s->stream));
    MPS_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    mps_cuda_stage(s, slot, NULL, out);
    s->ran = true;
    return MPS_OK;
}

/* Staging slot `slot` as host tensors (the second slot and its graph made on first use). */
static enum mps_status mps_cuda_host_io(void *state, int slot, struct mps_tensor *in, struct mps_tensor *out,
                                        struct mps_error *err)
{
    struct mps_cuda_state *s = state;
    const struct mps_graph *g = s->g;
    if (slot < 0 || slot > 1)
        return mps_fail(err, MPS_ERR_USAGE, "staging slot %d: there are two, 0 and 1", slot);
    if (!s->pinned[slot]) {
        MPS_CUDA_CHECK(cudaMallocHost(&s->pinned[slot], s->pinned_bytes));
        enum mps_status st = mps_cuda_capture(s, slot, &s->graph[slot], &s->exec[slot], err);
        if (st)
            return st;
    }
    unsigned char *pin = s->pinned[slot];
    for (int i = 0; in && i < g->n_inputs; i++) {
        const struct mps_value *v = &g->values[g->inputs[i]];
        in[i] = mps_tensor_make(v->dtype, &v->shape, pin + s->in_pin[i]);
    }
    for (int i = 0; out && i < g->n_outputs; i++) {
        const struct mps_value *v = &g->values[g->outputs[i]];
        out[i] = mps_tensor_make(v->dtype, &v->shape, pin + s->out_pin[i]);
    }
    return MPS_OK;
}

static enum mps_status mps_cuda_rerun(void *state, struct mps_error *err)
{
    struct mps_cuda_state *s = state;
    if (!s->ran)
        return mps_fail(err, MPS_ERR_USAGE, "a resident rerun needs a run first: the inputs are not on the device");
    MPS_CUDA_CHECK(cudaGraphLaunch(s->nodes_exec, s->stream));
    MPS_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    return MPS_OK;
}

/* The nodes launched one by one outside the graph, an event before each and
   after the last: per-node GPU time (launch gaps between nodes not counted). */
static enum mps_status mps_cuda_profile(void *state, const struct mps_tensor *in, struct mps_tensor *out,
                                        double *node_ms, struct mps_error *err)
{
    struct mps_cuda_state *s = state;
    const struct mps_graph *g = s->g;
    if (!s->events && !(s->events = calloc((size_t)g->n_nodes + 1, sizeof *s->events)))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int k = 0; k <= g->n_nodes; k++)
        if (!s->events[k])
            MPS_CUDA_CHECK(cudaEventCreate(&s->events[k]));
    mps_cuda_stage(s, 0, in, NULL);
    enum mps_status st = mps_cuda_copies(s, 0, true, err);
    for (int k = 0; k < g->n_nodes && !st; k++) {
        MPS_CUDA_CHECK(cudaEventRecord(s->events[k], s->stream));
        st = mps_cuda_node(s, k, err);
    }
    if (st)
        return st;
    MPS_CUDA_CHECK(cudaEventRecord(s->events[g->n_nodes], s->stream));
    if ((st = mps_cuda_copies(s, 0, false, err)))
        return st;
    MPS_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    for (int k = 0; k < g->n_nodes; k++) {
        float ms = 0;
        MPS_CUDA_CHECK(cudaEventElapsedTime(&ms, s->events[k], s->events[k + 1]));
        node_ms[k] = ms;
    }
    mps_cuda_stage(s, 0, NULL, out);
    s->ran = true;
    return MPS_OK;
}

static enum mps_status mps_cuda_probe(struct mps_backend_info *info, struct mps_error *err)
{
    int count = 0, driver = 0, runtime = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "no CUDA device: %s",
                        e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    enum mps_status st = mps_cublas_open(err);
    if (st)
        return st;
    struct cudaDeviceProp prop;
    MPS_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    snprintf(info->device, sizeof info->device, "%.90s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount);
    info->memory_bytes = prop.totalGlobalMem;
    info->threads = 0;
    /* fp32 lanes per SM: 64 on sm_60/70/80, 128 on sm_61, 86, 89, 90 and later */
    int lanes = prop.major >= 9 || (prop.major == 8 && prop.minor > 0) || (prop.major == 6 && prop.minor > 0) ? 128 : 64;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess)
        info->peak_gflops = 2.0 * lanes * prop.multiProcessorCount * khz / 1e6;
    snprintf(info->detail, sizeof info->detail, "CUDA driver %d.%d, runtime %d.%d, cuBLAS", driver / 1000,
             driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    return MPS_OK;
}

/* cublasGemmEx on device buffers of its own, timed with events: the baseline of bench matmul.
   fp16 multiplies half data, as bench matmul's fp16 graph and PyTorch's half `a @ b` do. */
static enum mps_status mps_cuda_bench_baseline(int64_t m, int64_t n, int64_t k, enum mps_precision precision,
                                               int threads, int warmup, int repeat, double *times_ms,
                                               struct mps_error *err)
{
    struct mps_cuda_state s = {.precision = precision};
    enum mps_dtype dt = precision == MPS_PRECISION_FP16 ? MPS_F16 : MPS_F32;
    size_t elem = mps_dtype_size(dt);
    void *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t t0 = NULL, t1 = NULL;
    enum mps_status st = MPS_OK;
    (void)threads;
    if (cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) != cudaSuccess ||
        mps_cublas_open(err) != MPS_OK || mps_cublas.create(&s.blas) != CUBLAS_STATUS_SUCCESS ||
        mps_cublas.set_stream(s.blas, s.stream) != CUBLAS_STATUS_SUCCESS ||
        cudaMalloc(&a, elem * (size_t)(m * k)) != cudaSuccess ||
        cudaMalloc(&b, elem * (size_t)(k * n)) != cudaSuccess ||
        cudaMalloc(&c, elem * (size_t)(m * n)) != cudaSuccess ||
        cudaEventCreate(&t0) != cudaSuccess || cudaEventCreate(&t1) != cudaSuccess)
        st = mps_fail(err, MPS_ERR_RUNTIME, "cannot set up the cuBLAS baseline");
    if (!st) {
        cudaMemsetAsync(a, 0, elem * (size_t)(m * k), s.stream);
        cudaMemsetAsync(b, 0, elem * (size_t)(k * n), s.stream);
    }
    for (int r = 0; r < warmup + repeat && !st; r++) {
        cudaEventRecord(t0, s.stream);
        st = mps_cuda_gemm_dt(&s, dt, false, false, m, n, k, 1.0f, a, b, 0.0f, c, err);
        cudaEventRecord(t1, s.stream);
        float ms = 0;
        if (!st && cudaEventSynchronize(t1) == cudaSuccess && cudaEventElapsedTime(&ms, t0, t1) == cudaSuccess &&
            r >= warmup)
            times_ms[r - warmup] = ms;
    }
    if (t0)
        cudaEventDestroy(t0);
    if (t1)
        cudaEventDestroy(t1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    if (s.blas)
        mps_cublas.destroy(s.blas);
    if (s.stream)
        cudaStreamDestroy(s.stream);
    return st;
}

const struct mps_backend mps_backend_cuda = {
    .name = "cuda",
    .description = "NVIDIA GPU: cuBLAS GEMMs, own kernels, the whole run replayed as one CUDA graph",
    .precisions = MPS_PRECISION_BIT(MPS_PRECISION_FP32) | MPS_PRECISION_BIT(MPS_PRECISION_TF32) |
                  MPS_PRECISION_BIT(MPS_PRECISION_FP16),
    .probe = mps_cuda_probe,
    .supports = mps_cuda_supports,
    .compile = mps_cuda_compile,
    .run = mps_cuda_run,
    .host_io = mps_cuda_host_io,
    .free = mps_cuda_free,
    .profile = mps_cuda_profile,
    .rerun = mps_cuda_rerun,
    .bench_baseline = mps_cuda_bench_baseline,
};
