/* ukernel_avx512_qreq.h: ukernel_q.h's mps_uqstore_row in sixteen lanes, for
   the files built with -mavx512f (the VNNI tile's store, ukernel_avx512_q.c;
   the int8 depthwise store of dwb, ukernel_avx512_dw.c), as
   ukernel_avx2_qreq.h is at eight. */
#ifndef MPS_CPU_UKERNEL_AVX512_QREQ_H
#define MPS_CPU_UKERNEL_AVX512_QREQ_H

#include <immintrin.h>

#include "ukernels.h"

/* ukernel_q.h's mps_uqstore_row in sixteen lanes, step for step (no
   contraction, max and min as the selects: v > lo ? v : lo), so that it
   stores the same bytes: lanes [0, n) of sums acc (none where n <= 0); the
   bytes by vpmovdb, the tail under a mask. GCC vectorized the plain loop at
   256 bits with packs and permutes, and it was a quarter of mobilenet_v2
   int8's time (one thread, Zen 5: the model 5.05-5.21 -> 4.50-4.92 ms,
   resnet18 8.9-9.1 -> 8.0-9.1; perf: 28% -> 18%). Also the store of the
   int8 depthwise sums in dwb (ukernel_avx512_dw.c), made int32 first. */
static inline __attribute__((always_inline)) void mps_avx512_qreq(__m512i acc, const int32_t *rs, int n,
                                                                  const struct mps_qreq *r, void *out)
{
    if (n <= 0)
        return;
    __mmask16 m = (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1);
    acc = _mm512_add_epi32(acc, _mm512_set1_epi32((int32_t)r->corr));
    if (rs)
        acc = _mm512_sub_epi32(acc,
                               _mm512_mullo_epi32(_mm512_set1_epi32((int32_t)r->zw), _mm512_maskz_loadu_epi32(m, rs)));
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(r->mult));
    __asm__("" : "+v"(v)); /* two roundings where the includer contracts (the depthwise kernels' file) */
    if (!r->quant || r->add != 0.0f) /* bytes out: v + 0 is v (or +0 for -0: the same byte); an int32 bias is in corr */
        v = _mm512_add_ps(v, _mm512_set1_ps(r->add));
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(r->lo)), _mm512_set1_ps(r->hi));
    if (r->quant) {
        /* to the nearest, ties even, by the instruction's own rounding: what ukernel_q.h's add and subtract of
           1.5 x 2^23 give for these magnitudes, in one step instead of three */
        __m512i q = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q = _mm512_add_epi32(q, _mm512_set1_epi32(r->yz));
        if (n >= 16) /* vpmovdb to a register and a plain store: the masked store to memory takes several
                        cycles a step on Zen 5 */
            _mm_storeu_si128((__m128i *)out, _mm512_cvtepi32_epi8(q));
        else
            _mm512_mask_cvtepi32_storeu_epi8(out, m, q);
    } else {
        __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
        _mm512_mask_storeu_ps(out, m, _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(r->slope)));
    }
}

#endif
