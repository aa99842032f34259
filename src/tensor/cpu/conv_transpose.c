/* conv_transpose.c: ConvTranspose (1-D, 2-D and 3-D; groups, dilations,
   pads, output padding) on the CPU, as the gradient of a Conv: per image
   and group col = W_g^T x_g on the BLAS (rows: output channels x taps,
   columns: input positions), then col2im adds each column's taps into the
   output positions they reach, over the bias. */
#include "blas.h"
#include "conv.h"

/* out[m][output position] += col[(m*taps + tap)][input position], for the
   output position each input position and tap scatter to: one output
   channel per item, so items never collide. */
static void mps_conv_col2im_channels(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    for (int64_t m = begin; m < end; m++) {
        float *out = jb->y + m * q->out_plane;
        for (int64_t t = 0; t < q->taps; t++) {
            int64_t tw = t % q->w.k[2], th = t / q->w.k[2] % q->w.k[1], td = t / (q->w.k[1] * q->w.k[2]);
            const float *src = jb->col + (m * q->taps + t) * q->in_plane;
            for (int64_t i = 0; i < q->in_plane; i++) {
                int64_t iw = i % q->w.in[2], ih = i / q->w.in[2] % q->w.in[1], id = i / (q->w.in[1] * q->w.in[2]);
                int64_t od = id * q->w.s[0] - q->w.pb[0] + td * q->w.d[0],
                        oh = ih * q->w.s[1] - q->w.pb[1] + th * q->w.d[1],
                        ow = iw * q->w.s[2] - q->w.pb[2] + tw * q->w.d[2];
                if (od >= 0 && od < q->w.out[0] && oh >= 0 && oh < q->w.out[1] && ow >= 0 && ow < q->w.out[2])
                    out[(od * q->w.out[1] + oh) * q->w.out[2] + ow] += src[i];
            }
        }
    }
}

enum mps_status mps_cpu_conv_transpose(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *w = &a->in[1], *b = &a->in[2];
    struct mps_tensor *y = &a->out[0];
    struct mps_conv_geom q = mps_conv_geom_of(a->node, &x->shape, &y->shape);
    int64_t cg = q.c / q.g, mg = q.m / q.g, rows = mg * q.taps;
    float *yd = y->data;
    for (int64_t m = 0; m < q.n * q.m; m++) {
        float v = b->data ? ((const float *)b->data)[m % q.m] : 0.0f;
        for (int64_t i = 0; i < q.out_plane; i++)
            yd[m * q.out_plane + i] = v;
    }
    for (int64_t bi = 0; bi < q.n; bi++)
        for (int64_t gi = 0; gi < q.g; gi++) {
            /* col[rows, in_plane] = W_g^T x_g, W_g being [cg, rows] */
            mps_cpu_sgemm_ld(a->pool, true, false, rows, q.in_plane, cg, 1.0f, (const float *)w->data + gi * cg * rows,
                             rows, (const float *)x->data + (bi * q.c + gi * cg) * q.in_plane, q.in_plane, 0.0f,
                             a->scratch, q.in_plane);
            struct mps_conv_job jb = {.q = &q, .col = a->scratch, .y = yd + (bi * q.m + gi * mg) * q.out_plane};
            mps_pool_for(a->pool, mg, q.taps * q.in_plane, mps_conv_col2im_channels, &jb);
        }
    return mps_cpu_fused_act(a, err);
}
