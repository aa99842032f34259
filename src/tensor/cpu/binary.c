/* binary.c: Add, Sub, Mul, Div, Pow, Max, Min, Sum, Mean and PRelu with numpy
   broadcasting, for f32 and (except Pow, Mean, PRelu) i64 and i32. Variadic
   ops fold their inputs pairwise into the output. */
#include <math.h>
#include <stdint.h>

#include "kernels.h"

struct mps_binary_job {
    enum mps_op op;
    enum mps_dtype dtype;
    const struct mps_shape *shape; /* the output's */
    const void *a, *b;
    void *y;
    int64_t sa[MPS_MAX_DIMS], sb[MPS_MAX_DIMS]; /* broadcast strides, elements */
};

/* Integer division that never traps: by zero gives 0, INT_MIN / -1 wraps. */
static int64_t mps_idiv(int64_t x, int64_t y)
{
    if (y == 0)
        return 0;
    if (y == -1)
        return (int64_t)(0 - (uint64_t)x);
    return x / y;
}

#define MPS_BINARY_ROW(T, a, b, y, n, sa, sb, op)                                  \
    do {                                                                            \
        for (int64_t i = 0; i < (n); i++) {                                         \
            T u = (a)[i * (sa)], v = (b)[i * (sb)];                                 \
            T r;                                                                    \
            switch (op) {                                                           \
            case MPS_OP_ADD:                                                        \
            case MPS_OP_SUM:                                                        \
            case MPS_OP_MEAN: r = u + v; break;                                     \
            case MPS_OP_SUB: r = u - v; break;                                      \
            case MPS_OP_MUL: r = u * v; break;                                      \
            case MPS_OP_MAX: r = (u > v || u != u) ? u : v; break;                  \
            case MPS_OP_MIN: r = (u < v || u != u) ? u : v; break;                  \
            default: r = u; break;                                                  \
            }                                                                       \
            (y)[i] = r;                                                             \
        }                                                                           \
    } while (0)

static void mps_binary_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_binary_job *q = ctx;
    const struct mps_shape *s = q->shape;
    int last = s->ndim - 1;
    int64_t n = s->ndim ? s->dim[last] : 1, sa = s->ndim ? q->sa[last] : 0, sb = s->ndim ? q->sb[last] : 0;
    for (int64_t row = begin; row < end; row++) {
        int64_t oa = 0, ob = 0, rem = row;
        for (int d = last - 1; d >= 0; d--) {
            int64_t idx = rem % s->dim[d];
            rem /= s->dim[d];
            oa += idx * q->sa[d];
            ob += idx * q->sb[d];
        }
        if (q->dtype == MPS_F32) {
            const float *a = (const float *)q->a + oa, *b = (const float *)q->b + ob;
            float *y = (float *)q->y + row * n;
            if (q->op == MPS_OP_DIV)
                for (int64_t i = 0; i < n; i++)
                    y[i] = a[i * sa] / b[i * sb];
            else if (q->op == MPS_OP_POW)
                for (int64_t i = 0; i < n; i++)
                    y[i] = powf(a[i * sa], b[i * sb]);
            else if (q->op == MPS_OP_PRELU)
                for (int64_t i = 0; i < n; i++)
                    y[i] = a[i * sa] < 0 ? a[i * sa] * b[i * sb] : a[i * sa];
            else
                MPS_BINARY_ROW(float, a, b, y, n, sa, sb, q->op);
        } else if (q->dtype == MPS_I64) {
            const int64_t *a = (const int64_t *)q->a + oa, *b = (const int64_t *)q->b + ob;
            int64_t *y = (int64_t *)q->y + row * n;
            for (int64_t i = 0; i < n; i++) { /* unsigned arithmetic: overflow wraps, never traps */
                int64_t u = a[i * sa], v = b[i * sb];
                uint64_t x = (uint64_t)u, w = (uint64_t)v;
                y[i] = q->op == MPS_OP_DIV   ? mps_idiv(u, v)
                       : q->op == MPS_OP_SUB ? (int64_t)(x - w)
                       : q->op == MPS_OP_MUL ? (int64_t)(x * w)
                       : q->op == MPS_OP_MAX ? (u > v ? u : v)
                       : q->op == MPS_OP_MIN ? (u < v ? u : v)
                                             : (int64_t)(x + w);
            }
        } else {
            const int32_t *a = (const int32_t *)q->a + oa, *b = (const int32_t *)q->b + ob;
            int32_t *y = (int32_t *)q->y + row * n;
            if (q->op == MPS_OP_DIV)
                for (int64_t i = 0; i < n; i++)
                    y[i] = (int32_t)mps_idiv(a[i * sa], b[i * sb]);
            else
                for (int64_t i = 0; i < n; i++) {
                    int64_t u = a[i * sa], v = b[i * sb];
                    int64_t r = q->op == MPS_OP_SUB   ? u - v
                                : q->op == MPS_OP_MUL ? u * v
                                : q->op == MPS_OP_MAX ? (u > v ? u : v)
                                : q->op == MPS_OP_MIN ? (u < v ? u : v)
                                                      : u + v;
                    y[i] = (int32_t)(uint32_t)r; /* wraps as int32 arithmetic does */
                }
        }
    }
}

/* y = a op b, a and b broadcast to y's shape. y may be a itself (same shape). */
static void mps_binary_apply(struct mps_pool *pool, enum mps_op op, const struct mps_tensor *a,
                             const struct mps_tensor *b, struct mps_tensor *y)
{
    struct mps_binary_job q = {.op = op, .dtype = y->dtype, .shape = &y->shape, .a = a->data, .b = b->data,
                               .y = y->data};
    mps_shape_broadcast_strides(&a->shape, &y->shape, q.sa);
    mps_shape_broadcast_strides(&b->shape, &y->shape, q.sb);
    int64_t n = y->shape.ndim ? y->shape.dim[y->shape.ndim - 1] : 1;
    int64_t rows = n ? mps_shape_numel(&y->shape) / n : 0;
    mps_pool_for(pool, rows, n, mps_binary_rows, &q);
}

enum mps_status mps_cpu_binary(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_node *n = a->node;
    struct mps_tensor *y = &a->out[0];
    (void)err;
    if (n->n_in == 1) { /* Sum, Mean, Max, Min of one input: a copy */
        struct mps_tensor zero = a->in[0];
        mps_binary_apply(a->pool, MPS_OP_MAX, &a->in[0], &zero, y);
        return MPS_OK;
    }
    mps_binary_apply(a->pool, n->op, &a->in[0], &a->in[1], y);
    for (int i = 2; i < n->n_in; i++)
        mps_binary_apply(a->pool, n->op, y, &a->in[i], y);
    if (n->op == MPS_OP_MEAN) {
        float *p = y->data;
        int64_t count = mps_shape_numel(&y->shape);
        for (int64_t i = 0; i < count; i++)
            p[i] /= (float)n->n_in;
    }
    return MPS_OK;
}

enum mps_status mps_cpu_prelu(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    mps_binary_apply(a->pool, MPS_OP_PRELU, &a->in[0], &a->in[1], &a->out[0]);
    return MPS_OK;
}
