/* ref_select.c: references for the ops whose output's size the values
   decide: Compress, NonZero, NonMaxSuppression, Unique, StringNormalizer. Each sets the sizes
   it computes in out[i].shape (the caller gives the bounds). Test code only. */
#include <stdlib.h>
#include <string.h>

#include "ref_window.h"

void ref_select(enum mps_op op, const struct mps_compress_params *p, const struct ref_tensor *in,
                struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    int64_t idx[MPS_MAX_DIMS], n = ref_numel(xs);
    if (op == MPS_OP_NON_ZERO) {
        int64_t count = 0, at = 0;
        for (int64_t i = 0; i < n; i++)
            count += in[0].d[i] != 0;
        out[0].shape.dim[1] = count;
        for (int64_t i = 0; i < n; i++)
            if (in[0].d[i] != 0) {
                ref_unravel(xs, i, idx);
                for (int d = 0; d < xs->ndim; d++)
                    out[0].d[d * count + at] = (double)idx[d];
                at++;
            }
        return;
    }
    int64_t axis = p->has_axis ? (p->axis < 0 ? p->axis + xs->ndim : p->axis) : 0, *pick = calloc((size_t)n + 1, 8),
            kept = 0, len = p->has_axis ? xs->dim[axis] : n, c = in[1].shape.dim[0];
    for (int64_t k = 0; k < len && k < c; k++)
        if (in[1].d[k] != 0)
            pick[kept++] = k;
    out[0].shape.dim[axis] = kept;
    for (int64_t o = 0; o < ref_numel(&out[0].shape); o++) {
        if (!p->has_axis) {
            out[0].d[o] = in[0].d[pick[o]];
            continue;
        }
        ref_unravel(&out[0].shape, o, idx);
        idx[axis] = pick[idx[axis]];
        out[0].d[o] = in[0].d[ref_ravel(xs, idx)];
    }
    free(pick);
}

/* IoU of boxes a and b ([y1, x1, y2, x2] either corner first, or centered [x, y, w, h]). */
static double ref_iou(const double *a, const double *b, bool center)
{
    double lo[2][2], hi[2][2]; /* [box][axis x, y] */
    const double *box[2] = {a, b};
    for (int k = 0; k < 2; k++)
        for (int ax = 0; ax < 2; ax++) {
            double p = center ? box[k][ax] - box[k][ax + 2] / 2 : box[k][1 - ax];
            double q = center ? box[k][ax] + box[k][ax + 2] / 2 : box[k][3 - ax];
            lo[k][ax] = p < q ? p : q, hi[k][ax] = p < q ? q : p;
        }
    double w = (hi[0][0] < hi[1][0] ? hi[0][0] : hi[1][0]) - (lo[0][0] > lo[1][0] ? lo[0][0] : lo[1][0]);
    double h = (hi[0][1] < hi[1][1] ? hi[0][1] : hi[1][1]) - (lo[0][1] > lo[1][1] ? lo[0][1] : lo[1][1]);
    double area0 = (hi[0][0] - lo[0][0]) * (hi[0][1] - lo[0][1]), area1 = (hi[1][0] - lo[1][0]) * (hi[1][1] - lo[1][1]);
    if (w <= 0 || h <= 0 || area0 <= 0 || area1 <= 0)
        return 0;
    return w * h / (area0 + area1 - w * h);
}

/* Per batch and class, again and again the best scored box neither taken nor
   suppressed by one taken (the first on a tie), until max are taken. */
void ref_nms(const struct mps_nms_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    int64_t nb = in[0].shape.dim[0], n = in[0].shape.dim[1], nc = in[1].shape.dim[1], rows = 0;
    double max = n_in > 2 && in[2].d ? in[2].d[0] : 0, iou = n_in > 3 && in[3].d ? in[3].d[0] : 0;
    bool *gone = calloc((size_t)n + 1, 1);
    for (int64_t b = 0; b < nb; b++)
        for (int64_t c = 0; c < nc; c++) {
            const double *s = in[1].d + (b * nc + c) * n, *bx = in[0].d + b * n * 4;
            for (int64_t i = 0; i < n; i++)
                gone[i] = n_in > 4 && in[4].d && !(s[i] > in[4].d[0]);
            for (int64_t taken = 0; taken < max; taken++) {
                int64_t best = -1;
                for (int64_t i = 0; i < n; i++)
                    if (!gone[i] && (best < 0 || s[i] > s[best]))
                        best = i;
                if (best < 0)
                    break;
                out[0].d[rows * 3] = (double)b, out[0].d[rows * 3 + 1] = (double)c,
                                out[0].d[rows * 3 + 2] = (double)best;
                rows++;
                for (int64_t i = 0; i < n; i++)
                    gone[i] = gone[i] || i == best || ref_iou(bx + best * 4, bx + i * 4, p->center_point_box) > iou;
            }
        }
    out[0].shape.dim[0] = rows;
    free(gone);
}

/* Whether slices a and b along the axis (len of them, between outer and inner) are equal, or which comes first. */
static int ref_slice_cmp(const struct ref_tensor *x, int64_t outer, int64_t len, int64_t inner, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double p = x->d[(o * len + a) * inner + i], q = x->d[(o * len + b) * inner + i];
            if (p != q)
                return p < q ? -1 : 1;
        }
    return 0;
}

/* Each slice against the distinct ones found before it; then sorted by selection where asked. */
void ref_unique(const struct mps_unique_params *p, const struct ref_tensor *in, struct ref_tensor *out, int n_out)
{
    const struct mps_shape *xs = &in[0].shape;
    int64_t axis = p->axis < 0 ? p->axis + xs->ndim : p->axis, outer = 1, inner = 1, len = ref_numel(xs), k = 0;
    for (int d = 0; p->has_axis && d < xs->ndim; d++)
        if (d != axis)
            *(d < axis ? &outer : &inner) *= xs->dim[d];
    if (p->has_axis)
        len = xs->dim[axis];
    int64_t *first = calloc((size_t)len + 1, 8), *count = calloc((size_t)len + 1, 8), *of = calloc((size_t)len + 1, 8);
    for (int64_t j = 0; j < len; j++) {
        int64_t u = 0;
        while (u < k && ref_slice_cmp(&in[0], outer, len, inner, first[u], j) != 0)
            u++;
        if (u == k)
            first[k++] = j;
        count[u]++;
        of[j] = u;
    }
    int64_t *rank = calloc((size_t)k + 1, 8), *pos = calloc((size_t)k + 1, 8);
    for (int64_t u = 0; u < k; u++)
        rank[u] = u;
    for (int64_t r = 0; p->sorted && r < k; r++) /* selection sort; the earliest of equals first */
        for (int64_t q = r + 1; q < k; q++)
            if (ref_slice_cmp(&in[0], outer, len, inner, first[rank[q]], first[rank[r]]) < 0) {
                int64_t t = rank[r];
                rank[r] = rank[q], rank[q] = t;
            }
    for (int64_t r = 0; r < k; r++)
        pos[rank[r]] = r;
    out[0].shape.dim[p->has_axis ? axis : 0] = k;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t r = 0; r < k; r++)
            for (int64_t i = 0; i < inner; i++)
                out[0].d[(o * k + r) * inner + i] = in[0].d[(o * len + first[rank[r]]) * inner + i];
    for (int o = 1; o < n_out; o++) {
        if (o != 2)
            out[o].shape.dim[0] = k;
        for (int64_t r = 0; r < out[o].shape.dim[0]; r++)
            out[o].d[r] = (double)(o == 1 ? first[rank[r]] : o == 2 ? pos[of[r]] : count[rank[r]]);
    }
    free(first), free(count), free(of), free(rank), free(pos);
}

/* ASCII letter c in the case asked: 'L' lower, 'U' upper, else as it is. */
static char ref_case(char c, char to)
{
    if (to == 'L' && c >= 'A' && c <= 'Z')
        return (char)(c - 'A' + 'a');
    if (to == 'U' && c >= 'a' && c <= 'z')
        return (char)(c - 'a' + 'A');
    return c;
}

void ref_strnorm(const struct mps_strnorm_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    int64_t n = ref_numel(&in[0].shape), n_stop = n_in > 1 && in[1].s ? ref_numel(&in[1].shape) : 0, kept = 0;
    char to = p->change == MPS_STRNORM_LOWER ? 'L' : p->change == MPS_STRNORM_UPPER ? 'U' : 0;
    for (int64_t i = 0; i < n; i++) {
        const char *w = in[0].s[i];
        bool stop = false;
        for (int64_t k = 0; k < n_stop && !stop; k++) {
            const char *t = in[1].s[k];
            size_t j = 0;
            while (w[j] && t[j] && (p->case_sensitive ? w[j] == t[j] : ref_case(w[j], 'L') == ref_case(t[j], 'L')))
                j++;
            stop = !w[j] && !t[j];
        }
        if (stop)
            continue;
        char *c = malloc(strlen(w) + 1);
        for (size_t j = 0; c && j <= strlen(w); j++)
            c[j] = ref_case(w[j], to);
        out[0].s[kept++] = c;
    }
    if (!kept) {
        char *empty = calloc(1, 1);
        out[0].s[kept++] = empty;
    }
    out[0].shape.dim[out[0].shape.ndim - 1] = kept;
}
