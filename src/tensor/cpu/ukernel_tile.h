/* ukernel_tile.h: the GEMM and direct-convolution tile, written once over a
   family's vector layer and instantiated in each x86 family's file with that
   family's flags (ukernel_avx512.c, ukernel_avx2.c), as the depthwise and
   Winograd code is (ukernel_dw.h, ukernel_wino.h).

   A tile of R rows of C, two vectors a row (MPS_V_COLS columns), held in
   named registers over k (named variables, not an array: an array the
   compiler may keep in memory, storing every accumulator a k step). Each k
   step loads row kk of the B panel (ROW(kk): packed, or at an offset of the
   direct convolution's input) and does one broadcast of A and two fused
   multiply-adds a row. Heights below the family's MPS_V_ROWS take other
   forms, so that the fused multiply-adds never wait on each other: two or
   three rows (a Linear layer's last rows of a batch) keep two k steps in
   flight, one row (a Linear layer at batch 1) four. STORE names how the
   rows are stored (STORE, STORE##_PREP, STORE##_BOTH): MPS_TILE_STORE (a
   GEMM row with its epilogue) and MPS_TILE_KEEP (the direct convolution's
   kept columns) below, over the family's row functions, or one of the
   family's own (avx512's pooled rows).

   The family defines before including it:
     MPS_V            its vector type
     MPS_V_ZERO()     a vector of zeros
     MPS_V_LOAD(p)    a vector from p (unaligned)
     MPS_V_BCAST(p)   the float at p in every lane
     MPS_V_FMA(a, b, c), MPS_V_ADD(a, b)
     MPS_V_COLS       the tile's columns, two vectors' lanes (a literal: it names the functions)
     MPS_V_ROWS       the tallest tile, 6 or 8
     MPS_V_STOREV, MPS_V_STOREV_OF(cols, flags, e), MPS_V_STORE_ROW(c, lo, hi, &sv, r, full)
                      what a GEMM tile's row stores share (worked out once a
                      tile) and a row's store (full: all columns, no mask)
     MPS_V_KEEPV, MPS_V_KEEPV_OF(cols, e), MPS_V_KEEP_ROW(c, lo, hi, &kv, r)
                      the same for the direct convolution's kept columns
   and instantiates MPS_TILES(NAME, ROW, STORE, COLS, LDA, KS, NEXT): the
   functions NAME_<R>x<columns> for each height R (mps_avx512_gemm_packed_8x32),
   called by height through MPS_TILE_BY_ROWS(NAME). LDA and KS say how A is
   read (packed: 1 and MR; its rows in place: lda and 1), NEXT where the
   second vector of a B row starts (a vector's lanes, or the pooled tile's
   pitch). */
#ifndef MPS_CPU_UKERNEL_TILE_H
#define MPS_CPU_UKERNEL_TILE_H

#define MPS_TILE_CAT(a, b) a##b
#define MPS_TILE_XCAT(a, b) MPS_TILE_CAT(a, b)
/* NAME_<R>x<MPS_V_COLS> */
#define MPS_TILE_FN(NAME, R) MPS_TILE_XCAT(NAME, MPS_TILE_XCAT(_, MPS_TILE_XCAT(R, MPS_TILE_XCAT(x, MPS_V_COLS))))

/* Row r of A at k step kk + j, a pointing at step kk: a + r LDA + j KS. */
#define MPS_TILE_A(r, j) (a + (r)*a_lda + (j)*a_ks)

#define MPS_TILE_DECL(r) MPS_V lo##r = MPS_V_ZERO(), hi##r = lo##r;
#define MPS_TILE_FMA(R, r)                                                                                             \
    if (R > r) {                                                                                                       \
        MPS_V av = MPS_V_BCAST(MPS_TILE_A(r, 0));                                                                      \
        lo##r = MPS_V_FMA(av, b0, lo##r);                                                                              \
        hi##r = MPS_V_FMA(av, b1, hi##r);                                                                              \
    }
#define MPS_TILE_PARAMS(COLS)                                                                                          \
    (int64_t k, const float *a, int64_t lda, const float *b, const int32_t *off, float *c, int64_t ldc, COLS cols,     \
     int flags, const struct mps_tile_epi *e)

/* The GEMM row store: a tile's rows (ROWS) written twice, for all its
   columns, whose stores test no mask, and for fewer (with one branch, GCC
   kept each row's tests of the masks on the stack: avx512's 64 x 64 x 1 ran
   its sixteen tiles in 0.47 us, OpenBLAS's in 0.23). */
#define MPS_TILE_STORE(R, r)                                                                                           \
    if (R > r)                                                                                                         \
        MPS_V_STORE_ROW(c + r * ldc, lo##r, hi##r, &sv, r, full_);
#define MPS_TILE_STORE_PREP const MPS_V_STOREV sv = MPS_V_STOREV_OF(cols, flags, e);
#define MPS_TILE_STORE_BOTH(ROWS)                                                                                      \
    if (cols == MPS_V_COLS) {                                                                                          \
        const bool full_ = true;                                                                                       \
        ROWS                                                                                                           \
    } else {                                                                                                           \
        const bool full_ = false;                                                                                      \
        ROWS                                                                                                           \
    }
/* The direct convolution's store of the kept columns. */
#define MPS_TILE_KEEP(R, r)                                                                                            \
    if (R > r)                                                                                                         \
        MPS_V_KEEP_ROW(c + r * ldc, lo##r, hi##r, &kv, r);
#define MPS_TILE_KEEP_PREP const MPS_V_KEEPV kv = MPS_V_KEEPV_OF(cols, e);
#define MPS_TILE_KEEP_BOTH(ROWS) ROWS

/* R rows (4 up to MPS_V_ROWS): one k step at a time. */
#define MPS_TILE(NAME, ROW, STORE, COLS, LDA, KS, NEXT, R)                                                             \
    static void MPS_TILE_FN(NAME, R) MPS_TILE_PARAMS(COLS)                                                             \
    {                                                                                                                  \
        (void)off, (void)flags, (void)lda;                                                                             \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_TILE_DECL(0)                                                                                               \
        MPS_TILE_DECL(1)                                                                                               \
        MPS_TILE_DECL(2)                                                                                               \
        MPS_TILE_DECL(3) MPS_TILE_DECL(4) MPS_TILE_DECL(5) MPS_TILE_DECL(6)                                            \
            MPS_TILE_DECL(7) for (int64_t kk = 0; kk < k; kk++, a += a_ks)                                             \
        {                                                                                                              \
            const float *bk = ROW(kk);                                                                                 \
            MPS_V b0 = MPS_V_LOAD(bk), b1 = MPS_V_LOAD(bk + (NEXT));                                                   \
            MPS_TILE_FMA(R, 0)                                                                                         \
            MPS_TILE_FMA(R, 1)                                                                                         \
            MPS_TILE_FMA(R, 2)                                                                                         \
            MPS_TILE_FMA(R, 3) MPS_TILE_FMA(R, 4) MPS_TILE_FMA(R, 5) MPS_TILE_FMA(R, 6) MPS_TILE_FMA(R, 7)             \
        }                                                                                                              \
        STORE##_PREP STORE##_BOTH(STORE(R, 0) STORE(R, 1) STORE(R, 2) STORE(R, 3) STORE(R, 4) STORE(R, 5) STORE(R, 6)  \
                                      STORE(R, 7))                                                                     \
    }

/* Two or three rows: two k steps in flight, so that eight or twelve
   accumulators hide the fused multiply-add's latency as a full tile does. */
#define MPS_TILE_DECL2(r) MPS_V lo##r = MPS_V_ZERO(), hi##r = lo##r, lx##r = lo##r, hx##r = lo##r;
#define MPS_TILE_FMA2(R, r)                                                                                            \
    if (R > r) {                                                                                                       \
        MPS_V av = MPS_V_BCAST(MPS_TILE_A(r, 0)), ax = MPS_V_BCAST(MPS_TILE_A(r, 1));                                  \
        lo##r = MPS_V_FMA(av, b0, lo##r);                                                                              \
        hi##r = MPS_V_FMA(av, b1, hi##r);                                                                              \
        lx##r = MPS_V_FMA(ax, b2, lx##r);                                                                              \
        hx##r = MPS_V_FMA(ax, b3, hx##r);                                                                              \
    }
#define MPS_TILE_FOLD2(R, r)                                                                                           \
    if (R > r) {                                                                                                       \
        lo##r = MPS_V_ADD(lo##r, lx##r);                                                                               \
        hi##r = MPS_V_ADD(hi##r, hx##r);                                                                               \
    }
#define MPS_TILE_FEW(NAME, ROW, STORE, COLS, LDA, KS, NEXT, R)                                                         \
    static void MPS_TILE_FN(NAME, R) MPS_TILE_PARAMS(COLS)                                                             \
    {                                                                                                                  \
        (void)off, (void)flags, (void)lda;                                                                             \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_TILE_DECL2(0) MPS_TILE_DECL2(1) MPS_TILE_DECL2(2) int64_t kk = 0;                                          \
        for (; kk + 2 <= k; kk += 2, a += 2 * a_ks) {                                                                  \
            const float *bk = ROW(kk), *bx = ROW(kk + 1);                                                              \
            MPS_V b0 = MPS_V_LOAD(bk), b1 = MPS_V_LOAD(bk + (NEXT)), b2 = MPS_V_LOAD(bx),                              \
                  b3 = MPS_V_LOAD(bx + (NEXT));                                                                        \
            MPS_TILE_FMA2(R, 0) MPS_TILE_FMA2(R, 1) MPS_TILE_FMA2(R, 2)                                                \
        }                                                                                                              \
        MPS_TILE_FOLD2(R, 0) MPS_TILE_FOLD2(R, 1) MPS_TILE_FOLD2(R, 2) for (; kk < k; kk++, a += a_ks)                 \
        {                                                                                                              \
            const float *bk = ROW(kk);                                                                                 \
            MPS_V b0 = MPS_V_LOAD(bk), b1 = MPS_V_LOAD(bk + (NEXT));                                                   \
            MPS_TILE_FMA(R, 0) MPS_TILE_FMA(R, 1) MPS_TILE_FMA(R, 2)                                                   \
        }                                                                                                              \
        STORE##_PREP STORE##_BOTH(STORE(R, 0) STORE(R, 1) STORE(R, 2))                                                 \
    }

/* One row: four k steps in flight, eight accumulators. */
#define MPS_TILE_ONE(NAME, ROW, STORE, COLS, LDA, KS, NEXT)                                                            \
    static void MPS_TILE_FN(NAME, 1) MPS_TILE_PARAMS(COLS)                                                             \
    {                                                                                                                  \
        (void)off, (void)ldc, (void)flags, (void)lda;                                                                  \
        const int64_t a_lda = LDA, a_ks = KS;                                                                          \
        MPS_V l0 = MPS_V_ZERO(), l1 = l0, l2 = l0, l3 = l0, h0 = l0, h1 = l0, h2 = l0, h3 = l0;                        \
        int64_t kk = 0;                                                                                                \
        for (; kk + 4 <= k; kk += 4, a += 4 * a_ks) {                                                                  \
            const float *r0 = ROW(kk), *r1 = ROW(kk + 1), *r2 = ROW(kk + 2), *r3 = ROW(kk + 3);                        \
            MPS_V a0 = MPS_V_BCAST(MPS_TILE_A(0, 0)), a1 = MPS_V_BCAST(MPS_TILE_A(0, 1)),                              \
                  a2 = MPS_V_BCAST(MPS_TILE_A(0, 2)), a3 = MPS_V_BCAST(MPS_TILE_A(0, 3));                              \
            l0 = MPS_V_FMA(a0, MPS_V_LOAD(r0), l0);                                                                    \
            h0 = MPS_V_FMA(a0, MPS_V_LOAD(r0 + (NEXT)), h0);                                                           \
            l1 = MPS_V_FMA(a1, MPS_V_LOAD(r1), l1);                                                                    \
            h1 = MPS_V_FMA(a1, MPS_V_LOAD(r1 + (NEXT)), h1);                                                           \
            l2 = MPS_V_FMA(a2, MPS_V_LOAD(r2), l2);                                                                    \
            h2 = MPS_V_FMA(a2, MPS_V_LOAD(r2 + (NEXT)), h2);                                                           \
            l3 = MPS_V_FMA(a3, MPS_V_LOAD(r3), l3);                                                                    \
            h3 = MPS_V_FMA(a3, MPS_V_LOAD(r3 + (NEXT)), h3);                                                           \
        }                                                                                                              \
        for (; kk < k; kk++, a += a_ks) {                                                                              \
            const float *r0 = ROW(kk);                                                                                 \
            MPS_V av = MPS_V_BCAST(MPS_TILE_A(0, 0));                                                                  \
            l0 = MPS_V_FMA(av, MPS_V_LOAD(r0), l0);                                                                    \
            h0 = MPS_V_FMA(av, MPS_V_LOAD(r0 + (NEXT)), h0);                                                           \
        }                                                                                                              \
        MPS_V lo0 = MPS_V_ADD(MPS_V_ADD(l0, l1), MPS_V_ADD(l2, l3));                                                   \
        MPS_V hi0 = MPS_V_ADD(MPS_V_ADD(h0, h1), MPS_V_ADD(h2, h3));                                                   \
        STORE##_PREP STORE##_BOTH(STORE(1, 0))                                                                         \
    }

/* Every tile height for one way of reading B (MPS_V_ROWS 6 or 8), and the call by height. */
#if MPS_V_ROWS == 8
#define MPS_TILE_TALL(NAME, ROW, STORE, COLS, LDA, KS, NEXT)                                                           \
    MPS_TILE(NAME, ROW, STORE, COLS, LDA, KS, NEXT, 7) MPS_TILE(NAME, ROW, STORE, COLS, LDA, KS, NEXT, 8)
#define MPS_TILE_TALL_CALLS(NAME)                                                                                      \
    case 6: MPS_TILE_FN(NAME, 6)(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                    \
    case 7: MPS_TILE_FN(NAME, 7)(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                    \
    default:                                                                                                           \
        MPS_TILE_FN(NAME, 8)(k, a, lda, b, off, c, ldc, cols, flags, e);                                               \
        break;
#elif MPS_V_ROWS == 6
#define MPS_TILE_TALL(NAME, ROW, STORE, COLS, LDA, KS, NEXT)
#define MPS_TILE_TALL_CALLS(NAME)                                                                                      \
    default:                                                                                                           \
        MPS_TILE_FN(NAME, 6)(k, a, lda, b, off, c, ldc, cols, flags, e);                                               \
        break;
#else
#error "MPS_V_ROWS: 6 or 8"
#endif
#define MPS_TILES(NAME, ROW, STORE, COLS, LDA, KS, NEXT)                                                               \
    MPS_TILE_ONE(NAME, ROW, STORE, COLS, LDA, KS, NEXT)                                                                \
    MPS_TILE_FEW(NAME, ROW, STORE, COLS, LDA, KS, NEXT, 2)                                                             \
    MPS_TILE_FEW(NAME, ROW, STORE, COLS, LDA, KS, NEXT, 3)                                                             \
    MPS_TILE(NAME, ROW, STORE, COLS, LDA, KS, NEXT, 4)                                                                 \
    MPS_TILE(NAME, ROW, STORE, COLS, LDA, KS, NEXT, 5)                                                                 \
    MPS_TILE(NAME, ROW, STORE, COLS, LDA, KS, NEXT, 6) MPS_TILE_TALL(NAME, ROW, STORE, COLS, LDA, KS, NEXT)
#define MPS_TILE_BY_ROWS(NAME)                                                                                         \
    switch (rows) {                                                                                                    \
    case 1: MPS_TILE_FN(NAME, 1)(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                    \
    case 2: MPS_TILE_FN(NAME, 2)(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                    \
    case 3: MPS_TILE_FN(NAME, 3)(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                    \
    case 4: MPS_TILE_FN(NAME, 4)(k, a, lda, b, off, c, ldc, cols, flags, e); break;                                    \
    case 5:                                                                                                            \
        MPS_TILE_FN(NAME, 5)(k, a, lda, b, off, c, ldc, cols, flags, e);                                               \
        break;                                                                                                         \
        MPS_TILE_TALL_CALLS(NAME)                                                                                      \
    }

#endif
