// launch.cu: how the kernels are launched (common.cuh: mps_cu_launch, mps_cu_wait).
#include "common.cuh"

bool mps_cu_pdl;

__global__ static void mps_cu_probe_k(void)
{
    mps_cu_wait();
}

/* Programmatic launches only where the kernel code this device runs has its
   waits: compiled for compute_90 or later (SASS, or PTX compiled on load). */
extern "C" int mps_cu_setup(void)
{
    cudaFuncAttributes a;
    cudaError_t e = cudaFuncGetAttributes(&a, mps_cu_probe_k);
    mps_cu_pdl = e == cudaSuccess && a.ptxVersion >= 90;
    return e == cudaSuccess ? mps_cu_gemv_chain_setup() : (int)e;
}
