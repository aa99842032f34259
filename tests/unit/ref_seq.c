/* ref_seq.c: the reference of the recurrent nets (RNN, GRU, LSTM) and of
   the losses, in double from the ONNX spec's equations. Test code only. */
#include "ref_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double ref_rnn_dot(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* An RNN activation in double, from ONNX's definitions. */
static double ref_rnn_fn(const struct mps_rnn_act *a, double x)
{
    double al = a->alpha, be = a->beta;
    switch (a->fn) {
    case MPS_RNN_SIGMOID: return 1 / (1 + exp(-x));
    case MPS_RNN_TANH: return tanh(x);
    case MPS_RNN_RELU: return x > 0 ? x : 0;
    case MPS_RNN_AFFINE: return al * x + be;
    case MPS_RNN_LEAKY_RELU: return x >= 0 ? x : al * x;
    case MPS_RNN_THRESHOLDED_RELU: return x > al ? x : 0;
    case MPS_RNN_SCALED_TANH: return al * tanh(be * x);
    case MPS_RNN_HARD_SIGMOID: return fmax(0, fmin(1, al * x + be));
    case MPS_RNN_ELU: return x >= 0 ? x : al * (exp(x) - 1);
    case MPS_RNN_SOFTSIGN: return x / (1 + fabs(x));
    default: return log(1 + exp(x)); /* Softplus */
    }
}

/* RNN, GRU, LSTM as ONNX writes their equations, one sequence, one step and
   one unit at a time: the gates' sums x W^T + h R^T + biases from scratch. */
void ref_rnn(enum mps_op op, const struct mps_rnn_params *p, const struct ref_tensor *in, int n_in,
                    struct ref_tensor *out)
{
    const double *x = in[0].d, *w = in[1].d, *r = in[2].d, *bias = n_in > 3 ? in[3].d : NULL,
                 *lens = n_in > 4 ? in[4].d : NULL, *h0 = n_in > 5 ? in[5].d : NULL, *c0 = n_in > 6 ? in[6].d : NULL,
                 *peep = n_in > 7 ? in[7].d : NULL;
    int64_t H = p->hidden,
            G = op == MPS_OP_LSTM  ? 4
                : op == MPS_OP_GRU ? 3
                                   : 1,
            dirs = p->direction == 2 ? 2 : 1, T = in[0].shape.dim[p->batch_first], N = in[0].shape.dim[!p->batch_first],
            I = in[0].shape.dim[2];
    double *h = calloc((size_t)H, sizeof *h), *c = calloc((size_t)H, sizeof *c), *hn = calloc((size_t)H, sizeof *hn);
    double clip = p->clip;
#define REF_X(t, b, i) x[((p->batch_first ? (b)*T + (t) : (t)*N + (b)) * I) + (i)]
#define REF_STATE(d, b) (((p->batch_first ? (b)*dirs + (d) : (d)*N + (b))) * H)
    for (int64_t d = 0; d < dirs; d++) {
        const struct mps_rnn_act *f = &p->act[d * 3], *g = f + 1, *hf = f + 2;
        for (int64_t b = 0; b < N; b++) {
            int64_t len = lens ? (int64_t)lens[b] : T;
            len = len < 0 ? 0 : len > T ? T : len;
            for (int64_t j = 0; j < H; j++) {
                h[j] = h0 ? h0[REF_STATE(d, b) + j] : 0;
                c[j] = c0 ? c0[REF_STATE(d, b) + j] : 0;
            }
            for (int64_t s = 0; s < len; s++) {
                int64_t t = p->direction == 1 || d == 1 ? len - 1 - s : s;
                /* sum of gate k's unit j: x W^T (+ Wb), and h R^T (+ Rb) apart, with hr in place of h when given */
#define REF_XW(k, j)                                                                                                   \
    ref_rnn_dot(&REF_X(t, b, 0), w + (d * G * H + (k)*H + (j)) * I, I) + (bias ? bias[d * 2 * G * H + (k)*H + (j)] : 0)
#define REF_HR(k, j, hv)                                                                                               \
    ref_rnn_dot(hv, r + (d * G * H + (k)*H + (j)) * H, H) + (bias ? bias[d * 2 * G * H + G * H + (k)*H + (j)] : 0)
#define REF_CLIP(v) (clip > 0 ? fmax(-clip, fmin(clip, (v))) : (v))
                for (int64_t j = 0; j < H; j++) {
                    if (op == MPS_OP_RNN) {
                        hn[j] = ref_rnn_fn(f, REF_CLIP(REF_XW(0, j) + REF_HR(0, j, h)));
                    } else if (op == MPS_OP_GRU) {
                        double z = ref_rnn_fn(f, REF_CLIP(REF_XW(0, j) + REF_HR(0, j, h)));
                        double hc;
                        if (p->linear_before_reset) {
                            double rr = ref_rnn_fn(f, REF_CLIP(REF_XW(1, j) + REF_HR(1, j, h)));
                            hc = ref_rnn_fn(g, REF_CLIP(REF_XW(2, j) + rr * (REF_HR(2, j, h))));
                        } else {
                            double *rh = calloc((size_t)H, sizeof *rh);
                            for (int64_t q = 0; q < H; q++)
                                rh[q] = ref_rnn_fn(f, REF_CLIP(REF_XW(1, q) + REF_HR(1, q, h))) * h[q];
                            hc = ref_rnn_fn(g, REF_CLIP(REF_XW(2, j) + REF_HR(2, j, rh)));
                            free(rh);
                        }
                        hn[j] = (1 - z) * hc + z * h[j];
                    } else { /* LSTM: i, o, f, c; P holds i, o, f */
                        const double *pp = peep ? peep + d * 3 * H : NULL;
                        double i = ref_rnn_fn(f, REF_CLIP(REF_XW(0, j) + REF_HR(0, j, h) + (pp ? pp[j] * c[j] : 0)));
                        double fg = p->input_forget ? 1 - i
                                                    : ref_rnn_fn(f, REF_CLIP(REF_XW(2, j) + REF_HR(2, j, h) +
                                                                             (pp ? pp[2 * H + j] * c[j] : 0)));
                        double cn = fg * c[j] + i * ref_rnn_fn(g, REF_CLIP(REF_XW(3, j) + REF_HR(3, j, h)));
                        double o = ref_rnn_fn(f, REF_CLIP(REF_XW(1, j) + REF_HR(1, j, h) + (pp ? pp[H + j] * cn : 0)));
                        hn[j] = o * ref_rnn_fn(hf, cn);
                        c[j] = cn; /* h is read below by later units: only c changes here */
                    }
                }
                memcpy(h, hn, sizeof(double) * (size_t)H);
                int64_t y = p->batch_first ? ((b * T + t) * dirs + d) * H : ((t * dirs + d) * N + b) * H;
                memcpy(out[0].d + y, h, sizeof(double) * (size_t)H);
            }
            memcpy(out[1].d + REF_STATE(d, b), h, sizeof(double) * (size_t)H);
            if (op == MPS_OP_LSTM)
                memcpy(out[2].d + REF_STATE(d, b), c, sizeof(double) * (size_t)H);
        }
    }
#undef REF_X
#undef REF_STATE
#undef REF_XW
#undef REF_HR
#undef REF_CLIP
    free(h);
    free(c);
    free(hn);
}

/* ReverseSequence from its definition: output (t, b) reads (len - 1 - t, b) below len, (t, b) else. */
void ref_revseq(const struct mps_revseq_params *p, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *s = &in[0].shape;
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(s); o++) {
        ref_unravel(s, o, idx);
        int64_t len = (int64_t)in[1].d[idx[p->batch_axis]];
        if (idx[p->time_axis] < len)
            idx[p->time_axis] = len - 1 - idx[p->time_axis];
        out[0].d[o] = in[0].d[ref_ravel(s, idx)];
    }
}


/* The determinant of the n x n matrix m by Laplace expansion along its first row. */
static double ref_det1(const double *m, int n)
{
    if (n == 0)
        return 1;
    double sum = 0, *minor = malloc(sizeof(double) * (size_t)((n - 1) * (n - 1) + 1));
    for (int j = 0; j < n; j++) {
        for (int r = 1; r < n; r++)
            for (int c = 0, k = 0; c < n; c++)
                if (c != j)
                    minor[(r - 1) * (n - 1) + k++] = m[r * n + c];
        sum += (j % 2 ? -1 : 1) * m[j] * ref_det1(minor, n - 1);
    }
    free(minor);
    return sum;
}

void ref_det(const struct ref_tensor *in, struct ref_tensor *out)
{
    int n = (int)in[0].shape.dim[in[0].shape.ndim - 1];
    for (int64_t k = 0; k < ref_numel(&out[0].shape); k++)
        out[0].d[k] = ref_det1(in[0].d + k * n * n, n);
}

/* Einsum of letters only (no ellipsis), from its definition the other way
   round from the kernel: every assignment of every letter visited once, its
   product added into the output element the output's letters name. */
void ref_einsum(const char *eq, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    int64_t size[128] = {0}, at[128] = {0};
    const char *arrow = strstr(eq, "->"), *p = eq;
    char letters[64];
    int n_letters = 0;
    for (int k = 0; k < n_in; k++, p++) { /* sizes from the terms, in order */
        for (int d = 0; *p && *p != ',' && *p != '-'; p++)
            if (*p != ' ') {
                if (!size[(int)*p])
                    letters[n_letters++] = *p;
                size[(int)*p] = in[k].shape.dim[d++];
            }
    }
    memset(out[0].d, 0, sizeof(double) * (size_t)ref_numel(&out[0].shape));
    for (;;) {
        double prod = 1;
        p = eq;
        for (int k = 0; k < n_in; k++, p++) {
            int64_t off = 0;
            for (int d = 0; *p && *p != ',' && *p != '-'; p++)
                if (*p != ' ')
                    off = off * in[k].shape.dim[d++] + at[(int)*p];
            prod *= in[k].d[off];
        }
        int64_t o = 0;
        for (const char *q = arrow ? arrow + 2 : ""; *q; q++)
            if (*q != ' ')
                o = o * size[(int)*q] + at[(int)*q];
        out[0].d[o] += prod;
        int i = n_letters - 1; /* the next assignment, the last letter fastest */
        while (i >= 0 && ++at[(int)letters[i]] == size[(int)letters[i]])
            at[(int)letters[i--]] = 0;
        if (i < 0)
            break;
    }
}

/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss from the spec's
   numpy reference: the log-softmax over C (SCE), each target's -weight *
   logp with ignored targets weighing 0, then none, sum, or the sum over the
   gathered weights (mean). */
void ref_loss(enum mps_op op, const struct mps_loss_params *p, const struct ref_tensor *in, int n_in,
              struct ref_tensor *out, int n_out)
{
    const struct mps_shape *xs = &in[0].shape;
    int64_t N = xs->dim[0], C = xs->dim[1], D = ref_numel(xs) / (N * C);
    const double *w = n_in > 2 ? in[2].d : NULL;
    double *logp = malloc(sizeof(double) * (size_t)ref_numel(xs)), sum = 0, wsum = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t d = 0; d < D; d++) {
            double mx = -INFINITY, e = 0;
            for (int64_t c = 0; c < C; c++)
                mx = fmax(mx, in[0].d[(n * C + c) * D + d]);
            for (int64_t c = 0; c < C; c++)
                e += exp(in[0].d[(n * C + c) * D + d] - mx);
            for (int64_t c = 0; c < C; c++)
                logp[(n * C + c) * D + d] =
                    op == MPS_OP_SCE_LOSS ? in[0].d[(n * C + c) * D + d] - mx - log(e) : in[0].d[(n * C + c) * D + d];
            int64_t t = (int64_t)in[1].d[n * D + d];
            bool ignored = p->has_ignore && t == p->ignore_index;
            double wt = ignored ? 0 : w ? w[t] : 1, l = ignored ? 0 : -wt * logp[(n * C + t) * D + d];
            if (p->reduction == MPS_LOSS_NONE)
                out[0].d[n * D + d] = l;
            sum += l, wsum += wt;
        }
    if (p->reduction != MPS_LOSS_NONE)
        out[0].d[0] = p->reduction == MPS_LOSS_SUM ? sum : sum / wsum;
    if (n_out > 1)
        memcpy(out[1].d, logp, sizeof(double) * (size_t)ref_numel(xs));
    free(logp);
}

void ref_tfidf(const struct mps_tfidf_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    const struct ref_tensor *x = &in[0];
    int64_t cols = x->shape.dim[x->shape.ndim - 1], rows = x->shape.ndim == 2 ? x->shape.dim[0] : 1;
    int64_t len = ref_numel(&in[1].shape), sizes = ref_numel(&in[2].shape), g = 0,
            n_out = out[0].shape.dim[out[0].shape.ndim - 1];
    for (int64_t i = 0; i < ref_numel(&out[0].shape); i++)
        out[0].d[i] = 0;
    for (int64_t n = 1; n <= sizes; n++) { /* the pool's n-grams in order; g counts them */
        int64_t from = (int64_t)in[2].d[n - 1], to = n < sizes ? (int64_t)in[2].d[n] : len;
        for (int64_t at = from; at < to; at += n, g++) {
            if (n < p->min_n || n > p->max_n)
                continue;
            int64_t o = (int64_t)in[3].d[g];
            double w = n_in > 4 ? in[4].d[g] : 1;
            for (int64_t r = 0; r < rows; r++) {
                double count = 0;
                for (int64_t i = 0; i < cols; i++)
                    for (int64_t s = 0; s <= (n == 1 ? 0 : p->max_skip); s++) {
                        bool match = i + (n - 1) * (s + 1) < cols;
                        for (int64_t k = 0; match && k < n; k++)
                            match = x->d[r * cols + i + k * (s + 1)] == in[1].d[at + k];
                        count += match;
                    }
                out[0].d[r * n_out + o] = p->mode == MPS_TFIDF_TF    ? count
                                          : p->mode == MPS_TFIDF_IDF ? (count > 0 ? w : 0)
                                                                     : count * w;
            }
        }
    }
}
