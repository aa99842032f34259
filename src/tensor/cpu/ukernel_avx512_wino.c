/* ukernel_avx512_wino.c: the avx512 family's Winograd F(2x2, 3x3)
   transforms (ukernels.h's wino_in, wino_out, wino_pool): the input's read
   straight from the plane with masked loads (zeros for the pads, no padded
   copy), the output's with the bias and activation, and with a 2x2 MaxPool.
   Built with -mavx512f like the rest of the family. */
#include "ukernel_avx512.h"

/* Winograd's input transform (ukernels.h's wino_in), read straight from the
   input plane: masked loads, zeros for the cells outside it (the pads), so
   that no padded copy is made. B^T first, down the four rows of a run of
   tiles along a row (the window's columns 2 tx - pl on, nv vectors a row),
   into d. */
static inline void mps_avx512_wino_down(const float *x, const struct mps_wino_plane *p, int64_t ty, int64_t tx,
                                        int64_t cols, int nv, __m512 d[4][3])
{
    int64_t c0 = 2 * tx - p->pl, lo = c0 < 0 ? -c0 : 0, hi = p->w - c0 < cols ? p->w - c0 : cols;
    uint64_t inside = hi > lo ? (~0ull >> (64 - hi)) & (~0ull << lo) : 0; /* columns lo .. hi of the run */
    __m512 r[4][3];
    for (int i = 0; i < 4; i++) {
        int64_t row = 2 * ty - p->pt + i;
        for (int j = 0; j < nv; j++)
            r[i][j] = row >= 0 && row < p->h
                          ? _mm512_maskz_loadu_ps((__mmask16)(inside >> 16 * j), x + row * p->w + c0 + 16 * j)
                          : _mm512_setzero_ps();
    }
    for (int j = 0; j < nv; j++) {
        d[0][j] = _mm512_sub_ps(r[0][j], r[2][j]);
        d[1][j] = _mm512_add_ps(r[1][j], r[2][j]);
        d[2][j] = _mm512_sub_ps(r[2][j], r[1][j]);
        d[3][j] = _mm512_sub_ps(r[1][j], r[3][j]);
    }
}

/* Then B across each row i of B^T d, from its even columns e, odd ones o
   and those a column pair on (e1, o1): V's elements 4 i .. 4 i + 3 for the
   lanes in keep. */
static inline void mps_avx512_wino_across(__m512 e, __m512 o, __m512 e1, __m512 o1, __mmask16 keep, float *v,
                                          int64_t vk)
{
    _mm512_mask_storeu_ps(v, keep, _mm512_sub_ps(e, e1));
    _mm512_mask_storeu_ps(v + vk, keep, _mm512_add_ps(o, e1));
    _mm512_mask_storeu_ps(v + 2 * vk, keep, _mm512_sub_ps(e1, o));
    _mm512_mask_storeu_ps(v + 3 * vk, keep, _mm512_sub_ps(o, o1));
}

/* Sixteen tiles of a row, 34 columns (three vectors a row of B^T d): the
   pairs a column on by two alignr, each of e, o, e1, o1 a two-source permute. */
static void mps_avx512_wino_wide(const float *x, const struct mps_wino_plane *p, int64_t ty, int64_t tx, int n,
                                 float *v, int64_t vk)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512 d[4][3];
    mps_avx512_wino_down(x, p, ty, tx, 2 * n + 2, 3, d);
    for (int i = 0; i < 4; i++) {
        __m512 lo = d[i][0], hi = d[i][1];
        __m512 lo2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(hi), _mm512_castps_si512(lo), 2));
        __m512 hi2 = _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(d[i][2]), _mm512_castps_si512(hi), 2));
        mps_avx512_wino_across(_mm512_permutex2var_ps(lo, even, hi), _mm512_permutex2var_ps(lo, odd, hi),
                               _mm512_permutex2var_ps(lo2, even, hi2), _mm512_permutex2var_ps(lo2, odd, hi2),
                               mps_avx512_mask(n), v + 4 * i * vk, vk);
    }
}

/* Runs of up to 7 tiles (16 columns, one vector a row of B^T d): na tiles
   of row ty from column tx into lanes 0 .. na, then nb (0 .. 7) of row ty
   + 1 from its first into the next lanes, each of e, o, e1, o1 a
   two-source permute across the two runs. On 14x14 planes (rows of 7
   tiles) a step fills 14 lanes where a run alone filled 7. */
static void mps_avx512_wino_pair(const float *x, const struct mps_wino_plane *p, int64_t ty, int64_t tx, int na,
                                 int nb, float *v, int64_t vk)
{
    __m512 a[4][3], b[4][3];
    mps_avx512_wino_down(x, p, ty, tx, 2 * na + 2, 1, a);
    if (nb)
        mps_avx512_wino_down(x, p, ty + 1, 0, 2 * nb + 2, 1, b);
    else
        for (int i = 0; i < 4; i++)
            b[i][0] = _mm512_setzero_ps();
    /* lane l < na reads a's column 2 l, the others b's column 2 (l - na): lane 16 + 2 (l - na) of the pair */
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i ie = _mm512_add_epi32(_mm512_add_epi32(lane, lane),
                                  _mm512_maskz_set1_epi32((__mmask16)~mps_avx512_mask(na), 16 - 2 * na));
    __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1)), ie1 = _mm512_add_epi32(ie, _mm512_set1_epi32(2));
    __m512i io1 = _mm512_add_epi32(ie, _mm512_set1_epi32(3));
    for (int i = 0; i < 4; i++)
        mps_avx512_wino_across(_mm512_permutex2var_ps(a[i][0], ie, b[i][0]),
                               _mm512_permutex2var_ps(a[i][0], io, b[i][0]),
                               _mm512_permutex2var_ps(a[i][0], ie1, b[i][0]),
                               _mm512_permutex2var_ps(a[i][0], io1, b[i][0]), mps_avx512_mask(na + nb),
                               v + 4 * i * vk, vk);
}

/* ukernels.h's wino_in: runs of tiles along the rows, sixteen tiles a step;
   runs of 7 or fewer two at a time where the next row's fits beside. The
   C loops (ukernel_wino.h), as GCC vectorized them, ran 256-bit with alias
   checks and scalar ends: a fifth of six 56x56 64-channel layers' time. */
void mps_avx512_wino_in(const float *restrict x, const struct mps_wino_plane *p, int64_t j, int64_t count, int64_t room,
                        float *restrict v, int64_t vk)
{
    (void)room; /* its masked stores write the count tiles alone */
    for (int64_t t = 0; t < count;) {
        int64_t ty = (j + t) / p->tw, tx = (j + t) % p->tw;
        int64_t n = p->tw - tx < count - t ? p->tw - tx : count - t;
        if (n > 7) {
            n = n < 16 ? n : 16;
            mps_avx512_wino_wide(x, p, ty, tx, (int)n, v + t, vk);
            t += n;
            continue;
        }
        int64_t nb = count - t - n < p->tw ? count - t - n : p->tw;
        nb = nb <= 7 ? nb : 0;
        mps_avx512_wino_pair(x, p, ty, tx, (int)n, (int)nb, v + t, vk);
        t += n + nb;
    }
}

/* Winograd's output transform for sixteen tiles (lanes keep) of M (element
   k at m + k mk): A^T down each column of the 4x4, then across, the 2x2
   outputs to y[0 .. 3] (rows, then columns), summed in the order
   ukernel_wino.h's loops sum; the bias and activation are the caller's.
   GCC's vectorized loops kept half of M's sixteen pointers in vector
   registers and built the clamp from compares and blends. */
static inline void mps_avx512_wino_sums(const float *m, int64_t mk, __mmask16 keep, __m512 y[4])
{
    __m512 v[16], r0[4], r1[4];
    for (int k = 0; k < 16; k++)
        v[k] = _mm512_maskz_loadu_ps(keep, m + k * mk);
    for (int j = 0; j < 4; j++) {
        r0[j] = _mm512_add_ps(_mm512_add_ps(v[j], v[4 + j]), v[8 + j]);
        r1[j] = _mm512_sub_ps(_mm512_sub_ps(v[4 + j], v[8 + j]), v[12 + j]);
    }
    y[0] = _mm512_add_ps(_mm512_add_ps(r0[0], r0[1]), r0[2]);
    y[1] = _mm512_sub_ps(_mm512_sub_ps(r0[1], r0[2]), r0[3]);
    y[2] = _mm512_add_ps(_mm512_add_ps(r1[0], r1[1]), r1[2]);
    y[3] = _mm512_sub_ps(_mm512_sub_ps(r1[1], r1[2]), r1[3]);
}

/* ukernels.h's wino_out: each output row's two columns interleaved (two
   two-source permutes a row). */
void mps_avx512_wino_out(const float *m, int64_t mk, int64_t count, float bias, float *y0, float *y1,
                                const struct mps_tile_epi *e)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
    const struct mps_avx512_actc act = mps_avx512_actc_of(e);
    const __m512 b = _mm512_set1_ps(bias);
    for (int64_t t = 0; t < count; t += 16) {
        int n = count - t < 16 ? (int)(count - t) : 16;
        __m512 y[4];
        mps_avx512_wino_sums(m + t, mk, mps_avx512_mask(n), y);
        for (int i = 0; i < 4; i++)
            y[i] = mps_avx512_actc(_mm512_add_ps(y[i], b), &act);
        __mmask16 m0 = mps_avx512_mask(2 * n), m1 = mps_avx512_mask(2 * n - 16);
        mps_avx512_store(y0 + 2 * t, m0, _mm512_permutex2var_ps(y[0], lo, y[1]));
        mps_avx512_store(y0 + 2 * t + 16, m1, _mm512_permutex2var_ps(y[0], hi, y[1]));
        mps_avx512_store(y1 + 2 * t, m0, _mm512_permutex2var_ps(y[2], lo, y[3]));
        mps_avx512_store(y1 + 2 * t + 16, m1, _mm512_permutex2var_ps(y[2], hi, y[3]));
    }
}

/* ukernels.h's wino_pool: the four outputs' maximum (a NaN kept), in the
   order ukernel_wino.h takes it; where the activation rises
   (mps_avx512_act_rises), the maximum of the sums first, then the bias and
   the activation once a window. */
void mps_avx512_wino_pool(const float *m, int64_t mk, int64_t count, float bias, float *y,
                                 const struct mps_tile_epi *e)
{
    const struct mps_avx512_actc act = mps_avx512_actc_of(e);
    const __m512 b = _mm512_set1_ps(bias);
    const bool first = mps_avx512_act_rises(e);
    for (int64_t t = 0; t < count; t += 16) {
        __mmask16 keep = mps_avx512_mask(count - t < 16 ? (int)(count - t) : 16);
        __m512 o[4];
        mps_avx512_wino_sums(m + t, mk, keep, o);
        if (!first)
            for (int i = 0; i < 4; i++)
                o[i] = mps_avx512_actc(_mm512_add_ps(o[i], b), &act);
        __m512 p = mps_avx512_nanmax(mps_avx512_nanmax(mps_avx512_nanmax(o[0], o[1]), o[2]), o[3]);
        mps_avx512_store(y + t, keep, first ? mps_avx512_actc(_mm512_add_ps(p, b), &act) : p);
    }
}
