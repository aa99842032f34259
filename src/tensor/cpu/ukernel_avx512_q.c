/* ukernel_avx512_q.c: the avx512 family's int8 tile (ukernels.h), 8 x 32,
   ukernel_qtile.h's at 512 bits: one vpdpbusd makes 64 of the tile's
   products; sixteen accumulators hide its latency; the store of
   ukernel_q.h, in intrinsics. Built
   with -mavx512f -mavx512vnni and without contraction;
   called only where cpuid says the CPU has AVX512_VNNI (isa.c). */
#include <immintrin.h>

#include "ukernel_avx512_qreq.h"
#include "ukernel_q.h"
#include "ukernel_x86.h"

enum { MPS_QMR = 8, MPS_QNR = 32 };

/* acc + the four-byte dot products of unsigned u and signed s, lane by lane
   (vpdpbusd). In asm because GCC, given the intrinsic in the unrolled tile,
   copied every accumulator out and back around each instruction (two moves
   per vpdpbusd: resnet18 ran 3x slower). */
static inline __m512i mps_avx512_dpbusd(__m512i acc, __m512i u, __m512i s)
{
#if defined(__GNUC__)
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
    return acc;
#else
    return _mm512_dpbusd_epi32(acc, u, s);
#endif
}

#define MPS_QV __m512i
#define MPS_QV_ZERO() _mm512_setzero_si512()
#define MPS_QV_LOAD(p) _mm512_loadu_si512(p)
#define MPS_QV_SET1(i) _mm512_set1_epi32(i)
#define MPS_QV_STORE(p, v) _mm512_storeu_si512(p, v)
#define MPS_QV_DPBUSD(acc, u, s) mps_avx512_dpbusd(acc, u, s)
#define MPS_QV_LANES 16
#define MPS_QV_MR MPS_QMR
#define MPS_QV_NR MPS_QNR
#define MPS_QV_FN(x) mps_avx512_##x
#define MPS_QV_REQ(acc, rs, n, r, out) mps_avx512_qreq(acc, rs, n, r, out)
#define MPS_QV_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
MPS_UQ_REQUANT(mps_avx512)

#include "ukernel_qtile.h"

static void mps_avx512_qstore(const int32_t *t, const int32_t *rs, int n, const struct mps_qreq *r, void *out)
{
    const struct mps_qreq q = *r;
    size_t el = q.quant ? 1 : 4;
    for (int j = 0; j < n; j += 16)
        mps_avx512_qreq(_mm512_maskz_loadu_epi32((__mmask16)(n - j >= 16 ? 0xffffu : (1u << (n - j)) - 1), t + j),
                        rs ? rs + j : NULL, n - j, &q, (unsigned char *)out + (size_t)j * el);
}

/* ukernels.h's mps_uqstore_f_fn: each float made int32 (exact) in the register. */
static void mps_avx512_qstore_f(const float *s, int64_t n, const struct mps_qreq *r, void *out)
{
    const struct mps_qreq q = *r;
    size_t el = q.quant ? 1 : 4;
    for (int64_t j = 0; j < n; j += 16) {
        int left = n - j < 16 ? (int)(n - j) : 16;
        __m512 v = _mm512_maskz_loadu_ps((__mmask16)(left == 16 ? 0xffffu : (1u << left) - 1), s + j);
        mps_avx512_qreq(_mm512_cvttps_epi32(v), NULL, left, &q, (unsigned char *)out + (size_t)j * el);
    }
}

/* ukernels.h's mps_ulut_fn: 64 bytes a step, each table half (128 bytes)
   looked up by a byte's low seven bits (vpermi2b), the two blended by its
   top bit; the tail under a mask. Where the CPU has AVX512_VBMI (Ice Lake,
   Zen 4 and later; not Skylake-X or Cascade Lake), else byte by byte. */
__attribute__((target("avx512bw,avx512vbmi"))) static void mps_avx512_lut_vbmi(const uint8_t *table, const uint8_t *x,
                                                                               int64_t n, uint8_t *y)
{
    __m512i t0 = _mm512_loadu_si512(table), t1 = _mm512_loadu_si512(table + 64), t2 = _mm512_loadu_si512(table + 128),
            t3 = _mm512_loadu_si512(table + 192);
    for (int64_t i = 0; i < n; i += 64) {
        __mmask64 m = n - i >= 64 ? ~0ull : (1ull << (n - i)) - 1;
        __m512i v = _mm512_maskz_loadu_epi8(m, x + i);
        __m512i r = _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), _mm512_permutex2var_epi8(t0, v, t1),
                                           _mm512_permutex2var_epi8(t2, v, t3));
        _mm512_mask_storeu_epi8(y + i, m, r);
    }
}

static void mps_avx512_lut(const uint8_t *table, const uint8_t *x, int64_t n, uint8_t *y)
{
    if (mps_x86_has_vbmi()) {
        mps_avx512_lut_vbmi(table, x, n, y);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = table[x[i]];
}

const struct mps_uqgemm mps_uqgemm_avx512 = {"avx512-vnni",
                                             MPS_QMR,
                                             MPS_QNR,
                                             mps_x86_has_vnni,
                                             mps_avx512_qgemm,
                                             mps_avx512_qgemm_w,
                                             mps_avx512_qstore,
                                             mps_avx512_qrequant,
                                             mps_avx512_qquantize,
                                             mps_avx512_qdequantize,
                                             mps_avx512_qgemm_ws,
                                             mps_avx512_qstore_f,
                                             mps_avx512_lut,
                                             false};
