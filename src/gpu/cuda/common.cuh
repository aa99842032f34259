// common.cuh: what the .cu files share: launch geometry and the grid-stride loop.
#ifndef MPS_CUDA_COMMON_CUH
#define MPS_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_kernels.h"
#include "op.h"

#define MPS_CU_THREADS 256

static inline unsigned mps_cu_blocks(int64_t n)
{
    int64_t b = (n + MPS_CU_THREADS - 1) / MPS_CU_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

#define MPS_CU_FOR(i, n)                                                                  \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);             \
         i += (int64_t)gridDim.x * blockDim.x)

/* Programmatic dependent launch (sm_90 on; mps_cu_pdl, set by mps_cu_setup):
   every kernel is launched allowed to start while the one before it on the
   stream still runs, and begins with mps_cu_wait, which waits until that one
   has finished and its writes are visible, then lets the next one start
   launching. In a CUDA graph a further kernel then costs ~0.65 us of launch
   instead of ~1.0 us (H100, empty kernels). A kernel that touched global
   memory before mps_cu_wait would race with its predecessor: every kernel
   calls it first (tests/gpu/check_waits.sh checks). */
extern bool mps_cu_pdl;

__device__ static inline void mps_cu_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* kernel<<<grid, block, smem, stream>>>(args), with the attribute above where it applies. */
template <typename... P, typename... A>
static inline int mps_cu_launch_smem(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, void *stream,
                                     A... args)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t c = {};
    c.gridDim = grid, c.blockDim = block, c.dynamicSmemBytes = smem, c.stream = (cudaStream_t)stream;
    c.attrs = attr, c.numAttrs = mps_cu_pdl ? 1 : 0;
    return (int)cudaLaunchKernelEx(&c, kernel, ((P)args)...);
}

template <typename... P, typename... A>
static inline int mps_cu_launch(void (*kernel)(P...), dim3 grid, dim3 block, void *stream, A... args)
{
    return mps_cu_launch_smem(kernel, grid, block, 0, stream, args...);
}

/* Kernels with more than 48 KiB of dynamic shared memory must say so once (mps_cu_setup). */
int mps_cu_gemv_chain_setup(void);

#define MPS_CU_LAUNCH(kernel, n, stream, ...)                                             \
    return (n) > 0 ? mps_cu_launch(kernel, mps_cu_blocks(n), MPS_CU_THREADS, stream, __VA_ARGS__) : 0

/* Index arithmetic runs in I: int32_t where every index and offset a kernel
   computes is at most 2^30 (span), int64_t otherwise. The kernels divide per
   element, and a 64-bit division costs several times a 32-bit one. */
#define MPS_CU_FITS32(span) ((span) <= ((int64_t)1 << 30))

#define MPS_CU_FOR_I(i, n)                                                                \
    for (I i = (I)(blockIdx.x * blockDim.x + threadIdx.x); i < (I)(n); i += (I)(gridDim.x * blockDim.x))

/* Launches kernel<int32_t> or kernel<int64_t> (templated on I) over n elements. */
#define MPS_CU_LAUNCH_I(kernel, n, span, stream, ...)                                     \
    return (n) <= 0                  ? 0                                                      \
           : MPS_CU_FITS32(span) ? mps_cu_launch(kernel<int32_t>, mps_cu_blocks(n), MPS_CU_THREADS, stream, \
                                                 __VA_ARGS__)                                 \
                                 : mps_cu_launch(kernel<int64_t>, mps_cu_blocks(n), MPS_CU_THREADS, stream, \
                                                 __VA_ARGS__)

/* Row kernels: y walks rows (planes), x the positions of a row; the block is
   no wider than a row needs, and the grid no larger than CUDA allows (the
   loops take the rest). */
#define MPS_CU_ROWS_I(r, rows) for (I r = (I)blockIdx.y; r < (I)(rows); r += (I)gridDim.y)
#define MPS_CU_COLS_I(o, len)                                                             \
    for (I o = (I)(blockIdx.x * blockDim.x + threadIdx.x); o < (I)(len); o += (I)(gridDim.x * blockDim.x))

static inline void mps_cu_grid2(int64_t rows, int64_t len, dim3 *grid, dim3 *block)
{
    int64_t threads = len >= MPS_CU_THREADS ? MPS_CU_THREADS : (len + 31) / 32 * 32;
    int64_t bx = (len + threads - 1) / threads;
    block->x = (unsigned)threads, block->y = block->z = 1;
    grid->x = (unsigned)(bx > 1024 ? 1024 : bx);
    grid->y = (unsigned)(rows > 65535 ? 65535 : rows);
    grid->z = 1;
}

#define MPS_CU_LAUNCH2_I(kernel, rows, len, span, stream, ...)                            \
    do {                                                                                  \
        if ((rows) <= 0 || (len) <= 0)                                                    \
            return 0;                                                                     \
        dim3 grid_, block_;                                                               \
        mps_cu_grid2((rows), (len), &grid_, &block_);                                     \
        return MPS_CU_FITS32(span) ? mps_cu_launch(kernel<int32_t>, grid_, block_, stream, __VA_ARGS__) \
                                   : mps_cu_launch(kernel<int64_t>, grid_, block_, stream, __VA_ARGS__); \
    } while (0)

/* The largest index a walk reaches: its element count and each operand's farthest offset. */
static inline int64_t mps_cu_walk_span(const struct mps_cu_walk *w)
{
    int64_t n = 1, o[3] = {0, 0, 0};
    for (int d = 0; d < w->nd; d++) {
        n *= w->dim[d];
        int64_t last = w->dim[d] > 0 ? w->dim[d] - 1 : 0;
        o[0] += last * (w->s0[d] < 0 ? -w->s0[d] : w->s0[d]);
        o[1] += last * (w->s1[d] < 0 ? -w->s1[d] : w->s1[d]);
        o[2] += last * (w->s2[d] < 0 ? -w->s2[d] : w->s2[d]);
    }
    int64_t m = n;
    for (int j = 0; j < 3; j++)
        m = o[j] > m ? o[j] : m;
    return m;
}

/* Offsets of element i of walk w in its three operands. */
template <typename I>
__device__ static inline void mps_cu_offsets(const struct mps_cu_walk &w, I i, I *o0, I *o1, I *o2)
{
    I a = 0, b = 0, c = 0;
    for (int d = w.nd - 1; d >= 0; d--) {
        I dim = (I)w.dim[d], k = i % dim;
        i /= dim;
        a += k * (I)w.s0[d];
        b += k * (I)w.s1[d];
        c += k * (I)w.s2[d];
    }
    *o0 = a, *o1 = b, *o2 = c;
}

/* An activation op (enum mps_op) on v, with its two parameters; the CPU's math. */
__device__ static inline float mps_cu_act(int op, float v, float alpha, float beta)
{
    switch (op) {
    case MPS_OP_RELU: return v > 0 ? v : (v == v ? 0.0f : v);
    case MPS_OP_LEAKY_RELU: return v >= 0 ? v : alpha * v;
    case MPS_OP_ELU: return v >= 0 ? v : alpha * expm1f(v);
    case MPS_OP_SELU: return v > 0 ? beta * v : beta * alpha * expm1f(v);
    case MPS_OP_SIGMOID: return v >= 0 ? 1.0f / (1.0f + expf(-v)) : expf(v) / (1.0f + expf(v));
    case MPS_OP_HARD_SIGMOID: return fmaxf(0.0f, fminf(1.0f, alpha * v + beta));
    case MPS_OP_HARD_SWISH: return v * fmaxf(0.0f, fminf(1.0f, v / 6.0f + 0.5f));
    case MPS_OP_TANH: return tanhf(v);
    case MPS_OP_SOFTPLUS: return v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v));
    case MPS_OP_SOFTSIGN: return v / (1.0f + fabsf(v));
    case MPS_OP_GELU:
        return beta != 0.0f ? 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)))
                            : 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case MPS_OP_ERF: return erff(v);
    case MPS_OP_SIN: return sinf(v);
    case MPS_OP_COS: return cosf(v);
    case MPS_OP_TAN: return tanf(v);
    case MPS_OP_ASIN: return asinf(v);
    case MPS_OP_ACOS: return acosf(v);
    case MPS_OP_ATAN: return atanf(v);
    case MPS_OP_SINH: return sinhf(v);
    case MPS_OP_COSH: return coshf(v);
    case MPS_OP_ASINH: return asinhf(v);
    case MPS_OP_ACOSH: return acoshf(v);
    case MPS_OP_ATANH: return atanhf(v);
    case MPS_OP_EXP: return expf(v);
    case MPS_OP_LOG: return logf(v);
    case MPS_OP_SQRT: return sqrtf(v);
    case MPS_OP_ABS: return fabsf(v);
    case MPS_OP_NEG: return -v;
    case MPS_OP_RECIPROCAL: return 1.0f / v;
    case MPS_OP_FLOOR: return floorf(v);
    case MPS_OP_CEIL: return ceilf(v);
    case MPS_OP_CLIP: return v != v ? v : v < alpha ? alpha : v > beta ? beta : v;
    case MPS_OP_SIGN: return v > 0 ? 1.0f : v < 0 ? -1.0f : v;
    case MPS_OP_ROUND: return rintf(v);
    case MPS_OP_THRESHOLDED_RELU: return v > alpha ? v : 0.0f;
    case MPS_OP_SHRINK: return v < -alpha ? v + beta : v > alpha ? v - beta : 0.0f;
    default: return v;
    }
}

/* (Log)Softmax of one row x[0], x[stride], ... x[(len - 1) stride] into y, by the 32
   lanes of a warp, each taking every 32nd element: the CPU's math (float max, double
   exp and sum). Every lane of the warp calls it. */
__device__ static inline void mps_cu_softmax_row(const float *x, float *y, int64_t len, int64_t stride, int lane,
                                                 int log_out)
{
    float mx = -INFINITY;
    for (int64_t i = lane; i < len; i += 32)
        mx = x[i * stride] > mx ? x[i * stride] : mx;
    for (int off = 16; off > 0; off /= 2) {
        float o = __shfl_xor_sync(0xffffffff, mx, off);
        mx = o > mx ? o : mx;
    }
    double sum = 0;
    for (int64_t i = lane; i < len; i += 32)
        sum += exp((double)x[i * stride] - mx);
    for (int off = 16; off > 0; off /= 2)
        sum += __shfl_xor_sync(0xffffffff, sum, off);
    if (log_out) {
        double lsum = log(sum);
        for (int64_t i = lane; i < len; i += 32)
            y[i * stride] = (float)((double)x[i * stride] - mx - lsum);
    } else {
        double inv = 1.0 / sum; /* one division, then multiplies: at most a double ulp off the CPU */
        for (int64_t i = lane; i < len; i += 32)
            y[i * stride] = (float)(exp((double)x[i * stride] - mx) * inv);
    }
}

#endif
