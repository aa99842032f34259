/* ukernel_avx512_q.c: the avx512 family's int8 tile (ukernels.h), 8 x 32,
   ukernel_qtile.h's at 512 bits: one vpdpbusd makes 64 of the tile's
   products; sixteen accumulators hide its latency; the store of
   ukernel_q.h, in intrinsics. Built
   with -mavx512f -mavx512vnni and without contraction;
   called only where cpuid says the CPU has AVX512_VNNI (isa.c). */
#include <immintrin.h>
#include <string.h>

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

/* ukernel_q.h's byte rows in sixteen lanes, step for step (the selects as
   max and min, (t + 1.5 x 2^23) - 1.5 x 2^23 as vrndscaleps to the nearest
   for the |t| < 2^22 the clamp leaves), so that they write the same bytes;
   the last n % 16 by ukernel_q.h's loops. GCC had vectorized those loops at
   256 bits: resnet18 int8's residual QLinearAdds at batch 8 took 2.8 times
   onnxruntime's time. */
struct mps_avx512_qto {
    __m512 s, nz, z, tlo, thi, lo, hi;
};

static inline struct mps_avx512_qto mps_avx512_qto_of(const struct mps_qto *q)
{
    return (struct mps_avx512_qto){_mm512_set1_ps(q->s),   _mm512_set1_ps(-q->z),  _mm512_set1_ps(q->z),
                                   _mm512_set1_ps(q->tlo), _mm512_set1_ps(q->thi), _mm512_set1_ps(q->lo),
                                   _mm512_set1_ps(q->hi)};
}

/* mps_qto_byte of sixteen floats, as int32 */
static inline __m512i mps_avx512_qto_bytes(__m512 x, const struct mps_avx512_qto *q)
{
    __m512 t = _mm512_div_ps(x, q->s);
    t = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(t, t, _CMP_EQ_OQ), q->nz, t); /* NaN: 0 */
    t = _mm512_min_ps(_mm512_max_ps(t, q->tlo), q->thi);
    t = _mm512_add_ps(_mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), q->z);
    return _mm512_cvttps_epi32(_mm512_min_ps(_mm512_max_ps(t, q->lo), q->hi));
}

/* ((x ^ flip) - z) s of sixteen bytes at x */
static inline __m512 mps_avx512_deq16(const uint8_t *x, __m128i flip, __m512 z, __m512 s)
{
    __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)x), flip);
    return _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(b)), z), s);
}

static void mps_avx512_qrequant(const uint8_t *a, const struct mps_qdeq *da, const uint8_t *b,
                                const struct mps_qdeq *db, float lo, float hi, const struct mps_qto *q, int64_t n,
                                uint8_t *y)
{
    const struct mps_avx512_qto v = mps_avx512_qto_of(q);
    const __m128i fa = _mm_set1_epi8((char)da->flip), fb = _mm_set1_epi8(b ? (char)db->flip : 0);
    const __m512 za = _mm512_set1_ps(da->z), sa = _mm512_set1_ps(da->s), zb = _mm512_set1_ps(b ? db->z : 0.0f),
                 sb = _mm512_set1_ps(b ? db->s : 0.0f), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 x = mps_avx512_deq16(a + i, fa, za, sa);
        if (b)
            x = _mm512_add_ps(x, mps_avx512_deq16(b + i, fb, zb, sb));
        x = _mm512_min_ps(_mm512_max_ps(x, vlo), vhi);
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(mps_avx512_qto_bytes(x, &v)));
    }
    mps_uqrequant_row(a + i, da, b ? b + i : NULL, db, lo, hi, q, n - i, y + i);
}

static void mps_avx512_qquantize(const float *x, int64_t n, const struct mps_qto *q, uint8_t *y)
{
    const struct mps_avx512_qto v = mps_avx512_qto_of(q);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm_storeu_si128((__m128i *)(y + i), _mm512_cvtepi32_epi8(mps_avx512_qto_bytes(_mm512_loadu_ps(x + i), &v)));
    mps_uquantize_row(x + i, n - i, q, y + i);
}

static void mps_avx512_qdequantize(const uint8_t *x, int64_t n, const struct mps_qdeq *d, float *y)
{
    const __m128i f = _mm_set1_epi8((char)d->flip);
    const __m512 z = _mm512_set1_ps(d->z), s = _mm512_set1_ps(d->s);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, mps_avx512_deq16(x + i, f, z, s));
    mps_udequantize_row(x + i, n - i, d, y + i);
}

#include "ukernel_qtile.h"

/* ukernel_q.h's mps_uqmul_row in sixteen lanes, the last n % 16 from a
   copy and stored under a mask (each element its own steps: the same
   bytes). */
static void mps_avx512_qmul(const uint8_t *a, const struct mps_qdeq *da, const float *m, int64_t mstep,
                            const struct mps_qto *q, int64_t n, uint8_t *y)
{
    const struct mps_avx512_qto v = mps_avx512_qto_of(q);
    const __m128i fa = _mm_set1_epi8((char)da->flip);
    const __m512 za = _mm512_set1_ps(da->z), sa = _mm512_set1_ps(da->s), m0 = _mm512_set1_ps(m[0]);
    for (int64_t i = 0; i < n; i += 16) {
        __mmask16 k = (__mmask16)(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1);
        uint8_t last[16] = {0};
        if (k != 0xffffu)
            memcpy(last, a + i, (size_t)(n - i));
        __m512 x = mps_avx512_deq16(k == 0xffffu ? a + i : last, fa, za, sa);
        x = _mm512_mul_ps(x, mstep ? _mm512_maskz_loadu_ps(k, m + i) : m0);
        _mm512_mask_cvtepi32_storeu_epi8(y + i, k, mps_avx512_qto_bytes(x, &v));
    }
}

/* ukernel_q.h's mps_uqsum_row: lane j the part j, the last n % 16 into part
   0 one by one, as there. */
static double mps_avx512_qsum(double s, const uint8_t *x, const struct mps_qdeq *d, int64_t n)
{
    const __m128i f = _mm_set1_epi8((char)d->flip);
    const __m512 z = _mm512_set1_ps(d->z), sc = _mm512_set1_ps(d->s);
    __m512 acc = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        acc = _mm512_add_ps(acc, mps_avx512_deq16(x + i, f, z, sc));
    float part[16];
    _mm512_storeu_ps(part, acc);
    for (; i < n; i++)
        part[0] += ((float)(uint8_t)(x[i] ^ d->flip) - d->z) * d->s;
    for (int j = 0; j < 16; j++)
        s += part[j];
    return s;
}

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

/* ukernels.h's mps_uqdw3_fn, where the CPU has AVX512_VBMI: sixteen
   outputs of a row a step, each lane one output's three taps of a tap row
   as four bytes (vpermb from the row's bytes, loaded under a mask with zx
   in the pads), one vpdpbusd a tap row, exact in int32, then the int8
   store; at stride 1 down, two output rows a step from four input rows.
   The float path (dwb: the bytes transposed to sixteen planes, widened,
   nine FMAs, made int32 again) had been 40% of mobilenet_v2 int8. */
struct mps_qdw3 {
    const struct mps_dwk_geom *g;
    const uint8_t *x;
    __m512i w[3], corr, flip, pad, idx; /* the tap rows' weights, -zx sum, x's flip, zx as x's byte, vpermb's */
    int64_t span;                       /* the bytes sixteen outputs read of a row */
};

/* Input row i's bytes from column c0 under mask m, as the products take them. */
__attribute__((target("avx512bw,avx512vbmi"), always_inline)) static inline __m512i
mps_qdw3_row(const struct mps_qdw3 *d, int64_t i, int64_t c0, __mmask64 m, bool flip)
{
    if (i < 0 || i >= d->g->h)
        return _mm512_permutexvar_epi8(d->idx, _mm512_xor_si512(d->pad, d->flip));
    __m512i v = _mm512_mask_loadu_epi8(d->pad, m, d->x + i * d->g->w + c0);
    return _mm512_permutexvar_epi8(d->idx, flip ? _mm512_xor_si512(v, d->flip) : v);
}

/* Output rows oh and, where two, oh + 1 (stride 1 down), flip as q's. */
__attribute__((target("avx512bw,avx512vbmi"), always_inline)) static inline void
mps_qdw3_rows(const struct mps_qdw3 *d, int64_t oh, bool two, bool flip, const struct mps_qreq *rq, void *y)
{
    const struct mps_dwk_geom *g = d->g;
    size_t el = rq->quant ? 1 : 4;
    int64_t i0 = oh * g->sh - g->pt;
    for (int64_t o0 = 0; o0 < g->out_w; o0 += 16) {
        int64_t c0 = o0 * g->sw - g->pl;
        __mmask64 m = ((__mmask64)1 << d->span) - 1;
        if (c0 < 0 || c0 + d->span > g->w) { /* the bytes inside the row */
            int64_t lo = c0 < 0 ? -c0 : 0, hi = g->w - c0 < d->span ? g->w - c0 : d->span;
            m = hi > lo ? (((__mmask64)1 << hi) - 1) & ~(((__mmask64)1 << lo) - 1) : 0;
        }
        __m512i r0 = mps_qdw3_row(d, i0, c0, m, flip), r1 = mps_qdw3_row(d, i0 + 1, c0, m, flip),
                r2 = mps_qdw3_row(d, i0 + 2, c0, m, flip);
        __m512i a =
            mps_avx512_dpbusd(mps_avx512_dpbusd(mps_avx512_dpbusd(d->corr, r0, d->w[0]), r1, d->w[1]), r2, d->w[2]);
        /* a row's last bytes as sixteen, into the next row's first where that row's own store writes them later
           (of the second row of two, or of a row of one step: after the first's): vpmovdb to memory under a mask
           took a fifth of the kernel's time for a quarter of its steps */
        int n = g->out_w - o0 < 16 ? (int)(g->out_w - o0) : 16;
        int n0 = el == 1 && (two ? g->out_w <= 16 : oh + 1 < g->out_h) ? 16 : n;
        mps_avx512_qreq(a, NULL, n0, rq, (unsigned char *)y + (size_t)(oh * g->out_w + o0) * el);
        if (two) {
            __m512i r3 = mps_qdw3_row(d, i0 + 3, c0, m, flip);
            a = mps_avx512_dpbusd(mps_avx512_dpbusd(mps_avx512_dpbusd(d->corr, r1, d->w[0]), r2, d->w[1]), r3, d->w[2]);
            mps_avx512_qreq(a, NULL, el == 1 && oh + 2 < g->out_h ? 16 : n, rq,
                            (unsigned char *)y + (size_t)((oh + 1) * g->out_w + o0) * el);
        }
    }
}

__attribute__((target("avx512bw,avx512vbmi"))) static void mps_avx512_qdw3_plane(const struct mps_dwk_geom *g,
                                                                                 const uint8_t *x, const int8_t *t,
                                                                                 const struct mps_dwb_q *q, void *y)
{
    int32_t tw[4];
    struct mps_qreq rq;
    mps_uqdw3_taps(t, q->req, tw, &rq);
    struct mps_qdw3 d = {.g = g,
                         .x = x,
                         .w = {_mm512_set1_epi32(tw[0]), _mm512_set1_epi32(tw[1]), _mm512_set1_epi32(tw[2])},
                         .corr = _mm512_set1_epi32(tw[3]),
                         .flip = _mm512_set1_epi8((char)q->flip),
                         .pad = _mm512_set1_epi8((char)((uint8_t)q->zx ^ q->flip)),
                         .span = 15 * g->sw + 3};
    /* lane j's bytes: its taps sw j + 0, 1, 2, and one its fourth weight (0) takes */
    static const uint8_t ix[2][64] = {
#define MPS_QDW3_IX(s, j) (s) * (j), (s) * (j) + 1, (s) * (j) + 2, (s) * (j) + 3
#define MPS_QDW3_IX16(s)                                                                                               \
    MPS_QDW3_IX(s, 0), MPS_QDW3_IX(s, 1), MPS_QDW3_IX(s, 2), MPS_QDW3_IX(s, 3), MPS_QDW3_IX(s, 4), MPS_QDW3_IX(s, 5),  \
        MPS_QDW3_IX(s, 6), MPS_QDW3_IX(s, 7), MPS_QDW3_IX(s, 8), MPS_QDW3_IX(s, 9), MPS_QDW3_IX(s, 10),                \
        MPS_QDW3_IX(s, 11), MPS_QDW3_IX(s, 12), MPS_QDW3_IX(s, 13), MPS_QDW3_IX(s, 14), MPS_QDW3_IX(s, 15)
        {MPS_QDW3_IX16(1)}, {MPS_QDW3_IX16(2)}};
#undef MPS_QDW3_IX16
#undef MPS_QDW3_IX
    d.idx = _mm512_loadu_si512(ix[g->sw - 1]);
#define MPS_QDW3_ROWS(oh, two, flip) mps_qdw3_rows(&d, oh, two, flip, &rq, y)
    MPS_UQDW3_STEPS(g, q->flip != 0, MPS_QDW3_ROWS)
#undef MPS_QDW3_ROWS
}

static bool mps_avx512_qdw3(const struct mps_dwk_geom *g, const uint8_t *x, const int8_t *t, const struct mps_dwb_q *q,
                            void *y)
{
    if (!mps_x86_has_vbmi() || g->kh != 3 || g->kw != 3 || g->dh != 1 || g->dw != 1 || (g->sw != 1 && g->sw != 2))
        return false;
    if (x)
        mps_avx512_qdw3_plane(g, x, t, q, y);
    return true;
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
                                             false,
                                             mps_avx512_qdw3,
                                             mps_avx512_qmul,
                                             mps_avx512_qsum};
