/* ukernel_dw.h: the depthwise plane of any window (ukernels.h's dwk), in
   plain C that each family's file includes, so that the compiler vectorizes
   it at that family's width (like ukernel_wino.h).

   A band of output rows at a time: the input rows the band reads are copied
   into a zero-padded buffer on the stack (so no tap tests the padding), then
   each output row is the bias plus one pass a tap over a run of that
   buffer (stride 1: contiguous; 2: every other float), the epilogue's clamp
   and slope at the end. Narrow rows (under MPS_DWK_NARROW outputs) run the
   band's rows as one run instead. */
#ifndef MPS_CPU_UKERNEL_DW_H
#define MPS_CPU_UKERNEL_DW_H

#include <string.h>

#include "ukernels.h"

/* y[0 .. n) += k * r[0, s, 2 s, ..] (s 1 or 2: loops the compiler vectorizes for each). */
static inline void mps_dwk_tap(float *restrict y, const float *restrict r, int64_t n, int s, float k)
{
    if (s == 1)
        for (int64_t i = 0; i < n; i++)
            y[i] += k * r[i];
    else
        for (int64_t i = 0; i < n; i++)
            y[i] += k * r[2 * i];
}

/* Rows narrower than this go through the band as one run ("virtual" rows,
   their padding's columns computed and dropped): 14 outputs in a vector of
   16 ran in scalar code, LR-ASPP's 14x14 layers 8 times onnxruntime's time. */
enum { MPS_DWK_NARROW = 64 };

static bool mps_dwk(const struct mps_dwk_geom *g, const float *x, const float *k, float bias, float *y,
                    const struct mps_tile_epi *e)
{
    /* the buffer's pitch: the columns the taps read. Narrow rows as one run: output
       (oh, ow) at v = oh pw + ow reads s v + a tap's offset, as its row is s rows of
       the buffer down (stride 2 computes the odd v too, and drops them with the padding's) */
    int64_t pw = (g->out_w - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    bool runs = g->out_w < MPS_DWK_NARROW && g->sh == g->sw;
    int64_t vp = runs ? pw : g->out_w, span_h = (g->kh - 1) * g->dh + 1;
    /* rows of zeros after the band's: what the last run's dropped columns read (s rows) */
    int64_t slack = runs ? g->sw : 0, rows_in = MPS_DWK_BAND / pw - slack;
    int64_t band = rows_in >= span_h ? (rows_in - span_h) / g->sh + 1 : 0; /* output rows a band holds */
    band = runs && band * vp > MPS_DWK_BAND ? MPS_DWK_BAND / vp : band;
    if (band < 1)
        return false;
    float buf[MPS_DWK_BAND], acc[MPS_DWK_BAND];
    float lo = e->lo, hi = e->hi, slope = e->slope;
    int64_t inside0 = g->pl < pw ? g->pl : pw; /* padded columns before the input */
    for (int64_t oh0 = 0; oh0 < g->out_h; oh0 += band) {
        int64_t n_rows = g->out_h - oh0 < band ? g->out_h - oh0 : band;
        int64_t first = oh0 * g->sh - g->pt, count = (n_rows - 1) * g->sh + span_h;
        for (int64_t r = 0; r < count + slack; r++) { /* the band's input rows, zero-padded, then the slack */
            float *d = buf + r * pw;
            int64_t ih = first + r;
            if (ih < 0 || ih >= g->h || r >= count) {
                memset(d, 0, sizeof(float) * (size_t)pw);
                continue;
            }
            int64_t cols = g->w < pw - inside0 ? g->w : pw - inside0;
            cols = cols > 0 ? cols : 0;
            memset(d, 0, sizeof(float) * (size_t)inside0);
            memcpy(d + inside0, x + ih * g->w, sizeof(float) * (size_t)cols);
            memset(d + inside0 + cols, 0, sizeof(float) * (size_t)(pw - inside0 - cols));
        }
        /* the sums, into acc: the band as one run, or row by row */
        int64_t n = runs ? n_rows * vp : g->out_w;
        for (int64_t oh = 0; oh < (runs ? 1 : n_rows); oh++) {
            float *a = acc + oh * vp;
            for (int64_t i = 0; i < n; i++)
                a[i] = bias;
            for (int th = 0; th < g->kh; th++) {
                const float *row = buf + (oh * g->sh + th * g->dh) * pw;
                for (int tw = 0; tw < g->kw; tw++)
                    mps_dwk_tap(a, row + tw * g->dw, n, g->sw, k[th * g->kw + tw]);
            }
        }
        for (int64_t oh = 0; oh < n_rows; oh++) { /* the clamp and slope, as the tiles' stores do */
            const float *a = acc + oh * vp;
            float *yr = y + (oh0 + oh) * g->out_w;
            for (int64_t i = 0; i < g->out_w; i++) {
                float v = a[i];
                v = v < lo ? lo : v;
                v = v > hi ? hi : v;
                float sv = slope * v;
                yr[i] = v < 0 ? sv : v;
            }
        }
    }
    return true;
}

#endif
