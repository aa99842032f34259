/* nodes.c: the CUDA backend's node launchers of the products (MatMul, Gemm
   and the chains of Linear layers), convolutions, pooling and normalization,
   each enqueuing its kernels and cuBLAS calls on the plan's stream; the
   fusions and the scratch each node needs; and the launcher of every op
   (nodes_layout.c has the elementwise, reduction and layout ones). */
#include <string.h>

#include "cuda_internal.h"
#include "nodes.h"
#include "winograd_weights.h"

/* ---- helpers ----------------------------------------------------------------- */

/* The widest output row + 4 that the Winograd kernels take. */
enum { MPS_CU_WINO_ROW = 1024 };

bool mps_cuda_winograd(const struct mps_graph *g, const struct mps_node *n)
{
    /* measured on resnet18 (2 cores, cuda's first form): a gain from 14x14 outputs up (49 tiles),
       a loss at 7x7 (16 tiles) */
    const struct mps_shape *ys = &g->values[n->out[0]].shape;
    return mps_winograd_shape(g, n) && (ys->dim[2] + 1) / 2 * ((ys->dim[3] + 1) / 2) >= 32 &&
           ys->dim[3] + 4 <= MPS_CU_WINO_ROW;
}

struct mps_cu_window mps_cuda_window(const struct mps_window *w, const struct mps_shape *x, const struct mps_shape *y)
{
    struct mps_window3 c = mps_window3_of(w, x, y);
    struct mps_cu_window r;
    memcpy(r.in, c.in, sizeof r.in);
    memcpy(r.out, c.out, sizeof r.out);
    memcpy(r.k, c.k, sizeof r.k);
    memcpy(r.s, c.s, sizeof r.s);
    memcpy(r.d, c.d, sizeof r.d);
    memcpy(r.pb, c.pb, sizeof r.pb);
    memcpy(r.pe, c.pe, sizeof r.pe);
    return r;
}

/* A walk over shape with three operands' strides. */
struct mps_cu_walk mps_cuda_walk(const struct mps_shape *s, const int64_t *s0, const int64_t *s1, const int64_t *s2)
{
    struct mps_cu_walk w;
    memset(&w, 0, sizeof w);
    w.nd = s->ndim;
    for (int i = 0; i < s->ndim; i++) {
        w.dim[i] = s->dim[i];
        w.s0[i] = s0 ? s0[i] : 0;
        w.s1[i] = s1 ? s1[i] : 0;
        w.s2[i] = s2 ? s2[i] : 0;
    }
    w.nd = mps_walk_merge(w.nd, w.dim, 3, (int64_t *const[]){w.s0, w.s1, w.s2});
    return w;
}

static enum mps_status mps_cuda_fused(struct mps_cuda_state *s, const struct mps_node *n, const struct mps_fused_act *a,
                                      struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    if (a->on)
        MPS_CU_CHECK(mps_cu_unary((int)a->op, a->p.alpha, a->p.beta, MPS_OUT(0), MPS_OUT(0),
                                  mps_shape_numel(&MPS_OUTV(0)->shape), s->stream));
    return MPS_OK;
}

/* ---- node launchers, by op family ----------------------------------------------------- */

static enum mps_status mps_cuda_matmul(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    struct mps_matmul_geom q = mps_matmul_geom(&MPS_INV(0)->shape, &MPS_INV(1)->shape);
    enum mps_dtype dt = MPS_OUTV(0)->dtype; /* f32 or f16 */
    size_t elem = mps_dtype_size(dt);
    const char *a = MPS_IN(0), *b = MPS_IN(1);
    char *c = MPS_OUT(0);
    if (q.fold) /* one B: the batch folds into A's rows */
        return mps_cuda_gemm_dt(s, dt, false, false, q.m * q.batches, q.n, q.k, 1.0f, a, b, 0.0f, c, err);
    for (int64_t i = 0; i < q.batches; i++) {
        int64_t oa, ob;
        mps_matmul_offsets(&q, i, &oa, &ob);
        enum mps_status st = mps_cuda_gemm_dt(s, dt, false, false, q.m, q.n, q.k, 1.0f, a + oa * elem, b + ob * elem,
                                              0.0f, c + i * q.m * q.n * elem, err);
        if (st)
            return st;
    }
    return MPS_OK;
}

/* Whether Gemm node n adds C as a bias row (n values, beta != 0). */
static bool mps_cuda_row_bias(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_shape *cs = MPS_HAS(2) ? &MPS_INV(2)->shape : NULL;
    int64_t nn = MPS_OUTV(0)->shape.dim[1];
    return cs && n->p.gemm.beta != 0.0f && mps_shape_numel(cs) == nn &&
           (cs->ndim == 1 || (cs->ndim == 2 && cs->dim[0] == 1));
}

/* Whether Gemm node n is a few rows through a Linear layer (X W^T, a bias row or
   none), which mps_cu_gemv computes in one kernel. */
static bool mps_cuda_gemv_applies(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_gemm_params *p = &n->p.gemm;
    const struct mps_shape *y = &MPS_OUTV(0)->shape;
    int64_t m = y->dim[0], nn = y->dim[1], k = MPS_INV(0)->shape.dim[p->trans_a ? 0 : 1];
    return (mps_cuda_row_bias(g, n) || !MPS_HAS(2)) && k > 0 && m <= MPS_CU_GEMV_ROWS && !p->trans_a && p->trans_b &&
           nn <= INT32_MAX / 32 && k <= INT32_MAX / MPS_CU_GEMV_ROWS;
}

/* Whether Gemm node n's weights and C are constants, which no kernel writes: the
   Linear and chain kernels then read them before they wait for the kernel before. */
static bool mps_cuda_gemm_constant(const struct mps_graph *g, const struct mps_node *n)
{
    return MPS_INV(1)->data && (!MPS_HAS(2) || MPS_INV(2)->data);
}

/* The chain of nodes from k that one mps_cu_gemv_chain kernel computes (c), and
   how many nodes it takes: Gemm nodes mps_cu_gemv could run, with constant
   weights (the kernel stages them before it waits), each reading the output of
   the one before and nothing else reading that; then maybe a (Log)Softmax along
   the rows; for as long as one block holds the weights and does the work faster
   than a kernel a layer (mps_cu_gemv_chain_fits). 0 or 1 node: no chain. Called
   before the memory plan (to fuse, device pointers NULL) and at launch: it
   decides the same both times. */
static int mps_cuda_chain_of(const struct mps_cuda_state *s, int k, struct mps_cu_chain *c)
{
    const struct mps_graph *g = s->g;
    memset(c, 0, sizeof *c);
    int j = k;
    for (; j < g->n_nodes; j++) {
        const struct mps_node *n = &g->nodes[j];
        int only = -1;
        if (j > k && (n->n_in < 1 || n->in[0] != g->nodes[j - 1].out[0] || mps_graph_uses(g, n->in[0], &only) != 1))
            break;
        if (n->op == MPS_OP_SOFTMAX || n->op == MPS_OP_LOG_SOFTMAX) {
            if (j > k && MPS_INV(0)->shape.ndim == 2 && n->p.norm.axis == 1) {
                c->softmax = (int)n->op;
                j++;
            }
            break;
        }
        if (n->op != MPS_OP_GEMM || c->layers == MPS_CU_CHAIN_LAYERS || !mps_cuda_gemv_applies(g, n) ||
            !mps_cuda_gemm_constant(g, n))
            break;
        const struct mps_gemm_params *p = &n->p.gemm;
        bool bias = mps_cuda_row_bias(g, n);
        c->m = (int)MPS_OUTV(0)->shape.dim[0];
        c->l[c->layers++] = (struct mps_cu_layer){
            .w = MPS_IN(1), .bias = bias ? MPS_IN(2) : NULL, .n = (int)MPS_OUTV(0)->shape.dim[1],
            .k = (int)MPS_INV(0)->shape.dim[1], .act = p->act.on ? (int)p->act.op : 0, .alpha = p->alpha,
            .beta = p->beta, .act_alpha = p->act.p.alpha, .act_beta = p->act.p.beta};
        if (!mps_cu_gemv_chain_fits(c)) {
            c->layers--;
            break;
        }
    }
    return c->layers ? j - k : 0;
}

static enum mps_status mps_cuda_gemm_node(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_gemm_params *p = &n->p.gemm;
    const struct mps_shape *y = &MPS_OUTV(0)->shape;
    int64_t m = y->dim[0], nn = y->dim[1], k = MPS_INV(0)->shape.dim[p->trans_a ? 0 : 1];
    float beta = 0.0f;
    int at = (int)(n - g->nodes);
    bool row_bias = k > 0 && mps_cuda_row_bias(g, n);
    if (at + 1 < g->n_nodes && s->writer[at + 1] == at) { /* the chain of nodes after it too */
        struct mps_cu_chain c;
        int count = mps_cuda_chain_of(s, at, &c);
        MPS_CU_CHECK(mps_cu_gemv_chain(MPS_IN(0), s->dptr[g->nodes[at + count - 1].out[0]], &c, s->stream));
        return MPS_OK;
    }
    if (mps_cuda_gemv_applies(g, n)) { /* a few rows through a Linear layer: one kernel */
        MPS_CU_CHECK(mps_cu_gemv(MPS_IN(0), MPS_IN(1), row_bias ? MPS_IN(2) : NULL, p->alpha, p->beta, MPS_OUT(0), m,
                                 nn, k, p->act.on ? (int)p->act.op : 0, p->act.p.alpha, p->act.p.beta,
                                 mps_cuda_gemm_constant(g, n), s->stream));
        return MPS_OK;
    }
    const struct mps_shape *cs = MPS_HAS(2) ? &MPS_INV(2)->shape : NULL;
    if (row_bias || (!cs && k > 0)) { /* one GEMM, then bias and activation in one pass */
        enum mps_status st = mps_cuda_gemm(s, p->trans_a, p->trans_b, m, nn, k, p->alpha, MPS_IN(0), MPS_IN(1), 0.0f,
                                           MPS_OUT(0), err);
        if (st)
            return st;
        if (row_bias || p->act.on)
            MPS_CU_CHECK(mps_cu_epilogue(MPS_OUT(0), row_bias ? MPS_IN(2) : NULL, p->beta, m * nn, nn, 1,
                                         p->act.on ? (int)p->act.op : 0, p->act.p.alpha, p->act.p.beta, s->stream));
        return MPS_OK;
    }
    if (MPS_HAS(2) && p->beta != 0.0f) { /* Y = beta * C broadcast, then accumulate */
        int64_t sc[MPS_MAX_DIMS], sy[MPS_MAX_DIMS];
        mps_shape_broadcast_strides(&MPS_INV(2)->shape, y, sc);
        mps_shape_strides(y, sy);
        struct mps_cu_walk w = mps_cuda_walk(y, sy, sc, NULL);
        MPS_CU_CHECK(mps_cu_copy(MPS_OUT(0), MPS_IN(2), &w, 4, s->stream));
        if (p->beta != 1.0f)
            MPS_CU_CHECK(mps_cu_scale(MPS_OUT(0), p->beta, m * nn, s->stream));
        beta = 1.0f;
    } else if (k == 0) {
        MPS_CU_CHECK(mps_cu_fill(MPS_F32, 0, MPS_OUT(0), m * nn, s->stream));
    }
    enum mps_status st = k ? mps_cuda_gemm(s, p->trans_a, p->trans_b, m, nn, k, p->alpha, MPS_IN(0), MPS_IN(1), beta,
                                           MPS_OUT(0), err)
                           : MPS_OK;
    return st ? st : mps_cuda_fused(s, n, &p->act, err);
}

static bool mps_cuda_pointwise(const struct mps_cu_window *w)
{
    for (int j = 0; j < 3; j++)
        if (w->k[j] != 1 || w->s[j] != 1 || w->pb[j] != 0 || w->in[j] != w->out[j])
            return false;
    return true;
}

/* Depthwise convolutions run as one direct kernel. (Small ones with more
   input channels per group did too, for a launch less: slower on the H100,
   one thread per output summing 144+ products: mnist_cnn's second conv 23 us.) */
/* The direct kernel (one output a thread) takes depthwise layers, and layers
   of few output channels a group whose outputs are cheap enough: there
   cuBLAS would get an M of 16 or less and im2col a buffer taps times the
   input (a style-transfer net's 9x9 conv to 3 channels: 0.44 ms that way). */
static bool mps_cuda_direct(const struct mps_cu_window *w, int64_t c, int64_t m, int64_t grp)
{
    int64_t taps = w->k[0] * w->k[1] * w->k[2];
    return !mps_cuda_pointwise(w) && (c / grp == 1 || (m / grp <= 16 && c / grp * taps <= 1024));
}

/* 3x3 stride-1 convolutions run as Winograd F(2x2, 3x3) where the CPU's rule
   takes them (constant weights, 16+ channels each way, 32+ tiles an image):
   16 GEMMs of 2.25x fewer multiply-adds in all than im2col's one. */
static struct mps_cu_wino mps_cuda_wino(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    struct mps_cu_wino q = {.n = x->dim[0], .c = x->dim[1], .m = y->dim[1], .h = x->dim[2], .w = x->dim[3],
                            .oh = y->dim[2], .ow = y->dim[3], .pt = n->p.conv.win.pad[0], .pl = n->p.conv.win.pad[1]};
    q.th = (q.oh + 1) / 2;
    q.tw = (q.ow + 1) / 2;
    return q;
}

/* A Conv's or ConvTranspose's geometry in the kernels' 3-D terms: c -> m channels in grp
   groups of cg -> mg, planes of in_plane and plane positions, taps per kernel. */
struct mps_cuda_conv {
    struct mps_cu_window w;
    int64_t batch, c, m, grp, cg, mg, taps, in_plane, plane;
};

static struct mps_cuda_conv mps_cuda_conv_of(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape, *y = &g->values[n->out[0]].shape;
    struct mps_cuda_conv q = {.w = mps_cuda_window(&n->p.conv.win, x, y), .batch = x->dim[0], .c = x->dim[1],
                              .m = y->dim[1], .grp = n->p.conv.group};
    q.cg = q.c / q.grp, q.mg = q.m / q.grp;
    q.taps = q.w.k[0] * q.w.k[1] * q.w.k[2];
    q.in_plane = q.w.in[0] * q.w.in[1] * q.w.in[2];
    q.plane = q.w.out[0] * q.w.out[1] * q.w.out[2];
    return q;
}

/* Conv node k (2-D, Winograd or direct) then, next in the plan, a 2x2 stride-2
   MaxPool that alone reads its output: the conv's kernel writes the pooled
   output, and the MaxPool launches nothing. (The memory plan then keeps the
   pooled output off the conv's input: see s->writer.) */
static bool mps_cuda_pool_fuses(const struct mps_graph *g, int k)
{
    const struct mps_node *n = &g->nodes[k], *pn = k + 1 < g->n_nodes ? &g->nodes[k + 1] : NULL;
    int only = -1;
    if (n->op != MPS_OP_CONV || !pn || pn->op != MPS_OP_MAX_POOL || pn->n_out != 1 || pn->in[0] != n->out[0] ||
        MPS_INV(0)->shape.ndim != 4 || mps_graph_uses(g, n->out[0], &only) != 1)
        return false;
    struct mps_cu_window pw = mps_cuda_window(&pn->p.pool.win, &MPS_OUTV(0)->shape, &g->values[pn->out[0]].shape);
    for (int j = 1; j < 3; j++)
        if (pw.k[j] != 2 || pw.s[j] != 2 || pw.d[j] != 1 || pw.pb[j] || pw.pe[j] || pw.in[j] % 2 ||
            pw.out[j] != pw.in[j] / 2)
            return false;
    struct mps_cuda_conv q = mps_cuda_conv_of(g, n);
    return mps_cuda_winograd(g, n) || mps_cuda_direct(&q.w, q.c, q.m, q.grp);
}

void mps_cuda_fuse(struct mps_cuda_state *s)
{
    for (int k = 0; k < s->g->n_nodes; k++)
        s->writer[k] = k > 0 && mps_cuda_pool_fuses(s->g, k - 1) ? k - 1 : k;
    for (int k = 0; k < s->g->n_nodes; k++) {
        struct mps_cu_chain c;
        int count = mps_cuda_chain_of(s, k, &c);
        for (int j = k + 1; j < k + count; j++)
            s->writer[j] = k;
        k += count > 1 ? count - 1 : 0;
    }
}

int64_t mps_cuda_prod(const struct mps_shape *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s->dim[i];
    return p;
}

size_t mps_cuda_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    if (n->op == MPS_OP_RNN || n->op == MPS_OP_GRU || n->op == MPS_OP_LSTM)
        return mps_cuda_rnn_scratch(g, n);
    if (n->op == MPS_OP_QLINEAR_CONV || n->op == MPS_OP_QLINEAR_MATMUL)
        return mps_cuda_qlinear_scratch(g, n);
    if (n->op == MPS_OP_INSTANCE_NORM) { /* each chunk's mean and M2 */
        const struct mps_shape *x = &g->values[n->in[0]].shape;
        int64_t plane = mps_cuda_prod(x, 2, x->ndim), chunks = (plane + MPS_CU_IN_CHUNK - 1) / MPS_CU_IN_CHUNK;
        return (size_t)(2 * x->dim[0] * x->dim[1] * chunks) * sizeof(double);
    }
    if (mps_cuda_winograd(g, n)) {
        struct mps_cu_wino q = mps_cuda_wino(g, n);
        return (size_t)(16 * (q.c + q.m) * q.n * q.th * q.tw) * sizeof(float);
    }
    if (n->op != MPS_OP_CONV && n->op != MPS_OP_CONV_TRANSPOSE)
        return 0;
    struct mps_cuda_conv q = mps_cuda_conv_of(g, n);
    if (n->op == MPS_OP_CONV_TRANSPOSE)
        return (size_t)(q.mg * q.taps * q.in_plane) * sizeof(float);
    if (mps_cuda_pointwise(&q.w) || mps_cuda_direct(&q.w, q.c, q.m, q.grp))
        return 0;
    int64_t cols = q.batch * q.plane; /* col, then (batch > 1) the GEMM's output */
    return (size_t)(q.cg * q.taps * cols + (q.batch > 1 ? q.m * cols : 0)) * sizeof(float);
}

static enum mps_status mps_cuda_conv(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_cuda_conv q = mps_cuda_conv_of(g, n);
    const struct mps_cu_window w = q.w;
    int64_t batch = q.batch, c = q.c, m = q.m, grp = q.grp, cg = q.cg, mg = q.mg, taps = q.taps;
    int64_t in_plane = q.in_plane, plane = q.plane;
    const float *xd = MPS_IN(0), *wd = MPS_IN(1), *bias = MPS_HAS(2) ? MPS_IN(2) : NULL;
    int k = (int)(n - g->nodes);
    bool pool = k + 1 < g->n_nodes && s->writer[k + 1] == k; /* computes the MaxPool after it too */
    float *yd = pool ? s->dptr[g->nodes[k + 1].out[0]] : MPS_OUT(0);
    const struct mps_fused_act *act = &n->p.conv.act;
    int act_op = act->on ? (int)act->op : 0;
    const float *u = s->packed[k];
    if (u) { /* Winograd: transform, 16 GEMMs as one batched call, transform back */
        struct mps_cu_wino wq = mps_cuda_wino(g, n);
        int64_t cols = wq.n * wq.th * wq.tw;
        float *v = s->scratch, *prod = v + 16 * c * cols;
        MPS_CU_CHECK(mps_cu_wino_input(xd, v, &wq, s->stream));
        enum mps_status st = mps_cuda_gemm_batched(s, m, cols, c, u, m * c, v, c * cols, prod, m * cols, 16, err);
        if (st)
            return st;
        MPS_CU_CHECK(mps_cu_wino_output(prod, yd, bias, &wq, act_op, act->p.alpha, act->p.beta, pool,
                                        s->stream));
        return MPS_OK;
    }
    if (mps_cuda_direct(&w, c, m, grp)) {
        MPS_CU_CHECK(mps_cu_conv_direct(xd, wd, bias, yd, batch, c, m, grp, &w, act_op, act->p.alpha, act->p.beta,
                                        pool, s->stream));
        return MPS_OK;
    }
    int64_t kdim = cg * taps, cols = batch * plane;
    for (int64_t gi = 0; gi < grp && mps_cuda_pointwise(&w); gi++) { /* 1x1: the images are the GEMMs' operands */
        enum mps_status st = mps_cuda_gemm_batched(s, mg, plane, kdim, wd + gi * mg * kdim, 0, xd + gi * cg * in_plane,
                                                   c * in_plane, yd + gi * mg * plane, m * plane, batch, err);
        if (st)
            return st;
    }
    if (!mps_cuda_pointwise(&w)) {
        /* per group: im2col of all images side by side, col[cg * taps, batch * plane], and
           one GEMM; past one image its output z[m, batch * plane] goes to NCHW in the epilogue */
        float *col = s->scratch, *z = batch > 1 ? (float *)s->scratch + kdim * cols : yd;
        for (int64_t gi = 0; gi < grp; gi++) {
            MPS_CU_CHECK(mps_cu_im2col(xd + gi * cg * in_plane, col, cg, batch, c * in_plane, &w, s->stream));
            enum mps_status st =
                mps_cuda_gemm(s, false, false, mg, cols, kdim, 1.0f, wd + gi * mg * kdim, col, 0.0f, z + gi * mg * cols,
                              err);
            if (st)
                return st;
        }
        if (batch > 1) {
            MPS_CU_CHECK(mps_cu_unbatch(z, yd, bias, batch, m, plane, act_op, act->p.alpha, act->p.beta, s->stream));
            return MPS_OK;
        }
    }
    if (bias || act->on)
        MPS_CU_CHECK(
            mps_cu_epilogue(yd, bias, 1.0f, batch * m * plane, m, plane, act_op, act->p.alpha, act->p.beta, s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_conv_transpose(struct mps_cuda_state *s, const struct mps_node *n,
                                               struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_cuda_conv q = mps_cuda_conv_of(g, n);
    int64_t c = q.c, m = q.m, cg = q.cg, mg = q.mg, taps = q.taps, in_plane = q.in_plane, plane = q.plane;
    float *yd = MPS_OUT(0);
    MPS_CU_CHECK(mps_cu_bias(yd, MPS_HAS(2) ? MPS_IN(2) : NULL, q.batch, m, plane, 0, s->stream));
    for (int64_t b = 0; b < q.batch; b++)
        for (int64_t gi = 0; gi < q.grp; gi++) {
            /* col[mg * taps, in_plane] = W_g^T x_g, W_g being [cg, mg * taps] */
            enum mps_status st = mps_cuda_gemm(s, true, false, mg * taps, in_plane, cg, 1.0f,
                                               (const float *)MPS_IN(1) + gi * cg * mg * taps,
                                               (const float *)MPS_IN(0) + (b * c + gi * cg) * in_plane, 0.0f,
                                               s->scratch, err);
            if (st)
                return st;
            MPS_CU_CHECK(mps_cu_col2im(s->scratch, yd + (b * m + gi * mg) * plane, mg, &q.w, s->stream));
        }
    return mps_cuda_fused(s, n, &n->p.conv.act, err);
}

static enum mps_status mps_cuda_pool(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    if (n->op == MPS_OP_GLOBAL_AVERAGE_POOL || n->op == MPS_OP_GLOBAL_MAX_POOL || n->op == MPS_OP_GLOBAL_LP_POOL) {
        int64_t planes = x->dim[0] * x->dim[1];
        MPS_CU_CHECK(mps_cu_global_pool(MPS_IN(0), MPS_OUT(0), planes, mps_shape_numel(x) / (planes ? planes : 1),
                                        n->op == MPS_OP_GLOBAL_MAX_POOL,
                                        n->op == MPS_OP_GLOBAL_LP_POOL ? n->p.act.alpha : 0.0f, s->stream));
        return MPS_OK;
    }
    if (MPS_INV(0)->dtype == MPS_U8 || MPS_INV(0)->dtype == MPS_I8)
        return mps_cuda_pool_bytes(s, n, err);
    struct mps_cu_window w = mps_cuda_window(&n->p.pool.win, x, &MPS_OUTV(0)->shape);
    MPS_CU_CHECK(mps_cu_pool(MPS_IN(0), MPS_OUT(0), n->n_out > 1 ? MPS_OUT(1) : NULL, x->dim[0] * x->dim[1], &w,
                             n->op == MPS_OP_MAX_POOL, n->p.pool.count_include_pad, n->p.pool.column_major,
                             s->stream));
    return MPS_OK;
}

static enum mps_status mps_cuda_norm(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_shape *x = &MPS_INV(0)->shape;
    int axis = (int)n->p.norm.axis;
    if (n->op == MPS_OP_BATCH_NORM) {
        MPS_CU_CHECK(mps_cu_batch_norm(MPS_IN(0), MPS_IN(1), MPS_IN(2), MPS_IN(3), MPS_IN(4), n->p.norm.epsilon,
                                       MPS_OUT(0), x->dim[0], x->dim[1], mps_cuda_prod(x, 2, x->ndim), s->stream));
    } else if (n->op == MPS_OP_LRN) {
        const struct mps_lrn_params *p = &n->p.lrn;
        MPS_CU_CHECK(mps_cu_lrn(MPS_IN(0), MPS_OUT(0), x->dim[0], x->dim[1], mps_cuda_prod(x, 2, x->ndim), p->size,
                                p->alpha, p->beta, p->bias, s->stream));
    } else if (n->op == MPS_OP_INSTANCE_NORM) {
        MPS_CU_CHECK(mps_cu_instance_norm(MPS_IN(0), MPS_IN(1), MPS_IN(2), n->p.norm.epsilon, MPS_OUT(0),
                                          s->scratch, x->dim[0] * x->dim[1], x->dim[1], mps_cuda_prod(x, 2, x->ndim),
                                          s->stream));
    } else if (n->op == MPS_OP_LAYER_NORM) {
        struct mps_shape tail = {x->ndim - axis, {0}};
        memcpy(tail.dim, x->dim + axis, sizeof(int64_t) * (size_t)tail.ndim);
        int64_t ss[MPS_MAX_DIMS], bs[MPS_MAX_DIMS] = {0};
        mps_shape_broadcast_strides(&MPS_INV(1)->shape, &tail, ss);
        if (MPS_HAS(2))
            mps_shape_broadcast_strides(&MPS_INV(2)->shape, &tail, bs);
        struct mps_cu_walk sw = mps_cuda_walk(&tail, ss, NULL, NULL), bw = mps_cuda_walk(&tail, bs, NULL, NULL);
        MPS_CU_CHECK(mps_cu_layer_norm(MPS_IN(0), MPS_IN(1), MPS_HAS(2) ? MPS_IN(2) : NULL, MPS_OUT(0),
                                       n->n_out > 1 ? MPS_OUT(1) : NULL, n->n_out > 2 ? MPS_OUT(2) : NULL,
                                       mps_cuda_prod(x, 0, axis), mps_cuda_prod(x, axis, x->ndim), &sw, &bw,
                                       n->p.norm.epsilon, s->stream));
    } else {
        MPS_CU_CHECK(mps_cu_softmax(MPS_IN(0), MPS_OUT(0), mps_cuda_prod(x, 0, axis), x->dim[axis],
                                    mps_cuda_prod(x, axis + 1, x->ndim), n->op == MPS_OP_LOG_SOFTMAX, s->stream));
    }
    return MPS_OK;
}

mps_cuda_launcher mps_cuda_launcher_of(enum mps_op op)
{
    switch (op) {
    case MPS_OP_MATMUL: return mps_cuda_matmul;
    case MPS_OP_GEMM: return mps_cuda_gemm_node;
    case MPS_OP_CONV: return mps_cuda_conv;
    case MPS_OP_CONV_TRANSPOSE: return mps_cuda_conv_transpose;
    case MPS_OP_MAX_POOL:
    case MPS_OP_AVERAGE_POOL:
    case MPS_OP_GLOBAL_LP_POOL:
    case MPS_OP_GLOBAL_AVERAGE_POOL:
    case MPS_OP_GLOBAL_MAX_POOL: return mps_cuda_pool;
    case MPS_OP_BATCH_NORM:
    case MPS_OP_INSTANCE_NORM:
    case MPS_OP_LRN:
    case MPS_OP_LAYER_NORM:
    case MPS_OP_SOFTMAX:
    case MPS_OP_LOG_SOFTMAX: return mps_cuda_norm;
    case MPS_OP_RNN:
    case MPS_OP_GRU:
    case MPS_OP_LSTM: return mps_cuda_rnn;
    case MPS_OP_QLINEAR_CONV:
    case MPS_OP_QLINEAR_MATMUL:
    case MPS_OP_DEQUANTIZE:
    case MPS_OP_QUANTIZE: return mps_cuda_quant_launcher(op);
    default: return mps_cuda_data_launcher(op);
    }
}
