/* ukernel_avxvnni_q.c: the avx2 family's int8 tile where the CPU has
   AVX-VNNI (the VEX vpdpbusd of Intel's Alder Lake on and AMD's Zen 5,
   which have it without AVX-512 or beside it): ukernel_qtile.h's at 256
   bits, 4 x 16, each instruction 32 of the tile's products summed exactly
   in int32 (the avx2 tile widens to int16 for exactness, 16 products an
   instruction). The store is the avx2 tile's (ukernel_avx2_qreq.h), a
   conv's also from the tile's registers.
   Built with -mavx2 -mavxvnni and without contraction; called only where
   cpuid says the CPU has AVX-VNNI (isa.c). */
#include <immintrin.h>

#include "ukernel_avx2_qreq.h"
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

#define MPS_QV __m256i
#define MPS_QV_ZERO() _mm256_setzero_si256()
#define MPS_QV_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define MPS_QV_SET1(i) _mm256_set1_epi32(i)
#define MPS_QV_STORE(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define MPS_QV_DPBUSD(acc, u, s) mps_avxvnni_dpbusd(acc, u, s)
#define MPS_QV_LANES 8
#define MPS_QV_MR MPS_VQMR
#define MPS_QV_NR MPS_VQNR
#define MPS_QV_FN(x) mps_avxvnni_##x
#define MPS_QV_REQ(acc, rs, n, r, out) mps_avx2_qreq(acc, rs, n, r, out)
#define MPS_QV_ROWS(X) X(0) X(1) X(2) X(3)
#include "ukernel_qtile.h"

MPS_UQ_REQUANT(mps_avxvnni)

const struct mps_uqgemm mps_uqgemm_avxvnni = {"avx-vnni",
                                              MPS_VQMR,
                                              MPS_VQNR,
                                              mps_x86_has_avxvnni,
                                              mps_avxvnni_qgemm,
                                              mps_avxvnni_qgemm_w,
                                              mps_avx2_qstore,
                                              mps_avxvnni_qrequant,
                                              mps_avxvnni_qquantize,
                                              mps_avxvnni_qdequantize,
                                              mps_avxvnni_qgemm_ws,
                                              mps_avx2_qstore_f,
                                              mps_avx2_lut,
                                              false,
                                              NULL};
