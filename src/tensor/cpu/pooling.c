/* pooling.c: MaxPool and AveragePool (1-D and 2-D: pads, strides, dilations,
   ceil_mode, count_include_pad), GlobalAveragePool and GlobalMaxPool. One
   (batch, channel) plane per parallel item. */
#include <float.h>

#include "kernels.h"

struct mps_pool_job {
    const struct mps_cpu_args *a;
    int64_t h, w, oh, ow;
    int64_t kh, kw, sh, sw, dh, dw, ph, pw, ph_end, pw_end;
};

static void mps_pool_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_pool_job *q = ctx;
    const struct mps_node *n = q->a->node;
    bool is_max = n->op == MPS_OP_MAX_POOL, include_pad = n->p.pool.count_include_pad;
    for (int64_t p = begin; p < end; p++) {
        const float *x = (const float *)q->a->in[0].data + p * q->h * q->w;
        float *y = (float *)q->a->out[0].data + p * q->oh * q->ow;
        for (int64_t oy = 0; oy < q->oh; oy++)
            for (int64_t ox = 0; ox < q->ow; ox++) {
                float acc = is_max ? -FLT_MAX : 0.0f;
                int64_t count = 0, padded = 0;
                for (int64_t i = 0; i < q->kh; i++) {
                    int64_t iy = oy * q->sh - q->ph + i * q->dh;
                    bool in_y = iy >= 0 && iy < q->h, pad_y = iy >= -q->ph && iy < q->h + q->ph_end;
                    for (int64_t j = 0; j < q->kw; j++) {
                        int64_t ix = ox * q->sw - q->pw + j * q->dw;
                        if (pad_y && ix >= -q->pw && ix < q->w + q->pw_end)
                            padded++;
                        if (!in_y || ix < 0 || ix >= q->w)
                            continue;
                        float v = x[iy * q->w + ix];
                        if (is_max)
                            acc = v > acc || v != v ? v : acc; /* NaN propagates */
                        else
                            acc += v;
                        count++;
                    }
                }
                if (!is_max)
                    acc /= (float)(include_pad ? padded : count);
                y[oy * q->ow + ox] = acc;
            }
    }
}

enum mps_status mps_cpu_pool(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *x = &a->in[0].shape, *y = &a->out[0].shape;
    const struct mps_window *w = &a->node->p.pool.win;
    struct mps_pool_job q = {.a = a};
    (void)err;
    if (x->ndim == 3) {
        q.h = q.oh = q.kh = q.sh = q.dh = 1;
        q.w = x->dim[2], q.ow = y->dim[2], q.kw = w->kernel[0], q.sw = w->stride[0], q.dw = w->dilation[0];
        q.pw = w->pad[0], q.pw_end = w->pad[1];
    } else {
        q.h = x->dim[2], q.w = x->dim[3], q.oh = y->dim[2], q.ow = y->dim[3];
        q.kh = w->kernel[0], q.kw = w->kernel[1], q.sh = w->stride[0], q.sw = w->stride[1];
        q.dh = w->dilation[0], q.dw = w->dilation[1];
        q.ph = w->pad[0], q.pw = w->pad[1], q.ph_end = w->pad[2], q.pw_end = w->pad[3];
    }
    mps_pool_for(a->pool, x->dim[0] * x->dim[1], 1, mps_pool_planes, &q);
    return MPS_OK;
}

struct mps_global_job {
    const struct mps_cpu_args *a;
    int64_t plane;
};

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
                m = xp[i] > m || xp[i] != xp[i] ? xp[i] : m;
            y[p] = m;
        } else {
            double s = 0;
            for (int64_t i = 0; i < q->plane; i++)
                s += xp[i];
            y[p] = (float)(s / (double)q->plane);
        }
    }
}

enum mps_status mps_cpu_global_pool(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *x = &a->in[0].shape;
    struct mps_global_job q = {.a = a, .plane = 1};
    for (int i = 2; i < x->ndim; i++)
        q.plane *= x->dim[i];
    (void)err;
    mps_pool_for(a->pool, x->dim[0] * x->dim[1], 1, mps_global_planes, &q);
    return MPS_OK;
}
