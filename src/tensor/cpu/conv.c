/* conv.c: Conv (1-D and 2-D, groups, dilations, pads) as im2col + sgemm, with
   a direct path for depthwise and no im2col for 1x1 stride-1 convolutions;
   ConvTranspose as sgemm + col2im. 1-D ops run as 2-D ones of height 1. */
#include <string.h>

#include "blas.h"
#include "kernels.h"

/* The geometry of one convolution in 2-D terms. For Conv, (h, w) is the
   input and (oh, ow) the output; ConvTranspose swaps their roles in im2col. */
struct mps_conv_geom {
    int64_t n, c, h, w;  /* input */
    int64_t m, oh, ow;   /* output channels and size */
    int64_t kh, kw, sh, sw, dh, dw, ph, pw, g;
};

static struct mps_conv_geom mps_conv_geom_of(const struct mps_node *node, const struct mps_shape *x,
                                             const struct mps_shape *y)
{
    const struct mps_window *w = &node->p.conv.win;
    struct mps_conv_geom q = {.n = x->dim[0], .c = x->dim[1], .m = y->dim[1], .g = node->p.conv.group};
    if (x->ndim == 3) {
        q.h = q.oh = q.kh = q.sh = q.dh = 1;
        q.ph = 0;
        q.w = x->dim[2], q.ow = y->dim[2];
        q.kw = w->kernel[0], q.sw = w->stride[0], q.dw = w->dilation[0], q.pw = w->pad[0];
    } else {
        q.h = x->dim[2], q.w = x->dim[3], q.oh = y->dim[2], q.ow = y->dim[3];
        q.kh = w->kernel[0], q.kw = w->kernel[1], q.sh = w->stride[0], q.sw = w->stride[1];
        q.dh = w->dilation[0], q.dw = w->dilation[1], q.ph = w->pad[0], q.pw = w->pad[1];
    }
    return q;
}

static bool mps_conv_is_pointwise(const struct mps_conv_geom *q)
{
    return q->kh == 1 && q->kw == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 && q->pw == 0 && q->oh == q->h &&
           q->ow == q->w;
}

size_t mps_cpu_conv_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    struct mps_conv_geom q = mps_conv_geom_of(n, x, y);
    if (n->op == MPS_OP_CONV_TRANSPOSE)
        return (size_t)(q.m / q.g * q.kh * q.kw * q.h * q.w) * sizeof(float);
    if (mps_conv_is_pointwise(&q) || q.c / q.g == 1)
        return 0;
    return (size_t)(q.c / q.g * q.kh * q.kw * q.oh * q.ow) * sizeof(float);
}

struct mps_conv_job {
    const struct mps_conv_geom *q;
    const float *x;  /* Conv: the group's input channels; depthwise: the whole input */
    const float *w, *bias;
    float *col, *y;
};

/* col[(c*kh + i)*kw + j][oy*ow + ox] = x[c][oy*sh - ph + i*dh][ox*sw - pw + j*dw], or 0 in the padding. */
static void mps_conv_im2col_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    for (int64_t r = begin; r < end; r++) {
        int64_t c = r / (q->kh * q->kw), i = r / q->kw % q->kh, j = r % q->kw;
        const float *xc = jb->x + c * q->h * q->w;
        float *dst = jb->col + r * q->oh * q->ow;
        for (int64_t oy = 0; oy < q->oh; oy++) {
            int64_t iy = oy * q->sh - q->ph + i * q->dh;
            float *d = dst + oy * q->ow;
            if (iy < 0 || iy >= q->h) {
                memset(d, 0, sizeof(float) * (size_t)q->ow);
                continue;
            }
            const float *xr = xc + iy * q->w;
            for (int64_t ox = 0; ox < q->ow; ox++) {
                int64_t ix = ox * q->sw - q->pw + j * q->dw;
                d[ox] = ix >= 0 && ix < q->w ? xr[ix] : 0.0f;
            }
        }
    }
}

/* One output plane per item (batch * channel) when each group has one input channel. */
static void mps_conv_depthwise_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    int64_t per_group = q->m / q->g;
    for (int64_t p = begin; p < end; p++) {
        int64_t b = p / q->m, m = p % q->m, c = m / per_group;
        const float *xc = jb->x + (b * q->c + c) * q->h * q->w, *wk = jb->w + m * q->kh * q->kw;
        float *y = jb->y + p * q->oh * q->ow, bias = jb->bias ? jb->bias[m] : 0.0f;
        for (int64_t oy = 0; oy < q->oh; oy++)
            for (int64_t ox = 0; ox < q->ow; ox++) {
                float acc = bias;
                for (int64_t i = 0; i < q->kh; i++) {
                    int64_t iy = oy * q->sh - q->ph + i * q->dh;
                    if (iy < 0 || iy >= q->h)
                        continue;
                    for (int64_t j = 0; j < q->kw; j++) {
                        int64_t ix = ox * q->sw - q->pw + j * q->dw;
                        if (ix >= 0 && ix < q->w)
                            acc += wk[i * q->kw + j] * xc[iy * q->w + ix];
                    }
                }
                y[oy * q->ow + ox] = acc;
            }
    }
}

static void mps_conv_add_bias(float *y, const float *bias, int64_t channels, int64_t plane)
{
    for (int64_t m = 0; m < channels; m++)
        for (int64_t i = 0; i < plane; i++)
            y[m * plane + i] += bias[m];
}

enum mps_status mps_cpu_conv(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *w = &a->in[1], *b = &a->in[2];
    struct mps_tensor *y = &a->out[0];
    struct mps_conv_geom q = mps_conv_geom_of(a->node, &x->shape, &y->shape);
    struct mps_conv_job jb = {.q = &q, .x = x->data, .w = w->data, .bias = b->data, .y = y->data};
    (void)err;
    if (q.c / q.g == 1 && !mps_conv_is_pointwise(&q)) {
        mps_pool_for(a->pool, q.n * q.m, 1, mps_conv_depthwise_planes, &jb);
        return MPS_OK;
    }
    int64_t cg = q.c / q.g, mg = q.m / q.g, kdim = cg * q.kh * q.kw, plane = q.oh * q.ow;
    for (int64_t bi = 0; bi < q.n; bi++)
        for (int64_t gi = 0; gi < q.g; gi++) {
            const float *xg = (const float *)x->data + (bi * q.c + gi * cg) * q.h * q.w;
            const float *col = xg;
            if (!mps_conv_is_pointwise(&q)) {
                jb.x = xg;
                jb.col = a->scratch;
                mps_pool_for(a->pool, kdim, 1, mps_conv_im2col_rows, &jb);
                col = jb.col;
            }
            float *yg = (float *)y->data + (bi * q.m + gi * mg) * plane;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)plane, (int)kdim, 1.0f,
                        (const float *)w->data + gi * mg * kdim, (int)kdim, col, (int)plane, 0.0f, yg, (int)plane);
            if (b->data)
                mps_conv_add_bias(yg, (const float *)b->data + gi * mg, mg, plane);
        }
    return MPS_OK;
}

/* out[m][oy][ox] += col[(m*kh + i)*kw + j][y*w + x] with oy = y*sh - ph + i*dh,
   ox = x*sw - pw + j*dw: one output channel per item, so items never collide. */
static void mps_conv_col2im_channels(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_conv_job *jb = ctx;
    const struct mps_conv_geom *q = jb->q;
    for (int64_t m = begin; m < end; m++) {
        float *out = jb->y + m * q->oh * q->ow;
        for (int64_t i = 0; i < q->kh; i++)
            for (int64_t j = 0; j < q->kw; j++) {
                const float *src = jb->col + ((m * q->kh + i) * q->kw + j) * q->h * q->w;
                for (int64_t iy = 0; iy < q->h; iy++) {
                    int64_t oy = iy * q->sh - q->ph + i * q->dh;
                    if (oy < 0 || oy >= q->oh)
                        continue;
                    for (int64_t ix = 0; ix < q->w; ix++) {
                        int64_t ox = ix * q->sw - q->pw + j * q->dw;
                        if (ox >= 0 && ox < q->ow)
                            out[oy * q->ow + ox] += src[iy * q->w + ix];
                    }
                }
            }
    }
}

enum mps_status mps_cpu_conv_transpose(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *w = &a->in[1], *b = &a->in[2];
    struct mps_tensor *y = &a->out[0];
    struct mps_conv_geom q = mps_conv_geom_of(a->node, &x->shape, &y->shape);
    int64_t cg = q.c / q.g, mg = q.m / q.g, rows = mg * q.kh * q.kw, in_plane = q.h * q.w, plane = q.oh * q.ow;
    float *yd = y->data;
    (void)err;
    for (int64_t m = 0; m < q.n * q.m; m++) {
        float v = b->data ? ((const float *)b->data)[m % q.m] : 0.0f;
        for (int64_t i = 0; i < plane; i++)
            yd[m * plane + i] = v;
    }
    for (int64_t bi = 0; bi < q.n; bi++)
        for (int64_t gi = 0; gi < q.g; gi++) {
            /* col[rows, in_plane] = W_g^T x_g, W_g being [cg, rows] */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)rows, (int)in_plane, (int)cg, 1.0f,
                        (const float *)w->data + gi * cg * rows, (int)rows,
                        (const float *)x->data + (bi * q.c + gi * cg) * in_plane, (int)in_plane, 0.0f, a->scratch,
                        (int)in_plane);
            struct mps_conv_job jb = {.q = &q, .col = a->scratch, .y = yd + (bi * q.m + gi * mg) * plane};
            mps_pool_for(a->pool, mg, 1, mps_conv_col2im_channels, &jb);
        }
    return MPS_OK;
}
