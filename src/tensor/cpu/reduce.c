/* reduce.c: the Reduce* ops over any set of axes (f32 or f64), and
   ArgMax/ArgMin. Each output element walks its box of reduced input
   elements, folded in double by reduce.h's rule. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "reduce.h"

struct mps_reduce_job {
    const struct mps_cpu_args *a;
    int n_keep, n_red;
    int64_t keep_dim[MPS_MAX_DIMS], keep_st[MPS_MAX_DIMS]; /* kept axes: size, input stride */
    int64_t red_dim[MPS_MAX_DIMS], red_st[MPS_MAX_DIMS];   /* reduced axes */
    int64_t red_count;
};

static void mps_reduce_outputs(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_reduce_job *q = ctx;
    enum mps_op op = q->a->node->op;
    const struct mps_tensor *x = &q->a->in[0];
    struct mps_tensor *y = &q->a->out[0];
    for (int64_t o = begin; o < end; o++) {
        int64_t base = 0, rem = o;
        for (int d = q->n_keep - 1; d >= 0; d--) {
            base += rem % q->keep_dim[d] * q->keep_st[d];
            rem /= q->keep_dim[d];
        }
        struct mps_reduce_acc acc = mps_reduce_start(op);
        for (int64_t r = 0; r < q->red_count; r++) {
            int64_t off = base, rr = r;
            for (int d = q->n_red - 1; d >= 0; d--) {
                off += rr % q->red_dim[d] * q->red_st[d];
                rr /= q->red_dim[d];
            }
            mps_reduce_step(op, &acc,
                            x->dtype == MPS_F32 ? ((const float *)x->data)[off] : mps_elem_get(x->data, x->dtype, off));
        }
        mps_elem_set(y->data, y->dtype, o, mps_reduce_finish(op, &acc, q->red_count));
    }
}

enum mps_status mps_cpu_reduce(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape *s = &a->in[0].shape;
    uint32_t mask = a->node->p.reduce.axes;
    struct mps_reduce_job q = {.a = a, .red_count = 1};
    int64_t st[MPS_MAX_DIMS];
    mps_shape_strides(s, st);
    (void)err;
    for (int d = 0; d < s->ndim; d++) {
        if (mask & (1u << d)) {
            q.red_dim[q.n_red] = s->dim[d];
            q.red_st[q.n_red++] = st[d];
            q.red_count *= s->dim[d];
        } else {
            q.keep_dim[q.n_keep] = s->dim[d];
            q.keep_st[q.n_keep++] = st[d];
        }
    }
    int64_t outputs = mps_shape_numel(&a->out[0].shape);
    mps_pool_for(a->pool, outputs, q.red_count, mps_reduce_outputs, &q);
    return MPS_OK;
}

/* The dims before axis (outer) and after it (inner): lanes along the axis are [outer, len, inner]. */
static void mps_lanes(const struct mps_shape *s, int64_t axis, int64_t *outer, int64_t *inner)
{
    *outer = *inner = 1;
    for (int d = 0; d < s->ndim; d++)
        if (d < axis)
            *outer *= s->dim[d];
        else if (d > axis)
            *inner *= s->dim[d];
}

/* Whether v beats best for ArgMax (max) or ArgMin: a NaN beats every number;
   on a tie, a later index wins only with last. */
static bool mps_arg_beats(double v, double best, bool max, bool last)
{
    if (best != best)
        return last && v != v;
    if (v != v)
        return true;
    return max ? (v > best || (last && v == best)) : (v < best || (last && v == best));
}

/* ArgMax, ArgMin; Hardmax: 1 at ArgMax's index along the axis, 0 elsewhere. */
enum mps_status mps_cpu_arg(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0];
    bool hard = a->node->op == MPS_OP_HARDMAX, max = a->node->op != MPS_OP_ARG_MIN;
    int64_t axis = hard ? a->node->p.norm.axis : a->node->p.arg.axis;
    bool last = !hard && a->node->p.arg.last;
    int64_t len = x->shape.dim[axis], outer, inner;
    mps_lanes(&x->shape, axis, &outer, &inner);
    int64_t *y = a->out[0].data;
    float *h = a->out[0].data;
    (void)err;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best = 0;
            double bv = mps_elem_get(x->data, x->dtype, base);
            for (int64_t k = 1; k < len; k++) {
                double v = mps_elem_get(x->data, x->dtype, base + k * inner);
                if (mps_arg_beats(v, bv, max, last))
                    best = k, bv = v;
            }
            if (hard)
                for (int64_t k = 0; k < len; k++)
                    h[base + k * inner] = k == best ? 1.0f : 0.0f;
            else
                y[o * inner + i] = best;
        }
    return MPS_OK;
}

/* CumSum: each lane along the axis in order (or from its end), f32 and f64 summed in double, integers wrapping. */
enum mps_status mps_cpu_cumsum(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_cumsum_params *p = &a->node->p.cumsum;
    const struct mps_tensor *x = &a->in[0];
    int64_t len = x->shape.dim[p->axis], outer, inner;
    mps_lanes(&x->shape, p->axis, &outer, &inner);
    (void)err;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = 0;
            uint64_t iacc = 0;
            for (int64_t s = 0; s < len; s++) {
                int64_t k = p->reverse ? len - 1 - s : s, at = (o * len + k) * inner + i;
                if (mps_dtype_is_float(x->dtype)) { /* f32, f64: summed in double */
                    double v = mps_elem_get(x->data, x->dtype, at);
                    mps_elem_set(a->out[0].data, x->dtype, at, p->exclusive ? acc : acc + v);
                    acc += v;
                } else { /* integers wrap */
                    uint64_t v = (uint64_t)mps_elem_get_int(x->data, x->dtype, at);
                    mps_elem_set_int(a->out[0].data, x->dtype, at, (int64_t)(p->exclusive ? iacc : iacc + v));
                    iacc += v;
                }
            }
        }
    return MPS_OK;
}

/* TopK: whether (v, i) comes before (w, j): the better value (a NaN above every
   number), then the lower index. A strict total order, so the k first are one answer. */
static bool mps_topk_before(double v, int64_t i, double w, int64_t j, bool largest)
{
    bool vn = v != v, wn = w != w;
    if (vn || wn) /* NaN is the largest */
        return vn == wn ? i < j : (vn == largest);
    if (v != w)
        return largest ? v > w : v < w;
    return i < j;
}

enum mps_status mps_cpu_topk(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_topk_params *p = &a->node->p.topk;
    const struct mps_tensor *x = &a->in[0];
    int64_t len = x->shape.dim[p->axis], outer, inner;
    mps_lanes(&x->shape, p->axis, &outer, &inner);
    int64_t *iy = a->out[1].data;
    (void)err;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, prev = -1;
            double pv = 0;
            for (int64_t r = 0; r < p->k; r++) { /* the next in the order after the previous pick */
                int64_t best = -1;
                double bv = 0;
                for (int64_t j = 0; j < len; j++) {
                    double v = mps_elem_get(x->data, x->dtype, base + j * inner);
                    if ((prev < 0 || mps_topk_before(pv, prev, v, j, p->largest)) &&
                        (best < 0 || mps_topk_before(v, j, bv, best, p->largest)))
                        best = j, bv = v;
                }
                int64_t at = (o * p->k + r) * inner + i;
                size_t elem = mps_dtype_size(x->dtype); /* the element itself: an int64 stays exact */
                memcpy((unsigned char *)a->out[0].data + (size_t)at * elem,
                       (const unsigned char *)x->data + (size_t)(base + best * inner) * elem, elem);
                iy[at] = best;
                prev = best, pv = bv;
            }
        }
    return MPS_OK;
}
