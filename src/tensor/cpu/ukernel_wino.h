/* ukernel_wino.h: Winograd F(2x2, 3x3)'s transforms (ukernels.h), in plain
   C that the neon and c families' files include, so that the compiler
   vectorizes them for that family's instruction set: written once, built
   once per family. Loops over tiles, no branches. avx512 and avx2 have
   their own (ukernel_avx512_wino.c, ukernel_avx2_wino.c): these loops, as
   GCC vectorized them there, were a fifth of avx512's 56x56 layers (the
   input transform) and kept half of M's pointers in vector registers (the
   output transforms); on avx2 they were 27% of mnist_cnn's time.

   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1]:
   every coefficient is 0 or +-1, so the transforms only add and subtract. */
#ifndef MPS_CPU_UKERNEL_WINO_H
#define MPS_CPU_UKERNEL_WINO_H

#include <string.h>

#include "ukernels.h"

/* Tiles a step of mps_wino_in takes (its rows on the stack). */
enum { MPS_WINO_STEP = 32 };

/* B across one row of B^T d (its even columns e, odd ones o): V's four
   elements of that row for n tiles. (Four rows of V a loop: with all
   sixteen in one, GCC gave up checking that they do not overlap.) */
static inline void mps_wino_in_row(const float *e, const float *o, float *v, int64_t vk, int64_t n)
{
    float *v0 = v, *v1 = v + vk, *v2 = v + 2 * vk, *v3 = v + 3 * vk;
    for (int64_t t = 0; t < n; t++) {
        v0[t] = e[t] - e[t + 1];
        v1[t] = o[t] + e[t + 1];
        v2[t] = e[t + 1] - o[t];
        v3[t] = o[t] - o[t + 1];
    }
}

/* A run of n <= MPS_WINO_STEP tiles, its four rows of 2 n + 2 columns at x
   (rows pw apart), in two passes, each a loop GCC vectorizes: B^T down the
   four rows, split into even and odd columns; then B across, from columns
   t and t + 1 of those. (Reading each window's four columns in one loop,
   or keeping small arrays of temporaries, the loops stayed scalar.) */
static inline void mps_wino_in_run(const float *restrict x, int64_t pw, int64_t n, float *restrict v, int64_t vk)
{
    float e0[MPS_WINO_STEP + 1], e1[MPS_WINO_STEP + 1], e2[MPS_WINO_STEP + 1], e3[MPS_WINO_STEP + 1];
    float o0[MPS_WINO_STEP + 1], o1[MPS_WINO_STEP + 1], o2[MPS_WINO_STEP + 1], o3[MPS_WINO_STEP + 1];
    const float *x0 = x, *x1 = x + pw, *x2 = x + 2 * pw, *x3 = x + 3 * pw;
    for (int64_t u = 0; u <= n; u++) {
        e0[u] = x0[2 * u] - x2[2 * u], o0[u] = x0[2 * u + 1] - x2[2 * u + 1];
        e1[u] = x1[2 * u] + x2[2 * u], o1[u] = x1[2 * u + 1] + x2[2 * u + 1];
        e2[u] = x2[2 * u] - x1[2 * u], o2[u] = x2[2 * u + 1] - x1[2 * u + 1];
        e3[u] = x1[2 * u] - x3[2 * u], o3[u] = x1[2 * u + 1] - x3[2 * u + 1];
    }
    mps_wino_in_row(e0, o0, v, vk, n);
    mps_wino_in_row(e1, o1, v + 4 * vk, vk, n);
    mps_wino_in_row(e2, o2, v + 8 * vk, vk, n);
    mps_wino_in_row(e3, o3, v + 12 * vk, vk, n);
}

/* ukernels.h's wino_in: each run of tiles along a row, MPS_WINO_STEP at a
   time, its four rows first copied to the stack with the cells outside
   the plane zeroed. */
static inline void mps_wino_in(const float *restrict x, const struct mps_wino_plane *p, int64_t j, int64_t count,
                               int64_t room, float *restrict v, int64_t vk)
{
    (void)room;
    enum { ROW = 2 * MPS_WINO_STEP + 2 };
    float buf[4 * ROW];
    for (int64_t t = 0; t < count;) {
        int64_t ty = (j + t) / p->tw, tx = (j + t) % p->tw;
        int64_t n = p->tw - tx < count - t ? p->tw - tx : count - t;
        n = n < MPS_WINO_STEP ? n : MPS_WINO_STEP;
        int64_t c0 = 2 * tx - p->pl, cols = 2 * n + 2;
        int64_t lo = c0 < 0 ? -c0 : 0, hi = p->w - c0 < cols ? p->w - c0 : cols; /* the columns inside */
        for (int i = 0; i < 4; i++) {
            int64_t r = 2 * ty - p->pt + i;
            float *row = buf + i * ROW;
            if (r < 0 || r >= p->h || hi <= lo) {
                memset(row, 0, sizeof(float) * (size_t)cols);
                continue;
            }
            memset(row, 0, sizeof(float) * (size_t)lo);
            memcpy(row + lo, x + r * p->w + c0 + lo, sizeof(float) * (size_t)(hi - lo));
            memset(row + hi, 0, sizeof(float) * (size_t)(cols - hi));
        }
        mps_wino_in_run(buf, ROW, n, v + t, vk);
        t += n;
    }
}

/* The larger of a and b, a NaN taken and kept (as MaxPool does). */
static inline float mps_wino_max(float a, float b)
{
    return b > a || b != b ? b : a;
}

/* One tile's 2x2 outputs, with HS (false or true) HardSwish after the clamp
   and slope, then (POOL) their maximum: constants in each loop, which GCC
   vectorizes only then (with hs read in the loop it stayed scalar, branch
   by branch: a quarter of a 56x56 layer's time). */
#define MPS_WINO_TILES(HS, POOL)                                                                                       \
    for (int64_t t = 0; t < count; t++) {                                                                              \
        /* A^T down each column j of M (element k = 4 i + j), then A across */                                         \
        float r00 = m0[t] + m4[t] + m8[t], r01 = m1[t] + m5[t] + m9[t], r02 = m2[t] + m6[t] + m10[t];                  \
        float r03 = m3[t] + m7[t] + m11[t], r10 = m4[t] - m8[t] - m12[t], r11 = m5[t] - m9[t] - m13[t];                \
        float r12 = m6[t] - m10[t] - m14[t], r13 = m7[t] - m11[t] - m15[t];                                            \
        float a = mps_tile_act(r00 + r01 + r02 + bias, lo, hi, slope, HS);                                             \
        float b = mps_tile_act(r01 - r02 - r03 + bias, lo, hi, slope, HS);                                             \
        float c = mps_tile_act(r10 + r11 + r12 + bias, lo, hi, slope, HS);                                             \
        float d = mps_tile_act(r11 - r12 - r13 + bias, lo, hi, slope, HS);                                             \
        if (POOL) {                                                                                                    \
            y0[t] = mps_wino_max(mps_wino_max(mps_wino_max(a, b), c), d);                                              \
        } else {                                                                                                       \
            y0[2 * t] = a, y0[2 * t + 1] = b;                                                                          \
            y1[2 * t] = c, y1[2 * t + 1] = d;                                                                          \
        }                                                                                                              \
    }

/* The output transform of count tiles: to y0 and y1 (ukernels.h's
   wino_out), or pooled to y0 (wino_pool, y1 unused). */
static inline void mps_wino_tiles(const float *restrict m, int64_t mk, int64_t count, float bias, float *restrict y0,
                                  float *restrict y1, const struct mps_tile_epi *e, bool pool)
{
    const float *m0 = m, *m1 = m + mk, *m2 = m + 2 * mk, *m3 = m + 3 * mk, *m4 = m + 4 * mk, *m5 = m + 5 * mk;
    const float *m6 = m + 6 * mk, *m7 = m + 7 * mk, *m8 = m + 8 * mk, *m9 = m + 9 * mk, *m10 = m + 10 * mk;
    const float *m11 = m + 11 * mk, *m12 = m + 12 * mk, *m13 = m + 13 * mk, *m14 = m + 14 * mk, *m15 = m + 15 * mk;
    float lo = e->lo, hi = e->hi, slope = e->slope;
    if (e->hswish && pool)
        MPS_WINO_TILES(true, true)
    else if (e->hswish)
        MPS_WINO_TILES(true, false)
    else if (pool)
        MPS_WINO_TILES(false, true)
    else
        MPS_WINO_TILES(false, false)
}
#undef MPS_WINO_TILES

static void mps_wino_out(const float *restrict m, int64_t mk, int64_t count, float bias, float *restrict y0,
                         float *restrict y1, const struct mps_tile_epi *e)
{
    mps_wino_tiles(m, mk, count, bias, y0, y1, e, false);
}

static void mps_wino_pool(const float *restrict m, int64_t mk, int64_t count, float bias, float *restrict y,
                          const struct mps_tile_epi *e)
{
    mps_wino_tiles(m, mk, count, bias, y, NULL, e, true);
}

#endif
