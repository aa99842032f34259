/* conv.c: Conv (1-D, 2-D and 3-D; groups, dilations, pads). With constant
   weights (a trained layer), the weights are packed at compile and the
   convolution runs on the micro-kernels as W [out channels x in channels *
   taps] times B, the im2col matrix: 2-D and 1-D layers as the direct
   convolution (conv_direct.c), whose tile reads B in place from a
   zero-padded copy of the input (or the input itself); 3-D ones, and
   pointwise ones on planes narrower than a tile, on the blocked GEMM
   (pgemm.h), whose packer builds B a cache-sized block at a time (no im2col
   in memory): for stride 1 from a zero-padded copy of the input, else from
   the input itself. 3x3 stride-1 layers run as Winograd (winograd.c) where
   it wins (mps_winograd_cpu_applies); depthwise ones on the family's plane
   kernels (3x3: dw3, other 2-D windows: dwk; ukernels.h; conv_depthwise.c). Run-time
   weights: im2col + sgemm. ConvTranspose is conv_transpose.c. Every rank
   runs as 3-D: missing leading spatial dims have size 1. */
#include <string.h>

#include "blas.h"
#include "conv.h"
#include "pgemm.h"

struct mps_conv_geom mps_conv_geom_of(const struct mps_node *node, const struct mps_shape *x, const struct mps_shape *y)
{
    struct mps_conv_geom q = {.n = x->dim[0],
                              .c = x->dim[1],
                              .m = y->dim[1],
                              .g = node->p.conv.group,
                              .w = mps_window3_of(&node->p.conv.win, x, y)};
    q.in_plane = q.w.in[0] * q.w.in[1] * q.w.in[2];
    q.out_plane = q.w.out[0] * q.w.out[1] * q.w.out[2];
    q.taps = q.w.k[0] * q.w.k[1] * q.w.k[2];
    return q;
}

bool mps_conv_is_pointwise(const struct mps_conv_geom *q)
{
    for (int j = 0; j < 3; j++)
        if (q->w.k[j] != 1 || q->w.s[j] != 1 || q->w.pb[j] != 0 || q->w.in[j] != q->w.out[j])
            return false;
    return true;
}

/* Images and groups whose products run as one job (pgemm.h's batch). */
enum { MPS_CONV_BATCH = MPS_PGEMM_PREPACK_MAX };

/* A packed convolution of stride 1 (not 1x1) reads its im2col from a
   zero-padded copy of each image and group's input: every panel row is then
   a few runs copied whole from one plane, with no padding to test. The
   copies of one job's items share at most MPS_CONV_PADDED_BYTES (or hold one
   item); MPS_CONV_SLACK floats follow each item, as a panel row copied whole
   may read past the last plane. */
enum { MPS_CONV_PADDED_BYTES = 8 << 20, MPS_CONV_SLACK = 64 };

static bool mps_conv_reads_padded(const struct mps_conv_geom *q)
{
    return q->w.s[0] == 1 && q->w.s[1] == 1 && q->w.s[2] == 1 && !mps_conv_is_pointwise(q);
}

/* Sizes of the padded planes (stride 1: output + (kernel - 1) * dilation, the
   input with both pads) and floats of one item's copy, a multiple of 16. */
static int64_t mps_conv_padded(const struct mps_conv_geom *q, int64_t dims[3])
{
    for (int j = 0; j < 3; j++)
        dims[j] = q->w.out[j] + (q->w.k[j] - 1) * q->w.d[j];
    return (q->c / q->g * dims[0] * dims[1] * dims[2] + MPS_CONV_SLACK + 15) / 16 * 16;
}

/* Items (images x groups) of one job of the packed path. */
static int64_t mps_conv_chunk(const struct mps_conv_geom *q)
{
    int64_t count = q->n * q->g < MPS_CONV_BATCH ? q->n * q->g : MPS_CONV_BATCH;
    if (mps_conv_reads_padded(q)) {
        int64_t dims[3], fit = MPS_CONV_PADDED_BYTES / (int64_t)sizeof(float) / mps_conv_padded(q, dims);
        count = count < fit ? count : fit > 1 ? fit : 1;
    }
    return count;
}

/* How a Conv node runs, decided from the graph at compile. */
enum mps_conv_path {
    MPS_CONV_DEPTHWISE, /* one input channel a group: direct */
    MPS_CONV_WINOGRAD,  /* constant 3x3 stride-1 weights, enough channels and tiles (winograd.c) */
    MPS_CONV_DIRECT,    /* constant weights, 2-D: direct, on the family's conv tile (conv_direct.c) */
    MPS_CONV_PACKED,    /* constant weights: packed, on the micro-kernels */
    MPS_CONV_BLAS,      /* run-time weights (or a node evaluated alone): im2col and sgemm */
};

/* uk NULL: evaluated alone (constant folding), nothing packed. */
static enum mps_conv_path mps_conv_path_of(const struct mps_graph *g, const struct mps_node *n,
                                           const struct mps_conv_geom *q, const struct mps_ukernels *uk)
{
    const struct mps_value *w = &g->values[n->in[1]];
    /* one input channel a group: direct, unless the weights are constant and each
       group has several outputs (a first layer on gray images: a GEMM of k = taps) */
    if (q->c / q->g == 1 && !mps_conv_is_pointwise(q) && !(w->data && q->m / q->g > 1 && w->dtype == MPS_F32))
        return MPS_CONV_DEPTHWISE;
    if (!uk || !w->data || w->dtype != MPS_F32)
        return MPS_CONV_BLAS;
    if (mps_winograd_cpu_applies(g, n, uk))
        return MPS_CONV_WINOGRAD;
    return mps_direct_applies(q) ? MPS_CONV_DIRECT : MPS_CONV_PACKED;
}

size_t mps_cpu_conv_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                            int threads)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    struct mps_conv_geom q = mps_conv_geom_of(n, x, y);
    if (n->op == MPS_OP_CONV_TRANSPOSE)
        return (size_t)(q.m / q.g * q.taps * q.in_plane) * sizeof(float);
    switch (mps_conv_path_of(g, n, &q, uk)) {
    case MPS_CONV_WINOGRAD: return mps_winograd_scratch(g, n, uk, threads);
    case MPS_CONV_DIRECT: {
        struct mps_maxpool_geom pg;
        return mps_direct_scratch(&q, mps_cpu_conv_pool(g, n, uk, &pg) >= 0 ? &pg : NULL, uk, threads);
    }
    case MPS_CONV_PACKED: {
        int64_t count = mps_conv_chunk(&q), dims[3];
        size_t shared = (mps_pgemm_shared_bytes(count, q.m / q.g, q.out_plane, q.c / q.g * q.taps) + 63) / 64 * 64;
        return shared + (mps_conv_reads_padded(&q) ? sizeof(float) * (size_t)(count * mps_conv_padded(&q, dims)) + 64 : 0);
    }
    case MPS_CONV_BLAS: return mps_conv_is_pointwise(&q) ? 0 : (size_t)(q.c / q.g * q.taps * q.out_plane) * sizeof(float);
    default: return 0;
    }
}

/* How the Conv node n runs with uk, its geometry to *q. */
static enum mps_conv_path mps_conv_node_path(const struct mps_graph *g, const struct mps_node *n,
                                             const struct mps_ukernels *uk, struct mps_conv_geom *q)
{
    *q = mps_conv_geom_of(n, &g->values[n->in[0]].shape, &g->values[n->out[0]].shape);
    return mps_conv_path_of(g, n, q, uk);
}

bool mps_cpu_conv_takes_residual(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk)
{
    struct mps_conv_geom q;
    if (n->op != MPS_OP_CONV)
        return false;
    enum mps_conv_path path = mps_conv_node_path(g, n, uk, &q);
    return path == MPS_CONV_WINOGRAD || path == MPS_CONV_DIRECT || path == MPS_CONV_PACKED;
}

bool mps_cpu_conv_strided(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk)
{
    struct mps_conv_geom q;
    if (n->op != MPS_OP_CONV || !uk)
        return false;
    enum mps_conv_path path = mps_conv_node_path(g, n, uk, &q);
    return path == MPS_CONV_DIRECT || path == MPS_CONV_WINOGRAD;
}

int mps_cpu_conv_pool(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                      struct mps_maxpool_geom *geom)
{
    int only = -1;
    struct mps_conv_geom q;
    if ((n->op != MPS_OP_CONV && n->op != MPS_OP_QLINEAR_CONV) || !uk || mps_graph_uses(g, n->out[0], &only) != 1 ||
        only < 0)
        return -1;
    /* one channel on the direct conv, its sums pooled before they are requantized: where that is increasing
       (a LeakyRelu's slope might not be) */
    if (n->op == MPS_OP_QLINEAR_CONV)
        return mps_qlinear_fdirect(g, n, uk, &q) && !(n->p.conv.act.on && n->p.conv.act.op == MPS_OP_LEAKY_RELU) &&
                       mps_cpu_maxpool_plane(g, &g->nodes[only], uk, geom) &&
                       !(geom->kh == 2 && geom->kw == 2 && !uk->pconv)
                   ? only
                   : -1;
    struct mps_tile_epi e;
    enum mps_conv_path path = mps_conv_node_path(g, n, uk, &q);
    if (!mps_pgemm_act_epi(&n->p.conv.act, &e))
        return -1;
    /* Winograd's tiles are the windows of a 2x2 stride-2 pool: its output transform pools them */
    if (path == MPS_CONV_WINOGRAD)
        return mps_cpu_maxpool_plane(g, &g->nodes[only], NULL, geom) && mps_winograd_pools(g, n, geom) ? only : -1;
    if (path != MPS_CONV_DIRECT || q.g != 1 || mps_conv_is_pointwise(&q) ||
        !mps_cpu_maxpool_plane(g, &g->nodes[only], uk, geom))
        return -1;
    /* 2x2 windows only with the pooled tile (pconv): through the bands, avx2's
       took longer than the Conv and its pool apart (mnist_cnn's first layer at
       batch 8, one thread, 0.095 -> 0.112 ms) */
    if (geom->kh == 2 && geom->kw == 2 && !uk->pconv)
        return -1;
    /* windows that overlap down the rows too (the stems' 3x3 stride 2), each
       band taking the rows it shares with the one before from it: squeezenet1_1's
       and resnet18's stems and pools alone, 2 threads, fused against apart,
       batch 8 2.52 -> 1.30 ms and 6.00 -> 4.75 (25 MB no longer goes to memory
       and back), batch 4 0.93 and 0.91, batch 1 1.02 (an image's 3.2 MB stays
       in the last-level cache; 0.65 in a phase of this VM where that cache is
       shared with a busy neighbour), the models at batch 1 even */
    return only;
}

const struct mps_fused_act *mps_cpu_conv_act(const struct mps_cpu_args *a)
{
    return a->res ? a->res_act : &a->node->p.conv.act;
}

/* What a packed convolution keeps: which path, then (64 bytes on) its data:
   Winograd's transformed weights, or each group's W packed as A. */
struct mps_conv_packed {
    enum mps_conv_path path;
};
enum { MPS_CONV_HEADER = 64 };

size_t mps_cpu_conv_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         void *dst)
{
    if (n->op != MPS_OP_CONV)
        return 0;
    struct mps_conv_geom q = mps_conv_geom_of(n, &g->values[n->in[0]].shape, &g->values[n->out[0]].shape);
    enum mps_conv_path path = mps_conv_path_of(g, n, &q, uk);
    unsigned char *data = dst ? (unsigned char *)dst + MPS_CONV_HEADER : NULL;
    size_t bytes;
    if (path == MPS_CONV_WINOGRAD) {
        bytes = mps_winograd_pack(g, n, uk, data);
    } else if (path == MPS_CONV_DIRECT) {
        bytes = mps_direct_pack(&q, g->values[n->in[1]].data, uk, data);
    } else if (path == MPS_CONV_PACKED) {
        int64_t mg = q.m / q.g, kdim = q.c / q.g * q.taps;
        size_t per = mps_pgemm_packed_bytes(uk, mg, kdim, true);
        bytes = per * (size_t)q.g;
        for (int64_t gi = 0; data && gi < q.g; gi++)
            mps_pgemm_pack(uk, (const float *)g->values[n->in[1]].data + gi * mg * kdim, kdim, 1, mg, kdim, true,
                           (float *)(data + per * (size_t)gi));
    } else {
        return 0;
    }
    if (dst)
        *(struct mps_conv_packed *)dst = (struct mps_conv_packed){path};
    return MPS_CONV_HEADER + bytes;
}

/* col[(c*taps + tap)][out position] = x[c][input position of that tap], or 0 in the padding.
   Along W the outputs a tap reaches are one range (mps_conv_valid): zeros
   before and after it and a plain (or strided) copy inside, no test per element. */
static void mps_conv_im2col_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    int64_t ow_n = q->w.out[2], sw = q->w.s[2];
    for (int64_t r = begin; r < end; r++) {
        int64_t c = r / q->taps, t = r % q->taps;
        int64_t tw = t % q->w.k[2], th = t / q->w.k[2] % q->w.k[1], td = t / (q->w.k[1] * q->w.k[2]);
        int64_t wlo, whi;
        mps_conv_valid(&q->w, 2, tw, &wlo, &whi);
        wlo = wlo < ow_n ? wlo : ow_n;
        whi = whi > wlo ? whi : wlo;
        const float *xc = jb->x + c * q->in_plane;
        float *dst = jb->col + r * q->out_plane;
        for (int64_t od = 0; od < q->w.out[0]; od++) {
            int64_t id = mps_conv_src(q, 0, od, td);
            for (int64_t oh = 0; oh < q->w.out[1]; oh++) {
                int64_t ih = id < 0 ? -1 : mps_conv_src(q, 1, oh, th);
                float *d = dst + (od * q->w.out[1] + oh) * ow_n;
                if (ih < 0) {
                    memset(d, 0, sizeof(float) * (size_t)ow_n);
                    continue;
                }
                /* input column of output ow: ow * sw + xoff */
                const float *xr = xc + (id * q->w.in[1] + ih) * q->w.in[2] - q->w.pb[2] + tw * q->w.d[2];
                memset(d, 0, sizeof(float) * (size_t)wlo);
                if (sw == 1)
                    memcpy(d + wlo, xr + wlo, sizeof(float) * (size_t)(whi - wlo));
                else
                    for (int64_t ow = wlo; ow < whi; ow++)
                        d[ow] = xr[ow * sw];
                memset(d + whi, 0, sizeof(float) * (size_t)(ow_n - whi));
            }
        }
    }
}

/* Rows [begin, end) of a GEMM's output plane by plane: the bias, then the activation. */
static void mps_conv_epilogue_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    int64_t plane = jb->q->out_plane;
    for (int64_t m = begin; m < end; m++) {
        float *y = jb->y + m * plane;
        if (jb->bias)
            for (int64_t i = 0; i < plane; i++)
                y[i] += jb->bias[m];
        mps_cpu_act_inplace(jb->act, y, plane);
    }
}

/* The im2col matrix of one image and group, as the B operand of W B. */
struct mps_conv_im2col {
    const struct mps_conv_geom *q;
    const float *x; /* the group's first input channel of the image, or its padded copy */
    int64_t dims[3], plane; /* the padded copy's planes (mps_conv_padded) */
};

/* The padded copies of a job's items: rows [begin, end) (item * channels + channel). */
struct mps_conv_padding {
    const struct mps_conv_geom *q;
    const float *x; /* the first item's image */
    float *dst;     /* the first item's copy */
    int64_t first, item_floats, dims[3];
};

static void mps_conv_pad_channels(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_padding *pd = ctx;
    const struct mps_conv_geom *q = pd->q;
    const struct mps_window3 *w = &q->w;
    int64_t cg = q->c / q->g, plane = pd->dims[0] * pd->dims[1] * pd->dims[2];
    int64_t inside = w->in[2] < pd->dims[2] - w->pb[2] ? w->in[2] : pd->dims[2] - w->pb[2];
    inside = inside > 0 ? inside : 0;
    for (int64_t r = begin; r < end; r++) {
        int64_t i = r / cg, c = r % cg, bi = (pd->first + i) / q->g, gi = (pd->first + i) % q->g;
        const float *xc = pd->x + ((bi - pd->first / q->g) * q->c + gi * cg + c) * q->in_plane;
        float *dc = pd->dst + i * pd->item_floats + c * plane;
        for (int64_t z = 0; z < pd->dims[0]; z++)
            for (int64_t y = 0; y < pd->dims[1]; y++) {
                float *d = dc + (z * pd->dims[1] + y) * pd->dims[2];
                int64_t iz = z - w->pb[0], iy = y - w->pb[1];
                if (iz < 0 || iz >= w->in[0] || iy < 0 || iy >= w->in[1]) {
                    memset(d, 0, sizeof(float) * (size_t)pd->dims[2]);
                    continue;
                }
                memset(d, 0, sizeof(float) * (size_t)w->pb[2]);
                memcpy(d + w->pb[2], xc + (iz * w->in[1] + iy) * w->in[2], sizeof(float) * (size_t)inside);
                memset(d + w->pb[2] + inside, 0, sizeof(float) * (size_t)(pd->dims[2] - w->pb[2] - inside));
            }
        if (c == cg - 1) /* what a panel row copied whole may read past the last plane */
            memset(dc + plane, 0, sizeof(float) * (size_t)(pd->item_floats - cg * plane));
    }
}

/* One row of a panel of w floats, copied whole (the sizes the families use inline). */
static inline void mps_conv_copy_row(float *d, const float *s, int w)
{
    switch (w) {
    case 8: memcpy(d, s, 8 * sizeof(float)); break;
    case 16: memcpy(d, s, 16 * sizeof(float)); break;
    case 32: memcpy(d, s, 32 * sizeof(float)); break;
    default: memcpy(d, s, sizeof(float) * (size_t)w);
    }
}

enum { MPS_CONV_RUNS = 64 }; /* the widest panel a family packs, and more */

/* mps_conv_pack_im2col for stride 1 from the padded copy: the panel's
   outputs fall in runs along output rows, each of which reads one run of a
   padded row (shifted by the tap); every panel row copies each run as a
   whole row of w floats, in order, each overwriting the previous one's
   overhang, except the block's last row and a panel past the end of the
   plane, which copy exactly. */
static void mps_conv_pack_padded(const void *ctx, int64_t i0, int64_t ni, int64_t k0, int64_t kc, int w, float *dst)
{
    const struct mps_conv_im2col *s = ctx;
    const struct mps_conv_geom *q = s->q;
    const struct mps_window3 *win = &q->w;
    int64_t ow_n = win->out[2], oh_n = win->out[1];
    int64_t at[MPS_CONV_RUNS + 1], from[MPS_CONV_RUNS];
    for (int64_t p0 = i0; p0 < i0 + ni; p0 += w, dst += kc * w) {
        int64_t valid = q->out_plane - p0 < w ? q->out_plane - p0 : w, runs = 0;
        valid = valid > 0 ? valid : 0;
        for (int64_t j = 0; j < valid; runs++) {
            int64_t p = p0 + j, ow = p % ow_n, row = p / ow_n;
            at[runs] = j;
            from[runs] = ((row / oh_n) * s->dims[1] + row % oh_n) * s->dims[2] + ow;
            j += valid - j < ow_n - ow ? valid - j : ow_n - ow;
        }
        at[runs] = valid;
        bool last = p0 + w >= i0 + ni;
        /* row k0 + kk of the im2col: channel c, tap (td, th, tw), stepped without a division */
        int64_t c = k0 / q->taps, t = k0 % q->taps;
        int64_t tw = t % win->k[2], th = t / win->k[2] % win->k[1], td = t / (win->k[1] * win->k[2]);
        for (int64_t kk = 0; kk < kc; kk++) {
            const float *xr = s->x + c * s->plane + (td * win->d[0] * s->dims[1] + th * win->d[1]) * s->dims[2] +
                              tw * win->d[2];
            if (++tw == win->k[2]) {
                tw = 0;
                if (++th == win->k[1]) {
                    th = 0;
                    if (++td == win->k[0])
                        td = 0, c++;
                }
            }
            float *d = dst + kk * w;
            if (valid == w && !(last && kk == kc - 1)) {
                for (int64_t u = 0; u < runs; u++)
                    mps_conv_copy_row(d + at[u], xr + from[u], w);
                continue;
            }
            for (int64_t u = 0; u < runs; u++)
                memcpy(d + at[u], xr + from[u], sizeof(float) * (size_t)(at[u + 1] - at[u]));
            memset(d + valid, 0, sizeof(float) * (size_t)(w - valid));
        }
    }
}

/* Packs output positions [i0, i0 + ni) (B's columns) and rows [k0, k0 + kc) of
   the im2col matrix (row = input channel * taps + tap) into panels of w, from
   the input: each panel row is made of runs of outputs along one output row,
   each a run of zeros (padding), a copy (or a strided gather) and zeros. */
static void mps_conv_pack_im2col(const void *ctx, int64_t i0, int64_t ni, int64_t k0, int64_t kc, int w, float *dst)
{
    const struct mps_conv_im2col *s = ctx;
    const struct mps_conv_geom *q = s->q;
    int64_t ow_n = q->w.out[2], oh_n = q->w.out[1], sw = q->w.s[2];
    for (int64_t p0 = i0; p0 < i0 + ni; p0 += w, dst += kc * w)
        for (int64_t kk = 0; kk < kc; kk++) {
            int64_t r = k0 + kk, c = r / q->taps, t = r % q->taps;
            int64_t tw = t % q->w.k[2], th = t / q->w.k[2] % q->w.k[1], td = t / (q->w.k[1] * q->w.k[2]);
            int64_t lo, hi;
            mps_conv_valid(&q->w, 2, tw, &lo, &hi);
            const float *xc = s->x + c * q->in_plane;
            float *d = dst + kk * w;
            for (int64_t j = 0; j < w;) {
                int64_t p = p0 + j;
                if (p >= q->out_plane) {
                    memset(d + j, 0, sizeof(float) * (size_t)(w - j));
                    break;
                }
                int64_t ow = p % ow_n, row = p / ow_n, oh = row % oh_n, od = row / oh_n;
                int64_t len = w - j < ow_n - ow ? w - j : ow_n - ow;
                len = len < q->out_plane - p ? len : q->out_plane - p;
                int64_t id = mps_conv_src(q, 0, od, td), ih = id < 0 ? -1 : mps_conv_src(q, 1, oh, th);
                /* outputs [a, b) of this run read inside the input row */
                int64_t a = ih < 0 ? ow + len : lo > ow ? (lo < ow + len ? lo : ow + len) : ow;
                int64_t b = ih < 0 ? ow + len : hi < ow + len ? (hi > a ? hi : a) : ow + len;
                memset(d + j, 0, sizeof(float) * (size_t)(a - ow));
                if (b > a) {
                    const float *xr = xc + (id * q->w.in[1] + ih) * q->w.in[2] - q->w.pb[2] + tw * q->w.d[2];
                    if (sw == 1)
                        memcpy(d + j + (a - ow), xr + a, sizeof(float) * (size_t)(b - a));
                    else
                        for (int64_t o = a; o < b; o++)
                            d[j + (o - ow)] = xr[o * sw];
                }
                memset(d + j + (b - ow), 0, sizeof(float) * (size_t)(ow + len - b));
                j += len;
            }
        }
}

/* A convolution whose weights were packed at compile: for each image and
   group, Y = act(W B + bias) on the micro-kernels, B the im2col matrix built
   by mps_conv_pack_im2col (or, for a 1x1 stride-1 layer, the input itself);
   the products of up to MPS_CONV_BATCH images and groups in one job. */
static void mps_conv_packed_run(const struct mps_cpu_args *a, const struct mps_conv_geom *q)
{
    const struct mps_tensor *x = &a->in[0], *b = &a->in[2];
    const struct mps_fused_act *act = mps_cpu_conv_act(a);
    int64_t cg = q->c / q->g, mg = q->m / q->g, kdim = cg * q->taps, total = q->n * q->g, chunk = mps_conv_chunk(q);
    size_t per = mps_pgemm_packed_bytes(a->uk, mg, kdim, true);
    struct mps_tile_epi e = mps_tile_epi_none();
    bool inline_act = mps_pgemm_act_epi(act, &e), padded = mps_conv_reads_padded(q);
    e.ldr = q->out_plane; /* a residual: each item's C is a block of planes, as the output's */
    size_t shared = (mps_pgemm_shared_bytes(chunk, mg, q->out_plane, kdim) + 63) / 64 * 64;
    struct mps_conv_padding pd = {.q = q, .dst = (float *)(((uintptr_t)a->scratch + shared + 63) & ~(uintptr_t)63)};
    pd.item_floats = mps_conv_padded(q, pd.dims);
    struct mps_conv_im2col im[MPS_CONV_BATCH];
    struct mps_pgemm_strided rows[MPS_CONV_BATCH];
    struct mps_pgemm_item items[MPS_CONV_BATCH];
    for (int64_t first = 0; first < total; first += chunk) {
        int64_t count = total - first < chunk ? total - first : chunk;
        if (padded) {
            pd.first = first;
            pd.x = (const float *)x->data + first / q->g * q->c * q->in_plane;
            mps_pool_for(a->pool, count * cg, MPS_POOL_COPY_COST * pd.item_floats / cg, mps_conv_pad_channels,
                         &pd);
        }
        for (int64_t i = 0; i < count; i++) {
            int64_t bi = (first + i) / q->g, gi = (first + i) % q->g;
            const float *xg = (const float *)x->data + (bi * q->c + gi * cg) * q->in_plane;
            im[i] = (struct mps_conv_im2col){.q = q, .x = xg};
            if (padded) {
                im[i].x = pd.dst + i * pd.item_floats;
                memcpy(im[i].dims, pd.dims, sizeof pd.dims);
                im[i].plane = pd.dims[0] * pd.dims[1] * pd.dims[2];
            }
            rows[i] = (struct mps_pgemm_strided){xg, 1, q->in_plane, q->out_plane};
            items[i] = (struct mps_pgemm_item){
                .a = {.packed = (const float *)((const unsigned char *)a->packed + MPS_CONV_HEADER + per * (size_t)gi)},
                .b = mps_conv_is_pointwise(q) ? (struct mps_pgemm_operand){.pack = mps_pgemm_pack_strided, .ctx = &rows[i]}
                     : padded                 ? (struct mps_pgemm_operand){.pack = mps_conv_pack_padded, .ctx = &im[i]}
                                              : (struct mps_pgemm_operand){.pack = mps_conv_pack_im2col, .ctx = &im[i]},
                .c = (float *)a->out[0].data + (bi * q->m + gi * mg) * q->out_plane,
                .bias = b->data ? (const float *)b->data + gi * mg : NULL,
                .res = a->res ? a->res + (bi * q->m + gi * mg) * q->out_plane : NULL};
        }
        mps_pgemm_batch(a->pool, a->uk, count, items, mg, q->out_plane, kdim, q->out_plane, &e,
                        inline_act ? NULL : act, a->gemm_scratch, a->scratch);
    }
}

enum { MPS_EXPAND_PLANE = 512 };
int mps_cpu_conv_expand(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk)
{
    int d = -1;
    struct mps_conv_geom q, qd;
    struct mps_dwb_expand ex = {.k = g->values[n->in[0]].shape.dim[1], .act = mps_tile_epi_none()};
    if (n->op != MPS_OP_CONV || !uk || !uk->dwb || mps_graph_uses(g, n->out[0], &d) != 1 || d < 0 ||
        g->nodes[d].op != MPS_OP_CONV || g->nodes[d].in[0] != n->out[0] ||
        mps_conv_node_path(g, n, uk, &q) != MPS_CONV_DIRECT || q.g != 1 || !mps_conv_is_pointwise(&q) ||
        q.w.in[0] != 1 || !mps_pgemm_act_epi(&n->p.conv.act, &ex.act))
        return -1;
    const struct mps_node *dw = &g->nodes[d];
    if (mps_conv_node_path(g, dw, uk, &qd) != MPS_CONV_DEPTHWISE || !mps_dwb_applies(&qd, uk) ||
        !g->values[dw->in[1]].data || (dw->n_in > 2 && dw->in[2] >= 0 && !g->values[dw->in[2]].data))
        return -1;
    /* planes of 28x28 and up: on 14x14 the pairs came out even or 2 us ahead,
       on 7x7 (where a last step of sixteen positions is a third of the plane)
       mobilenet_v2's 160 -> 960 pairs lost 49.5 -> 70 us */
    struct mps_dwk_geom gk = mps_dwk_geom_of(&qd.w);
    if (gk.h * gk.w < MPS_EXPAND_PLANE)
        return -1;
    /* no blocks: whether dwb takes the layer with its input made this way */
    struct mps_tile_epi e = mps_tile_epi_none();
    return uk->dwb(&gk, NULL, NULL, NULL, NULL, 0, &e, &ex, NULL) ? d : -1;
}

enum mps_status mps_cpu_conv(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *w = &a->in[1], *b = &a->in[2];
    struct mps_tensor *y = &a->out[0];
    struct mps_conv_geom q = mps_conv_geom_of(a->node, &x->shape, &y->shape);
    struct mps_conv_job jb = {.q = &q, .x = x->data, .w = w->data, .bias = b->data, .y = y->data,
                              .act = &a->node->p.conv.act, .uk = a->uk ? a->uk : &mps_ukernels_c};
    (void)err;
    if (a->dw_out) {
        mps_conv_expand_run(a);
        return MPS_OK;
    }
    if (a->packed) {
        enum mps_conv_path path = ((const struct mps_conv_packed *)a->packed)->path;
        const unsigned char *data = (const unsigned char *)a->packed + MPS_CONV_HEADER;
        if (path == MPS_CONV_WINOGRAD)
            mps_winograd_conv(a, data); /* bias, activation included */
        else if (path == MPS_CONV_DIRECT)
            mps_direct_conv(a, &q, data);
        else
            mps_conv_packed_run(a, &q);
        return MPS_OK;
    }
    if (q.c / q.g == 1 && !mps_conv_is_pointwise(&q)) { /* MPS_CONV_DEPTHWISE */
        mps_conv_depthwise(a, &q);
        return MPS_OK;
    }
    int64_t cg = q.c / q.g, mg = q.m / q.g, kdim = cg * q.taps;
    for (int64_t bi = 0; bi < q.n; bi++)
        for (int64_t gi = 0; gi < q.g; gi++) {
            const float *xg = (const float *)x->data + (bi * q.c + gi * cg) * q.in_plane;
            const float *col = xg;
            if (!mps_conv_is_pointwise(&q)) {
                jb.x = xg;
                jb.col = a->scratch;
                mps_pool_for(a->pool, kdim, q.out_plane, mps_conv_im2col_rows, &jb);
                col = jb.col;
            }
            float *yg = (float *)y->data + (bi * q.m + gi * mg) * q.out_plane;
            mps_cpu_sgemm_ld(a->pool, false, false, mg, q.out_plane, kdim, 1.0f,
                             (const float *)w->data + gi * mg * kdim, kdim, col, q.out_plane, 0.0f, yg, q.out_plane);
            struct mps_conv_job ep = {.q = &q, .y = yg, .bias = b->data ? (const float *)b->data + gi * mg : NULL,
                                      .act = jb.act};
            if (ep.bias || ep.act->on)
                mps_pool_for(a->pool, mg, q.out_plane * 2, mps_conv_epilogue_rows, &ep);
        }
    return MPS_OK;
}
