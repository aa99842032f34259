/* ukernel_q.h: the int8 tile's requantizing store (ukernels.h's
   mps_uqstore_fn), in plain C that each family's int8 file includes, so
   that the compiler vectorizes it at that family's width (like
   ukernel_dw.h). Those files are built without contraction: a multiply and
   an add stay two roundings, so every family stores the same bytes. */
#ifndef MPS_CPU_UKERNEL_Q_H
#define MPS_CPU_UKERNEL_Q_H

#include <stddef.h>
#include <string.h>

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

/* ukernels.h's mps_uqstore_f_fn: the floats made int32 (exact) a chunk at a
   time, then the row store. */
static inline void mps_uqstore_f_row(const float *restrict s, int64_t n, const struct mps_qreq *r, void *restrict out)
{
    int32_t t[256];
    size_t el = r->quant ? 1 : 4;
    for (int64_t j = 0; j < n; j += 256) {
        int c = n - j < 256 ? (int)(n - j) : 256;
        for (int i = 0; i < c; i++)
            t[i] = (int32_t)s[j + i];
        mps_uqstore_row(t, NULL, c, r, (unsigned char *)out + (size_t)j * el);
    }
}

/* The quantizer of scale s and zero point z, signed or not. */
static inline struct mps_qto mps_qto_of(float s, float z, bool sgn)
{
    float lo = sgn ? -128.0f : 0.0f, hi = sgn ? 127.0f : 255.0f;
    return (struct mps_qto){s, z, lo, hi, lo - z - 1.0f, hi - z + 1.0f};
}

/* round(x / s) + z, saturated (NaN: 0, as QuantizeLinear's composition's
   Cast makes it), as selects: the loops vectorize. */
static inline uint8_t mps_qto_byte(const struct mps_qto *q, float x)
{
    float t = x / q->s;
    t = t == t ? t : -q->z;      /* NaN: 0 */
    t = t > q->tlo ? t : q->tlo; /* within 2^22 for the rounding below */
    t = t < q->thi ? t : q->thi;
    t = (t + 12582912.0f) - 12582912.0f + q->z;
    t = t > q->lo ? t : q->lo;
    t = t < q->hi ? t : q->hi;
    return (uint8_t)(int32_t)t;
}

/* ukernels.h's mps_uqrequant_fn. */
static inline void mps_uqrequant_row(const uint8_t *restrict a, const struct mps_qdeq *da, const uint8_t *restrict b,
                                     const struct mps_qdeq *db, float lo, float hi, const struct mps_qto *q, int64_t n,
                                     uint8_t *restrict y)
{
    const struct mps_qto qq = *q;
    const float sa = da->s, za = da->z;
    const uint8_t fa = da->flip;
    if (!b) {
        for (int64_t i = 0; i < n; i++) {
            float v = ((float)(uint8_t)(a[i] ^ fa) - za) * sa;
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            y[i] = mps_qto_byte(&qq, v);
        }
        return;
    }
    const float sb = db->s, zb = db->z;
    const uint8_t fb = db->flip;
    for (int64_t i = 0; i < n; i++) {
        float v = ((float)(uint8_t)(a[i] ^ fa) - za) * sa + ((float)(uint8_t)(b[i] ^ fb) - zb) * sb;
        v = v > lo ? v : lo;
        v = v < hi ? v : hi;
        y[i] = mps_qto_byte(&qq, v);
    }
}

/* ukernels.h's mps_uqmul_fn and mps_uqsum_fn: the steps of dequantizing,
   multiplying (summing) and quantizing, each rounded as its own node rounds
   it, in one pass over the bytes. */
static inline void mps_uqmul_row(const uint8_t *restrict a, const struct mps_qdeq *da, const float *restrict m,
                                 int64_t mstep, const struct mps_qto *q, int64_t n, uint8_t *restrict y)
{
    const struct mps_qto qq = *q;
    const float sa = da->s, za = da->z, m0 = m[0];
    const uint8_t fa = da->flip;
    if (!mstep) {
        for (int64_t i = 0; i < n; i++)
            y[i] = mps_qto_byte(&qq, (((float)(uint8_t)(a[i] ^ fa) - za) * sa) * m0);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = mps_qto_byte(&qq, (((float)(uint8_t)(a[i] ^ fa) - za) * sa) * m[i]);
}

static inline double mps_uqsum_row(double s, const uint8_t *restrict x, const struct mps_qdeq *d, int64_t n)
{
    const float sc = d->s, z = d->z;
    const uint8_t f = d->flip;
    float part[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            part[j] += ((float)(uint8_t)(x[i + j] ^ f) - z) * sc;
    for (; i < n; i++)
        part[0] += ((float)(uint8_t)(x[i] ^ f) - z) * sc;
    for (int j = 0; j < 16; j++)
        s += part[j];
    return s;
}

/* ukernels.h's mps_uquantize_fn and mps_udequantize_fn. */
static inline void mps_uquantize_row(const float *restrict x, int64_t n, const struct mps_qto *q, uint8_t *restrict y)
{
    const struct mps_qto qq = *q;
    for (int64_t i = 0; i < n; i++)
        y[i] = mps_qto_byte(&qq, x[i]);
}

static inline void mps_udequantize_row(const uint8_t *restrict x, int64_t n, const struct mps_qdeq *d,
                                       float *restrict y)
{
    const float s = d->s, z = d->z;
    const uint8_t f = d->flip;
    for (int64_t i = 0; i < n; i++)
        y[i] = ((float)(uint8_t)(x[i] ^ f) - z) * s;
}

/* A mps_uqdw3_fn's packed taps t (ukernels.h) as four words, three tap
   rows' bytes then the constant, with the store's own constant (an int32
   bias) moved into the fourth, so that the sums start from it and the store
   adds none: *rq is req less it. */
static inline void mps_uqdw3_taps(const int8_t *t, const struct mps_qreq *req, int32_t tw[4], struct mps_qreq *rq)
{
    memcpy(tw, t, 4 * sizeof *tw);
    *rq = *req;
    tw[3] += (int32_t)rq->corr, rq->corr = 0;
}

/* A mps_uqdw3_fn's steps down its output rows: two rows at once at stride 1
   down (four input rows make them), else one; ROWS(oh, two, flip) with two
   and flip constants in each call, so that the family's row step, inlined,
   is compiled for each. */
#define MPS_UQDW3_STEPS(g, flip, ROWS)                                                                                 \
    for (int64_t oh_ = 0; oh_ < (g)->out_h;) {                                                                         \
        bool two_ = (g)->sh == 1 && oh_ + 1 < (g)->out_h;                                                              \
        if (two_ && (flip))                                                                                            \
            ROWS(oh_, true, true);                                                                                     \
        else if (two_)                                                                                                 \
            ROWS(oh_, true, false);                                                                                    \
        else                                                                                                           \
            ROWS(oh_, false, flip);                                                                                    \
        oh_ += two_ ? 2 : 1;                                                                                           \
    }

/* A family's requantization, (de)quantization and store (mps_uqgemm's), compiled at its width. */
#define MPS_UQ_ROWS(fam)                                                                                               \
    static void fam##_qstore(const int32_t *t, const int32_t *rs, int n, const struct mps_qreq *r, void *out)          \
    {                                                                                                                  \
        mps_uqstore_row(t, rs, n, r, out);                                                                             \
    }                                                                                                                  \
    static void fam##_qstore_f(const float *s, int64_t n, const struct mps_qreq *r, void *out)                         \
    {                                                                                                                  \
        mps_uqstore_f_row(s, n, r, out);                                                                               \
    }                                                                                                                  \
    MPS_UQ_REQUANT(fam)
#define MPS_UQ_REQUANT(fam)                                                                                            \
    static void fam##_qrequant(const uint8_t *a, const struct mps_qdeq *da, const uint8_t *b,                          \
                               const struct mps_qdeq *db, float lo, float hi, const struct mps_qto *q, int64_t n,      \
                               uint8_t *y)                                                                             \
    {                                                                                                                  \
        mps_uqrequant_row(a, da, b, db, lo, hi, q, n, y);                                                              \
    }                                                                                                                  \
    static void fam##_qquantize(const float *x, int64_t n, const struct mps_qto *q, uint8_t *y)                        \
    {                                                                                                                  \
        mps_uquantize_row(x, n, q, y);                                                                                 \
    }                                                                                                                  \
    static void fam##_qdequantize(const uint8_t *x, int64_t n, const struct mps_qdeq *d, float *y)                     \
    {                                                                                                                  \
        mps_udequantize_row(x, n, d, y);                                                                               \
    }                                                                                                                  \
    MPS_UQ_MUL(fam)
/* A family's QLinearMul and QLinearGlobalAveragePool rows (mps_uqgemm's mul and sum). */
#define MPS_UQ_MUL(fam)                                                                                                \
    static void fam##_qmul(const uint8_t *a, const struct mps_qdeq *da, const float *m, int64_t mstep,                 \
                           const struct mps_qto *q, int64_t n, uint8_t *y)                                             \
    {                                                                                                                  \
        mps_uqmul_row(a, da, m, mstep, q, n, y);                                                                       \
    }                                                                                                                  \
    static double fam##_qsum(double s, const uint8_t *x, const struct mps_qdeq *d, int64_t n)                          \
    {                                                                                                                  \
        return mps_uqsum_row(s, x, d, n);                                                                              \
    }

#endif
