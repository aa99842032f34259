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
#include <string.h>

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

/* ukernels.h's mps_uqdw3_fn at 256 bits: ukernel_avx512_q.c's plane kernel
   without byte masks, so the plane is first copied a row at a time into a
   buffer on the stack with zx around it (one pass over its bytes); eight
   outputs a step, each 128-bit half's four lanes gathering their taps of a
   tap row by vpshufb from sixteen bytes of the padded row, one vpdpbusd a
   tap row, two output rows a step at stride 1; the avx2 row store. */
enum { MPS_VQDW3_BUF = 32 << 10 }; /* the padded plane's bytes at most (112x112 takes 18 KB) */

struct mps_vqdw3 {
    const struct mps_dwk_geom *g;
    const uint8_t *rows[3]; /* the padded copy's first row, its row of zx, and one past its last */
    int64_t wp;             /* its row length */
    __m256i w[3], corr, flip, idx;
};

/* Input row i's bytes for the eight outputs from padded column c, as the products take them. */
static inline __attribute__((always_inline)) __m256i mps_vqdw3_row(const struct mps_vqdw3 *d, int64_t i, int64_t c,
                                                                   bool flip)
{
    const uint8_t *p = (i < 0 || i >= d->g->h ? d->rows[1] : d->rows[0] + i * d->wp) + c;
    __m256i v = _mm256_loadu2_m128i((const __m128i *)(p + 4 * d->g->sw), (const __m128i *)p);
    return _mm256_shuffle_epi8(flip ? _mm256_xor_si256(v, d->flip) : v, d->idx);
}

static inline __attribute__((always_inline)) void mps_vqdw3_rows(const struct mps_vqdw3 *d, int64_t oh, bool two,
                                                                 bool flip, const struct mps_qreq *rq, void *y)
{
    const struct mps_dwk_geom *g = d->g;
    size_t el = rq->quant ? 1 : 4;
    int64_t i0 = oh * g->sh - g->pt;
    for (int64_t o0 = 0; o0 < g->out_w; o0 += 8) {
        int64_t c = o0 * g->sw;
        __m256i r0 = mps_vqdw3_row(d, i0, c, flip), r1 = mps_vqdw3_row(d, i0 + 1, c, flip),
                r2 = mps_vqdw3_row(d, i0 + 2, c, flip);
        __m256i a =
            mps_avxvnni_dpbusd(mps_avxvnni_dpbusd(mps_avxvnni_dpbusd(d->corr, r0, d->w[0]), r1, d->w[1]), r2, d->w[2]);
        int n = g->out_w - o0 < 8 ? (int)(g->out_w - o0) : 8;
        mps_avx2_qreq(a, NULL, n, rq, (unsigned char *)y + (size_t)(oh * g->out_w + o0) * el);
        if (two) {
            __m256i r3 = mps_vqdw3_row(d, i0 + 3, c, flip);
            a = mps_avxvnni_dpbusd(mps_avxvnni_dpbusd(mps_avxvnni_dpbusd(d->corr, r1, d->w[0]), r2, d->w[1]), r3,
                                   d->w[2]);
            mps_avx2_qreq(a, NULL, n, rq, (unsigned char *)y + (size_t)((oh + 1) * g->out_w + o0) * el);
        }
    }
}

/* The padded copy's row length for g: the pads and the row, and room for the last step's second half's
   sixteen bytes. */
static int64_t mps_vqdw3_wp(const struct mps_dwk_geom *g)
{
    int64_t last = (g->out_w - 1) / 8 * 8, need = (last + 4) * g->sw + 16, row = g->pl + g->w;
    return (need > row ? need : row) + 1;
}

static bool mps_avxvnni_qdw3(const struct mps_dwk_geom *g, const uint8_t *x, const int8_t *t, const struct mps_dwb_q *q,
                             void *y)
{
    if (g->kh != 3 || g->kw != 3 || g->dh != 1 || g->dw != 1 || (g->sw != 1 && g->sw != 2) ||
        (g->h + 1) * mps_vqdw3_wp(g) > MPS_VQDW3_BUF)
        return false;
    if (!x)
        return true;
    _Alignas(32) uint8_t buf[MPS_VQDW3_BUF];
    struct mps_vqdw3 d = {.g = g, .wp = mps_vqdw3_wp(g)};
    uint8_t pad = (uint8_t)((uint8_t)q->zx ^ q->flip); /* zx as x's byte */
    memset(buf, pad, (size_t)((g->h + 1) * d.wp));
    for (int64_t i = 0; i < g->h; i++)
        memcpy(buf + i * d.wp + g->pl, x + i * g->w, (size_t)g->w);
    d.rows[0] = buf, d.rows[1] = buf + g->h * d.wp;
    int32_t tw[4];
    struct mps_qreq rq;
    mps_uqdw3_taps(t, q->req, tw, &rq);
    for (int r = 0; r < 3; r++)
        d.w[r] = _mm256_set1_epi32(tw[r]);
    d.corr = _mm256_set1_epi32(tw[3]), d.flip = _mm256_set1_epi8((char)q->flip);
    /* lane j's bytes in its half: taps sw j + 0, 1, 2, and one its fourth weight (0) takes */
    d.idx = g->sw == 1 ? _mm256_setr_epi8(0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, 0, 1, 2, 3, 1, 2, 3, 4, 2, 3,
                                          4, 5, 3, 4, 5, 6)
                       : _mm256_setr_epi8(0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5,
                                          6, 7, 6, 7, 8, 9);
#define MPS_VQDW3_ROWS(oh, two, flip) mps_vqdw3_rows(&d, oh, two, flip, &rq, y)
    MPS_UQDW3_STEPS(g, q->flip != 0, MPS_VQDW3_ROWS)
#undef MPS_VQDW3_ROWS
    return true;
}

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
                                              mps_avxvnni_qdw3,
                                              mps_avxvnni_qmul,
                                              mps_avxvnni_qsum};
