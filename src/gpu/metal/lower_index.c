/* lower_index.c: the indexing and selection ops as MPSGraph steps: Gather,
   GatherElements, GatherND, ScatterElements, ScatterND (constant indices as
   flat offsets), OneHot, ArgMax/ArgMin/Hardmax and TopK (from steps whose
   results MPSGraph documents: ties and NaNs in ONNX's order). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "lower_impl.h"

/* ArgMax and ArgMin from steps whose results MPSGraph documents (its own
   argMax leaves ties and NaNs unsaid): the extremum along the axis, the
   positions equal to it (or, in a lane holding a NaN, its NaNs: a NaN beats
   every number), then the smallest such position from an int32 iota (the
   largest with select_last_index). Returns the int32 index, the axis kept
   as 1; *pos: the iota. */
static int mps_mtl_arg_index(struct mps_mtl_lowerer *L, int x, int axis, bool max, bool last, int *pos)
{
    if (x < 0)
        return -1;
    const struct mps_shape *xs = mps_mtl_shape(L, x);
    int64_t len = xs->dim[axis];
    uint32_t ax = 1u << axis;
    *pos = mps_mtl_iota(L, xs->ndim, axis, len);
    int nan = mps_mtl_binary(L, MPS_MTL_NOT_EQUAL, x, x);
    int any = mps_mtl_binary_scalar(L, MPS_MTL_GREATER,
                                    mps_mtl_reduce(L, MPS_MTL_REDUCE_MAX, mps_mtl_cast(L, nan, MPS_I32), ax), 0.0);
    int ext = mps_mtl_reduce(L, max ? MPS_MTL_REDUCE_MAX : MPS_MTL_REDUCE_MIN, x, ax);
    int hit = mps_mtl_select(L, any, nan, mps_mtl_binary(L, MPS_MTL_EQUAL, x, ext));
    int cand = mps_mtl_select(L, hit, *pos, mps_mtl_scalar(L, last ? -1.0 : (double)len, MPS_I32));
    return mps_mtl_reduce(L, last ? MPS_MTL_REDUCE_MAX : MPS_MTL_REDUCE_MIN, cand, ax);
}

/* ArgMax, ArgMin: the index as int64; Hardmax: 1 where the iota is ArgMax's index. */
void mps_mtl_lower_arg(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int x = mps_mtl_value(L, n->in[0]), pos, y;
    if (n->op == MPS_OP_HARDMAX) {
        int idx = mps_mtl_arg_index(L, x, (int)n->p.norm.axis, true, false, &pos);
        y = mps_mtl_cast(L, mps_mtl_binary(L, MPS_MTL_EQUAL, pos, idx), mps_mtl_dtype(L, x));
    } else {
        const struct mps_arg_params *p = &n->p.arg;
        int idx = mps_mtl_arg_index(L, x, (int)p->axis, n->op == MPS_OP_ARG_MAX, p->last, &pos);
        y = mps_mtl_reshape(L, mps_mtl_cast(L, idx, MPS_I64), mps_mtl_vshape(L, n->out[0]));
    }
    mps_mtl_define_as(L, n->out[0], y);
}

/* TopK by ranks, from steps whose results MPSGraph documents (its topK
   leaves the order of equal values unsaid): x seen as [O, L, I] (L along
   the axis); element i's rank is the number of j ahead of it (the better
   value, a NaN above every number, then the lower index), from an [O, L, L, I]
   comparison; output r takes the element of rank r, by a one-hot select and
   a sum in which only that element is not 0. */
void mps_mtl_lower_topk(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_topk_params *p = &n->p.topk;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int64_t len = xs->dim[p->axis], k = p->k, outer = 1, inner = 1;
    for (int d = 0; d < xs->ndim; d++)
        if (d < p->axis)
            outer *= xs->dim[d];
        else if (d > p->axis)
            inner *= xs->dim[d];
    uint8_t *lt = mps_mtl_alloc(L, (size_t)(len * len + 1));
    int x = mps_mtl_value(L, n->in[0]);
    for (int64_t i = 0; lt && i < len; i++)
        for (int64_t j = 0; j < len; j++)
            lt[i * len + j] = j < i; /* [i][j]: j comes before i on a tie */
    int jlt = mps_mtl_const_data(L, MPS_BOOL, &(struct mps_shape){4, {1, len, len, 1}}, lt);
    int pos = mps_mtl_iota(L, 4, 1, len), ranks = mps_mtl_iota(L, 4, 2, k);
    int xi = mps_mtl_reshape(L, x, &(struct mps_shape){4, {outer, len, 1, inner}});
    int xj = mps_mtl_reshape(L, x, &(struct mps_shape){4, {outer, 1, len, inner}});
    int ni = mps_mtl_binary(L, MPS_MTL_NOT_EQUAL, xi, xi), nj = mps_mtl_binary(L, MPS_MTL_NOT_EQUAL, xj, xj);
    /* j ahead of i: a NaN j over a number i (largest) or a number j over a NaN i (smallest), a
       better number, or a tie (equal, or both NaN) broken by the index */
    int nan_wins = p->largest ? mps_mtl_binary(L, MPS_MTL_AND, nj, mps_mtl_unary(L, MPS_MTL_NOT, ni))
                              : mps_mtl_binary(L, MPS_MTL_AND, ni, mps_mtl_unary(L, MPS_MTL_NOT, nj));
    int better = mps_mtl_binary(L, p->largest ? MPS_MTL_GREATER : MPS_MTL_LESS, xj, xi);
    int tie =
        mps_mtl_binary(L, MPS_MTL_OR, mps_mtl_binary(L, MPS_MTL_EQUAL, xj, xi), mps_mtl_binary(L, MPS_MTL_AND, nj, ni));
    int ahead = mps_mtl_binary(L, MPS_MTL_OR, mps_mtl_binary(L, MPS_MTL_OR, nan_wins, better),
                               mps_mtl_binary(L, MPS_MTL_AND, tie, jlt));
    int rank = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_cast(L, ahead, MPS_I32), 1u << 2); /* [O, L, 1, I] */
    int hot = mps_mtl_binary(L, MPS_MTL_EQUAL, rank, ranks);                                    /* [O, L, k, I] */
    int vals = mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM,
                              mps_mtl_select(L, hot, xi, mps_mtl_scalar(L, 0.0, mps_mtl_dtype(L, x))), 1u << 1);
    int idx =
        mps_mtl_reduce(L, MPS_MTL_REDUCE_SUM, mps_mtl_select(L, hot, pos, mps_mtl_scalar(L, 0.0, MPS_I32)), 1u << 1);
    mps_mtl_define_as(L, n->out[0], mps_mtl_reshape(L, vals, mps_mtl_vshape(L, n->out[0])));
    mps_mtl_define_as(L, n->out[1], mps_mtl_reshape(L, mps_mtl_cast(L, idx, MPS_I64), mps_mtl_vshape(L, n->out[1])));
}

/* Gather with constant indices: negatives resolved here into an int32
   constant (rank >= 1; a scalar index becomes [1] and the result is
   reshaped to the inferred shape). */
void mps_mtl_lower_gather(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_value *iv = &L->g->values[n->in[1]];
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    int axis = (int)n->p.axis.axis;
    int64_t count = mps_shape_numel(&iv->shape), dim = xs->dim[axis];
    int64_t *idx = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(count + 1));
    int x = mps_mtl_value(L, n->in[0]);
    if (!idx || x < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t v = iv->dtype == MPS_I64 ? ((const int64_t *)iv->data)[i] : ((const int32_t *)iv->data)[i];
        idx[i] = v < 0 ? v + dim : v;
    }
    struct mps_shape is = iv->shape.ndim ? iv->shape : (struct mps_shape){1, {1}};
    int ids = mps_mtl_int32s(L, idx, &is);
    struct mps_mtl_step *st;
    struct mps_shape ys = {0, {0}};
    for (int i = 0; i < xs->ndim; i++)
        if (i != axis)
            ys.dim[ys.ndim++] = xs->dim[i];
        else
            for (int k = 0; k < is.ndim; k++)
                ys.dim[ys.ndim++] = is.dim[k];
    int y = mps_mtl_emit(L, MPS_MTL_GATHER, 0, mps_mtl_dtype(L, x), &ys, (int[]){x, ids}, 2, &st);
    if (y >= 0)
        st->p.ax.axis = axis;
    mps_mtl_define_as(L, n->out[0], y);
}

/* x seen as one row, gathered at the flat offsets idx (an int32 tensor of the result's shape). */
static int mps_mtl_gather_flat(struct mps_mtl_lowerer *L, int x, int idx)
{
    if (x < 0 || idx < 0)
        return -1;
    x = mps_mtl_reshape(L, x, &(struct mps_shape){1, {mps_shape_numel(mps_mtl_shape(L, x))}});
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_GATHER, 0, mps_mtl_dtype(L, x), mps_mtl_shape(L, idx), (int[]){x, idx}, 2, &st);
    if (y >= 0)
        st->p.ax.axis = 0;
    return y;
}

/* A scatter with a reduction: the updates each element gets, in index order,
   gathered into a row padded with the reduction's identity (appended after the
   updates), reduced, and combined with the data. */
static int mps_mtl_scatter_reduce(struct mps_mtl_lowerer *L, const struct mps_node *n, const int64_t *off,
                                  int64_t count, int x)
{
    static const enum mps_mtl_reduce reduce[] = {[MPS_SCATTER_ADD] = MPS_MTL_REDUCE_SUM,
                                                 [MPS_SCATTER_MUL] = MPS_MTL_REDUCE_PROD,
                                                 [MPS_SCATTER_MAX] = MPS_MTL_REDUCE_MAX,
                                                 [MPS_SCATTER_MIN] = MPS_MTL_REDUCE_MIN};
    static const enum mps_mtl_binary combine[] = {[MPS_SCATTER_ADD] = MPS_MTL_ADD,
                                                  [MPS_SCATTER_MUL] = MPS_MTL_MUL,
                                                  [MPS_SCATTER_MAX] = MPS_MTL_MAX,
                                                  [MPS_SCATTER_MIN] = MPS_MTL_MIN};
    enum mps_scatter_reduction red = n->p.index.reduction;
    const struct mps_shape *ys = mps_mtl_vshape(L, n->out[0]);
    int64_t total = mps_shape_numel(ys), most = 1;
    int64_t *got = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(total + 1));
    if (!got)
        return -1;
    memset(got, 0, sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < count; i++)
        most = ++got[off[i]] > most ? got[off[i]] : most;
    int64_t *table = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(total * most + 1));
    if (!table)
        return -1;
    for (int64_t t = 0; t < total * most; t++)
        table[t] = count; /* the identity, appended after the updates */
    memset(got, 0, sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < count; i++)
        table[off[i] * most + got[off[i]]++] = i;
    enum mps_dtype t = mps_mtl_dtype(L, x);
    double identity = red == MPS_SCATTER_ADD   ? 0
                      : red == MPS_SCATTER_MUL ? 1
                      : red == MPS_SCATTER_MAX ? -INFINITY
                                               : INFINITY;
    if (t != MPS_F32 && t != MPS_F16 && red >= MPS_SCATTER_MAX) /* integers: their extremes */
        identity = red == MPS_SCATTER_MAX ? (t == MPS_I32 ? INT32_MIN : (double)INT64_MIN)
                                          : (t == MPS_I32 ? INT32_MAX : (double)INT64_MAX);
    struct mps_mtl_step *st;
    int u = mps_mtl_reshape(L, mps_mtl_value(L, n->in[2]), &(struct mps_shape){1, {count}});
    int pad = mps_mtl_emit(L, MPS_MTL_FILL, 0, t, &(struct mps_shape){1, {1}}, NULL, 0, &st);
    if (pad >= 0)
        st->p.scalar = identity;
    int row = u < 0 || pad < 0
                  ? -1
                  : mps_mtl_emit(L, MPS_MTL_CONCAT, 0, t, &(struct mps_shape){1, {count + 1}}, (int[]){u, pad}, 2, &st);
    if (row >= 0)
        st->p.ax.axis = 0;
    int each = mps_mtl_gather_flat(L, row, mps_mtl_int32s(L, table, &(struct mps_shape){2, {total, most}}));
    int r = mps_mtl_reshape(L, mps_mtl_reduce(L, reduce[red], each, 1u << 1), ys);
    return mps_mtl_binary(L, combine[red], x, r);
}

/* GatherElements, GatherND, ScatterND and ScatterElements with constant
   indices, from their flat offsets (graph.h: mps_index_plan): a gather; a
   scatter without a reduction as select(written, updates gathered at the last update each
   element gets, data); with one, mps_mtl_scatter_reduce. */
void mps_mtl_lower_index(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    int64_t count = mps_index_plan(L->g, n, NULL, NULL);
    int64_t *off = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(count + 1));
    if (!off || mps_index_plan(L->g, n, off, NULL) < 0) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    int x = mps_mtl_value(L, n->in[0]);
    const struct mps_shape *ys = mps_mtl_vshape(L, n->out[0]);
    if (n->op == MPS_OP_GATHER_ND || n->op == MPS_OP_GATHER_ELEMENTS) {
        mps_mtl_define_as(L, n->out[0], mps_mtl_gather_flat(L, x, mps_mtl_int32s(L, off, ys)));
        return;
    }
    if (n->p.index.reduction != MPS_SCATTER_NONE) {
        mps_mtl_define_as(L, n->out[0], mps_mtl_scatter_reduce(L, n, off, count, x));
        return;
    }
    int64_t total = mps_shape_numel(ys), *src = mps_mtl_alloc(L, sizeof(int64_t) * (size_t)(total + 1));
    uint8_t *hit = mps_mtl_alloc(L, (size_t)(total + 1));
    if (!src || !hit) {
        mps_mtl_define(L, n->out[0], -1);
        return;
    }
    memset(hit, 0, (size_t)total);
    memset(src, 0, sizeof(int64_t) * (size_t)total);
    for (int64_t i = 0; i < count; i++)
        if (off[i] >= 0)
            src[off[i]] = i, hit[off[i]] = 1;
    int mask = mps_mtl_const_data(L, MPS_BOOL, ys, hit);
    int upd = mps_mtl_gather_flat(L, mps_mtl_value(L, n->in[2]), mps_mtl_int32s(L, src, ys));
    mps_mtl_define_as(L, n->out[0], mps_mtl_select(L, mask, upd, x));
}

/* OneHot: the indices (negative ones moved up by depth) seen with a 1 at the
   new axis, compared with an iota along it; on where equal, off elsewhere. */
void mps_mtl_lower_onehot(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_onehot_params *p = &n->p.onehot;
    const struct mps_value *y = &L->g->values[n->out[0]];
    struct mps_shape ones = y->shape;
    ones.dim[p->axis] = 1;
    int pos = mps_mtl_iota(L, y->shape.ndim, (int)p->axis, p->depth);
    int x = mps_mtl_cast(L, mps_mtl_value(L, n->in[0]), MPS_I32); /* floats truncate, as the CPU's (int64) does */
    int fixed = mps_mtl_select(L, mps_mtl_binary_scalar(L, MPS_MTL_LESS, x, 0.0),
                               mps_mtl_binary_scalar(L, MPS_MTL_ADD, x, (double)p->depth), x);
    enum mps_dtype t = mps_mtl_compute_dtype(L, y->dtype);
    int hit = mps_mtl_binary(L, MPS_MTL_EQUAL, mps_mtl_reshape(L, fixed, &ones), pos);
    mps_mtl_define(L, n->out[0], mps_mtl_select(L, hit, mps_mtl_scalar(L, p->on, t), mps_mtl_scalar(L, p->off, t)));
}
