// common.cuh: what the .cu files share: launch geometry and the grid-stride loop.
#ifndef MPS_CUDA_COMMON_CUH
#define MPS_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_kernels.h"

#define MPS_CU_THREADS 256

static inline unsigned mps_cu_blocks(int64_t n)
{
    int64_t b = (n + MPS_CU_THREADS - 1) / MPS_CU_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 8 ? 65535 * 8 : b);
}

#define MPS_CU_FOR(i, n)                                                                  \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n);             \
         i += (int64_t)gridDim.x * blockDim.x)

#define MPS_CU_LAUNCH(kernel, n, stream, ...)                                             \
    do {                                                                                  \
        if ((n) > 0)                                                                      \
            kernel<<<mps_cu_blocks(n), MPS_CU_THREADS, 0, (cudaStream_t)(stream)>>>(__VA_ARGS__); \
        return (int)cudaGetLastError();                                                   \
    } while (0)

/* Offsets of element i of walk w in its three operands. */
__device__ static inline void mps_cu_offsets(const struct mps_cu_walk &w, int64_t i, int64_t *o0, int64_t *o1,
                                             int64_t *o2)
{
    int64_t a = 0, b = 0, c = 0;
    for (int d = w.nd - 1; d >= 0; d--) {
        int64_t k = i % w.dim[d];
        i /= w.dim[d];
        a += k * w.s0[d];
        b += k * w.s1[d];
        c += k * w.s2[d];
    }
    *o0 = a, *o1 = b, *o2 = c;
}

#endif
