// gemm.cu: Gemm for a few rows (batch 1 to 8 through a Linear layer) as one
// kernel with its bias and activation: at these sizes the run is launch and
// latency bound, and a GEMM, then an epilogue, is two launches.
#include "common.cuh"

/* T threads per output column j (a warp or several) split weight row j
   (contiguous, as Linear exports it: transB = 1), four floats at a time where
   k allows, each against the m input rows; the warps reduce by shuffles, then
   through shared memory. T grows with k so that each thread reads a few
   float4s of w: the kernel's time is a few L2 round trips, not k / 128 of
   them one after another. */
template <int T>
__global__ static void mps_cu_gemv_k(const float *x, const float *w, const float *bias, float alpha, float beta,
                                     float *y, int m, int n, int k, int act, float act_alpha, float act_beta)
{
    mps_cu_wait();
    __shared__ float part[MPS_CU_GEMV_ROWS][MPS_CU_THREADS / 32];
    int t = (int)(threadIdx.x % T), j = (int)(blockIdx.x * (MPS_CU_THREADS / T) + threadIdx.x / T);
    float acc[MPS_CU_GEMV_ROWS] = {0};
    if (j < n) {
        const float *wj = w + (size_t)j * k;
        int i = 0;
        if (k % 4 == 0) {
            const float4 *w4 = (const float4 *)wj;
#pragma unroll 4
            for (int q = t; q < k / 4; q += T) {
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
#pragma unroll 4
        for (int q = i + t; q < k; q += T) {
            float wv = wj[q];
#pragma unroll
            for (int r = 0; r < MPS_CU_GEMV_ROWS; r++)
                if (r < m)
                    acc[r] += wv * x[(size_t)r * k + q];
        }
    }
    int lane = (int)(threadIdx.x % 32), warp = (int)(threadIdx.x / 32);
#pragma unroll
    for (int r = 0; r < MPS_CU_GEMV_ROWS; r++) {
        for (int off = 16; off > 0; off /= 2)
            acc[r] += __shfl_xor_sync(0xffffffff, acc[r], off);
        if (T > 32 && lane == 0)
            part[r][warp] = acc[r];
    }
    if (T > 32) {
        __syncthreads();
        for (int r = 0; r < MPS_CU_GEMV_ROWS; r++) {
            float v = 0;
            for (int u = 0; u < T / 32; u++)
                v += part[r][warp / (T / 32) * (T / 32) + u];
            acc[r] = v;
        }
    }
    if (t == 0 && j < n)
#pragma unroll
        for (int r = 0; r < MPS_CU_GEMV_ROWS; r++)
            if (r < m) {
                float v = alpha * acc[r] + (bias ? beta * bias[j] : 0.0f);
                y[(size_t)r * n + j] = act ? mps_cu_act(act, v, act_alpha, act_beta) : v;
            }
}

extern "C" int mps_cu_gemv(const float *x, const float *w, const float *bias, float alpha, float beta, float *y,
                           int64_t m, int64_t n, int64_t k, int act, float act_alpha, float act_beta, void *stream)
{
    if (m < 1 || m > MPS_CU_GEMV_ROWS || n > INT32_MAX / 32 || k > INT32_MAX / MPS_CU_GEMV_ROWS)
        return (int)cudaErrorInvalidValue;
    int64_t loads = k % 4 == 0 ? k / 4 : k, t = 32; /* threads per column: at most two loads each, or the block */
    while (t < MPS_CU_THREADS && loads > 2 * t)
        t *= 2;
    unsigned blocks = (unsigned)((n + MPS_CU_THREADS / t - 1) / (MPS_CU_THREADS / t));
    auto kernel = t == 32 ? mps_cu_gemv_k<32> : t == 64 ? mps_cu_gemv_k<64> : t == 128 ? mps_cu_gemv_k<128>
                                                                          : mps_cu_gemv_k<256>;
    return mps_cu_launch(kernel, blocks, MPS_CU_THREADS, stream, x, w, bias, alpha, beta, y, (int)m, (int)n, (int)k,
                         act, act_alpha, act_beta);
}
