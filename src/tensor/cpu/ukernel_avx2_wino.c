/* ukernel_avx2_wino.c: the avx2 family's Winograd F(2x2, 3x3) transforms
   (ukernels.h's wino_in, wino_out, wino_pool), as avx512's
   (ukernel_avx512_wino.c) in 8-lane vectors: the input read straight from
   the plane, masked loads only where a row's window leaves it (zeros for
   the pads), eight tiles a step; the output's with the bias and activation,
   and with a 2x2 MaxPool. Sums in the order ukernel_wino.h's loops take
   them, so every family's transforms give the same bits. The C loops, as
   GCC vectorized them, copied each run's four rows to the stack first and
   ran runs of 7 tiles (14x14 planes) in scalar code: a fifth of mnist_cnn's
   time on this family. Built with -mavx2 -mfma like the rest of it. */
#include "ukernel_avx2.h"

/* A window row's eighteen columns as four vectors: columns 0, 8, 2 and 10
   on (c0 .. c3). */
struct mps_avx2_wrow {
    __m256 c0, c1, c2, c3;
};

/* Where a run's window leaves the plane, the lanes of each of a row's four
   vectors inside it (all: plain loads). */
struct mps_avx2_wmask {
    __m256i m0, m1, m2, m3;
    bool all;
    bool within[4]; /* window row i's columns inside the plane (mps_avx2_wino_row) */
};

/* The window row from row (its column 0; NULL: a row outside the plane, zeros); within: its eighteen columns
   lie inside the plane, so that plain loads may read them, the lanes past the row's ends then zeroed by the
   masks. vmaskmovps loads had been two fifths of the transform on 56x56 planes (Zen 5), where a run of 8 tiles
   at the row's start or end leaves it. */
static inline struct mps_avx2_wrow mps_avx2_wino_row(const float *row, const struct mps_avx2_wmask *k, bool within)
{
    struct mps_avx2_wrow r;
    if (!row) {
        r.c0 = r.c1 = r.c2 = r.c3 = _mm256_setzero_ps();
    } else if (k->all) {
        r.c0 = _mm256_loadu_ps(row), r.c1 = _mm256_loadu_ps(row + 8);
        r.c2 = _mm256_loadu_ps(row + 2), r.c3 = _mm256_loadu_ps(row + 10);
    } else if (within) {
        r.c0 = _mm256_and_ps(_mm256_loadu_ps(row), _mm256_castsi256_ps(k->m0));
        r.c1 = _mm256_and_ps(_mm256_loadu_ps(row + 8), _mm256_castsi256_ps(k->m1));
        r.c2 = _mm256_and_ps(_mm256_loadu_ps(row + 2), _mm256_castsi256_ps(k->m2));
        r.c3 = _mm256_and_ps(_mm256_loadu_ps(row + 10), _mm256_castsi256_ps(k->m3));
    } else {
        r.c0 = _mm256_maskload_ps(row, k->m0), r.c1 = _mm256_maskload_ps(row + 8, k->m1);
        r.c2 = _mm256_maskload_ps(row + 2, k->m2), r.c3 = _mm256_maskload_ps(row + 10, k->m3);
    }
    return r;
}

/* Row i of V for the run (in ukernel_wino.h's order): B across row i of
   B^T d, d = a - b (or a + b: plus), from its even columns e, odd ones o
   and those a column pair on (e1, o1). */
static inline void mps_avx2_wino_across(struct mps_avx2_wrow a, struct mps_avx2_wrow b, bool plus, float *v, int64_t vk)
{
    __m256 d0 = plus ? _mm256_add_ps(a.c0, b.c0) : _mm256_sub_ps(a.c0, b.c0);
    __m256 d1 = plus ? _mm256_add_ps(a.c1, b.c1) : _mm256_sub_ps(a.c1, b.c1);
    __m256 d2 = plus ? _mm256_add_ps(a.c2, b.c2) : _mm256_sub_ps(a.c2, b.c2);
    __m256 d3 = plus ? _mm256_add_ps(a.c3, b.c3) : _mm256_sub_ps(a.c3, b.c3);
    __m256 e, o, e1, o1;
    mps_avx2_deinterleave(d0, d1, &e, &o);
    mps_avx2_deinterleave(d2, d3, &e1, &o1);
    _mm256_storeu_ps(v, _mm256_sub_ps(e, e1));
    _mm256_storeu_ps(v + vk, _mm256_add_ps(o, e1));
    _mm256_storeu_ps(v + 2 * vk, _mm256_sub_ps(e1, o));
    _mm256_storeu_ps(v + 3 * vk, _mm256_sub_ps(o, o1));
}

/* One run's sixteen rows of V, eight lanes each: its four window rows at
   in[0 .. 3], B^T down them (rows 0 - 2, 1 + 2, 2 - 1, 1 - 3), then B
   across. */
__attribute__((always_inline)) static inline void
mps_avx2_wino_run(const float *const in[4], const struct mps_avx2_wmask *k, float *v, int64_t vk)
{
    struct mps_avx2_wrow a = mps_avx2_wino_row(in[0], k, k->within[0]), b = mps_avx2_wino_row(in[2], k, k->within[2]);
    mps_avx2_wino_across(a, b, false, v, vk);
    a = mps_avx2_wino_row(in[1], k, k->within[1]);
    mps_avx2_wino_across(a, b, true, v + 4 * vk, vk);
    mps_avx2_wino_across(b, a, false, v + 8 * vk, vk);
    b = mps_avx2_wino_row(in[3], k, k->within[3]);
    mps_avx2_wino_across(a, b, false, v + 12 * vk, vk);
}

/* A call's last run where fewer than eight tiles are left: made on the
   stack, its n lanes a row copied out (a store of eight lanes would reach
   into the next channel's; vmaskmovps stores are slow on AMD's cores). */
__attribute__((noinline)) static void mps_avx2_wino_last(const float *const in[4], const struct mps_avx2_wmask *k,
                                                         int n, float *v, int64_t vk)
{
    float rows[16][8];
    mps_avx2_wino_run(in, k, rows[0], 8);
    for (int i = 0; i < 16; i++)
        mps_avx2_put_n(v + i * vk, n, _mm256_loadu_ps(rows[i]));
}

/* ukernels.h's wino_in: each run of tiles along a row, eight at a time,
   all eight lanes stored where the call has eight tiles from the run on,
   or room for those past its last (its next run writes over those past
   the run's). The last run through the stack, where it had no room, was
   2.3 runs' time (fashion_cnn's 14x14 layer at batch 8: on every call). */
void mps_avx2_wino_in(const float *restrict x, const struct mps_wino_plane *p, int64_t j, int64_t count, int64_t room,
                      float *restrict v, int64_t vk)
{
    int64_t ty = j / p->tw, tx = j % p->tw;
    for (int64_t t = 0; t < count;) {
        int64_t n = p->tw - tx < count - t ? p->tw - tx : count - t;
        n = n < 8 ? n : 8;
        int64_t c0 = 2 * tx - p->pl, r0 = 2 * ty - p->pt;
        struct mps_avx2_wmask k; /* not zeroed first: GCC did that with rep stosq, a third of the time */
        k.all = c0 >= 0 && c0 + 18 <= p->w;
        k.m0 = mps_avx2_lanes(c0, p->w), k.m1 = mps_avx2_lanes(c0 + 8, p->w);
        k.m2 = mps_avx2_lanes(c0 + 2, p->w), k.m3 = mps_avx2_lanes(c0 + 10, p->w);
        const float *in[4];
        for (int i = 0; i < 4; i++) {
            int64_t at = (r0 + i) * p->w + c0; /* the window row's first column, in the plane */
            in[i] = r0 + i >= 0 && r0 + i < p->h ? x + at : NULL;
            k.within[i] = at >= 0 && at + 18 <= p->h * p->w;
        }
        if (t + 8 <= count + room)
            mps_avx2_wino_run(in, &k, v + t, vk);
        else
            mps_avx2_wino_last(in, &k, (int)n, v + t, vk);
        t += n, tx += n;
        if (tx == p->tw)
            tx = 0, ty++;
    }
}

/* Winograd's output transform for the n <= 8 tiles of M in m8 (element k
   at q[k / 4] + (k % 4) mk): A^T down each column of the 4x4, then across,
   the 2x2 outputs to y[0 .. 3] (rows, then columns), summed as
   ukernel_wino.h's loops sum; the bias and activation are the caller's.
   Four row pointers, which the callers step and hide from GCC
   (MPS_AVX2_WINO_OPAQUE): from m + k mk it had made sixteen, kept them on
   the stack and added to each there every step (read, add and write: a
   store each, which the next step's load of it waited on). */
#define MPS_AVX2_WINO_OPAQUE(q) __asm__("" : "+r"(q[0]), "+r"(q[1]), "+r"(q[2]), "+r"(q[3]))
static inline void mps_avx2_wino_sums(const float *const q[4], int64_t mk, __m256i m8, bool whole, __m256 y[4])
{
    __m256 v[16], r0[4], r1[4];
    for (int k = 0; k < 16; k++)
        v[k] = mps_avx2_get(q[k / 4] + k % 4 * mk, m8, whole);
    for (int j = 0; j < 4; j++) {
        r0[j] = _mm256_add_ps(_mm256_add_ps(v[j], v[4 + j]), v[8 + j]);
        r1[j] = _mm256_sub_ps(_mm256_sub_ps(v[4 + j], v[8 + j]), v[12 + j]);
    }
    y[0] = _mm256_add_ps(_mm256_add_ps(r0[0], r0[1]), r0[2]);
    y[1] = _mm256_sub_ps(_mm256_sub_ps(r0[1], r0[2]), r0[3]);
    y[2] = _mm256_add_ps(_mm256_add_ps(r1[0], r1[1]), r1[2]);
    y[3] = _mm256_sub_ps(_mm256_sub_ps(r1[1], r1[2]), r1[3]);
}

/* a's and b's lanes interleaved (a0 b0 a1 b1 ...), the first n of the
   sixteen to y. */
static inline void mps_avx2_wino_zip(float *y, __m256 a, __m256 b, int n)
{
    __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b); /* a0 b0 a1 b1 | a4 b4 a5 b5, ... */
    mps_avx2_put(y, mps_avx2_mask(n), n >= 8, _mm256_permute2f128_ps(lo, hi, 0x20));
    if (n > 8)
        mps_avx2_put(y + 8, mps_avx2_mask(n - 8), n >= 16, _mm256_permute2f128_ps(lo, hi, 0x31));
}

/* ukernels.h's wino_out, eight tiles a step. */
void mps_avx2_wino_out(const float *m, int64_t mk, int64_t count, float bias, float *y0, float *y1,
                       const struct mps_tile_epi *e)
{
    const struct mps_avx2_actc act = mps_avx2_actc_of(e);
    const __m256 b = _mm256_set1_ps(bias);
    const float *q[4] = {m, m + 4 * mk, m + 8 * mk, m + 12 * mk};
    for (int64_t t = 0; t < count; t += 8, q[0] += 8, q[1] += 8, q[2] += 8, q[3] += 8) {
        int n = count - t < 8 ? (int)(count - t) : 8;
        __m256 y[4];
        MPS_AVX2_WINO_OPAQUE(q);
        mps_avx2_wino_sums(q, mk, mps_avx2_mask(n), n == 8, y);
        for (int i = 0; i < 4; i++)
            y[i] = mps_avx2_actc(_mm256_add_ps(y[i], b), &act);
        mps_avx2_wino_zip(y0 + 2 * t, y[0], y[1], 2 * n);
        mps_avx2_wino_zip(y1 + 2 * t, y[2], y[3], 2 * n);
    }
}

/* ukernels.h's wino_pool: the four outputs' maximum (a NaN kept), in the
   order ukernel_wino.h takes it; where the activation rises, the maximum
   of the sums first, then the bias and the activation once a window (the
   same bits: mps_avx2_act_rises). */
void mps_avx2_wino_pool(const float *m, int64_t mk, int64_t count, float bias, float *y, const struct mps_tile_epi *e)
{
    const struct mps_avx2_actc act = mps_avx2_actc_of(e);
    const __m256 b = _mm256_set1_ps(bias);
    const bool first = mps_avx2_act_rises(e);
    const float *q[4] = {m, m + 4 * mk, m + 8 * mk, m + 12 * mk};
    for (int64_t t = 0; t < count; t += 8, q[0] += 8, q[1] += 8, q[2] += 8, q[3] += 8) {
        int n = count - t < 8 ? (int)(count - t) : 8;
        __m256i m8 = mps_avx2_mask(n);
        __m256 o[4];
        MPS_AVX2_WINO_OPAQUE(q);
        mps_avx2_wino_sums(q, mk, m8, n == 8, o);
        if (!first)
            for (int i = 0; i < 4; i++)
                o[i] = mps_avx2_actc(_mm256_add_ps(o[i], b), &act);
        __m256 p = mps_avx2_nanmax(mps_avx2_nanmax(mps_avx2_nanmax(o[0], o[1]), o[2]), o[3]);
        mps_avx2_put(y + t, m8, n == 8, first ? mps_avx2_actc(_mm256_add_ps(p, b), &act) : p);
    }
}
