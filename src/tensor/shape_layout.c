/* shape_layout.c: shape rules of the layout and shape ops. Constant inputs
   (shape, axes, starts, pads, ...) are resolved here into the node's params. */
#include <math.h>
#include <string.h>

#include "shape_rules.h"

static enum mps_status mps_shape_reshape(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int64_t v[MPS_MAX_DIMS];
    int count;
    enum mps_status st = mps_shape_const_ints(g, n, 1, v, MPS_MAX_DIMS, &count, err);
    if (st)
        return st;
    struct mps_shape out = {count, {0}};
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < count; i++) {
        int64_t d = v[i];
        if (d == 0 && !n->p.axis.allowzero) {
            if (i >= x->shape.ndim)
                return mps_shape_fail(n, err, "shape entry %d is 0 but the input has rank %d", i, x->shape.ndim);
            d = x->shape.dim[i];
        }
        if (d == -1) {
            if (infer >= 0)
                return mps_shape_fail(n, err, "shape has more than one -1");
            infer = i;
            d = 1;
        } else if (d < 0) {
            return mps_shape_fail(n, err, "shape entry %lld is negative", (long long)d);
        }
        out.dim[i] = d;
        if (d && known > MPS_MAX_NUMEL / d)
            return mps_shape_fail(n, err, "shape is too large");
        known *= d;
    }
    int64_t numel = mps_shape_numel(&x->shape);
    if (infer >= 0) {
        if (known == 0 || numel % known)
            return mps_shape_fail(n, err, "cannot infer the -1 dim: %lld elements do not split by %lld",
                                  (long long)numel, (long long)known);
        out.dim[infer] = numel / known;
    } else if (known != numel) {
        return mps_shape_fail(n, err, "shape has %lld elements, the input %lld", (long long)known, (long long)numel);
    }
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_flatten(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int r = x->shape.ndim;
    int64_t axis = n->p.axis.axis < 0 ? n->p.axis.axis + r : n->p.axis.axis;
    if (axis < 0 || axis > r)
        return mps_shape_fail(n, err, "axis %lld is out of range for rank %d", (long long)n->p.axis.axis, r);
    n->p.axis.axis = axis;
    struct mps_shape out = {2, {1, 1}};
    for (int i = 0; i < r; i++)
        out.dim[i < axis ? 0 : 1] *= x->shape.dim[i];
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_transpose(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    struct mps_transpose_params *p = &n->p.transpose;
    int r = x->shape.ndim;
    if (p->n_perm == 0) {
        p->n_perm = r;
        for (int i = 0; i < r; i++)
            p->perm[i] = r - 1 - i;
    }
    if (p->n_perm != r)
        return mps_shape_fail(n, err, "perm has %d entries for rank %d", p->n_perm, r);
    unsigned seen = 0;
    struct mps_shape out = {r, {0}};
    for (int i = 0; i < r; i++) {
        if (p->perm[i] < 0 || p->perm[i] >= r || (seen & (1u << p->perm[i])))
            return mps_shape_fail(n, err, "perm is not a permutation of 0..%d", r - 1);
        seen |= 1u << p->perm[i];
        out.dim[i] = x->shape.dim[p->perm[i]];
    }
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_squeeze(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int64_t v[MPS_MAX_DIMS];
    int count = 0;
    enum mps_status st;
    if (mps_shape_in(g, n, 1) && (st = mps_shape_const_ints(g, n, 1, v, MPS_MAX_DIMS, &count, err)))
        return st;
    uint32_t mask = 0;
    if (count) {
        if ((st = mps_shape_axes_mask(n, v, count, x->shape.ndim, &mask, err)))
            return st;
    } else {
        for (int i = 0; i < x->shape.ndim; i++)
            if (x->shape.dim[i] == 1)
                mask |= 1u << i;
    }
    struct mps_shape out = {0, {0}};
    for (int i = 0; i < x->shape.ndim; i++) {
        if (!(mask & (1u << i)))
            out.dim[out.ndim++] = x->shape.dim[i];
        else if (x->shape.dim[i] != 1)
            return mps_shape_fail(n, err, "cannot squeeze axis %d of size %lld", i, (long long)x->shape.dim[i]);
    }
    n->p.axis.axes = mask;
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_unsqueeze(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int64_t v[MPS_MAX_DIMS];
    int count;
    enum mps_status st = mps_shape_const_ints(g, n, 1, v, MPS_MAX_DIMS, &count, err);
    if (st)
        return st;
    int r = x->shape.ndim + count;
    if (r > MPS_MAX_DIMS)
        return mps_shape_fail(n, err, "the output would have rank %d; at most %d is supported", r, MPS_MAX_DIMS);
    uint32_t mask;
    if ((st = mps_shape_axes_mask(n, v, count, r, &mask, err)))
        return st;
    struct mps_shape out = {r, {0}};
    for (int i = 0, j = 0; i < r; i++)
        out.dim[i] = (mask & (1u << i)) ? 1 : x->shape.dim[j++];
    n->p.axis.axes = mask;
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_concat(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_resolve_axis(n, &n->p.axis.axis, x->shape.ndim, err);
    if (st)
        return st;
    int axis = (int)n->p.axis.axis;
    struct mps_shape out = x->shape;
    out.dim[axis] = 0;
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        if (!v || v->dtype != x->dtype || v->shape.ndim != x->shape.ndim)
            return mps_shape_fail(n, err, "input %d differs in dtype or rank from input 0", i);
        for (int d = 0; d < out.ndim; d++)
            if (d != axis && v->shape.dim[d] != x->shape.dim[d])
                return mps_shape_fail(n, err, "input %d differs from input 0 on axis %d", i, d);
        out.dim[axis] += v->shape.dim[axis];
    }
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_split(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_resolve_axis(n, &n->p.axis.axis, x->shape.ndim, err);
    if (st)
        return st;
    int axis = (int)n->p.axis.axis;
    int64_t dim = x->shape.dim[axis], total = 0;
    struct mps_shape s = x->shape;
    const struct mps_value *sizes = mps_shape_in(g, n, 1);
    if (sizes && (!sizes->data || sizes->shape.ndim != 1 || sizes->shape.dim[0] != n->n_out ||
                  (sizes->dtype != MPS_I64 && sizes->dtype != MPS_I32)))
        return mps_shape_fail(n, err, "split must be a constant list of %d integers", n->n_out);
    /* without sizes: equal parts, the last one smaller when dim does not divide (opset 18) */
    int64_t part = (dim + n->n_out - 1) / n->n_out;
    for (int i = 0; i < n->n_out; i++) {
        int64_t len = sizes ? (sizes->dtype == MPS_I64 ? ((const int64_t *)sizes->data)[i]
                                                        : ((const int32_t *)sizes->data)[i])
                            : (dim - total < part ? dim - total : part);
        if (len < 0)
            return mps_shape_fail(n, err, "split size %lld is negative", (long long)len);
        s.dim[axis] = len;
        total += len;
        mps_shape_set(g, n, i, x->dtype, &s);
    }
    if (total != dim)
        return mps_shape_fail(n, err, "split sizes add up to %lld, axis %d has %lld", (long long)total, axis,
                              (long long)dim);
    return MPS_OK;
}

/* Clamps a Slice start or end index as the ONNX spec does. */
static int64_t mps_shape_slice_clamp(int64_t v, int64_t dim, int64_t step, bool is_end)
{
    if (v < 0)
        v += dim;
    int64_t lo = step > 0 ? 0 : (is_end ? -1 : 0), hi = step > 0 ? dim : dim - 1;
    return v < lo ? lo : v > hi ? hi : v;
}

static enum mps_status mps_shape_slice(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int r = x->shape.ndim;
    int64_t starts[MPS_MAX_DIMS], ends[MPS_MAX_DIMS], axes[MPS_MAX_DIMS], steps[MPS_MAX_DIMS];
    int ns, ne, na = 0, nst = 0;
    enum mps_status st = mps_shape_const_ints(g, n, 1, starts, MPS_MAX_DIMS, &ns, err);
    if (!st)
        st = mps_shape_const_ints(g, n, 2, ends, MPS_MAX_DIMS, &ne, err);
    if (!st && mps_shape_in(g, n, 3))
        st = mps_shape_const_ints(g, n, 3, axes, MPS_MAX_DIMS, &na, err);
    if (!st && mps_shape_in(g, n, 4))
        st = mps_shape_const_ints(g, n, 4, steps, MPS_MAX_DIMS, &nst, err);
    if (st)
        return st;
    if (ne != ns || (na && na != ns) || (nst && nst != ns))
        return mps_shape_fail(n, err, "starts, ends, axes and steps differ in length");
    struct mps_slice_params *p = &n->p.slice;
    struct mps_shape out = x->shape;
    for (int i = 0; i < r; i++) {
        p->start[i] = 0;
        p->step[i] = 1;
    }
    uint32_t seen = 0;
    for (int i = 0; i < ns; i++) {
        int a = mps_axis(na ? axes[i] : i, r);
        if (a < 0 || (seen & (1u << a)))
            return mps_shape_fail(n, err, "axis %lld is out of range or repeated", (long long)(na ? axes[i] : i));
        seen |= 1u << a;
        int64_t step = nst ? steps[i] : 1, dim = x->shape.dim[a];
        if (step == 0)
            return mps_shape_fail(n, err, "step must not be 0");
        int64_t b = mps_shape_slice_clamp(starts[i], dim, step, false);
        int64_t e = mps_shape_slice_clamp(ends[i], dim, step, true);
        int64_t len = step > 0 ? (e - b + step - 1) / step : (b - e + (-step) - 1) / (-step);
        out.dim[a] = len > 0 ? len : 0;
        p->start[a] = b;
        p->step[a] = step;
    }
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

/* Constant indices of an index op, in range for the data dims they index (checked at load). */
static enum mps_status mps_shape_check_indices(const struct mps_node *n, const struct mps_value *idx,
                                               const struct mps_shape *x, int first, bool tuples, struct mps_error *err)
{
    int64_t count = idx->data ? mps_shape_numel(&idx->shape) : 0, k = tuples ? idx->shape.dim[idx->shape.ndim - 1] : 1;
    for (int64_t i = 0; i < count; i++) {
        int64_t at = idx->dtype == MPS_I64 ? ((const int64_t *)idx->data)[i] : ((const int32_t *)idx->data)[i];
        int64_t len = x->dim[first + (tuples ? i % k : 0)];
        if (at < -len || at >= len)
            return mps_shape_fail(n, err, "index %lld is out of range for an axis of %lld", (long long)at,
                                  (long long)len);
    }
    return MPS_OK;
}

static enum mps_status mps_shape_gather(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *idx = mps_shape_in(g, n, 1);
    enum mps_status st = mps_shape_need_dtype(g, n, 1, MPS_DT_INT, err);
    if (!st)
        st = mps_shape_resolve_axis(n, &n->p.axis.axis, x->shape.ndim, err);
    if (st)
        return st;
    int axis = (int)n->p.axis.axis;
    int r = x->shape.ndim - 1 + idx->shape.ndim;
    if (r > MPS_MAX_DIMS)
        return mps_shape_fail(n, err, "the output would have rank %d", r);
    /* constant indices are the model's: one out of range is a bad model, found at load */
    if ((st = mps_shape_check_indices(n, idx, &x->shape, axis, false, err)))
        return st;
    struct mps_shape out = {0, {0}};
    for (int i = 0; i < axis; i++)
        out.dim[out.ndim++] = x->shape.dim[i];
    for (int i = 0; i < idx->shape.ndim; i++)
        out.dim[out.ndim++] = idx->shape.dim[i];
    for (int i = axis + 1; i < x->shape.ndim; i++)
        out.dim[out.ndim++] = x->shape.dim[i];
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

/* GatherElements: indices of the data's rank, no larger than it off the axis; the output has their shape. */
static enum mps_status mps_shape_gather_elements(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *idx = mps_shape_in(g, n, 1);
    enum mps_status st = mps_shape_need_dtype(g, n, 1, MPS_DT_INT, err);
    if (!st)
        st = mps_shape_resolve_axis(n, &n->p.axis.axis, x->shape.ndim, err);
    if (st)
        return st;
    int axis = (int)n->p.axis.axis;
    if (idx->shape.ndim != x->shape.ndim)
        return mps_shape_fail(n, err, "indices of rank %d for data of rank %d", idx->shape.ndim, x->shape.ndim);
    for (int d = 0; d < x->shape.ndim; d++)
        if (d != axis && idx->shape.dim[d] > x->shape.dim[d])
            return mps_shape_fail(n, err, "indices dim %d is %lld, beyond the data's %lld", d,
                                  (long long)idx->shape.dim[d], (long long)x->shape.dim[d]);
    if ((st = mps_shape_check_indices(n, idx, &x->shape, axis, false, err)))
        return st;
    mps_shape_set(g, n, 0, x->dtype, &idx->shape);
    return MPS_OK;
}

/* GatherND and ScatterND: indices [..., k], k at most the data's rank past the batch dims. */
static enum mps_status mps_shape_nd(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *idx = mps_shape_in(g, n, 1);
    enum mps_status st = mps_shape_need_dtype(g, n, 1, MPS_DT_INT, err);
    if (st)
        return st;
    int64_t b = n->op == MPS_OP_GATHER_ND ? n->p.index.batch_dims : 0;
    int q = idx->shape.ndim, r = x->shape.ndim;
    if (q < 1 || b < 0 || b >= q || b >= r)
        return mps_shape_fail(n, err, "indices of rank %d, batch_dims %lld, data of rank %d", q, (long long)b, r);
    int64_t k = idx->shape.dim[q - 1];
    if (k < 1 || k > r - b)
        return mps_shape_fail(n, err, "index tuples of %lld for data of rank %d past %lld batch dims", (long long)k,
                              r, (long long)b);
    for (int d = 0; d < b; d++)
        if (idx->shape.dim[d] != x->shape.dim[d])
            return mps_shape_fail(n, err, "batch dim %d: %lld indices for %lld data", d, (long long)idx->shape.dim[d],
                                  (long long)x->shape.dim[d]);
    struct mps_shape out = {0, {0}};
    for (int d = 0; d < q - 1; d++)
        out.dim[out.ndim++] = idx->shape.dim[d];
    for (int d = (int)(b + k); d < r; d++)
        if (out.ndim < MPS_MAX_DIMS)
            out.dim[out.ndim++] = x->shape.dim[d];
        else
            return mps_shape_fail(n, err, "the output would have more than %d dims", MPS_MAX_DIMS);
    if ((st = mps_shape_check_indices(n, idx, &x->shape, (int)b, true, err)))
        return st;
    if (n->op == MPS_OP_SCATTER_ND) {
        const struct mps_value *u = mps_shape_in(g, n, 2);
        if (u->dtype != x->dtype || !mps_shape_eq(&u->shape, &out))
            return mps_shape_fail(n, err, "updates must be %s of the data's dtype", mps_shape_str(&out, (char[64]){0}, 64));
        mps_shape_set(g, n, 0, x->dtype, &x->shape);
    } else {
        mps_shape_set(g, n, 0, x->dtype, &out);
    }
    return MPS_OK;
}

/* ScatterElements: indices of the data's rank, updates of their shape. */
static enum mps_status mps_shape_scatter_elements(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *idx = mps_shape_in(g, n, 1), *u = mps_shape_in(g, n, 2);
    enum mps_status st = mps_shape_need_dtype(g, n, 1, MPS_DT_INT, err);
    if (!st)
        st = mps_shape_resolve_axis(n, &n->p.index.axis, x->shape.ndim, err);
    if (st)
        return st;
    if (idx->shape.ndim != x->shape.ndim || !mps_shape_eq(&idx->shape, &u->shape) || u->dtype != x->dtype)
        return mps_shape_fail(n, err, "indices must have the data's rank and the updates' shape, the updates its dtype");
    for (int d = 0; d < x->shape.ndim; d++)
        if (d != n->p.index.axis && idx->shape.dim[d] > x->shape.dim[d])
            return mps_shape_fail(n, err, "indices dim %d is %lld, beyond the data's %lld", d,
                                  (long long)idx->shape.dim[d], (long long)x->shape.dim[d]);
    if ((st = mps_shape_check_indices(n, idx, &x->shape, (int)n->p.index.axis, false, err)))
        return st;
    mps_shape_set(g, n, 0, x->dtype, &x->shape);
    return MPS_OK;
}

static enum mps_status mps_shape_shape(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int64_t r = x->shape.ndim, b = n->p.shape.start, e = n->p.shape.end;
    b = b < 0 ? b + r : b;
    e = e < 0 ? e + r : e;
    b = b < 0 ? 0 : b > r ? r : b;
    e = e < 0 ? 0 : e > r ? r : e;
    n->p.shape.start = b;
    n->p.shape.end = e > b ? e : b;
    struct mps_shape out = {1, {n->p.shape.end - b}};
    (void)err;
    mps_shape_set(g, n, 0, MPS_I64, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_constant(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    if (!x->data)
        return mps_shape_fail(n, err, "its value must be a constant");
    mps_shape_set(g, n, 0, x->dtype, &x->shape);
    return MPS_OK;
}

static enum mps_status mps_shape_constant_of_shape(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    struct mps_shape out;
    enum mps_status st = mps_shape_const_shape(g, n, 0, &out, err);
    if (st)
        return st;
    if ((unsigned)n->p.fill.dtype >= MPS_DTYPE_COUNT)
        return mps_shape_fail(n, err, "unknown dtype");
    mps_shape_set(g, n, 0, n->p.fill.dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_expand(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    struct mps_shape want, out;
    enum mps_status st = mps_shape_const_shape(g, n, 1, &want, err);
    if (st)
        return st;
    struct mps_error why;
    if (mps_shape_broadcast(&x->shape, &want, &out, &why))
        return mps_shape_fail(n, err, "%s", why.msg);
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

static enum mps_status mps_shape_pad(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    struct mps_pad_params *p = &n->p.pad;
    int r = x->shape.ndim;
    int64_t pads[2 * MPS_MAX_DIMS], axes[MPS_MAX_DIMS];
    int np = 0, na = 0;
    enum mps_status st = MPS_OK;
    if (mps_shape_in(g, n, 1))
        st = mps_shape_const_ints(g, n, 1, pads, 2 * MPS_MAX_DIMS, &np, err);
    if (!st && mps_shape_in(g, n, 2))
        st = mps_shape_const_scalar(g, n, 2, &p->value, err);
    if (!st && mps_shape_in(g, n, 3))
        st = mps_shape_const_ints(g, n, 3, axes, MPS_MAX_DIMS, &na, err);
    if (st)
        return st;
    if (!mps_shape_in(g, n, 3)) {
        na = r;
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (np != 2 * na)
        return mps_shape_fail(n, err, "pads has %d entries; %d are needed", np, 2 * na);
    memset(p->pads, 0, sizeof p->pads);
    uint32_t mask;
    if ((st = mps_shape_axes_mask(n, axes, na, r, &mask, err)))
        return st;
    struct mps_shape out = x->shape;
    for (int i = 0; i < na; i++) {
        int a = mps_axis(axes[i], r);
        int64_t b = pads[i], e = pads[i + na], d = x->shape.dim[a];
        p->pads[a] = b;
        p->pads[a + r] = e;
        out.dim[a] = d + b + e;
        if (out.dim[a] < 0)
            return mps_shape_fail(n, err, "pads crop more than axis %d holds", a);
        if (p->mode == MPS_PAD_REFLECT && (b >= d || e >= d) && (b > 0 || e > 0))
            return mps_shape_fail(n, err, "reflect pads must be smaller than axis %d (size %lld)", a, (long long)d);
        if (p->mode == MPS_PAD_EDGE && d == 0 && (b > 0 || e > 0))
            return mps_shape_fail(n, err, "edge padding of the empty axis %d", a);
    }
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

/* Resize: X, roi (read for tf_crop_and_resize only), then scales or sizes,
   constants, for every axis or for params' axes. */
static enum mps_status mps_shape_resize(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *scales = mps_shape_in(g, n, 2), *sizes = mps_shape_in(g, n, 3);
    struct mps_resize_params *p = &n->p.resize;
    int r = x->shape.ndim, na = p->n_axes ? p->n_axes : r;
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT, err);
    if (st)
        return st;
    bool has_scales = scales && mps_shape_numel(&scales->shape) > 0, has_sizes = sizes && mps_shape_numel(&sizes->shape) > 0;
    if (has_scales == has_sizes)
        return mps_shape_fail(n, err, "exactly one of scales and sizes must be given");
    int64_t axes[MPS_MAX_DIMS], v[MPS_MAX_DIMS];
    double f[MPS_MAX_DIMS];
    for (int i = 0; i < na; i++)
        axes[i] = p->n_axes ? p->axes[i] : i;
    uint32_t mask;
    if ((st = mps_shape_axes_mask(n, axes, na, r, &mask, err)))
        return st;
    int count = 0;
    if (has_sizes) {
        if ((st = mps_shape_const_ints(g, n, 3, v, MPS_MAX_DIMS, &count, err)))
            return st;
    } else {
        if (!scales->data || scales->dtype != MPS_F32 || scales->shape.ndim != 1)
            return mps_shape_fail(n, err, "scales must be a constant list of floats");
        count = (int)scales->shape.dim[0];
        for (int i = 0; i < count && i < MPS_MAX_DIMS; i++)
            f[i] = ((const float *)scales->data)[i];
    }
    if (count != na)
        return mps_shape_fail(n, err, "%s has %d entries for %d axes", has_sizes ? "sizes" : "scales", count, na);
    struct mps_shape out = x->shape;
    for (int d = 0; d < MPS_MAX_DIMS; d++)
        p->scale[d] = 1.0, p->roi[d] = 0.0, p->roi[MPS_MAX_DIMS + d] = 1.0;
    if (p->coord == MPS_COORD_TF_CROP_AND_RESIZE) {
        const struct mps_value *roi = mps_shape_in(g, n, 1);
        if (!roi || !roi->data || roi->dtype != MPS_F32 || mps_shape_numel(&roi->shape) != 2 * na)
            return mps_shape_fail(n, err, "roi must be a constant list of %d floats (tf_crop_and_resize)", 2 * na);
        for (int i = 0; i < na; i++) {
            int a = mps_axis(axes[i], r);
            p->roi[a] = ((const float *)roi->data)[i];
            p->roi[MPS_MAX_DIMS + a] = ((const float *)roi->data)[na + i];
        }
    }
    for (int i = 0; i < na; i++) {
        int a = mps_axis(axes[i], r);
        int64_t in = x->shape.dim[a];
        double span = p->roi[MPS_MAX_DIMS + a] - p->roi[a];
        if (has_sizes) {
            if (v[i] < 0)
                return mps_shape_fail(n, err, "sizes entry %lld is negative", (long long)v[i]);
            out.dim[a] = v[i];
            p->scale[a] = in > 0 ? (double)v[i] / (double)in : 1.0;
        } else {
            if (!(f[i] > 0) || !(span * f[i] * (double)in >= 0) || span * f[i] * (double)in > (double)INT32_MAX)
                return mps_shape_fail(n, err, "scale %g of axis %d is not a positive factor of a sane size", f[i], a);
            out.dim[a] = (int64_t)floor((double)in * span * f[i]);
            p->scale[a] = f[i];
        }
        if (out.dim[a] > 0 && in == 0)
            return mps_shape_fail(n, err, "axis %d is empty and cannot be resized to %lld", a, (long long)out.dim[a]);
    }
    if (mps_shape_numel(&out) < 0)
        return mps_shape_fail(n, err, "the output is too large");
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

/* DepthToSpace, SpaceToDepth: [N,C,H,W], blocks that divide what they split. */
static enum mps_status mps_shape_depth(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int64_t b = n->p.depth.block;
    char buf[64];
    if (x->shape.ndim != 4)
        return mps_shape_fail(n, err, "the input must be [N, C, H, W], not %s", mps_shape_str(&x->shape, buf, sizeof buf));
    if (b < 1 || b > 4096)
        return mps_shape_fail(n, err, "blocksize %lld is not 1 to 4096", (long long)b);
    struct mps_shape out = x->shape;
    if (n->op == MPS_OP_DEPTH_TO_SPACE) {
        if (x->shape.dim[1] % (b * b))
            return mps_shape_fail(n, err, "%lld channels do not split into blocks of %lld x %lld",
                                  (long long)x->shape.dim[1], (long long)b, (long long)b);
        out.dim[1] /= b * b, out.dim[2] *= b, out.dim[3] *= b;
    } else {
        if (x->shape.dim[2] % b || x->shape.dim[3] % b)
            return mps_shape_fail(n, err, "%lldx%lld is not made of %lld x %lld blocks", (long long)x->shape.dim[2],
                                  (long long)x->shape.dim[3], (long long)b, (long long)b);
        out.dim[1] *= b * b, out.dim[2] /= b, out.dim[3] /= b;
    }
    if (mps_shape_numel(&out) < 0)
        return mps_shape_fail(n, err, "the output is too large");
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

/* Trilu: matrices in the last two dims, any dtype; k a constant. */
static enum mps_status mps_shape_trilu(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    if (x->shape.ndim < 2)
        return mps_shape_fail(n, err, "the input must have rank 2 or more, not %d", x->shape.ndim);
    double k = 0;
    enum mps_status st = mps_shape_in(g, n, 1) ? mps_shape_const_scalar(g, n, 1, &k, err) : MPS_OK;
    if (st)
        return st;
    if (fabs(k) > 4e18)
        return mps_shape_fail(n, err, "k %g is out of range", k);
    n->p.trilu.k = (int64_t)k;
    mps_shape_set(g, n, 0, x->dtype, &x->shape);
    return MPS_OK;
}

/* EyeLike: a matrix of the input's shape; the dtype given or the input's. */
static enum mps_status mps_shape_eyelike(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    if (x->shape.ndim != 2)
        return mps_shape_fail(n, err, "the input must be a matrix, not of rank %d", x->shape.ndim);
    mps_shape_set(g, n, 0, n->p.eye.dtype == MPS_DTYPE_COUNT ? x->dtype : n->p.eye.dtype, &x->shape);
    return MPS_OK;
}

/* ReverseSequence: x of rank 2 or more, sequence_lens i64 or i32 [batch]. */
static enum mps_status mps_shape_revseq(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *lens = mps_shape_in(g, n, 1);
    enum mps_status st = mps_shape_need_dtype(g, n, 1, MPS_DT_INT, err);
    if (st)
        return st;
    if (x->shape.ndim < 2 || lens->shape.ndim != 1 || lens->shape.dim[0] != x->shape.dim[n->p.revseq.batch_axis])
        return mps_shape_fail(n, err, "the input must have rank 2 or more and sequence_lens one length a batch");
    mps_shape_set(g, n, 0, x->dtype, &x->shape);
    return MPS_OK;
}

/* The count of true (nonzero) elements among the first n of constant value v. */
static int64_t mps_shape_count_true(const struct mps_value *v, int64_t n)
{
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++)
        count += mps_shape_const_at(v, i) != 0;
    return count;
}

/* Compress (op.h): a 1-D bool condition; of a run-time one the output's
   size along the axis is the run's (bounded by the kept length). */
static enum mps_status mps_shape_compress(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *cond = mps_shape_in(g, n, 1);
    struct mps_compress_params *p = &n->p.compress;
    if (cond->dtype != MPS_BOOL || cond->shape.ndim != 1)
        return mps_shape_fail(n, err, "its condition must be a 1-D bool");
    enum mps_status st = p->has_axis ? mps_shape_resolve_axis(n, &p->axis, x->shape.ndim, err) : MPS_OK;
    if (st)
        return st;
    int64_t len = p->has_axis ? x->shape.dim[p->axis] : mps_shape_numel(&x->shape), c = cond->shape.dim[0];
    struct mps_shape y = p->has_axis ? x->shape : (struct mps_shape){1, {0}};
    int axis = p->has_axis ? (int)p->axis : 0;
    y.dim[axis] = cond->data ? mps_shape_count_true(cond, c < len ? c : len) : c < len ? c : len;
    if (cond->data)
        mps_shape_set(g, n, 0, x->dtype, &y);
    else
        mps_shape_set_bounded(g, n, 0, x->dtype, &y, axis);
    return MPS_OK;
}

/* NonZero: [rank, count] int64; of a run-time input, count is the run's. */
static enum mps_status mps_shape_nonzero(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int64_t numel = mps_shape_numel(&x->shape);
    struct mps_shape y = {2, {x->shape.ndim, x->data ? mps_shape_count_true(x, numel) : numel}};
    (void)err;
    if (x->data)
        mps_shape_set(g, n, 0, MPS_I64, &y);
    else
        mps_shape_set_bounded(g, n, 0, MPS_I64, &y, 1);
    return MPS_OK;
}

/* Tile: a constant repeat (>= 0) per axis. */
static enum mps_status mps_shape_tile(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    int64_t r[MPS_MAX_DIMS], src[MPS_MAX_DIMS];
    int count;
    enum mps_status st = mps_shape_const_ints(g, n, 1, r, MPS_MAX_DIMS, &count, err);
    if (st)
        return st;
    if (count != x->shape.ndim)
        return mps_shape_fail(n, err, "%d repeats for an input of rank %d", count, x->shape.ndim);
    struct mps_shape out = x->shape, view;
    for (int i = 0; i < count; i++) {
        if (r[i] < 0)
            return mps_shape_fail(n, err, "repeat %lld on axis %d is negative", (long long)r[i], i);
        out.dim[i] *= r[i];
        n->p.tile.repeats[i] = r[i];
    }
    if (mps_shape_numel(&out) < 0)
        return mps_shape_fail(n, err, "the output is too large");
    if (!mps_tile_view(&x->shape, r, &view, src))
        return mps_shape_fail(n, err, "tiling %d axes of rank %d: more than %d dims to walk", count, count,
                              MPS_MAX_DIMS);
    mps_shape_set(g, n, 0, x->dtype, &out);
    return MPS_OK;
}

/* OneHot: integer or float indices; a constant depth (>= 1) and two constant values. */
static enum mps_status mps_shape_onehot(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *idx = mps_shape_in(g, n, 0), *vals = mps_shape_in(g, n, 2);
    double depth;
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT | MPS_DT_INT, err);
    if (!st)
        st = mps_shape_need_dtype(g, n, 2, MPS_DT_FLOAT | MPS_DT_INT, err);
    if (!st)
        st = mps_shape_const_scalar(g, n, 1, &depth, err);
    if (st)
        return st;
    if (!(depth >= 1 && depth < 1e9))
        return mps_shape_fail(n, err, "depth %g is not 1 or more", depth);
    if (!vals->data || mps_shape_numel(&vals->shape) != 2)
        return mps_shape_fail(n, err, "values must be a constant [off, on]");
    if (idx->shape.ndim + 1 > MPS_MAX_DIMS)
        return mps_shape_fail(n, err, "the output would have rank %d", idx->shape.ndim + 1);
    struct mps_onehot_params *p = &n->p.onehot;
    p->depth = (int64_t)depth;
    p->off = mps_shape_const_at(vals, 0);
    p->on = mps_shape_const_at(vals, 1);
    int r = idx->shape.ndim + 1;
    if (p->axis < -r || p->axis >= r)
        return mps_shape_fail(n, err, "axis %lld is out of range for rank %d", (long long)p->axis, r);
    if (p->axis < 0)
        p->axis += r;
    struct mps_shape out = {0, {0}};
    for (int i = 0, k = 0; i < r; i++)
        out.dim[out.ndim++] = i == p->axis ? p->depth : idx->shape.dim[k++];
    mps_shape_set(g, n, 0, vals->dtype, &out);
    return MPS_OK;
}

/* Range: constant scalars start, limit, delta of one type (f32, i64, i32). */
static enum mps_status mps_shape_range(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    double v[3];
    const struct mps_value *x = mps_shape_in(g, n, 0);
    for (int i = 0; i < 3; i++) {
        enum mps_status st = mps_shape_need_dtype(g, n, i, MPS_DT_FLOAT | MPS_DT_INT, err);
        if (!st && mps_shape_in(g, n, i)->dtype != x->dtype)
            return mps_shape_fail(n, err, "start, limit and delta have different dtypes");
        if (!st)
            st = mps_shape_const_scalar(g, n, i, &v[i], err);
        if (st)
            return st;
    }
    if (v[2] == 0 || v[2] != v[2])
        return mps_shape_fail(n, err, "delta is %g", v[2]);
    double len = ceil((v[1] - v[0]) / v[2]);
    if (!(len < 1e9))
        return mps_shape_fail(n, err, "%g elements are too many", len);
    n->p.range.start = v[0];
    n->p.range.delta = v[2];
    mps_shape_set(g, n, 0, x->dtype, &(struct mps_shape){1, {len > 0 ? (int64_t)len : 0}});
    return MPS_OK;
}

/* CumSum: any number dtype; the axis a constant. */
static enum mps_status mps_shape_cumsum(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_NUMBER, err);
    double axis;
    if (!st)
        st = mps_shape_need_dtype(g, n, 1, MPS_DT_INT, err);
    if (!st)
        st = mps_shape_const_scalar(g, n, 1, &axis, err);
    if (st)
        return st;
    if (x->shape.ndim < 1)
        return mps_shape_fail(n, err, "the input must have rank 1 or more");
    n->p.cumsum.axis = (int64_t)axis;
    if ((st = mps_shape_resolve_axis(n, &n->p.cumsum.axis, x->shape.ndim, err)))
        return st;
    mps_shape_set(g, n, 0, x->dtype, &x->shape);
    return MPS_OK;
}

const mps_shape_rule mps_shape_layout_rules[MPS_OP_COUNT] = {
    [MPS_OP_RESHAPE] = mps_shape_reshape,
    [MPS_OP_FLATTEN] = mps_shape_flatten,
    [MPS_OP_TRANSPOSE] = mps_shape_transpose,
    [MPS_OP_SQUEEZE] = mps_shape_squeeze,
    [MPS_OP_UNSQUEEZE] = mps_shape_unsqueeze,
    [MPS_OP_CONCAT] = mps_shape_concat,
    [MPS_OP_SPLIT] = mps_shape_split,
    [MPS_OP_SLICE] = mps_shape_slice,
    [MPS_OP_GATHER] = mps_shape_gather,
    [MPS_OP_GATHER_ELEMENTS] = mps_shape_gather_elements,
    [MPS_OP_GATHER_ND] = mps_shape_nd,
    [MPS_OP_SCATTER_ND] = mps_shape_nd,
    [MPS_OP_SCATTER_ELEMENTS] = mps_shape_scatter_elements,
    [MPS_OP_SHAPE] = mps_shape_shape,
    [MPS_OP_CONSTANT] = mps_shape_constant,
    [MPS_OP_CONSTANT_OF_SHAPE] = mps_shape_constant_of_shape,
    [MPS_OP_EXPAND] = mps_shape_expand,
    [MPS_OP_PAD] = mps_shape_pad,
    [MPS_OP_RESIZE] = mps_shape_resize,
    [MPS_OP_DEPTH_TO_SPACE] = mps_shape_depth,
    [MPS_OP_TRILU] = mps_shape_trilu,
    [MPS_OP_EYE_LIKE] = mps_shape_eyelike,
    [MPS_OP_REVERSE_SEQUENCE] = mps_shape_revseq,
    [MPS_OP_COMPRESS] = mps_shape_compress,
    [MPS_OP_NON_ZERO] = mps_shape_nonzero,
    [MPS_OP_CUM_SUM] = mps_shape_cumsum,
    [MPS_OP_TILE] = mps_shape_tile,
    [MPS_OP_RANGE] = mps_shape_range,
    [MPS_OP_ONE_HOT] = mps_shape_onehot,
    [MPS_OP_SPACE_TO_DEPTH] = mps_shape_depth,
};
