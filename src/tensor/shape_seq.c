/* shape_seq.c: the shape rules of the recurrent nets (RNN, GRU, LSTM), of
   a run-time If's outputs, of the losses, of GridSample, Einsum,
   TfIdfVectorizer and RandomLike, and the quantized operands of the int8
   products: ops over sequences, branches, targets, sampling grids,
   equations, n-grams, random numbers and quantized tensors, beside the math
   ops' (shape.c) and the layout ops' (shape_layout.c). */
#include "einsum.h"
#include "shape_rules.h"

/* Whether input i of n, when given, is of dtype dt and the shape want (a message naming it else). */
static enum mps_status mps_shape_rnn_input(struct mps_graph *g, struct mps_node *n, int i, const char *what,
                                           enum mps_dtype dt, const struct mps_shape *want, struct mps_error *err)
{
    const struct mps_value *v = mps_shape_in(g, n, i);
    char a[96], b[96];
    if (v && (v->dtype != dt || !mps_shape_eq(&v->shape, want)))
        return mps_shape_fail(n, err, "%s '%s' is %s %s, not %s %s", what, v->name, mps_dtype_name(v->dtype),
                              mps_shape_str(&v->shape, a, sizeof a), mps_dtype_name(dt),
                              mps_shape_str(want, b, sizeof b));
    return MPS_OK;
}

/* RNN, GRU, LSTM (op.h): X [seq, batch, input] (batch first: [batch, seq, input]). */
static enum mps_status mps_shape_rnn(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *w = mps_shape_in(g, n, 1), *r = mps_shape_in(g, n, 2);
    struct mps_rnn_params *p = &n->p.rnn;
    int64_t gates = mps_rnn_gates(n->op), dirs = p->direction == 2 ? 2 : 1;
    if (x->dtype != MPS_F32 || x->shape.ndim != 3)
        return mps_shape_fail(n, err, "X must be f32 of 3 dims [seq, batch, input]");
    if (r->shape.ndim != 3 || w->shape.ndim != 3)
        return mps_shape_fail(n, err, "W and R must have 3 dims");
    if (p->hidden <= 0)
        p->hidden = r->shape.dim[2];
    int64_t seq = x->shape.dim[p->batch_first], batch = x->shape.dim[!p->batch_first], in = x->shape.dim[2],
            h = p->hidden;
    enum mps_status st;
    if (h <= 0 || h > ((int64_t)1 << 20) / gates)
        return mps_shape_fail(n, err, "hidden_size %lld is not from 1 to %lld", (long long)h,
                              (long long)(((int64_t)1 << 20) / gates));
    struct mps_shape sw = {3, {dirs, gates * h, in}}, sr = {3, {dirs, gates * h, h}}, sb = {2, {dirs, 2 * gates * h}},
                     sl = {1, {batch}}, sh = {3, {dirs, batch, h}}, sp = {2, {dirs, 3 * h}};
    if (p->batch_first)
        sh = (struct mps_shape){3, {batch, dirs, h}};
    if ((st = mps_shape_rnn_input(g, n, 1, "W", MPS_F32, &sw, err)) ||
        (st = mps_shape_rnn_input(g, n, 2, "R", MPS_F32, &sr, err)) ||
        (st = mps_shape_rnn_input(g, n, 3, "B", MPS_F32, &sb, err)) ||
        (st = mps_shape_rnn_input(g, n, 4, "sequence_lens", MPS_I32, &sl, err)) ||
        (st = mps_shape_rnn_input(g, n, 5, "initial_h", MPS_F32, &sh, err)) ||
        (n->op == MPS_OP_LSTM && ((st = mps_shape_rnn_input(g, n, 6, "initial_c", MPS_F32, &sh, err)) ||
                                  (st = mps_shape_rnn_input(g, n, 7, "P", MPS_F32, &sp, err)))))
        return st;
    struct mps_shape y =
        p->batch_first ? (struct mps_shape){4, {batch, seq, dirs, h}} : (struct mps_shape){4, {seq, dirs, batch, h}};
    if (mps_shape_numel(&y) < 0)
        return mps_shape_fail(n, err, "the output would be too large");
    mps_shape_set(g, n, 0, MPS_F32, &y);
    for (int o = 1; o < n->n_out; o++)
        mps_shape_set(g, n, o, MPS_F32, &sh);
    return MPS_OK;
}

/* If (a run-time one): one bool, then n outputs of each branch, alike pairwise
   (a plan has one shape per value, whichever branch a run takes). */
static enum mps_status mps_shape_if(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *c = mps_shape_in(g, n, 0);
    if (n->n_in != 1 + 2 * n->n_out)
        return mps_shape_fail(n, err, "%d inputs for %d outputs: a condition and two branches' outputs", n->n_in,
                              n->n_out);
    if (mps_shape_numel(&c->shape) != 1 || (c->dtype != MPS_BOOL && c->dtype != MPS_U8))
        return mps_shape_fail(n, err, "its condition '%s' is %s of %lld elements, not one bool", c->name,
                              mps_dtype_name(c->dtype), (long long)mps_shape_numel(&c->shape));
    for (int o = 0; o < n->n_out; o++) {
        const struct mps_value *a = mps_shape_in(g, n, 1 + o), *b = mps_shape_in(g, n, 1 + n->n_out + o);
        char x[128], y[128];
        if (!a || !b)
            return mps_shape_fail(n, err, "output %d is missing from a branch", o);
        if (a->dtype != b->dtype || !mps_shape_eq(&a->shape, &b->shape))
            return mps_shape_fail(n, err,
                                  "its branches give output %d as %s %s and %s %s: an If decided at run time "
                                  "needs them alike here",
                                  o, mps_dtype_name(a->dtype), mps_shape_str(&a->shape, x, sizeof x),
                                  mps_dtype_name(b->dtype), mps_shape_str(&b->shape, y, sizeof y));
        mps_shape_set(g, n, o, a->dtype, &a->shape);
    }
    return MPS_OK;
}

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (op.h): scores f32 [N, C,
   d...], targets i64 or i32 [N, d...], weights f32 [C]. */
static enum mps_status mps_shape_loss(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *t = mps_shape_in(g, n, 1);
    char a[96], b[96];
    if (x->dtype != MPS_F32 || x->shape.ndim < 2)
        return mps_shape_fail(n, err, "its scores '%s' must be f32 of 2 dims or more [N, C, ...]", x->name);
    struct mps_shape ts = {x->shape.ndim - 1, {x->shape.dim[0]}}, ws = {1, {x->shape.dim[1]}};
    for (int d = 2; d < x->shape.ndim; d++)
        ts.dim[d - 1] = x->shape.dim[d];
    if ((t->dtype != MPS_I64 && t->dtype != MPS_I32) || !mps_shape_eq(&t->shape, &ts))
        return mps_shape_fail(n, err, "its target '%s' is %s %s, not i64 or i32 %s", t->name, mps_dtype_name(t->dtype),
                              mps_shape_str(&t->shape, a, sizeof a), mps_shape_str(&ts, b, sizeof b));
    enum mps_status st = mps_shape_rnn_input(g, n, 2, "its weight", MPS_F32, &ws, err);
    if (st)
        return st;
    struct mps_shape scalar = {0, {0}};
    mps_shape_set(g, n, 0, MPS_F32, n->p.loss.reduction == MPS_LOSS_NONE ? &ts : &scalar);
    if (n->n_out > 1)
        mps_shape_set(g, n, 1, MPS_F32, &x->shape);
    return MPS_OK;
}

/* GridSample (op.h): X f32 [N, C, H, W], grid f32 [N, Ho, Wo, 2]. */
static enum mps_status mps_shape_gridsample(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *grid = mps_shape_in(g, n, 1);
    char a[96], b[96];
    if (x->dtype != MPS_F32 || grid->dtype != MPS_F32 || x->shape.ndim != 4 || grid->shape.ndim != 4 ||
        grid->shape.dim[0] != x->shape.dim[0] || grid->shape.dim[3] != 2)
        return mps_shape_fail(n, err, "X %s %s and grid %s %s must be f32 [N,C,H,W] and [N,Ho,Wo,2]",
                              mps_dtype_name(x->dtype), mps_shape_str(&x->shape, a, sizeof a),
                              mps_dtype_name(grid->dtype), mps_shape_str(&grid->shape, b, sizeof b));
    struct mps_shape y = {4, {x->shape.dim[0], x->shape.dim[1], grid->shape.dim[1], grid->shape.dim[2]}};
    mps_shape_set(g, n, 0, MPS_F32, &y);
    return MPS_OK;
}

/* MaxUnpool (op.h): X f32 [N, C, spatial...], I i64 of X's shape, output_shape a constant. */
static enum mps_status mps_shape_unpool(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *ix = mps_shape_in(g, n, 1);
    const struct mps_window *w = &n->p.pool.win;
    int sp = x->shape.ndim - 2;
    if (x->dtype != MPS_F32 || ix->dtype != MPS_I64 || !mps_shape_eq(&x->shape, &ix->shape) || sp < 1 ||
        sp > MPS_MAX_SPATIAL)
        return mps_shape_fail(n, err, "X must be f32 [N, C, 1 to 3 spatial dims] and I i64 of its shape");
    struct mps_shape y = x->shape, given;
    for (int i = 0; i < sp; i++) {
        if (w->kernel[i] < 1 || w->stride[i] < 1)
            return mps_shape_fail(n, err, "kernel_shape and strides must be positive");
        y.dim[2 + i] = (x->shape.dim[2 + i] - 1) * w->stride[i] + w->kernel[i] - w->pad[i] - w->pad[sp + i];
        if (y.dim[2 + i] < 0)
            return mps_shape_fail(n, err, "the pads leave no output along spatial axis %d", i);
    }
    enum mps_status st;
    if (mps_shape_in(g, n, 2)) {
        if ((st = mps_shape_const_shape(g, n, 2, &given, err)))
            return st;
        bool fits = given.ndim == y.ndim && given.dim[0] == y.dim[0] && given.dim[1] == y.dim[1];
        for (int i = 0; fits && i < sp; i++)
            fits = given.dim[2 + i] >= y.dim[2 + i];
        char a[96], b[96];
        if (!fits)
            return mps_shape_fail(n, err, "output_shape %s is not %s or larger along the spatial axes",
                                  mps_shape_str(&given, a, sizeof a), mps_shape_str(&y, b, sizeof b));
        y = given;
    }
    mps_shape_set(g, n, 0, MPS_F32, &y);
    return MPS_OK;
}

/* RoiAlign (op.h): X f32 [N, C, H, W], rois f32 [R, 4], batch_indices i64 or i32 [R]. */
static enum mps_status mps_shape_roialign(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *rois = mps_shape_in(g, n, 1), *bi = mps_shape_in(g, n, 2);
    if (x->dtype != MPS_F32 || x->shape.ndim != 4 || rois->dtype != MPS_F32 || rois->shape.ndim != 2 ||
        rois->shape.dim[1] != 4 || (bi->dtype != MPS_I64 && bi->dtype != MPS_I32) || bi->shape.ndim != 1 ||
        bi->shape.dim[0] != rois->shape.dim[0])
        return mps_shape_fail(n, err, "X must be f32 [N,C,H,W], rois f32 [R,4] and batch_indices ints [R]");
    struct mps_shape y = {4, {rois->shape.dim[0], x->shape.dim[1], n->p.roialign.out_h, n->p.roialign.out_w}};
    mps_shape_set(g, n, 0, MPS_F32, &y);
    return MPS_OK;
}

/* Det: square matrices [..., n, n] of f32 or f64; one determinant each. */
static enum mps_status mps_shape_det(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_FLOAT | MPS_DT(MPS_F64), err);
    if (st)
        return st;
    int r = x->shape.ndim;
    if (r < 2 || x->shape.dim[r - 1] != x->shape.dim[r - 2])
        return mps_shape_fail(n, err, "the input must be square matrices [..., n, n]");
    struct mps_shape y = x->shape;
    y.ndim -= 2;
    mps_shape_set(g, n, 0, x->dtype, &y);
    return MPS_OK;
}

/* Einsum: inputs of one number dtype, the output's dims as its equation says. */
static enum mps_status mps_shape_einsum(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_shape *in[MPS_EINSUM_MAX_IN];
    const struct mps_value *x = mps_shape_in(g, n, 0);
    struct mps_einsum e;
    char why[160];
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        enum mps_status st = mps_shape_need_dtype(g, n, i, MPS_DT_NUMBER, err);
        if (st)
            return st;
        if (v->dtype != x->dtype)
            return mps_shape_fail(n, err, "inputs have dtypes %s and %s; they must match", mps_dtype_name(x->dtype),
                                  mps_dtype_name(v->dtype));
        in[i] = &v->shape;
    }
    if (!mps_einsum_parse(n->p.einsum.equation, n->n_in, in, &e, why, sizeof why))
        return mps_shape_fail(n, err, "equation '%s': %s", n->p.einsum.equation, why);
    struct mps_shape y = {e.out_ndim, {0}};
    for (int d = 0; d < e.out_ndim; d++)
        y.dim[d] = e.size[e.out[d]];
    mps_shape_set(g, n, 0, x->dtype, &y);
    return MPS_OK;
}

/* RandomLike: the input's shape, the dtype given (a float) or the input's. */
static enum mps_status mps_shape_random(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    enum mps_dtype dt = n->p.random.dtype == MPS_DTYPE_COUNT ? x->dtype : n->p.random.dtype;
    if (dt != MPS_F32 && dt != MPS_F64)
        return mps_shape_fail(n, err, "random numbers of %s: f32 and f64 are supported", mps_dtype_name(dt));
    mps_shape_set(g, n, 0, dt, &x->shape);
    return MPS_OK;
}

/* TfIdfVectorizer: int tokens [C] or [N, C], a constant pool whose
   ngram_counts rise to its size by whole n-grams, one distinct index >= 0
   per n-gram (and a weight, where given); [n_out] or [N, n_out] f32. */
static enum mps_status mps_shape_tfidf(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    struct mps_tfidf_params *p = &n->p.tfidf;
    const struct mps_value *x = mps_shape_in(g, n, 0), *pool = mps_shape_in(g, n, 1), *counts = mps_shape_in(g, n, 2),
                           *index = mps_shape_in(g, n, 3), *w = mps_shape_in(g, n, 4);
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_INT, err);
    if (st)
        return st;
    if (x->shape.ndim < 1 || x->shape.ndim > 2 || !pool->data || !counts->data || !index->data ||
        pool->dtype != MPS_I64 || counts->dtype != MPS_I64 || index->dtype != MPS_I64 || (w && !w->data))
        return mps_shape_fail(n, err, "tokens [C] or [N, C] and a constant pool, ngram_counts and ngram_indexes");
    int64_t len = mps_shape_numel(&pool->shape), k = mps_shape_numel(&counts->shape), grams = 0;
    const int64_t *c = counts->data, *ix = index->data;
    if (p->min_n < 1 || p->max_n < p->min_n || p->max_n > k || p->max_skip < 0)
        return mps_shape_fail(n, err,
                              "min_gram_length %lld, max_gram_length %lld (of %lld sizes) or max_skip_count "
                              "%lld out of range",
                              (long long)p->min_n, (long long)p->max_n, (long long)k, (long long)p->max_skip);
    for (int64_t i = 0; i < k; i++) {
        int64_t end = i + 1 < k ? c[i + 1] : len;
        if (c[i] < 0 || end < c[i] || (end - c[i]) % (i + 1))
            return mps_shape_fail(n, err, "ngram_counts[%lld] does not start a run of whole %lld-grams in the pool",
                                  (long long)i, (long long)i + 1);
        grams += (end - c[i]) / (i + 1);
    }
    if (mps_shape_numel(&index->shape) != grams || (w && mps_shape_numel(&w->shape) != grams))
        return mps_shape_fail(n, err, "%lld n-grams in the pool, but other counts of ngram_indexes or weights",
                              (long long)grams);
    p->n_out = 0;
    for (int64_t i = 0; i < grams; i++) {
        for (int64_t j = 0; j < i; j++)
            if (ix[j] == ix[i])
                return mps_shape_fail(n, err, "ngram_indexes repeats %lld", (long long)ix[i]);
        if (ix[i] < 0 || ix[i] > (1 << 24))
            return mps_shape_fail(n, err, "ngram_indexes holds %lld", (long long)ix[i]);
        p->n_out = ix[i] + 1 > p->n_out ? ix[i] + 1 : p->n_out;
    }
    struct mps_shape y = x->shape;
    y.dim[y.ndim - 1] = p->n_out;
    mps_shape_set(g, n, 0, MPS_F32, &y);
    return MPS_OK;
}

/* NonMaxSuppression (op.h): f32 boxes [B, N, 4] and scores [B, C, N], one-
   element max_output_boxes_per_class (int), iou_threshold and
   score_threshold (f32). [B * C * min(N, max), 3] i64 at most, max the
   constant's or N. */
static enum mps_status mps_shape_nms(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *b = mps_shape_in(g, n, 0), *s = mps_shape_in(g, n, 1), *max = mps_shape_in(g, n, 2);
    if (b->dtype != MPS_F32 || b->shape.ndim != 3 || b->shape.dim[2] != 4 || s->dtype != MPS_F32 ||
        s->shape.ndim != 3 || s->shape.dim[0] != b->shape.dim[0] || s->shape.dim[2] != b->shape.dim[1])
        return mps_shape_fail(n, err, "boxes must be f32 [B,N,4] and scores f32 [B,C,N]");
    for (int i = 2; i < n->n_in; i++) {
        const struct mps_value *v = mps_shape_in(g, n, i);
        if (v && (mps_shape_numel(&v->shape) != 1 || (i == 2 ? !(MPS_DT_INT & MPS_DT(v->dtype)) : v->dtype != MPS_F32)))
            return mps_shape_fail(n, err, "input %d must be one %s", i, i == 2 ? "int64" : "f32");
    }
    int64_t per = b->shape.dim[1];
    double at_most = !max ? 0 : max->data ? mps_shape_const_at(max, 0) : (double)per;
    if (at_most < (double)per)
        per = at_most > 0 ? (int64_t)at_most : 0;
    struct mps_shape y = {2, {b->shape.dim[0] * s->shape.dim[1] * per, 3}};
    mps_shape_set_bounded(g, n, 0, MPS_I64, &y, 0);
    return MPS_OK;
}

/* Unique (op.h): Y of the input's dtype, i64 indices and counts, bounded by
   the length along the axis (the element count without one), and i64
   inverse_indices of that length. */
static enum mps_status mps_shape_unique(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0);
    struct mps_unique_params *p = &n->p.unique;
    enum mps_status st = mps_shape_need_dtype(g, n, 0, MPS_DT_NUMBER, err);
    if (!st && p->has_axis)
        st = mps_shape_resolve_axis(n, &p->axis, x->shape.ndim, err);
    if (st)
        return st;
    int64_t len = p->has_axis ? x->shape.dim[p->axis] : mps_shape_numel(&x->shape);
    struct mps_shape y = p->has_axis ? x->shape : (struct mps_shape){1, {len}}, k = {1, {len}};
    mps_shape_set_bounded(g, n, 0, x->dtype, &y, p->has_axis ? (int)p->axis : 0);
    for (int o = 1; o < n->n_out; o++)
        if (o == 2)
            mps_shape_set(g, n, o, MPS_I64, &k);
        else
            mps_shape_set_bounded(g, n, o, MPS_I64, &k, 0);
    return MPS_OK;
}

/* StringNormalizer (op.h): strings [C] or [1, C], constant string
   stopwords [k]; the same at most, the last dim the run's where a word can
   go (and at least 1: none left is one empty string). */
static enum mps_status mps_shape_strnorm(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const struct mps_value *x = mps_shape_in(g, n, 0), *stop = mps_shape_in(g, n, 1);
    if (x->dtype != MPS_STRING || (x->shape.ndim != 1 && (x->shape.ndim != 2 || x->shape.dim[0] != 1)))
        return mps_shape_fail(n, err, "its input must be strings [C] or [1, C]");
    if (stop && (stop->dtype != MPS_STRING || !stop->data || stop->shape.ndim != 1))
        return mps_shape_fail(n, err, "its stopwords must be constant strings");
    struct mps_shape y = x->shape;
    int last = y.ndim - 1;
    if (!stop || stop->shape.dim[0] == 0) {
        y.dim[last] = y.dim[last] ? y.dim[last] : 1;
        mps_shape_set(g, n, 0, MPS_STRING, &y);
        return MPS_OK;
    }
    y.dim[last] = y.dim[last] ? y.dim[last] : 1;
    mps_shape_set_bounded(g, n, 0, MPS_STRING, &y, last);
    return MPS_OK;
}

/* Input i of n: a constant (unless run_time) of a dtype in mask with one
   element or, where per > 0, per elements in one axis (per < 0: any). */
static enum mps_status mps_shape_qinput(const struct mps_graph *g, const struct mps_node *n, int i, const char *what,
                                        unsigned mask, bool run_time, int64_t per, struct mps_error *err)
{
    const struct mps_value *v = mps_shape_in(g, n, i);
    int64_t count = v ? mps_shape_numel(&v->shape) : 0;
    if (!v || !(MPS_DT(v->dtype) & mask))
        return mps_shape_fail(n, err, "its %s (input %d) is %s", what, i, v ? mps_dtype_name(v->dtype) : "missing");
    if (!run_time && !v->data)
        return mps_shape_fail(n, err, "its %s (input %d) must be a constant", what, i);
    if (!run_time && per >= 0 && count != 1 && (per == 0 || count != per || v->shape.ndim != 1))
        return mps_shape_fail(n, err, "its %s (input %d) must hold one value%s", what, i,
                              per > 0 ? " or one per output channel" : "");
    return MPS_OK;
}

enum mps_status mps_shape_quantized(const struct mps_graph *g, const struct mps_node *n, enum mps_dtype *dt,
                                    struct mps_error *err)
{
    const unsigned bytes = MPS_DT(MPS_U8) | MPS_DT(MPS_I8);
    const struct mps_value *x = mps_shape_in(g, n, 0), *w = mps_shape_in(g, n, 3), *xz = mps_shape_in(g, n, 2),
                           *wz = mps_shape_in(g, n, 5), *ys = mps_shape_in(g, n, 6), *yz = mps_shape_in(g, n, 7);
    enum mps_status st = mps_shape_qinput(g, n, 0, "input", bytes, true, 0, err);
    if (st || (st = mps_shape_qinput(g, n, 3, "weight", bytes, false, -1, err)))
        return st;
    if (w->shape.ndim < 2)
        return mps_shape_fail(n, err, "its weight must have rank 2 or more");
    int64_t ch = n->op == MPS_OP_QLINEAR_CONV ? w->shape.dim[0] : w->shape.dim[w->shape.ndim - 1];
    if (n->op == MPS_OP_QLINEAR_CONV && w->shape.ndim < 3)
        return mps_shape_fail(n, err, "its weight must have rank 3 or more");
    if ((st = mps_shape_qinput(g, n, 1, "input's scale", MPS_DT_FLOAT, false, 0, err)) ||
        (xz && (st = mps_shape_qinput(g, n, 2, "input's zero point", MPS_DT(x->dtype), false, 0, err))) ||
        (st = mps_shape_qinput(g, n, 4, "weight's scale", MPS_DT_FLOAT, false, ch, err)) ||
        (wz && (st = mps_shape_qinput(g, n, 5, "weight's zero point", MPS_DT(w->dtype), false, ch, err))) ||
        (ys && (st = mps_shape_qinput(g, n, 6, "output's scale", MPS_DT_FLOAT, false, 0, err))) ||
        (yz && (st = mps_shape_qinput(g, n, 7, "output's zero point", bytes, false, 0, err))) ||
        (mps_shape_in(g, n, 8) &&
         (st = mps_shape_qinput(g, n, 8, "bias", MPS_DT_FLOAT | MPS_DT(MPS_I32), false, ch, err))))
        return st;
    if (yz && !ys)
        return mps_shape_fail(n, err, "it has an output zero point but no output scale");
    if (mps_shape_in(g, n, 8) && mps_shape_numel(&mps_shape_in(g, n, 8)->shape) != ch)
        return mps_shape_fail(n, err, "its bias must hold one value per output channel (%lld)", (long long)ch);
    *dt = !ys ? MPS_F32 : yz ? yz->dtype : MPS_U8;
    return MPS_OK;
}

/* QLinearMatMul: a [..., K] times the constant b [K, N]. */
static enum mps_status mps_shape_qmatmul(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    enum mps_dtype dt;
    enum mps_status st = mps_shape_quantized(g, n, &dt, err);
    if (st)
        return st;
    const struct mps_value *a = mps_shape_in(g, n, 0), *b = mps_shape_in(g, n, 3);
    if (b->shape.ndim != 2 || a->shape.ndim < 1 || a->shape.dim[a->shape.ndim - 1] != b->shape.dim[0])
        return mps_shape_fail(n, err, "its weight must be [K, N] with K the input's last dim");
    struct mps_shape y = a->shape;
    y.dim[y.ndim - 1] = b->shape.dim[1];
    mps_shape_set(g, n, 0, dt, &y);
    return MPS_OK;
}

/* DequantizeLinear and QuantizeLinear of bytes: scale and zero point constant, per tensor or along axis. */
static enum mps_status mps_shape_dequantize(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const unsigned bytes = MPS_DT(MPS_U8) | MPS_DT(MPS_I8);
    bool dq = n->op == MPS_OP_DEQUANTIZE;
    const struct mps_value *x = mps_shape_in(g, n, 0), *z = mps_shape_in(g, n, 2);
    enum mps_status st = mps_shape_qinput(g, n, 0, "input", dq ? bytes : MPS_DT_FLOAT, true, 0, err);
    if (st || (st = mps_shape_resolve_axis(n, &n->p.axis.axis, x->shape.ndim ? x->shape.ndim : 1, err)))
        return st;
    int64_t per = x->shape.ndim ? x->shape.dim[n->p.axis.axis] : 1;
    if ((st = mps_shape_qinput(g, n, 1, "scale", MPS_DT_FLOAT, false, per, err)) ||
        (z && (st = mps_shape_qinput(g, n, 2, "zero point", dq ? MPS_DT(x->dtype) : bytes, false, per, err))))
        return st;
    mps_shape_set(g, n, 0, dq ? MPS_F32 : z ? z->dtype : MPS_U8, &x->shape);
    return MPS_OK;
}

/* Whether shape b is a's leading dims with 1s after them (a's own included):
   each b value then scales a run of a's elements (QLinearMul). */
static bool mps_shape_leading(const struct mps_shape *a, const struct mps_shape *b)
{
    int d = 0;
    if (a->ndim != b->ndim)
        return false;
    while (d < a->ndim && b->dim[d] == a->dim[d])
        d++;
    while (d < a->ndim && b->dim[d] == 1)
        d++;
    return d == a->ndim;
}

/* QLinearAdd, QLinearMul, QLinearConcat, QLinearUnary and
   QLinearGlobalAveragePool: bytes in and out (each part and the output
   signed or not), every scale and zero point a constant of one value; Add's
   two parts of one shape, Mul's second of the first's or its leading dims
   (mps_shape_leading), Concat's as Concat's; Unary's op elementwise on
   floats, its output f32 where y_scale is omitted; the pool's input of 3 dims
   or more, its output 1 along each after the channels. */
static enum mps_status mps_shape_qelementwise(struct mps_graph *g, struct mps_node *n, struct mps_error *err)
{
    const unsigned bytes = MPS_DT(MPS_U8) | MPS_DT(MPS_I8);
    bool cat = n->op == MPS_OP_QLINEAR_CONCAT, unary = n->op == MPS_OP_QLINEAR_UNARY,
         pool = n->op == MPS_OP_QLINEAR_GAP;
    int first = cat ? 2 : 0, parts = cat ? (n->n_in - 2) / 3 : unary || pool ? 1 : 2, ys = cat ? 0 : 3 * parts;
    if (cat ? n->n_in < 5 || (n->n_in - 2) % 3 : n->n_in != 3 * parts + 2)
        return mps_shape_fail(n, err, "%d inputs: not %s", n->n_in,
                              cat             ? "y_scale, y_zero_point and three a part"
                              : unary || pool ? "x's three and y's two"
                                              : "two parts of three and y's two");
    if (unary && (!n->p.binary.act.on || !mps_op_is_unary(n->p.binary.act.op)))
        return mps_shape_fail(n, err, "its op is not an elementwise one of floats");
    const struct mps_value *x = mps_shape_in(g, n, first), *yz = mps_shape_in(g, n, ys + 1);
    bool floats = unary && !mps_shape_in(g, n, ys); /* Unary's y_scale omitted: f32 out */
    enum mps_status st;
    if (floats && yz)
        return mps_shape_fail(n, err, "it has an output zero point but no output scale");
    if ((st = mps_shape_qinput(g, n, first, "input", bytes, true, 0, err)) ||
        (!floats && (st = mps_shape_qinput(g, n, ys, "output's scale", MPS_DT(MPS_F32), false, 0, err))) ||
        (yz && (st = mps_shape_qinput(g, n, ys + 1, "output's zero point", bytes, false, 0, err))))
        return st;
    struct mps_shape out = x->shape;
    int axis = 0;
    if (pool && out.ndim < 3)
        return mps_shape_fail(n, err, "its input has %d dims: it needs batch, channels and at least one more",
                              out.ndim);
    for (int d = 2; pool && d < out.ndim; d++)
        out.dim[d] = 1;
    if (cat && (st = mps_shape_resolve_axis(n, &n->p.axis.axis, out.ndim, err)))
        return st;
    if (cat)
        axis = (int)n->p.axis.axis, out.dim[axis] = 0;
    for (int i = 0; i < parts; i++) {
        int at = first + 3 * i;
        const struct mps_value *v = mps_shape_in(g, n, at);
        if ((st = mps_shape_qinput(g, n, at, "input", bytes, true, 0, err)) ||
            (st = mps_shape_qinput(g, n, at + 1, "input's scale", MPS_DT(MPS_F32), false, 0, err)) ||
            (mps_shape_in(g, n, at + 2) &&
             (st = mps_shape_qinput(g, n, at + 2, "input's zero point", MPS_DT(v->dtype), false, 0, err))))
            return st;
        bool same = v->shape.ndim == x->shape.ndim;
        for (int d = 0; same && d < x->shape.ndim; d++)
            same = (cat && d == axis) || v->shape.dim[d] == x->shape.dim[d];
        if (!same && !(n->op == MPS_OP_QLINEAR_MUL && mps_shape_leading(&x->shape, &v->shape)))
            return mps_shape_fail(n, err, "input %d's shape differs from input %d's", at, first);
        out.dim[axis] += cat ? v->shape.dim[axis] : 0;
    }
    mps_shape_set(g, n, 0, floats ? MPS_F32 : yz ? yz->dtype : MPS_U8, &out);
    return MPS_OK;
}

const mps_shape_rule mps_shape_seq_rules[MPS_OP_COUNT] = {
    [MPS_OP_QLINEAR_ADD] = mps_shape_qelementwise,
    [MPS_OP_QLINEAR_CONCAT] = mps_shape_qelementwise,
    [MPS_OP_QLINEAR_UNARY] = mps_shape_qelementwise,
    [MPS_OP_QLINEAR_MUL] = mps_shape_qelementwise,
    [MPS_OP_QLINEAR_GAP] = mps_shape_qelementwise,
    [MPS_OP_DEQUANTIZE] = mps_shape_dequantize,
    [MPS_OP_QUANTIZE] = mps_shape_dequantize,
    [MPS_OP_QLINEAR_MATMUL] = mps_shape_qmatmul,
    [MPS_OP_RNN] = mps_shape_rnn,
    [MPS_OP_GRU] = mps_shape_rnn,
    [MPS_OP_LSTM] = mps_shape_rnn,
    [MPS_OP_IF] = mps_shape_if,
    [MPS_OP_NLL_LOSS] = mps_shape_loss,
    [MPS_OP_SCE_LOSS] = mps_shape_loss,
    [MPS_OP_GRID_SAMPLE] = mps_shape_gridsample,
    [MPS_OP_EINSUM] = mps_shape_einsum,
    [MPS_OP_DET] = mps_shape_det,
    [MPS_OP_MAX_UNPOOL] = mps_shape_unpool,
    [MPS_OP_ROI_ALIGN] = mps_shape_roialign,
    [MPS_OP_RANDOM_LIKE] = mps_shape_random,
    [MPS_OP_TFIDF] = mps_shape_tfidf,
    [MPS_OP_NON_MAX_SUPPRESSION] = mps_shape_nms,
    [MPS_OP_UNIQUE] = mps_shape_unique,
    [MPS_OP_STRING_NORMALIZER] = mps_shape_strnorm,
};
