/* gemm.c: MatMul (batched, numpy broadcasting of the batch dims) and Gemm,
   both through cblas_sgemm. */
#include "blas.h"
#include "kernels.h"

static int mps_cpu_ld(int64_t v)
{
    return v > 0 ? (int)v : 1;
}

/* C[m,n] = A[m,k] B[k,n] (+ C when accumulate), row-major and contiguous. */
static void mps_cpu_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                          const float *b, float beta, float *c)
{
    if (m == 0 || n == 0)
        return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
                (int)k, alpha, a, mps_cpu_ld(ta ? m : k), b, mps_cpu_ld(tb ? k : n), beta, c, mps_cpu_ld(n));
}

enum mps_status mps_cpu_matmul(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_matmul_geom q = mps_matmul_geom(&a->in[0].shape, &a->in[1].shape);
    const float *pa = a->in[0].data, *pb = a->in[1].data;
    float *pc = a->out[0].data;
    (void)err;
    if (q.fold) { /* B is one matrix: A's batch folds into its rows, one call */
        mps_cpu_sgemm(false, false, q.m * q.batches, q.n, q.k, 1.0f, pa, pb, 0.0f, pc);
        return MPS_OK;
    }
    for (int64_t i = 0; i < q.batches; i++) {
        int64_t oa, ob;
        mps_matmul_offsets(&q, i, &oa, &ob);
        mps_cpu_sgemm(false, false, q.m, q.n, q.k, 1.0f, pa + oa, pb + ob, 0.0f, pc + i * q.m * q.n);
    }
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
    mps_cpu_sgemm(p->trans_a, p->trans_b, m, n, k, p->alpha, ta->data, tb->data, beta, y);
    return mps_cpu_fused_act(a, err);
}
