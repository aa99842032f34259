/* resize.h: which inputs, with which weights, make output coordinate o of a
   Resize along one axis (op.h: struct mps_resize_params), as ONNX defines it:
   the coordinate maps back to x in the input (coord), then nearest takes one
   input, linear the two around x, cubic the four, indices clamped to the
   axis (or, with exclude_outside, dropped and the weights renormalized).

       struct mps_resize_taps t;
       mps_resize_taps(&node->p.resize, d, o, in, &t);
       for (int k = 0; k < t.n; k++) acc += t.w[k] * x[t.i[k]];   // n 0: p->extrapolation

   Inline for the CPU kernel and the CUDA kernel alike (host and device); the
   tests' reference (tests/unit/ref.c) is written apart, from the spec. */
#ifndef MPS_RESIZE_H
#define MPS_RESIZE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "op.h"

#if defined(__CUDACC__)
#define MPS_RESIZE_FN static inline __host__ __device__
#else
#define MPS_RESIZE_FN static inline
#endif

struct mps_resize_taps {
    int n;        /* 1 (nearest), 2 (linear) or 4 (cubic); 0: outside the crop (p->extrapolation) */
    int64_t i[4]; /* input indices along the axis */
    float w[4];   /* their weights */
};

/* The input coordinate of output o along axis d (in: its input length). As
   ONNX has it, the output length in these formulas is in * scale, unrounded
   (the sizes given, when the model gives sizes; not times the roi's span
   when cropping, although the output's length is). */
MPS_RESIZE_FN double mps_resize_source(const struct mps_resize_params *p, int d, int64_t o, int64_t in)
{
    double scale = p->scale[d], out = (double)in * scale;
    if (p->coord == MPS_COORD_TF_CROP_AND_RESIZE) {
        double start = p->roi[d], end = p->roi[MPS_MAX_DIMS + d];
        return out != 1 ? start * (double)(in - 1) + (double)o * (end - start) * (double)(in - 1) / (out - 1)
                       : 0.5 * (start + end) * (double)(in - 1);
    }
    switch (p->coord) {
    case MPS_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? ((double)o + 0.5) / scale - 0.5 : 0.0;
    case MPS_COORD_ALIGN_CORNERS: return out > 1 ? (double)o * (double)(in - 1) / (out - 1) : 0.0;
    case MPS_COORD_ASYMMETRIC: return (double)o / scale;
    case MPS_COORD_TF_HALF_PIXEL_FOR_NN: return ((double)o + 0.5) / scale;
    default: return ((double)o + 0.5) / scale - 0.5;
    }
}

MPS_RESIZE_FN int64_t mps_resize_clamp(int64_t i, int64_t in)
{
    return i < 0 ? 0 : i >= in ? in - 1 : i;
}

/* The cubic kernel of Keys with parameter a at distance d >= 0. */
MPS_RESIZE_FN double mps_resize_cubic(double a, double d)
{
    if (d <= 1)
        return ((a + 2) * d - (a + 3)) * d * d + 1;
    if (d < 2)
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;
    return 0;
}

MPS_RESIZE_FN void mps_resize_taps(const struct mps_resize_params *p, int d, int64_t o, int64_t in,
                                   struct mps_resize_taps *t)
{
    double scale = p->scale[d], x = mps_resize_source(p, d, o, in), f = floor(x), r = x - f;
    int64_t i0 = (int64_t)f;
    if (p->coord == MPS_COORD_TF_CROP_AND_RESIZE && (x < 0 || x > (double)(in - 1))) {
        t->n = 0;
        return;
    }
    if (p->mode == MPS_RESIZE_NEAREST) {
        int64_t i;
        switch (p->nearest) {
        case MPS_NEAREST_ROUND_PREFER_CEIL: i = r >= 0.5 ? i0 + 1 : i0; break;
        case MPS_NEAREST_FLOOR: i = i0; break;
        case MPS_NEAREST_CEIL: i = (int64_t)ceil(x); break;
        case MPS_NEAREST_LEGACY: i = scale < 1 ? (int64_t)ceil(x) : i0; break;
        default: i = r > 0.5 ? i0 + 1 : i0; break;
        }
        t->n = 1, t->i[0] = mps_resize_clamp(i, in), t->w[0] = 1.0f;
        return;
    }
    if (p->mode == MPS_RESIZE_LINEAR) {
        t->n = 2;
        t->i[0] = mps_resize_clamp(i0, in), t->w[0] = (float)(1 - r);
        t->i[1] = mps_resize_clamp(i0 + 1, in), t->w[1] = (float)r;
        return;
    }
    double w[4], sum = 0;
    t->n = 4;
    for (int k = 0; k < 4; k++) {
        int64_t i = i0 - 1 + k;
        w[k] = mps_resize_cubic(p->cubic_a, fabs(x - (double)i));
        if (p->exclude_outside && (i < 0 || i >= in))
            w[k] = 0;
        sum += w[k];
        t->i[k] = mps_resize_clamp(i, in);
    }
    for (int k = 0; k < 4; k++)
        t->w[k] = (float)(p->exclude_outside && sum != 0 ? w[k] / sum : w[k]);
}

/* Whether axis d leaves every output o at input o (in == out, and the only
   tap of nonzero weight is o, weighing 1: an axis the model does not resize,
   under any mode). Kernels may then skip its zero-weight taps, which only an
   infinite or NaN neighbour would notice. */
MPS_RESIZE_FN bool mps_resize_identity(const struct mps_resize_params *p, int d, int64_t in, int64_t out)
{
    if (in != out)
        return false;
    for (int64_t o = 0; o < out; o++) {
        struct mps_resize_taps t;
        mps_resize_taps(p, d, o, in, &t);
        if (t.n == 0)
            return false;
        for (int k = 0; k < t.n; k++)
            if (t.w[k] != 0 && (t.i[k] != o || t.w[k] != 1))
                return false;
    }
    return true;
}

#endif
