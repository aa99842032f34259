// norm.cu: BatchNormalization, InstanceNormalization, LayerNormalization, Softmax/LogSoftmax, and the
// Reduce ops. Sums in double, as the CPU kernels do (reduce.h).
#include <float.h>
#include <math.h>

#include "common.cuh"
#include "op.h"
#include "reduce.h"

template <typename I>
__global__ static void mps_cu_bn_k(const float *x, const float *scale, const float *bias, const float *mean,
                                   const float *var, float eps, float *y, int64_t channels, int64_t plane, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR_I(i, n)
    {
        I c = i / (I)plane % (I)channels;
        float k = (float)(scale[c] / sqrt((double)var[c] + eps)), b = bias[c] - mean[c] * k;
        y[i] = x[i] * k + b;
    }
}

extern "C" int mps_cu_batch_norm(const float *x, const float *scale, const float *bias, const float *mean,
                                 const float *var, float eps, float *y, int64_t batch, int64_t channels,
                                 int64_t plane, void *stream)
{
    int64_t n = batch * channels * plane;
    MPS_CU_LAUNCH_I(mps_cu_bn_k, n, n, stream, x, scale, bias, mean, var, eps, y, channels, plane, n);
}

/* The sum of v over the block's threads, in every thread (red: blockDim.x doubles). */
__device__ static double mps_cu_block_sum(double v, double *red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s)
            red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    double sum = red[0];
    __syncthreads(); /* red is reused by the next call */
    return sum;
}

/* LRN: one thread an element, its channel window's squares summed in double (the CPU's math). */
__global__ static void mps_cu_lrn_k(const float *x, float *y, int64_t channels, int64_t plane, int64_t size,
                                    float alpha, float beta, float bias, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        int64_t c = i / plane % channels, first = i - c * plane; /* channel 0 of the image, same position */
        int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
        int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi >= channels ? channels - 1 : c + hi;
        double sum = 0;
        for (int64_t k = c0; k <= c1; k++) {
            double v = x[first + k * plane];
            sum += v * v;
        }
        y[i] = (float)(x[i] / pow((double)bias + (double)alpha / (double)size * sum, (double)beta));
    }
}

extern "C" int mps_cu_lrn(const float *x, float *y, int64_t batch, int64_t channels, int64_t plane, int64_t size,
                          float alpha, float beta, float bias, void *stream)
{
    int64_t n = batch * channels * plane;
    MPS_CU_LAUNCH(mps_cu_lrn_k, n, stream, x, y, channels, plane, size, alpha, beta, bias, n);
}

/* InstanceNormalization in two launches over (chunk, plane) blocks of
   MPS_CU_IN_CHUNK elements, so that a few large planes still fill the GPU:
   each block takes its chunk's count, mean and sum of squared deviations
   (two passes, in double) into stats; then each block merges its plane's
   chunks by Chan's rule and normalizes its chunk, in double. */
__global__ static void mps_cu_in_stats_k(const float *x, double *stats, int64_t planes, int64_t plane, int64_t chunks)
{
    mps_cu_wait();
    __shared__ double red[MPS_CU_THREADS];
    for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
        int64_t lo = (int64_t)blockIdx.x * MPS_CU_IN_CHUNK, hi = lo + MPS_CU_IN_CHUNK < plane ? lo + MPS_CU_IN_CHUNK : plane;
        const float *xp = x + p * plane;
        double sum = 0, sq = 0;
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
            sum += xp[i];
        double mean = mps_cu_block_sum(sum, red) / (double)(hi - lo);
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
            sq += (xp[i] - mean) * (xp[i] - mean);
        double m2 = mps_cu_block_sum(sq, red);
        if (threadIdx.x == 0) {
            stats[2 * (p * chunks + blockIdx.x)] = mean;
            stats[2 * (p * chunks + blockIdx.x) + 1] = m2;
        }
    }
}

__global__ static void mps_cu_in_apply_k(const float *x, const double *stats, const float *scale, const float *bias,
                                         float eps, float *y, int64_t planes, int64_t channels, int64_t plane,
                                         int64_t chunks)
{
    mps_cu_wait();
    for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
        double n = 0, mean = 0, m2 = 0; /* Chan et al.: merge (count, mean, M2) chunk by chunk */
        for (int64_t k = 0; k < chunks; k++) {
            double nb = (double)((k + 1) * MPS_CU_IN_CHUNK < plane ? MPS_CU_IN_CHUNK : plane - k * MPS_CU_IN_CHUNK);
            double mb = stats[2 * (p * chunks + k)], delta = mb - mean, total = n + nb;
            mean += delta * nb / total;
            m2 += stats[2 * (p * chunks + k) + 1] + delta * delta * n * nb / total;
            n = total;
        }
        double k = scale[p % channels] / sqrt(m2 / (double)plane + eps), b = bias[p % channels];
        int64_t lo = (int64_t)blockIdx.x * MPS_CU_IN_CHUNK, hi = lo + MPS_CU_IN_CHUNK < plane ? lo + MPS_CU_IN_CHUNK : plane;
        for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
            y[p * plane + i] = (float)((x[p * plane + i] - mean) * k + b);
    }
}

extern "C" int mps_cu_instance_norm(const float *x, const float *scale, const float *bias, float eps, float *y,
                                    double *stats, int64_t planes, int64_t channels, int64_t plane, void *stream)
{
    if (planes <= 0 || plane <= 0)
        return 0;
    int64_t chunks = (plane + MPS_CU_IN_CHUNK - 1) / MPS_CU_IN_CHUNK;
    dim3 grid((unsigned)chunks, (unsigned)(planes < 65535 ? planes : 65535));
    int rc = mps_cu_launch(mps_cu_in_stats_k, grid, MPS_CU_THREADS, stream, x, stats, planes, plane, chunks);
    return rc ? rc
              : mps_cu_launch(mps_cu_in_apply_k, grid, MPS_CU_THREADS, stream, x, (const double *)stats, scale, bias,
                              eps, y, planes, channels, plane, chunks);
}

/* Offset into a scale or bias broadcast over the normalized dims (walk dims, s0 strides). */
__device__ static int64_t mps_cu_bcast_at(const mps_cu_walk &w, int64_t i)
{
    int64_t off = 0;
    for (int d = w.nd - 1; d >= 0; d--) {
        off += i % w.dim[d] * w.s0[d];
        i /= w.dim[d];
    }
    return off;
}

__global__ static void mps_cu_ln_k(const float *x, const float *scale, const float *bias, float *y, float *mean_out,
                                   float *inv_out, int64_t rows, int64_t row, mps_cu_walk sw, mps_cu_walk bw, float eps)
{
    mps_cu_wait();
    MPS_CU_FOR(r, rows)
    {
        const float *xr = x + r * row;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < row; i++)
            sum += xr[i];
        double mean = sum / (double)row;
        for (int64_t i = 0; i < row; i++)
            sq += (xr[i] - mean) * (xr[i] - mean);
        double inv = 1.0 / sqrt(sq / (double)row + eps);
        for (int64_t i = 0; i < row; i++) {
            double v = (xr[i] - mean) * inv * scale[mps_cu_bcast_at(sw, i)];
            if (bias)
                v += bias[mps_cu_bcast_at(bw, i)];
            y[r * row + i] = (float)v;
        }
        if (mean_out)
            mean_out[r] = (float)mean;
        if (inv_out)
            inv_out[r] = (float)inv;
    }
}

extern "C" int mps_cu_layer_norm(const float *x, const float *scale, const float *bias, float *y, float *mean,
                                 float *inv, int64_t rows, int64_t row, const struct mps_cu_walk *sw,
                                 const struct mps_cu_walk *bw, float eps, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_ln_k, rows, stream, x, scale, bias, y, mean, inv, rows, row, *sw, *bw, eps);
}

/* One warp per softmax lane (a row along the axis), mps_cu_softmax_row's way. */
__global__ static void mps_cu_softmax_k(const float *x, float *y, int64_t len, int64_t inner, int log_out, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(t, n) /* n = rows * 32: a warp's threads share a row, the loop bound is warp-uniform */
    {
        int64_t l = t / 32, base = l / inner * len * inner + l % inner;
        mps_cu_softmax_row(x + base, y + base, len, inner, (int)(t % 32), log_out);
    }
}

extern "C" int mps_cu_softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, int log_out,
                              void *stream)
{
    int64_t n = outer * inner * 32;
    MPS_CU_LAUNCH(mps_cu_softmax_k, n, stream, x, y, len, inner, log_out, n);
}

__global__ static void mps_cu_reduce_k(int op, const float *x, float *y, int64_t outputs, mps_cu_walk keep,
                                       mps_cu_walk red, int64_t count)
{
    mps_cu_wait();
    MPS_CU_FOR(o, outputs)
    {
        int64_t base = mps_cu_bcast_at(keep, o);
        struct mps_reduce_acc acc = mps_reduce_start((enum mps_op)op);
        for (int64_t r = 0; r < count; r++)
            mps_reduce_step((enum mps_op)op, &acc, x[base + mps_cu_bcast_at(red, r)]);
        y[o] = (float)mps_reduce_finish((enum mps_op)op, &acc, count);
    }
}

extern "C" int mps_cu_reduce(int op, const float *x, float *y, int64_t outputs, const struct mps_cu_walk *keep,
                             const struct mps_cu_walk *red, void *stream)
{
    int64_t count = 1;
    for (int d = 0; d < red->nd; d++)
        count *= red->dim[d];
    MPS_CU_LAUNCH(mps_cu_reduce_k, outputs, stream, op, x, y, outputs, *keep, *red, count);
}
