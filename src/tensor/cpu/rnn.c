/* rnn.c: RNN, GRU and LSTM on the CPU (op.h has their gates and layouts).
   Per direction, the input's share of every gate at every step is one
   product, X W^T over all steps at once; then a step at a time, h R^T over
   the batch (one product) and the gates elementwise. A sequence shorter
   than the others (sequence_lens) stops early: its rows of Y stay 0 and
   its final state is its last step's. */
#include <math.h>
#include <string.h>

#include "kernels.h"

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

enum mps_status mps_cpu_rnn(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    struct mps_rnn r = mps_rnn_of(a->node, &a->in[0].shape);
    const struct mps_rnn_params *p = r.p;
    int64_t G = r.gates, H = r.hidden, GH = G * H, N = r.batch, T = r.seq;
    bool lstm = r.op == MPS_OP_LSTM, gru = r.op == MPS_OP_GRU;
    const float *x = a->in[0].data, *w = a->in[1].data, *rw = a->in[2].data, *bias = a->in[3].data, *h0 = a->in[5].data,
                *c0 = lstm ? a->in[6].data : NULL, *peep = lstm ? a->in[7].data : NULL;
    const int32_t *lens = a->in[4].data;
    float *y = a->out[0].data, *yh = a->out[1].data, *yc = lstm ? a->out[2].data : NULL;
    float *proj = a->scratch, *gates = proj + T * N * GH, *h = gates + N * GH, *c = h + N * H, *rh = c + N * H;
    memset(y, 0, sizeof(float) * (size_t)(T * r.dirs * N * H));
    for (int64_t d = 0; d < r.dirs; d++) {
        bool reverse = p->direction == 1 || d == 1;
        const struct mps_rnn_act *f = &p->act[d * 3], *g = f + 1, *hf = f + 2;
        const float *wd = w + d * GH * r.input, *rd = rw + d * GH * H, *wb = bias ? bias + d * 2 * GH : NULL,
                    *rb = wb ? wb + GH : NULL, *pd = peep ? peep + d * 3 * H : NULL;
        /* the rows of X in its own order: [t, b] (or [b, t] batch first) */
        mps_cpu_sgemm_ld(a->pool, false, true, T * N, GH, r.input, 1.0f, x, r.input, wd, r.input, 0.0f, proj, GH);
        for (int64_t b = 0; b < N; b++) {
            int64_t at = (p->batch_first ? b * r.dirs + d : d * N + b) * H;
            for (int64_t j = 0; j < H; j++) {
                h[b * H + j] = h0 ? h0[at + j] : 0.0f;
                c[b * H + j] = c0 ? c0[at + j] : 0.0f;
            }
        }
        /* GRU without linear_before_reset multiplies r * h by its third block of R, once r is known */
        bool late = gru && !p->linear_before_reset;
        int64_t first = late ? 2 * H : GH;
        for (int64_t s = 0; s < T; s++) {
            mps_cpu_sgemm_ld(a->pool, false, true, N, first, H, 1.0f, h, H, rd, H, 0.0f, gates, GH);
            for (int64_t b = 0; b < N; b++) {
                int64_t len = mps_rnn_len(lens, b, T), t = reverse ? len - 1 - s : s;
                float *gb = gates + b * GH, *hb = h + b * H;
                if (s >= len) { /* this sequence has ended: its state stays */
                    memset(rh + b * H, 0, sizeof(float) * (size_t)H);
                    continue;
                }
                const float *xp = proj + (p->batch_first ? b * T + t : t * N + b) * GH;
                for (int64_t k = 0; k < GH; k++) { /* GRU's candidate: its input's part is added below */
                    float rec = k < first ? gb[k] + (rb ? rb[k] : 0.0f) : 0.0f;
                    gb[k] = rec + (gru && k >= 2 * H ? 0.0f : xp[k] + (wb ? wb[k] : 0.0f));
                }
                for (int64_t j = 0; gru && j < 2 * H; j++) /* z, r */
                    gb[j] = mps_rnn_gate(p, f, gb[j]);
                for (int64_t j = 0; late && j < H; j++)
                    rh[b * H + j] = gb[H + j] * hb[j];
            }
            if (late) /* the candidate's (r * h) R^T, beside its recurrent bias added below */
                mps_cpu_sgemm_ld(a->pool, false, true, N, H, H, 1.0f, rh, H, rd + 2 * H * H, H, 0.0f, gates + 2 * H,
                                 GH);
            for (int64_t b = 0; b < N; b++) {
                int64_t len = mps_rnn_len(lens, b, T), t = reverse ? len - 1 - s : s;
                if (s >= len)
                    continue;
                const float *xp = proj + (p->batch_first ? b * T + t : t * N + b) * GH;
                float *gb = gates + b * GH, *hb = h + b * H, *cb = c + b * H;
                for (int64_t j = 0; j < H; j++) {
                    if (lstm) { /* i, o, f, c; the peepholes P are i, o, f */
                        float i = mps_rnn_gate(p, f, gb[j] + (pd ? pd[j] * cb[j] : 0.0f));
                        float fg = p->input_forget
                                       ? 1.0f - i
                                       : mps_rnn_gate(p, f, gb[2 * H + j] + (pd ? pd[2 * H + j] * cb[j] : 0.0f));
                        cb[j] = fg * cb[j] + i * mps_rnn_gate(p, g, gb[3 * H + j]);
                        float o = mps_rnn_gate(p, f, gb[H + j] + (pd ? pd[H + j] * cb[j] : 0.0f));
                        hb[j] = o * mps_rnn_apply(hf, cb[j]);
                    } else if (gru) { /* z, r, then the candidate: r gates h (late) or h R + Rb */
                        float rec = late ? gb[2 * H + j] + (rb ? rb[2 * H + j] : 0.0f) : gb[H + j] * gb[2 * H + j];
                        float hc = mps_rnn_gate(p, g, xp[2 * H + j] + (wb ? wb[2 * H + j] : 0.0f) + rec);
                        hb[j] = (1.0f - gb[j]) * hc + gb[j] * hb[j];
                    } else {
                        hb[j] = mps_rnn_gate(p, f, gb[j]);
                    }
                }
                float *yt = y + (p->batch_first ? (b * T + t) * r.dirs + d : (t * r.dirs + d) * N + b) * H;
                memcpy(yt, hb, sizeof(float) * (size_t)H);
            }
        }
        for (int64_t b = 0; b < N; b++) {
            int64_t at = (p->batch_first ? b * r.dirs + d : d * N + b) * H;
            memcpy(yh + at, h + b * H, sizeof(float) * (size_t)H);
            if (yc)
                memcpy(yc + at, c + b * H, sizeof(float) * (size_t)H);
        }
    }
    return MPS_OK;
}
