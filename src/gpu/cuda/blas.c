/* blas.c: cuBLAS for the CUDA backend: the library opened at run time (its
   entries in mps_cublas) and the row-major GEMMs the node launchers call. */
#include <dlfcn.h>

#include "cuda_internal.h"

struct mps_cublas mps_cublas;

#define MPS_CUBLAS_LIB "libcublas.so." MPS_CUDA_STR(CUBLAS_VER_MAJOR)
#define MPS_CUDA_STR(x) MPS_CUDA_STR2(x)
#define MPS_CUDA_STR2(x) #x

enum mps_status mps_cublas_open(struct mps_error *err)
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

/* fp32: full-precision FMA (the handle's default math mode never uses TF32,
   the same as PyTorch with TF32 off); tf32 and fp16 run on the tensor cores. */
static cublasComputeType_t mps_cuda_compute(enum mps_precision p)
{
    return p == MPS_PRECISION_TF32   ? CUBLAS_COMPUTE_32F_FAST_TF32
           : p == MPS_PRECISION_FP16 ? CUBLAS_COMPUTE_32F_FAST_16F
                                     : CUBLAS_COMPUTE_32F;
}

enum mps_status mps_cuda_gemm_dt(struct mps_cuda_state *s, enum mps_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
                                 int64_t k, float alpha, const void *a, const void *b, float beta, void *c,
                                 struct mps_error *err)
{
    if (m == 0 || n == 0)
        return MPS_OK;
    cudaDataType_t t = dt == MPS_F16 ? CUDA_R_16F : CUDA_R_32F;
    cublasComputeType_t ct = dt == MPS_F16 ? CUBLAS_COMPUTE_32F : mps_cuda_compute(s->precision);
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    MPS_CUBLAS_CHECK(mps_cublas.gemm(s->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n,
                                     (int)m, (int)k, &alpha, b, t, ldb > 0 ? ldb : 1, a, t, lda > 0 ? lda : 1, &beta,
                                     c, t, (int)n, ct, CUBLAS_GEMM_DEFAULT));
    return MPS_OK;
}

enum mps_status mps_cuda_gemm(struct mps_cuda_state *s, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                              float alpha, const float *a, const float *b, float beta, float *c,
                              struct mps_error *err)
{
    return mps_cuda_gemm_dt(s, MPS_F32, ta, tb, m, n, k, alpha, a, b, beta, c, err);
}

enum mps_status mps_cuda_gemm_batched(struct mps_cuda_state *s, int64_t m, int64_t n, int64_t k, const float *a,
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
