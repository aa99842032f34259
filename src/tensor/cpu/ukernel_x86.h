/* ukernel_x86.h: what the x86-64 kernel families share: whether the CPU and
   the OS run them (isa.c asks cpuid and xgetbv; built without AVX flags, so
   that asking never executes an instruction the CPU lacks). */
#ifndef MPS_CPU_UKERNEL_X86_H
#define MPS_CPU_UKERNEL_X86_H

#include <stdbool.h>

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

#endif
