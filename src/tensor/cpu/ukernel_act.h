/* ukernel_act.h: the sigmoid and tanh of an array (ukernels.h's sigmoid
   and tanh, the recurrent nets' gates) in plain C that each family's file
   includes, so that the compiler vectorizes it at that family's width (like
   ukernel_dw.h). Each value is clipped to [-clip, clip] first (INFINITY:
   not clipped); a NaN stays NaN.

   e^x is 2^n e^r: n the integer nearest x / ln 2 (rounded by adding and
   taking away 1.5 * 2^23), r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2] (ln 2 in
   two parts, Cody and Waite's), e^r a degree-7 Taylor polynomial, x clamped
   to [-87, 88] where 2^n is normal. The sigmoid 1 / (1 + e^-x) is within
   2 ulp of the double one; tanh is 1 - 2 / (e^2|x| + 1) with |x|'s sign,
   and below |x| = 0.6, where that cancels, a 13/6-degree rational in x
   (Eigen's fast tanh): within 1e-7 of tanh everywhere (measured over a
   million points of [-20, 20]). */
#ifndef MPS_CPU_UKERNEL_ACT_H
#define MPS_CPU_UKERNEL_ACT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float mps_act_exp(float x)
{
    x = x != x ? 0.0f : x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x; /* a NaN: the callers pass it through */
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693145751953125f - n * 1.428606765330187045e-06f;
    float e = 1.0f / 5040;
    e = e * r + 1.0f / 720, e = e * r + 1.0f / 120, e = e * r + 1.0f / 24, e = e * r + 1.0f / 6;
    e = e * r + 0.5f, e = e * r + 1.0f, e = e * r + 1.0f;
    int32_t bits = ((int32_t)n + 127) * (1 << 23);
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return e * scale;
}

static inline float mps_act_tanh_small(float x)
{
    float x2 = x * x, p = -2.76076847742355e-16f, q = 1.19825839466702e-06f;
    p = p * x2 + 2.00018790482477e-13f, p = p * x2 - 8.60467152213735e-11f, p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f, p = p * x2 + 6.37261928875436e-04f, p = p * x2 + 4.89352455891786e-03f;
    q = q * x2 + 1.18534705686654e-04f, q = q * x2 + 2.26843463243900e-03f, q = q * x2 + 4.89352518554385e-03f;
    return x * p / q;
}

static void mps_act_sigmoid(float *v, int64_t n, float clip)
{
    for (int64_t i = 0; i < n; i++) {
        float x = v[i] < -clip ? -clip : v[i] > clip ? clip : v[i];
        v[i] = x != x ? x : 1.0f / (1.0f + mps_act_exp(-x));
    }
}

static void mps_act_tanh(float *v, int64_t n, float clip)
{
    for (int64_t i = 0; i < n; i++) {
        float x = v[i] < -clip ? -clip : v[i] > clip ? clip : v[i], ax = fabsf(x);
        float t = ax < 0.6f ? mps_act_tanh_small(ax) : 1.0f - 2.0f / (mps_act_exp(2.0f * ax) + 1.0f);
        v[i] = x != x ? x : x < 0 ? -t : t;
    }
}

#endif
