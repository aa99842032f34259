/* ukernel_neon_q.c: the neon family's int8 tile (ukernels.h), 4 x 16, where
   the CPU has the dot product instructions (Armv8.2's dotprod: Apple M1 on,
   Cortex-A76 on, Neoverse; isa.c's mps_neon_has_dotprod asks the OS).
   sdot multiplies four signed bytes of a row, broadcast by lane, by four
   signed bytes of each of four columns and adds them to an int32 lane:
   sixteen accumulators, four columns each. The unsigned operand is made
   signed by taking 128 away (a flip of its top bit), and 128 times the sum
   of the other operand over k added back at the end (those sums by sdot
   with ones as they go), so the tile is exact as ukernels.h says. The
   store is ukernel_q.h's. Built with -march=armv8.2-a+dotprod and without
   contraction; called only where the CPU has the instructions. */
#include <arm_neon.h>

#include "ukernel_q.h"

enum { MPS_NEON_QMR = 4, MPS_NEON_QNR = 16 };

/* Row r's four bytes of group g at a + r rs + g gs (the four rows' words
   as one vector); signed_a: a's bytes signed and b's unsigned (by_weights),
   else the other way. */
static inline __attribute__((always_inline)) void mps_neon_qtile(int64_t k4, const void *a, int64_t rs, int64_t gs,
                                                                 const void *b, int32_t *c, int rows, bool signed_a)
{
    const uint8_t *pa = a, *pb = b;
    const int8x16_t ones = vdupq_n_s8(1);
    const uint8x16_t top = vdupq_n_u8(0x80);
    int32x4_t acc[MPS_NEON_QMR][4], sum_b[4], sum_a = vdupq_n_s32(0);
    for (int r = 0; r < MPS_NEON_QMR; r++)
        for (int v = 0; v < 4; v++)
            acc[r][v] = vdupq_n_s32(0);
    for (int v = 0; v < 4; v++)
        sum_b[v] = vdupq_n_s32(0);
    for (int64_t g = 0; g < k4; g++, pb += 4 * MPS_NEON_QNR) {
        uint32_t w[MPS_NEON_QMR] = {0};
        for (int r = 0; r < rows; r++)
            __builtin_memcpy(&w[r], pa + r * rs + g * gs, 4);
        uint8x16_t ua = vreinterpretq_u8_u32(vld1q_u32(w));
        int8x16_t va = vreinterpretq_s8_u8(signed_a ? ua : veorq_u8(ua, top)), vb[4];
        for (int v = 0; v < 4; v++) {
            uint8x16_t ub = vld1q_u8(pb + 16 * v);
            vb[v] = vreinterpretq_s8_u8(signed_a ? veorq_u8(ub, top) : ub);
            if (!signed_a) /* b's sums over k, per column */
                sum_b[v] = vdotq_s32(sum_b[v], vb[v], ones);
        }
        if (signed_a) /* a's sums over k, per row (lane r) */
            sum_a = vdotq_s32(sum_a, va, ones);
        for (int v = 0; v < 4; v++) {
            acc[0][v] = vdotq_laneq_s32(acc[0][v], vb[v], va, 0);
            acc[1][v] = vdotq_laneq_s32(acc[1][v], vb[v], va, 1);
            acc[2][v] = vdotq_laneq_s32(acc[2][v], vb[v], va, 2);
            acc[3][v] = vdotq_laneq_s32(acc[3][v], vb[v], va, 3);
        }
    }
    int32_t ra[4];
    vst1q_s32(ra, vshlq_n_s32(sum_a, 7));
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < 4; v++) { /* the 128 taken from the unsigned operand, times the other's sum */
            int32x4_t fix = signed_a ? vdupq_n_s32(ra[r]) : vshlq_n_s32(sum_b[v], 7);
            vst1q_s32(c + r * MPS_NEON_QNR + 4 * v,
                      vreinterpretq_s32_u32(vaddq_u32(vreinterpretq_u32_s32(acc[r][v]), vreinterpretq_u32_s32(fix))));
        }
}

static void mps_neon_qgemm(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    mps_neon_qtile(k4, a, lda, 4, b, c, rows, false);
}

static void mps_neon_qgemm_w(int64_t k4, const void *a, const uint8_t *b, int32_t *c)
{
    mps_neon_qtile(k4, a, 4, 4 * MPS_NEON_QMR, b, c, MPS_NEON_QMR, true);
}

MPS_UQ_ROWS(mps_neon)

const struct mps_uqgemm mps_uqgemm_neon = {"neon-dotprod",
                                           MPS_NEON_QMR,
                                           MPS_NEON_QNR,
                                           mps_neon_has_dotprod,
                                           mps_neon_qgemm,
                                           mps_neon_qgemm_w,
                                           mps_neon_qstore,
                                           mps_neon_qrequant,
                                           mps_neon_qquantize,
                                           mps_neon_qdequantize,
                                           NULL,
                                           mps_neon_qstore_f,
                                           NULL,
                                           false,
                                           NULL,
                                           mps_neon_qmul,
                                           mps_neon_qsum};
