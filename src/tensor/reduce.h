/* reduce.h: how the elements of one box of a Reduce* op (op.h: struct
   mps_reduce_params) fold into its output, in double:

       struct mps_reduce_acc r = mps_reduce_start(op);
       for (each element v of the box) mps_reduce_step(op, &r, v);
       y = (float)mps_reduce_finish(op, &r, count);

   Max and Min let a NaN win (numpy's rule). LogSumExp keeps the running
   maximum and rescales the sum when it grows, so it is one pass and no
   exp() overflows; an infinite or NaN maximum is the result itself.
   Inline for the CPU kernel and the CUDA kernel alike (host and device); the
   tests' reference (tests/unit/ref.c) is written apart, from the spec. */
#ifndef MPS_REDUCE_H
#define MPS_REDUCE_H

#include <math.h>

#include "op.h"

#if defined(__CUDACC__)
#define MPS_REDUCE_FN static inline __host__ __device__
#else
#define MPS_REDUCE_FN static inline
#endif

struct mps_reduce_acc {
    double acc; /* the sum, product or extremum; LogSumExp: the sum of exp(v - max) */
    double max; /* LogSumExp only */
};

MPS_REDUCE_FN struct mps_reduce_acc mps_reduce_start(enum mps_op op)
{
    struct mps_reduce_acc r = {0.0, -INFINITY};
    if (op == MPS_OP_REDUCE_MAX)
        r.acc = -INFINITY;
    else if (op == MPS_OP_REDUCE_MIN)
        r.acc = INFINITY;
    else if (op == MPS_OP_REDUCE_PROD)
        r.acc = 1.0;
    return r;
}

MPS_REDUCE_FN void mps_reduce_step(enum mps_op op, struct mps_reduce_acc *r, double v)
{
    switch (op) {
    case MPS_OP_REDUCE_MAX: r->acc = v > r->acc || v != v ? v : r->acc; break;
    case MPS_OP_REDUCE_MIN: r->acc = v < r->acc || v != v ? v : r->acc; break;
    case MPS_OP_REDUCE_PROD: r->acc *= v; break;
    case MPS_OP_REDUCE_L1: r->acc += fabs(v); break;
    case MPS_OP_REDUCE_L2:
    case MPS_OP_REDUCE_SUM_SQUARE: r->acc += v * v; break;
    case MPS_OP_REDUCE_LOG_SUM_EXP:
        if (v != v || v > r->max) { /* a NaN maximum stays: nothing compares above it */
            r->acc = r->acc * exp(r->max - v) + 1.0;
            r->max = v;
        } else if (v > -INFINITY && r->max < INFINITY) {
            r->acc += exp(v - r->max);
        }
        break;
    default: r->acc += v; break; /* Sum, Mean, LogSum */
    }
}

MPS_REDUCE_FN double mps_reduce_finish(enum mps_op op, const struct mps_reduce_acc *r, int64_t count)
{
    switch (op) {
    case MPS_OP_REDUCE_MEAN: return r->acc / (double)count;
    case MPS_OP_REDUCE_L2: return sqrt(r->acc);
    case MPS_OP_REDUCE_LOG_SUM: return log(r->acc);
    case MPS_OP_REDUCE_LOG_SUM_EXP: return isfinite(r->max) ? r->max + log(r->acc) : r->max;
    default: return r->acc;
    }
}

#endif
