/* rnn.c: RNN, GRU and LSTM on the CPU (op.h has their gates and layouts).
   Per direction, the input's share of every gate at every step is one
   product, X W^T over all steps at once; then a step at a time one job
   over the batch, each thread taking its share of the rows for h R^T (its
   rows' product) and their gates, as a row's state reads its own row
   alone. Constant W and R are packed once at compile for the
   micro-kernels (pgemm.h); the gates' sigmoid and tanh are the family's
   vector loops. A sequence shorter than the others (sequence_lens) stops
   early: its rows of Y stay 0 and its final state is its last step's. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "pgemm.h"

/* What a run of node n holds: shapes and the scratch's parts. */
struct mps_rnn {
    const struct mps_rnn_params *p;
    enum mps_op op;
    int64_t gates, hidden, seq, batch, input, dirs;
};

static struct mps_rnn mps_rnn_of(const struct mps_node *n, const struct mps_shape *x)
{
    const struct mps_rnn_params *p = &n->p.rnn;
    return (struct mps_rnn){.p = p,
                            .op = n->op,
                            .gates = mps_rnn_gates(n->op),
                            .hidden = p->hidden,
                            .seq = x->dim[p->batch_first],
                            .batch = x->dim[!p->batch_first],
                            .input = x->dim[2],
                            .dirs = p->direction == 2 ? 2 : 1};
}

/* The packed weights of direction d (mps_cpu_rnn_pack): W as the input
   projection's B, then R as each step's (GRU without linear_before_reset:
   its first two blocks, then its third apart), each 64-byte aligned. */
struct mps_rnn_packed {
    const float *w, *r, *r_late;
};

static size_t mps_rnn_round64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* Bytes of one direction's packed weights, and where each part starts. */
static size_t mps_rnn_packed_dir(const struct mps_ukernels *uk, const struct mps_rnn *r, bool late, size_t *r_at,
                                 size_t *late_at)
{
    int64_t GH = r->gates * r->hidden, H = r->hidden;
    *r_at = mps_rnn_round64(mps_pgemm_packed_bytes(uk, GH, r->input, false));
    *late_at = *r_at + mps_rnn_round64(mps_pgemm_packed_bytes(uk, late ? 2 * H : GH, H, false));
    return *late_at + (late ? mps_rnn_round64(mps_pgemm_packed_bytes(uk, H, H, false)) : 0);
}

static struct mps_rnn_packed mps_rnn_packed_of(const struct mps_ukernels *uk, const struct mps_rnn *r, bool late,
                                               const void *packed, int64_t d)
{
    size_t r_at, late_at, dir = mps_rnn_packed_dir(uk, r, late, &r_at, &late_at);
    const unsigned char *base = (const unsigned char *)packed + (size_t)d * dir;
    return (struct mps_rnn_packed){(const float *)base, (const float *)(base + r_at),
                                   late ? (const float *)(base + late_at) : NULL};
}

size_t mps_cpu_rnn_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk, void *dst)
{
    const struct mps_value *w = &g->values[n->in[1]], *rw = &g->values[n->in[2]];
    if (!w->data || !rw->data || !uk)
        return 0; /* weights computed at run time: the BLAS, packing per call */
    struct mps_rnn r = mps_rnn_of(n, &g->values[n->in[0]].shape);
    bool late = n->op == MPS_OP_GRU && !r.p->linear_before_reset;
    int64_t GH = r.gates * r.hidden, H = r.hidden;
    size_t r_at, late_at, dir = mps_rnn_packed_dir(uk, &r, late, &r_at, &late_at);
    for (int64_t d = 0; dst && d < r.dirs; d++) { /* B's column j, row kk: W[d][j][kk], R[d][j][kk] */
        unsigned char *base = (unsigned char *)dst + (size_t)d * dir;
        const float *wd = (const float *)w->data + d * GH * r.input, *rd = (const float *)rw->data + d * GH * H;
        mps_pgemm_pack(uk, wd, r.input, 1, GH, r.input, false, (float *)base);
        mps_pgemm_pack(uk, rd, H, 1, late ? 2 * H : GH, H, false, (float *)(base + r_at));
        if (late)
            mps_pgemm_pack(uk, rd + 2 * H * H, H, 1, H, H, false, (float *)(base + late_at));
    }
    return dir * (size_t)r.dirs;
}

/* C[m x n] (ldc) = A[m x k] (row-major, lda) B, B packed (with uk, over pool, scratch its pgemm scratch); on the
   BLAS with b (its [n][k] rows) where not packed. */
static void mps_rnn_product(struct mps_pool *pool, const struct mps_ukernels *uk, void *scratch, int64_t m, int64_t n,
                            int64_t k, const float *x, int64_t lda, const float *packed, const float *b, float *c,
                            int64_t ldc)
{
    if (!packed) {
        mps_cpu_sgemm_ld(pool, false, true, m, n, k, 1.0f, x, lda, b, k, 0.0f, c, ldc);
        return;
    }
    struct mps_pgemm_strided as = {x, lda, 1, m};
    struct mps_pgemm_operand A = {.pack = mps_pgemm_pack_strided, .ctx = &as, .rows = x, .lda = lda},
                             B = {.packed = packed};
    mps_pgemm(pool, uk, m, n, k, &A, &B, c, ldc, NULL, NULL, scratch);
}

size_t mps_cpu_rnn_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                           int threads)
{
    (void)uk, (void)threads;
    struct mps_rnn r = mps_rnn_of(n, &g->values[n->in[0]].shape);
    /* the projection of every step, a step's gates, h, c, and GRU's r * h */
    return sizeof(float) * (size_t)((r.seq + 1) * r.batch * r.gates * r.hidden + 3 * r.batch * r.hidden);
}

/* Sequence b's steps: sequence_lens[b] (clamped to [0, T]), else T. */
static int64_t mps_rnn_len(const int32_t *lens, int64_t b, int64_t T)
{
    return lens ? (lens[b] < 0 ? 0 : lens[b] > T ? T : lens[b]) : T;
}

/* x clipped to [-clip, clip] when clip > 0, then f. */
static float mps_rnn_gate(const struct mps_rnn_params *p, const struct mps_rnn_act *f, float x)
{
    if (p->clip > 0)
        x = x < -p->clip ? -p->clip : x > p->clip ? p->clip : x;
    return mps_rnn_apply(f, x);
}

/* f (clipped first when clip > 0) over v[0..n) in place: Sigmoid and Tanh
   by the kernel family's vector forms (ukernel_act.h), the others a call
   each. */
static void mps_rnn_act_n(const struct mps_ukernels *uk, const struct mps_rnn_params *p, const struct mps_rnn_act *f,
                          float *v, int64_t n)
{
    float clip = p->clip > 0 ? p->clip : INFINITY;
    if (f->fn == MPS_RNN_SIGMOID || f->fn == MPS_RNN_TANH)
        (f->fn == MPS_RNN_SIGMOID ? uk->sigmoid : uk->tanh)(v, n, clip);
    else
        for (int64_t i = 0; i < n; i++)
            v[i] = mps_rnn_gate(p, f, v[i]);
}

/* One direction's step s, for the batch rows a task takes. */
struct mps_rnn_step {
    const struct mps_cpu_args *a;
    const struct mps_rnn *r;
    const struct mps_ukernels *uk;
    const struct mps_rnn_act *f, *g, *hf;
    struct mps_rnn_packed pk;
    const float *rd, *wb, *rb, *pd, *proj;
    const int32_t *lens;
    float *gates, *h, *c, *rh, *y;
    int64_t d, s;
    bool reverse;
    size_t thread_scratch; /* bytes of the pgemm scratch a thread uses */
    int64_t parts;         /* the batch cut in so many (mps_rnn_parts) */
};

/* Rows [b0, b1) of step s: each sequence's h R^T, gates and state depend on its own row alone, so a step
   splits over the batch, products and gates together (one job a step, not one a product). */
static void mps_rnn_rows(void *ctx, int64_t b0, int64_t b1)
{
    const struct mps_rnn_step *st = ctx;
    const struct mps_rnn *r = st->r;
    const struct mps_rnn_params *p = r->p;
    const struct mps_ukernels *uk = st->uk;
    int64_t G = r->gates, H = r->hidden, GH = G * H, N = r->batch, T = r->seq, s = st->s, d = st->d, m = b1 - b0;
    bool lstm = r->op == MPS_OP_LSTM, gru = r->op == MPS_OP_GRU, late = gru && !p->linear_before_reset;
    int64_t first = late ? 2 * H : GH; /* GRU without linear_before_reset multiplies r * h by R's third block later */
    const float *wb = st->wb, *rb = st->rb, *pd = st->pd;
    float *gates = st->gates, *h = st->h, *c = st->c, *rh = st->rh;
    const struct mps_rnn_act *f = st->f, *g = st->g, *hf = st->hf;
    void *scratch = st->a->gemm_scratch
                        ? (char *)st->a->gemm_scratch + st->thread_scratch * (size_t)mps_pool_self(st->a->pool)
                        : NULL;
    mps_rnn_product(NULL, st->a->uk, scratch, m, first, H, h + b0 * H, H, st->pk.r, st->rd, gates + b0 * GH, GH);
    for (int64_t b = b0; b < b1; b++) {
        int64_t len = mps_rnn_len(st->lens, b, T), t = st->reverse ? len - 1 - s : s;
        float *gb = gates + b * GH, *hb = h + b * H;
        if (s >= len) { /* this sequence has ended: its state stays */
            memset(rh + b * H, 0, sizeof(float) * (size_t)H);
            continue;
        }
        const float *xp = st->proj + (p->batch_first ? b * T + t : t * N + b) * GH;
        for (int64_t k = 0; k < GH; k++) { /* GRU's candidate: its input's part is added below */
            float rec = k < first ? gb[k] + (rb ? rb[k] : 0.0f) : 0.0f;
            gb[k] = rec + (gru && k >= 2 * H ? 0.0f : xp[k] + (wb ? wb[k] : 0.0f));
        }
        if (gru) /* z, r */
            mps_rnn_act_n(uk, p, f, gb, 2 * H);
        for (int64_t j = 0; late && j < H; j++)
            rh[b * H + j] = gb[H + j] * hb[j];
    }
    if (late) /* the candidate's (r * h) R^T, beside its recurrent bias added below */
        mps_rnn_product(NULL, st->a->uk, scratch, m, H, H, rh + b0 * H, H, st->pk.r_late, st->rd + 2 * H * H,
                        gates + b0 * GH + 2 * H, GH);
    for (int64_t b = b0; b < b1; b++) {
        int64_t len = mps_rnn_len(st->lens, b, T), t = st->reverse ? len - 1 - s : s;
        if (s >= len)
            continue;
        const float *xp = st->proj + (p->batch_first ? b * T + t : t * N + b) * GH;
        float *gb = gates + b * GH, *hb = h + b * H, *cb = c + b * H, *tmp = rh + b * H;
        if (lstm && !pd) { /* i, o, f, c: each block's activation over the block at once */
            mps_rnn_act_n(uk, p, f, gb, 3 * H);
            mps_rnn_act_n(uk, p, g, gb + 3 * H, H);
            for (int64_t j = 0; j < H; j++)
                tmp[j] = cb[j] = (p->input_forget ? 1.0f - gb[j] : gb[2 * H + j]) * cb[j] + gb[j] * gb[3 * H + j];
            mps_rnn_act_n(uk, &(struct mps_rnn_params){0}, hf, tmp, H); /* h's function is not clipped */
            for (int64_t j = 0; j < H; j++)
                hb[j] = gb[H + j] * tmp[j];
        } else if (gru || !lstm) { /* the candidate (GRU) or the state (RNN) over the block at once */
            for (int64_t j = 0; gru && j < H; j++)
                tmp[j] = xp[2 * H + j] + (wb ? wb[2 * H + j] : 0.0f) +
                         (late ? gb[2 * H + j] + (rb ? rb[2 * H + j] : 0.0f) : gb[H + j] * gb[2 * H + j]);
            mps_rnn_act_n(uk, p, gru ? g : f, gru ? tmp : gb, H);
            for (int64_t j = 0; j < H; j++)
                hb[j] = gru ? (1.0f - gb[j]) * tmp[j] + gb[j] * hb[j] : gb[j];
        }
        for (int64_t j = 0; lstm && pd && j < H; j++) { /* i, o, f, c; the peepholes P are i, o, f */
            float i = mps_rnn_gate(p, f, gb[j] + pd[j] * cb[j]);
            float fg = p->input_forget ? 1.0f - i : mps_rnn_gate(p, f, gb[2 * H + j] + pd[2 * H + j] * cb[j]);
            cb[j] = fg * cb[j] + i * mps_rnn_gate(p, g, gb[3 * H + j]);
            float o = mps_rnn_gate(p, f, gb[H + j] + pd[H + j] * cb[j]);
            hb[j] = o * mps_rnn_apply(hf, cb[j]);
        }
        float *yt = st->y + (p->batch_first ? (b * T + t) * r->dirs + d : (t * r->dirs + d) * N + b) * H;
        memcpy(yt, hb, sizeof(float) * (size_t)H);
    }
}

/* Parts [i0, i1) of the batch, cut in parts equal shares: a thread's rows in one product, whose tiles
   want rows together (a row a chunk ran the 2-row tiles, 40% of an LSTM at batch 16). */
static void mps_rnn_parts(void *ctx, int64_t i0, int64_t i1)
{
    const struct mps_rnn_step *st = ctx;
    for (int64_t i = i0; i < i1; i++)
        mps_rnn_rows(ctx, i * st->r->batch / st->parts, (i + 1) * st->r->batch / st->parts);
}

enum mps_status mps_cpu_rnn(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    struct mps_rnn r = mps_rnn_of(a->node, &a->in[0].shape);
    const struct mps_rnn_params *p = r.p;
    const struct mps_ukernels *uk = a->uk ? a->uk : &mps_ukernels_c; /* none when folded at load */
    int64_t G = r.gates, H = r.hidden, GH = G * H, N = r.batch, T = r.seq;
    bool lstm = r.op == MPS_OP_LSTM, gru = r.op == MPS_OP_GRU;
    const float *x = a->in[0].data, *w = a->in[1].data, *rw = a->in[2].data, *bias = a->in[3].data, *h0 = a->in[5].data,
                *c0 = lstm ? a->in[6].data : NULL, *peep = lstm ? a->in[7].data : NULL;
    float *y = a->out[0].data, *yh = a->out[1].data, *yc = lstm ? a->out[2].data : NULL;
    float *proj = a->scratch, *gates = proj + T * N * GH, *h = gates + N * GH, *c = h + N * H, *rh = c + N * H;
    memset(y, 0, sizeof(float) * (size_t)(T * r.dirs * N * H));
    for (int64_t d = 0; d < r.dirs; d++) {
        const float *wd = w + d * GH * r.input, *wb = bias ? bias + d * 2 * GH : NULL;
        /* the rows of X in its own order: [t, b] (or [b, t] batch first) */
        struct mps_rnn_packed pk = {NULL, NULL, NULL};
        if (a->packed)
            pk = mps_rnn_packed_of(a->uk, &r, gru && !p->linear_before_reset, a->packed, d);
        mps_rnn_product(a->pool, a->uk, a->gemm_scratch, T * N, GH, r.input, x, r.input, pk.w, wd, proj, GH);
        for (int64_t b = 0; b < N; b++) {
            int64_t at = (p->batch_first ? b * r.dirs + d : d * N + b) * H;
            for (int64_t j = 0; j < H; j++) {
                h[b * H + j] = h0 ? h0[at + j] : 0.0f;
                c[b * H + j] = c0 ? c0[at + j] : 0.0f;
            }
        }
        struct mps_rnn_step st = {.a = a,
                                  .r = &r,
                                  .uk = uk,
                                  .f = &p->act[d * 3],
                                  .g = &p->act[d * 3 + 1],
                                  .hf = &p->act[d * 3 + 2],
                                  .pk = pk,
                                  .rd = rw + d * GH * H,
                                  .wb = wb,
                                  .rb = wb ? wb + GH : NULL,
                                  .pd = peep ? peep + d * 3 * H : NULL,
                                  .proj = proj,
                                  .lens = a->in[4].data,
                                  .gates = gates,
                                  .h = h,
                                  .c = c,
                                  .rh = rh,
                                  .y = y,
                                  .d = d,
                                  .reverse = p->direction == 1 || d == 1,
                                  .thread_scratch =
                                      a->uk ? mps_pgemm_scratch(a->uk, 2) - mps_pgemm_scratch(a->uk, 1) : 0};
        int threads = a->pool ? mps_pool_threads(a->pool) : 1;
        st.parts = N < threads ? N : threads;
        for (st.s = 0; st.s < T; st.s++) /* a row's h R^T and gates: about 2 G H^2 + 20 G H operations */
            mps_pool_for(a->pool, st.parts, (2 * GH * H + 20 * GH) * (N / st.parts), mps_rnn_parts, &st);
        for (int64_t b = 0; b < N; b++) {
            int64_t at = (p->batch_first ? b * r.dirs + d : d * N + b) * H;
            memcpy(yh + at, h + b * H, sizeof(float) * (size_t)H);
            if (yc)
                memcpy(yc + at, c + b * H, sizeof(float) * (size_t)H);
        }
    }
    return MPS_OK;
}
