/* ukernel_avxvnni_q.c: the avx2 family's int8 tile where the CPU has
   AVX-VNNI (the VEX vpdpbusd of Intel's Alder Lake on and AMD's Zen 5,
   which have it without AVX-512 or beside it): 4 x 16, each instruction 32
   of the tile's products summed exactly in int32 (the avx2 tile widens to
   int16 for exactness, 16 products an instruction). The store and the
   requantization are the avx2 tile's. Built with -mavx2 -mavxvnni and
   without contraction; called only where cpuid says the CPU has AVX-VNNI
   (isa.c). */
#include <immintrin.h>

#include "ukernel_q.h"
#include "ukernel_x86.h"

enum { MPS_VQMR = 4, MPS_VQNR = 16 };

/* acc + the four-byte dot products of unsigned u and signed s, lane by lane.
   In asm as the avx512 tile's: with the intrinsic GCC copied each
   accumulator to another register and back around every instruction, and
   spilled one. */
static inline __m256i mps_avxvnni_dpbusd(__m256i acc, __m256i u, __m256i s)
{
#if defined(__GNUC__)
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    return acc;
#else
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
}

/* Row r's four bytes of group g at a + r rs + g gs; signed_a: a's bytes are
   the signed operand (by_weights), else b's. Called with rows MPS_VQMR (a
   constant: the row loop unrolled without tests) or fewer. */
static inline __attribute__((always_inline)) void mps_avxvnni_qtile(int64_t k4, const void *a, int64_t rs, int64_t gs,
                                                                    const void *b, int32_t *c, int rows, bool signed_a)
{
    const unsigned char *pa = a, *pb = b;
    __m256i acc[MPS_VQMR][2];
    for (int r = 0; r < MPS_VQMR; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < k4; g++, pb += 4 * MPS_VQNR) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)pb), b1 = _mm256_loadu_si256((const __m256i *)(pb + 32));
        for (int r = 0; r < MPS_VQMR; r++) {
            if (r >= rows)
                break;
            int32_t four;
            __builtin_memcpy(&four, pa + r * rs + g * gs, 4);
            __m256i x = _mm256_set1_epi32(four);
            if (signed_a) { /* the first multiplicand is the unsigned one */
                acc[r][0] = mps_avxvnni_dpbusd(acc[r][0], b0, x);
                acc[r][1] = mps_avxvnni_dpbusd(acc[r][1], b1, x);
            } else {
                acc[r][0] = mps_avxvnni_dpbusd(acc[r][0], x, b0);
                acc[r][1] = mps_avxvnni_dpbusd(acc[r][1], x, b1);
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm256_storeu_si256((__m256i *)(c + r * MPS_VQNR), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(c + r * MPS_VQNR + 8), acc[r][1]);
    }
}

static void mps_avxvnni_qgemm(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    if (rows == MPS_VQMR)
        mps_avxvnni_qtile(k4, a, lda, 4, b, c, MPS_VQMR, false);
    else
        mps_avxvnni_qtile(k4, a, lda, 4, b, c, rows, false);
}

static void mps_avxvnni_qgemm_w(int64_t k4, const int8_t *a, const uint8_t *b, int32_t *c)
{
    mps_avxvnni_qtile(k4, a, 4, 4 * MPS_VQMR, b, c, MPS_VQMR, true);
}

const struct mps_uqgemm mps_uqgemm_avxvnni = {"avx-vnni",          MPS_VQMR,          MPS_VQNR,
                                              mps_x86_has_avxvnni, mps_avxvnni_qgemm, mps_avxvnni_qgemm_w,
                                              mps_avx2_qstore,     mps_avx2_qrequant};
