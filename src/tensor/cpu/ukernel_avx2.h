/* ukernel_avx2.h: what the avx2 family's files share (ukernel_avx2.c: the
   GEMM and convolution tiles and the family's table; ukernel_avx2_dw.c: the
   depthwise blocks; ukernel_avx2_wino.c: Winograd's transforms;
   ukernel_avx2_pool.c: the MaxPool plane): lane
   masks, the tile epilogue's activation, the even/odd split and an 8 x 8
   transpose in registers. Built with -mavx2 -mfma, as each of those files. */
#ifndef MPS_CPU_UKERNEL_AVX2_H
#define MPS_CPU_UKERNEL_AVX2_H

#include <immintrin.h>
#include <math.h>

#include "ukernels.h"

/* The mask of the first n lanes (0..8) of a 256-bit vector. */
static inline __m256i mps_avx2_mask(int n)
{
    static const int32_t lanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(lanes + 8 - (n < 0 ? 0 : n > 8 ? 8 : n)));
}

/* Lanes of the vector from plane column a in a row of w: a + lane in 0 .. w. */
static inline __m256i mps_avx2_lanes(int64_t a, int64_t w)
{
    int from = a < 0 ? (int)(a < -8 ? 8 : -a) : 0, to = w - a < 8 ? (int)(w - a < 0 ? 0 : w - a) : 8;
    return _mm256_andnot_si256(mps_avx2_mask(from), mps_avx2_mask(to));
}

/* The first n (1..8) lanes of v to p: a 128-bit, a 64-bit and a 32-bit
   store as n needs them, where a masked store (vmaskmovps) is slow on AMD's
   cores (a fifth of Winograd's input transform's time on 14x14 planes, Zen 5). */
static inline void mps_avx2_put_n(float *p, int n, __m256 v)
{
    if (n == 8) {
        _mm256_storeu_ps(p, v);
        return;
    }
    __m128 q = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(p, q);
        q = _mm256_extractf128_ps(v, 1);
        p += 4, n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)p, q);
        q = _mm_movehl_ps(q, q);
        p += 2, n -= 2;
    }
    if (n)
        _mm_store_ss(p, q);
}

/* v's lanes in m, mps_avx2_mask(n)'s, to p (whole: all eight, a plain
   store); never a masked store (vmaskmovps, slow on AMD's cores), put_n. */
static inline void mps_avx2_put(float *p, __m256i m, bool whole, __m256 v)
{
    if (whole)
        _mm256_storeu_ps(p, v);
    else
        mps_avx2_put_n(p, __builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(m))), v);
}

static inline __m256 mps_avx2_get(const float *p, __m256i m, bool whole)
{
    return whole ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

/* The epilogue's activation from its constants (as ukernel_avx512.h's). */
struct mps_avx2_actc {
    __m256 lo, hi, slope;
    bool clamp, leaky, hswish;
};

static inline struct mps_avx2_actc mps_avx2_actc_of(const struct mps_tile_epi *e)
{
    return (struct mps_avx2_actc){.lo = _mm256_set1_ps(e->lo),
                                  .hi = _mm256_set1_ps(e->hi),
                                  .slope = _mm256_set1_ps(e->slope),
                                  .clamp = e->lo > -INFINITY || e->hi < INFINITY,
                                  .leaky = e->slope != 1.0f,
                                  .hswish = e->hswish};
}

/* Whether e's activation does anything: from e, as avx512's (mps_avx512_act_any
   says why: the three flags of a just-built actc were stored apart and read
   back as one word, a load no store forwards; in the conv tile a fifteenth of
   its time on mobilenet_v2's stem, Zen 5). */
static inline bool mps_avx2_act_any(const struct mps_tile_epi *e)
{
    return e->lo > -INFINITY || e->hi < INFINITY || e->slope != 1.0f || e->hswish;
}

__attribute__((always_inline)) static inline __m256 mps_avx2_actc(__m256 acc, const struct mps_avx2_actc *a)
{
    if (a->clamp) /* acc second: max and min return it when it is NaN */
        acc = _mm256_min_ps(a->hi, _mm256_max_ps(a->lo, acc));
    if (a->leaky)
        acc = _mm256_blendv_ps(acc, _mm256_mul_ps(acc, a->slope), acc);
    if (a->hswish) { /* t is NaN only where acc is: the product is NaN whatever min and max made of t */
        __m256 t = _mm256_add_ps(_mm256_div_ps(acc, _mm256_set1_ps(6.0f)), _mm256_set1_ps(0.5f));
        t = _mm256_max_ps(_mm256_min_ps(t, _mm256_set1_ps(1.0f)), _mm256_setzero_ps());
        acc = _mm256_mul_ps(acc, t);
    }
    return acc;
}

/* Whether e's activation never decreases (no HardSwish, no negative slope):
   then the maximum of outputs is the output of their maximum, bit for bit
   (as ukernel_avx512.h's), so a fused MaxPool may pool first. */
static inline bool mps_avx2_act_rises(const struct mps_tile_epi *e)
{
    return !e->hswish && e->slope >= 0.0f;
}

/* max(a, b), a NaN in either giving NaN (vmaxps returns b when either is one). */
static inline __m256 mps_avx2_nanmax(__m256 a, __m256 b)
{
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}

/* The even and the odd elements of the sixteen floats a, b. */
static inline void mps_avx2_deinterleave(__m256 a, __m256 b, __m256 *even, __m256 *odd)
{
    __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
    __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* The 8 x 8 floats of r transposed in place: lane j of r[i] becomes lane i of r[j]. */
static inline void mps_avx2_transpose8(__m256 *r)
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) { /* rows 2i and 2i + 1 interleaved */
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 8; i += 4) { /* u[i + c]: column c (low half) and c + 4 (high) of rows i .. i + 3 */
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2f128_ps(u[c], u[c + 4], 0x20);
        r[c + 4] = _mm256_permute2f128_ps(u[c], u[c + 4], 0x31);
    }
}

/* ukernel_avx2_dw.c's blocks of sixteen depthwise planes (ukernels.h's dwb) */
bool mps_avx2_dwb(const struct mps_dwk_geom *g, const void *x, const float *k, const float *bias, void *y,
                  int64_t blocks, const struct mps_tile_epi *e, const struct mps_dwb_expand *ex,
                  const struct mps_dwb_q *q);

/* ukernel_avx2_wino.c's Winograd transforms (ukernels.h's wino_in, wino_out, wino_pool) */
void mps_avx2_wino_in(const float *restrict x, const struct mps_wino_plane *p, int64_t j, int64_t count, int64_t room,
                      float *restrict v, int64_t vk);
void mps_avx2_wino_out(const float *m, int64_t mk, int64_t count, float bias, float *y0, float *y1,
                       const struct mps_tile_epi *e);
void mps_avx2_wino_pool(const float *m, int64_t mk, int64_t count, float bias, float *y, const struct mps_tile_epi *e);
/* ukernel_avx2_pool.c's MaxPool plane (ukernels.h's maxpool) */
void mps_avx2_maxpool(const struct mps_maxpool_geom *g, const float *x, float *y);

#endif
