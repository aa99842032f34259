/* ukernel_qtile.h: the VNNI int8 tile, written once over a family's vector
   layer and instantiated by ukernel_avx512_q.c (AVX-512 VNNI, 8 x 32) and
   ukernel_avxvnni_q.c (AVX-VNNI, 4 x 16), as ukernel_tile.h is for the
   float tiles. vpdpbusd multiplies a row's four unsigned bytes, broadcast,
   by four signed bytes of each column and adds the four products to the
   column's int32 lane, exactly; a row holds two vectors.

   The family defines before including it:
     MPS_QV            its vector type
     MPS_QV_ZERO()     a vector of zeros
     MPS_QV_LOAD(p)    a vector from p (unaligned)
     MPS_QV_SET1(i)    the int32 i in every lane
     MPS_QV_STORE(p, v)
     MPS_QV_DPBUSD(acc, u, s)  acc + the four-byte dot products of unsigned u
                       and signed s (in asm: with the intrinsic GCC copied every
                       accumulator out and back around each instruction)
     MPS_QV_LANES      int32 lanes a vector
     MPS_QV_MR, MPS_QV_NR  the tile (MPS_QV_NR = 2 MPS_QV_LANES)
     MPS_QV_FN(x)      the family's name of function x (mps_avx512_##x)
   and gets MPS_QV_FN(qgemm) and MPS_QV_FN(qgemm_w), mps_uqgemm's fn and
   by_weights. A family that also defines
     MPS_QV_REQ(acc, rs, n, r, out)  the store of lanes [0, n) of sums acc
                       (n may be 0 or less: nothing), requantized by r
   gets MPS_QV_FN(qgemm_ws), mps_uqgemm's by_weights_store. */

/* Row r's four bytes of group g at a + r rs + g gs; signed_a: a's bytes are
   the signed operand (by_weights), else b's. Called with rows MPS_QV_MR (a
   constant: the row loop unrolled without tests) or fewer. */
/* The tile's stores: its rows' sums into c, MPS_QV_NR apart, or (o not NULL) requantized. */
struct MPS_QV_FN(qout) {
    const struct mps_qreq *rq;
    const int32_t *rs;
    int rows, cols;
    void *y;
    int64_t ldy;
};

static inline __attribute__((always_inline)) void MPS_QV_FN(qtile)(int64_t k4, const void *a, int64_t rs, int64_t gs,
                                                                   const void *b, int32_t *c, int rows, bool signed_a,
                                                                   const struct MPS_QV_FN(qout) * o)
{
    const unsigned char *pa = a, *pb = b;
    MPS_QV acc[MPS_QV_MR][2];
    for (int r = 0; r < MPS_QV_MR; r++)
        acc[r][0] = acc[r][1] = MPS_QV_ZERO();
    for (int64_t g = 0; g < k4; g++, pb += 4 * MPS_QV_NR) {
        MPS_QV b0 = MPS_QV_LOAD(pb), b1 = MPS_QV_LOAD(pb + 4 * MPS_QV_LANES);
        for (int r = 0; r < MPS_QV_MR; r++) {
            if (r >= rows)
                break;
            int32_t four;
            __builtin_memcpy(&four, pa + r * rs + g * gs, 4);
            MPS_QV x = MPS_QV_SET1(four);
            if (signed_a) { /* the first multiplicand is the unsigned one */
                acc[r][0] = MPS_QV_DPBUSD(acc[r][0], b0, x);
                acc[r][1] = MPS_QV_DPBUSD(acc[r][1], b1, x);
            } else {
                acc[r][0] = MPS_QV_DPBUSD(acc[r][0], x, b0);
                acc[r][1] = MPS_QV_DPBUSD(acc[r][1], x, b1);
            }
        }
    }
#if defined(MPS_QV_REQ)
    if (o) {
        size_t el = o->rq->quant ? 1 : 4;
        for (int r = 0; r < MPS_QV_MR && r < o->rows; r++) {
            unsigned char *y = (unsigned char *)o->y + (size_t)(r * o->ldy) * el;
            MPS_QV_REQ(acc[r][0], o->rs, o->cols, &o->rq[r], y);
            MPS_QV_REQ(acc[r][1], o->rs ? o->rs + MPS_QV_LANES : NULL, o->cols - MPS_QV_LANES, &o->rq[r],
                       y + MPS_QV_LANES * el);
        }
        return;
    }
#else
    (void)o;
#endif
    for (int r = 0; r < rows; r++) {
        MPS_QV_STORE(c + r * MPS_QV_NR, acc[r][0]);
        MPS_QV_STORE(c + r * MPS_QV_NR + MPS_QV_LANES, acc[r][1]);
    }
}

static void MPS_QV_FN(qgemm)(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    if (rows == MPS_QV_MR)
        MPS_QV_FN(qtile)(k4, a, lda, 4, b, c, MPS_QV_MR, false, NULL);
    else
        MPS_QV_FN(qtile)(k4, a, lda, 4, b, c, rows, false, NULL);
}

static void MPS_QV_FN(qgemm_w)(int64_t k4, const void *a, const uint8_t *b, int32_t *c)
{
    MPS_QV_FN(qtile)(k4, a, 4, 4 * MPS_QV_MR, b, c, MPS_QV_MR, true, NULL);
}

#if defined(MPS_QV_REQ)
static void MPS_QV_FN(qgemm_ws)(int64_t k4, const void *a, const uint8_t *b, const struct mps_qreq *rq, int rows,
                                const int32_t *rs, int cols, void *y, int64_t ldy)
{
    const struct MPS_QV_FN(qout) o = {rq, rs, rows, cols, y, ldy};
    MPS_QV_FN(qtile)(k4, a, 4, 4 * MPS_QV_MR, b, NULL, MPS_QV_MR, true, &o);
}
#endif
