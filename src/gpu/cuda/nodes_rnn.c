/* nodes_rnn.c: RNN, GRU and LSTM on CUDA, the CPU's split (rnn.c) inside the
   model's graph: per direction one cuBLAS product for the input's share of
   every gate at every step (X W^T), then per step one product h R^T over the
   batch and one cell kernel (rnn.cu) for the gates, the state and Y; GRU
   without linear_before_reset adds r * h and its product between them. */
#include "nodes.h"

/* Scratch: the projection of every step, a step's recurrent sums, h, c and GRU's r * h. */
size_t mps_cuda_rnn_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    const struct mps_shape *x = &g->values[n->in[0]].shape;
    int64_t T = x->dim[n->p.rnn.batch_first], N = x->dim[!n->p.rnn.batch_first], H = n->p.rnn.hidden,
            GH = mps_rnn_gates(n->op) * H;
    return sizeof(float) * (size_t)(T * N * GH + N * GH + 4 * N * H);
}

/* C[m, n] = A[m, k] B[n, k]^T, a step's product over the batch: up to 32 rows by the
   few-rows kernel, 8 rows a launch (cuBLAS's fp32 GEMM took 27 us for 16 x 512 x 128 on
   an H200, its m = 1 path 0.5 us: an LSTM of 100 steps ran 5x slower at batch 16 than at
   1), more by cuBLAS. constant: B is a weight no kernel writes (mps_cu_gemv). */
static enum mps_status mps_cuda_rnn_product(struct mps_cuda_state *s, int64_t m, int64_t n, int64_t k, const float *a,
                                            const float *b, float *c, bool constant, struct mps_error *err)
{
    if (m > 4 * MPS_CU_GEMV_ROWS)
        return mps_cuda_gemm(s, false, true, m, n, k, 1.0f, a, b, 0.0f, c, err);
    for (int64_t r = 0; r < m; r += MPS_CU_GEMV_ROWS) {
        int64_t rows = m - r < MPS_CU_GEMV_ROWS ? m - r : MPS_CU_GEMV_ROWS;
        MPS_CU_CHECK(
            mps_cu_gemv(a + r * k, b, NULL, 1.0f, 0.0f, c + r * n, rows, n, k, 0, 0.0f, 0.0f, constant, s->stream));
    }
    return MPS_OK;
}

enum mps_status mps_cuda_rnn(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err)
{
    const struct mps_graph *g = s->g;
    const struct mps_rnn_params *p = &n->p.rnn;
    const struct mps_shape *xs = &MPS_INV(0)->shape;
    int64_t T = xs->dim[p->batch_first], N = xs->dim[!p->batch_first], I = xs->dim[2], H = p->hidden,
            G = mps_rnn_gates(n->op), GH = G * H, dirs = p->direction == 2 ? 2 : 1;
    bool lstm = n->op == MPS_OP_LSTM, late = n->op == MPS_OP_GRU && !p->linear_before_reset,
         constant = MPS_INV(2)->data != NULL; /* R a weight: uploaded once, never written */
    int64_t first = late ? 2 * H : GH;
    float *proj = s->scratch, *rec = proj + T * N * GH, *h = rec + N * GH, *c = h + N * H, *rh = c + N * H,
          *rec2 = rh + N * H;
    const float *w = MPS_IN(1), *r = MPS_IN(2), *bias = MPS_HAS(3) ? MPS_IN(3) : NULL,
                *peep = lstm && MPS_HAS(7) ? MPS_IN(7) : NULL;
    for (int64_t d = 0; d < dirs; d++) {
        struct mps_cu_rnn q = {.op = n->op,
                               .steps = T,
                               .batch = N,
                               .hidden = H,
                               .dirs = dirs,
                               .dir = d,
                               .reverse = p->direction == 1 || d == 1,
                               .batch_first = p->batch_first,
                               .input_forget = p->input_forget,
                               .linear_before_reset = p->linear_before_reset,
                               .clip = p->clip,
                               .proj = proj,
                               .rec = rec,
                               .rec2 = late ? rec2 : NULL,
                               .wb = bias ? bias + d * 2 * GH : NULL,
                               .rb = bias ? bias + d * 2 * GH + GH : NULL,
                               .peep = peep ? peep + d * 3 * H : NULL,
                               .lens = MPS_HAS(4) ? MPS_IN(4) : NULL,
                               .h0 = MPS_HAS(5) ? MPS_IN(5) : NULL,
                               .c0 = lstm && MPS_HAS(6) ? MPS_IN(6) : NULL,
                               .h = h,
                               .c = lstm ? c : NULL,
                               .rh = rh,
                               .y = MPS_OUT(0),
                               .yh = MPS_OUT(1),
                               .yc = lstm ? MPS_OUT(2) : NULL};
        for (int k = 0; k < 3; k++)
            q.fn[k] = (int)p->act[d * 3 + k].fn, q.alpha[k] = p->act[d * 3 + k].alpha,
            q.beta[k] = p->act[d * 3 + k].beta;
        const float *wd = w + d * GH * I, *rd = r + d * GH * H;
        enum mps_status st = mps_cuda_gemm(s, false, true, T * N, GH, I, 1.0f, MPS_IN(0), wd, 0.0f, proj, err);
        if (st)
            return st;
        MPS_CU_CHECK(mps_cu_rnn_start(&q, s->stream));
        for (int64_t step = 0; step < T; step++) {
            if ((st = mps_cuda_rnn_product(s, N, first, H, h, rd, rec, constant, err)))
                return st;
            if (late) {
                MPS_CU_CHECK(mps_cu_rnn_reset(&q, step, s->stream));
                if ((st = mps_cuda_rnn_product(s, N, H, H, rh, rd + 2 * H * H, rec2, constant, err)))
                    return st;
            }
            MPS_CU_CHECK(mps_cu_rnn_step(&q, step, s->stream));
        }
    }
    return MPS_OK;
}
