/* qlinear.c: the int8 products QLinearConv and QLinearMatMul (ops.def), on
   the kernel family's int8 tile (ukernels.h).

   Both are one product C[n][m] = sum over k of x[n][k] w[m][k] of unsigned
   bytes x (the input, rows n) and signed bytes w (the weights, columns m,
   packed at compile), in int32, exact. An int8 input is turned unsigned by
   adding 128 (its zero point too), uint8 weights signed by taking 128 away;
   the zero points then come in as

       sum (x - zx)(w - zw) = C - zw[m] R[n] - zx S[m] + K zx zw[m]

   with S[m] the weight column's sum (at compile) and R[n] the input row's
   (per run, only where some zw is not 0). The store takes acc (that, plus
   an int32 bias) to acc * x_scale * w_scale[m] + B[m] (an f32 bias), the
   fused Relu or Clip, then, for a quantized output, divides by y_scale,
   rounds half to even, adds y's zero point and saturates: per column one
   multiplier and one addend, as onnxruntime's requantization. A result
   differs from ONNX's (x_scale * w_scale * acc) / y_scale only by float
   rounding: by one step at a rounding tie.

   A conv of one input channel runs on the float direct conv instead
   (mps_qconv_fdirect), exactly, as the depthwise one runs on the float
   plane kernels (below).

   QLinearConv (2-D, group 1) runs the product the other way round, so
   that a tile's row is neighbouring values of one output plane and the
   store is contiguous: rows are the output channels (the weights, signed,
   k bytes a row, packed at compile), columns the output positions (the
   panels qimage.c makes). Each image is copied once into a padded channels-last buffer of unsigned
   bytes (the border holds x's zero point, so that it adds nothing), from
   which each panel of nr positions is gathered in the tile's B order; k
   runs over (tap row, tap column, channel), channels padded to four with
   zeros where there are four or more (a tap a word), packed densely below
   (one channel: 9 k for a 3x3 kernel, not 36), except three channels under
   a window of 25 taps or more, where a word a tap gathers faster than the
   bytes and the padding costs a third more products (resnet18's 7x7 stem,
   2 threads, avx512: 0.70 -> 0.60 ms; the 3x3 stems of squeezenet1_1 and
   mobilenet_v2 lose 6-9% padded, and stay dense). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "isa.h"
#include "kernels.h"
#include "pgemm.h"
#include "qlinear.h"
#include "qparams.h"

static size_t mps_qup(size_t v)
{
    return (v + 63) / 64 * 64;
}

bool mps_qlinear_fdirect(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         struct mps_conv_geom *q)
{
    if (!uk || !mps_qlinear_one_plane(g, n))
        return false;
    *q = mps_conv_geom_of(n, &g->values[n->in[0]].shape, &g->values[n->out[0]].shape);
    return mps_direct_applies(q) && !mps_conv_is_pointwise(q);
}

/* Weight w'[k][m] (signed) of the packed order: Conv's k is (tap row, tap
   column, channel as packed), zero in the padding. */
static int mps_qweight(const struct mps_graph *g, const struct mps_node *n, const struct mps_qpack *h, int64_t k,
                       int64_t m)
{
    if (!h->conv)
        return k < h->k_real ? mps_qlinear_weight(g, n, m, k) : 0;
    int64_t c = k % h->cp, tap = k / h->cp;
    if (c >= h->cin || tap >= h->kh * h->kw)
        return 0;
    return mps_qlinear_weight(g, n, m, c * h->kh * h->kw + tap);
}

/* Tap k of a depthwise (or one-channel) conv's channel m, less its zero point. */
static int mps_qdw_tap(const struct mps_graph *g, const struct mps_node *n, const struct mps_qpack *h, int64_t m,
                       int64_t k)
{
    const struct mps_value *wz = mps_qlinear_in(g, n, 5), *w = mps_qlinear_in(g, n, 3);
    int32_t z = (int32_t)mps_qlinear_at(wz, m) - (w->dtype == MPS_U8 ? 128 : 0);
    return mps_qweight(g, n, h, k, m) - z;
}

/* Whether a depthwise conv's taps go to the family's dw3 as bytes: 3x3, and
   every tap less its zero point a signed byte (int8 weights of zero point
   0, what the quantizers write, always are). */
static bool mps_qdw_bytes(const struct mps_graph *g, const struct mps_node *n, const struct mps_qpack *h)
{
    if (!h->dw || !h->q->dw3 || h->kh != 3 || h->kw != 3)
        return false;
    for (int64_t m = 0; m < h->cols; m++)
        for (int64_t k = 0; k < h->k; k++) {
            int v = mps_qdw_tap(g, n, h, m, k);
            if (v < -128 || v > 127)
                return false;
        }
    return true;
}

/* The header for node n (no arrays filled). */
static struct mps_qpack mps_qpack_head(const struct mps_graph *g, const struct mps_node *n,
                                       const struct mps_ukernels *uk)
{
    const struct mps_value *w = mps_qlinear_in(g, n, 3);
    struct mps_conv_geom q;
    bool fdirect = mps_qlinear_fdirect(g, n, uk, &q);
    struct mps_qlinear_cols c;
    mps_qlinear_columns(g, n, fdirect, &c, NULL, NULL, NULL, NULL);
    struct mps_qpack h = {.q = mps_isa_qgemm(uk),
                          .conv = n->op == MPS_OP_QLINEAR_CONV,
                          .flip = c.flip,
                          .dw = c.dw && !fdirect,
                          .fdirect = fdirect};
    if (h.dw || h.fdirect) {
        h.cin = h.cp = 1, h.kh = w->shape.dim[2], h.kw = w->shape.dim[3];
        h.cols = w->shape.dim[0], h.k = h.k_real = h.kh * h.kw;
    } else if (h.conv) {
        h.cin = w->shape.dim[1], h.kh = w->shape.dim[2], h.kw = w->shape.dim[3];
        h.cp = h.cin >= 4 || (h.cin == 3 && h.kh * h.kw >= 25) ? (h.cin + 3) / 4 * 4 : h.cin;
        h.cols = w->shape.dim[0], h.k = (h.kh * h.kw * h.cp + 3) / 4 * 4, h.k_real = h.kh * h.kw * h.cin;
        h.row_blocks = (h.cols + h.q->mr - 1) / h.q->mr;
    } else {
        h.cols = w->shape.dim[1], h.k = (w->shape.dim[0] + 3) / 4 * 4, h.k_real = w->shape.dim[0];
        h.panels = (h.cols + h.q->nr - 1) / h.q->nr;
    }
    h.zx = c.zx, h.quant = c.quant, h.out_signed = c.out_signed, h.yz = c.yz, h.rowsums = c.rowsums;
    h.dw_bytes = mps_qdw_bytes(g, n, &h);
    h.lo = c.lo, h.hi = c.hi, h.slope = c.slope;
    size_t cols = (size_t)h.cols;
    h.off_mult = mps_qup(sizeof h);
    h.off_add = h.off_mult + mps_qup(cols * 4);
    h.off_corr = h.off_add + mps_qup(cols * 4);
    h.off_zw = h.off_corr + mps_qup(cols * 4);
    h.off_req = h.off_zw + mps_qup(cols * 4);
    h.off_b = h.off_req + mps_qup(cols * sizeof(struct mps_qreq));
    h.fd_bytes = fdirect ? mps_qup(mps_direct_pack(&q, NULL, uk, NULL)) : 0;
    return h;
}

size_t mps_cpu_qlinear_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                            void *dst)
{
    struct mps_qpack h = mps_qpack_head(g, n, uk);
    size_t bytes = h.off_b + (h.fdirect ? h.fd_bytes : 0) + /* the taps after those (packed from there) */
                   (size_t)(h.dw || h.fdirect ? h.cols * h.k * 4 + (h.dw_bytes ? h.cols * 16 : 0)
                            : h.conv          ? h.row_blocks * h.q->mr * h.k * (h.q->wide_w ? 2 : 1)
                                              : h.panels * h.k * h.q->nr);
    if (!dst)
        return bytes;
    unsigned char *base = dst;
    float *mult = (float *)(base + h.off_mult), *add = (float *)(base + h.off_add);
    int32_t *corr = (int32_t *)(base + h.off_corr), *zw = (int32_t *)(base + h.off_zw);
    int8_t *b = (int8_t *)(base + h.off_b);
    struct mps_qlinear_cols c;
    mps_qlinear_columns(g, n, h.fdirect, &c, mult, add, corr, zw);
    struct mps_qreq *req = (struct mps_qreq *)(base + h.off_req);
    for (int64_t m = 0; m < h.cols; m++)
        req[m] = (struct mps_qreq){.mult = mult[m],
                                   .add = add[m],
                                   .lo = h.lo,
                                   .hi = h.hi,
                                   .slope = h.slope,
                                   .corr = (uint32_t)corr[m],
                                   .zw = (uint32_t)zw[m],
                                   .yz = h.yz,
                                   .quant = h.quant};
    float *taps = (float *)(b + h.fd_bytes);
    for (int64_t m = 0; (h.dw || h.fdirect) && m < h.cols; m++) /* the taps less their zero point, as floats */
        for (int64_t k = 0; k < h.k; k++)
            taps[m * h.k + k] = (float)mps_qdw_tap(g, n, &h, m, k);
    for (int64_t m = 0; h.dw_bytes && m < h.cols; m++) { /* and as bytes, rows of four, then -zx times their sum */
        int8_t *t = (int8_t *)(taps + h.cols * h.k) + m * 16;
        int32_t sum = 0;
        memset(t, 0, 12);
        for (int64_t k = 0; k < 9; k++)
            sum += t[k / 3 * 4 + k % 3] = (int8_t)mps_qdw_tap(g, n, &h, m, k);
        sum *= -(int32_t)h.zx;
        memcpy(t + 12, &sum, 4);
    }
    if (h.fdirect) { /* packed for the float direct conv, as a Conv of these weights */
        struct mps_conv_geom q;
        mps_qlinear_fdirect(g, n, uk, &q);
        mps_direct_pack(&q, taps, uk, b);
    }
    int nr = h.q->nr;
    int mr = h.q->mr; /* Conv: blocks of mr output channels, their rows interleaved in groups of four k */
    int16_t *wide = (int16_t *)b;
    for (int64_t blk = 0; h.conv && !h.dw && !h.fdirect && blk < h.row_blocks; blk++)
        for (int64_t grp = 0; grp < h.k / 4; grp++)
            for (int r = 0; r < mr; r++)
                for (int i = 0; i < 4; i++) {
                    int64_t m = blk * mr + r;
                    int v = m < h.cols ? mps_qweight(g, n, &h, 4 * grp + i, m) : 0;
                    if (h.q->wide_w)
                        *wide++ = (int16_t)v;
                    else
                        *b++ = (int8_t)v;
                }
    for (int64_t p = 0; p < h.panels; p++)
        for (int64_t grp = 0; grp < h.k / 4; grp++)
            for (int j = 0; j < nr; j++)
                for (int i = 0; i < 4; i++) {
                    int64_t m = p * nr + j;
                    *b++ = (int8_t)(m < h.cols ? mps_qweight(g, n, &h, 4 * grp + i, m) : 0);
                }
    memcpy(base, &h, sizeof h);
    return bytes;
}

/* One product: rows x k unsigned bytes, lda apart (QLinearMatMul). */
struct mps_qrun {
    const struct mps_qpack *h;
    int64_t rows;
    const uint8_t *a;
    int64_t lda;
    const int32_t *rowsum; /* per row, where some zw is not 0 */
    void *y;               /* row r at y + r cols elements */
};

/* A QLinearMatMul tile: rows of the output from r0 on, columns from m0;
   requantized as ukernel_q.h does, with per-column parameters (the
   parameters in locals, so that the byte stores, which may alias
   anything, leave the loop vectorizable). */
static void mps_qtile_store(const struct mps_qrun *run, int64_t r0, int rows, int64_t m0, int cols, const int32_t *t,
                            int ldt)
{
    const struct mps_qpack *h = run->h;
    const unsigned char *base = (const unsigned char *)h;
    const float *mult = (const float *)(base + h->off_mult) + m0, *add = (const float *)(base + h->off_add) + m0;
    const int32_t *corr = (const int32_t *)(base + h->off_corr) + m0, *zw = (const int32_t *)(base + h->off_zw) + m0;
    float lo = h->lo, hi = h->hi, slope = h->slope;
    int32_t yz = h->yz;
    for (int r = 0; r < rows; r++, t += ldt) {
        uint32_t rs = h->rowsums ? (uint32_t)run->rowsum[r0 + r] : 0;
        int64_t at = (r0 + r) * h->cols + m0;
        uint8_t *q = h->quant ? (uint8_t *)run->y + at : NULL;
        float *f = h->quant ? NULL : (float *)run->y + at;
        for (int j = 0; j < cols; j++) {
            float v = (float)(int32_t)((uint32_t)t[j] + (uint32_t)corr[j] - (uint32_t)zw[j] * rs) * mult[j] + add[j];
            v = v > lo ? v : lo;
            v = v < hi ? v : hi;
            if (q)
                q[j] = (uint8_t)((int32_t)((v + 12582912.0f) - 12582912.0f) + yz);
            else
                f[j] = v < 0.0f ? v * slope : v;
        }
    }
}

/* The requantization of output channel m (a conv's row of a tile). */
static const struct mps_qreq *mps_qreq_of(const struct mps_qpack *h, int64_t m)
{
    return (const struct mps_qreq *)((const unsigned char *)h + h->off_req) + m;
}

/* Tiles [begin, end) of QLinearMatMul's rows x panels grid. */
static void mps_qtiles(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qrun *run = ctx;
    const struct mps_qpack *h = run->h;
    const int8_t *b_w = (const int8_t *)((const unsigned char *)h + h->off_b);
    int mr = h->q->mr, nr = h->q->nr;
    int32_t t[8 * 32];
    for (int64_t i = begin; i < end; i++) {
        int64_t rb = i / h->panels, p = i % h->panels, r0 = rb * mr;
        int rows = run->rows - r0 < mr ? (int)(run->rows - r0) : mr;
        h->q->fn(h->k / 4, run->a + r0 * run->lda, run->lda, b_w + p * h->k * nr, t, rows);
        int cols = h->cols - p * nr < nr ? (int)(h->cols - p * nr) : nr;
        mps_qtile_store(run, r0, rows, p * nr, cols, t, nr);
    }
}

/* A QLinearConv over its images: units of one panel of nr positions and a
   run of chunk blocks of mr output channels. Each unit gathers its panel
   into its thread's buffer (L1 or L2 sized: k nr bytes) and runs its
   channel blocks' tiles on it at once, rows the output channels, columns
   the positions, each row a run of one output plane stored by the
   family's store; all of a layer's panels made first would go to memory
   and back (resnet18's 56x56 layers at batch 8: 14 MB). */
struct mps_qconv {
    const struct mps_qimage *im;
    struct mps_pool *pool;
    uint8_t *scratch;  /* per thread: a panel, then its sums */
    size_t per_thread; /* bytes */
    int64_t plane;     /* output positions an image */
    int64_t chunk;     /* channel blocks a unit */
    int64_t chunks;    /* units a panel */
    bool direct;       /* 1x1 stride 1 unpadded: panels from the planes */
    void *y;
};

static void mps_qconv_units(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qconv *c = ctx;
    const struct mps_qpack *h = c->im->h;
    const int8_t *b_w = (const int8_t *)((const unsigned char *)h + h->off_b);
    int mr = h->q->mr, nr = h->q->nr;
    int64_t wsize = h->q->wide_w ? 2 : 1, built = -1; /* bytes a packed weight; the panel in the buffer */
    size_t el = h->quant ? 1 : 4;
    uint8_t *panel = c->scratch + c->per_thread * (size_t)mps_pool_self(c->pool);
    int32_t *sums = (int32_t *)(panel + mps_qup((size_t)(h->k * nr)));
    int32_t t[8 * 32];
    for (int64_t u = begin; u < end; u++) {
        int64_t pg = u / c->chunks, q0;
        if (pg != built) {
            (c->direct ? mps_qimage_panel_1x1 : mps_qimage_panel)(c->im, pg, panel, sums);
            built = pg;
        }
        int cols = mps_qpanel_span(c->im, pg, &q0);
        int64_t b = q0 / c->plane, p0 = q0 % c->plane;
        const int32_t *rs = h->rowsums ? sums : NULL;
        int64_t rb_end =
            (u % c->chunks + 1) * c->chunk < h->row_blocks ? (u % c->chunks + 1) * c->chunk : h->row_blocks;
        for (int64_t rb = u % c->chunks * c->chunk; rb < rb_end; rb++) {
            int64_t m0 = rb * mr;
            int rows = h->cols - m0 < mr ? (int)(h->cols - m0) : mr;
            unsigned char *y = (unsigned char *)c->y + (size_t)((b * h->cols + m0) * c->plane + p0) * el;
            if (h->q->by_weights_store && p0 + cols <= c->plane) { /* the sums stay in registers */
                h->q->by_weights_store(h->k / 4, b_w + m0 * h->k * wsize, panel, mps_qreq_of(h, m0), rows, rs, cols, y,
                                       c->plane);
                continue;
            }
            h->q->by_weights(h->k / 4, b_w + m0 * h->k * wsize, panel, t);
            for (int l0 = 0, l1; l0 < cols; l0 = l1) { /* the columns of one image at a time */
                int64_t bl = (q0 + l0) / c->plane, pl = (q0 + l0) % c->plane;
                l1 = c->plane - pl < cols - l0 ? l0 + (int)(c->plane - pl) : cols;
                for (int r = 0; r < rows; r++)
                    h->q->store(t + r * nr + l0, rs ? rs + l0 : NULL, l1 - l0, mps_qreq_of(h, m0 + r),
                                (unsigned char *)c->y + (size_t)((bl * h->cols + m0 + r) * c->plane + pl) * el);
            }
        }
    }
}

/* A conv's per-thread buffer: a panel and its sums. */
static size_t mps_qconv_per_thread(const struct mps_qpack *h)
{
    return mps_qup((size_t)(h->k * h->q->nr)) + mps_qup((size_t)h->q->nr * 4);
}

/* The row sums of the product's rows [begin, end). */
static void mps_qrowsums(void *ctx, int64_t begin, int64_t end)
{
    struct mps_qrun *run = ctx;
    for (int64_t r = begin; r < end; r++) {
        const uint8_t *x = run->a + r * run->lda;
        int32_t s = 0;
        for (int64_t k = 0; k < run->h->k; k++)
            s += x[k];
        ((int32_t *)run->rowsum)[r] = s;
    }
}

/* A matrix's rows made unsigned and padded to k bytes. */
struct mps_qrows {
    const struct mps_qpack *h;
    const uint8_t *x;
    int64_t k_in;
    uint8_t *dst;
};

static void mps_qcopy_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qrows *c = ctx;
    uint8_t flip = c->h->flip ? 0x80 : 0;
    for (int64_t r = begin; r < end; r++) {
        const uint8_t *x = c->x + r * c->k_in;
        uint8_t *d = c->dst + r * c->h->k;
        for (int64_t k = 0; k < c->k_in; k++)
            d[k] = x[k] ^ flip;
        memset(d + c->k_in, 0, (size_t)(c->h->k - c->k_in));
    }
}

/* Whether the panels are read from the image's planes (1x1, stride 1, no padding). */
static bool mps_qconv_direct(const struct mps_qpack *h, const struct mps_conv_params *p)
{
    return h->kh == 1 && h->kw == 1 && p->win.stride[0] == 1 && p->win.stride[1] == 1 && !p->win.pad[0] &&
           !p->win.pad[1] && !p->win.pad[2] && !p->win.pad[3];
}

/* A depthwise QLinearConv: each plane's bytes less x's zero point as f32,
   convolved by the family's f32 kernels with the taps less theirs, which is
   exact (every product and partial sum an integer below 2^24: the pass
   takes windows of at most 258 taps), then requantized: sixteen planes at
   once on dwb where the family has it and takes the layer (as the float
   path's rule, rows under MPS_DWB_WIDE), which reads the bytes and stores
   them itself (ukernels.h's mps_dwb_q; a pass over the block's floats
   before and after had been a third of the layer: mobilenet_v2 int8 at
   batch 8, one thread, 14% of the model), else a plane at a time on dw3 or
   dwk, through a plane of floats each way. */
struct mps_qdw {
    const struct mps_cpu_args *a;
    const struct mps_qpack *h;
    struct mps_dw3_geom g3;
    struct mps_dwk_geom gk;
    bool dw3, dwk, dwb, qdw3; /* qdw3: the int8 family's dw3 on the taps as bytes (mps_qpack's dw_bytes) */
    int64_t in_plane, out_plane, per_thread; /* floats */
};

static void mps_qdw_taps(const struct mps_dwk_geom *g, const float *x, const float *k, float *y)
{
    for (int64_t oh = 0; oh < g->out_h; oh++)
        for (int64_t ow = 0; ow < g->out_w; ow++) {
            float acc = 0.0f;
            for (int th = 0; th < g->kh; th++)
                for (int tw = 0; tw < g->kw; tw++) {
                    int64_t i = oh * g->sh - g->pt + th * g->dh, j = ow * g->sw - g->pl + tw * g->dw;
                    if (i >= 0 && i < g->h && j >= 0 && j < g->w)
                        acc += k[th * g->kw + tw] * x[i * g->w + j];
                }
            y[oh * g->out_w + ow] = acc;
        }
}

/* Items [begin, end): blocks of MPS_DWB_PLANES planes on dwb, else planes
   (of all the images, channel p % cols). */
static void mps_qdw_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qdw *d = ctx;
    const struct mps_qpack *h = d->h;
    const struct mps_cpu_args *a = d->a;
    int64_t planes = d->dwb ? MPS_DWB_PLANES : 1;
    const float *taps = (const float *)((const unsigned char *)h + h->off_b);
    struct mps_tile_epi none = mps_tile_epi_none();
    const struct mps_qdeq deq = {1.0f, (float)h->zx, h->flip ? 0x80 : 0};
    size_t el = h->quant ? 1 : 4;
    for (int64_t p0 = begin * planes; p0 < end * planes; p0 += planes) {
        int64_t m0 = p0 % h->cols;
        const uint8_t *x = (const uint8_t *)a->in[0].data + p0 * d->in_plane;
        const float *k = taps + m0 * h->k;
        if (d->qdw3) { /* likewise */
            const struct mps_dwb_q q = {(float)h->zx, deq.flip, mps_qreq_of(h, m0)};
            h->q->dw3(&d->gk, x, (const int8_t *)(taps + h->cols * h->k) + m0 * 16, &q,
                      (unsigned char *)a->out[0].data + (size_t)(p0 * d->out_plane) * el);
            continue;
        }
        if (d->dwb) { /* bytes in and out (takes the layer: mps_qdw_job asked) */
            const struct mps_dwb_q q = {(float)h->zx, deq.flip, mps_qreq_of(h, m0)};
            a->uk->dwb(&d->gk, x, k, NULL, (unsigned char *)a->out[0].data + (size_t)(p0 * d->out_plane) * el, 1, &none,
                       NULL, &q);
            continue;
        }
        float *xf = (float *)a->scratch + d->per_thread * mps_pool_self(a->pool), *yf = xf + d->in_plane;
        h->q->dequantize(x, d->in_plane, &deq, xf); /* times 1: the bytes less zx */
        if (d->dw3)
            a->uk->dw3(&d->g3, xf, k, 0.0f, yf, &none);
        else if (!d->dwk || !a->uk->dwk(&d->gk, xf, k, NULL, yf, 1, &none))
            mps_qdw_taps(&d->gk, xf, k, yf);
        h->q->store_f(yf, d->out_plane, mps_qreq_of(h, m0), /* exact integers */
                      (unsigned char *)a->out[0].data + (size_t)(p0 * d->out_plane) * el);
    }
}

/* The depthwise job's geometry: input planes h x w, output planes oh x ow;
   the kernels of family uk. */
static struct mps_qdw mps_qdw_job(const struct mps_qpack *h, const struct mps_conv_params *p, int64_t ih, int64_t iw,
                                  int64_t oh, int64_t ow, const struct mps_ukernels *uk)
{
    const struct mps_window *w = &p->win;
    struct mps_qdw d = {.h = h, .in_plane = ih * iw, .out_plane = oh * ow};
    d.gk = (struct mps_dwk_geom){.h = ih,
                                 .w = iw,
                                 .pt = w->pad[0],
                                 .pl = w->pad[1],
                                 .out_h = oh,
                                 .out_w = ow,
                                 .kh = (int)h->kh,
                                 .kw = (int)h->kw,
                                 .sh = (int)w->stride[0],
                                 .sw = (int)w->stride[1],
                                 .dh = (int)w->dilation[0],
                                 .dw = (int)w->dilation[1]};
    d.g3 = (struct mps_dw3_geom){
        .h = ih, .w = iw, .pt = w->pad[0], .pl = w->pad[1], .out_h = oh, .out_w = ow, .s = (int)w->stride[1]};
    d.dw3 = h->kh == 3 && h->kw == 3 && w->dilation[0] == 1 && w->dilation[1] == 1 && w->stride[0] == w->stride[1] &&
            (w->stride[0] == 1 || w->stride[0] == 2);
    d.dwk = w->stride[1] == 1 || w->stride[1] == 2;
    struct mps_tile_epi none = mps_tile_epi_none();
    d.dwb = uk && uk->dwb && h->cols % MPS_DWB_PLANES == 0 && ow < MPS_DWB_WIDE &&
            uk->dwb(&d.gk, NULL, NULL, NULL, NULL, 0, &none, NULL, NULL); /* no blocks: whether it takes the layer */
    /* the int8 plane kernel where it has one, but for rows under ten outputs where dwb takes the layer (its
       sixteen-lane steps then half empty: mobilenet_v2's 7x7 layers 1.35x dwb's time, its 14x14 ones 0.73-0.78,
       the wider ones 0.47-0.76; one thread, batch 8) */
    d.qdw3 = h->dw_bytes && h->q->dw3(&d.gk, NULL, NULL, NULL, NULL) && (ow >= 10 || !d.dwb);
    d.dwb = d.dwb && !d.qdw3;
    d.per_thread = d.dwb || d.qdw3 ? 0 : (d.in_plane + d.out_plane + 15) / 16 * 16; /* a plane's x and sums (f32) */
    return d;
}

size_t mps_cpu_qlinear_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                               int threads)
{
    struct mps_qpack h = mps_qpack_head(g, n, uk);
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    if (!h.conv) {
        int64_t rows = mps_shape_numel(x) / (x->dim[x->ndim - 1] ? x->dim[x->ndim - 1] : 1);
        return mps_qup((size_t)(rows * h.k)) + (size_t)rows * 4;
    }
    if (h.dw)
        return (size_t)(threads < 1 ? 1 : threads) *
               (size_t)mps_qdw_job(&h, &n->p.conv, x->dim[2], x->dim[3], y->dim[2], y->dim[3], uk).per_thread * 4;
    if (h.fdirect) { /* x's floats, the sums' (pooled, where a MaxPool is fused), the direct conv's own */
        struct mps_conv_geom q;
        struct mps_maxpool_geom pg;
        mps_qlinear_fdirect(g, n, uk, &q);
        bool pooled = mps_cpu_conv_pool(g, n, uk, &pg) >= 0;
        int64_t out = pooled ? q.n * q.m * pg.out_h * pg.out_w : mps_shape_numel(y);
        return mps_qup(sizeof(float) * (size_t)mps_shape_numel(x)) + mps_qup(sizeof(float) * (size_t)out) +
               mps_direct_scratch(&q, pooled ? &pg : NULL, uk, threads) + 128; /* each aligned to 64 */
    }
    const struct mps_window *w = &n->p.conv.win;
    int64_t hp = x->dim[2] + w->pad[0] + w->pad[2], wp = x->dim[3] + w->pad[1] + w->pad[3];
    return (mps_qconv_direct(&h, &n->p.conv) ? 0 : (size_t)x->dim[0] * mps_qup((size_t)(hp * wp * h.cp)) + 64) +
           (size_t)(threads < 1 ? 1 : threads) * mps_qconv_per_thread(&h);
}

/* A one-channel QLinearConv on the float direct conv: x's bytes less zx as
   floats, convolved with the taps less theirs (every product and partial
   sum an integer below 2^24: exact in any order), pooled where a MaxPool
   of bytes is fused (mps_cpu_conv_pool: the requantization is increasing,
   so the maximum of the sums requantizes to the maximum of the bytes),
   then each plane requantized as the int8 tile's store does (store_f).
   MNIST's first layer had run on the int8 tile with k = 9 of 12, its
   store and its panels most of the time, and its MaxPool apart. */
struct mps_qfd {
    const struct mps_qpack *h;
    const float *sums;
    unsigned char *out;
    int64_t plane;
};

static void mps_qfd_store(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qfd *d = ctx;
    size_t el = d->h->quant ? 1 : 4;
    for (int64_t p = begin; p < end; p++)
        d->h->q->store_f(d->sums + p * d->plane, d->plane, mps_qreq_of(d->h, p % d->h->cols),
                         d->out + (size_t)(p * d->plane) * el);
}

static void mps_qconv_fdirect(const struct mps_cpu_args *a, const struct mps_qpack *h)
{
    const struct mps_shape *xs = &a->in[0].shape;
    const struct mps_tensor *y = a->pool_geom ? a->pool_out : &a->out[0];
    struct mps_conv_geom q = mps_conv_geom_of(a->node, xs, &a->out[0].shape);
    int64_t nx = mps_shape_numel(xs), ny = mps_shape_numel(&y->shape);
    float *xf = (float *)(((uintptr_t)a->scratch + 63) & ~(uintptr_t)63);
    float *sums = xf + mps_qup(sizeof(float) * (size_t)nx) / sizeof(float);
    const struct mps_qdeq deq = {1.0f, (float)h->zx, h->flip ? 0x80 : 0};
    h->q->dequantize(a->in[0].data, nx, &deq, xf); /* times 1: the bytes less zx */
    /* a Conv of these floats: no activation (the store's) */
    struct mps_node conv = *a->node;
    conv.op = MPS_OP_CONV, conv.p.conv.act = (struct mps_fused_act){.on = false};
    struct mps_tensor in[3] = {{.dtype = MPS_F32, .shape = *xs, .data = xf}}, out = a->out[0], pooled;
    out.dtype = MPS_F32, out.data = sums;
    struct mps_cpu_args fa = *a;
    fa.node = &conv, fa.in = in, fa.out = &out, fa.res = NULL, fa.out_stride = 0;
    fa.scratch = sums + mps_qup(sizeof(float) * (size_t)ny) / sizeof(float);
    if (a->pool_geom) {
        pooled = *a->pool_out;
        pooled.dtype = MPS_F32, pooled.data = sums;
        fa.pool_out = &pooled;
    }
    mps_direct_conv(&fa, &q, (const unsigned char *)h + h->off_b);
    struct mps_qfd d = {h, sums, y->data, ny / (q.n * q.m)};
    mps_pool_for(a->pool, q.n * q.m, d.plane * 8, mps_qfd_store, &d);
}

enum mps_status mps_cpu_qlinear(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_qpack *h = a->packed;
    if (!h) /* evaluated alone: the pass makes these nodes after constant folding */
        return mps_fail(err, MPS_ERR_RUNTIME, "node '%s' (%s): an int8 product runs only in a compiled plan",
                        a->node->name, mps_op_name(a->node->op));
    const struct mps_shape *xs = &a->in[0].shape, *ys = &a->out[0].shape;
    uint8_t *scratch = a->scratch;
    int64_t mr = h->q->mr, nr = h->q->nr;
    if (!h->conv) {
        int64_t k_in = xs->dim[xs->ndim - 1], rows = mps_shape_numel(xs) / (k_in ? k_in : 1);
        struct mps_qrun run = {.h = h, .rows = rows, .a = a->in[0].data, .lda = k_in, .y = a->out[0].data};
        if (h->flip || k_in != h->k) {
            struct mps_qrows c = {h, a->in[0].data, k_in, scratch};
            mps_pool_for(a->pool, rows, k_in * MPS_POOL_COPY_COST, mps_qcopy_rows, &c);
            run.a = scratch, run.lda = h->k;
        }
        run.rowsum = (const int32_t *)(scratch + mps_qup((size_t)(rows * h->k)));
        if (h->rowsums)
            mps_pool_for(a->pool, rows, h->k, mps_qrowsums, &run);
        mps_pool_for(a->pool, (rows + mr - 1) / mr * h->panels, mr * nr * h->k / 4, mps_qtiles, &run);
        return MPS_OK;
    }
    const struct mps_conv_params *p = &a->node->p.conv;
    if (h->fdirect) {
        mps_qconv_fdirect(a, h);
        return MPS_OK;
    }
    if (h->dw) {
        struct mps_qdw d = mps_qdw_job(h, p, xs->dim[2], xs->dim[3], ys->dim[2], ys->dim[3], a->uk);
        int64_t planes = d.dwb ? MPS_DWB_PLANES : 1;
        d.a = a;
        mps_pool_for(a->pool, xs->dim[0] * h->cols / planes, planes * d.out_plane * h->k, mps_qdw_planes, &d);
        return MPS_OK;
    }
    int64_t n = xs->dim[0], plane = ys->dim[2] * ys->dim[3], ppi = (plane + nr - 1) / nr;
    bool flat = n > 1 && 10 * (ppi * nr - plane) >= ppi * nr; /* a tenth of the lanes or more empty */
    int64_t panels = flat ? (n * plane + nr - 1) / nr : n * ppi;
    struct mps_qimage im = {.h = h,
                            .p = p,
                            .x = a->in[0].data,
                            .n = n,
                            .flat = flat,
                            .in_h = xs->dim[2],
                            .in_w = xs->dim[3],
                            .out_h = ys->dim[2],
                            .out_w = ys->dim[3],
                            .ppi = ppi,
                            .buf = scratch};
    im.hp = im.in_h + p->win.pad[0] + p->win.pad[2], im.wp = im.in_w + p->win.pad[1] + p->win.pad[3];
    struct mps_qconv c = {.im = &im,
                          .pool = a->pool,
                          .per_thread = mps_qconv_per_thread(h),
                          .plane = plane,
                          .direct = mps_qconv_direct(h, p),
                          .y = a->out[0].data};
    im.buf_stride = (int64_t)mps_qup((size_t)(im.hp * im.wp * h->cp));
    c.scratch = scratch + (c.direct ? 0 : n * im.buf_stride + 64); /* slack: qimage.c's 16-byte loads of a tap row */
    if (!c.direct)
        mps_pool_for(a->pool, n * im.hp, im.wp * h->cp * MPS_POOL_COPY_COST, mps_qimage_fill, &im);
    /* panels split into runs of channel blocks where there are too few for the threads (the 7x7 layers at batch
       1): each unit gathers its panel again, which costs about half a block's tiles, so a run has 8 blocks or more
       (on many threads, runs of 2 would gather a 7x7 layer's panel 32 times for 64 blocks) */
    int64_t want = 4 * (int64_t)mps_pool_threads(a->pool), chunks = (want + panels - 1) / panels,
            most = h->row_blocks / 8 > 1 ? h->row_blocks / 8 : 1;
    chunks = chunks < 1 ? 1 : chunks > most ? most : chunks;
    c.chunk = (h->row_blocks + chunks - 1) / chunks, c.chunks = (h->row_blocks + c.chunk - 1) / c.chunk;
    mps_pool_for(a->pool, panels * c.chunks, c.chunk * mr * nr * h->k / 4 + nr * h->k * MPS_POOL_COPY_COST / 4,
                 mps_qconv_units, &c);
    return MPS_OK;
}
