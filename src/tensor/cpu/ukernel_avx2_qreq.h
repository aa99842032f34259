/* ukernel_avx2_qreq.h: ukernel_q.h's mps_uqstore_row in eight lanes, for
   the files built with -mavx2 (ukernel_avx2_q.c's store, the avx-vnni
   tile's store from its registers, the int8 depthwise store of avx2's dwb),
   step for step as the avx512 family's
   (ukernel_avx512_q.c), so that every family stores the same bytes. */
#ifndef MPS_CPU_UKERNEL_AVX2_QREQ_H
#define MPS_CPU_UKERNEL_AVX2_QREQ_H

#include <immintrin.h>
#include <string.h>

#include "ukernel_avx2.h" /* mps_avx2_put: no masked store (vmaskmovps, slow on AMD's cores) */
#include "ukernels.h"

/* Lanes [0, n) of sums acc (none where n <= 0) requantized by r into out;
   rs: the row sums zw multiplies, or NULL. The bytes picked out of the
   lanes by a shuffle (a signed byte must not saturate as packus would),
   the tail under a mask. A conv's rows are short (8 or 16), where the
   plain loop's set-up was a third of mobilenet_v2 int8's time. */
static inline __attribute__((always_inline)) void mps_avx2_qreq(__m256i acc, const int32_t *rs, int n,
                                                                const struct mps_qreq *r, void *out)
{
    if (n <= 0)
        return;
    int left = n < 8 ? n : 8;
    __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    acc = _mm256_add_epi32(acc, _mm256_set1_epi32((int32_t)r->corr));
    if (rs)
        acc =
            _mm256_sub_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32((int32_t)r->zw), _mm256_maskload_epi32(rs, m)));
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(r->mult));
    __asm__("" : "+x"(v)); /* two roundings where the includer contracts (the depthwise kernels' file) */
    if (!r->quant || r->add != 0.0f) /* bytes out: v + 0 is v (or +0 for -0: the same byte); an int32 bias is in corr */
        v = _mm256_add_ps(v, _mm256_set1_ps(r->add));
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(r->lo)), _mm256_set1_ps(r->hi)); /* v > lo ? v : lo, ... */
    if (r->quant) {
        const __m256 round = _mm256_set1_ps(12582912.0f);
        const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 4, 8, 12,
                                              -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
        __m256i q = _mm256_cvtps_epi32(_mm256_sub_ps(_mm256_add_ps(v, round), round)); /* an integer already */
        __m256i bytes = _mm256_shuffle_epi8(_mm256_add_epi32(q, _mm256_set1_epi32(r->yz)), pick);
        __m128i eight = _mm_unpacklo_epi32(_mm256_castsi256_si128(bytes), _mm256_extracti128_si256(bytes, 1));
        if (left == 8)
            _mm_storel_epi64((__m128i *)out, eight);
        else /* constant-size moves: a memcpy of left bytes is a call (a 7x7 plane's last position) */
            mps_put_bytes(out, (uint64_t)_mm_cvtsi128_si64(eight), left);
    } else {
        __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
        mps_avx2_put(out, m, left == 8, _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(r->slope)), neg));
    }
}

#endif
