/* cuda.c: the CUDA backend. Compile once: one device arena for every
   activation (the CPU backend's liveness plan), weights uploaded once, cuBLAS
   handle and workspace, and the whole run — input copies, every node's
   kernels and GEMMs, output copies — captured into one CUDA graph. A run
   copies the inputs into pinned memory, replays the graph, waits once, and
   copies the outputs out: no allocation, no per-op synchronization. A second
   graph without the copies replays the nodes alone on what the last run left
   on the device (rerun: bench's resident time); profile launches the nodes
   one by one between events.
   Every CUDA and cuBLAS call is checked; the failing statement is named. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tensor/backend.h"
#include "../../tensor/cpu/kernels.h"
#include "../../tensor/memplan.h"
#include "cuda_kernels.h"

#define MPS_CUDA_CHECK(stmt)                                                                                  \
    do {                                                                                                      \
        cudaError_t e_ = (stmt);                                                                              \
        if (e_ != cudaSuccess)                                                                                \
            return mps_fail(err, MPS_ERR_RUNTIME, "%s failed: %s (%s:%d)", #stmt, cudaGetErrorString(e_),      \
                            __FILE__, __LINE__);                                                              \
    } while (0)

/* cuBLAS is opened when a CUDA device is found, not linked: its libraries
   (cuBLAS and cuBLASLt, ~700 MB of code) made every run of a CUDA build,
   CPU-only ones included, 224 MB resident at start-up. The entries used,
   typed by cuBLAS's own declarations. */
static struct {
    void *lib;
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasDestroy_v2) *destroy;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasSetWorkspace_v2) *set_workspace;
    __typeof__(cublasGemmEx) *gemm;
    __typeof__(cublasGemmStridedBatchedEx) *gemm_strided;
    __typeof__(cublasGetStatusString) *status_string;
} mps_cublas;

#define MPS_CUBLAS_LIB "libcublas.so." MPS_CUDA_STR(CUBLAS_VER_MAJOR)
#define MPS_CUDA_STR(x) MPS_CUDA_STR2(x)
#define MPS_CUDA_STR2(x) #x

/* Opens cuBLAS once (mpsrun probes and compiles on one thread). */
static enum mps_status mps_cublas_open(struct mps_error *err)
{
    if (mps_cublas.lib)
        return MPS_OK;
    void *lib = dlopen(MPS_CUBLAS_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return mps_fail(err, MPS_ERR_RUNTIME, "cannot open cuBLAS: %s", dlerror());
    struct {
        void **fn;
        const char *name;
    } syms[] = {{(void **)&mps_cublas.create, "cublasCreate_v2"},
                {(void **)&mps_cublas.destroy, "cublasDestroy_v2"},
                {(void **)&mps_cublas.set_stream, "cublasSetStream_v2"},
                {(void **)&mps_cublas.set_workspace, "cublasSetWorkspace_v2"},
                {(void **)&mps_cublas.gemm, "cublasGemmEx"},
                {(void **)&mps_cublas.gemm_strided, "cublasGemmStridedBatchedEx"},
                {(void **)&mps_cublas.status_string, "cublasGetStatusString"}};
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++)
        if (!(*syms[i].fn = dlsym(lib, syms[i].name))) {
            dlclose(lib);
            return mps_fail(err, MPS_ERR_RUNTIME, "%s has no %s", MPS_CUBLAS_LIB, syms[i].name);
        }
    mps_cublas.lib = lib;
    return MPS_OK;
}

#define MPS_CUBLAS_CHECK(stmt)                                                                                \
    do {                                                                                                      \
        cublasStatus_t s_ = (stmt);                                                                           \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                                      \
            return mps_fail(err, MPS_ERR_RUNTIME, "%s failed: %s (%s:%d)", #stmt,                            \
                            mps_cublas.status_string(s_), __FILE__, __LINE__);                                \
    } while (0)

/* A kernel launcher's result (a cudaError_t as int). */
#define MPS_CU_CHECK(launch) MPS_CUDA_CHECK((cudaError_t)(launch))

#define MPS_CUDA_WORKSPACE ((size_t)32 << 20)

struct mps_cuda_state {
    const struct mps_graph *g;
    enum mps_precision precision;
    cudaStream_t stream;
    cublasHandle_t blas;
    void *workspace, *arena, *scratch, *weights, *pinned, *packed_block;
    void **packed;   /* per node: its weights prepared at compile (Winograd's U), or NULL */
    void **dptr;     /* per value: its device memory */
    void **in_dev;   /* per graph input: a device buffer */
    size_t *in_pin, *out_pin; /* per graph input / output: offset of its staging in pinned */
    cudaGraph_t graph, nodes_graph; /* the whole run; the nodes alone */
    cudaGraphExec_t exec, nodes_exec;
    cudaEvent_t *events; /* profile's, one per node and one more; made on first use */
    bool ran;            /* a run has put inputs on the device */
};

/* ---- helpers ----------------------------------------------------------------- */

static struct mps_cu_window mps_cuda_window(const struct mps_window *w, const struct mps_shape *x,
                                            const struct mps_shape *y)
{
    struct mps_cpu_window3 c = mps_cpu_window3(w, x, y);
    struct mps_cu_window r;
    memcpy(r.in, c.in, sizeof r.in);
    memcpy(r.out, c.out, sizeof r.out);
    memcpy(r.k, c.k, sizeof r.k);
    memcpy(r.s, c.s, sizeof r.s);
    memcpy(r.d, c.d, sizeof r.d);
    memcpy(r.pb, c.pb, sizeof r.pb);
    memcpy(r.pe, c.pe, sizeof r.pe);
    return r;
}

/* A walk over shape with three operands' strides. */
static struct mps_cu_walk mps_cuda_walk(const struct mps_shape *s, const int64_t *s0, const int64_t *s1,
                                        const int64_t *s2)
{
    struct mps_cu_walk w;
    memset(&w, 0, sizeof w);
    w.nd = s->ndim;
    for (int i = 0; i < s->ndim; i++) {
        w.dim[i] = s->dim[i];
        w.s0[i] = s0 ? s0[i] : 0;
        w.s1[i] = s1 ? s1[i] : 0;
        w.s2[i] = s2 ? s2[i] : 0;
    }
    /* dims of size 1 go, and neighbours every operand steps through contiguously
       merge: the same elements in the same order, fewer divisions per element
       (a same-shape Add walks one flat dim) */
    int nd = 0;
    for (int i = 0; i < w.nd; i++) {
        if (w.dim[i] == 1)
            continue;
        if (nd > 0 && w.s0[nd - 1] == w.s0[i] * w.dim[i] && w.s1[nd - 1] == w.s1[i] * w.dim[i] &&
            w.s2[nd - 1] == w.s2[i] * w.dim[i]) {
            w.dim[nd - 1] *= w.dim[i];
            w.s0[nd - 1] = w.s0[i], w.s1[nd - 1] = w.s1[i], w.s2[nd - 1] = w.s2[i];
            continue;
        }
        w.dim[nd] = w.dim[i], w.s0[nd] = w.s0[i], w.s1[nd] = w.s1[i], w.s2[nd] = w.s2[i];
        nd++;
    }
    if (nd == 0) { /* a scalar, or all dims 1: one element */
        nd = 1;
        w.dim[0] = 1, w.s0[0] = w.s1[0] = w.s2[0] = 0;
    }
    w.nd = nd;
    return w;
}

/* fp32: full-precision FMA (the handle's default math mode never uses TF32,
   the same as PyTorch with TF32 off); tf32 and fp16 run on the tensor cores. */
static cublasComputeType_t mps_cuda_compute(enum mps_precision p)
{
    return p == MPS_PRECISION_TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
           : p == MPS_PRECISION_FP16 ? CUBLAS_COMPUTE_32F_FAST_16F
                                     : CUBLAS_COMPUTE_32F;
}

/* Row-major C[m,n] = alpha op(A) op(B) + beta C through cuBLAS's column-major
   GEMM (C^T = op(B)^T op(A)^T), in the plan's precision. */
static enum mps_status mps_cuda_gemm(struct mps_cuda_state *s, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                     float alpha, const float *a, const float *b, float beta, float *c,
                                     struct mps_error *err)
{
    if (m == 0 || n == 0)
        return MPS_OK;
    cublasComputeType_t ct = mps_cuda_compute(s->precision);
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    MPS_CUBLAS_CHECK(mps_cublas.gemm(s->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n,
                                  (int)m, (int)k, &alpha, b, CUDA_R_32F, ldb > 0 ? ldb : 1, a, CUDA_R_32F,
                                  lda > 0 ? lda : 1, &beta, c, CUDA_R_32F, (int)n, ct, CUBLAS_GEMM_DEFAULT));
    return MPS_OK;
}

/* batch independent row-major C_i[m,n] = A_i[m,k] B_i[k,n], operand i at base + i * stride
   (a stride of 0 shares one matrix), as one cuBLAS call. */
static enum mps_status mps_cuda_gemm_batched(struct mps_cuda_state *s, int64_t m, int64_t n, int64_t k, const float *a,
                                             int64_t sa, const float *b, int64_t sb, float *c, int64_t sc,
                                             int64_t batch, struct mps_error *err)
{
    if (m == 0 || n == 0 || batch == 0)
        return MPS_OK;
    cublasComputeType_t ct = mps_cuda_compute(s->precision);
    float one = 1.0f, zero = 0.0f;
    MPS_CUBLAS_CHECK(mps_cublas.gemm_strided(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b,
                                                CUDA_R_32F, (int)n, sb, a, CUDA_R_32F, (int)(k > 0 ? k : 1), sa,
                                                &zero, c, CUDA_R_32F, (int)n, sc, (int)batch, ct,
                                                CUBLAS_GEMM_DEFAULT));
    return MPS_OK;
}

/* Device pointer and shape of input i / output i of node n. */
#define MPS_IN(i) (s->dptr[n->in[i]])
#define MPS_INV(i) (&g->values[n->in[i]])
#define MPS_OUT(i) (s->dptr[n->out[i]])
#define MPS_OUTV(i) (&g->values[n->out[i]])
#define MPS_HAS(i) (n->n_in > (i) && n->in[i] >= 0)

static enum mps_status mps_cuda_fused(struct mps_cuda_state *s, const struct mps_node *n, const struct mps_fused_act *a,
                                      struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    if (a->on)
        MPS_CU_CHECK(mps_cu_unary((int)a->op, a->p.alpha, a->p.beta, MPS_OUT(0), MPS_OUT(0),
                                  mps_shape_numel(&MPS_OUTV(0)->shape), s->stream));
    return MPS_OK;
}

/* ---- node launchers, by op family ----------------------------------------------------- */

static enum mps_status mps_cuda_matmul(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    struct mps_matmul_geom q = mps_matmul_geom(&MPS_INV(0)->shape, &MPS_INV(1)->shape);
    const float *a = MPS_IN(0), *b = MPS_IN(1);
    float *c = MPS_OUT(0);
    if (q.fold) /* one B: the batch folds into A's rows */
        return mps_cuda_gemm(s, false, false, q.m * q.batches, q.n, q.k, 1.0f, a, b, 0.0f, c, err);
    for (int64_t i = 0; i < q.batches; i++) {
        int64_t oa, ob;
        mps_matmul_offsets(&q, i, &oa, &ob);
        enum mps_status st = mps_cuda_gemm(s, false, false, q.m, q.n, q.k, 1.0f, a + oa, b + ob, 0.0f,
                                           c + i * q.m * q.n, err);
        if (st)
            return st;
    }
    return MPS_OK;
}

static enum mps_status mps_cuda_gemm_node(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_gemm_params *p = &n->p.gemm;
    const struct mps_shape *y = &MPS_OUTV(0)->shape;
    int64_t m = y->dim[0], nn = y->dim[1], k = MPS_INV(0)->shape.dim[p->trans_a ? 0 : 1];
    float beta = 0.0f;
    const struct mps_shape *cs = MPS_HAS(2) ? &MPS_INV(2)->shape : NULL;
    bool row_bias = cs && p->beta != 0.0f && k > 0 && mps_shape_numel(cs) == nn &&
                    (cs->ndim == 1 || (cs->ndim == 2 && cs->dim[0] == 1));
    if ((row_bias || (!cs && k > 0)) && m <= MPS_CU_GEMV_ROWS && !p->trans_a && p->trans_b && nn <= INT32_MAX / 32 &&
        k <= INT32_MAX / MPS_CU_GEMV_ROWS) { /* a few rows through a Linear layer: one kernel */
        MPS_CU_CHECK(mps_cu_gemv(MPS_IN(0), MPS_IN(1), row_bias ? MPS_IN(2) : NULL, p->alpha, p->beta, MPS_OUT(0), m,
                                 nn, k, p->act.on ? (int)p->act.op : 0, p->act.p.alpha, p->act.p.beta, s->stream));
        return MPS_OK;
    }
    if (row_bias || (!cs && k > 0)) { /* one GEMM, then bias and activation in one pass */
        enum mps_status st = mps_cuda_gemm(s, p->trans_a, p->trans_b, m, nn, k, p->alpha, MPS_IN(0), MPS_IN(1), 0.0f,
                                           MPS_OUT(0), err);
        if (st)
            return st;
        if (row_bias || p->act.on)
            MPS_CU_CHECK(mps_cu_epilogue(MPS_OUT(0), row_bias ? MPS_IN(2) : NULL, p->beta, m * nn, nn, 1,
                                         p->act.on ? (int)p->act.op : 0, p->act.p.alpha, p->act.p.beta, s->stream));
        return MPS_OK;
    }
    if (MPS_HAS(2) && p->beta != 0.0f) { /* Y = beta * C broadcast, then accumulate */
        int64_t sc[MPS_MAX_DIMS], sy[MPS_MAX_DIMS];
        mps_shape_broadcast_strides(&MPS_INV(2)->shape, y, sc);
        mps_shape_strides(y, sy);
        struct mps_cu_walk w = mps_cuda_walk(y, sy, sc, NULL);
        MPS_CU_CHECK(mps_cu_copy(MPS_OUT(0), MPS_IN(2), &w, 4, s->stream));
        if (p->beta != 1.0f)
            MPS_CU_CHECK(mps_cu_scale(MPS_OUT(0), p->beta, m * nn, s->stream));
        beta = 1.0f;
    } else if (k == 0) {
        MPS_CU_CHECK(mps_cu_fill(MPS_F32, 0, MPS_OUT(0), m * nn, s->stream));
    }
    enum mps_status st = k ? mps_cuda_gemm(s, p->trans_a, p->trans_b, m, nn, k, p->alpha, MPS_IN(0), MPS_IN(1), beta,
                                           MPS_OUT(0), err)
                           : MPS_OK;
    return st ? st : mps_cuda_fused(s, n, &p->act, err);
}

static bool mps_cuda_pointwise(const struct mps_cu_window *w)
{
    for (int j = 0; j < 3; j++)
        if (w->k[j] != 1 || w->s[j] != 1 || w->pb[j] != 0 || w->in[j] != w->out[j])
            return false;
    return true;
}

/* Depthwise convolutions run as one direct kernel. (Small ones with more
   input channels per group did too, for a launch less: slower on the H100,
   one thread per output summing 144+ products: mnist_cnn's second conv 23 us.) */
static bool mps_cuda_direct(const struct mps_cu_window *w, int64_t c, int64_t grp)
{
    return c / grp == 1 && !mps_cuda_pointwise(w);
}

/* 3x3 stride-1 convolutions run as Winograd F(2x2, 3x3) where the CPU's rule
   takes them (constant weights, 16+ channels each way, 32+ tiles an image):
   16 GEMMs of 2.25x fewer multiply-adds in all than im2col's one. */
static struct mps_cu_wino mps_cuda_wino(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    struct mps_cu_wino q = {.n = x->dim[0], .c = x->dim[1], .m = y->dim[1], .h = x->dim[2], .w = x->dim[3],
                            .oh = y->dim[2], .ow = y->dim[3], .pt = n->p.conv.win.pad[0], .pl = n->p.conv.win.pad[1]};
    q.th = (q.oh + 1) / 2;
    q.tw = (q.ow + 1) / 2;
    return q;
}

static size_t mps_cuda_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    if (mps_winograd_applies(g, n)) {
        struct mps_cu_wino q = mps_cuda_wino(g, n);
        return (size_t)(16 * (q.c + q.m) * q.n * q.th * q.tw) * sizeof(float);
    }
    if (n->op != MPS_OP_CONV && n->op != MPS_OP_CONV_TRANSPOSE)
        return 0;
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    struct mps_cu_window w = mps_cuda_window(&n->p.conv.win, x, y);
    int64_t c = x->dim[1], m = y->dim[1], grp = n->p.conv.group, taps = w.k[0] * w.k[1] * w.k[2];
    if (n->op == MPS_OP_CONV_TRANSPOSE)
        return (size_t)(m / grp * taps * w.in[0] * w.in[1] * w.in[2]) * sizeof(float);
    if (mps_cuda_pointwise(&w) || mps_cuda_direct(&w, c, grp))
        return 0;
    int64_t cols = x->dim[0] * w.out[0] * w.out[1] * w.out[2]; /* col, then (batch > 1) the GEMM's output */
    return (size_t)(c / grp * taps * cols + (x->dim[0] > 1 ? m * cols : 0)) * sizeof(float);
}

static enum mps_status mps_cuda_conv(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape, *y = &MPS_OUTV(0)->shape;
    struct mps_cu_window w = mps_cuda_window(&n->p.conv.win, x, y);
    int64_t batch = x->dim[0], c = x->dim[1], m = y->dim[1], grp = n->p.conv.group;
    int64_t cg = c / grp, mg = m / grp, taps = w.k[0] * w.k[1] * w.k[2];
    int64_t in_plane = w.in[0] * w.in[1] * w.in[2], plane = w.out[0] * w.out[1] * w.out[2];
    const float *xd = MPS_IN(0), *wd = MPS_IN(1), *bias = MPS_HAS(2) ? MPS_IN(2) : NULL;
    float *yd = MPS_OUT(0);
    const struct mps_fused_act *act = &n->p.conv.act;
    int act_op = act->on ? (int)act->op : 0;
    const float *u = s->packed[n - g->nodes];
    if (u) { /* Winograd: transform, 16 GEMMs as one batched call, transform back */
        struct mps_cu_wino q = mps_cuda_wino(g, n);
        int64_t cols = q.n * q.th * q.tw;
        float *v = s->scratch, *prod = v + 16 * c * cols;
        MPS_CU_CHECK(mps_cu_wino_input(xd, v, &q, s->stream));
        enum mps_status st = mps_cuda_gemm_batched(s, m, cols, c, u, m * c, v, c * cols, prod, m * cols, 16, err);
        if (st)
            return st;
        MPS_CU_CHECK(mps_cu_wino_output(prod, yd, bias, &q, act_op, act->p.alpha, act->p.beta, s->stream));
        return MPS_OK;
    }
    if (mps_cuda_direct(&w, c, grp)) {
        MPS_CU_CHECK(mps_cu_conv_direct(xd, wd, bias, yd, batch, c, m, grp, &w, act_op, act->p.alpha, act->p.beta,
                                        s->stream));
        return MPS_OK;
    }
    int64_t kdim = cg * taps, cols = batch * plane;
    for (int64_t gi = 0; gi < grp && mps_cuda_pointwise(&w); gi++) { /* 1x1: the images are the GEMMs' operands */
        enum mps_status st = mps_cuda_gemm_batched(s, mg, plane, kdim, wd + gi * mg * kdim, 0, xd + gi * cg * in_plane,
                                                   c * in_plane, yd + gi * mg * plane, m * plane, batch, err);
        if (st)
            return st;
    }
    if (!mps_cuda_pointwise(&w)) {
        /* per group: im2col of all images side by side, col[cg * taps, batch * plane], and
           one GEMM; past one image its output z[m, batch * plane] goes to NCHW in the epilogue */
        float *col = s->scratch, *z = batch > 1 ? (float *)s->scratch + kdim * cols : yd;
        for (int64_t gi = 0; gi < grp; gi++) {
            MPS_CU_CHECK(mps_cu_im2col(xd + gi * cg * in_plane, col, cg, batch, c * in_plane, &w, s->stream));
            enum mps_status st =
                mps_cuda_gemm(s, false, false, mg, cols, kdim, 1.0f, wd + gi * mg * kdim, col, 0.0f, z + gi * mg * cols,
                              err);
            if (st)
                return st;
        }
        if (batch > 1) {
            MPS_CU_CHECK(mps_cu_unbatch(z, yd, bias, batch, m, plane, act_op, act->p.alpha, act->p.beta, s->stream));
            return MPS_OK;
        }
    }
    if (bias || act->on)
        MPS_CU_CHECK(
            mps_cu_epilogue(yd, bias, 1.0f, batch * m * plane, m, plane, act_op, act->p.alpha, act->p.beta, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_conv_transpose(struct mps_cuda_state *s, const struct mps_node *n,
                                               struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape, *y = &MPS_OUTV(0)->shape;
    struct mps_cu_window w = mps_cuda_window(&n->p.conv.win, x, y);
    int64_t batch = x->dim[0], c = x->dim[1], m = y->dim[1], grp = n->p.conv.group;
    int64_t cg = c / grp, mg = m / grp, taps = w.k[0] * w.k[1] * w.k[2];
    int64_t in_plane = w.in[0] * w.in[1] * w.in[2], plane = w.out[0] * w.out[1] * w.out[2];
    float *yd = MPS_OUT(0);
    MPS_CU_CHECK(mps_cu_bias(yd, MPS_HAS(2) ? MPS_IN(2) : NULL, batch, m, plane, 0, s->stream));
    for (int64_t b = 0; b < batch; b++)
        for (int64_t gi = 0; gi < grp; gi++) {
            /* col[mg * taps, in_plane] = W_g^T x_g, W_g being [cg, mg * taps] */
            enum mps_status st = mps_cuda_gemm(s, true, false, mg * taps, in_plane, cg, 1.0f,
                                               (const float *)MPS_IN(1) + gi * cg * mg * taps,
                                               (const float *)MPS_IN(0) + (b * c + gi * cg) * in_plane, 0.0f,
                                               s->scratch, err);
            if (st)
                return st;
            MPS_CU_CHECK(mps_cu_col2im(s->scratch, yd + (b * m + gi * mg) * plane, mg, &w, s->stream));
        }
    return mps_cuda_fused(s, n, &n->p.conv.act, err);
}

static enum mps_status mps_cuda_pool(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    if (n->op == MPS_OP_GLOBAL_AVERAGE_POOL || n->op == MPS_OP_GLOBAL_MAX_POOL) {
        int64_t planes = x->dim[0] * x->dim[1];
        MPS_CU_CHECK(mps_cu_global_pool(MPS_IN(0), MPS_OUT(0), planes, mps_shape_numel(x) / (planes ? planes : 1),
                                        n->op == MPS_OP_GLOBAL_MAX_POOL, s->stream));
        return MPS_OK;
    }
    struct mps_cu_window w = mps_cuda_window(&n->p.pool.win, x, &MPS_OUTV(0)->shape);
    MPS_CU_CHECK(mps_cu_pool(MPS_IN(0), MPS_OUT(0), n->n_out > 1 ? MPS_OUT(1) : NULL, x->dim[0] * x->dim[1], &w,
                             n->op == MPS_OP_MAX_POOL, n->p.pool.count_include_pad, n->p.pool.column_major,
                             s->stream));
    return MPS_OK;
}

static int64_t mps_cuda_prod(const struct mps_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dim[i];
    return p;
}

static enum mps_status mps_cuda_norm(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    int axis = (int)n->p.norm.axis;
    if (n->op == MPS_OP_BATCH_NORM) {
        MPS_CU_CHECK(mps_cu_batch_norm(MPS_IN(0), MPS_IN(1), MPS_IN(2), MPS_IN(3), MPS_IN(4), n->p.norm.epsilon,
                                       MPS_OUT(0), x->dim[0], x->dim[1], mps_cuda_prod(x, 2, x->ndim), s->stream));
    } else if (n->op == MPS_OP_LAYER_NORM) {
        struct mps_shape tail = {x->ndim - axis, {0}};
        memcpy(tail.dim, x->dim + axis, sizeof(int64_t) * (size_t)tail.ndim);
        int64_t ss[MPS_MAX_DIMS], bs[MPS_MAX_DIMS] = {0};
        mps_shape_broadcast_strides(&MPS_INV(1)->shape, &tail, ss);
        if (MPS_HAS(2))
            mps_shape_broadcast_strides(&MPS_INV(2)->shape, &tail, bs);
        struct mps_cu_walk sw = mps_cuda_walk(&tail, ss, NULL, NULL), bw = mps_cuda_walk(&tail, bs, NULL, NULL);
        MPS_CU_CHECK(mps_cu_layer_norm(MPS_IN(0), MPS_IN(1), MPS_HAS(2) ? MPS_IN(2) : NULL, MPS_OUT(0),
                                       n->n_out > 1 ? MPS_OUT(1) : NULL, n->n_out > 2 ? MPS_OUT(2) : NULL,
                                       mps_cuda_prod(x, 0, axis), mps_cuda_prod(x, axis, x->ndim), &sw, &bw,
                                       n->p.norm.epsilon, s->stream));
    } else {
        MPS_CU_CHECK(mps_cu_softmax(MPS_IN(0), MPS_OUT(0), mps_cuda_prod(x, 0, axis), x->dim[axis],
                                    mps_cuda_prod(x, axis + 1, x->ndim), n->op == MPS_OP_LOG_SOFTMAX, s->stream));
    }
    return MPS_OK;
}

static enum mps_status mps_cuda_unary(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    MPS_CU_CHECK(mps_cu_unary((int)n->op, n->p.act.alpha, n->p.act.beta, MPS_IN(0), MPS_OUT(0),
                              mps_shape_numel(&MPS_OUTV(0)->shape), s->stream));
    return MPS_OK;
}

/* Identity, Dropout, Constant, Reshape, Flatten, Squeeze, Unsqueeze: the same bytes. */
static enum mps_status mps_cuda_same_bytes(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    size_t bytes = (size_t)mps_shape_numel(&MPS_OUTV(0)->shape) * mps_dtype_size(MPS_OUTV(0)->dtype);
    if (bytes && MPS_OUT(0) != MPS_IN(0))
        MPS_CUDA_CHECK(cudaMemcpyAsync(MPS_OUT(0), MPS_IN(0), bytes, cudaMemcpyDeviceToDevice, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_cast(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    if (MPS_INV(0)->dtype == MPS_OUTV(0)->dtype)
        return mps_cuda_same_bytes(s, n, err);
    MPS_CU_CHECK(mps_cu_cast((int)MPS_INV(0)->dtype, (int)MPS_OUTV(0)->dtype, MPS_IN(0), MPS_OUT(0),
                             mps_shape_numel(&MPS_OUTV(0)->shape), s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_binary(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *y = MPS_OUTV(0);
    int64_t sa[MPS_MAX_DIMS], sb[MPS_MAX_DIMS], sy[MPS_MAX_DIMS];
    mps_shape_strides(&y->shape, sy);
    enum mps_op op = n->op;
    for (int i = 0; i < (n->n_in > 1 ? n->n_in - 1 : 1); i++) {
        /* the first step reads inputs 0 and 1 (or 0 twice), later ones the output so far and input i + 1 */
        const struct mps_value *va = i == 0 ? MPS_INV(0) : y, *vb = n->n_in > 1 ? MPS_INV(i + 1) : MPS_INV(0);
        const void *a = i == 0 ? MPS_IN(0) : MPS_OUT(0), *b = n->n_in > 1 ? MPS_IN(i + 1) : MPS_IN(0);
        mps_shape_broadcast_strides(&va->shape, &y->shape, sa);
        mps_shape_broadcast_strides(&vb->shape, &y->shape, sb);
        struct mps_cu_walk w = mps_cuda_walk(&y->shape, sa, sb, sy);
        MPS_CU_CHECK(mps_cu_binary(n->n_in == 1 ? MPS_OP_MAX : (int)op, (int)y->dtype, a, b, MPS_OUT(0), &w, s->stream));
    }
    if (op == MPS_OP_MEAN)
        MPS_CU_CHECK(mps_cu_scale(MPS_OUT(0), 1.0f / (float)n->n_in, mps_shape_numel(&y->shape), s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_reduce(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    int64_t st[MPS_MAX_DIMS];
    mps_shape_strides(x, st);
    struct mps_shape keep = {0, {0}}, red = {0, {0}};
    int64_t ks[MPS_MAX_DIMS], rs[MPS_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        bool r = n->p.reduce.axes & (1u << d);
        struct mps_shape *t = r ? &red : &keep;
        (r ? rs : ks)[t->ndim] = st[d];
        t->dim[t->ndim++] = x->dim[d];
    }
    struct mps_cu_walk wk = mps_cuda_walk(&keep, ks, NULL, NULL), wr = mps_cuda_walk(&red, rs, NULL, NULL);
    MPS_CU_CHECK(mps_cu_reduce((int)n->op, MPS_IN(0), MPS_OUT(0), mps_shape_numel(&MPS_OUTV(0)->shape), &wk, &wr,
                               s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_layout(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0), *y = MPS_OUTV(0);
    size_t elem = mps_dtype_size(y->dtype);
    int64_t xs[MPS_MAX_DIMS], ys[MPS_MAX_DIMS], src[MPS_MAX_DIMS];
    mps_shape_strides(&x->shape, xs);
    mps_shape_strides(&y->shape, ys);
    const unsigned char *base = MPS_IN(0);
    switch (n->op) {
    case MPS_OP_TRANSPOSE:
        for (int i = 0; i < y->shape.ndim; i++)
            src[i] = xs[n->p.transpose.perm[i]];
        break;
    case MPS_OP_SLICE:
        for (int i = 0; i < y->shape.ndim; i++) {
            src[i] = xs[i] * n->p.slice.step[i];
            if (y->shape.dim[i])
                base += n->p.slice.start[i] * xs[i] * (int64_t)elem;
        }
        break;
    default: /* Expand */
        mps_shape_broadcast_strides(&x->shape, &y->shape, src);
        break;
    }
    struct mps_cu_walk w = mps_cuda_walk(&y->shape, ys, src, NULL);
    MPS_CU_CHECK(mps_cu_copy(MPS_OUT(0), base, &w, elem, s->stream));
    return MPS_OK;
}

/* Concat and Split: blocks along the axis between one big tensor and the parts. */
static enum mps_status mps_cuda_blocks(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    bool concat = n->op == MPS_OP_CONCAT;
    int axis = (int)n->p.axis.axis, parts = concat ? n->n_in : n->n_out;
    const struct mps_value *big = concat ? MPS_OUTV(0) : MPS_INV(0);
    unsigned char *bd = concat ? MPS_OUT(0) : MPS_IN(0);
    size_t elem = mps_dtype_size(big->dtype);
    int64_t bs[MPS_MAX_DIMS], ps[MPS_MAX_DIMS], off = 0;
    mps_shape_strides(&big->shape, bs);
    for (int i = 0; i < parts; i++) {
        const struct mps_value *pv = concat ? MPS_INV(i) : MPS_OUTV(i);
        unsigned char *pd = concat ? MPS_IN(i) : MPS_OUT(i);
        mps_shape_strides(&pv->shape, ps);
        struct mps_cu_walk w = concat ? mps_cuda_walk(&pv->shape, bs, ps, NULL) : mps_cuda_walk(&pv->shape, ps, bs, NULL);
        unsigned char *at = bd + off * bs[axis] * (int64_t)elem;
        if (mps_shape_numel(&pv->shape))
            MPS_CU_CHECK(mps_cu_copy(concat ? at : pd, concat ? pd : at, &w, elem, s->stream));
        off += pv->shape.dim[axis];
    }
    return MPS_OK;
}

static enum mps_status mps_cuda_gather(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0), *ix = MPS_INV(1);
    int axis = (int)n->p.axis.axis;
    MPS_CU_CHECK(mps_cu_gather(MPS_IN(0), MPS_IN(1), ix->dtype == MPS_I64, MPS_OUT(0), mps_cuda_prod(&x->shape, 0, axis),
                               x->shape.dim[axis], mps_shape_numel(&ix->shape),
                               mps_cuda_prod(&x->shape, axis + 1, x->shape.ndim), mps_dtype_size(x->dtype), s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_fill_node(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *y = MPS_OUTV(0);
    if (n->op == MPS_OP_CONSTANT_OF_SHAPE) {
        MPS_CU_CHECK(mps_cu_fill((int)y->dtype, n->p.fill.value, MPS_OUT(0), mps_shape_numel(&y->shape), s->stream));
        return MPS_OK;
    }
    for (int64_t i = n->p.shape.start; i < n->p.shape.end; i++) /* Shape: a handful of dims */
        MPS_CU_CHECK(mps_cu_fill(MPS_I64, (double)MPS_INV(0)->shape.dim[i], (int64_t *)MPS_OUT(0) + (i - n->p.shape.start),
                                 1, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_pad(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0), *y = MPS_OUTV(0);
    unsigned char fill[8];
    mps_cpu_store(fill, y->dtype, 0, n->p.pad.value);
    if (mps_shape_numel(&y->shape) == 0)
        return MPS_OK;
    MPS_CU_CHECK(mps_cu_pad(MPS_IN(0), MPS_OUT(0), y->shape.ndim, x->shape.dim, y->shape.dim, n->p.pad.pads,
                            (int)n->p.pad.mode, fill, mps_dtype_size(y->dtype), s->stream));
    return MPS_OK;
}

typedef enum mps_status (*mps_cuda_launcher)(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err);

static mps_cuda_launcher mps_cuda_launcher_of(enum mps_op op)
{
    switch (op) {
    case MPS_OP_MATMUL: return mps_cuda_matmul;
    case MPS_OP_GEMM: return mps_cuda_gemm_node;
    case MPS_OP_CONV: return mps_cuda_conv;
    case MPS_OP_CONV_TRANSPOSE: return mps_cuda_conv_transpose;
    case MPS_OP_MAX_POOL:
    case MPS_OP_AVERAGE_POOL:
    case MPS_OP_GLOBAL_AVERAGE_POOL:
    case MPS_OP_GLOBAL_MAX_POOL: return mps_cuda_pool;
    case MPS_OP_BATCH_NORM:
    case MPS_OP_LAYER_NORM:
    case MPS_OP_SOFTMAX:
    case MPS_OP_LOG_SOFTMAX: return mps_cuda_norm;
    case MPS_OP_IDENTITY:
    case MPS_OP_DROPOUT:
    case MPS_OP_CONSTANT:
    case MPS_OP_RESHAPE:
    case MPS_OP_FLATTEN:
    case MPS_OP_SQUEEZE:
    case MPS_OP_UNSQUEEZE: return mps_cuda_same_bytes;
    case MPS_OP_CAST: return mps_cuda_cast;
    case MPS_OP_PRELU:
    case MPS_OP_ADD:
    case MPS_OP_SUB:
    case MPS_OP_MUL:
    case MPS_OP_DIV:
    case MPS_OP_POW:
    case MPS_OP_MAX:
    case MPS_OP_MIN:
    case MPS_OP_SUM:
    case MPS_OP_MEAN: return mps_cuda_binary;
    case MPS_OP_REDUCE_MEAN:
    case MPS_OP_REDUCE_SUM:
    case MPS_OP_REDUCE_MAX:
    case MPS_OP_REDUCE_MIN: return mps_cuda_reduce;
    case MPS_OP_TRANSPOSE:
    case MPS_OP_SLICE:
    case MPS_OP_EXPAND: return mps_cuda_layout;
    case MPS_OP_CONCAT:
    case MPS_OP_SPLIT: return mps_cuda_blocks;
    case MPS_OP_GATHER: return mps_cuda_gather;
    case MPS_OP_SHAPE:
    case MPS_OP_CONSTANT_OF_SHAPE: return mps_cuda_fill_node;
    case MPS_OP_PAD: return mps_cuda_pad;
    default: return mps_cuda_unary;
    }
}

/* ---- the backend -------------------------------------------------------------------- */

/* Gather reads its indices on the device, where a bad one cannot be refused:
   only constant indices (checked here) run on the GPU. */
static bool mps_cuda_supports(const struct mps_graph *g, const struct mps_node *n)
{
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
    if (s->exec)
        cudaGraphExecDestroy(s->exec);
    if (s->graph)
        cudaGraphDestroy(s->graph);
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
    cudaFreeHost(s->pinned);
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

/* Weights prepared once per node (Winograd's transformed kernels), on the host
   by the CPU backend's pack function, into one device block. */
static enum mps_status mps_cuda_pack(struct mps_cuda_state *s, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    size_t total = 0, off = 0, most = 0;
    for (int k = 0; k < g->n_nodes; k++)
        if (mps_winograd_applies(g, &g->nodes[k])) {
            size_t b = mps_winograd_pack(g, &g->nodes[k], NULL);
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
        if (!mps_winograd_applies(g, &g->nodes[k]))
            continue;
        size_t b = mps_winograd_pack(g, &g->nodes[k], host);
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
    enum mps_status st = mps_memplan_build(g, 256, &mp, err);
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
    if (e == cudaSuccess)
        e = cudaMallocHost(&s->pinned, pinned + 256);
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
    mps_memplan_free(&mp);
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
    return st;
}

/* Enqueues node k's work on the stream; a failure names the node. */
static enum mps_status mps_cuda_node(struct mps_cuda_state *s, int k, struct mps_error *err)
{
    const struct mps_node *n = &s->g->nodes[k];
    bool empty = true;
    for (int o = 0; o < n->n_out; o++)
        empty = empty && mps_shape_numel(&s->g->values[n->out[o]].shape) == 0;
    if (empty)
        return MPS_OK;
    enum mps_status st = mps_cuda_launcher_of(n->op)(s, n, err);
    if (st) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        return mps_fail(err, st, "node '%s' (%s): %s", n->name, mps_op_name(n->op), why);
    }
    return MPS_OK;
}

/* Enqueues the copies of the inputs from pinned memory (in) or of the outputs to it. */
static enum mps_status mps_cuda_copies(struct mps_cuda_state *s, bool in, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    for (int i = 0; i < (in ? g->n_inputs : g->n_outputs); i++) {
        int v = in ? g->inputs[i] : g->outputs[i];
        size_t bytes = mps_cuda_bytes(&g->values[v]);
        unsigned char *pin = (unsigned char *)s->pinned + (in ? s->in_pin[i] : s->out_pin[i]);
        if (bytes)
            MPS_CUDA_CHECK(cudaMemcpyAsync(in ? s->dptr[v] : pin, in ? pin : s->dptr[v], bytes,
                                           in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s->stream));
    }
    return MPS_OK;
}

/* Records every node, between the copies when copies is set. */
static enum mps_status mps_cuda_record(struct mps_cuda_state *s, bool copies, struct mps_error *err)
{
    enum mps_status st = copies ? mps_cuda_copies(s, true, err) : MPS_OK;
    for (int k = 0; k < s->g->n_nodes && !st; k++)
        st = mps_cuda_node(s, k, err);
    return st || !copies ? st : mps_cuda_copies(s, false, err);
}

/* Captures the record into *graph and instantiates it; a failure inside still ends the capture. */
static enum mps_status mps_cuda_capture(struct mps_cuda_state *s, bool copies, cudaGraph_t *graph,
                                        cudaGraphExec_t *exec, struct mps_error *err)
{
    MPS_CUDA_CHECK(cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
    enum mps_status st = mps_cuda_record(s, copies, err);
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
    if (!s->dptr || !s->in_dev || !s->in_pin || !s->out_pin || !s->packed)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    MPS_CUDA_CHECK(cudaSetDevice(0));
    MPS_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    enum mps_status st = mps_cublas_open(err);
    if (st)
        return st;
    MPS_CUBLAS_CHECK(mps_cublas.create(&s->blas));
    MPS_CUBLAS_CHECK(mps_cublas.set_stream(s->blas, s->stream));
    MPS_CUDA_CHECK(cudaMalloc(&s->workspace, MPS_CUDA_WORKSPACE));
    MPS_CUBLAS_CHECK(mps_cublas.set_workspace(s->blas, s->workspace, MPS_CUDA_WORKSPACE));
    st = mps_cuda_memory(s, err);
    if (!st)
        st = mps_cuda_capture(s, true, &s->graph, &s->exec, err);
    return st ? st : mps_cuda_capture(s, false, &s->nodes_graph, &s->nodes_exec, err);
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

static enum mps_status mps_cuda_run(void *state, const struct mps_tensor *in, struct mps_tensor *out,
                                    struct mps_error *err)
{
    struct mps_cuda_state *s = state;
    const struct mps_graph *g = s->g;
    for (int i = 0; i < g->n_inputs; i++)
        memcpy((unsigned char *)s->pinned + s->in_pin[i], in[i].data, mps_tensor_bytes(&in[i]));
    MPS_CUDA_CHECK(cudaGraphLaunch(s->exec, s->stream));
    MPS_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    for (int i = 0; i < g->n_outputs; i++)
        memcpy(out[i].data, (unsigned char *)s->pinned + s->out_pin[i], mps_tensor_bytes(&out[i]));
    s->ran = true;
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
    for (int i = 0; i < g->n_inputs; i++)
        memcpy((unsigned char *)s->pinned + s->in_pin[i], in[i].data, mps_tensor_bytes(&in[i]));
    enum mps_status st = mps_cuda_copies(s, true, err);
    for (int k = 0; k < g->n_nodes && !st; k++) {
        MPS_CUDA_CHECK(cudaEventRecord(s->events[k], s->stream));
        st = mps_cuda_node(s, k, err);
    }
    if (st)
        return st;
    MPS_CUDA_CHECK(cudaEventRecord(s->events[g->n_nodes], s->stream));
    if ((st = mps_cuda_copies(s, false, err)))
        return st;
    MPS_CUDA_CHECK(cudaStreamSynchronize(s->stream));
    for (int k = 0; k < g->n_nodes; k++) {
        float ms = 0;
        MPS_CUDA_CHECK(cudaEventElapsedTime(&ms, s->events[k], s->events[k + 1]));
        node_ms[k] = ms;
    }
    for (int i = 0; i < g->n_outputs; i++)
        memcpy(out[i].data, (unsigned char *)s->pinned + s->out_pin[i], mps_tensor_bytes(&out[i]));
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
    snprintf(info->detail, sizeof info->detail, "CUDA driver %d.%d, runtime %d.%d, cuBLAS", driver / 1000,
             driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    return MPS_OK;
}

/* cublasGemmEx on device buffers of its own, timed with events: the baseline of bench matmul. */
static enum mps_status mps_cuda_bench_baseline(int64_t m, int64_t n, int64_t k, enum mps_precision precision,
                                               int threads, int warmup, int repeat, double *times_ms,
                                               struct mps_error *err)
{
    struct mps_cuda_state s = {.precision = precision};
    float *a = NULL, *b = NULL, *c = NULL;
    cudaEvent_t t0 = NULL, t1 = NULL;
    enum mps_status st = MPS_OK;
    (void)threads;
    if (cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking) != cudaSuccess ||
        mps_cublas_open(err) != MPS_OK || mps_cublas.create(&s.blas) != CUBLAS_STATUS_SUCCESS ||
        mps_cublas.set_stream(s.blas, s.stream) != CUBLAS_STATUS_SUCCESS ||
        cudaMalloc((void **)&a, sizeof(float) * (size_t)(m * k)) != cudaSuccess ||
        cudaMalloc((void **)&b, sizeof(float) * (size_t)(k * n)) != cudaSuccess ||
        cudaMalloc((void **)&c, sizeof(float) * (size_t)(m * n)) != cudaSuccess ||
        cudaEventCreate(&t0) != cudaSuccess || cudaEventCreate(&t1) != cudaSuccess)
        st = mps_fail(err, MPS_ERR_RUNTIME, "cannot set up the cuBLAS baseline");
    if (!st) {
        cudaMemsetAsync(a, 0, sizeof(float) * (size_t)(m * k), s.stream);
        cudaMemsetAsync(b, 0, sizeof(float) * (size_t)(k * n), s.stream);
    }
    for (int r = 0; r < warmup + repeat && !st; r++) {
        cudaEventRecord(t0, s.stream);
        st = mps_cuda_gemm(&s, false, false, m, n, k, 1.0f, a, b, 0.0f, c, err);
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
    .probe = mps_cuda_probe,
    .supports = mps_cuda_supports,
    .compile = mps_cuda_compile,
    .run = mps_cuda_run,
    .free = mps_cuda_free,
    .profile = mps_cuda_profile,
    .rerun = mps_cuda_rerun,
    .bench_baseline = mps_cuda_bench_baseline,
};
