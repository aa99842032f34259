// layout.cu: strided copies (Transpose, Slice, Expand, Concat, Split), Gather, Pad.
#include <string.h>

#include "common.cuh"
#include "op.h"
#include "resize.h"

template <typename T, typename I> __global__ static void mps_cu_copy_k(T *dst, const T *src, mps_cu_walk w, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR_I(i, n)
    {
        I od, os, unused;
        mps_cu_offsets<I>(w, i, &od, &os, &unused);
        dst[od] = src[os];
    }
}

template <typename T> static int mps_cu_copy_t(void *dst, const void *src, const mps_cu_walk *w, int64_t n, void *stream)
{
    if (MPS_CU_FITS32(mps_cu_walk_span(w)))
        return mps_cu_launch(mps_cu_copy_k<T, int32_t>, mps_cu_blocks(n), MPS_CU_THREADS, stream, dst, src, *w, n);
    return mps_cu_launch(mps_cu_copy_k<T, int64_t>, mps_cu_blocks(n), MPS_CU_THREADS, stream, dst, src, *w, n);
}

extern "C" int mps_cu_copy(void *dst, const void *src, const struct mps_cu_walk *w, size_t elem, void *stream)
{
    int64_t n = 1;
    for (int d = 0; d < w->nd; d++)
        n *= w->dim[d];
    if (n == 0)
        return 0;
    switch (elem) {
    case 1: return mps_cu_copy_t<uint8_t>(dst, src, w, n, stream);
    case 2: return mps_cu_copy_t<uint16_t>(dst, src, w, n, stream);
    case 4: return mps_cu_copy_t<uint32_t>(dst, src, w, n, stream);
    default: return mps_cu_copy_t<uint64_t>(dst, src, w, n, stream);
    }
}

/* One byte at a time: Gather moves rows of any element size; its indices were checked on the host. */
__global__ static void mps_cu_gather_k(const unsigned char *x, const void *idx, int idx64, unsigned char *y,
                                       int64_t len, int64_t count, int64_t row, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        int64_t b = i % row, j = i / row % count, o = i / row / count;
        int64_t v = idx64 ? ((const long long *)idx)[j] : ((const int *)idx)[j];
        if (v < 0)
            v += len;
        y[i] = x[(o * len + v) * row + b];
    }
}

extern "C" int mps_cu_gather(const void *x, const void *idx, int idx64, void *y, int64_t outer, int64_t len,
                             int64_t count, int64_t inner, size_t elem, void *stream)
{
    int64_t row = inner * (int64_t)elem, n = outer * count * row;
    MPS_CU_LAUNCH(mps_cu_gather_k, n, stream, (const unsigned char *)x, idx, idx64, (unsigned char *)y, len, count,
                  row, n);
}

struct mps_cu_pad_geom {
    int nd;
    int64_t xdim[MPS_CU_MAX_DIMS], ydim[MPS_CU_MAX_DIMS], pb[MPS_CU_MAX_DIMS];
    unsigned char fill[8];
};

__global__ static void mps_cu_pad_k(const unsigned char *x, unsigned char *y, mps_cu_pad_geom g, int mode, int elem,
                                    int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(o, n)
    {
        int64_t rem = o, src = 0, stride = 1;
        bool constant = false;
        for (int d = g.nd - 1; d >= 0; d--) {
            int64_t i = rem % g.ydim[d] - g.pb[d], len = g.xdim[d];
            rem /= g.ydim[d];
            if (i < 0 || i >= len) {
                if (mode == MPS_PAD_CONSTANT)
                    constant = true;
                else if (mode == MPS_PAD_EDGE)
                    i = i < 0 ? 0 : len - 1;
                else
                    i = i < 0 ? -i : 2 * (len - 1) - i;
            }
            src += i * stride;
            stride *= len;
        }
        for (int b = 0; b < elem; b++)
            y[o * elem + b] = constant ? g.fill[b] : x[src * elem + b];
    }
}

extern "C" int mps_cu_pad(const void *x, void *y, int nd, const int64_t *xdim, const int64_t *ydim,
                          const int64_t *pads, int mode, const void *fill, size_t elem, void *stream)
{
    mps_cu_pad_geom g;
    g.nd = nd;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) {
        g.xdim[d] = xdim[d];
        g.ydim[d] = ydim[d];
        g.pb[d] = pads[d];
        n *= ydim[d];
    }
    memcpy(g.fill, fill, elem);
    MPS_CU_LAUNCH(mps_cu_pad_k, n, stream, (const unsigned char *)x, (unsigned char *)y, g, mode, (int)elem, n);
}

struct mps_cu_resize_geom {
    int nd;
    int64_t xdim[MPS_CU_MAX_DIMS], ydim[MPS_CU_MAX_DIMS];
};

/* One output a thread: each axis' taps (resize.h, the CPU kernel's rule),
   then the weighted sum over every combination of them. */
__global__ static void mps_cu_resize_k(const float *x, float *y, mps_cu_resize_geom g, mps_resize_params p, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(o, n)
    {
        struct mps_resize_taps t[MPS_CU_MAX_DIMS];
        int64_t rem = o, stride[MPS_CU_MAX_DIMS], s = 1;
        bool inside = true;
        for (int d = g.nd - 1; d >= 0; d--) {
            mps_resize_taps(&p, d, rem % g.ydim[d], g.xdim[d], &t[d]);
            inside = inside && t[d].n > 0;
            rem /= g.ydim[d];
            stride[d] = s;
            s *= g.xdim[d];
        }
        if (!inside) {
            y[o] = p.extrapolation;
            continue;
        }
        int k[MPS_CU_MAX_DIMS] = {0};
        float acc = 0.0f;
        for (;;) {
            int64_t at = 0;
            float w = 1.0f;
            for (int d = 0; d < g.nd; d++)
                at += t[d].i[k[d]] * stride[d], w *= t[d].w[k[d]];
            acc += w * x[at];
            int d = g.nd - 1;
            while (d >= 0 && ++k[d] == t[d].n)
                k[d--] = 0;
            if (d < 0)
                break;
        }
        y[o] = acc;
    }
}

extern "C" int mps_cu_resize(const float *x, float *y, int nd, const int64_t *xdim, const int64_t *ydim,
                             const struct mps_resize_params *p, void *stream)
{
    mps_cu_resize_geom g;
    g.nd = nd;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) {
        g.xdim[d] = xdim[d];
        g.ydim[d] = ydim[d];
        n *= ydim[d];
    }
    MPS_CU_LAUNCH(mps_cu_resize_k, n, stream, x, y, g, *p, n);
}

/* ArgMax, ArgMin (op.h: struct mps_arg_params): one output a thread, scanning the axis. */
__device__ static inline double mps_cu_load(const void *x, int dtype, int64_t i)
{
    return dtype == MPS_F32 ? (double)((const float *)x)[i]
           : dtype == MPS_I64 ? (double)((const int64_t *)x)[i]
                              : (double)((const int32_t *)x)[i];
}

__global__ static void mps_cu_arg_k(const void *x, int dtype, void *y, int64_t len, int64_t inner, int max, int last,
                                    int hard, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(o, n)
    {
        int64_t base = o / inner * len * inner + o % inner, best = 0;
        double bv = mps_cu_load(x, dtype, base);
        for (int64_t k = 1; k < len; k++) {
            double v = mps_cu_load(x, dtype, base + k * inner);
            bool beats = bv != bv ? (last && v != v)
                         : v != v ? true
                         : max    ? (v > bv || (last && v == bv))
                                  : (v < bv || (last && v == bv));
            if (beats)
                best = k, bv = v;
        }
        if (hard)
            for (int64_t k = 0; k < len; k++)
                ((float *)y)[base + k * inner] = k == best ? 1.0f : 0.0f;
        else
            ((int64_t *)y)[o] = best;
    }
}

/* TopK: one thread a lane; k passes, each taking the next element in the
   order after the previous pick (the CPU's order: the better value, a NaN
   above every number, then the lower index). */
__device__ static bool mps_cu_topk_before(double v, int64_t i, double w, int64_t j, int largest)
{
    bool vn = v != v, wn = w != w;
    if (vn || wn)
        return vn == wn ? i < j : (vn == (largest != 0));
    if (v != w)
        return largest ? v > w : v < w;
    return i < j;
}

__global__ static void mps_cu_topk_k(const void *x, int dtype, void *y, long long *iy, int64_t len, int64_t inner,
                                     int64_t k, int largest, size_t elem, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(o, n)
    {
        int64_t base = o / inner * len * inner + o % inner, prev = -1;
        double pv = 0;
        for (int64_t r = 0; r < k; r++) {
            int64_t best = -1;
            double bv = 0;
            for (int64_t j = 0; j < len; j++) {
                double v = mps_cu_load(x, dtype, base + j * inner);
                if ((prev < 0 || mps_cu_topk_before(pv, prev, v, j, largest)) &&
                    (best < 0 || mps_cu_topk_before(v, j, bv, best, largest)))
                    best = j, bv = v;
            }
            int64_t at = (o / inner * k + r) * inner + o % inner;
            for (size_t b = 0; b < elem; b++)
                ((unsigned char *)y)[at * elem + b] = ((const unsigned char *)x)[(base + best * inner) * elem + b];
            iy[at] = best;
            prev = best, pv = bv;
        }
    }
}

extern "C" int mps_cu_topk(const void *x, int dtype, void *y, int64_t *iy, int64_t outer, int64_t len, int64_t inner,
                           int64_t k, int largest, size_t elem, void *stream)
{
    int64_t n = outer * inner;
    MPS_CU_LAUNCH(mps_cu_topk_k, n, stream, x, dtype, y, (long long *)iy, len, inner, k, largest, elem, n);
}

/* OneHot: output i of [outer, depth, inner] is on where its index (of [outer, inner]) points. */
__global__ static void mps_cu_onehot_k(const void *idx, int idt, void *y, int ydt, int64_t depth, int64_t inner,
                                       double off, double on, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        int64_t o = i / (depth * inner), k = i / inner % depth, r = i % inner;
        int64_t v = (int64_t)mps_cu_load(idx, idt, o * inner + r);
        v += v < 0 ? depth : 0;
        double w = v == k ? on : off;
        if (ydt == MPS_F32)
            ((float *)y)[i] = (float)w;
        else if (ydt == MPS_I64)
            ((long long *)y)[i] = (long long)w;
        else
            ((int *)y)[i] = (int)w;
    }
}

extern "C" int mps_cu_onehot(const void *idx, int idt, void *y, int ydt, int64_t outer, int64_t depth, int64_t inner,
                             double off, double on, void *stream)
{
    int64_t n = outer * depth * inner;
    MPS_CU_LAUNCH(mps_cu_onehot_k, n, stream, idx, idt, y, ydt, depth, inner, off, on, n);
}

/* GatherND (and gathers like it): y[i] = x[off[i]], offsets prepared at compile. */
__global__ static void mps_cu_gather_flat_k(const unsigned char *x, const long long *off, unsigned char *y, size_t elem,
                                            int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        for (size_t b = 0; b < elem; b++)
            y[i * elem + b] = x[off[i] * elem + b];
    }
}

extern "C" int mps_cu_gather_flat(const void *x, const int64_t *off, void *y, int64_t n, size_t elem, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_gather_flat_k, n, stream, (const unsigned char *)x, (const long long *)off,
                  (unsigned char *)y, elem, n);
}

__device__ static void mps_cu_combine(void *y, long long at, const void *u, int64_t i, int dtype, int red)
{
#define MPS_CU_COMBINE(T)                                                                       \
    do {                                                                                        \
        T *p = (T *)y + at, v = ((const T *)u)[i];                                              \
        *p = red == MPS_SCATTER_ADD   ? (T)(*p + v)                                            \
             : red == MPS_SCATTER_MUL ? (T)(*p * v)                                            \
             : red == MPS_SCATTER_MAX ? (*p > v || *p != *p ? *p : v)                          \
                                      : (*p < v || *p != *p ? *p : v);                         \
    } while (0)
    if (dtype == MPS_F32)
        MPS_CU_COMBINE(float);
    else if (dtype == MPS_I64)
        MPS_CU_COMBINE(long long);
    else
        MPS_CU_COMBINE(int);
#undef MPS_CU_COMBINE
}

/* Scatters onto y (the data already there): reduction none in parallel (the
   plan leaves one update an element), the others by one thread in index order. */
__global__ static void mps_cu_scatter_flat_k(unsigned char *y, const long long *off, const unsigned char *u, size_t elem,
                                             int dtype, int red, int64_t n)
{
    mps_cu_wait();
    if (red != MPS_SCATTER_NONE && (dtype == MPS_F32 || dtype == MPS_I64 || dtype == MPS_I32)) {
        if (blockIdx.x == 0 && threadIdx.x == 0)
            for (int64_t i = 0; i < n; i++)
                mps_cu_combine(y, off[i], u, i, dtype, red);
        return;
    }
    MPS_CU_FOR(i, n)
    {
        if (off[i] >= 0)
            for (size_t b = 0; b < elem; b++)
                y[off[i] * elem + b] = u[i * elem + b];
    }
}

extern "C" int mps_cu_scatter_flat(void *y, const int64_t *off, const void *u, int64_t n, size_t elem, int dtype,
                                   int reduction, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_scatter_flat_k, n, stream, (unsigned char *)y, (const long long *)off,
                  (const unsigned char *)u, elem, dtype, reduction, n);
}

/* Trilu: element i of [mats, rows, cols] kept or zeroed, elements of type T (by size). */
template <typename T>
__global__ static void mps_cu_trilu_k(const T *x, T *y, int64_t rows, int64_t cols, int upper, int64_t k, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        int64_t diag = i % cols - i / cols % rows;
        y[i] = (upper ? diag >= k : diag <= k) ? x[i] : T(0);
    }
}

extern "C" int mps_cu_trilu(const void *x, void *y, int64_t n, int64_t rows, int64_t cols, int upper, int64_t k,
                            size_t elem, void *stream)
{
    switch (elem) {
    case 1: MPS_CU_LAUNCH(mps_cu_trilu_k<unsigned char>, n, stream, (const unsigned char *)x, (unsigned char *)y, rows,
                          cols, upper, k, n);
    case 2: MPS_CU_LAUNCH(mps_cu_trilu_k<unsigned short>, n, stream, (const unsigned short *)x, (unsigned short *)y,
                          rows, cols, upper, k, n);
    case 4: MPS_CU_LAUNCH(mps_cu_trilu_k<unsigned int>, n, stream, (const unsigned int *)x, (unsigned int *)y, rows,
                          cols, upper, k, n);
    default: MPS_CU_LAUNCH(mps_cu_trilu_k<unsigned long long>, n, stream, (const unsigned long long *)x,
                           (unsigned long long *)y, rows, cols, upper, k, n);
    }
}

/* CumSum: one thread a lane of [outer, len, inner]; f32 summed in double, integers wrapping. */
__global__ static void mps_cu_cumsum_k(const void *x, void *y, int dtype, int64_t len, int64_t inner, int exclusive,
                                       int reverse, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(o, n)
    {
        int64_t base = o / inner * len * inner + o % inner;
        double acc = 0;
        unsigned long long iacc = 0;
        for (int64_t s = 0; s < len; s++) {
            int64_t at = base + (reverse ? len - 1 - s : s) * inner;
            if (dtype == MPS_F32) {
                float v = ((const float *)x)[at];
                ((float *)y)[at] = (float)(exclusive ? acc : acc + v);
                acc += v;
            } else {
                unsigned long long v = dtype == MPS_I64 ? (unsigned long long)((const long long *)x)[at]
                                                        : (unsigned long long)(long long)((const int *)x)[at];
                unsigned long long r = exclusive ? iacc : iacc + v;
                if (dtype == MPS_I64)
                    ((long long *)y)[at] = (long long)r;
                else
                    ((int *)y)[at] = (int)(unsigned)r;
                iacc += v;
            }
        }
    }
}

extern "C" int mps_cu_cumsum(const void *x, void *y, int dtype, int64_t outer, int64_t len, int64_t inner,
                             int exclusive, int reverse, void *stream)
{
    int64_t n = outer * inner;
    MPS_CU_LAUNCH(mps_cu_cumsum_k, n, stream, x, y, dtype, len, inner, exclusive, reverse, n);
}

extern "C" int mps_cu_arg(const void *x, int dtype, void *y, int64_t outer, int64_t len, int64_t inner, int max,
                          int last, int hard, void *stream)
{
    int64_t n = outer * inner;
    MPS_CU_LAUNCH(mps_cu_arg_k, n, stream, x, dtype, y, len, inner, max, last, hard, n);
}
