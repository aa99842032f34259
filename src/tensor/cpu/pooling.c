/* pooling.c: MaxPool and AveragePool (1-D and 2-D: pads, strides, dilations,
   ceil_mode, count_include_pad), GlobalAveragePool and GlobalMaxPool. One
   (batch, channel) plane per parallel item. */
#include <float.h>

#include "kernels.h"

struct mps_pool_job {
    const struct mps_cpu_args *a;
    struct mps_cpu_window3 w;
};

static void mps_pool_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_pool_job *q = ctx;
    const struct mps_node *n = q->a->node;
    bool is_max = n->op == MPS_OP_MAX_POOL, include_pad = n->p.pool.count_include_pad;
    int64_t in_plane = q->w.in[0] * q->w.in[1] * q->w.in[2], out_plane = q->w.out[0] * q->w.out[1] * q->w.out[2];
    /* MaxPool's optional flat argmax; only a node with two outputs has that slot */
    int64_t *indices = is_max && n->n_out > 1 ? q->a->out[1].data : NULL;
    for (int64_t p = begin; p < end; p++) {
        const float *x = (const float *)q->a->in[0].data + p * in_plane;
        float *y = (float *)q->a->out[0].data + p * out_plane;
        for (int64_t o = 0; o < out_plane; o++) {
            int64_t pos[3] = {o / (q->w.out[1] * q->w.out[2]), o / q->w.out[2] % q->w.out[1], o % q->w.out[2]};
            float acc = is_max ? -FLT_MAX : 0.0f;
            int64_t count = 0, padded = 1, arg = 0;
            /* taps along each axis that land in the input [lo, hi) and in the padded input */
            int64_t lo[3], hi[3];
            for (int j = 0; j < 3; j++) {
                int64_t start = pos[j] * q->w.s[j] - q->w.pb[j], in_pad = 0;
                lo[j] = q->w.k[j];
                hi[j] = 0;
                for (int64_t t = 0; t < q->w.k[j]; t++) {
                    int64_t i = start + t * q->w.d[j];
                    if (i >= 0 && i < q->w.in[j]) {
                        lo[j] = t < lo[j] ? t : lo[j];
                        hi[j] = t + 1;
                    }
                    in_pad += i >= -q->w.pb[j] && i < q->w.in[j] + q->w.pe[j];
                }
                padded *= in_pad;
            }
            for (int64_t td = lo[0]; td < hi[0]; td++) {
                int64_t id = pos[0] * q->w.s[0] - q->w.pb[0] + td * q->w.d[0];
                for (int64_t th = lo[1]; th < hi[1]; th++) {
                    int64_t ih = pos[1] * q->w.s[1] - q->w.pb[1] + th * q->w.d[1];
                    for (int64_t tw = lo[2]; tw < hi[2]; tw++) {
                        int64_t iw = pos[2] * q->w.s[2] - q->w.pb[2] + tw * q->w.d[2];
                        int64_t at = (id * q->w.in[1] + ih) * q->w.in[2] + iw;
                        float v = x[at];
                        if (is_max && (v > acc || (v != v && acc == acc) || count == 0)) {
                            acc = v; /* the first maximum wins; NaN propagates */
                            arg = n->p.pool.column_major ? id + (ih + iw * q->w.in[1]) * q->w.in[0] : at;
                        } else if (!is_max)
                            acc += v;
                        count++;
                    }
                }
            }
            if (!is_max)
                acc /= (float)(include_pad ? padded : count);
            y[o] = acc;
            if (indices)
                indices[p * out_plane + o] = p * in_plane + arg;
        }
    }
}

struct mps_cpu_window3 mps_cpu_window3(const struct mps_window *w, const struct mps_shape *x,
                                       const struct mps_shape *y)
{
    struct mps_cpu_window3 q;
    int sp = x->ndim - 2;
    for (int j = 0; j < 3; j++) {
        int i = j - (3 - sp); /* the op's spatial axis, or < 0 for a leading size-1 axis */
        q.in[j] = i < 0 ? 1 : x->dim[2 + i];
        q.out[j] = i < 0 ? 1 : y->dim[2 + i];
        q.k[j] = i < 0 ? 1 : w->kernel[i];
        q.s[j] = i < 0 ? 1 : w->stride[i];
        q.d[j] = i < 0 ? 1 : w->dilation[i];
        q.pb[j] = i < 0 ? 0 : w->pad[i];
        q.pe[j] = i < 0 ? 0 : w->pad[i + sp];
    }
    return q;
}

enum mps_status mps_cpu_pool(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *x = &a->in[0].shape;
    struct mps_pool_job q = {.a = a, .w = mps_cpu_window3(&a->node->p.pool.win, x, &a->out[0].shape)};
    (void)err;
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
