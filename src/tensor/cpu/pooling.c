/* pooling.c: MaxPool and AveragePool (1-D and 2-D: pads, strides, dilations,
   ceil_mode, count_include_pad), GlobalAveragePool and GlobalMaxPool. One
   (batch, channel) plane per parallel item. MaxUnpool. */
#include <float.h>
#include <math.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kernels.h"

struct mps_pool_job {
    const struct mps_cpu_args *a;
    struct mps_window3 w;
};

/* Taps [lo, hi) of a window at output position o along one axis that land in the
   input, and how many land in the padded input (count_include_pad). */
static void mps_pool_taps(const struct mps_window3 *w, int j, int64_t o, int64_t *lo, int64_t *hi, int64_t *padded)
{
    int64_t start = o * w->s[j] - w->pb[j];
    *lo = w->k[j];
    *hi = 0;
    *padded = 0;
    for (int64_t t = 0; t < w->k[j]; t++) {
        int64_t i = start + t * w->d[j];
        if (i >= 0 && i < w->in[j]) {
            *lo = t < *lo ? t : *lo;
            *hi = t + 1;
        }
        *padded += i >= -w->pb[j] && i < w->in[j] + w->pe[j];
    }
}

/* Outputs a pooling pass takes in one run (a stack buffer per run). */
enum { MPS_POOL_RUN = 64 };

static inline float mps_max_nan(float acc, float v)
{
    return v > acc || v != v ? v : acc; /* a NaN is taken and kept */
}

/* acc[i] = max(acc[i], r[i * S]) (or +=) over a run of outputs; S a
   constant where it matters so that the compiler vectorizes the loop. */
#define MPS_POOL_ROW(S)                                                                                                \
    do {                                                                                                               \
        if (is_max)                                                                                                    \
            for (int64_t i = 0; i < m; i++)                                                                            \
                acc[i] = mps_max_nan(acc[i], r[i * (S)]);                                                              \
        else                                                                                                           \
            for (int64_t i = 0; i < m; i++)                                                                            \
                acc[i] += r[i * (S)];                                                                                  \
    } while (0)

/* out[i] = the maximum of v[i sw .. i sw + kw) for i < n; loops the compiler
   vectorizes for the common windows. */
static void mps_max_across(const float *v, int64_t n, int64_t kw, int64_t sw, float *out)
{
    if (kw == 3 && sw == 2)
        for (int64_t i = 0; i < n; i++)
            out[i] = mps_max_nan(mps_max_nan(v[2 * i], v[2 * i + 1]), v[2 * i + 2]);
    else if (kw == 3 && sw == 1)
        for (int64_t i = 0; i < n; i++)
            out[i] = mps_max_nan(mps_max_nan(v[i], v[i + 1]), v[i + 2]);
    else if (kw == 2 && sw == 2)
        for (int64_t i = 0; i < n; i++)
            out[i] = mps_max_nan(v[2 * i], v[2 * i + 1]);
    else
        for (int64_t i = 0; i < n; i++) {
            float acc = v[i * sw];
            for (int64_t t = 1; t < kw; t++)
                acc = mps_max_nan(acc, v[i * sw + t]);
            out[i] = acc;
        }
}

/* MaxPool over a run of outputs (as mps_pool_dense_run), in two passes: the
   maximum down the window's rows for every input column the run reads (one
   contiguous pass per row), then across each window's columns. k_h + k_w
   comparisons per output instead of k_h * k_w. */
static void mps_max_separable(const float *x, const struct mps_window3 *w, int64_t od, int64_t oh, int64_t ow0,
                              int64_t n, const int64_t *taps, float *y)
{
    float v[MPS_POOL_RUN * 8 + MPS_POOL_RUN]; /* the widest span: strides up to 8, windows up to a run wide */
    int64_t kw = w->k[2], sw = w->s[2];
    for (int64_t c0 = 0; c0 < n; c0 += MPS_POOL_RUN) {
        int64_t m = n - c0 < MPS_POOL_RUN ? n - c0 : MPS_POOL_RUN, span = (m - 1) * sw + kw;
        bool first = true;
        for (int64_t td = taps[0]; td < taps[1]; td++) {
            int64_t id = od * w->s[0] - w->pb[0] + td * w->d[0];
            for (int64_t th = taps[3]; th < taps[4]; th++, first = false) {
                int64_t ih = oh * w->s[1] - w->pb[1] + th * w->d[1];
                const float *row = x + (id * w->in[1] + ih) * w->in[2] + (ow0 + c0) * sw - w->pb[2];
                for (int64_t j = 0; j < span; j++)
                    v[j] = first ? row[j] : mps_max_nan(v[j], row[j]);
            }
        }
        mps_max_across(v, m, kw, sw, y + c0);
    }
}

/* Outputs ow0 .. ow0+n of one output row whose windows lie inside the input
   along W (taps [dlo, dhi) and [hlo, hhi) along D and H): one pass over each
   window row for a run of outputs instead of one window per output. Same
   results as the general loop: the maximum (a NaN anywhere gives NaN), the
   divisor counting the same cells. */
static void mps_pool_dense_run(const float *x, const struct mps_window3 *w, bool is_max, bool include_pad, int64_t od,
                               int64_t oh, int64_t ow0, int64_t n, const int64_t *taps, float *y)
{
    float acc[MPS_POOL_RUN];
    int64_t dlo = taps[0], dhi = taps[1], dpad = taps[2], hlo = taps[3], hhi = taps[4], hpad = taps[5];
    int64_t cells = (dhi - dlo) * (hhi - hlo) * w->k[2], sw = w->s[2];
    float div = (float)(include_pad ? dpad * hpad * w->k[2] : cells);
    if (is_max && cells > 0 && w->k[2] <= MPS_POOL_RUN && sw <= 8) {
        mps_max_separable(x, w, od, oh, ow0, n, taps, y);
        return;
    }
    for (int64_t c0 = 0; c0 < n; c0 += MPS_POOL_RUN) {
        int64_t m = n - c0 < MPS_POOL_RUN ? n - c0 : MPS_POOL_RUN;
        for (int64_t i = 0; i < m; i++)
            acc[i] = is_max ? -INFINITY : 0.0f;
        for (int64_t td = dlo; td < dhi; td++) {
            int64_t id = od * w->s[0] - w->pb[0] + td * w->d[0];
            for (int64_t th = hlo; th < hhi; th++) {
                int64_t ih = oh * w->s[1] - w->pb[1] + th * w->d[1];
                const float *row = x + (id * w->in[1] + ih) * w->in[2] + (ow0 + c0) * sw - w->pb[2];
                for (int64_t tw = 0; tw < w->k[2]; tw++) {
                    const float *r = row + tw;
                    if (sw == 1)
                        MPS_POOL_ROW(1);
                    else if (sw == 2)
                        MPS_POOL_ROW(2);
                    else
                        MPS_POOL_ROW(sw);
                }
            }
        }
        for (int64_t i = 0; i < m; i++)
            y[c0 + i] = !is_max ? acc[i] / div : cells == 0 ? -FLT_MAX : acc[i];
    }
}

/* The 2x2 stride-2 MaxPool of most small CNNs, without pads, on a whole
   plane: per output row, the maximum down the two input rows (one contiguous
   pass), then across each pair; loops the compiler vectorizes, no work per row
   beyond them. */
static bool mps_max2x2_applies(const struct mps_window3 *w)
{
    bool ok = w->in[0] == 1 && w->k[0] == 1 && w->out[0] == 1;
    for (int j = 1; j < 3; j++)
        ok = ok && w->k[j] == 2 && w->s[j] == 2 && w->d[j] == 1 && w->pb[j] == 0 && 2 * w->out[j] <= w->in[j];
    return ok;
}

static void mps_max2x2_plane(const float *x, const struct mps_window3 *w, float *y)
{
    float v[2 * MPS_POOL_RUN];
    for (int64_t oh = 0; oh < w->out[1]; oh++) {
        const float *r0 = x + 2 * oh * w->in[2], *r1 = r0 + w->in[2];
        float *out = y + oh * w->out[2];
        for (int64_t c0 = 0; c0 < w->out[2]; c0 += MPS_POOL_RUN) {
            int64_t m = w->out[2] - c0 < MPS_POOL_RUN ? w->out[2] - c0 : MPS_POOL_RUN;
            for (int64_t j = 0; j < 2 * m; j++)
                v[j] = mps_max_nan(r0[2 * c0 + j], r1[2 * c0 + j]);
            for (int64_t i = 0; i < m; i++)
                out[c0 + i] = mps_max_nan(v[2 * i], v[2 * i + 1]);
        }
    }
}

/* 2-D MaxPool of a whole plane (no dilation, no argmax, every window over
   at least one input cell), row by row: the maximum down the window's input
   rows into a row padded with -inf on both sides (one contiguous pass per
   input row), then across each window's columns. The general loop's results
   (pads take no part; a NaN anywhere gives NaN) with no work per output
   beyond the comparisons: squeezenet1_1's 3x3 stride-2 layers took three
   times as long through the runs and edge cases of the general loop. */
enum { MPS_POOL_ROW_MAX = 4096 }; /* the widest padded row the plane path holds */

static bool mps_max_plane_applies(const struct mps_window3 *w)
{
    bool ok = w->in[0] == 1 && w->k[0] == 1 && w->out[0] == 1 && w->pb[0] == 0;
    for (int j = 1; j < 3; j++) /* the first window and the last reach an input cell */
        ok = ok && w->d[j] == 1 && w->k[j] > w->pb[j] && (w->out[j] - 1) * w->s[j] - w->pb[j] < w->in[j];
    return ok && (w->out[2] - 1) * w->s[2] + w->k[2] <= MPS_POOL_ROW_MAX;
}

static void mps_max_plane(const float *x, const struct mps_window3 *w, float *y)
{
    float v[MPS_POOL_ROW_MAX];
    int64_t iw = w->in[2], ow_n = w->out[2], kw = w->k[2], sw = w->s[2], pl = w->pb[2];
    int64_t span = (ow_n - 1) * sw + kw, cols = iw < span - pl ? iw : span - pl; /* input columns read */
    for (int64_t j = 0; j < pl; j++)
        v[j] = -INFINITY;
    for (int64_t j = pl + cols; j < span; j++)
        v[j] = -INFINITY;
    for (int64_t oh = 0; oh < w->out[1]; oh++, y += ow_n) {
        int64_t r0 = oh * w->s[1] - w->pb[1], r1 = r0 + w->k[1];
        r0 = r0 > 0 ? r0 : 0;
        r1 = r1 < w->in[1] ? r1 : w->in[1];
        float *vr = v + pl;
        const float *a = x + r0 * iw, *b = r1 - r0 > 1 ? a + iw : a;
        for (int64_t j = 0; j < cols; j++)
            vr[j] = mps_max_nan(a[j], b[j]);
        for (int64_t r = r0 + 2; r < r1; r++) {
            const float *row = x + r * iw;
            for (int64_t j = 0; j < cols; j++)
                vr[j] = mps_max_nan(vr[j], row[j]);
        }
        mps_max_across(v, ow_n, kw, sw, y);
    }
}

/* Whether the family's plane kernel takes a MaxPool of window w (one the
   plane path takes), and its geometry. */
static bool mps_maxpool_family(const struct mps_window3 *w, const struct mps_ukernels *uk, struct mps_maxpool_geom *g)
{
    *g = (struct mps_maxpool_geom){.h = w->in[1], .w = w->in[2], .pt = w->pb[1], .pl = w->pb[2], .out_h = w->out[1],
                                   .out_w = w->out[2], .kh = (int)w->k[1], .kw = (int)w->k[2], .sh = (int)w->s[1],
                                   .sw = (int)w->s[2]};
    return uk && uk->maxpool && (g->sw == 1 || g->sw == 2) && (g->out_w - 1) * g->sw + g->kw <= MPS_UMAXPOOL_SPAN;
}

bool mps_cpu_maxpool_plane(const struct mps_graph *g, const struct mps_node *p, const struct mps_ukernels *uk,
                           struct mps_maxpool_geom *geom)
{
    enum mps_dtype t = g->values[p->in[0]].dtype; /* bytes after a QLinearConv on floats (mps_cpu_conv_pool) */
    if (p->op != MPS_OP_MAX_POOL || p->n_out != 1 || g->values[p->in[0]].shape.ndim != 4 ||
        g->values[p->out[0]].dtype != t || (t != MPS_F32 && t != MPS_U8 && t != MPS_I8))
        return false;
    struct mps_window3 w = mps_window3_of(&p->p.pool.win, &g->values[p->in[0]].shape, &g->values[p->out[0]].shape);
    return mps_max_plane_applies(&w) && (mps_maxpool_family(&w, uk, geom) || !uk);
}

static void mps_pool_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_pool_job *q = ctx;
    const struct mps_window3 *w = &q->w;
    const struct mps_node *n = q->a->node;
    bool is_max = n->op == MPS_OP_MAX_POOL, include_pad = n->p.pool.count_include_pad;
    int64_t in_plane = w->in[0] * w->in[1] * w->in[2], out_plane = w->out[0] * w->out[1] * w->out[2];
    /* MaxPool's optional flat argmax; only a node with two outputs has that slot */
    int64_t *indices = is_max && n->n_out > 1 ? q->a->out[1].data : NULL;
    bool dense = !indices && w->d[2] == 1; /* a window row is contiguous in the input */
    bool max2x2 = is_max && !indices && mps_max2x2_applies(w), plane = is_max && !indices && mps_max_plane_applies(w);
    /* the family's kernel where it has one (full vectors, the rows' ends
       masked). On rows under 16 outputs the loops below were twice as fast
       until its row of column maxima stopped being read right after its
       stores; now it wins there too (one core: squeezenet1_1's last pool,
       256 x 27x27 -> 13x13, 0.059 -> 0.034 ms; 64 x 14x14 -> 6x6 0.0051 ->
       0.0035; 32 x 15x15 stride 1 0.0065 -> 0.0033) */
    const struct mps_ukernels *uk = q->a->uk;
    struct mps_maxpool_geom g;
    bool family = plane && mps_maxpool_family(w, uk, &g);
    for (int64_t p = begin; p < end; p++) {
        const float *x = (const float *)q->a->in[0].data + p * in_plane;
        float *y = (float *)q->a->out[0].data + p * out_plane;
        if (family) {
            uk->maxpool(&g, x, y);
            continue;
        }
        if (max2x2 || plane) { /* the 2x2 loop: 20% faster on fashion_cnn's 28x28 planes */
            if (max2x2)
                mps_max2x2_plane(x, w, y);
            else
                mps_max_plane(x, w, y);
            continue;
        }
        int64_t o = 0;
        for (int64_t od = 0; od < w->out[0]; od++) {
            int64_t dlo, dhi, dpad;
            mps_pool_taps(w, 0, od, &dlo, &dhi, &dpad);
            for (int64_t oh = 0; oh < w->out[1]; oh++) {
                int64_t hlo, hhi, hpad;
                mps_pool_taps(w, 1, oh, &hlo, &hhi, &hpad);
                /* outputs [lo, hi) have their whole window row inside the input */
                int64_t lo = (w->pb[2] + w->s[2] - 1) / w->s[2];
                int64_t hi = w->in[2] + w->pb[2] >= w->k[2] ? (w->in[2] + w->pb[2] - w->k[2]) / w->s[2] + 1 : 0;
                hi = hi < w->out[2] ? hi : w->out[2];
                const int64_t taps[6] = {dlo, dhi, dpad, hlo, hhi, hpad};
                for (int64_t ow = 0; ow < w->out[2]; ow++, o++) {
                    if (dense && ow == lo && hi > lo) {
                        mps_pool_dense_run(x, w, is_max, include_pad, od, oh, lo, hi - lo, taps, y + o);
                        o += hi - lo - 1;
                        ow = hi - 1;
                        continue;
                    }
                    int64_t wlo, whi, wpad, count = 0, arg = 0;
                    mps_pool_taps(w, 2, ow, &wlo, &whi, &wpad);
                    float acc = is_max ? -FLT_MAX : 0.0f;
                    for (int64_t td = dlo; td < dhi; td++) {
                        int64_t id = od * w->s[0] - w->pb[0] + td * w->d[0];
                        for (int64_t th = hlo; th < hhi; th++) {
                            int64_t ih = oh * w->s[1] - w->pb[1] + th * w->d[1];
                            const float *row = x + (id * w->in[1] + ih) * w->in[2];
                            for (int64_t tw = wlo; tw < whi; tw++) {
                                int64_t iw = ow * w->s[2] - w->pb[2] + tw * w->d[2];
                                float v = row[iw];
                                if (is_max && (v > acc || (v != v && acc == acc) || count == 0)) {
                                    acc = v; /* the first maximum wins; NaN propagates */
                                    arg = n->p.pool.column_major ? id + (ih + iw * w->in[1]) * w->in[0]
                                                                 : (id * w->in[1] + ih) * w->in[2] + iw;
                                } else if (!is_max) {
                                    acc += v;
                                }
                                count++;
                            }
                        }
                    }
                    if (!is_max)
                        acc /= (float)(include_pad ? dpad * hpad * wpad : count);
                    y[o] = acc;
                    if (indices)
                        indices[p * out_plane + o] = p * in_plane + arg;
                }
            }
        }
    }
}

/* MaxPool of u8 or i8 (shape.c lets no other integer in), element by
   element: each output the largest input its window covers inside the
   image (padding never wins), exact. */
static void mps_pool_ints(const struct mps_cpu_args *a, const struct mps_window3 *w)
{
    const struct mps_tensor *x = &a->in[0];
    int64_t planes = x->shape.dim[0] * x->shape.dim[1], in = w->in[0] * w->in[1] * w->in[2],
            out = w->out[0] * w->out[1] * w->out[2];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o = 0; o < out; o++) {
            int64_t od = o / (w->out[1] * w->out[2]), oh = o / w->out[2] % w->out[1], ow = o % w->out[2], best = -1;
            for (int64_t kd = 0; kd < w->k[0]; kd++)
                for (int64_t kh = 0; kh < w->k[1]; kh++)
                    for (int64_t kw = 0; kw < w->k[2]; kw++) {
                        int64_t d = od * w->s[0] - w->pb[0] + kd * w->d[0], h = oh * w->s[1] - w->pb[1] + kh * w->d[1],
                                c = ow * w->s[2] - w->pb[2] + kw * w->d[2];
                        if (d < 0 || d >= w->in[0] || h < 0 || h >= w->in[1] || c < 0 || c >= w->in[2])
                            continue;
                        int64_t at = p * in + (d * w->in[1] + h) * w->in[2] + c;
                        if (best < 0 ||
                            mps_elem_get_int(x->data, x->dtype, at) > mps_elem_get_int(x->data, x->dtype, best))
                            best = at;
                    }
            mps_elem_set_int(a->out[0].data, x->dtype, p * out + o,
                             best < 0 ? 0 : mps_elem_get_int(x->data, x->dtype, best));
            if (a->node->n_out > 1) /* Indices: the flat offset in the input */
                ((int64_t *)a->out[1].data)[p * out + o] = best < 0 ? 0 : best;
        }
}

/* One output row of a 2x2 stride-2 window inside the image: output c is
   the largest of top and bot's bytes 2c and 2c + 1 (flipped, for i8). Eight
   outputs a step, the last step moved back to end at ow (the outputs it
   repeats are the same); below eight, one step whose loads run past the
   row where sixteen bytes of bot lie before end (the next row's, unused;
   one by one, mnist_cnn int8's second MaxPool, 14x14, had taken longer
   than its floats'), else one by one. */
static void mps_pool_bytes_2x2(const uint8_t *top, const uint8_t *bot, uint8_t *y, int64_t ow, uint8_t flip,
                               const uint8_t *end)
{
    int64_t c = 0;
#if defined(__SSE2__)
    const __m128i low = _mm_set1_epi16(0xff), f = _mm_set1_epi8((char)flip);
    if (ow < 8 && bot + 16 <= end) {
        __m128i v = _mm_max_epu8(_mm_xor_si128(_mm_loadu_si128((const __m128i *)top), f),
                                 _mm_xor_si128(_mm_loadu_si128((const __m128i *)bot), f));
        v = _mm_max_epu8(_mm_and_si128(v, low), _mm_srli_epi16(v, 8));
        mps_put_bytes(y, (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(_mm_packus_epi16(v, v), f)), (int)ow);
        return;
    }
    for (int64_t at = 0; ow >= 8 && at < ow; at += 8) {
        c = at + 8 <= ow ? at : ow - 8;
        __m128i v = _mm_max_epu8(_mm_xor_si128(_mm_loadu_si128((const __m128i *)(top + 2 * c)), f),
                                 _mm_xor_si128(_mm_loadu_si128((const __m128i *)(bot + 2 * c)), f));
        v = _mm_max_epu8(_mm_and_si128(v, low), _mm_srli_epi16(v, 8)); /* each word's larger byte, low */
        _mm_storel_epi64((__m128i *)(y + c), _mm_xor_si128(_mm_packus_epi16(v, v), f));
    }
    c = ow >= 8 ? ow : 0;
#endif
    for (; c < ow; c++) {
        uint8_t a = top[2 * c] ^ flip, b = top[2 * c + 1] ^ flip, d = bot[2 * c] ^ flip, e = bot[2 * c + 1] ^ flip;
        a = a > b ? a : b, d = d > e ? d : e;
        y[c] = (uint8_t)((a > d ? a : d) ^ flip);
    }
}

/* Bytes of a thread's row of maxima: its padding, the row, and what the steps of sixteen outputs read (32 + 2
   bytes from 2 c, c up to ow rounded up to sixteen), past a step of sixteen input bytes; rounded up to 128, so
   that no two threads' rows share a cache line or its prefetched pair (they had, each row's memset and stores
   pulling the line across: squeezenet1_1 int8's first pool at batch 8 took 0.65 ms on one thread, 1.70 on
   two). */
static int64_t mps_pool_bytes_span(int64_t iw, int64_t pb, int64_t ow)
{
    int64_t words = 2 * ((ow + 15) / 16 * 16) + 2, row = pb + iw + 16;
    return (pb + (words > row ? words : row) + 16 + 127) / 128 * 128;
}

/* m's iw bytes: the maxima down rows r[0 .. n) (flipped, for i8), sixteen a step, each step's maximum in a
   register over the rows; the last few as a step of sixteen with the bytes past the row masked off (m's bytes
   past iw stay zeros), where sixteen bytes from every row's there lie before end (else one by one). Row by
   row through m, each step waited on the last row's store, and the bytes one by one had been a third of a
   128 x 55 x 55 pool's time. */
static void mps_pool_bytes_down(uint8_t *m, const uint8_t *const *r, int n, int64_t iw, uint8_t flip,
                                const uint8_t *end)
{
    int64_t j = 0;
    if (n == 0) /* no row inside the image (none where shape.c allows the window): m's zeros */
        return;
#if defined(__SSE2__)
    static const uint8_t ones[32] = {255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255};
    const __m128i f = _mm_set1_epi8((char)flip);
    const uint8_t *last = r[0];
    for (int i = 1; i < n; i++)
        last = r[i] > last ? r[i] : last;
    for (; j + 16 <= iw || (j < iw && last + j + 16 <= end); j += 16) {
        __m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[0] + j)), f);
        for (int i = 1; i < n; i++)
            v = _mm_max_epu8(v, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r[i] + j)), f));
        if (j + 16 > iw) /* the first iw - j bytes */
            v = _mm_and_si128(v, _mm_loadu_si128((const __m128i *)(ones + 16 - (iw - j))));
        _mm_storeu_si128((__m128i *)(m + j), v);
    }
#endif
    for (; j < iw; j++) {
        uint8_t v = 0;
        for (int i = 0; i < n; i++)
            v = (uint8_t)(r[i][j] ^ flip) > v ? (uint8_t)(r[i][j] ^ flip) : v;
        m[j] = v;
    }
}

/* 2-D MaxPool of bytes (u8, or i8 compared as u8 after flipping the sign
   bit), a plane an item, separably: for each output row the maxima down
   the window's rows (contiguous, vectorized), then those across its
   columns; the window clipped to the image (padding never wins), exact.
   Where the quantization pass runs a MaxPool between a DequantizeLinear
   and a QuantizeLinear on the bytes (squeezenet1_1's first: 13.7 ms
   element by element in mps_pool_ints). A 2x2 stride-2 window without
   padding reads the two rows itself (mnist_cnn int8's first MaxPool, batch 8:
   35 -> 4 us, 1 thread). */
static void mps_pool_bytes_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_pool_job *q = ctx;
    const struct mps_window3 *w = &q->w;
    int64_t ih = w->in[1], iw = w->in[2], oh = w->out[1], ow = w->out[2];
    int64_t s = w->s[2], taps = w->k[2], off[64], lo[64], hi[64], span = mps_pool_bytes_span(iw, w->pb[2], ow);
    const uint8_t *x_end = (const uint8_t *)q->a->in[0].data + mps_shape_numel(&q->a->in[0].shape);
    uint8_t flip = q->a->in[0].dtype == MPS_I8 ? 0x80 : 0,
            *mp = (uint8_t *)q->a->scratch + mps_pool_self(q->a->pool) * span, *m = mp + w->pb[2];
    bool pairs = s == 2 && w->d[2] == 1 && (taps == 2 || taps == 3); /* m's bytes from -pb on, zeros around */
    for (int64_t t = 0; t < taps; t++) { /* tap t of output o reads column o s + off[t]: inside for o in [lo, hi) */
        off[t] = t * w->d[2] - w->pb[2];
        lo[t] = off[t] < 0 ? (-off[t] + s - 1) / s : 0;
        hi[t] = iw - off[t] <= 0 ? 0 : (iw - off[t] + s - 1) / s;
        hi[t] = hi[t] < ow ? hi[t] : ow;
    }
    bool quad = pairs && taps == 2 && !w->pb[2] && w->k[1] == 2 && w->s[1] == 2 && w->d[1] == 1 && !w->pb[1] &&
                2 * oh <= ih && 2 * ow <= iw; /* 2x2, stride 2, every window inside the image */
    for (int64_t p = begin; p < end; p++) {
        const uint8_t *x = (const uint8_t *)q->a->in[0].data + p * ih * iw;
        uint8_t *y = (uint8_t *)q->a->out[0].data + p * oh * ow;
        for (int64_t o = 0; quad && o < oh; o++)
            mps_pool_bytes_2x2(x + 2 * o * iw, x + (2 * o + 1) * iw, y + o * ow, ow, flip, x_end);
        for (int64_t o = 0; !quad && o < oh; o++) {
            memset(mp, 0, (size_t)span);
            const uint8_t *rows[64];
            int inside = 0;
            for (int64_t t = 0; t < w->k[1]; t++) {
                int64_t i = o * w->s[1] - w->pb[1] + t * w->d[1];
                if (i >= 0 && i < ih)
                    rows[inside++] = x + i * iw;
            }
            mps_pool_bytes_down(m, rows, inside, iw, flip, x_end);
            uint8_t *yr = y + o * ow;
            if (pairs) { /* stride 2, 2 or 3 taps: output c is the largest byte of m's word c (and next's low) */
                int64_t c = 0;
#if defined(__SSE2__)
                const __m128i low = _mm_set1_epi16(0xff), f = _mm_set1_epi8((char)flip);
                /* sixteen words' bytes apart by masks and shifts, then packed; past the last sixteen, the
                   same step (m's zeros past the row read), its first ow - c bytes stored */
                for (; c < ow; c += 16) {
                    const __m128i *wd = (const __m128i *)(mp + 2 * c), *n = (const __m128i *)(mp + 2 * c + 2);
                    __m128i w0 = _mm_loadu_si128(wd), w1 = _mm_loadu_si128(wd + 1);
                    __m128i v = _mm_max_epu8(_mm_packus_epi16(_mm_and_si128(w0, low), _mm_and_si128(w1, low)),
                                             _mm_packus_epi16(_mm_srli_epi16(w0, 8), _mm_srli_epi16(w1, 8)));
                    if (taps == 3)
                        v = _mm_max_epu8(v, _mm_packus_epi16(_mm_and_si128(_mm_loadu_si128(n), low),
                                                             _mm_and_si128(_mm_loadu_si128(n + 1), low)));
                    v = _mm_xor_si128(v, f);
                    if (c + 16 <= ow) {
                        _mm_storeu_si128((__m128i *)(yr + c), v);
                        continue;
                    }
                    int left = (int)(ow - c);
                    if (left >= 8) {
                        _mm_storel_epi64((__m128i *)(yr + c), v);
                        v = _mm_srli_si128(v, 8);
                        left -= 8, c += 8;
                    }
                    mps_put_bytes(yr + c, (uint64_t)_mm_cvtsi128_si64(v), left);
                }
#endif
                for (; c < ow; c++) {
                    uint16_t a, b;
                    memcpy(&a, mp + 2 * c, 2), memcpy(&b, mp + 2 * c + 2, 2);
                    uint16_t l = a & 0xff, h = a >> 8, n = taps == 3 ? b & 0xff : 0, v = l > h ? l : h;
                    yr[c] = (uint8_t)((v > n ? v : n) ^ flip);
                }
                continue;
            }
            memset(yr, 0, (size_t)ow);
            for (int64_t t = 0; t < taps; t++) {
                const uint8_t *mt = m + off[t];
                for (int64_t c = lo[t]; c < hi[t]; c++)
                    yr[c] = mt[c * s] > yr[c] ? mt[c * s] : yr[c];
            }
            for (int64_t c = 0; flip && c < ow; c++)
                yr[c] ^= flip;
        }
    }
}

size_t mps_cpu_pool_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                            int threads)
{
    (void)uk;
    const struct mps_shape *x = &g->values[n->in[0]].shape;
    if (n->op != MPS_OP_MAX_POOL || g->values[n->in[0]].dtype == MPS_F32 || x->ndim != 4)
        return 0;
    const struct mps_window *w = &n->p.pool.win;
    int64_t ow = g->values[n->out[0]].shape.dim[3];
    return (size_t)(threads < 1 ? 1 : threads) * (size_t)mps_pool_bytes_span(x->dim[3], w->pad[1], ow);
}

enum mps_status mps_cpu_pool(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *x = &a->in[0].shape;
    struct mps_pool_job q = {.a = a, .w = mps_window3_of(&a->node->p.pool.win, x, &a->out[0].shape)};
    (void)err;
    if (a->in[0].dtype != MPS_F32 && a->node->n_out == 1 && x->ndim == 4 && a->scratch && q.w.k[1] <= 64 &&
        q.w.k[2] <= 64) {
        /* a window of every output holds at least one input (shape.c), so no row of maxima stays empty */
        mps_pool_for(a->pool, x->dim[0] * x->dim[1], q.w.out[1] * q.w.out[2] * (q.w.k[1] + q.w.k[2]),
                     mps_pool_bytes_planes, &q);
        return MPS_OK;
    }
    if (a->in[0].dtype != MPS_F32) {
        mps_pool_ints(a, &q.w);
        return MPS_OK;
    }
    mps_pool_for(a->pool, x->dim[0] * x->dim[1], q.w.out[0] * q.w.out[1] * q.w.out[2] * q.w.k[0] * q.w.k[1] * q.w.k[2],
                 mps_pool_planes, &q);
    return MPS_OK;
}

struct mps_global_job {
    const struct mps_cpu_args *a;
    int64_t plane;
};

double mps_cpu_sum_run(double s, const float *x, int64_t n)
{
    float part[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            part[j] += x[i + j];
    for (; i < n; i++)
        part[0] += x[i];
    for (int j = 0; j < 16; j++)
        s += part[j];
    return s;
}

static void mps_global_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_global_job *q = ctx;
    bool is_max = q->a->node->op == MPS_OP_GLOBAL_MAX_POOL;
    const float *x = q->a->in[0].data;
    float *y = q->a->out[0].data;
    for (int64_t p = begin; p < end; p++) {
        const float *xp = x + p * q->plane;
        if (is_max) {
            float m = -FLT_MAX;
            for (int64_t i = 0; i < q->plane; i++)
                m = mps_max_nan(m, xp[i]);
            y[p] = m;
        } else if (q->a->node->op == MPS_OP_GLOBAL_LP_POOL) { /* (sum |x|^p)^(1/p), in double */
            double s = 0, lp = q->a->node->p.act.alpha;
            for (int64_t i = 0; i < q->plane; i++)
                s += lp == 2 ? (double)xp[i] * xp[i] : pow(fabs(xp[i]), lp);
            y[p] = (float)(lp == 2 ? sqrt(s) : pow(s, 1.0 / lp));
        } else { /* runs of 256 (mps_cpu_sum_run) */
            double s = 0;
            for (int64_t i0 = 0; i0 < q->plane; i0 += 256)
                s = mps_cpu_sum_run(s, xp + i0, q->plane - i0 < 256 ? q->plane - i0 : 256);
            y[p] = (float)(s / (double)q->plane);
        }
    }
}

/* MaxUnpool (op.h): zeros, then each X value at its index, unravelled in
   the window's output shape and ravelled in the one given. */
enum mps_status mps_cpu_unpool(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *ix = &a->in[1];
    struct mps_tensor *y = &a->out[0];
    const struct mps_window *w = &a->node->p.pool.win;
    int nd = x->shape.ndim, sp = nd - 2;
    struct mps_shape made = x->shape; /* the window's output shape, the indices' frame */
    for (int i = 0; i < sp; i++)
        made.dim[2 + i] = (x->shape.dim[2 + i] - 1) * w->stride[i] + w->kernel[i] - w->pad[i] - w->pad[sp + i];
    int64_t total = mps_shape_numel(&made), count = mps_shape_numel(&x->shape);
    const int64_t *idx = ix->data;
    memset(y->data, 0, mps_tensor_bytes(y));
    for (int64_t k = 0; k < count; k++) {
        int64_t v = idx[k], at = 0, rem = v;
        if (v < 0 || v >= total)
            return mps_fail(err, MPS_ERR_INPUT,
                            "node '%s' (MaxUnpool): index %lld is outside the %lld elements of "
                            "its output",
                            a->node->name, (long long)v, (long long)total);
        int64_t coord[MPS_MAX_DIMS];
        for (int d = nd - 1; d >= 0; d--)
            coord[d] = rem % made.dim[d], rem /= made.dim[d];
        for (int d = 0; d < nd; d++)
            at = at * y->shape.dim[d] + coord[d];
        ((float *)y->data)[at] = ((const float *)x->data)[k];
    }
    return MPS_OK;
}

enum mps_status mps_cpu_global_pool(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *x = &a->in[0].shape;
    struct mps_global_job q = {.a = a, .plane = 1};
    for (int i = 2; i < x->ndim; i++)
        q.plane *= x->dim[i];
    (void)err;
    mps_pool_for(a->pool, x->dim[0] * x->dim[1], q.plane, mps_global_planes, &q);
    return MPS_OK;
}
