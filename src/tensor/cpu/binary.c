/* binary.c: Add, Sub, Mul, Div, Pow, Mod, Max, Min, Sum, Mean, PRelu and BitShift with numpy
   broadcasting: f32, i64 and i32 in loops of their own, every other number
   dtype (f64, the narrower and unsigned integers, Pow of two dtypes)
   element by element in double or 64-bit integers. Variadic ops fold their
   inputs pairwise into the output. A fused activation (two f32 inputs) is
   applied to each thread's chunk of output once written. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"
#include "mod.h"

/* The output is walked in items of up to MPS_BINARY_SEG elements of a row (of
   the merged walk), so that a long flat row is still spread over the threads. */
#define MPS_BINARY_SEG 4096

struct mps_binary_job {
    enum mps_op op;
    bool fmod;                    /* Mod's fmod; BitShift's right */
    enum mps_dtype dtype, ta, tb; /* y's, a's, b's */
    const void *a, *b;
    void *y;
    const struct mps_fused_act *act; /* on, f32 only; or NULL */
    int nd;                          /* the merged walk: y is contiguous over dim */
    int64_t dim[MPS_MAX_DIMS], sa[MPS_MAX_DIMS], sb[MPS_MAX_DIMS], sy[MPS_MAX_DIMS];
    int64_t segs;                    /* items per row */
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

/* y[i] = EXPR of u = a[i sa] and v = b[i sb] for i < n: contiguous and
   broadcast operands (a stride of 0: a per-channel scale, a bias) as loops
   of their own, which the compiler vectorizes; the strided loop stayed
   scalar (a squeeze-excitation Mul took five times onnxruntime's time). */
#define MPS_BINARY_F32(EXPR)                                                        \
    do {                                                                            \
        if (sa == 1 && sb == 1)                                                     \
            for (int64_t i = 0; i < n; i++) {                                       \
                float u = a[i], v = b[i];                                           \
                y[i] = (EXPR);                                                      \
            }                                                                       \
        else if (sa == 1 && sb == 0)                                                \
            for (int64_t i = 0, v0 = 0; i < n; i++) {                               \
                float u = a[i], v = b[v0];                                          \
                y[i] = (EXPR);                                                      \
            }                                                                       \
        else if (sa == 0 && sb == 1)                                                \
            for (int64_t i = 0, u0 = 0; i < n; i++) {                               \
                float u = a[u0], v = b[i];                                          \
                y[i] = (EXPR);                                                      \
            }                                                                       \
        else                                                                        \
            for (int64_t i = 0; i < n; i++) {                                       \
                float u = a[i * sa], v = b[i * sb];                                 \
                y[i] = (EXPR);                                                      \
            }                                                                       \
    } while (0)

/* One row of an f32 op. */
static void mps_binary_row_f32(enum mps_op op, const float *a, const float *b, float *y, int64_t n, int64_t sa,
                               int64_t sb, bool fmod)
{
    switch (op) {
    case MPS_OP_ADD:
    case MPS_OP_SUM:
    case MPS_OP_MEAN: MPS_BINARY_F32(u + v); break;
    case MPS_OP_SUB: MPS_BINARY_F32(u - v); break;
    case MPS_OP_MUL: MPS_BINARY_F32(u * v); break;
    case MPS_OP_DIV: MPS_BINARY_F32(u / v); break;
    case MPS_OP_MAX: MPS_BINARY_F32((u > v || u != u) ? u : v); break;
    case MPS_OP_MIN: MPS_BINARY_F32((u < v || u != u) ? u : v); break;
    case MPS_OP_POW: MPS_BINARY_F32(powf(u, v)); break;
    case MPS_OP_MOD: MPS_BINARY_F32((float)mps_mod_float(u, v, fmod)); break;
    case MPS_OP_PRELU: MPS_BINARY_F32(u < 0 ? u * v : u); break;
    default: break;
    }
}
#undef MPS_BINARY_F32

/* One row of any other dtypes (mps_binary_items): floats and Pow in double,
   integers in 64 bits, stored wrapped to the output's width. */
static void mps_binary_row_other(const struct mps_binary_job *q, int64_t oa, int64_t ob, int64_t oy, int64_t n,
                                 int64_t sa, int64_t sb)
{
    enum mps_op op = q->op;
    for (int64_t i = 0; i < n; i++) {
        int64_t ia = oa + i * sa, ib = ob + i * sb;
        if (op == MPS_OP_POW || mps_dtype_is_float(q->dtype)) {
            double u = mps_elem_get(q->a, q->ta, ia), v = mps_elem_get(q->b, q->tb, ib);
            double r = op == MPS_OP_SUB     ? u - v
                       : op == MPS_OP_MUL   ? u * v
                       : op == MPS_OP_DIV   ? u / v
                       : op == MPS_OP_POW   ? pow(u, v)
                       : op == MPS_OP_MOD   ? mps_mod_float(u, v, q->fmod)
                       : op == MPS_OP_MAX   ? ((u > v || u != u) ? u : v)
                       : op == MPS_OP_MIN   ? ((u < v || u != u) ? u : v)
                       : op == MPS_OP_PRELU ? (u < 0 ? u * v : u)
                                            : u + v;
            mps_elem_set(q->y, q->dtype, oy + i, r);
            continue;
        }
        int64_t u = mps_elem_get_int(q->a, q->ta, ia), v = mps_elem_get_int(q->b, q->tb, ib), r;
        uint64_t x = (uint64_t)u, w = (uint64_t)v;
        if (op == MPS_OP_BIT_SHIFT) /* unsigned (shape.c) */
            r = w >= 64 ? 0 : (int64_t)(q->fmod ? x >> w : x << w);
        else if (mps_dtype_is_unsigned(q->dtype))
            r = op == MPS_OP_DIV   ? (int64_t)(w ? x / w : 0)
                : op == MPS_OP_MOD ? (int64_t)(w ? x % w : 0)
                : op == MPS_OP_MAX ? (int64_t)(x > w ? x : w)
                : op == MPS_OP_MIN ? (int64_t)(x < w ? x : w)
                                   : 0;
        else
            r = op == MPS_OP_DIV   ? mps_idiv(u, v)
                : op == MPS_OP_MOD ? mps_mod_int(u, v, q->fmod)
                : op == MPS_OP_MAX ? (u > v ? u : v)
                : op == MPS_OP_MIN ? (u < v ? u : v)
                                   : 0;
        if (op == MPS_OP_SUB)
            r = (int64_t)(x - w);
        else if (op == MPS_OP_MUL)
            r = (int64_t)(x * w);
        else if (op == MPS_OP_ADD || op == MPS_OP_SUM)
            r = (int64_t)(x + w);
        mps_elem_set_int(q->y, q->dtype, oy + i, r);
    }
}

/* Where item k starts in y. */
static int64_t mps_binary_item_start(const struct mps_binary_job *q, int64_t k)
{
    return k / q->segs * q->dim[q->nd - 1] + k % q->segs * MPS_BINARY_SEG;
}

static void mps_binary_items(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_binary_job *q = ctx;
    int last = q->nd - 1;
    int64_t sa = q->sa[last], sb = q->sb[last];
    for (int64_t k = begin; k < end; k++) {
        int64_t row = k / q->segs, i0 = k % q->segs * MPS_BINARY_SEG;
        int64_t n = q->dim[last] - i0 < MPS_BINARY_SEG ? q->dim[last] - i0 : MPS_BINARY_SEG;
        int64_t oa = i0 * sa, ob = i0 * sb, rem = row;
        for (int d = last - 1; d >= 0; d--) {
            int64_t idx = rem % q->dim[d];
            rem /= q->dim[d];
            oa += idx * q->sa[d];
            ob += idx * q->sb[d];
        }
        int64_t oy = row * q->dim[last] + i0;
        if (q->ta != q->dtype || q->tb != q->dtype || (q->op == MPS_OP_POW && q->dtype != MPS_F32) ||
            (q->dtype != MPS_F32 && q->dtype != MPS_I64 && q->dtype != MPS_I32)) {
            mps_binary_row_other(q, oa, ob, oy, n, sa, sb);
        } else if (q->dtype == MPS_F32) {
            const float *a = (const float *)q->a + oa, *b = (const float *)q->b + ob;
            float *y = (float *)q->y + oy;
            mps_binary_row_f32(q->op, a, b, y, n, sa, sb, q->fmod);
        } else if (q->dtype == MPS_I64) {
            const int64_t *a = (const int64_t *)q->a + oa, *b = (const int64_t *)q->b + ob;
            int64_t *y = (int64_t *)q->y + oy;
            for (int64_t i = 0; i < n; i++) { /* unsigned arithmetic: overflow wraps, never traps */
                int64_t u = a[i * sa], v = b[i * sb];
                uint64_t x = (uint64_t)u, w = (uint64_t)v;
                y[i] = q->op == MPS_OP_MOD   ? mps_mod_int(u, v, q->fmod)
                       : q->op == MPS_OP_DIV ? mps_idiv(u, v)
                       : q->op == MPS_OP_SUB ? (int64_t)(x - w)
                       : q->op == MPS_OP_MUL ? (int64_t)(x * w)
                       : q->op == MPS_OP_MAX ? (u > v ? u : v)
                       : q->op == MPS_OP_MIN ? (u < v ? u : v)
                                             : (int64_t)(x + w);
            }
        } else {
            const int32_t *a = (const int32_t *)q->a + oa, *b = (const int32_t *)q->b + ob;
            int32_t *y = (int32_t *)q->y + oy;
            if (q->op == MPS_OP_DIV || q->op == MPS_OP_MOD)
                for (int64_t i = 0; i < n; i++)
                    y[i] = (int32_t)(q->op == MPS_OP_DIV ? mps_idiv(a[i * sa], b[i * sb])
                                                         : mps_mod_int(a[i * sa], b[i * sb], q->fmod));
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
    if (q->act) { /* the chunk's items are one contiguous run of y: one vectorized pass over it */
        int64_t y0 = mps_binary_item_start(q, begin);
        mps_cpu_act_inplace(q->act, (float *)q->y + y0, mps_binary_item_start(q, end) - y0);
    }
}

/* y = act(a op b), a and b broadcast to y's shape; act may be NULL; fmod:
   Mod's flag. y may be a itself (same shape). */
static void mps_binary_apply(struct mps_pool *pool, enum mps_op op, bool fmod, const struct mps_tensor *a,
                             const struct mps_tensor *b, struct mps_tensor *y, const struct mps_fused_act *act)
{
    struct mps_binary_job q = {.op = op,
                               .fmod = fmod,
                               .dtype = y->dtype,
                               .ta = a->dtype,
                               .tb = b->dtype,
                               .a = a->data,
                               .b = b->data,
                               .y = y->data,
                               .act = act,
                               .nd = y->shape.ndim};
    memcpy(q.dim, y->shape.dim, sizeof q.dim);
    mps_shape_broadcast_strides(&a->shape, &y->shape, q.sa);
    mps_shape_broadcast_strides(&b->shape, &y->shape, q.sb);
    mps_shape_strides(&y->shape, q.sy);
    q.nd = mps_walk_merge(q.nd, q.dim, 3, (int64_t *const[]){q.sa, q.sb, q.sy});
    int64_t n = q.dim[q.nd - 1];
    if (n == 0)
        return;
    q.segs = (n + MPS_BINARY_SEG - 1) / MPS_BINARY_SEG;
    int64_t items = mps_shape_numel(&y->shape) / n * q.segs;
    mps_pool_for(pool, items, n < MPS_BINARY_SEG ? n : MPS_BINARY_SEG, mps_binary_items, &q);
}

enum mps_status mps_cpu_binary(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_node *n = a->node;
    struct mps_tensor *y = &a->out[0];
    (void)err;
    if (n->n_in == 1) { /* Sum, Mean, Max, Min of one input: a copy */
        struct mps_tensor zero = a->in[0];
        mps_binary_apply(a->pool, MPS_OP_MAX, false, &a->in[0], &zero, y, NULL);
        return MPS_OK;
    }
    const struct mps_fused_act *act = mps_node_act(n); /* Add, Sub, Mul, Div: two inputs, this one step */
    bool fmod = n->op == MPS_OP_MOD ? n->p.binary.fmod : n->op == MPS_OP_BIT_SHIFT && n->p.binary.right;
    mps_binary_apply(a->pool, n->op, fmod, &a->in[0], &a->in[1], y, act && act->on ? act : NULL);
    for (int i = 2; i < n->n_in; i++)
        mps_binary_apply(a->pool, n->op, false, y, &a->in[i], y, NULL);
    if (n->op == MPS_OP_MEAN) {
        int64_t count = mps_shape_numel(&y->shape);
        for (int64_t i = 0; i < count; i++)
            if (y->dtype == MPS_F32)
                ((float *)y->data)[i] /= (float)n->n_in;
            else
                ((double *)y->data)[i] /= n->n_in;
    }
    return MPS_OK;
}

enum mps_status mps_cpu_prelu(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    mps_binary_apply(a->pool, MPS_OP_PRELU, false, &a->in[0], &a->in[1], &a->out[0], NULL);
    return MPS_OK;
}
