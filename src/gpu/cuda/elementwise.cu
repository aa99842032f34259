// elementwise.cu: unary activations and math, numpy-broadcast binary ops,
// Cast and fill. Grid-stride loops; the math matches the CPU kernels'.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "common.cuh"
#include "cuda_kernels.h"
#include "mod.h"
#include "op.h"


__global__ static void mps_cu_unary_k(int op, float alpha, float beta, const float *x, float *y, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n) y[i] = mps_cu_act(op, x[i], alpha, beta);
}

extern "C" int mps_cu_unary(int op, float alpha, float beta, const float *x, float *y, int64_t n, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_unary_k, n, stream, op, alpha, beta, x, y, n);
}

/* Offsets of output element i in the three operands of walk w. */
/* fmod: Mod's flag (mod.h). */
template <typename T> __device__ static T mps_cu_bin(int op, T u, T v, bool fmod)
{
    switch (op) {
    case MPS_OP_MOD: return (T)mps_mod_int((int64_t)u, (int64_t)v, fmod);
    case MPS_OP_SUB: return u - v;
    case MPS_OP_MUL: return u * v;
    case MPS_OP_DIV: return v == T(0) ? T(0) : u / v; /* integers: no trap; floats never take this branch */
    case MPS_OP_MAX: return (u > v || u != u) ? u : v;
    case MPS_OP_MIN: return (u < v || u != u) ? u : v;
    default: return u + v; /* Add, Sum, Mean */
    }
}

template <> __device__ float mps_cu_bin<float>(int op, float u, float v, bool fmod)
{
    switch (op) {
    case MPS_OP_MOD: return (float)mps_mod_float(u, v, fmod);
    case MPS_OP_SUB: return u - v;
    case MPS_OP_MUL: return u * v;
    case MPS_OP_DIV: return u / v;
    case MPS_OP_POW: return powf(u, v);
    case MPS_OP_MAX: return (u > v || u != u) ? u : v;
    case MPS_OP_MIN: return (u < v || u != u) ? u : v;
    case MPS_OP_PRELU: return u < 0 ? u * v : u;
    default: return u + v;
    }
}

/* A fused activation on a binary result: floats only (the fuse pass fuses none
   into integer ops). */
template <typename T> __device__ static inline T mps_cu_bin_act(int act, T v, float, float)
{
    (void)act;
    return v;
}

template <> __device__ inline float mps_cu_bin_act<float>(int act, float v, float alpha, float beta)
{
    return act ? mps_cu_act(act, v, alpha, beta) : v;
}

struct mps_cu_bin_args {
    int op, act;
    float alpha, beta;
};

template <typename T, typename I>
__global__ static void mps_cu_binary_k(mps_cu_bin_args f, const T *a, const T *b, T *y, mps_cu_walk w, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR_I(i, n)
    {
        I oa, ob, oy;
        mps_cu_offsets<I>(w, i, &oa, &ob, &oy);
        y[oy] = mps_cu_bin_act<T>(f.act, mps_cu_bin<T>(f.op, a[oa], b[ob], f.op == MPS_OP_MOD && f.alpha != 0), f.alpha,
                                  f.beta);
    }
}

template <typename T>
static int mps_cu_binary_t(mps_cu_bin_args f, const void *a, const void *b, void *y, const mps_cu_walk *w, int64_t n,
                           void *s)
{
    if (MPS_CU_FITS32(mps_cu_walk_span(w)))
        return mps_cu_launch(mps_cu_binary_k<T, int32_t>, mps_cu_blocks(n), MPS_CU_THREADS, s, f, a, b, y, *w, n);
    return mps_cu_launch(mps_cu_binary_k<T, int64_t>, mps_cu_blocks(n), MPS_CU_THREADS, s, f, a, b, y, *w, n);
}

extern "C" int mps_cu_binary(int op, int dtype, const void *a, const void *b, void *y, const struct mps_cu_walk *w,
                             int act, float alpha, float beta, void *stream)
{
    int64_t n = 1;
    for (int d = 0; d < w->nd; d++)
        n *= w->dim[d];
    if (n == 0)
        return 0;
    mps_cu_bin_args f = {op, act, alpha, beta};
    if (dtype == MPS_F32)
        return mps_cu_binary_t<float>(f, a, b, y, w, n, stream);
    if (dtype == MPS_I64)
        return mps_cu_binary_t<long long>(f, a, b, y, w, n, stream);
    return mps_cu_binary_t<int>(f, a, b, y, w, n, stream);
}

/* Comparisons, And/Or/Xor, Not, IsNaN, IsInf (logic.c's rules): a NaN compares false but != . */
template <typename T, typename I>
__global__ static void mps_cu_logic_k(int op, int inf, const T *a, const T *b, unsigned char *y, mps_cu_walk w,
                                      int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR_I(i, n)
    {
        I oa, ob, oy;
        mps_cu_offsets<I>(w, i, &oa, &ob, &oy);
        T u = a[oa], v = b[ob];
        double d = (double)u;
        bool r;
        switch (op) {
        case MPS_OP_GREATER: r = u > v; break;
        case MPS_OP_LESS: r = u < v; break;
        case MPS_OP_EQUAL: r = u == v; break;
        case MPS_OP_GREATER_OR_EQUAL: r = u >= v; break;
        case MPS_OP_LESS_OR_EQUAL: r = u <= v; break;
        case MPS_OP_AND: r = u != T(0) && v != T(0); break;
        case MPS_OP_OR: r = u != T(0) || v != T(0); break;
        case MPS_OP_XOR: r = (u != T(0)) != (v != T(0)); break;
        case MPS_OP_NOT: r = u == T(0); break;
        case MPS_OP_IS_NAN: r = d != d; break;
        default: r = ((inf & 1) && d == INFINITY) || ((inf & 2) && d == -INFINITY); break; /* IsInf */
        }
        y[oy] = r;
    }
}

template <typename T>
static int mps_cu_logic_t(int op, int inf, const void *a, const void *b, void *y, const mps_cu_walk *w, int64_t n,
                          void *s)
{
    if (n <= 0)
        return 0;
    if (MPS_CU_FITS32(mps_cu_walk_span(w)))
        return mps_cu_launch(mps_cu_logic_k<T, int32_t>, mps_cu_blocks(n), MPS_CU_THREADS, s, op, inf, (const T *)a,
                             (const T *)b, (unsigned char *)y, *w, n);
    return mps_cu_launch(mps_cu_logic_k<T, int64_t>, mps_cu_blocks(n), MPS_CU_THREADS, s, op, inf, (const T *)a,
                         (const T *)b, (unsigned char *)y, *w, n);
}

extern "C" int mps_cu_logic(int op, int dtype, int inf, const void *a, const void *b, void *y,
                            const struct mps_cu_walk *w, void *stream)
{
    int64_t n = 1;
    for (int d = 0; d < w->nd; d++)
        n *= w->dim[d];
    switch (dtype) {
    case MPS_F32: return mps_cu_logic_t<float>(op, inf, a, b, y, w, n, stream);
    case MPS_I64: return mps_cu_logic_t<long long>(op, inf, a, b, y, w, n, stream);
    case MPS_I32: return mps_cu_logic_t<int>(op, inf, a, b, y, w, n, stream);
    default: return mps_cu_logic_t<unsigned char>(op, inf, a, b, y, w, n, stream); /* u8, bool */
    }
}

/* Where: out[i] (contiguous) = cond ? x : y, elements of type T (by size). */
template <typename T, typename I>
__global__ static void mps_cu_where_k(const unsigned char *c, const T *x, const T *y, T *out, mps_cu_walk w,
                                      int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR_I(i, n)
    {
        I oc, ox, oy;
        mps_cu_offsets<I>(w, i, &oc, &ox, &oy);
        out[i] = c[oc] ? x[ox] : y[oy];
    }
}

template <typename T>
static int mps_cu_where_t(const void *c, const void *x, const void *y, void *out, const mps_cu_walk *w, int64_t n,
                          void *s)
{
    if (n <= 0)
        return 0;
    if (MPS_CU_FITS32(mps_cu_walk_span(w)))
        return mps_cu_launch(mps_cu_where_k<T, int32_t>, mps_cu_blocks(n), MPS_CU_THREADS, s, (const unsigned char *)c,
                             (const T *)x, (const T *)y, (T *)out, *w, n);
    return mps_cu_launch(mps_cu_where_k<T, int64_t>, mps_cu_blocks(n), MPS_CU_THREADS, s, (const unsigned char *)c,
                         (const T *)x, (const T *)y, (T *)out, *w, n);
}

extern "C" int mps_cu_where(const void *cond, const void *x, const void *y, void *out, const struct mps_cu_walk *w,
                            size_t elem, void *stream)
{
    int64_t n = 1;
    for (int d = 0; d < w->nd; d++)
        n *= w->dim[d];
    switch (elem) {
    case 1: return mps_cu_where_t<unsigned char>(cond, x, y, out, w, n, stream);
    case 2: return mps_cu_where_t<unsigned short>(cond, x, y, out, w, n, stream);
    case 4: return mps_cu_where_t<unsigned int>(cond, x, y, out, w, n, stream);
    default: return mps_cu_where_t<unsigned long long>(cond, x, y, out, w, n, stream);
    }
}

__global__ static void mps_cu_scale_k(float *y, float s, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n) y[i] *= s;
}

extern "C" int mps_cu_scale(float *y, float s, int64_t n, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_scale_k, n, stream, y, s, n);
}

__device__ static double mps_cu_read(int t, const void *p, int64_t i)
{
    switch (t) {
    case MPS_F32: return ((const float *)p)[i];
    case MPS_F16: return __half2float(((const __half *)p)[i]);
    case MPS_F64: return ((const double *)p)[i];
    case MPS_I64: return (double)((const long long *)p)[i];
    case MPS_I32: return ((const int *)p)[i];
    default: return ((const unsigned char *)p)[i];
    }
}

/* As the CPU's Cast: floats round, integers truncate and saturate, NaN gives 0, bool is v != 0. */
__device__ static void mps_cu_write(int t, void *p, int64_t i, double v)
{
    double tv = v != v ? 0 : trunc(v);
    switch (t) {
    case MPS_F32: ((float *)p)[i] = (float)v; break;
    case MPS_F16: ((__half *)p)[i] = __float2half((float)v); break;
    case MPS_F64: ((double *)p)[i] = v; break;
    case MPS_I64: ((long long *)p)[i] = (long long)fmin(fmax(tv, -9223372036854775808.0), 9223372036854774784.0); break;
    case MPS_I32: ((int *)p)[i] = (int)fmin(fmax(tv, -2147483648.0), 2147483647.0); break;
    case MPS_U8: ((unsigned char *)p)[i] = (unsigned char)fmin(fmax(tv, 0.0), 255.0); break;
    default: ((unsigned char *)p)[i] = v != 0; break;
    }
}

__global__ static void mps_cu_cast_k(int from, int to, const void *x, void *y, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n)
    {
        bool ints = (from == MPS_I64 || from == MPS_I32 || from == MPS_U8) &&
                    (to == MPS_I64 || to == MPS_I32 || to == MPS_U8);
        if (ints) { /* through int64 so that large values stay exact; narrowing wraps */
            long long v = from == MPS_I64 ? ((const long long *)x)[i]
                          : from == MPS_I32 ? ((const int *)x)[i]
                                            : ((const unsigned char *)x)[i];
            if (to == MPS_I64)
                ((long long *)y)[i] = v;
            else if (to == MPS_I32)
                ((int *)y)[i] = (int)(unsigned)v;
            else
                ((unsigned char *)y)[i] = (unsigned char)v;
        } else {
            mps_cu_write(to, y, i, mps_cu_read(from, x, i));
        }
    }
}

extern "C" int mps_cu_cast(int from, int to, const void *x, void *y, int64_t n, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_cast_k, n, stream, from, to, x, y, n);
}

__global__ static void mps_cu_fill_k(int dtype, double v, double step, void *y, int64_t n)
{
    mps_cu_wait();
    MPS_CU_FOR(i, n) mps_cu_write(dtype, y, i, v + (double)i * step);
}

extern "C" int mps_cu_fill(int dtype, double v, void *y, int64_t n, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_fill_k, n, stream, dtype, v, 0.0, y, n);
}

extern "C" int mps_cu_range(int dtype, double start, double delta, void *y, int64_t n, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_fill_k, n, stream, dtype, start, delta, y, n);
}

template <typename I>
__global__ static void mps_cu_epilogue_k(float *y, const float *bias, float scale, int64_t n, int64_t channels,
                                         int64_t plane, int act, float alpha, float beta)
{
    mps_cu_wait();
    MPS_CU_FOR_I(i, n)
    {
        float v = y[i];
        if (bias)
            v += scale * bias[i / (I)plane % (I)channels];
        y[i] = act ? mps_cu_act(act, v, alpha, beta) : v;
    }
}

extern "C" int mps_cu_epilogue(float *y, const float *bias, float scale, int64_t n, int64_t channels, int64_t plane,
                               int act, float alpha, float beta, void *stream)
{
    MPS_CU_LAUNCH_I(mps_cu_epilogue_k, n, n, stream, y, bias, scale, n, channels, plane, act, alpha, beta);
}
