// rnn.cu: the cells of RNN, GRU and LSTM, one launch a step (cuda_kernels.h),
// every unit of every sequence a thread; the products between them are cuBLAS's.
#include <math.h>

#include "common.cuh"
#include "op.h"

/* Activation fn (enum mps_rnn_fn) of x, as ONNX defines it (op.c's mps_rnn_apply). */
__device__ static float mps_cu_rnn_fn(int fn, float alpha, float beta, float x)
{
    switch (fn) {
    case MPS_RNN_SIGMOID: {
        float e = expf(-fabsf(x));
        return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
    }
    case MPS_RNN_TANH: return tanhf(x);
    case MPS_RNN_RELU: return x > 0 ? x : 0.0f;
    case MPS_RNN_AFFINE: return alpha * x + beta;
    case MPS_RNN_LEAKY_RELU: return x >= 0 ? x : alpha * x;
    case MPS_RNN_THRESHOLDED_RELU: return x > alpha ? x : 0.0f;
    case MPS_RNN_SCALED_TANH: return alpha * tanhf(beta * x);
    case MPS_RNN_HARD_SIGMOID: {
        float y = alpha * x + beta;
        return y < 0 ? 0.0f : y > 1 ? 1.0f : y;
    }
    case MPS_RNN_ELU: return x >= 0 ? x : alpha * expm1f(x);
    case MPS_RNN_SOFTSIGN: return x / (1 + fabsf(x));
    case MPS_RNN_SOFTPLUS: return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
    default: return x;
    }
}

/* Function k (0 f, 1 g, 2 h) of the gate sum x, clipped first unless it is h. */
__device__ static float mps_cu_rnn_act(const struct mps_cu_rnn &q, int k, float x)
{
    if (q.clip > 0 && k < 2)
        x = x < -q.clip ? -q.clip : x > q.clip ? q.clip : x;
    return mps_cu_rnn_fn(q.fn[k], q.alpha[k], q.beta[k], x);
}

/* Sequence b's steps, and the time step s reads (-1 when s is past its end). */
__device__ static int64_t mps_cu_rnn_time(const struct mps_cu_rnn &q, int64_t b, int64_t s)
{
    int64_t len = q.lens ? q.lens[b] : q.steps;
    len = len < 0 ? 0 : len > q.steps ? q.steps : len;
    return s >= len ? -1 : q.reverse ? len - 1 - s : s;
}

/* Offset of sequence b's state in h0, yh (layout 0: [dirs, batch, H]; 1: [batch, dirs, H]). */
__device__ static int64_t mps_cu_rnn_state(const struct mps_cu_rnn &q, int64_t b)
{
    return (q.batch_first ? b * q.dirs + q.dir : q.dir * q.batch + b) * q.hidden;
}

__global__ static void mps_cu_rnn_start_k(struct mps_cu_rnn q)
{
    mps_cu_wait();
    MPS_CU_FOR(i, q.batch * q.hidden)
    {
        int64_t b = i / q.hidden, j = i % q.hidden, at = mps_cu_rnn_state(q, b) + j;
        q.h[i] = q.h0 ? q.h0[at] : 0.0f;
        q.yh[at] = q.h[i];
        if (q.c) {
            q.c[i] = q.c0 ? q.c0[at] : 0.0f;
            q.yc[at] = q.c[i];
        }
    }
}

/* The sum of gate k's unit j for sequence b: its input's share (with W's bias) and rec's (with R's). */
__device__ static float mps_cu_rnn_sum(const struct mps_cu_rnn &q, const float *xp, int64_t b, int k, int64_t j,
                                       int64_t first)
{
    int64_t u = k * q.hidden + j;
    return xp[u] + (q.wb ? q.wb[u] : 0.0f) + q.rec[b * first + u] + (q.rb ? q.rb[u] : 0.0f);
}

__global__ static void mps_cu_rnn_reset_k(struct mps_cu_rnn q, int64_t s)
{
    mps_cu_wait();
    int64_t G = 3, first = 2 * q.hidden;
    MPS_CU_FOR(i, q.batch * q.hidden)
    {
        int64_t b = i / q.hidden, j = i % q.hidden, t = mps_cu_rnn_time(q, b, s);
        if (t < 0) {
            q.rh[i] = 0.0f;
            continue;
        }
        const float *xp = q.proj + (q.batch_first ? b * q.steps + t : t * q.batch + b) * G * q.hidden;
        q.rh[i] = mps_cu_rnn_act(q, 0, mps_cu_rnn_sum(q, xp, b, 1, j, first)) * q.h[i];
    }
}

__global__ static void mps_cu_rnn_step_k(struct mps_cu_rnn q, int64_t s)
{
    mps_cu_wait();
    int64_t H = q.hidden, G = q.op == MPS_OP_LSTM ? 4 : q.op == MPS_OP_GRU ? 3 : 1;
    bool late = q.op == MPS_OP_GRU && !q.linear_before_reset;
    int64_t first = late ? 2 * H : G * H;
    MPS_CU_FOR(i, q.batch * H)
    {
        int64_t b = i / H, j = i % H, t = mps_cu_rnn_time(q, b, s);
        if (t < 0) { /* past the end: Y's row at time s is 0, the state stays */
            q.y[(q.batch_first ? (b * q.steps + s) * q.dirs + q.dir : (s * q.dirs + q.dir) * q.batch + b) * H + j] = 0;
            continue;
        }
        const float *xp = q.proj + (q.batch_first ? b * q.steps + t : t * q.batch + b) * G * H;
        float h = q.h[i], hn;
        if (q.op == MPS_OP_LSTM) { /* i, o, f, c; P holds i, o, f */
            float c = q.c[i], pi = q.peep ? q.peep[j] : 0, po = q.peep ? q.peep[H + j] : 0,
                  pf = q.peep ? q.peep[2 * H + j] : 0;
            float ig = mps_cu_rnn_act(q, 0, mps_cu_rnn_sum(q, xp, b, 0, j, first) + pi * c);
            float fg =
                q.input_forget ? 1.0f - ig : mps_cu_rnn_act(q, 0, mps_cu_rnn_sum(q, xp, b, 2, j, first) + pf * c);
            float cn = fg * c + ig * mps_cu_rnn_act(q, 1, mps_cu_rnn_sum(q, xp, b, 3, j, first));
            float og = mps_cu_rnn_act(q, 0, mps_cu_rnn_sum(q, xp, b, 1, j, first) + po * cn);
            hn = og * mps_cu_rnn_act(q, 2, cn);
            q.c[i] = cn;
            q.yc[mps_cu_rnn_state(q, b) + j] = cn;
        } else if (q.op == MPS_OP_GRU) { /* z, r, then the candidate: r gates h R + Rb, or (r h) R + Rb */
            float z = mps_cu_rnn_act(q, 0, mps_cu_rnn_sum(q, xp, b, 0, j, first));
            int64_t u = 2 * H + j;
            float in = xp[u] + (q.wb ? q.wb[u] : 0.0f), rb = q.rb ? q.rb[u] : 0.0f, rec;
            if (late) {
                rec = q.rec2[b * H + j] + rb;
            } else {
                float r = mps_cu_rnn_act(q, 0, mps_cu_rnn_sum(q, xp, b, 1, j, first));
                rec = r * (q.rec[b * first + u] + rb);
            }
            float hc = mps_cu_rnn_act(q, 1, in + rec);
            hn = (1.0f - z) * hc + z * h;
        } else {
            hn = mps_cu_rnn_act(q, 0, mps_cu_rnn_sum(q, xp, b, 0, j, first));
        }
        q.h[i] = hn;
        q.yh[mps_cu_rnn_state(q, b) + j] = hn;
        q.y[(q.batch_first ? (b * q.steps + t) * q.dirs + q.dir : (t * q.dirs + q.dir) * q.batch + b) * H + j] = hn;
    }
}

extern "C" int mps_cu_rnn_start(const struct mps_cu_rnn *q, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_rnn_start_k, q->batch * q->hidden, stream, *q);
}

extern "C" int mps_cu_rnn_reset(const struct mps_cu_rnn *q, int64_t s, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_rnn_reset_k, q->batch * q->hidden, stream, *q, s);
}

extern "C" int mps_cu_rnn_step(const struct mps_cu_rnn *q, int64_t s, void *stream)
{
    MPS_CU_LAUNCH(mps_cu_rnn_step_k, q->batch * q->hidden, stream, *q, s);
}
