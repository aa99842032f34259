/* ukernel_dwb.h: what the families' dwb kernels (ukernels.h; ukernel_avx512_dw.c,
   ukernel_avx2_dw.c) share, in plain C: the band buffer's geometry (rows of pw
   positions, sixteen floats a position), the input rows a band of output rows
   reads, and the zeros around them. */
#ifndef MPS_CPU_UKERNEL_DWB_H
#define MPS_CPU_UKERNEL_DWB_H

#include <stdint.h>
#include <string.h>

#include "ukernels.h"

/* A layer's windows over a buffer of buf floats. */
struct mps_dwb_geom {
    int taps;
    int64_t span_h;            /* input rows a window spans */
    int64_t pw;                /* positions a buffer row: the windows' zero-padded width */
    int64_t band;              /* output rows a band holds */
    int64_t oh_end;            /* the output rows made: [g->oh0, oh_end) */
    int64_t cols;              /* input columns the windows read */
    bool whole;                /* one band for all the rows: the same zeros for every block */
    int64_t off[MPS_DWB_TAPS]; /* tap u's floats from its window's first position */
};

/* False where dwb does not take the layer: more than MPS_DWB_TAPS taps, or
   not one output row's input rows fit the buffer. */
static inline bool mps_dwb_geom_of(const struct mps_dwk_geom *g, int64_t buf, struct mps_dwb_geom *d)
{
    d->taps = g->kh * g->kw;
    d->span_h = (g->kh - 1) * g->dh + 1;
    d->pw = (g->out_w - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    int64_t rows_in = buf / 16 / d->pw;
    d->band = rows_in >= d->span_h ? (rows_in - d->span_h) / g->sh + 1 : 0;
    if (d->band < 1 || d->taps > MPS_DWB_TAPS)
        return false;
    for (int u = 0; u < d->taps; u++)
        d->off[u] = 16 * ((u / g->kw) * g->dh * d->pw + (u % g->kw) * g->dw);
    d->oh_end = g->oh1 ? g->oh1 : g->out_h;
    d->whole = d->band >= d->oh_end - g->oh0;
    int64_t cols = g->w < d->pw - g->pl ? g->w : d->pw - g->pl;
    d->cols = cols > 0 ? cols : 0;
    return true;
}

/* The band of output rows from oh0: rows of them, reading count input rows
   from first (the buffer's row 0), those inside the plane [r0, r1). */
struct mps_dwb_band {
    int64_t rows, first, count, r0, r1;
};

static inline struct mps_dwb_band mps_dwb_band_of(const struct mps_dwk_geom *g, const struct mps_dwb_geom *d,
                                                  int64_t oh0)
{
    struct mps_dwb_band b;
    b.rows = d->oh_end - oh0 < d->band ? d->oh_end - oh0 : d->band;
    b.first = oh0 * g->sh - g->pt;
    b.count = (b.rows - 1) * g->sh + d->span_h;
    b.r0 = b.first > 0 ? b.first : 0;
    b.r1 = b.first + b.count < g->h ? b.first + b.count : g->h;
    b.r1 = b.r1 > b.r0 ? b.r1 : b.r0;
    return b;
}

/* The zeros around the band's input in buf: the rows outside the plane
   whole, the others before column pl and past the columns read. */
static inline void mps_dwb_zeros(const struct mps_dwk_geom *g, const struct mps_dwb_geom *d,
                                 const struct mps_dwb_band *b, float *buf)
{
    for (int64_t i = 0; i < b->count; i++) {
        float *row = buf + 16 * i * d->pw;
        if (b->first + i < b->r0 || b->first + i >= b->r1) {
            memset(row, 0, sizeof(float) * 16 * (size_t)d->pw);
            continue;
        }
        memset(row, 0, sizeof(float) * 16 * (size_t)g->pl);
        memset(row + 16 * (g->pl + d->cols), 0, sizeof(float) * 16 * (size_t)(d->pw - g->pl - d->cols));
    }
}

/* n <= 8 bytes at x as a word's low bytes (the rest 0), in constant-size
   steps, which compile to moves (a memcpy of n bytes is a call, made for
   each short run of a plane: a 7x7 one's last position). */
static inline uint64_t mps_dwb_get_bytes(const uint8_t *x, int n)
{
    uint64_t w = 0;
    if (n == 8) {
        memcpy(&w, x, 8);
        return w;
    }
    int at = 0;
    if (n & 4) {
        uint32_t v;
        memcpy(&v, x, 4);
        w = v, at = 4;
    }
    if (n & 2) {
        uint16_t v;
        memcpy(&v, x + at, 2);
        w |= (uint64_t)v << (8 * at), at += 2;
    }
    if (n & 1)
        w |= (uint64_t)x[at] << (8 * at);
    return w;
}

#endif
