/* ukernel_x86.h: what the x86-64 kernel families share: whether the CPU and
   the OS run them (isa.c asks cpuid and xgetbv; built without AVX flags, so
   that asking never executes an instruction the CPU lacks). */
#ifndef MPS_CPU_UKERNEL_X86_H
#define MPS_CPU_UKERNEL_X86_H

#include <stdbool.h>
#include <stdint.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ukernels.h"

bool mps_x86_has_avx2(void);   /* AVX2 and FMA, YMM state saved by the OS */
bool mps_x86_has_avx512(void); /* AVX-512F, ZMM and mask state saved by the OS */
bool mps_x86_has_vnni(void);   /* that, and AVX512_VNNI (vpdpbusd) */
bool mps_x86_has_vbmi(void);   /* AVX-512 with AVX512BW and AVX512_VBMI (vpermi2b) */
bool mps_x86_has_avxvnni(void); /* AVX2 and AVX-VNNI (vpdpbusd on YMM, VEX) */

/* The int8 tiles (ukernel_avx2_q.c, ukernel_avxvnni_q.c, ukernel_avx512_q.c). */
extern const struct mps_uqgemm mps_uqgemm_avx2, mps_uqgemm_avxvnni, mps_uqgemm_avx512;
/* avx2's stores, which the avx-vnni tile shares */
void mps_avx2_qstore(const int32_t *t, const int32_t *rs, int n, const struct mps_qreq *r, void *out);
void mps_avx2_qstore_f(const float *s, int64_t n, const struct mps_qreq *r, void *out);
void mps_avx2_lut(const uint8_t *table, const uint8_t *x, int64_t n, uint8_t *y);

#if defined(__SSE2__)
/* Sixteen rows of sixteen bytes (x + r stride, each byte xor flip)
   transposed in four rounds of unpacks: out[p] holds byte p of each row, in
   row order (a position's sixteen channels from sixteen planes: qimage.c's
   channels-last copy, the int8 depthwise input of avx512's dwb). */
static inline void mps_x86_transpose16_bytes(const uint8_t *x, int64_t stride, uint8_t flip, __m128i out[16])
{
    __m128i a[16], b[16], f = _mm_set1_epi8((char)flip);
    for (int r = 0; r < 16; r++)
        a[r] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(x + r * stride)), f);
    for (int i = 0; i < 8; i++) /* pairs of rows: bytes 0-7, 8-15 */
        b[2 * i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]), b[2 * i + 1] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
    for (int j = 0; j < 4; j++) { /* quads of rows: bytes 0-3, 4-7, 8-11, 12-15 */
        a[4 * j] = _mm_unpacklo_epi16(b[4 * j], b[4 * j + 2]);
        a[4 * j + 1] = _mm_unpackhi_epi16(b[4 * j], b[4 * j + 2]);
        a[4 * j + 2] = _mm_unpacklo_epi16(b[4 * j + 1], b[4 * j + 3]);
        a[4 * j + 3] = _mm_unpackhi_epi16(b[4 * j + 1], b[4 * j + 3]);
    }
    for (int h = 0; h < 2; h++) /* octets of rows: pairs of bytes */
        for (int q = 0; q < 4; q++) {
            b[8 * h + 2 * q] = _mm_unpacklo_epi32(a[8 * h + q], a[8 * h + 4 + q]);
            b[8 * h + 2 * q + 1] = _mm_unpackhi_epi32(a[8 * h + q], a[8 * h + 4 + q]);
        }
    for (int p = 0; p < 8; p++) /* all sixteen rows: bytes 2p, 2p + 1 */
        out[2 * p] = _mm_unpacklo_epi64(b[p], b[8 + p]), out[2 * p + 1] = _mm_unpackhi_epi64(b[p], b[8 + p]);
}
#endif

#endif
