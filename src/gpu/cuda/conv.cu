// conv.cu: im2col and col2im around cuBLAS for Conv and ConvTranspose, a
// direct depthwise kernel, bias, and pooling. Everything in 3-D terms: 1-D
// and 2-D ops have leading spatial dims of size 1 (mps_cu_window).
#include <float.h>

#include "common.cuh"

/* Input coordinate of output position o along axis j for tap t, or -1 in the padding. */
__device__ static inline int64_t mps_cu_src(const mps_cu_window &w, int j, int64_t o, int64_t t)
{
    int64_t i = o * w.s[j] - w.pb[j] + t * w.d[j];
    return i >= 0 && i < w.in[j] ? i : -1;
}

__global__ static void mps_cu_im2col_k(const float *x, float *col, int64_t channels, int64_t x_stride,
                                       mps_cu_window w, int64_t n)
{
    int64_t plane = w.out[0] * w.out[1] * w.out[2], taps = w.k[0] * w.k[1] * w.k[2];
    MPS_CU_FOR(idx, n)
    {
        int64_t o = idx % plane, rb = idx / plane, r = rb % (channels * taps), b = rb / (channels * taps);
        int64_t c = r / taps, t = r % taps;
        const float *xb = x + b * x_stride;
        int64_t tw = t % w.k[2], th = t / w.k[2] % w.k[1], td = t / (w.k[1] * w.k[2]);
        int64_t ow = o % w.out[2], oh = o / w.out[2] % w.out[1], od = o / (w.out[1] * w.out[2]);
        int64_t id = mps_cu_src(w, 0, od, td), ih = mps_cu_src(w, 1, oh, th), iw = mps_cu_src(w, 2, ow, tw);
        col[idx] = id >= 0 && ih >= 0 && iw >= 0 ? xb[((c * w.in[0] + id) * w.in[1] + ih) * w.in[2] + iw] : 0.0f;
    }
}

extern "C" int mps_cu_im2col(const float *x, float *col, int64_t channels, int64_t batch, int64_t x_stride,
                             const struct mps_cu_window *w, void *stream)
{
    int64_t n = batch * channels * w->k[0] * w->k[1] * w->k[2] * w->out[0] * w->out[1] * w->out[2];
    MPS_CU_LAUNCH(mps_cu_im2col_k, n, stream, x, col, channels, x_stride, *w, n);
}

/* ConvTranspose, as a gather: each output element sums the taps whose input
   position (o + pad - t*d) / s is whole and inside; w.in is the input's size. */
__global__ static void mps_cu_col2im_k(const float *col, float *y, mps_cu_window w, int64_t n)
{
    int64_t plane = w.out[0] * w.out[1] * w.out[2], in_plane = w.in[0] * w.in[1] * w.in[2];
    int64_t taps = w.k[0] * w.k[1] * w.k[2];
    MPS_CU_FOR(idx, n)
    {
        int64_t o = idx % plane, m = idx / plane;
        int64_t pos[3] = {o / (w.out[1] * w.out[2]), o / w.out[2] % w.out[1], o % w.out[2]};
        float acc = 0;
        for (int64_t t = 0; t < taps; t++) {
            int64_t tk[3] = {t / (w.k[1] * w.k[2]), t / w.k[2] % w.k[1], t % w.k[2]}, at = 0;
            bool ok = true;
            for (int j = 0; j < 3 && ok; j++) {
                int64_t num = pos[j] + w.pb[j] - tk[j] * w.d[j];
                ok = num >= 0 && num % w.s[j] == 0 && num / w.s[j] < w.in[j];
                at = at * w.in[j] + (ok ? num / w.s[j] : 0);
            }
            if (ok)
                acc += col[(m * taps + t) * in_plane + at];
        }
        y[idx] += acc;
    }
}

extern "C" int mps_cu_col2im(const float *col, float *y, int64_t channels, const struct mps_cu_window *w, void *stream)
{
    int64_t n = channels * w->out[0] * w->out[1] * w->out[2];
    MPS_CU_LAUNCH(mps_cu_col2im_k, n, stream, col, y, *w, n);
}

__global__ static void mps_cu_depthwise_k(const float *x, const float *wt, const float *bias, float *y, int64_t c,
                                          int64_t m, int64_t per_group, mps_cu_window w, int64_t n)
{
    int64_t plane = w.out[0] * w.out[1] * w.out[2], in_plane = w.in[0] * w.in[1] * w.in[2];
    int64_t taps = w.k[0] * w.k[1] * w.k[2];
    MPS_CU_FOR(idx, n)
    {
        int64_t o = idx % plane, p = idx / plane, b = p / m, mm = p % m, ch = mm / per_group;
        int64_t od = o / (w.out[1] * w.out[2]), oh = o / w.out[2] % w.out[1], ow = o % w.out[2];
        const float *xc = x + (b * c + ch) * in_plane, *wk = wt + mm * taps;
        float acc = bias ? bias[mm] : 0.0f;
        for (int64_t td = 0; td < w.k[0]; td++) {
            int64_t id = mps_cu_src(w, 0, od, td);
            for (int64_t th = 0; id >= 0 && th < w.k[1]; th++) {
                int64_t ih = mps_cu_src(w, 1, oh, th);
                for (int64_t tw = 0; ih >= 0 && tw < w.k[2]; tw++) {
                    int64_t iw = mps_cu_src(w, 2, ow, tw);
                    if (iw >= 0)
                        acc += wk[(td * w.k[1] + th) * w.k[2] + tw] * xc[(id * w.in[1] + ih) * w.in[2] + iw];
                }
            }
        }
        y[idx] = acc;
    }
}

extern "C" int mps_cu_depthwise(const float *x, const float *wt, const float *bias, float *y, int64_t batch, int64_t c,
                                int64_t m, int64_t group, const struct mps_cu_window *w, void *stream)
{
    int64_t n = batch * m * w->out[0] * w->out[1] * w->out[2];
    MPS_CU_LAUNCH(mps_cu_depthwise_k, n, stream, x, wt, bias, y, c, m, m / group, *w, n);
}

__global__ static void mps_cu_bias_k(float *y, const float *bias, int64_t channels, int64_t plane, int add, int64_t n)
{
    MPS_CU_FOR(i, n)
    {
        float b = bias ? bias[i / plane % channels] : 0.0f;
        y[i] = add ? y[i] + b : b;
    }
}

extern "C" int mps_cu_bias(float *y, const float *bias, int64_t batch, int64_t channels, int64_t plane, int add,
                           void *stream)
{
    int64_t n = batch * channels * plane;
    MPS_CU_LAUNCH(mps_cu_bias_k, n, stream, y, bias, channels, plane, add, n);
}

__global__ static void mps_cu_pool_k(const float *x, float *y, int64_t *indices, mps_cu_window w, int max,
                                     int include_pad, int column_major, int64_t n)
{
    int64_t plane = w.out[0] * w.out[1] * w.out[2], in_plane = w.in[0] * w.in[1] * w.in[2];
    MPS_CU_FOR(idx, n)
    {
        int64_t o = idx % plane, p = idx / plane;
        int64_t pos[3] = {o / (w.out[1] * w.out[2]), o / w.out[2] % w.out[1], o % w.out[2]};
        const float *xp = x + p * in_plane;
        float acc = max ? -FLT_MAX : 0.0f;
        int64_t count = 0, padded = 1, arg = 0;
        for (int j = 0; j < 3; j++) {
            int64_t in_pad = 0;
            for (int64_t t = 0; t < w.k[j]; t++) {
                int64_t i = pos[j] * w.s[j] - w.pb[j] + t * w.d[j];
                in_pad += i >= -w.pb[j] && i < w.in[j] + w.pe[j];
            }
            padded *= in_pad;
        }
        for (int64_t td = 0; td < w.k[0]; td++) {
            int64_t id = mps_cu_src(w, 0, pos[0], td);
            for (int64_t th = 0; id >= 0 && th < w.k[1]; th++) {
                int64_t ih = mps_cu_src(w, 1, pos[1], th);
                for (int64_t tw = 0; ih >= 0 && tw < w.k[2]; tw++) {
                    int64_t iw = mps_cu_src(w, 2, pos[2], tw);
                    if (iw < 0)
                        continue;
                    int64_t at = (id * w.in[1] + ih) * w.in[2] + iw;
                    float v = xp[at];
                    if (max && (v > acc || (v != v && acc == acc) || count == 0)) {
                        acc = v;
                        arg = column_major ? id + (ih + iw * w.in[1]) * w.in[0] : at;
                    } else if (!max) {
                        acc += v;
                    }
                    count++;
                }
            }
        }
        y[idx] = max ? acc : acc / (float)(include_pad ? padded : count);
        if (indices)
            indices[idx] = p * in_plane + arg;
    }
}

extern "C" int mps_cu_pool(const float *x, float *y, int64_t *indices, int64_t planes, const struct mps_cu_window *w,
                           int max, int include_pad, int column_major, void *stream)
{
    int64_t n = planes * w->out[0] * w->out[1] * w->out[2];
    MPS_CU_LAUNCH(mps_cu_pool_k, n, stream, x, y, indices, *w, max, include_pad, column_major, n);
}

/* One warp per plane: lanes stride over it, then a shuffle reduction. */
__global__ static void mps_cu_global_pool_k(const float *x, float *y, int64_t planes, int64_t plane, int max)
{
    int64_t p = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (p >= planes)
        return;
    const float *xp = x + p * plane;
    float acc = max ? -FLT_MAX : 0.0f;
    for (int64_t i = lane; i < plane; i += 32)
        acc = max ? (xp[i] > acc || xp[i] != xp[i] ? xp[i] : acc) : acc + xp[i];
    for (int off = 16; off > 0; off /= 2) {
        float o = __shfl_down_sync(0xffffffff, acc, off);
        acc = max ? (o > acc || o != o ? o : acc) : acc + o;
    }
    if (lane == 0)
        y[p] = max ? acc : acc / (float)plane;
}

extern "C" int mps_cu_global_pool(const float *x, float *y, int64_t planes, int64_t plane, int max, void *stream)
{
    int64_t threads = planes * 32;
    MPS_CU_LAUNCH(mps_cu_global_pool_k, threads, stream, x, y, planes, plane, max);
}
