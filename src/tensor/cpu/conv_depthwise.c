/* conv_depthwise.c: depthwise convolutions (one input channel a group) on
   the CPU: 3x3 planes on the family's dw3 kernel, other 2-D windows on dwk,
   sixteen channels at once on dwb where the family has it, anything else
   (3-D, 1-D) in the general form a row at a time; and a 1x1 Conv computed
   inside the depthwise after it (mps_cpu_conv_expand: its output never
   written). */
#include <string.h>

#include "conv.h"
#include "pgemm.h"

/* Depthwise (each group has one input channel): one output row at a time.
   mps_dw_taps is the general form: yr[ow] for ow in [c0, c1) gets the bias,
   then each tap's weight * input over exactly the outputs the tap reaches,
   tap by tap (a contiguous loop the compiler vectorizes). */
static void mps_dw_taps(const struct mps_conv_geom *q, const float *xc, const float *wk, float bias, int64_t od,
                        int64_t oh, int64_t c0, int64_t c1, float *yr)
{
    const struct mps_window3 *w = &q->w;
    for (int64_t ow = c0; ow < c1; ow++)
        yr[ow] = bias;
    for (int64_t td = 0; td < w->k[0]; td++) {
        int64_t id = mps_conv_src(q, 0, od, td);
        for (int64_t th = 0; th < w->k[1] && id >= 0; th++) {
            int64_t ih = mps_conv_src(q, 1, oh, th);
            if (ih < 0)
                continue;
            for (int64_t tw = 0; tw < w->k[2]; tw++) {
                float wv = wk[(td * w->k[1] + th) * w->k[2] + tw];
                int64_t lo, hi, sw = w->s[2];
                mps_conv_valid(w, 2, tw, &lo, &hi);
                lo = lo > c0 ? lo : c0;
                hi = hi < c1 ? hi : c1;
                const float *xr = xc + (id * w->in[1] + ih) * w->in[2] - w->pb[2] + tw * w->d[2];
                if (sw == 1)
                    for (int64_t ow = lo; ow < hi; ow++)
                        yr[ow] += wv * xr[ow];
                else
                    for (int64_t ow = lo; ow < hi; ow++)
                        yr[ow] += wv * xr[ow * sw];
            }
        }
    }
}

/* True when the layer is 2-D: depth 1, no padding along it (what the plane kernels take). */
static bool mps_dw_2d(const struct mps_window3 *w)
{
    return w->in[0] == 1 && w->out[0] == 1 && w->k[0] == 1 && w->pb[0] == 0;
}

/* The 2-D window of a depthwise layer as the plane kernels take it. */
struct mps_dwk_geom mps_dwk_geom_of(const struct mps_window3 *w)
{
    return (struct mps_dwk_geom){.h = w->in[1], .w = w->in[2], .pt = w->pb[1], .pl = w->pb[2], .out_h = w->out[1],
                                 .out_w = w->out[2], .kh = (int)w->k[1], .kw = (int)w->k[2], .sh = (int)w->s[1],
                                 .sw = (int)w->s[2], .dh = (int)w->d[1], .dw = (int)w->d[2]};
}

/* True when the layer is 2-D, the kernel 3x3, undilated, stride 1 or 2 in
   both axes: the family's dw3 kernel runs it. */
static bool mps_dw3_applies(const struct mps_window3 *w)
{
    return mps_dw_2d(w) && w->k[1] == 3 && w->k[2] == 3 && w->d[1] == 1 && w->d[2] == 1 && w->s[1] == w->s[2] &&
           (w->s[2] == 1 || w->s[2] == 2);
}

/* One output plane (batch * channel) per item: a 3x3 layer on the family's
   dw3 kernel, the activation in its store where the tile's epilogue has it;
   other windows in the general form. */
static void mps_conv_depthwise_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    const struct mps_window3 *w = &q->w;
    int64_t per_group = q->m / q->g;
    struct mps_tile_epi e = mps_tile_epi_none();
    bool inline_act = mps_pgemm_act_epi(jb->act, &e), dw3 = mps_dw3_applies(w);
    struct mps_dw3_geom g = {.h = w->in[1], .w = w->in[2], .pt = w->pb[1], .pl = w->pb[2], .out_h = w->out[1],
                             .out_w = w->out[2], .s = (int)w->s[2]};
    /* other 2-D windows on the family's general plane kernel (mobilenet_v3's 5x5,
       LR-ASPP's dilated ones: the loop below took 8 times onnxruntime's time) */
    struct mps_dwk_geom gk = mps_dwk_geom_of(w);
    bool dwk = !dw3 && mps_dw_2d(w) && (gk.sw == 1 || gk.sw == 2);
    for (int64_t p = begin, run; p < end; p += run) {
        int64_t b = p / q->m, m = p % q->m, c = m / per_group;
        const float *xc = jb->x + (b * q->c + c) * q->in_plane, *k = jb->w + m * q->taps;
        float *y = jb->y + p * q->out_plane, bias = jb->bias ? jb->bias[m] : 0.0f;
        /* dwk's planes a call: the rest of this image's where each channel is a group
           (plane p reads channel p), so that they share its padding; else one */
        run = dwk && per_group == 1 && q->c == q->m ? ((b + 1) * q->m < end ? (b + 1) * q->m : end) - p : 1;
        if (dw3 || (dwk && jb->uk->dwk(&gk, xc, k, jb->bias ? jb->bias + m : NULL, y, run, &e))) {
            if (dw3)
                jb->uk->dw3(&g, xc, k, bias, y, &e);
            if (!inline_act)
                mps_cpu_act_inplace(jb->act, y, run * q->out_plane);
            continue;
        }
        run = 1;
        for (int64_t od = 0; od < w->out[0]; od++)
            for (int64_t oh = 0; oh < w->out[1]; oh++) {
                float *yr = y + (od * w->out[1] + oh) * w->out[2];
                mps_dw_taps(q, xc, k, bias, od, oh, 0, w->out[2], yr);
                mps_cpu_act_inplace(jb->act, yr, w->out[2]);
            }
    }
}

/* Whether the family's dwb runs the layer: 2-D, one input channel a group and
   as many output channels, in whole blocks of MPS_DWB_PLANES, output rows
   under MPS_DWB_WIDE. Wider rows stay on dw3 and dwk, which fill their
   vectors there without transposing (avx512, one core: 96 x 112x112 0.266
   ms dw3, 0.336 dwb; 144 x 56x56 at a tie, 0.105 / 0.091 on two; 192 x
   28x28 0.050 / 0.038; stride 2 from 112x112 0.21 / 0.18). */
bool mps_dwb_applies(const struct mps_conv_geom *q, const struct mps_ukernels *uk)
{
    const struct mps_window3 *w = &q->w;
    return uk->dwb && q->c == q->m && q->g == q->c && q->m % MPS_DWB_PLANES == 0 && mps_dw_2d(w) &&
           w->out[2] < MPS_DWB_WIDE;
}

/* Blocks of MPS_DWB_PLANES output planes per item on the family's dwb (the
   activation in its store where the tile's epilogue has it), an image's
   blocks a call (they share the buffer's padding), or with parts, a part of
   one block's output rows per item; where dwb does not take the window
   (never with parts), plane by plane. */
static void mps_conv_depthwise_blocks(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    struct mps_tile_epi e = mps_tile_epi_none();
    bool inline_act = mps_pgemm_act_epi(jb->act, &e);
    struct mps_dwk_geom g = mps_dwk_geom_of(&q->w);
    int64_t per_image = q->m / MPS_DWB_PLANES;
    for (int64_t i = begin, run; i < end; i += run) {
        int64_t blk = i / jb->parts, part = i % jb->parts, blocks;
        if (jb->parts > 1) { /* rows [oh0, oh1) of one block */
            run = 1, blocks = 1;
            g.oh0 = q->w.out[1] * part / jb->parts, g.oh1 = q->w.out[1] * (part + 1) / jb->parts;
        } else {
            run = blocks = ((i / per_image + 1) * per_image < end ? (i / per_image + 1) * per_image : end) - i;
        }
        int64_t p = blk * MPS_DWB_PLANES, m = p % q->m, planes = blocks * MPS_DWB_PLANES;
        float *y = jb->y + p * q->out_plane;
        struct mps_dwb_expand ex;
        if (jb->ex) { /* the image's input planes, the blocks' rows of the 1x1's weights */
            ex = *jb->ex;
            ex.x += p / q->m * ex.k * q->in_plane, ex.w += m * ex.k, ex.bias = ex.bias ? ex.bias + m : NULL;
        }
        if (!jb->uk->dwb(&g, jb->x + p * q->in_plane, jb->w + m * q->taps, jb->bias ? jb->bias + m : NULL, y, blocks,
                         &e, jb->ex ? &ex : NULL, NULL)) { /* never with ex or parts (mps_dwb_run asked) */
            mps_conv_depthwise_planes(ctx, p, p + planes);
            continue;
        }
        for (int64_t c = 0; !inline_act && c < (jb->parts > 1 ? planes : 1); c++) /* the part's rows of each */
            mps_cpu_act_inplace(jb->act, y + c * q->out_plane + g.oh0 * q->w.out[2],
                                jb->parts > 1 ? (g.oh1 - g.oh0) * q->w.out[2] : planes * q->out_plane);
    }
}

/* jb's blocks on the family's dwb as one job: an item a block, or where
   the blocks are few and do not split evenly between the threads, an item
   a part of a block's output rows, as many parts as threads (mobilenet_v2's
   144 channels at batch 1: nine blocks, which two threads took as 5 and 4).
   cost: a block's. */
static void mps_dwb_run(struct mps_pool *pool, struct mps_conv_job *jb, int64_t cost)
{
    const struct mps_conv_geom *q = jb->q;
    int64_t blocks = q->n * q->m / MPS_DWB_PLANES, threads = mps_pool_threads(pool);
    struct mps_dwk_geom g = mps_dwk_geom_of(&q->w);
    struct mps_tile_epi e = mps_tile_epi_none();
    jb->parts = 1;
    if (blocks % threads && blocks < 6 * threads && q->w.out[1] >= 4 * threads &&
        jb->uk->dwb(&g, NULL, NULL, NULL, NULL, 0, &e, jb->ex, NULL)) /* no blocks: whether dwb takes the layer */
        jb->parts = threads;
    mps_pool_for(pool, blocks * jb->parts, cost / jb->parts, mps_conv_depthwise_blocks, jb);
}

/* A depthwise Conv with its weights given at run time (the packed path
   takes constant ones the same way): on the family's dwb sixteen channels at
   once where it takes the layer, else plane by plane. */
void mps_conv_depthwise(const struct mps_cpu_args *a, const struct mps_conv_geom *q)
{
    struct mps_conv_job jb = {.q = q, .x = a->in[0].data, .w = a->in[1].data, .bias = a->in[2].data,
                              .y = a->out[0].data, .act = &a->node->p.conv.act,
                              .uk = a->uk ? a->uk : &mps_ukernels_c};
    if (mps_dwb_applies(q, jb.uk))
        mps_dwb_run(a->pool, &jb, MPS_DWB_PLANES * q->out_plane * q->taps);
    else
        mps_pool_for(a->pool, q->n * q->m, q->out_plane * q->taps, mps_conv_depthwise_planes, &jb);
}

/* The 1x1 Conv a and the depthwise Conv after it (mps_cpu_conv_expand), as
   one job of the depthwise's blocks: dwb makes each band of its input rows
   from a's input as it goes, so the 1x1's output is never written. */
void mps_conv_expand_run(const struct mps_cpu_args *a)
{
    const struct mps_node *d = a->dw;
    struct mps_conv_geom q = mps_conv_geom_of(d, &a->out[0].shape, &a->dw_out->shape);
    struct mps_dwb_expand ex = {.x = a->in[0].data, .w = a->in[1].data, .bias = a->in[2].data,
                                .k = a->in[0].shape.dim[1], .act = mps_tile_epi_none()};
    mps_pgemm_act_epi(&a->node->p.conv.act, &ex.act);
    struct mps_conv_job jb = {.q = &q, .w = a->dw_w, .bias = a->dw_bias, .y = a->dw_out->data,
                              .act = &d->p.conv.act, .uk = a->uk, .ex = &ex};
    mps_dwb_run(a->pool, &jb, MPS_DWB_PLANES * (q.out_plane * q.taps + q.in_plane * ex.k));
}
