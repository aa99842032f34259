/* ukernel_q.h: the int8 tile's requantizing store (ukernels.h's
   mps_uqstore_fn), in plain C that each family's int8 file includes, so
   that the compiler vectorizes it at that family's width (like
   ukernel_dw.h). Those files are built without contraction: a multiply and
   an add stay two roundings, so every family stores the same bytes. */
#ifndef MPS_CPU_UKERNEL_Q_H
#define MPS_CPU_UKERNEL_Q_H

#include "ukernels.h"

/* v = (t[j] + corr - zw rs[j]) * mult + add (mod 2^32 before the
   conversion, as int32 arithmetic wraps; the true sum fits), clamped to
   [lo, hi] (NaN cannot come: the sum is an integer); quantized: rounded
   half to even (|v| < 2^22) plus yz, a byte; else a LeakyRelu's slope
   below 0, a float. */
static inline void mps_uqstore_row(const int32_t *restrict t, const int32_t *restrict rs, int n,
                                   const struct mps_qreq *r, void *restrict out)
{
    float mult = r->mult, add = r->add, lo = r->lo, hi = r->hi, slope = r->slope;
    uint32_t corr = r->corr, zw = r->zw;
    int32_t yz = r->yz;
    if (r->quant && !rs) {
        uint8_t *restrict q = out;
        for (int j = 0; j < n; j++) {
            float v = (float)(int32_t)((uint32_t)t[j] + corr) * mult + add;
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            q[j] = (uint8_t)((int32_t)((v + 12582912.0f) - 12582912.0f) + yz);
        }
    } else if (r->quant) {
        uint8_t *restrict q = out;
        for (int j = 0; j < n; j++) {
            float v = (float)(int32_t)((uint32_t)t[j] + corr - zw * (uint32_t)rs[j]) * mult + add;
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            q[j] = (uint8_t)((int32_t)((v + 12582912.0f) - 12582912.0f) + yz);
        }
    } else {
        float *restrict f = out;
        for (int j = 0; j < n; j++) {
            float v = (float)(int32_t)((uint32_t)t[j] + corr - (rs ? zw * (uint32_t)rs[j] : 0)) * mult + add;
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            f[j] = v < 0.0f ? v * slope : v;
        }
    }
}

#endif
