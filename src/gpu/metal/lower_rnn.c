/* lower_rnn.c: RNN, GRU and LSTM (op.h) as MPSGraph steps, unrolled over
   the time steps: per direction one product X W^T over every step, then per
   step h R^T, the gates' slices, their activations (every one ONNX has, as
   lower_ops.c composes them) and the state's update, as the cpu computes
   them (cpu/rnn.c). MPSGraph's own LSTM and GRU ops are not used: ONNX's
   eleven activations with alpha and beta, clip before each, peepholes,
   input_forget and GRU's two reset forms do not all have counterparts in
   their descriptors. A sequence_lens shorter than the sequence is refused
   (lower.c). */
#include <string.h>

#include "lower_impl.h"

struct mps_mtl_rnn {
    struct mps_mtl_lowerer *L;
    const struct mps_rnn_params *p;
    int64_t T, N, H, G;
    enum mps_dtype dt;
};

/* len entries of x from start along axis. */
static int mps_mtl_rnn_slice(struct mps_mtl_lowerer *L, int x, int axis, int64_t start, int64_t len)
{
    if (x < 0)
        return -1;
    struct mps_shape s = *mps_mtl_shape(L, x);
    struct mps_mtl_step *st;
    int64_t full = s.dim[axis];
    s.dim[axis] = len;
    if (start == 0 && len == full)
        return x;
    int y = mps_mtl_emit(L, MPS_MTL_SLICE, 0, mps_mtl_dtype(L, x), &s, &x, 1, &st);
    for (int d = 0; y >= 0 && d < s.ndim; d++) {
        st->p.slice.start[d] = d == axis ? start : 0;
        st->p.slice.end[d] = d == axis ? start + len : s.dim[d];
        st->p.slice.stride[d] = 1;
    }
    return y;
}

/* x [a, b] as [b, a]. */
static int mps_mtl_rnn_t(struct mps_mtl_lowerer *L, int x)
{
    if (x < 0)
        return -1;
    struct mps_shape s = *mps_mtl_shape(L, x);
    int64_t a = s.dim[0];
    s.dim[0] = s.dim[1], s.dim[1] = a;
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_TRANSPOSE2, 0, mps_mtl_dtype(L, x), &s, &x, 1, &st);
    if (y >= 0)
        st->p.ax.axis = 0, st->p.ax.axis2 = 1;
    return y;
}

/* ids[n] joined along axis (of the same shape but that axis). */
static int mps_mtl_rnn_concat(struct mps_mtl_lowerer *L, const int *ids, int n, int axis)
{
    for (int i = 0; i < n; i++)
        if (ids[i] < 0)
            return -1;
    if (n == 1)
        return ids[0];
    struct mps_shape s = *mps_mtl_shape(L, ids[0]);
    for (int i = 1; i < n; i++)
        s.dim[axis] += mps_mtl_shape(L, ids[i])->dim[axis];
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_CONCAT, 0, mps_mtl_dtype(L, ids[0]), &s, ids, n, &st);
    if (y >= 0)
        st->p.ax.axis = axis;
    return y;
}

/* x with its axes in the order perm. */
static int mps_mtl_rnn_permute(struct mps_mtl_lowerer *L, int x, const int *perm)
{
    if (x < 0)
        return -1;
    const struct mps_shape *xs = mps_mtl_shape(L, x);
    struct mps_shape s = {xs->ndim, {0}};
    for (int d = 0; d < s.ndim; d++)
        s.dim[d] = xs->dim[perm[d]];
    struct mps_mtl_step *st;
    int y = mps_mtl_emit(L, MPS_MTL_PERMUTE, 0, mps_mtl_dtype(L, x), &s, &x, 1, &st);
    for (int d = 0; y >= 0 && d < s.ndim; d++)
        st->p.perm[d] = perm[d];
    return y;
}

/* Activation a of x (clipped to [-clip, clip] first when clip > 0 and clipped is set). */
static int mps_mtl_rnn_act(const struct mps_mtl_rnn *r, const struct mps_rnn_act *a, int x, bool clipped)
{
    static const enum mps_op ops[MPS_RNN_FN_COUNT] = {
        [MPS_RNN_SIGMOID] = MPS_OP_SIGMOID,
        [MPS_RNN_TANH] = MPS_OP_TANH,
        [MPS_RNN_RELU] = MPS_OP_RELU,
        [MPS_RNN_LEAKY_RELU] = MPS_OP_LEAKY_RELU,
        [MPS_RNN_THRESHOLDED_RELU] = MPS_OP_THRESHOLDED_RELU,
        [MPS_RNN_HARD_SIGMOID] = MPS_OP_HARD_SIGMOID,
        [MPS_RNN_ELU] = MPS_OP_ELU,
        [MPS_RNN_SOFTSIGN] = MPS_OP_SOFTSIGN,
        [MPS_RNN_SOFTPLUS] = MPS_OP_SOFTPLUS,
    };
    struct mps_mtl_lowerer *L = r->L;
    if (clipped && r->p->clip > 0)
        x = mps_mtl_binary_scalar(L, MPS_MTL_MIN, mps_mtl_binary_scalar(L, MPS_MTL_MAX, x, -r->p->clip), r->p->clip);
    switch (a->fn) {
    case MPS_RNN_AFFINE:
        return mps_mtl_binary_scalar(L, MPS_MTL_ADD, mps_mtl_binary_scalar(L, MPS_MTL_MUL, x, a->alpha), a->beta);
    case MPS_RNN_SCALED_TANH:
        return mps_mtl_binary_scalar(L, MPS_MTL_MUL,
                                     mps_mtl_unary(L, MPS_MTL_TANH, mps_mtl_binary_scalar(L, MPS_MTL_MUL, x, a->beta)),
                                     a->alpha);
    default: return mps_mtl_activation(L, ops[a->fn], &(struct mps_act_params){a->alpha, a->beta}, x);
    }
}

/* Block k ([N, H]) of gates [N, G * H]. */
static int mps_mtl_rnn_block(const struct mps_mtl_rnn *r, int gates, int k)
{
    return mps_mtl_rnn_slice(r->L, gates, 1, k * r->H, r->H);
}

/* One step of direction d: h (and c) from xt ([N, G * H], X W^T with W's bias and, but for GRU's
   candidate, R's) and the recurrent weights rt ([H, G * H], R^T), rb (R's bias, [G * H]), peep ([3 * H]). */
static void mps_mtl_rnn_step(const struct mps_mtl_rnn *r, enum mps_op op, const struct mps_rnn_act *f, int xt, int rt,
                             int rb, int peep, int *h, int *c)
{
    struct mps_mtl_lowerer *L = r->L;
    const struct mps_rnn_params *p = r->p;
    int64_t H = r->H;
    if (op == MPS_OP_GRU) { /* z, r from h R^T; the candidate from (r h) R^T or r (h R^T + Rb) */
        int rzr = mps_mtl_rnn_slice(L, rt, 1, 0, 2 * H), rh = mps_mtl_rnn_slice(L, rt, 1, 2 * H, H);
        int zr = mps_mtl_binary(L, MPS_MTL_ADD, mps_mtl_rnn_slice(L, xt, 1, 0, 2 * H), mps_mtl_matmul_ids(L, *h, rzr));
        if (rb >= 0)
            zr = mps_mtl_binary(L, MPS_MTL_ADD, zr, mps_mtl_rnn_slice(L, rb, 0, 0, 2 * H));
        int z = mps_mtl_rnn_act(r, &f[0], mps_mtl_rnn_block(r, zr, 0), true);
        int rg = mps_mtl_rnn_act(r, &f[0], mps_mtl_rnn_block(r, zr, 1), true);
        int rbh = rb >= 0 ? mps_mtl_rnn_slice(L, rb, 0, 2 * H, H) : -1, rec;
        if (p->linear_before_reset) {
            rec = mps_mtl_matmul_ids(L, *h, rh);
            rec = mps_mtl_binary(L, MPS_MTL_MUL, rg, rbh >= 0 ? mps_mtl_binary(L, MPS_MTL_ADD, rec, rbh) : rec);
        } else {
            rec = mps_mtl_matmul_ids(L, mps_mtl_binary(L, MPS_MTL_MUL, rg, *h), rh);
            rec = rbh >= 0 ? mps_mtl_binary(L, MPS_MTL_ADD, rec, rbh) : rec;
        }
        int hh = mps_mtl_rnn_act(r, &f[1], mps_mtl_binary(L, MPS_MTL_ADD, mps_mtl_rnn_block(r, xt, 2), rec), true);
        int keep = mps_mtl_binary(L, MPS_MTL_MUL, z, *h); /* z h + (1 - z) hh = z h + hh - z hh */
        *h = mps_mtl_binary(L, MPS_MTL_ADD, keep,
                            mps_mtl_binary(L, MPS_MTL_SUB, hh, mps_mtl_binary(L, MPS_MTL_MUL, z, hh)));
        return;
    }
    int gates = mps_mtl_binary(L, MPS_MTL_ADD, xt, mps_mtl_matmul_ids(L, *h, rt));
    if (rb >= 0)
        gates = mps_mtl_binary(L, MPS_MTL_ADD, gates, rb);
    if (op == MPS_OP_RNN) {
        *h = mps_mtl_rnn_act(r, &f[0], gates, true);
        return;
    }
    int gi = mps_mtl_rnn_block(r, gates, 0), go = mps_mtl_rnn_block(r, gates, 1), gf = mps_mtl_rnn_block(r, gates, 2);
    if (peep >= 0) { /* P: i, o, f; o's with the new c below */
        gi =
            mps_mtl_binary(L, MPS_MTL_ADD, gi, mps_mtl_binary(L, MPS_MTL_MUL, mps_mtl_rnn_slice(L, peep, 0, 0, H), *c));
        gf = mps_mtl_binary(L, MPS_MTL_ADD, gf,
                            mps_mtl_binary(L, MPS_MTL_MUL, mps_mtl_rnn_slice(L, peep, 0, 2 * H, H), *c));
    }
    int i = mps_mtl_rnn_act(r, &f[0], gi, true);
    int fg = p->input_forget ? mps_mtl_binary(L, MPS_MTL_SUB, mps_mtl_scalar(L, 1.0, r->dt), i)
                             : mps_mtl_rnn_act(r, &f[0], gf, true);
    int cc = mps_mtl_rnn_act(r, &f[1], mps_mtl_rnn_block(r, gates, 3), true);
    *c = mps_mtl_binary(L, MPS_MTL_ADD, mps_mtl_binary(L, MPS_MTL_MUL, fg, *c), mps_mtl_binary(L, MPS_MTL_MUL, i, cc));
    if (peep >= 0)
        go =
            mps_mtl_binary(L, MPS_MTL_ADD, go, mps_mtl_binary(L, MPS_MTL_MUL, mps_mtl_rnn_slice(L, peep, 0, H, H), *c));
    int o = mps_mtl_rnn_act(r, &f[0], go, true);
    *h = mps_mtl_binary(L, MPS_MTL_MUL, o, mps_mtl_rnn_act(r, &f[2], *c, false)); /* h's function unclipped */
}

/* An initial state of direction d ([N, H]): the input's (dims [D, N, H], batch first [N, D, H]) or zeros. */
static int mps_mtl_rnn_state(const struct mps_mtl_rnn *r, const struct mps_node *n, int input, int64_t d)
{
    struct mps_mtl_lowerer *L = r->L;
    struct mps_shape s = {2, {r->N, r->H}};
    if (n->n_in <= input || n->in[input] < 0) {
        struct mps_mtl_step *st;
        int z = mps_mtl_emit(L, MPS_MTL_FILL, 0, r->dt, &s, NULL, 0, &st);
        if (z >= 0)
            st->p.scalar = 0;
        return z;
    }
    int v = mps_mtl_value(L, n->in[input]);
    return mps_mtl_reshape(L, mps_mtl_rnn_slice(L, v, r->p->batch_first ? 1 : 0, d, 1), &s);
}

void mps_mtl_lower_rnn(struct mps_mtl_lowerer *L, const struct mps_node *n)
{
    const struct mps_rnn_params *p = &n->p.rnn;
    const struct mps_shape *xs = mps_mtl_vshape(L, n->in[0]);
    struct mps_mtl_rnn r = {L,
                            p,
                            xs->dim[p->batch_first],
                            xs->dim[!p->batch_first],
                            p->hidden,
                            mps_rnn_gates(n->op),
                            mps_mtl_compute_dtype(L, MPS_F32)};
    int64_t D = p->direction == 2 ? 2 : 1, GH = r.G * r.H, T = r.T, N = r.N, H = r.H;
    bool lstm = n->op == MPS_OP_LSTM;
    int x = mps_mtl_value(L, n->in[0]), w = mps_mtl_value(L, n->in[1]), rw = mps_mtl_value(L, n->in[2]);
    int bias = n->n_in > 3 ? mps_mtl_value(L, n->in[3]) : -1,
        peep = lstm && n->n_in > 7 ? mps_mtl_value(L, n->in[7]) : -1;
    if (p->batch_first) /* [N, T, I] -> [T, N, I] */
        x = mps_mtl_rnn_permute(L, x, (const int[]){1, 0, 2});
    int ys[2] = {-1, -1}, hs[2] = {-1, -1}, cs[2] = {-1, -1};
    int *steps = mps_mtl_alloc(L, sizeof(int) * (size_t)T);
    for (int64_t d = 0; d < D && steps; d++) {
        bool reverse = p->direction == 1 || d == 1;
        int wd = mps_mtl_reshape(L, mps_mtl_rnn_slice(L, w, 0, d, 1), &(struct mps_shape){2, {GH, xs->dim[2]}});
        int rd = mps_mtl_reshape(L, mps_mtl_rnn_slice(L, rw, 0, d, 1), &(struct mps_shape){2, {GH, H}});
        int bd =
            bias >= 0 ? mps_mtl_reshape(L, mps_mtl_rnn_slice(L, bias, 0, d, 1), &(struct mps_shape){1, {2 * GH}}) : -1;
        int wb = mps_mtl_rnn_slice(L, bd, 0, 0, GH), rb = mps_mtl_rnn_slice(L, bd, 0, GH, GH);
        int pd =
            peep >= 0 ? mps_mtl_reshape(L, mps_mtl_rnn_slice(L, peep, 0, d, 1), &(struct mps_shape){1, {3 * H}}) : -1;
        int proj = mps_mtl_matmul_ids(L, x, mps_mtl_rnn_t(L, wd)); /* [T, N, G H] */
        if (wb >= 0)
            proj = mps_mtl_binary(L, MPS_MTL_ADD, proj, wb);
        int rt = mps_mtl_rnn_t(L, rd), h = mps_mtl_rnn_state(&r, n, 5, d),
            c = lstm ? mps_mtl_rnn_state(&r, n, 6, d) : -1;
        for (int64_t s = 0; s < T; s++) {
            int64_t t = reverse ? T - 1 - s : s;
            int xt = mps_mtl_reshape(L, mps_mtl_rnn_slice(L, proj, 0, t, 1), &(struct mps_shape){2, {N, GH}});
            mps_mtl_rnn_step(&r, n->op, &p->act[d * 3], xt, rt, rb, pd, &h, &c);
            steps[t] = mps_mtl_reshape(L, h, &(struct mps_shape){4, {1, 1, N, H}});
        }
        ys[d] = mps_mtl_rnn_concat(L, steps, (int)T, 0); /* [T, 1, N, H] in time order */
        hs[d] = mps_mtl_reshape(L, h, &(struct mps_shape){3, {1, N, H}});
        cs[d] = lstm ? mps_mtl_reshape(L, c, &(struct mps_shape){3, {1, N, H}}) : -1;
    }
    int y = mps_mtl_rnn_concat(L, ys, (int)D, 1), yh = mps_mtl_rnn_concat(L, hs, (int)D, 0);
    int yc = lstm ? mps_mtl_rnn_concat(L, cs, (int)D, 0) : -1;
    if (p->batch_first) { /* Y [N, T, D, H], Y_h and Y_c [N, D, H] */
        y = mps_mtl_rnn_permute(L, y, (const int[]){2, 0, 1, 3});
        yh = mps_mtl_rnn_permute(L, yh, (const int[]){1, 0, 2});
        yc = lstm ? mps_mtl_rnn_permute(L, yc, (const int[]){1, 0, 2}) : -1;
    }
    int outs[3] = {y, yh, yc};
    for (int i = 0; i < n->n_out && i < 3; i++)
        if (n->out[i] >= 0)
            mps_mtl_define(L, n->out[i], steps ? outs[i] : -1);
}
