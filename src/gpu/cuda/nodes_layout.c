/* nodes_layout.c: the CUDA backend's launchers of the elementwise ops
   (unary, binary, Cast, the comparisons and logic), the reductions and the
   layout ops (Transpose, Slice, Concat, the gathers and scatters, Pad,
   Resize, Tile, ...), each enqueuing its kernels on the plan's stream.
   nodes.c has the products, convolutions, pooling and normalization. */
#include <string.h>

#include "cuda_internal.h"
#include "nodes.h"
#include "qparams.h"

static enum mps_status mps_cuda_unary(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    MPS_CU_CHECK(mps_cu_unary((int)n->op, n->p.act.alpha, n->p.act.beta, MPS_IN(0), MPS_OUT(0),
                              mps_shape_numel(&MPS_OUTV(0)->shape), s->stream));
    return MPS_OK;
}

/* Identity, Dropout, Constant, Reshape, Flatten, Squeeze, Unsqueeze: the same bytes. */
static enum mps_status mps_cuda_same_bytes(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    size_t bytes = (size_t)mps_shape_numel(&MPS_OUTV(0)->shape) * mps_dtype_size(MPS_OUTV(0)->dtype);
    if (bytes && MPS_OUT(0) != MPS_IN(0))
        MPS_CUDA_CHECK(cudaMemcpyAsync(MPS_OUT(0), MPS_IN(0), bytes, cudaMemcpyDeviceToDevice, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_cast(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    if (MPS_INV(0)->dtype == MPS_OUTV(0)->dtype)
        return mps_cuda_same_bytes(s, n, err);
    MPS_CU_CHECK(mps_cu_cast((int)MPS_INV(0)->dtype, (int)MPS_OUTV(0)->dtype, MPS_IN(0), MPS_OUT(0),
                             mps_shape_numel(&MPS_OUTV(0)->shape), s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_binary(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *y = MPS_OUTV(0);
    int64_t sa[MPS_MAX_DIMS], sb[MPS_MAX_DIMS], sy[MPS_MAX_DIMS];
    mps_shape_strides(&y->shape, sy);
    enum mps_op op = n->op;
    const struct mps_fused_act *act = mps_node_act(n); /* Add, Sub, Mul, Div: two inputs, one step */
    int fused = act && act->on ? (int)act->op : 0;
    for (int i = 0; i < (n->n_in > 1 ? n->n_in - 1 : 1); i++) {
        /* the first step reads inputs 0 and 1 (or 0 twice), later ones the output so far and input i + 1 */
        const struct mps_value *va = i == 0 ? MPS_INV(0) : y, *vb = n->n_in > 1 ? MPS_INV(i + 1) : MPS_INV(0);
        const void *a = i == 0 ? MPS_IN(0) : MPS_OUT(0), *b = n->n_in > 1 ? MPS_IN(i + 1) : MPS_IN(0);
        mps_shape_broadcast_strides(&va->shape, &y->shape, sa);
        mps_shape_broadcast_strides(&vb->shape, &y->shape, sb);
        struct mps_cu_walk w = mps_cuda_walk(&y->shape, sa, sb, sy);
        float alpha = op == MPS_OP_MOD ? (float)n->p.binary.fmod : fused ? act->p.alpha : 0; /* Mod: fmod */
        MPS_CU_CHECK(mps_cu_binary(n->n_in == 1 ? MPS_OP_MAX : (int)op, (int)y->dtype, a, b, MPS_OUT(0), &w, fused,
                                   alpha, fused ? act->p.beta : 0, s->stream));
    }
    if (op == MPS_OP_MEAN)
        MPS_CU_CHECK(mps_cu_scale(MPS_OUT(0), 1.0f / (float)n->n_in, mps_shape_numel(&y->shape), s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_logic(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *y = MPS_OUTV(0);
    int64_t st[3][MPS_MAX_DIMS];
    for (int i = 0; i < 3 && i < n->n_in; i++)
        mps_shape_broadcast_strides(&MPS_INV(i)->shape, &y->shape, st[i]);
    if (n->op == MPS_OP_WHERE) { /* the output is contiguous: the walk carries the three inputs */
        struct mps_cu_walk w = mps_cuda_walk(&y->shape, st[0], st[1], st[2]);
        MPS_CU_CHECK(mps_cu_where(MPS_IN(0), MPS_IN(1), MPS_IN(2), MPS_OUT(0), &w, mps_dtype_size(y->dtype),
                                  s->stream));
        return MPS_OK;
    }
    int64_t sy[MPS_MAX_DIMS];
    mps_shape_strides(&y->shape, sy);
    int b = n->n_in > 1 ? 1 : 0; /* the unary ones read input 0 twice */
    struct mps_cu_walk w = mps_cuda_walk(&y->shape, st[0], st[b], sy);
    int inf = (n->p.isinf.positive ? 1 : 0) | (n->p.isinf.negative ? 2 : 0);
    MPS_CU_CHECK(mps_cu_logic((int)n->op, (int)MPS_INV(0)->dtype, n->op == MPS_OP_IS_INF ? inf : 0, MPS_IN(0),
                              MPS_IN(b), MPS_OUT(0), &w, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_reduce(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    int64_t st[MPS_MAX_DIMS];
    mps_shape_strides(x, st);
    struct mps_shape keep = {0, {0}}, red = {0, {0}};
    int64_t ks[MPS_MAX_DIMS], rs[MPS_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) {
        bool r = n->p.reduce.axes & (1u << d);
        struct mps_shape *t = r ? &red : &keep;
        (r ? rs : ks)[t->ndim] = st[d];
        t->dim[t->ndim++] = x->dim[d];
    }
    struct mps_cu_walk wk = mps_cuda_walk(&keep, ks, NULL, NULL), wr = mps_cuda_walk(&red, rs, NULL, NULL);
    MPS_CU_CHECK(mps_cu_reduce((int)n->op, MPS_IN(0), MPS_OUT(0), mps_shape_numel(&MPS_OUTV(0)->shape), &wk, &wr,
                               s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_layout(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0), *y = MPS_OUTV(0);
    size_t elem = mps_dtype_size(y->dtype);
    int64_t xs[MPS_MAX_DIMS], ys[MPS_MAX_DIMS], src[MPS_MAX_DIMS];
    mps_shape_strides(&x->shape, xs);
    mps_shape_strides(&y->shape, ys);
    const unsigned char *base = MPS_IN(0);
    switch (n->op) {
    case MPS_OP_TRANSPOSE:
        for (int i = 0; i < y->shape.ndim; i++)
            src[i] = xs[n->p.transpose.perm[i]];
        break;
    case MPS_OP_SLICE:
        for (int i = 0; i < y->shape.ndim; i++) {
            src[i] = xs[i] * n->p.slice.step[i];
            if (y->shape.dim[i])
                base += n->p.slice.start[i] * xs[i] * (int64_t)elem;
        }
        break;
    default: /* Expand */
        mps_shape_broadcast_strides(&x->shape, &y->shape, src);
        break;
    }
    struct mps_cu_walk w = mps_cuda_walk(&y->shape, ys, src, NULL);
    MPS_CU_CHECK(mps_cu_copy(MPS_OUT(0), base, &w, elem, s->stream));
    return MPS_OK;
}

/* Concat and Split: blocks along the axis between one big tensor and the parts. */
static enum mps_status mps_cuda_blocks(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    bool concat = n->op == MPS_OP_CONCAT;
    int axis = (int)n->p.axis.axis, parts = concat ? n->n_in : n->n_out;
    const struct mps_value *big = concat ? MPS_OUTV(0) : MPS_INV(0);
    unsigned char *bd = concat ? MPS_OUT(0) : MPS_IN(0);
    size_t elem = mps_dtype_size(big->dtype);
    int64_t bs[MPS_MAX_DIMS], ps[MPS_MAX_DIMS], off = 0;
    mps_shape_strides(&big->shape, bs);
    for (int i = 0; i < parts; i++) {
        const struct mps_value *pv = concat ? MPS_INV(i) : MPS_OUTV(i);
        unsigned char *pd = concat ? MPS_IN(i) : MPS_OUT(i);
        mps_shape_strides(&pv->shape, ps);
        struct mps_cu_walk w = concat ? mps_cuda_walk(&pv->shape, bs, ps, NULL) : mps_cuda_walk(&pv->shape, ps, bs, NULL);
        unsigned char *at = bd + off * bs[axis] * (int64_t)elem;
        if (mps_shape_numel(&pv->shape))
            MPS_CU_CHECK(mps_cu_copy(concat ? at : pd, concat ? pd : at, &w, elem, s->stream));
        off += pv->shape.dim[axis];
    }
    return MPS_OK;
}

static enum mps_status mps_cuda_gather(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0), *ix = MPS_INV(1);
    int axis = (int)n->p.axis.axis;
    MPS_CU_CHECK(mps_cu_gather(MPS_IN(0), MPS_IN(1), ix->dtype == MPS_I64, MPS_OUT(0), mps_cuda_prod(&x->shape, 0, axis),
                               x->shape.dim[axis], mps_shape_numel(&ix->shape),
                               mps_cuda_prod(&x->shape, axis + 1, x->shape.ndim), mps_dtype_size(x->dtype), s->stream));
    return MPS_OK;
}

/* GatherElements, GatherND, ScatterND, ScatterElements: offsets prepared at compile (mps_index_plan). */
static enum mps_status mps_cuda_index(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0);
    const int64_t *off = s->packed[n - g->nodes];
    int64_t count = mps_index_plan(g, n, NULL, NULL);
    size_t elem = mps_dtype_size(x->dtype);
    if (n->op == MPS_OP_GATHER_ND || n->op == MPS_OP_GATHER_ELEMENTS) {
        MPS_CU_CHECK(mps_cu_gather_flat(MPS_IN(0), off, MPS_OUT(0), count, elem, s->stream));
        return MPS_OK;
    }
    if (MPS_OUT(0) != MPS_IN(0))
        MPS_CUDA_CHECK(cudaMemcpyAsync(MPS_OUT(0), MPS_IN(0), (size_t)mps_shape_numel(&x->shape) * elem,
                                       cudaMemcpyDeviceToDevice, s->stream));
    MPS_CU_CHECK(mps_cu_scatter_flat(MPS_OUT(0), off, MPS_IN(2), count, elem, (int)x->dtype,
                                     (int)n->p.index.reduction, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_fill_node(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *y = MPS_OUTV(0);
    if (n->op == MPS_OP_RANGE) {
        MPS_CU_CHECK(mps_cu_range((int)y->dtype, n->p.range.start, n->p.range.delta, MPS_OUT(0), y->shape.dim[0],
                                  s->stream));
        return MPS_OK;
    }
    if (n->op == MPS_OP_CONSTANT_OF_SHAPE) {
        MPS_CU_CHECK(mps_cu_fill((int)y->dtype, n->p.fill.value, MPS_OUT(0), mps_shape_numel(&y->shape), s->stream));
        return MPS_OK;
    }
    for (int64_t i = n->p.shape.start; i < n->p.shape.end; i++) /* Shape: a handful of dims */
        MPS_CU_CHECK(mps_cu_fill(MPS_I64, (double)MPS_INV(0)->shape.dim[i], (int64_t *)MPS_OUT(0) + (i - n->p.shape.start),
                                 1, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_pad(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0), *y = MPS_OUTV(0);
    unsigned char fill[8];
    mps_elem_set(fill, y->dtype, 0, n->p.pad.value);
    if (mps_shape_numel(&y->shape) == 0)
        return MPS_OK;
    MPS_CU_CHECK(mps_cu_pad(MPS_IN(0), MPS_OUT(0), y->shape.ndim, x->shape.dim, y->shape.dim, n->p.pad.pads,
                            (int)n->p.pad.mode, fill, mps_dtype_size(y->dtype), s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_resize(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0), *y = MPS_OUTV(0);
    if (mps_shape_numel(&y->shape) == 0)
        return MPS_OK;
    MPS_CU_CHECK(mps_cu_resize(MPS_IN(0), MPS_OUT(0), y->shape.ndim, x->shape.dim, y->shape.dim, &n->p.resize,
                               s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_arg(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0);
    bool hard = n->op == MPS_OP_HARDMAX;
    int64_t axis = hard ? n->p.norm.axis : n->p.arg.axis, outer = 1, inner = 1;
    for (int d = 0; d < x->shape.ndim; d++)
        if (d < axis)
            outer *= x->shape.dim[d];
        else if (d > axis)
            inner *= x->shape.dim[d];
    MPS_CU_CHECK(mps_cu_arg(MPS_IN(0), (int)x->dtype, MPS_OUT(0), outer, x->shape.dim[axis], inner,
                            n->op != MPS_OP_ARG_MIN, !hard && n->p.arg.last, hard, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_topk(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0);
    const struct mps_topk_params *p = &n->p.topk;
    MPS_CU_CHECK(mps_cu_topk(MPS_IN(0), (int)x->dtype, MPS_OUT(0), MPS_OUT(1), mps_cuda_prod(&x->shape, 0, (int)p->axis),
                             x->shape.dim[p->axis], mps_cuda_prod(&x->shape, (int)p->axis + 1, x->shape.ndim), p->k,
                             p->largest, mps_dtype_size(x->dtype), s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_onehot(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *y = MPS_OUTV(0);
    const struct mps_onehot_params *p = &n->p.onehot;
    MPS_CU_CHECK(mps_cu_onehot(MPS_IN(0), (int)MPS_INV(0)->dtype, MPS_OUT(0), (int)y->dtype,
                               mps_cuda_prod(&y->shape, 0, (int)p->axis), p->depth,
                               mps_cuda_prod(&y->shape, (int)p->axis + 1, y->shape.ndim), p->off, p->on, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_trilu(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *y = MPS_OUTV(0);
    int r = y->shape.ndim;
    MPS_CU_CHECK(mps_cu_trilu(MPS_IN(0), MPS_OUT(0), mps_shape_numel(&y->shape), y->shape.dim[r - 2],
                              y->shape.dim[r - 1], n->p.trilu.upper, n->p.trilu.k, mps_dtype_size(y->dtype),
                              s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_cumsum(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_value *x = MPS_INV(0);
    int64_t axis = n->p.cumsum.axis;
    MPS_CU_CHECK(mps_cu_cumsum(MPS_IN(0), MPS_OUT(0), (int)x->dtype, mps_cuda_prod(&x->shape, 0, (int)axis),
                               x->shape.dim[axis], mps_cuda_prod(&x->shape, (int)axis + 1, x->shape.ndim),
                               n->p.cumsum.exclusive, n->p.cumsum.reverse, s->stream));
    return MPS_OK;
}

/* Tile: the strided copy it is (graph.h). */
static enum mps_status mps_cuda_tile(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    struct mps_shape view;
    int64_t src[MPS_MAX_DIMS], dst[MPS_MAX_DIMS];
    mps_tile_view(&MPS_INV(0)->shape, n->p.tile.repeats, &view, src);
    mps_shape_strides(&view, dst);
    struct mps_cu_walk w = mps_cuda_walk(&view, dst, src, NULL);
    if (mps_shape_numel(&view))
        MPS_CU_CHECK(mps_cu_copy(MPS_OUT(0), MPS_IN(0), &w, mps_dtype_size(MPS_OUTV(0)->dtype), s->stream));
    return MPS_OK;
}

/* DepthToSpace, SpaceToDepth: the six-dim transpose they are (graph.h). */
static enum mps_status mps_cuda_depth(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    struct mps_shape out6;
    int64_t src[6], dst[MPS_MAX_DIMS];
    mps_depth_transpose(n, &MPS_INV(0)->shape, &out6, src);
    mps_shape_strides(&out6, dst);
    struct mps_cu_walk w = mps_cuda_walk(&out6, dst, src, NULL);
    MPS_CU_CHECK(mps_cu_copy(MPS_OUT(0), MPS_IN(0), &w, mps_dtype_size(MPS_OUTV(0)->dtype), s->stream));
    return MPS_OK;
}

mps_cuda_launcher mps_cuda_data_launcher(enum mps_op op)
{
    if (mps_op_is_logic(op))
        return mps_cuda_logic;
    if (mps_op_is_reduce(op))
        return mps_cuda_reduce;
    if (mps_op_is_unary(op))
        return mps_cuda_unary;
    if (mps_op_is_view(op))
        return mps_cuda_same_bytes;
    switch (op) {
    case MPS_OP_CONSTANT: return mps_cuda_same_bytes;
    case MPS_OP_CAST: return mps_cuda_cast;
    case MPS_OP_PRELU:
    case MPS_OP_ADD:
    case MPS_OP_SUB:
    case MPS_OP_MUL:
    case MPS_OP_DIV:
    case MPS_OP_POW:
    case MPS_OP_MAX:
    case MPS_OP_MIN:
    case MPS_OP_SUM:
    case MPS_OP_MEAN:
    case MPS_OP_MOD: return mps_cuda_binary;
    case MPS_OP_TRANSPOSE:
    case MPS_OP_SLICE:
    case MPS_OP_EXPAND: return mps_cuda_layout;
    case MPS_OP_CONCAT:
    case MPS_OP_SPLIT: return mps_cuda_blocks;
    case MPS_OP_GATHER: return mps_cuda_gather;
    case MPS_OP_GATHER_ELEMENTS:
    case MPS_OP_GATHER_ND:
    case MPS_OP_SCATTER_ND:
    case MPS_OP_SCATTER_ELEMENTS: return mps_cuda_index;
    case MPS_OP_SHAPE:
    case MPS_OP_CONSTANT_OF_SHAPE:
    case MPS_OP_RANGE: return mps_cuda_fill_node;
    case MPS_OP_TILE: return mps_cuda_tile;
    case MPS_OP_PAD: return mps_cuda_pad;
    case MPS_OP_RESIZE: return mps_cuda_resize;
    case MPS_OP_DEPTH_TO_SPACE:
    case MPS_OP_SPACE_TO_DEPTH: return mps_cuda_depth;
    case MPS_OP_ARG_MAX:
    case MPS_OP_ARG_MIN:
    case MPS_OP_HARDMAX: return mps_cuda_arg;
    case MPS_OP_TRILU: return mps_cuda_trilu;
    case MPS_OP_ONE_HOT: return mps_cuda_onehot;
    case MPS_OP_TOP_K: return mps_cuda_topk;
    case MPS_OP_CUM_SUM: return mps_cuda_cumsum;
    default: return NULL; /* no kernel: supports() refuses the node by name */
    }
}
