/* gemm.c: MatMul (batched, numpy broadcasting of the batch dims; f32, or f16
   widened to f32) and Gemm, both through cblas_sgemm. */
#include "blas.h"
#include "kernels.h"

static int mps_cpu_ld(int64_t v)
{
    return v > 0 ? (int)v : 1;
}

/* Below this many multiply-adds a product runs on the calling thread: waking
   the pool costs more than the second core gives back. */
#define MPS_SGEMM_SPLIT_MACS ((int64_t)1 << 20)

struct mps_sgemm_job {
    bool ta, tb, by_rows;
    int64_t m, n, k, block, lda, ldb, ldc;
    float alpha, beta;
    const float *a, *b;
    float *c;
};

/* Blocks [begin, end) of C: rows of A and C, or columns of B and C. */
static void mps_sgemm_blocks(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_sgemm_job *j = ctx;
    int64_t total = j->by_rows ? j->m : j->n, lo = begin * j->block,
            hi = end * j->block < total ? end * j->block : total;
    if (hi <= lo)
        return;
    const float *a = j->a, *b = j->b;
    float *c = j->c;
    int64_t m = j->m, n = j->n;
    if (j->by_rows) {
        a += j->ta ? lo : lo * j->lda;
        c += lo * j->ldc;
        m = hi - lo;
    } else {
        b += j->tb ? lo * j->ldb : lo;
        c += lo;
        n = hi - lo;
    }
    cblas_sgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)j->k, j->alpha, a, (int)j->lda, b, (int)j->ldb, j->beta, c, (int)j->ldc);
}

void mps_cpu_sgemm_ld(struct mps_pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (m == 0 || n == 0)
        return;
    struct mps_sgemm_job j = {.ta = ta,
                              .tb = tb,
                              .by_rows = m > n,
                              .m = m,
                              .n = n,
                              .k = k,
                              .lda = mps_cpu_ld(lda),
                              .ldb = mps_cpu_ld(ldb),
                              .ldc = mps_cpu_ld(ldc),
                              .alpha = alpha,
                              .beta = beta,
                              .a = a,
                              .b = b,
                              .c = c};
    int threads = mps_pool_threads(pool);
    if (threads == 1 || m * n * k < MPS_SGEMM_SPLIT_MACS) {
        j.block = j.by_rows ? m : n;
        mps_sgemm_blocks(&j, 0, 1);
        return;
    }
    int64_t total = j.by_rows ? m : n, align = j.by_rows ? 4 : 16;
    j.block = ((total + threads - 1) / threads + align - 1) / align * align;
    mps_pool_for(pool, (total + j.block - 1) / j.block, MPS_POOL_GRAIN, mps_sgemm_blocks, &j);
}

/* C[m,n] = A[m,k] B[k,n] (+ C when accumulate), row-major and contiguous. */
static void mps_cpu_sgemm(struct mps_pool *pool, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const float *a, const float *b, float beta, float *c)
{
    mps_cpu_sgemm_ld(pool, ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, c, n);
}

size_t mps_cpu_matmul_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    if (g->values[n->out[0]].dtype != MPS_F16)
        return 0;
    int64_t elems = 0;
    for (int i = 0; i < 3; i++)
        elems += mps_shape_numel(&g->values[i < 2 ? n->in[i] : n->out[0]].shape);
    return sizeof(float) * (size_t)elems;
}

static void mps_cpu_widen(const uint16_t *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = mps_f16_to_f32(x[i]);
}

enum mps_status mps_cpu_matmul(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_matmul_geom q = mps_matmul_geom(&a->in[0].shape, &a->in[1].shape);
    const float *pa = a->in[0].data, *pb = a->in[1].data;
    float *pc = a->out[0].data;
    int64_t na = mps_shape_numel(&a->in[0].shape), nb = mps_shape_numel(&a->in[1].shape),
            nc = mps_shape_numel(&a->out[0].shape);
    (void)err;
    if (a->out[0].dtype == MPS_F16) { /* f16: widened to f32 in scratch, one f32 product, rounded once */
        float *wa = a->scratch, *wb = wa + na;
        mps_cpu_widen(a->in[0].data, wa, na);
        mps_cpu_widen(a->in[1].data, wb, nb);
        pa = wa, pb = wb, pc = wb + nb;
    }
    if (q.fold) { /* B is one matrix: A's batch folds into its rows, one call */
        mps_cpu_sgemm(a->pool, false, false, q.m * q.batches, q.n, q.k, 1.0f, pa, pb, 0.0f, pc);
    } else {
        for (int64_t i = 0; i < q.batches; i++) {
            int64_t oa, ob;
            mps_matmul_offsets(&q, i, &oa, &ob);
            mps_cpu_sgemm(a->pool, false, false, q.m, q.n, q.k, 1.0f, pa + oa, pb + ob, 0.0f,
                          pc + i * q.m * q.n);
        }
    }
    if (a->out[0].dtype == MPS_F16)
        for (int64_t i = 0; i < nc; i++)
            ((uint16_t *)a->out[0].data)[i] = mps_f32_to_f16(pc[i]);
    return MPS_OK;
}

enum mps_status mps_cpu_gemm(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_gemm_params *p = &a->node->p.gemm;
    const struct mps_tensor *ta = &a->in[0], *tb = &a->in[1], *tc = &a->in[2];
    struct mps_tensor *out = &a->out[0];
    int64_t m = out->shape.dim[0], n = out->shape.dim[1];
    int64_t k = ta->shape.dim[p->trans_a ? 0 : 1];
    float *y = out->data;
    float beta = 0.0f;
    if (tc->data && p->beta != 0.0f) {
        /* Y = beta * C broadcast, then accumulate the product into it */
        int64_t st[MPS_MAX_DIMS];
        mps_shape_broadcast_strides(&tc->shape, &out->shape, st);
        const float *c = tc->data;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                y[i * n + j] = p->beta * c[i * st[0] + j * st[1]];
        beta = 1.0f;
    }
    if (k == 0 && beta == 0.0f) {
        for (int64_t i = 0; i < m * n; i++)
            y[i] = 0.0f;
        return mps_cpu_fused_act(a, err);
    }
    mps_cpu_sgemm(a->pool, p->trans_a, p->trans_b, m, n, k, p->alpha, ta->data, tb->data, beta, y);
    return mps_cpu_fused_act(a, err);
}
