/* mod.h: ONNX Mod of one pair. With fmod the remainder has the dividend's
   sign (C's fmod and %); without, the divisor's (Python's %). An integer
   remainder by 0 is 0 (no trap), as Div's quotient is.
   Inline for the CPU kernel and the CUDA kernel alike (host and device). */
#ifndef MPS_MOD_H
#define MPS_MOD_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define MPS_MOD_FN static inline __host__ __device__
#else
#define MPS_MOD_FN static inline
#endif

/* fmod is exact, so a float's remainder computed in double is the float's. */
MPS_MOD_FN double mps_mod_float(double a, double b, bool c_fmod)
{
    double r = fmod(a, b);
    return !c_fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

MPS_MOD_FN int64_t mps_mod_int(int64_t a, int64_t b, bool c_fmod)
{
    if (b == 0 || b == -1) /* -1: INT64_MIN % -1 traps; every remainder by -1 is 0 */
        return 0;
    int64_t r = a % b;
    return !c_fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

#endif
