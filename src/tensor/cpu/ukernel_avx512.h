/* ukernel_avx512.h: what the avx512 family's files share (ukernel_avx512.c:
   the GEMM and convolution tiles and the family's table; ukernel_avx512_dw.c:
   the depthwise kernels; ukernel_avx512_pool.c: MaxPool; ukernel_avx512_wino.c:
   Winograd's transforms): lane masks, the
   tile epilogue's activation, a 16 x 16 transpose in
   registers. Built with -mavx512f, as each of those files. */
#ifndef MPS_CPU_UKERNEL_AVX512_H
#define MPS_CPU_UKERNEL_AVX512_H

#include <immintrin.h>
#include <math.h>
#include <stddef.h>

#include "ukernels.h"

static inline __mmask16 mps_avx512_mask(int n)
{
    return (__mmask16)(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1u);
}

/* v's lanes in m to p: a plain store where m is every lane or the first
   eight. Zen 4 forwards nothing from a masked store to a load after it
   (a load of what a masked store wrote waited about 22 cycles, of a plain
   store's 2), and a k = 16 GEMM tile storing masked rows ran 8% longer. */
static inline void mps_avx512_store(float *p, __mmask16 m, __m512 v)
{
    if (m == 0xffffu)
        _mm512_storeu_ps(p, v);
    else if (m == 0xffu)
        _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
    else
        _mm512_mask_storeu_ps(p, m, v);
}

/* The activation of the epilogue from its constants: the clamp to [lo, hi],
   then the slope below zero, then HardSwish. */
struct mps_avx512_actc {
    __m512 lo, hi, slope;
    bool clamp, leaky, hswish;
};

static inline struct mps_avx512_actc mps_avx512_actc_of(const struct mps_tile_epi *e)
{
    return (struct mps_avx512_actc){.lo = _mm512_set1_ps(e->lo),
                                    .hi = _mm512_set1_ps(e->hi),
                                    .slope = _mm512_set1_ps(e->slope),
                                    .clamp = e->lo > -INFINITY || e->hi < INFINITY,
                                    .leaky = e->slope != 1.0f,
                                    .hswish = e->hswish};
}

/* Whether e's activation does anything: from e, not from a just-built
   mps_avx512_actc, whose three flags GCC stored apart on the stack and then
   tested with one 4-byte load, which no store could forward (a stall of a
   twentieth of a k = 16 tile's time on Zen 4). */
static inline bool mps_avx512_act_any(const struct mps_tile_epi *e)
{
    return e->lo > -INFINITY || e->hi < INFINITY || e->slope != 1.0f || e->hswish;
}

static inline __m512 mps_avx512_actc(__m512 acc, const struct mps_avx512_actc *a)
{
    if (a->clamp) /* acc second: max and min return it when it is NaN */
        acc = _mm512_min_ps(a->hi, _mm512_max_ps(a->lo, acc));
    if (a->leaky) {
        __mmask16 neg = _mm512_cmp_ps_mask(acc, _mm512_setzero_ps(), _CMP_LT_OQ);
        acc = _mm512_mask_mul_ps(acc, neg, acc, a->slope);
    }
    if (a->hswish) { /* t is NaN only where acc is: the product is NaN whatever min and max made of t */
        __m512 t = _mm512_add_ps(_mm512_div_ps(acc, _mm512_set1_ps(6.0f)), _mm512_set1_ps(0.5f));
        t = _mm512_max_ps(_mm512_min_ps(t, _mm512_set1_ps(1.0f)), _mm512_setzero_ps());
        acc = _mm512_mul_ps(acc, t);
    }
    return acc;
}

/* Whether e's activation never decreases (no HardSwish, no negative slope):
   then, with a bias a row, the maximum of the outputs is the output of
   their maximum (x -> fl(x + b) never decreases either), bit for bit, so a
   fused MaxPool may pool first and add and activate once a window. */
static inline bool mps_avx512_act_rises(const struct mps_tile_epi *e)
{
    return !e->hswish && e->slope >= 0.0f;
}

/* max(a, b), a NaN in either giving NaN (vmaxps returns b when either is one). */
static inline __m512 mps_avx512_nanmax(__m512 a, __m512 b)
{
    return _mm512_mask_mov_ps(_mm512_max_ps(a, b), _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}

static inline __m512 mps_avx512_act(__m512 acc, const struct mps_tile_epi *e)
{
    struct mps_avx512_actc a = mps_avx512_actc_of(e);
    return mps_avx512_actc(acc, &a);
}

/* Four rows of sixteen floats interleaved by 32, then 64 bits: lane L of
   u[j] holds column 4 L + j of r[0 .. 3]. */
static inline void mps_avx512_interleave4(const __m512 *r, __m512 *u)
{
    __m512d t0 = _mm512_castps_pd(_mm512_unpacklo_ps(r[0], r[1]));
    __m512d t1 = _mm512_castps_pd(_mm512_unpackhi_ps(r[0], r[1]));
    __m512d t2 = _mm512_castps_pd(_mm512_unpacklo_ps(r[2], r[3]));
    __m512d t3 = _mm512_castps_pd(_mm512_unpackhi_ps(r[2], r[3]));
    u[0] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
}

/* r[i][j] -> r[j][i] for a 16 x 16 block of floats in registers: the
   interleaves leave lane L of u[4 i + j] holding column 4 L + j of rows
   4 i .. 4 i + 3; two rounds of 128-bit lane shuffles gather them. */
static inline void mps_avx512_transpose16(__m512 r[16])
{
    __m512 u[16];
    for (int i = 0; i < 4; i++)
        mps_avx512_interleave4(r + 4 * i, u + 4 * i);
    for (int j = 0; j < 4; j++) {
        __m512 ab0 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(1, 0, 1, 0));
        __m512 ab1 = _mm512_shuffle_f32x4(u[j], u[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
        __m512 cd0 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(1, 0, 1, 0));
        __m512 cd1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], _MM_SHUFFLE(3, 2, 3, 2));
        r[j] = _mm512_shuffle_f32x4(ab0, cd0, _MM_SHUFFLE(2, 0, 2, 0));
        r[4 + j] = _mm512_shuffle_f32x4(ab0, cd0, _MM_SHUFFLE(3, 1, 3, 1));
        r[8 + j] = _mm512_shuffle_f32x4(ab1, cd1, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + j] = _mm512_shuffle_f32x4(ab1, cd1, _MM_SHUFFLE(3, 1, 3, 1));
    }
}

/* The family's plane kernels (ukernels.h), each in its own file. */
void mps_avx512_dw3(const struct mps_dw3_geom *g, const float *x, const float *k, float bias, float *y,
                    const struct mps_tile_epi *e);
bool mps_avx512_dwb(const struct mps_dwk_geom *g, const void *x, const float *k, const float *bias, void *y,
                    int64_t blocks, const struct mps_tile_epi *e, const struct mps_dwb_expand *ex,
                    const struct mps_dwb_q *q);
void mps_avx512_maxpool(const struct mps_maxpool_geom *g, const float *x, float *y);
/* Winograd's transforms (ukernel_avx512_wino.c). */
void mps_avx512_wino_in(const float *restrict x, const struct mps_wino_plane *p, int64_t j, int64_t count, int64_t room,
                        float *restrict v, int64_t vk);
void mps_avx512_wino_out(const float *m, int64_t mk, int64_t count, float bias, float *y0, float *y1,
                         const struct mps_tile_epi *e);
void mps_avx512_wino_pool(const float *m, int64_t mk, int64_t count, float bias, float *y,
                          const struct mps_tile_epi *e);

#endif
