/* cuda_internal.h: what the CUDA backend's C files share (cuda.c: the plan,
   its memory and graphs; nodes.c, nodes_layout.c: a launcher per op family; blas.c: cuBLAS,
   opened at run time). Private to src/gpu/cuda. */
#ifndef MPS_CUDA_INTERNAL_H
#define MPS_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdbool.h>

#include "backend.h"
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
struct mps_cublas {
    void *lib;
    __typeof__(cublasCreate_v2) *create;
    __typeof__(cublasDestroy_v2) *destroy;
    __typeof__(cublasSetStream_v2) *set_stream;
    __typeof__(cublasSetWorkspace_v2) *set_workspace;
    __typeof__(cublasGemmEx) *gemm;
    __typeof__(cublasGemmStridedBatchedEx) *gemm_strided;
    __typeof__(cublasGetStatusString) *status_string;
};
extern struct mps_cublas mps_cublas;

/* Opens cuBLAS once (mpsrun probes and compiles on one thread). */
enum mps_status mps_cublas_open(struct mps_error *err);

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
    void *workspace, *arena, *scratch, *weights, *packed_block;
    void *pinned[2];   /* host staging, two slots (the second made on first use by host_io): the copies in the
                          graph read the inputs from and write the outputs to a slot, so that a caller can
                          fill one slot while the other runs */
    size_t pinned_bytes; /* a slot's */
    void **packed;   /* per node: its weights prepared at compile (Winograd's U), or NULL */
    int *writer;     /* per node: the node whose kernels compute it: itself, a Conv before a
                        MaxPool it computes too, or the first Gemm of a chain (mps_cuda_fuse); the memory plan's */
    void **dptr;     /* per value: its device memory */
    void **in_dev;   /* per graph input: a device buffer */
    size_t *in_pin, *out_pin; /* per graph input / output: offset of its staging in pinned */
    cudaGraph_t graph[2], nodes_graph; /* the whole run, per staging slot; the nodes alone */
    cudaGraphExec_t exec[2], nodes_exec;
    cudaEvent_t *events; /* profile's, one per node and one more; made on first use */
    bool ran;            /* a run has put inputs on the device */
};

/* Row-major C[m,n] = alpha op(A) op(B) + beta C through cuBLAS's column-major
   GEMM (C^T = op(B)^T op(A)^T), in the plan's precision. */
enum mps_status mps_cuda_gemm(struct mps_cuda_state *s, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, const float *b, float beta, float *c, struct mps_error *err);
/* The same on operands of dtype dt: f32 as above, or f16 with f32 accumulation on the
   tensor cores in every precision (PyTorch's half GEMM). */
enum mps_status mps_cuda_gemm_dt(struct mps_cuda_state *s, enum mps_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                                 int64_t k, float alpha, const void *a, const void *b, float beta, void *c,
                                 struct mps_error *err);
/* batch independent row-major C_i[m,n] = A_i[m,k] B_i[k,n], operand i at base + i * stride
   (a stride of 0 shares one matrix), as one cuBLAS call. */
enum mps_status mps_cuda_gemm_batched(struct mps_cuda_state *s, int64_t m, int64_t n, int64_t k, const float *a,
                                      int64_t sa, const float *b, int64_t sb, float *c, int64_t sc, int64_t batch,
                                      struct mps_error *err);

/* Enqueues node n's kernels and GEMMs on s->stream. */
typedef enum mps_status (*mps_cuda_launcher)(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err);
/* NULL for an op without kernels (supports() refuses it, so auto picks the cpu). */
mps_cuda_launcher mps_cuda_launcher_of(enum mps_op op);
/* Sets s->writer: each node its own, but a MaxPool that the Conv before it computes,
   and the Gemms and (Log)Softmax after a Gemm that one chain kernel computes with it. */
void mps_cuda_fuse(struct mps_cuda_state *s);
/* Scratch bytes node n needs beside the arena (im2col, Winograd's transforms). */
size_t mps_cuda_scratch(const struct mps_graph *g, const struct mps_node *n);
/* Whether cuda runs Conv n as Winograd F(2x2, 3x3): a shape it computes
   (winograd_weights.h) with 32 tiles or more a plane and rows it takes. */
bool mps_cuda_winograd(const struct mps_graph *g, const struct mps_node *n);

#endif
