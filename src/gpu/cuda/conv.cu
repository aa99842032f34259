// conv.cu: im2col and col2im around cuBLAS for Conv and ConvTranspose, a
// direct kernel for depthwise and small convolutions, bias, and pooling.
// Everything in 3-D terms: 1-D and 2-D ops have leading spatial dims of size
// 1 (mps_cu_window).
#include <float.h>

#include "common.cuh"

/* Input coordinate of output position o along axis j for tap t, or -1 in the padding. */
template <typename I> __device__ static inline I mps_cu_src(const mps_cu_window &w, int j, I o, I t)
{
    I i = o * (I)w.s[j] - (I)w.pb[j] + t * (I)w.d[j];
    return i >= 0 && i < (I)w.in[j] ? i : (I)-1;
}

/* Calls f(tap, at, id, ih, iw) for each tap of the window at output position
   pos that lands inside the input: tap its index in the kernel, at the input
   offset in a plane, (id, ih, iw) the input coordinates. */
template <typename I, typename F> __device__ static inline void mps_cu_taps(const mps_cu_window &w, const I pos[3], F f)
{
    for (I td = 0; td < (I)w.k[0]; td++) {
        I id = mps_cu_src<I>(w, 0, pos[0], td);
        for (I th = 0; id >= 0 && th < (I)w.k[1]; th++) {
            I ih = mps_cu_src<I>(w, 1, pos[1], th);
            for (I tw = 0; ih >= 0 && tw < (I)w.k[2]; tw++) {
                I iw = mps_cu_src<I>(w, 2, pos[2], tw);
                if (iw >= 0)
                    f((td * (I)w.k[1] + th) * (I)w.k[2] + tw, (id * (I)w.in[1] + ih) * (I)w.in[2] + iw, id, ih, iw);
            }
        }
    }
}

/* Output position o of a plane as (d, h, w). */
template <typename I> __device__ static inline void mps_cu_pos(const mps_cu_window &w, I o, I pos[3])
{
    I hw = (I)(w.out[1] * w.out[2]);
    pos[0] = o / hw, pos[1] = o % hw / (I)w.out[2], pos[2] = o % (I)w.out[2];
}

/* One step of MaxPool's max over a window in order: the first value, then
   any larger one or the first NaN (the CPU's rule). */
__device__ static inline float mps_cu_max_step(float acc, float v, bool first)
{
    return first || v > acc || (v != v && acc == acc) ? v : acc;
}

/* Row r of col is (channel, tap); its columns are (image, output position). */
template <typename I>
__global__ static void mps_cu_im2col_k(const float *x, float *col, int64_t channels, int64_t batch, int64_t x_stride,
                                       mps_cu_window w)
{
    mps_cu_wait();
    I plane = (I)(w.out[0] * w.out[1] * w.out[2]), taps = (I)(w.k[0] * w.k[1] * w.k[2]);
    I in_plane = (I)(w.in[0] * w.in[1] * w.in[2]), cols = plane * (I)batch;
    MPS_CU_ROWS_I(r, (I)channels * taps)
    {
        I t = r % taps, c = r / taps;
        I tk[3] = {t / (I)(w.k[1] * w.k[2]), t / (I)w.k[2] % (I)w.k[1], t % (I)w.k[2]};
        float *cr = col + r * cols;
        MPS_CU_COLS_I(j, cols)
        {
            I pos[3], b = j / plane, o = j % plane;
            const float *xc = x + b * (I)x_stride + c * in_plane;
            mps_cu_pos<I>(w, o, pos);
            I id = mps_cu_src<I>(w, 0, pos[0], tk[0]), ih = mps_cu_src<I>(w, 1, pos[1], tk[1]),
              iw = mps_cu_src<I>(w, 2, pos[2], tk[2]);
            cr[j] = id >= 0 && ih >= 0 && iw >= 0 ? xc[(id * (I)w.in[1] + ih) * (I)w.in[2] + iw] : 0.0f;
        }
    }
}

extern "C" int mps_cu_im2col(const float *x, float *col, int64_t channels, int64_t batch, int64_t x_stride,
                             const struct mps_cu_window *w, void *stream)
{
    int64_t rows = channels * w->k[0] * w->k[1] * w->k[2], cols = batch * w->out[0] * w->out[1] * w->out[2];
    int64_t span = rows * cols > batch * x_stride ? rows * cols : batch * x_stride;
    MPS_CU_LAUNCH2_I(mps_cu_im2col_k, rows, cols, span, stream, x, col, channels, batch, x_stride, *w);
}

/* Row p of y is (image, channel); z holds the channel's row with the images side by side. */
template <typename I>
__global__ static void mps_cu_unbatch_k(const float *z, float *y, const float *bias, int64_t batch, int64_t channels,
                                        int64_t plane, int act, float alpha, float beta)
{
    mps_cu_wait();
    MPS_CU_ROWS_I(p, (I)batch * (I)channels)
    {
        I b = p / (I)channels, c = p % (I)channels;
        const float *zr = z + (c * (I)batch + b) * (I)plane;
        float b0 = bias ? bias[c] : 0.0f;
        MPS_CU_COLS_I(o, plane)
        {
            float v = zr[o] + b0;
            y[p * (I)plane + o] = act ? mps_cu_act(act, v, alpha, beta) : v;
        }
    }
}

extern "C" int mps_cu_unbatch(const float *z, float *y, const float *bias, int64_t batch, int64_t channels,
                              int64_t plane, int act, float alpha, float beta, void *stream)
{
    MPS_CU_LAUNCH2_I(mps_cu_unbatch_k, batch * channels, plane, batch * channels * plane, stream, z, y, bias, batch,
                     channels, plane, act, alpha, beta);
}

/* ConvTranspose, as a gather: each output element sums the taps whose input
   position (o + pad - t*d) / s is whole and inside; w.in is the input's size. */
__global__ static void mps_cu_col2im_k(const float *col, float *y, mps_cu_window w, int64_t n)
{
    mps_cu_wait();
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

/* Direct convolution, one output per thread, bias and activation applied:
   row p is (image, output channel), its positions the output plane; the
   channel's group supplies cg input channels (1 for depthwise). pool: a
   2-D convolution of even height and width followed by a 2x2 stride-2
   MaxPool: each thread computes the four outputs of a window and writes
   their max to y, the pooled plane. */
template <typename I>
__global__ static void mps_cu_conv_direct_k(const float *x, const float *wt, const float *bias, float *y, int64_t c,
                                            int64_t m, int64_t cg, int64_t mg, mps_cu_window w, int act, float alpha,
                                            float beta, int pool, int64_t rows)
{
    mps_cu_wait();
    I plane = (I)(w.out[0] * w.out[1] * w.out[2]), in_plane = (I)(w.in[0] * w.in[1] * w.in[2]);
    I taps = (I)(w.k[0] * w.k[1] * w.k[2]), outs = pool ? plane / 4 : plane, pw = (I)w.out[2] / 2;
    MPS_CU_ROWS_I(p, rows)
    {
        I b = p / (I)m, mm = p % (I)m, first = mm / (I)mg * (I)cg;
        float b0 = bias ? bias[mm] : 0.0f;
        MPS_CU_COLS_I(o, outs)
        {
            float best = 0.0f;
            for (int e = 0; e < (pool ? 4 : 1); e++) {
                I pos[3];
                if (pool)
                    pos[0] = 0, pos[1] = o / pw * 2 + e / 2, pos[2] = o % pw * 2 + e % 2;
                else
                    mps_cu_pos<I>(w, o, pos);
                float acc = b0;
                for (I ci = 0; ci < (I)cg; ci++) {
                    const float *xc = x + (b * (I)c + first + ci) * in_plane, *wk = wt + (mm * (I)cg + ci) * taps;
                    mps_cu_taps<I>(w, pos, [&](I t, I at, I, I, I) { acc += wk[t] * xc[at]; });
                }
                best = mps_cu_max_step(best, act ? mps_cu_act(act, acc, alpha, beta) : acc, e == 0);
            }
            y[p * outs + o] = best;
        }
    }
}

extern "C" int mps_cu_conv_direct(const float *x, const float *wt, const float *bias, float *y, int64_t batch,
                                  int64_t c, int64_t m, int64_t group, const struct mps_cu_window *w, int act,
                                  float alpha, float beta, int pool, void *stream)
{
    int64_t rows = batch * m, plane = w->out[0] * w->out[1] * w->out[2];
    int64_t in = batch * c * w->in[0] * w->in[1] * w->in[2], wts = m * (c / group) * w->k[0] * w->k[1] * w->k[2];
    int64_t span = rows * plane > in ? rows * plane : in;
    span = wts > span ? wts : span;
    MPS_CU_LAUNCH2_I(mps_cu_conv_direct_k, rows, pool ? plane / 4 : plane, span, stream, x, wt, bias, y, c, m,
                     c / group, m / group, *w, act, alpha, beta, pool, rows);
}

template <typename I>
__global__ static void mps_cu_bias_k(float *y, const float *bias, int64_t channels, int64_t plane, int add, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR_I(i, n)
    {
        float b = bias ? bias[i / (I)plane % (I)channels] : 0.0f;
        y[i] = add ? y[i] + b : b;
    }
}

extern "C" int mps_cu_bias(float *y, const float *bias, int64_t batch, int64_t channels, int64_t plane, int add,
                           void *stream)
{
    int64_t n = batch * channels * plane;
    MPS_CU_LAUNCH_I(mps_cu_bias_k, n, n, stream, y, bias, channels, plane, add, n);
}

/* Row p is a plane (image, channel); its positions are the output plane. */
template <typename I>
__global__ static void mps_cu_pool_k(const float *x, float *y, int64_t *indices, mps_cu_window w, int max,
                                     int include_pad, int column_major, int64_t planes)
{
    mps_cu_wait();
    I plane = (I)(w.out[0] * w.out[1] * w.out[2]), in_plane = (I)(w.in[0] * w.in[1] * w.in[2]);
    MPS_CU_ROWS_I(p, planes)
    MPS_CU_COLS_I(o, plane)
    {
        I pos[3], idx = p * plane + o;
        mps_cu_pos<I>(w, o, pos);
        const float *xp = x + p * in_plane;
        float acc = max ? -FLT_MAX : 0.0f;
        I count = 0, padded = 1, arg = 0;
        for (int j = 0; j < 3; j++) {
            I in_pad = 0;
            for (I t = 0; t < (I)w.k[j]; t++) {
                I i = pos[j] * (I)w.s[j] - (I)w.pb[j] + t * (I)w.d[j];
                in_pad += i >= -(I)w.pb[j] && i < (I)(w.in[j] + w.pe[j]);
            }
            padded *= in_pad;
        }
        mps_cu_taps<I>(w, pos, [&](I, I at, I id, I ih, I iw) {
            float v = xp[at];
            if (max && (v > acc || (v != v && acc == acc) || count == 0)) {
                acc = v;
                arg = column_major ? id + (ih + iw * (I)w.in[1]) * (I)w.in[0] : at;
            } else if (!max) {
                acc += v;
            }
            count++;
        });
        y[idx] = max ? acc : acc / (float)(include_pad ? padded : count);
        if (indices)
            indices[idx] = (int64_t)p * in_plane + arg;
    }
}

extern "C" int mps_cu_pool(const float *x, float *y, int64_t *indices, int64_t planes, const struct mps_cu_window *w,
                           int max, int include_pad, int column_major, void *stream)
{
    int64_t plane = w->out[0] * w->out[1] * w->out[2], in = planes * w->in[0] * w->in[1] * w->in[2];
    MPS_CU_LAUNCH2_I(mps_cu_pool_k, planes, plane, planes * plane > in ? planes * plane : in, stream, x, y, indices, *w,
                     max, include_pad, column_major, planes);
}

/* One warp per plane: lanes stride over it, then a shuffle reduction. */
/* lp > 0: GlobalLpPool's (sum |x|^lp)^(1/lp), summed in double as the CPU does. */
__global__ static void mps_cu_global_pool_k(const float *x, float *y, int64_t planes, int64_t plane, int max, float lp)
{
    mps_cu_wait();
    int64_t p = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (p >= planes)
        return;
    const float *xp = x + p * plane;
    if (lp > 0) {
        double s = 0;
        for (int64_t i = lane; i < plane; i += 32)
            s += lp == 2 ? (double)xp[i] * xp[i] : pow(fabs((double)xp[i]), (double)lp);
        for (int off = 16; off > 0; off /= 2)
            s += __shfl_down_sync(0xffffffff, s, off);
        if (lane == 0)
            y[p] = (float)(lp == 2 ? sqrt(s) : pow(s, 1.0 / lp));
        return;
    }
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

extern "C" int mps_cu_global_pool(const float *x, float *y, int64_t planes, int64_t plane, int max, float lp,
                                  void *stream)
{
    int64_t threads = planes * 32;
    MPS_CU_LAUNCH(mps_cu_global_pool_k, threads, stream, x, y, planes, plane, max, lp);
}

/* ---- Winograd F(2x2, 3x3) (the CPU's winograd.c explains the transforms) ---- */

/* V[k][c][j] = (B^T d B)[k] for the 4x4 input tile d of column j = (image, tile): row c is a channel. */
template <typename I> __global__ static void mps_cu_wino_input_k(const float *x, float *v, mps_cu_wino q)
{
    mps_cu_wait();
    I tiles = (I)(q.th * q.tw), cols = (I)q.n * tiles, hw = (I)(q.h * q.w);
    MPS_CU_ROWS_I(c, q.c)
    MPS_CU_COLS_I(j, cols)
    {
        I b = j / tiles, t = j % tiles, y0 = t / (I)q.tw * 2 - (I)q.pt, x0 = t % (I)q.tw * 2 - (I)q.pl;
        const float *xc = x + (b * (I)q.c + c) * hw;
        float d[4][4], r[4][4];
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 4; k++) {
                I yy = y0 + i, xx = x0 + k;
                d[i][k] = yy >= 0 && yy < (I)q.h && xx >= 0 && xx < (I)q.w ? xc[yy * (I)q.w + xx] : 0.0f;
            }
        for (int k = 0; k < 4; k++) {
            r[0][k] = d[0][k] - d[2][k];
            r[1][k] = d[1][k] + d[2][k];
            r[2][k] = d[2][k] - d[1][k];
            r[3][k] = d[1][k] - d[3][k];
        }
        float *at = v + c * cols + j;
        I slab = (I)q.c * cols;
        for (int i = 0; i < 4; i++) {
            at[(4 * i + 0) * slab] = r[i][0] - r[i][2];
            at[(4 * i + 1) * slab] = r[i][1] + r[i][2];
            at[(4 * i + 2) * slab] = r[i][2] - r[i][1];
            at[(4 * i + 3) * slab] = r[i][1] - r[i][3];
        }
    }
}

extern "C" int mps_cu_wino_input(const float *x, float *v, const struct mps_cu_wino *q, void *stream)
{
    int64_t cols = q->n * q->th * q->tw, span = 16 * q->c * cols;
    int64_t in = q->n * q->c * q->h * q->w;
    MPS_CU_LAUNCH2_I(mps_cu_wino_input_k, q->c, cols, span > in ? span : in, stream, x, v, *q);
}

/* y's 2x2 block of column j = A^T P[.][m][j] A + bias, activated: row m is an
   output channel. pool (height and width even): the block is a 2x2 stride-2
   MaxPool's window, and y the pooled output, one value a block. */
template <typename I>
__global__ static void mps_cu_wino_output_k(const float *p, float *y, const float *bias, mps_cu_wino q, int act,
                                            float alpha, float beta, int pool)
{
    mps_cu_wait();
    I tiles = (I)(q.th * q.tw), cols = (I)q.n * tiles, slab = (I)q.m * cols;
    MPS_CU_ROWS_I(m, q.m)
    MPS_CU_COLS_I(j, cols)
    {
        const float *at = p + m * cols + j;
        float s[16], r[2][4], b0 = bias ? bias[m] : 0.0f, best = 0.0f;
        for (int k = 0; k < 16; k++)
            s[k] = at[k * slab];
        for (int k = 0; k < 4; k++) {
            r[0][k] = s[k] + s[4 + k] + s[8 + k];
            r[1][k] = s[4 + k] - s[8 + k] - s[12 + k];
        }
        I b = j / tiles, t = j % tiles, y0 = t / (I)q.tw * 2, x0 = t % (I)q.tw * 2;
        float *ym = y + (b * (I)q.m + m) * (I)(q.oh * q.ow / (pool ? 4 : 1));
        for (int a = 0; a < 2; a++) {
            float o[2] = {r[a][0] + r[a][1] + r[a][2] + b0, r[a][1] - r[a][2] - r[a][3] + b0};
            for (int e = 0; e < 2; e++) {
                float v = act ? mps_cu_act(act, o[e], alpha, beta) : o[e];
                if (pool)
                    best = mps_cu_max_step(best, v, a == 0 && e == 0);
                else if (y0 + a < (I)q.oh && x0 + e < (I)q.ow)
                    ym[(y0 + a) * (I)q.ow + x0 + e] = v;
            }
        }
        if (pool)
            ym[t] = best;
    }
}

extern "C" int mps_cu_wino_output(const float *p, float *y, const float *bias, const struct mps_cu_wino *q, int act,
                                  float alpha, float beta, int pool, void *stream)
{
    int64_t cols = q->n * q->th * q->tw, span = 16 * q->m * cols;
    int64_t out = q->n * q->m * q->oh * q->ow;
    MPS_CU_LAUNCH2_I(mps_cu_wino_output_k, q->m, cols, span > out ? span : out, stream, p, y, bias, *q, act, alpha,
                     beta, pool);
}
