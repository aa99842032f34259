/* gemm.c: MatMul (batched, numpy broadcasting of the batch dims; f32, or f16
   widened to f32) and Gemm. A product with constant weights (a Linear layer,
   MatMul by a weight) runs on the backend's micro-kernels, its weights packed
   once at compile (pgemm.h); a product of two run-time tensors, and f16, go
   through cblas_sgemm. */
#include <string.h>

#include "blas.h"
#include "kernels.h"
#include "pgemm.h"

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

/* What a product with constant weights keeps from compile: B packed for the
   micro-kernels (alpha folded in), and Gemm's beta * C as a bias per column. */
struct mps_gemm_packed {
    int64_t k;
    bool has_bias;
};
enum { MPS_GEMM_HEADER = 64 }; /* bytes before the packed B, which stays 64-byte aligned */

static const float *mps_gemm_packed_b(const struct mps_gemm_packed *p)
{
    return (const float *)((const unsigned char *)p + MPS_GEMM_HEADER);
}

/* The bias of a packed product: n floats after its packed B. */
static const float *mps_gemm_packed_bias(const struct mps_ukernels *uk, const struct mps_gemm_packed *h, int64_t n)
{
    return h->has_bias ? mps_gemm_packed_b(h) + mps_pgemm_packed_bytes(uk, n, h->k, false) / sizeof(float) : NULL;
}

/* Packs B (element (kk, j) at b[kk * bk + j * bn], k x n) times alpha behind a
   header, with room for a bias of n floats after it when has_bias (the caller
   writes it); returns the bytes. */
static size_t mps_gemm_pack_b(const struct mps_ukernels *uk, const float *b, int64_t bk, int64_t bn, int64_t k,
                              int64_t n, float alpha, bool has_bias, void *dst)
{
    size_t packed = mps_pgemm_packed_bytes(uk, n, k, false);
    size_t bytes = MPS_GEMM_HEADER + packed + (has_bias ? sizeof(float) * (size_t)n : 0);
    if (!dst)
        return bytes;
    struct mps_gemm_packed *h = dst;
    *h = (struct mps_gemm_packed){.k = k, .has_bias = has_bias};
    float *pb = (float *)((unsigned char *)dst + MPS_GEMM_HEADER);
    mps_pgemm_pack(uk, b, bn, bk, n, k, false, pb);
    if (alpha != 1.0f)
        for (size_t i = 0; i < packed / sizeof(float); i++)
            pb[i] *= alpha;
    return bytes;
}

/* C = A B on the micro-kernels: A (m x k, element (i, kk) at a[i * ai + kk * ak])
   at run time, B packed at compile. */
static void mps_gemm_packed_run(const struct mps_cpu_args *args, const float *a, int64_t ai, int64_t ak, int64_t m,
                                int64_t n, float *c, const struct mps_fused_act *act)
{
    const struct mps_gemm_packed *h = args->packed;
    struct mps_pgemm_strided as = {a, ai, ak, m};
    struct mps_pgemm_operand A = {.pack = mps_pgemm_pack_strided, .ctx = &as, .rows = ak == 1 ? a : NULL, .lda = ai},
                             B = {.packed = mps_gemm_packed_b(h)};
    struct mps_tile_epi e = mps_tile_epi_none();
    e.bias = mps_gemm_packed_bias(args->uk, h, n);
    e.bias_cols = true;
    bool inline_act = mps_pgemm_act_epi(act, &e);
    mps_pgemm(args->pool, args->uk, m, n, h->k, &A, &B, c, n, &e, inline_act ? NULL : act, args->gemm_scratch);
}

size_t mps_cpu_matmul_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                           void *dst)
{
    const struct mps_value *a = &g->values[n->in[0]], *b = &g->values[n->in[1]];
    if (!b->data || b->shape.ndim != 2 || a->dtype != MPS_F32 || b->dtype != MPS_F32)
        return 0; /* products of two run-time tensors, batched weights and f16 stay with the BLAS */
    int64_t k = b->shape.dim[0], cols = b->shape.dim[1];
    return mps_gemm_pack_b(uk, b->data, cols, 1, k, cols, 1.0f, false, dst);
}

size_t mps_cpu_gemm_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         void *dst)
{
    const struct mps_gemm_params *p = &n->p.gemm;
    const struct mps_value *a = &g->values[n->in[0]], *b = &g->values[n->in[1]], *y = &g->values[n->out[0]];
    const struct mps_value *c = n->n_in > 2 && n->in[2] >= 0 ? &g->values[n->in[2]] : NULL;
    if (!b->data || a->dtype != MPS_F32 || b->dtype != MPS_F32 || y->shape.ndim != 2)
        return 0;
    int64_t m = y->shape.dim[0], cols = y->shape.dim[1], k = b->shape.dim[p->trans_b ? 1 : 0];
    bool has_bias = c && p->beta != 0.0f;
    /* a constant C that is the same for every row becomes a bias per column */
    if (has_bias && (!c->data || c->dtype != MPS_F32 || (c->shape.ndim == 2 && c->shape.dim[0] != 1 && m != 1)))
        return 0;
    /* B[kk][j] is b[j][kk] with trans_b (a Linear layer's [out, in] weights), else b[kk][j] */
    size_t bytes = mps_gemm_pack_b(uk, b->data, p->trans_b ? 1 : cols, p->trans_b ? k : 1, k, cols, p->alpha,
                                   has_bias, dst);
    if (dst && has_bias) {
        int64_t st[MPS_MAX_DIMS];
        mps_shape_broadcast_strides(&c->shape, &y->shape, st);
        float *bias = (float *)mps_gemm_packed_bias(uk, dst, cols);
        for (int64_t j = 0; j < cols; j++)
            bias[j] = p->beta * ((const float *)c->data)[j * st[1]];
    }
    return bytes;
}

size_t mps_cpu_matmul_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                              int threads)
{
    (void)uk, (void)threads;
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
    (void)err;
    if (a->packed) { /* B constant (2-D, f32), packed at compile: A's batch folds into its rows */
        const struct mps_shape *y = &a->out[0].shape;
        int64_t n = y->ndim ? y->dim[y->ndim - 1] : 1, numel = mps_shape_numel(y);
        /* the sizes straight from the output's shape: mps_matmul_geom (shape broadcasts, a 240-byte
           struct zeroed) took longer than an 8 x 32 x 1 product's tile (perf) */
        if (numel > 0)
            mps_gemm_packed_run(a, a->in[0].data, ((const struct mps_gemm_packed *)a->packed)->k, 1, numel / n, n,
                                a->out[0].data, NULL);
        return MPS_OK;
    }
    struct mps_matmul_geom q = mps_matmul_geom(&a->in[0].shape, &a->in[1].shape);
    const float *pa = a->in[0].data, *pb = a->in[1].data;
    float *pc = a->out[0].data;
    int64_t na = mps_shape_numel(&a->in[0].shape), nb = mps_shape_numel(&a->in[1].shape),
            nc = mps_shape_numel(&a->out[0].shape);
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
    if (a->packed) { /* weights, alpha and beta * C packed at compile; the activation in the store */
        mps_gemm_packed_run(a, ta->data, p->trans_a ? 1 : k, p->trans_a ? m : 1, m, n, y, &p->act);
        return MPS_OK;
    }
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
