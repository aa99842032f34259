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
     MPS_QV_ROWS(X)    X(r) for each row r < MPS_QV_MR, written out
   and gets MPS_QV_FN(qgemm) and MPS_QV_FN(qgemm_w), mps_uqgemm's fn and
   by_weights. A family that also defines
     MPS_QV_REQ(acc, rs, n, r, out)  the store of lanes [0, n) of sums acc
                       (n may be 0 or less: nothing), requantized by r
   gets MPS_QV_FN(qgemm_ws), mps_uqgemm's by_weights_store. */

/* QLinearMatMul's tile: row r's four unsigned bytes of group g at a + r rs
   + g gs, b's signed; the sums into c, MPS_QV_NR apart. Called with rows
   MPS_QV_MR (a constant: the row loop unrolled without tests) or fewer. */
static inline __attribute__((always_inline)) void MPS_QV_FN(qtile)(int64_t k4, const void *a, int64_t rs, int64_t gs,
                                                                   const void *b, int32_t *c, int rows)
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
            acc[r][0] = MPS_QV_DPBUSD(acc[r][0], x, b0);
            acc[r][1] = MPS_QV_DPBUSD(acc[r][1], x, b1);
        }
    }
    for (int r = 0; r < rows; r++) {
        MPS_QV_STORE(c + r * MPS_QV_NR, acc[r][0]);
        MPS_QV_STORE(c + r * MPS_QV_NR + MPS_QV_LANES, acc[r][1]);
    }
}

static void MPS_QV_FN(qgemm)(int64_t k4, const uint8_t *a, int64_t lda, const int8_t *b, int32_t *c, int rows)
{
    if (rows == MPS_QV_MR)
        MPS_QV_FN(qtile)(k4, a, lda, 4, b, c, MPS_QV_MR);
    else
        MPS_QV_FN(qtile)(k4, a, lda, 4, b, c, rows);
}

/* The conv tile (by_weights, a's bytes the weights, signed): each row's two
   sums a variable of its own (row r: s<r>0, s<r>1), so that none goes
   through the stack (in qtile's array GCC zeroed them on the stack, kept
   them in registers over k and stored them back for the store to read: 48
   memory moves a tile, a third of a 1x1 layer's tile of k 16); into c, or
   (c NULL) requantized by rq into y, rows ldy elements apart. */
static inline __attribute__((always_inline)) void MPS_QV_FN(qconv)(int64_t k4, const void *a, const uint8_t *b,
                                                                   int32_t *c, const struct mps_qreq *rq, int rows,
                                                                   const int32_t *rs, int cols, void *y, int64_t ldy)
{
    const unsigned char *pa = a, *pb = b;
#define MPS_QV_DECL(r) MPS_QV s##r##0 = MPS_QV_ZERO(), s##r##1 = MPS_QV_ZERO();
    MPS_QV_ROWS(MPS_QV_DECL)
#undef MPS_QV_DECL
    for (int64_t g = 0; g < k4; g++, pb += 4 * MPS_QV_NR, pa += 4 * MPS_QV_MR) {
        MPS_QV b0 = MPS_QV_LOAD(pb), b1 = MPS_QV_LOAD(pb + 4 * MPS_QV_LANES);
#define MPS_QV_STEP(r)                                                                                                 \
    {                                                                                                                  \
        int32_t four;                                                                                                  \
        __builtin_memcpy(&four, pa + 4 * (r), 4);                                                                      \
        MPS_QV x = MPS_QV_SET1(four);                                                                                  \
        s##r##0 = MPS_QV_DPBUSD(s##r##0, b0, x);                                                                       \
        s##r##1 = MPS_QV_DPBUSD(s##r##1, b1, x);                                                                       \
    }
        MPS_QV_ROWS(MPS_QV_STEP)
#undef MPS_QV_STEP
    }
    if (c) {
#define MPS_QV_PUT(r)                                                                                                  \
    MPS_QV_STORE(c + MPS_QV_NR * (r), s##r##0);                                                                        \
    MPS_QV_STORE(c + MPS_QV_NR * (r) + MPS_QV_LANES, s##r##1);
        MPS_QV_ROWS(MPS_QV_PUT)
#undef MPS_QV_PUT
        return;
    }
#if defined(MPS_QV_REQ)
    size_t el = rq->quant ? 1 : 4;
#define MPS_QV_OUT(r)                                                                                                  \
    if ((r) < rows) {                                                                                                  \
        unsigned char *yr = (unsigned char *)y + (size_t)(ldy * (r)) * el;                                             \
        MPS_QV_REQ(s##r##0, rs, cols, &rq[r], yr);                                                                     \
        MPS_QV_REQ(s##r##1, rs ? rs + MPS_QV_LANES : NULL, cols - MPS_QV_LANES, &rq[r], yr + MPS_QV_LANES * el);       \
    }
    MPS_QV_ROWS(MPS_QV_OUT)
#undef MPS_QV_OUT
#else
    (void)rq, (void)rows, (void)rs, (void)cols, (void)y, (void)ldy;
#endif
}

static void MPS_QV_FN(qgemm_w)(int64_t k4, const void *a, const uint8_t *b, int32_t *c)
{
    MPS_QV_FN(qconv)(k4, a, b, c, NULL, MPS_QV_MR, NULL, 0, NULL, 0);
}

#if defined(MPS_QV_REQ)
static void MPS_QV_FN(qgemm_ws)(int64_t k4, const void *a, const uint8_t *b, const struct mps_qreq *rq, int rows,
                                const int32_t *rs, int cols, void *y, int64_t ldy)
{
    MPS_QV_FN(qconv)(k4, a, b, NULL, rq, rows, rs, cols, y, ldy);
}
#endif
