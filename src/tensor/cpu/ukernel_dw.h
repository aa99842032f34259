/* ukernel_dw.h: depthwise planes of any window (ukernels.h's dwk), in plain
   C that each family's file includes, so that the compiler vectorizes it at
   that family's width (like ukernel_wino.h).

   A band of output rows at a time: the input rows the band reads are copied
   into a zero-padded buffer on the stack (so no tap tests the padding), then
   a step of an output row's sums at a time is the bias plus the taps, each a
   contiguous run of that buffer (stride 2: of its even or its odd floats,
   split apart), and the epilogue's activation. Narrow rows (under
   MPS_DWK_NARROW outputs) run the band's rows as one run instead. Planes
   whose band is the whole plane share the padding: each after the first
   copies only its rows in. */
#ifndef MPS_CPU_UKERNEL_DW_H
#define MPS_CPU_UKERNEL_DW_H

#include <string.h>

#include "ukernels.h"

/* Outputs a step of the sums: a multiple of every family's vector, held
   in registers across all the taps (a pass a tap over the whole run loaded
   and stored every sum kh kw times: LR-ASPP's 5x5 layers ran at a third
   of the multiply-adds' speed). At most MPS_DWK_TAPS taps. */
enum { MPS_DWK_STEP = 64, MPS_DWK_TAPS = 128 };

/* a[j] = act(bias + sum over u < taps of k[u] * x[off[u] + j]) for j < MPS_DWK_STEP.
   One loop over the taps, each reading a contiguous run, which GCC
   vectorizes with the sums in registers once unroll-and-jam is off (CMake
   turns it off for the families: it jammed pairs of taps into scalar code). */
static inline void mps_dwk_step(float *restrict a, const float *restrict x, const int64_t *restrict off,
                                const float *restrict k, int taps, float bias, const struct mps_tile_epi *e)
{
    float t[MPS_DWK_STEP], lo = e->lo, hi = e->hi, slope = e->slope;
    bool hs = e->hswish;
    for (int j = 0; j < MPS_DWK_STEP; j++)
        t[j] = bias;
    for (int u = 0; u < taps; u++) {
        const float *p = x + off[u];
        float kv = k[u];
        for (int j = 0; j < MPS_DWK_STEP; j++)
            t[j] += kv * p[j];
    }
    for (int j = 0; j < MPS_DWK_STEP; j++)
        a[j] = mps_tile_act(t[j], lo, hi, slope, hs);
}

/* Rows narrower than this go through the band as one run ("virtual" rows,
   their padding's columns computed and dropped): 14 outputs in a vector of
   16 ran in scalar code, LR-ASPP's 14x14 layers 8 times onnxruntime's time. */
enum { MPS_DWK_NARROW = 64 };

/* The band's count input rows from row first of the plane x into buf (pitch
   pw, the input's columns from inside0 on), then slack rows; with edges the
   zeros around them too (else they are there from the plane before). */
static void mps_dwk_fill(const struct mps_dwk_geom *g, const float *x, int64_t first, int64_t count, int64_t slack,
                         int64_t pw, int64_t inside0, bool edges, float *buf)
{
    int64_t cols = g->w < pw - inside0 ? g->w : pw - inside0;
    cols = cols > 0 ? cols : 0;
    for (int64_t r = 0; r < count + slack; r++) {
        float *d = buf + r * pw;
        int64_t ih = first + r;
        bool in = ih >= 0 && ih < g->h && r < count;
        if (edges && !in)
            memset(d, 0, sizeof(float) * (size_t)pw);
        if (edges && in) {
            memset(d, 0, sizeof(float) * (size_t)inside0);
            memset(d + inside0 + cols, 0, sizeof(float) * (size_t)(pw - inside0 - cols));
        }
        if (in)
            memcpy(d + inside0, x + ih * g->w, sizeof(float) * (size_t)cols);
    }
}

static bool mps_dwk(const struct mps_dwk_geom *g, const float *x, const float *k, const float *bias, float *y,
                    int64_t planes, const struct mps_tile_epi *e)
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
    int taps = g->kh * g->kw;
    if (band < 1 || taps > MPS_DWK_TAPS)
        return false;
    /* past the band: what the last step's dropped sums read (zeros) and write */
    float buf[MPS_DWK_BAND + 2 * MPS_DWK_STEP], acc[MPS_DWK_BAND + MPS_DWK_STEP];
    float split[MPS_DWK_BAND + 2 * MPS_DWK_STEP]; /* stride 2: buf's even floats, then its odd ones */
    int64_t tap[MPS_DWK_TAPS], off[MPS_DWK_TAPS];   /* each tap's offset in buf; in x2 for an output row */
    for (int th = 0; th < g->kh; th++)
        for (int tw = 0; tw < g->kw; tw++)
            tap[th * g->kw + tw] = th * g->dh * pw + tw * g->dw;
    int64_t inside0 = g->pl < pw ? g->pl : pw; /* padded columns before the input */
    bool whole = band >= g->out_h;                /* one band a plane: its padding is every plane's */
    for (int64_t p = 0; p < planes; p++, x += g->h * g->w, k += taps, y += g->out_h * g->out_w) {
        float b = bias ? bias[p] : 0.0f;
        for (int64_t oh0 = 0; oh0 < g->out_h; oh0 += band) {
            int64_t n_rows = g->out_h - oh0 < band ? g->out_h - oh0 : band;
            int64_t first = oh0 * g->sh - g->pt, count = (n_rows - 1) * g->sh + span_h;
            int64_t used = (count + slack) * pw, len = used + used % 2 + 2 * MPS_DWK_STEP;
            bool edges = !whole || p == 0;
            mps_dwk_fill(g, x, first, count, slack, pw, inside0, edges, buf);
            if (edges)
                memset(buf + used, 0, sizeof(float) * (size_t)(len - used));
            /* stride 2: buf[2 i + o] is split[(o & 1) h2 + i + o / 2], so each tap reads a run */
            int64_t h2 = len / 2;
            if (g->sw == 2)
                for (int64_t i = 0; i < h2; i++)
                    split[i] = buf[2 * i], split[h2 + i] = buf[2 * i + 1];
            const float *x2 = g->sw == 2 ? split : buf;
            /* the sums, into acc: the band as one run, or row by row */
            int64_t n = runs ? n_rows * vp : g->out_w;
            for (int64_t oh = 0; oh < (runs ? 1 : n_rows); oh++) {
                for (int u = 0; u < taps; u++) {
                    int64_t o = oh * g->sh * pw + tap[u];
                    off[u] = g->sw == 2 ? (o & 1) * h2 + o / 2 : o;
                }
                for (int64_t i = 0; i < n; i += MPS_DWK_STEP)
                    mps_dwk_step(acc + oh * vp + i, x2 + i, off, k, taps, b, e);
            }
            for (int64_t oh = 0; oh < n_rows; oh++)
                memcpy(y + (oh0 + oh) * g->out_w, acc + oh * vp, sizeof(float) * (size_t)g->out_w);
        }
    }
    return true;
}

#endif
