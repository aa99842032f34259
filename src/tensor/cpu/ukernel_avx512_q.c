/* ukernel_avx512_q.c: the avx512 family's int8 tile (ukernels.h), 8 x 32:
   vpdpbusd multiplies a row's four unsigned bytes, broadcast, by four
   signed bytes of each of sixteen columns and adds the four products to
   an int32 lane, so one instruction makes 64 of the tile's products;
   sixteen accumulators hide its latency. Built with -mavx512f -mavx512vnni;
   called only where cpuid says the CPU has AVX512_VNNI (isa.c). */
#include <immintrin.h>

#include "ukernel_x86.h"

enum { MPS_QMR = 8, MPS_QNR = 32 };

static void mps_avx512_qgemm(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    __m512i acc[MPS_QMR][2];
    for (int r = 0; r < MPS_QMR; r++)
        acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (int64_t g = 0; g < k4; g++, b += 4 * MPS_QNR) {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);
        for (int r = 0; r < MPS_QMR; r++) {
            if (r >= rows)
                break;
            int32_t four;
            __builtin_memcpy(&four, a + r * lda + 4 * g, 4);
            __m512i x = _mm512_set1_epi32(four);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], x, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], x, b1);
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm512_storeu_si512(c + r * MPS_QNR, acc[r][0]);
        _mm512_storeu_si512(c + r * MPS_QNR + 16, acc[r][1]);
    }
}

const struct mps_uqgemm mps_uqgemm_avx512 = {"avx512-vnni", MPS_QMR, MPS_QNR, mps_x86_has_vnni, mps_avx512_qgemm};
