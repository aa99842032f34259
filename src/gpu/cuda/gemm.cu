// gemm.cu: Gemm for a few rows (batch 1 to 8 through a Linear layer) as one
// kernel with its bias and activation: at these sizes the run is launch and
// weight-read bound, and a GEMM, then an epilogue, is two launches.
#include "common.cuh"

/* One warp per output column j: the lanes read weight row j (contiguous, as
   Linear exports it: transB = 1) four floats at a time where k allows, each
   against the m input rows, then reduce across the warp. */
__global__ static void mps_cu_gemv_k(const float *x, const float *w, const float *bias, float alpha, float beta,
                                     float *y, int m, int n, int k, int act, float act_alpha, float act_beta)
{
    mps_cu_wait();
    int j = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = (int)(threadIdx.x % 32);
    if (j >= n)
        return;
    const float *wj = w + (size_t)j * k;
    float acc[MPS_CU_GEMV_ROWS] = {0};
    int i = 0;
    if (k % 4 == 0) {
        const float4 *w4 = (const float4 *)wj;
        for (int q = lane; q < k / 4; q += 32) {
            float4 wv = w4[q];
#pragma unroll
            for (int r = 0; r < MPS_CU_GEMV_ROWS; r++)
                if (r < m) {
                    float4 xv = ((const float4 *)(x + (size_t)r * k))[q];
                    acc[r] += wv.x * xv.x + wv.y * xv.y + wv.z * xv.z + wv.w * xv.w;
                }
        }
        i = k;
    }
    for (int q = i + lane; q < k; q += 32) {
        float wv = wj[q];
#pragma unroll
        for (int r = 0; r < MPS_CU_GEMV_ROWS; r++)
            if (r < m)
                acc[r] += wv * x[(size_t)r * k + q];
    }
#pragma unroll
    for (int r = 0; r < MPS_CU_GEMV_ROWS; r++) {
        float v = acc[r];
        for (int off = 16; off > 0; off /= 2)
            v += __shfl_xor_sync(0xffffffff, v, off);
        if (lane == 0 && r < m) {
            v = alpha * v + (bias ? beta * bias[j] : 0.0f);
            y[(size_t)r * n + j] = act ? mps_cu_act(act, v, act_alpha, act_beta) : v;
        }
    }
}

extern "C" int mps_cu_gemv(const float *x, const float *w, const float *bias, float alpha, float beta, float *y,
                           int64_t m, int64_t n, int64_t k, int act, float act_alpha, float act_beta, void *stream)
{
    if (m < 1 || m > MPS_CU_GEMV_ROWS || n > INT32_MAX / 32 || k > INT32_MAX / MPS_CU_GEMV_ROWS)
        return (int)cudaErrorInvalidValue;
    int64_t threads = n * 32;
    unsigned blocks = (unsigned)((threads + MPS_CU_THREADS - 1) / MPS_CU_THREADS);
    return mps_cu_launch(mps_cu_gemv_k, blocks, MPS_CU_THREADS, stream, x, w, bias, alpha, beta, y, (int)m, (int)n,
                         (int)k, act, act_alpha, act_beta);
}
