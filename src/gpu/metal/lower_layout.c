/* lower_layout.c: the layout and shape ops as MPSGraph steps: Transpose,
   DepthToSpace/SpaceToDepth, Concat, Slice, Split, Pad, Resize, Shape,
   ConstantOfShape, the aliases and reshapes, Cast, Expand, Tile, Range,
   Trilu, CumSum. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "lower_impl.h"
#include "resize.h"

void mps_mtl_lower_transpose(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]);
    struct mps_mtl_step *st;
    int y =
        x < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_PERMUTE, 0, mps_mtl_dtype(L, x), mps_mtl_vshape(L, n->out[0]), &x, 1, &st);
    if (y >= 0)
        memcpy(st->p.perm, n->p.transpose.perm, sizeof st->p.perm);
    mps_mtl_define(L, n->out[0], y);
}

/* DepthToSpace, SpaceToDepth: reshaped to six dims, permuted, reshaped back (graph.h). */
void mps_mtl_lower_depth(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    struct mps_shape view, out6;
    int perm[6];
    int64_t src[6];
    mps_depth_view(n, mps_mtl_vshape(L, n->in[0]), &view, perm);
    mps_depth_transpose(n, mps_mtl_vshape(L, n->in[0]), &out6, src);
    int x = mps_mtl_reshape(L, mps_mtl_value(L, n->in[0]), &view);
    struct mps_mtl_step *st;
    int y = x < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_PERMUTE, 0, mps_mtl_dtype(L, x), &out6, &x, 1, &st);
    if (y >= 0)
        for (int i = 0; i < 6; i++)
            st->p.perm[i] = perm[i];
    mps_mtl_define(L, n->out[0], mps_mtl_reshape(L, y, mps_mtl_vshape(L, n->out[0])));
}

void mps_mtl_lower_concat(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int *ids = mps_mtl_alloc(L, sizeof(int) * (size_t)n->n_in), count = 0;
    if (!ids)
        return;
    for (int i = 0; i < n->n_in; i++)
        if ((ids[count++] = mps_mtl_value(L, n->in[i])) < 0) {
            mps_mtl_define(L, n->out[0], -1);
            return;
        }
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_CONCAT, 0, mps_mtl_dtype(L, ids[0]), mps_mtl_vshape(L, n->out[0]), ids, count, &st);
    if (y >= 0)
        st->p.ax.axis = (int)n->p.axis.axis;
    mps_mtl_define(L, n->out[0], y);
}

/* A strided slice (steps > 0) of x to shape s; nothing when it keeps everything. */
static int mps_mtl_slice(struct mps_mtl_lowerer *L, int x, const int64_t *start, const int64_t *step,
                         const struct mps_shape *s)
{
    if (x < 0)
        return -1;
    const struct mps_shape *xs = mps_mtl_shape(L, x);
    bool all = true;
    for (int i = 0; i < s->ndim; i++)
        all &= start[i] == 0 && step[i] == 1 && s->dim[i] == xs->dim[i];
    if (all)
        return x;
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_SLICE, 0, mps_mtl_dtype(L, x), s, &x, 1, &st);
    for (int i = 0; y >= 0 && i < s->ndim; i++) {
        st->p.slice.start[i] = start[i];
        st->p.slice.stride[i] = step[i];
        st->p.slice.end[i] = start[i] + step[i] * (s->dim[i] - 1) + 1;
    }
    return y;
}

/* Slice: axes read backwards are reversed first (MPSGraph's strides are taken positive here). */
void mps_mtl_lower_slice(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int64_t start[MPS_MAX_DIMS], step[MPS_MAX_DIMS];
    uint32_t reversed = 0;
    for (int i = 0; i < xs->ndim; i++) {
        start[i] = n->p.slice.start[i];
        step[i] = n->p.slice.step[i];
        if (step[i] < 0) {
            reversed |= 1u << i;
            start[i] = xs->dim[i] - 1 - start[i];
            step[i] = -step[i];
        }
    }
    int x = mps_mtl_value(L, n->in[0]);
    if (reversed && x >= 0) {
        struct mps_mtl_step *st;
        x = mps_mtl_emit(L, MPS_MTL_REVERSE, 0, mps_mtl_dtype(L, x), xs, &x, 1, &st);
        if (x >= 0)
            st->p.axes = reversed;
    }
    mps_mtl_define(L, n->out[0], mps_mtl_slice(L, x, start, step, mps_mtl_vshape(L, n->out[0])));
}

void mps_mtl_lower_split(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]), axis = (int)n->p.axis.axis;
    int64_t start[MPS_MAX_DIMS] = {0}, step[MPS_MAX_DIMS];
    for (int i = 0; i < MPS_MAX_DIMS; i++)
        step[i] = 1;
    for (int k = 0; k < n->n_out; k++) {
        if (n->out[k] < 0)
            continue;
        mps_mtl_define(L, n->out[k], mps_mtl_slice(L, x, start, step, mps_mtl_vshape(L, n->out[k])));
        start[axis] += mps_mtl_vshape(L, n->out[k])->dim[axis];
    }
}

/* Pad: positive pads through padTensor, negative ones (crops) as a slice after it. */
void mps_mtl_lower_pad(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    static const enum mps_mtl_pad_mode modes[] = {
        [MPS_PAD_CONSTANT] = MPS_MTL_PAD_CONSTANT,
        [MPS_PAD_REFLECT] = MPS_MTL_PAD_REFLECT,
        [MPS_PAD_EDGE] = MPS_MTL_PAD_CLAMP_TO_EDGE,
    };
    const struct mps_pad_params *q = &n->p.pad;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int r = xs->ndim, x = mps_mtl_value(L, n->in[0]);
    struct mps_shape padded = *xs;
    bool grow = false;
    int64_t start[MPS_MAX_DIMS], step[MPS_MAX_DIMS];
    for (int i = 0; i < r; i++) {
        int64_t b = q->pads[i], e = q->pads[r + i];
        padded.dim[i] += (b > 0 ? b : 0) + (e > 0 ? e : 0);
        grow |= b > 0 || e > 0;
        start[i] = b < 0 ? -b : 0;
        step[i] = 1;
    }
    if (grow && x >= 0) {
        struct mps_mtl_step *st;
        x = mps_mtl_emit(L, MPS_MTL_PAD, 0, mps_mtl_dtype(L, x), &padded, &x, 1, &st);
        if (x >= 0) {
            st->p.pad.mode = modes[q->mode];
            st->p.pad.value = q->value;
            for (int i = 0; i < r; i++) {
                st->p.pad.left[i] = q->pads[i] > 0 ? q->pads[i] : 0;
                st->p.pad.right[i] = q->pads[r + i] > 0 ? q->pads[r + i] : 0;
            }
        }
    }
    mps_mtl_define(L, n->out[0], mps_mtl_slice(L, x, start, step, mps_mtl_vshape(L, n->out[0])));
}

/* A constant f32 matrix rows x cols (the step's data owned by the program), cast to the compute type. */
static int mps_mtl_matrix(struct mps_mtl_lowerer *L, const float *data, int64_t rows, int64_t cols)
{
    int id = mps_mtl_const_data(L, MPS_F32, &(struct mps_shape){2, {rows, cols}}, data);
    return mps_mtl_cast(L, id, mps_mtl_compute_dtype(L, MPS_F32));
}

/* Resize of the last two axes (the others keep their size: supports() checks)
   as two products with constant matrices, Y = Wh X Ww^T: row o of Wh holds
   output row o's taps (resize.h, the CPU kernel's rule), so every mode and
   coordinate transform is ONNX's exactly, on MPSGraph's matrix product. */
void mps_mtl_lower_resize(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_resize_params *q = &n->p.resize;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]), *ys = mps_mtl_vshape(L, n->out[0]);
    int r = xs->ndim, x = mps_mtl_value(L, n->in[0]);
    int64_t ih = xs->dim[r - 2], iw = xs->dim[r - 1], oh = ys->dim[r - 2], ow = ys->dim[r - 1];
    float *wh = mps_mtl_alloc(L, sizeof(float) * (size_t)(oh * ih)),
          *wt = mps_mtl_alloc(L, sizeof(float) * (size_t)(iw * ow));
    if (!wh || !wt || x < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    memset(wh, 0, sizeof(float) * (size_t)(oh * ih));
    memset(wt, 0, sizeof(float) * (size_t)(iw * ow));
    struct mps_resize_taps t;
    for (int64_t o = 0; o < oh; o++) {
        mps_resize_taps(q, r - 2, o, ih, &t);
        for (int k = 0; k < t.n; k++)
            wh[o * ih + t.i[k]] += t.w[k];
    }
    for (int64_t o = 0; o < ow; o++) { /* Ww transposed: column o */
        mps_resize_taps(q, r - 1, o, iw, &t);
        for (int k = 0; k < t.n; k++)
            wt[t.i[k] * ow + o] += t.w[k];
    }
    int y = mps_mtl_matmul_ids(L, x, mps_mtl_matrix(L, wt, iw, ow));
    mps_mtl_define_as(L, n->out[0], mps_mtl_matmul_ids(L, mps_mtl_matrix(L, wh, oh, ih), y));
}

/* Shape: the static dims as an int64 constant. */
void mps_mtl_lower_shape(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]), *ys = mps_mtl_vshape(L, n->out[0]);
    int64_t *dims = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(ys->dim[0] + 1));
    for (int64_t i = 0; dims && i < ys->dim[0]; i++)
        dims[i] = xs->dim[n->p.shape.start + i];
    mps_mtl_define(L, n->out[0], mps_mtl_const_data(L, MPS_I64, ys, dims));
}

void mps_mtl_lower_fill(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    struct mps_mtl_step *st;
    enum mps_dtype t = mps_mtl_compute_dtype(L, L->g->values[n->out[0]].dtype);
    int y = mps_mtl_emit(L, MPS_MTL_FILL, 0, t, mps_mtl_vshape(L, n->out[0]), NULL, 0, &st);
    if (y >= 0)
        st->p.scalar = n->p.fill.value;
    mps_mtl_define(L, n->out[0], y);
}

/* Identity, Dropout (inference) and Constant: the input's tensor itself. */
void mps_mtl_lower_alias(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_value(L, n->in[0]));
}

void mps_mtl_lower_cast(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_cast(L, mps_mtl_value(L, n->in[0]), mps_mtl_compute_dtype(L, n->p.cast.to)));
}

/* Reshape, Flatten, Squeeze, Unsqueeze: the inferred shape (a weight is reshaped for free). */
void mps_mtl_lower_reshape(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_value_as(L, n->in[0], mps_mtl_vshape(L, n->out[0])));
}

void mps_mtl_lower_expand(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    mps_mtl_define(L, n->out[0], mps_mtl_broadcast_to(L, mps_mtl_value(L, n->in[0]), mps_mtl_vshape(L, n->out[0])));
}

/* Tile: x seen as the view's [1, d0, 1, d1, ...] (graph.h), broadcast to
   [r0, d0, r1, d1, ...], then the output's shape. */
void mps_mtl_lower_tile(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    struct mps_shape view, ones;
    int64_t src[MPS_MAX_DIMS];
    mps_tile_view(xs, n->p.tile.repeats, &view, src);
    ones.ndim = 0; /* the view with each repeat's dim 1, as mps_tile_view lays it out */
    for (int i = 0; i < xs->ndim; i++) {
        if (n->p.tile.repeats[i] != 1)
            ones.dim[ones.ndim++] = 1;
        ones.dim[ones.ndim++] = xs->dim[i];
    }
    int x = mps_mtl_reshape(L, mps_mtl_value(L, n->in[0]), &ones);
    mps_mtl_define_as(L, n->out[0],
                      mps_mtl_reshape(L, mps_mtl_broadcast_to(L, x, &view), mps_mtl_vshape(L, n->out[0])));
}

/* Range: its values as a constant (start, delta and the length are constants). */
void mps_mtl_lower_range(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_value *y = &L->g->values[n->out[0]];
    int64_t len = y->shape.dim[0];
    size_t elem = mps_dtype_size(y->dtype);
    void *data = mps_mtl_alloc(L, elem * (size_t)(len + 1));
    for (int64_t i = 0; data && i < len; i++) {
        double v = n->p.range.start + (double)i * n->p.range.delta;
        if (y->dtype == MPS_F32)
            ((float *)data)[i] = (float)v;
        else if (y->dtype == MPS_I64)
            ((int64_t *)data)[i] = (int64_t)v;
        else
            ((int32_t *)data)[i] = (int32_t)v;
    }
    int id = mps_mtl_const_data(L, y->dtype, &y->shape, data);
    mps_mtl_define(L, n->out[0], mps_mtl_cast(L, id, mps_mtl_compute_dtype(L, y->dtype)));
}

/* Trilu: a select by a constant bool mask of one matrix (broadcast over the others). */
void mps_mtl_lower_trilu(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int64_t rows = xs->dim[xs->ndim - 2], cols = xs->dim[xs->ndim - 1];
    int x = mps_mtl_value(L, n->in[0]);
    uint8_t *keep = mps_mtl_alloc(L, (size_t)(rows * cols + 1));
    for (int64_t i = 0; keep && i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            keep[i * cols + j] = n->p.trilu.upper ? j - i >= n->p.trilu.k : j - i <= n->p.trilu.k;
    int mask = mps_mtl_const_data(L, MPS_BOOL, &(struct mps_shape){2, {rows, cols}}, keep);
    mps_mtl_define_as(L, n->out[0], mps_mtl_select(L, mask, x, mps_mtl_scalar(L, 0.0, mps_mtl_dtype(L, x))));
}

void mps_mtl_lower_cumsum(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]);
    struct mps_mtl_step *st;
    int y = x < 0 ? -1 : mps_mtl_emit(L, MPS_MTL_CUMSUM, 0, mps_mtl_dtype(L, x), mps_mtl_shape(L, x), &x, 1, &st);
    if (y >= 0) {
        st->p.cumsum.axis = (int)n->p.cumsum.axis;
        st->p.cumsum.exclusive = n->p.cumsum.exclusive;
        st->p.cumsum.reverse = n->p.cumsum.reverse;
    }
    mps_mtl_define_as(L, n->out[0], y);
}
