/* select.c: ops whose output's size a run decides: NonMaxSuppression and
   Unique (op.h). Each writes its outputs contiguous at the size the values
   give and sets that size in a->out[i].shape (mps_value.bounded). */
#include <math.h>
#include <string.h>

#include "kernels.h"

typedef int (*mps_sel_cmp)(int64_t a, int64_t b, const void *ctx);

/* Sorts idx[n] by cmp, stably (equal keys keep their order), through tmp[n]. */
static void mps_sel_sort(int64_t *idx, int64_t n, int64_t *tmp, mps_sel_cmp cmp, const void *ctx)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = cmp(idx[j], idx[i], ctx) < 0 ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
}

size_t mps_cpu_select_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                              int threads)
{
    const struct mps_value *x = mps_node_input(g, n, 0);
    (void)uk, (void)threads;
    int64_t len = n->op == MPS_OP_NON_MAX_SUPPRESSION ? x->shape.dim[1] * 3
                  : n->p.unique.has_axis              ? x->shape.dim[n->p.unique.axis] * 7
                                                      : mps_shape_numel(&x->shape) * 7;
    return (size_t)len * sizeof(int64_t);
}

struct mps_nms_ctx {
    const float *scores;
};

static int mps_nms_by_score(int64_t a, int64_t b, const void *ctx)
{
    const float *s = ((const struct mps_nms_ctx *)ctx)->scores;
    return s[a] > s[b] ? -1 : s[a] < s[b] ? 1 : 0;
}

/* A box as [x0, y0, x1, y1], x0 <= x1 and y0 <= y1. */
static void mps_nms_corners(const float *b, bool center, float *c)
{
    if (center) {
        c[0] = b[0] - b[2] / 2, c[2] = b[0] + b[2] / 2, c[1] = b[1] - b[3] / 2, c[3] = b[1] + b[3] / 2;
        return;
    }
    c[0] = b[1] < b[3] ? b[1] : b[3], c[2] = b[1] < b[3] ? b[3] : b[1];
    c[1] = b[0] < b[2] ? b[0] : b[2], c[3] = b[0] < b[2] ? b[2] : b[0];
}

/* Whether the IoU of boxes a and b exceeds t (a box of no area overlaps nothing). */
static bool mps_nms_overlaps(const float *a, const float *b, bool center, float t)
{
    float p[4], q[4];
    mps_nms_corners(a, center, p);
    mps_nms_corners(b, center, q);
    float x0 = p[0] > q[0] ? p[0] : q[0], x1 = p[2] < q[2] ? p[2] : q[2];
    float y0 = p[1] > q[1] ? p[1] : q[1], y1 = p[3] < q[3] ? p[3] : q[3];
    if (x1 <= x0 || y1 <= y0)
        return false;
    float inter = (x1 - x0) * (y1 - y0), area_p = (p[2] - p[0]) * (p[3] - p[1]), area_q = (q[2] - q[0]) * (q[3] - q[1]);
    float uni = area_p + area_q - inter;
    if (area_p <= 0 || area_q <= 0 || uni <= 0)
        return false;
    return inter / uni > t;
}

/* The optional scalar input i, or def where it is omitted. */
static double mps_sel_scalar(const struct mps_cpu_args *a, int i, double def)
{
    if (a->node->n_in <= i || a->node->in[i] < 0)
        return def;
    return mps_elem_get(a->in[i].data, a->in[i].dtype, 0);
}

enum mps_status mps_cpu_nms(const struct mps_cpu_args *a, struct mps_error *err)
{
    const float *boxes = a->in[0].data, *scores = a->in[1].data;
    int64_t nb = a->in[0].shape.dim[0], n = a->in[0].shape.dim[1], nc = a->in[1].shape.dim[1];
    double max = mps_sel_scalar(a, 2, 0), iou = mps_sel_scalar(a, 3, 0), least = mps_sel_scalar(a, 4, -INFINITY);
    int64_t per = max < 0 ? 0 : max < (double)n ? (int64_t)max : n, rows = 0, bound = a->out[0].shape.dim[0];
    bool center = a->node->p.nms.center_point_box, has_least = a->node->n_in > 4 && a->node->in[4] >= 0;
    int64_t *order = a->scratch, *kept = order + n, *tmp = kept + n, *y = a->out[0].data;
    (void)err;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t c = 0; c < nc; c++) {
            const float *s = scores + (b * nc + c) * n, *bx = boxes + b * n * 4;
            int64_t cand = 0, k = 0;
            for (int64_t i = 0; i < n; i++)
                if (!has_least || s[i] > (float)least)
                    order[cand++] = i;
            mps_sel_sort(order, cand, tmp, mps_nms_by_score, &(struct mps_nms_ctx){s});
            for (int64_t i = 0; i < cand && k < per; i++) {
                bool keep = true;
                for (int64_t j = 0; j < k && keep; j++)
                    keep = !mps_nms_overlaps(bx + order[i] * 4, bx + kept[j] * 4, center, (float)iou);
                if (keep && rows < bound) {
                    kept[k++] = order[i];
                    y[rows * 3] = b, y[rows * 3 + 1] = c, y[rows * 3 + 2] = order[i];
                    rows++;
                }
            }
        }
    a->out[0].shape.dim[0] = rows;
    return MPS_OK;
}

struct mps_unique_ctx {
    const struct mps_tensor *x;
    int64_t outer, len, inner;
};

/* Slices a and b along the axis, element by element in row-major order. */
static int mps_unique_cmp(int64_t a, int64_t b, const void *ctx)
{
    const struct mps_unique_ctx *u = ctx;
    for (int64_t o = 0; o < u->outer; o++)
        for (int64_t i = 0; i < u->inner; i++) {
            double p = mps_elem_get(u->x->data, u->x->dtype, (o * u->len + a) * u->inner + i);
            double q = mps_elem_get(u->x->data, u->x->dtype, (o * u->len + b) * u->inner + i);
            if (p != q)
                return p < q ? -1 : 1;
        }
    return 0;
}

static int mps_unique_by_first(int64_t a, int64_t b, const void *ctx)
{
    const int64_t *first = ctx;
    return first[a] < first[b] ? -1 : first[a] > first[b];
}

enum mps_status mps_cpu_unique(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_unique_params *p = &a->node->p.unique;
    const struct mps_tensor *x = &a->in[0];
    struct mps_unique_ctx u = {x, 1, mps_shape_numel(&x->shape), 1};
    for (int d = 0; p->has_axis && d < x->shape.ndim; d++)
        if (d != p->axis)
            *(d < p->axis ? &u.outer : &u.inner) *= x->shape.dim[d];
    if (p->has_axis)
        u.len = x->shape.dim[p->axis];
    int64_t *order = a->scratch, *tmp = order + u.len, *first = tmp + u.len, *count = first + u.len,
            *group = count + u.len, *rank = group + u.len, *pos = rank + u.len, ng = 0;
    (void)err;
    for (int64_t j = 0; j < u.len; j++)
        order[j] = j;
    mps_sel_sort(order, u.len, tmp, mps_unique_cmp, &u);
    for (int64_t r = 0; r < u.len; r++) {
        if (r == 0 || mps_unique_cmp(order[r - 1], order[r], &u) != 0)
            first[ng] = order[r], count[ng] = 0, rank[ng] = ng, ng++;
        count[ng - 1]++;
        group[order[r]] = ng - 1;
    }
    if (!p->sorted) /* the groups in the order their first elements come */
        mps_sel_sort(rank, ng, tmp, mps_unique_by_first, first);
    for (int64_t r = 0; r < ng; r++)
        pos[rank[r]] = r;
    size_t es = mps_dtype_size(x->dtype), row = (size_t)u.inner * es;
    for (int64_t o = 0; o < u.outer; o++)
        for (int64_t r = 0; r < ng; r++)
            memcpy((char *)a->out[0].data + (size_t)(o * ng + r) * row,
                   (const char *)x->data + (size_t)(o * u.len + first[rank[r]]) * row, row);
    a->out[0].shape.dim[p->has_axis ? p->axis : 0] = ng;
    for (int o = 1; o < a->node->n_out; o++) {
        int64_t *out = a->out[o].data;
        for (int64_t r = 0; r < (o == 2 ? u.len : ng); r++)
            out[r] = o == 1 ? first[rank[r]] : o == 2 ? pos[group[r]] : count[rank[r]];
        if (o != 2)
            a->out[o].shape.dim[0] = ng;
    }
    return MPS_OK;
}
