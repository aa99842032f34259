/* norm.c: BatchNormalization (inference), InstanceNormalization,
   LayerNormalization, Softmax and LogSoftmax. Sums are taken in double: these kernels are the reference the
   GPU backends are compared with. */
#include <math.h>

#include "kernels.h"

static int64_t mps_norm_prod(const struct mps_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dim[i];
    return p;
}

struct mps_norm_job {
    const struct mps_cpu_args *a;
    int64_t channels, plane; /* BatchNormalization */
    int64_t axis_len, inner; /* Softmax */
    int64_t row;             /* LayerNormalization */
};

static void mps_batch_norm_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_norm_job *q = ctx;
    const struct mps_tensor *in = q->a->in;
    const float *x = in[0].data, *scale = in[1].data, *bias = in[2].data, *mean = in[3].data, *var = in[4].data;
    float *y = q->a->out[0].data, eps = q->a->node->p.norm.epsilon;
    for (int64_t p = begin; p < end; p++) {
        int64_t c = p % q->channels;
        float k = (float)(scale[c] / sqrt((double)var[c] + eps)), b = bias[c] - mean[c] * k;
        for (int64_t i = 0; i < q->plane; i++)
            y[p * q->plane + i] = x[p * q->plane + i] * k + b;
    }
}

enum mps_status mps_cpu_batch_norm(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *s = &a->in[0].shape;
    struct mps_norm_job q = {.a = a, .channels = s->dim[1], .plane = mps_norm_prod(s, 2, s->ndim)};
    (void)err;
    mps_pool_for(a->pool, s->dim[0] * s->dim[1], 2 * q.plane, mps_batch_norm_planes, &q);
    return MPS_OK;
}

/* LRN: each (n, c) plane against the squares of its channel window, in double. */
static void mps_lrn_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_norm_job *q = ctx;
    const struct mps_lrn_params *p = &q->a->node->p.lrn;
    const float *x = q->a->in[0].data;
    float *y = q->a->out[0].data;
    int64_t lo = (p->size - 1) / 2, hi = p->size - 1 - lo;
    double scale = (double)p->alpha / (double)p->size;
    for (int64_t pl = begin; pl < end; pl++) {
        int64_t c = pl % q->channels, first = pl - c; /* the image's channel 0 */
        int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi >= q->channels ? q->channels - 1 : c + hi;
        for (int64_t i = 0; i < q->plane; i++) {
            double sum = 0;
            for (int64_t k = c0; k <= c1; k++) {
                double v = x[(first + k) * q->plane + i];
                sum += v * v;
            }
            y[pl * q->plane + i] = (float)(x[pl * q->plane + i] / pow(p->bias + scale * sum, p->beta));
        }
    }
}

enum mps_status mps_cpu_lrn(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *s = &a->in[0].shape;
    struct mps_norm_job q = {.a = a, .channels = s->dim[1], .plane = mps_norm_prod(s, 2, s->ndim)};
    (void)err;
    mps_pool_for(a->pool, s->dim[0] * s->dim[1], q.plane * (a->node->p.lrn.size + 8), mps_lrn_planes, &q);
    return MPS_OK;
}

/* InstanceNormalization: each (n, c) plane by its own mean and population variance (two passes). */
static void mps_instance_norm_planes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_norm_job *q = ctx;
    const struct mps_tensor *in = q->a->in;
    const float *scale = in[1].data, *bias = in[2].data;
    double eps = q->a->node->p.norm.epsilon;
    for (int64_t p = begin; p < end; p++) {
        const float *x = (const float *)in[0].data + p * q->plane;
        float *y = (float *)q->a->out[0].data + p * q->plane;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < q->plane; i++)
            sum += x[i];
        double mean = sum / (double)q->plane;
        for (int64_t i = 0; i < q->plane; i++)
            sq += (x[i] - mean) * (x[i] - mean);
        int64_t c = p % q->channels;
        double k = scale[c] / sqrt(sq / (double)q->plane + eps), b = bias[c];
        for (int64_t i = 0; i < q->plane; i++) /* in double: x - mean cancels when the plane sits far from 0 */
            y[i] = (float)((x[i] - mean) * k + b);
    }
}

enum mps_status mps_cpu_instance_norm(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *s = &a->in[0].shape;
    struct mps_norm_job q = {.a = a, .channels = s->dim[1], .plane = mps_norm_prod(s, 2, s->ndim)};
    (void)err;
    mps_pool_for(a->pool, s->dim[0] * s->dim[1], 4 * q.plane, mps_instance_norm_planes, &q);
    return MPS_OK;
}

/* Offset into a scale or bias that broadcasts to the normalized dims. */
static int64_t mps_layer_norm_offset(const struct mps_tensor *t, const struct mps_shape *tail,
                                     const int64_t *st, int64_t i)
{
    if (mps_shape_numel(&t->shape) == mps_shape_numel(tail))
        return i;
    int64_t off = 0;
    for (int d = tail->ndim - 1; d >= 0; d--) {
        off += (i % tail->dim[d]) * st[d];
        i /= tail->dim[d];
    }
    return off;
}

static void mps_layer_norm_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_norm_job *q = ctx;
    const struct mps_cpu_args *a = q->a;
    const struct mps_tensor *scale = &a->in[1], *bias = &a->in[2];
    int axis = (int)a->node->p.norm.axis;
    const struct mps_shape *xs = &a->in[0].shape;
    struct mps_shape tail = {xs->ndim - axis, {0}};
    for (int d = 0; d < tail.ndim; d++)
        tail.dim[d] = xs->dim[axis + d];
    int64_t sst[MPS_MAX_DIMS], bst[MPS_MAX_DIMS];
    mps_shape_broadcast_strides(&scale->shape, &tail, sst);
    if (bias->data)
        mps_shape_broadcast_strides(&bias->shape, &tail, bst);
    const float *sc = scale->data, *bi = bias->data;
    for (int64_t r = begin; r < end; r++) {
        const float *x = (const float *)a->in[0].data + r * q->row;
        float *y = (float *)a->out[0].data + r * q->row;
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < q->row; i++)
            sum += x[i];
        double mean = sum / (double)q->row;
        for (int64_t i = 0; i < q->row; i++)
            sq += (x[i] - mean) * (x[i] - mean);
        double inv = 1.0 / sqrt(sq / (double)q->row + a->node->p.norm.epsilon);
        for (int64_t i = 0; i < q->row; i++) {
            double v = (x[i] - mean) * inv * sc[mps_layer_norm_offset(scale, &tail, sst, i)];
            if (bi)
                v += bi[mps_layer_norm_offset(bias, &tail, bst, i)];
            y[i] = (float)v;
        }
        if (a->out[1].data)
            ((float *)a->out[1].data)[r] = (float)mean;
        if (a->out[2].data)
            ((float *)a->out[2].data)[r] = (float)inv;
    }
}

enum mps_status mps_cpu_layer_norm(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *s = &a->in[0].shape;
    int axis = (int)a->node->p.norm.axis;
    struct mps_norm_job q = {.a = a, .row = mps_norm_prod(s, axis, s->ndim)};
    (void)err;
    mps_pool_for(a->pool, mps_norm_prod(s, 0, axis), 4 * q.row, mps_layer_norm_rows, &q);
    return MPS_OK;
}

double mps_cpu_lane_shift(const float *x, int64_t n, int64_t st, float *mx)
{
    *mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        *mx = x[i * st] > *mx ? x[i * st] : *mx;
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += exp((double)x[i * st] - *mx);
    return log(sum);
}

/* One lane per item: the axis_len elements at stride inner. */
static void mps_softmax_lanes(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_norm_job *q = ctx;
    bool log_out = q->a->node->op == MPS_OP_LOG_SOFTMAX;
    int64_t n = q->axis_len, st = q->inner;
    for (int64_t l = begin; l < end; l++) {
        int64_t base = l / st * n * st + l % st;
        const float *x = (const float *)q->a->in[0].data + base;
        float *y = (float *)q->a->out[0].data + base, mx;
        double lsum = mps_cpu_lane_shift(x, n, st, &mx), sum = exp(lsum);
        for (int64_t i = 0; i < n; i++) {
            double v = (double)x[i * st] - mx;
            y[i * st] = (float)(log_out ? v - lsum : exp(v) / sum);
        }
    }
}

enum mps_status mps_cpu_softmax(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *s = &a->in[0].shape;
    int axis = (int)a->node->p.norm.axis;
    struct mps_norm_job q = {.a = a, .axis_len = s->dim[axis], .inner = mps_norm_prod(s, axis + 1, s->ndim)};
    (void)err;
    mps_pool_for(a->pool, mps_norm_prod(s, 0, axis) * q.inner, 8 * q.axis_len, mps_softmax_lanes, &q);
    return MPS_OK;
}
