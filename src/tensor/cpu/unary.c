/* unary.c: elementwise f32 activations and math functions, Cast, and the ops
   that copy their input unchanged (Identity, Dropout, Constant, and the
   reshaping ops, whose output has the input's bytes in a new shape). */
#include <math.h>
#include <string.h>

#include "kernels.h"

struct mps_unary_job {
    enum mps_op op;
    const struct mps_act_params *p;
    const float *x;
    float *y;
};

static float mps_sigmoid(float x)
{
    if (x >= 0)
        return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

static void mps_unary_chunk(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_unary_job *jb = ctx;
    const float *x = jb->x + begin;
    float *y = jb->y + begin;
    int64_t n = end - begin;
    float alpha = jb->p->alpha, beta = jb->p->beta;
#define MPS_MAP(expr)                      \
    for (int64_t i = 0; i < n; i++) {      \
        float v = x[i];                    \
        y[i] = (expr);                     \
    }                                      \
    break
    switch (jb->op) {
    case MPS_OP_RELU: MPS_MAP(v > 0 ? v : (v == v ? 0.0f : v));
    case MPS_OP_LEAKY_RELU: MPS_MAP(v >= 0 ? v : alpha * v);
    case MPS_OP_ELU: MPS_MAP(v >= 0 ? v : alpha * expm1f(v));
    case MPS_OP_SELU: MPS_MAP(v > 0 ? beta * v : beta * alpha * expm1f(v));
    case MPS_OP_SIGMOID: MPS_MAP(mps_sigmoid(v));
    /* fmaxf(0, fminf(1, t)) as selects, the same values (a NaN t gives 1, as
       fminf does, and cuda) in a loop the compiler vectorizes: the calls to
       fminf and fmaxf cost 2 ns an element, LR-ASPP's twenty HardSigmoids
       a third of its run */
    case MPS_OP_HARD_SIGMOID: MPS_MAP(mps_tile_hard_sigmoid(alpha * v + beta));
    case MPS_OP_HARD_SWISH: MPS_MAP(v * mps_tile_hard_sigmoid(v / 6.0f + 0.5f));
    case MPS_OP_TANH: MPS_MAP(tanhf(v));
    case MPS_OP_SOFTPLUS: MPS_MAP(v > 0 ? v + log1pf(expf(-v)) : log1pf(expf(v)));
    case MPS_OP_SOFTSIGN: MPS_MAP(v / (1.0f + fabsf(v)));
    case MPS_OP_GELU:
        if (beta != 0.0f) {
            MPS_MAP(0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))));
        }
        MPS_MAP(0.5f * v * (1.0f + erff(v * 0.70710678118654752f)));
    case MPS_OP_ERF: MPS_MAP(erff(v));
    case MPS_OP_SIN: MPS_MAP(sinf(v));
    case MPS_OP_COS: MPS_MAP(cosf(v));
    case MPS_OP_TAN: MPS_MAP(tanf(v));
    case MPS_OP_ASIN: MPS_MAP(asinf(v));
    case MPS_OP_ACOS: MPS_MAP(acosf(v));
    case MPS_OP_ATAN: MPS_MAP(atanf(v));
    case MPS_OP_SINH: MPS_MAP(sinhf(v));
    case MPS_OP_COSH: MPS_MAP(coshf(v));
    case MPS_OP_ASINH: MPS_MAP(asinhf(v));
    case MPS_OP_ACOSH: MPS_MAP(acoshf(v));
    case MPS_OP_ATANH: MPS_MAP(atanhf(v));
    case MPS_OP_EXP: MPS_MAP(expf(v));
    case MPS_OP_LOG: MPS_MAP(logf(v));
    case MPS_OP_SQRT: MPS_MAP(sqrtf(v));
    case MPS_OP_ABS: MPS_MAP(fabsf(v));
    case MPS_OP_NEG: MPS_MAP(-v);
    case MPS_OP_RECIPROCAL: MPS_MAP(1.0f / v);
    case MPS_OP_FLOOR: MPS_MAP(floorf(v));
    case MPS_OP_CEIL: MPS_MAP(ceilf(v));
    case MPS_OP_CLIP: MPS_MAP(v != v ? v : v < alpha ? alpha : v > beta ? beta : v);
    case MPS_OP_SIGN: MPS_MAP(v > 0 ? 1.0f : v < 0 ? -1.0f : v); /* 0, -0 and NaN as they are */
    case MPS_OP_ROUND: MPS_MAP(rintf(v)); /* halves to even, in the default rounding mode */
    case MPS_OP_THRESHOLDED_RELU: MPS_MAP(v > alpha ? v : 0.0f);
    case MPS_OP_SHRINK: MPS_MAP(v < -alpha ? v + beta : v > alpha ? v - beta : 0.0f);
    default: break;
    }
#undef MPS_MAP
}

static void mps_unary_apply(struct mps_pool *pool, enum mps_op op, const struct mps_act_params *p, const float *x,
                            float *y, int64_t n)
{
    struct mps_unary_job job = {op, p, x, y};
    mps_pool_for(pool, n, 4, mps_unary_chunk, &job); /* a few operations per element */
}

void mps_cpu_unary_f32(enum mps_op op, const struct mps_act_params *p, const float *x, float *y, int64_t n)
{
    mps_unary_chunk(&(struct mps_unary_job){op, p, x, y}, 0, n);
}

void mps_cpu_act_inplace(const struct mps_fused_act *act, float *y, int64_t n)
{
    if (!act->on)
        return;
    if (act->op == MPS_OP_RELU || act->op == MPS_OP_CLIP) { /* branch-free: the compiler vectorizes it */
        float lo = act->op == MPS_OP_RELU ? 0.0f : act->p.alpha, hi = act->op == MPS_OP_RELU ? INFINITY : act->p.beta;
        for (int64_t i = 0; i < n; i++) {
            float v = y[i];
            v = v < lo ? lo : v; /* NaN stays NaN: both comparisons are false */
            y[i] = v > hi ? hi : v;
        }
        return;
    }
    mps_unary_chunk(&(struct mps_unary_job){act->op, &act->p, y, y}, 0, n);
}

void mps_cpu_add_act(const struct mps_fused_act *act, float *y, const float *r, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += r[i];
    mps_cpu_act_inplace(act, y, n);
}

/* Neg, Abs, Sign, Relu, Clip of a dtype other than f32: integers exact in 64
   bits (Neg and Abs wrap as the narrow type does once stored), f64 in double. */
static void mps_unary_other(const struct mps_node *n, const struct mps_tensor *x, struct mps_tensor *y)
{
    int64_t count = mps_shape_numel(&x->shape);
    double lo = n->p.act.alpha, hi = n->p.act.beta;
    for (int64_t i = 0; i < count; i++) {
        if (mps_dtype_is_float(x->dtype)) { /* NaN stays NaN */
            double v = mps_elem_get(x->data, x->dtype, i), r;
            switch (n->op) {
            case MPS_OP_NEG: r = -v; break;
            case MPS_OP_ABS: r = fabs(v); break;
            case MPS_OP_SIGN: r = v > 0 ? 1 : v < 0 ? -1 : v; break;
            case MPS_OP_RELU: r = v < 0 ? 0 : v; break;
            default: r = v < lo ? lo : v > hi ? hi : v; break; /* Clip */
            }
            mps_elem_set(y->data, y->dtype, i, r);
            continue;
        }
        int64_t v = mps_elem_get_int(x->data, x->dtype, i), r;
        bool neg = !mps_dtype_is_unsigned(x->dtype) && v < 0;
        if (n->op == MPS_OP_NEG || (n->op == MPS_OP_ABS && neg))
            r = (int64_t)(0 - (uint64_t)v);
        else if (n->op == MPS_OP_SIGN)
            r = neg ? -1 : v != 0;
        else if (n->op == MPS_OP_RELU)
            r = neg ? 0 : v;
        else if (n->op == MPS_OP_CLIP) { /* compared as doubles; a bound of +-inf is none */
            double d = mps_elem_get(x->data, x->dtype, i);
            r = d < lo ? (int64_t)ceil(lo) : d > hi ? (int64_t)floor(hi) : v;
        } else {
            r = v;
        }
        mps_elem_set_int(y->data, y->dtype, i, r);
    }
}

enum mps_status mps_cpu_unary(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    if (a->in[0].dtype != MPS_F32) {
        mps_unary_other(a->node, &a->in[0], &a->out[0]);
        return MPS_OK;
    }
    mps_unary_apply(a->pool, a->node->op, &a->node->p.act, a->in[0].data, a->out[0].data,
                    mps_shape_numel(&a->out[0].shape));
    return MPS_OK;
}

enum mps_status mps_cpu_fused_act(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_node *n = a->node;
    const struct mps_fused_act *act = mps_node_act(n);
    (void)err;
    if (act && act->on)
        mps_unary_apply(a->pool, act->op, &act->p, a->out[0].data, a->out[0].data,
                        mps_shape_numel(&a->out[0].shape));
    return MPS_OK;
}

enum mps_status mps_cpu_copy(const struct mps_cpu_args *a, struct mps_error *err)
{
    size_t bytes = mps_tensor_bytes(&a->out[0]);
    (void)err;
    if (bytes && a->out[0].data != a->in[0].data)
        memcpy(a->out[0].data, a->in[0].data, bytes);
    return MPS_OK;
}

static bool mps_cast_is_int(enum mps_dtype t)
{
    return t == MPS_I64 || t == MPS_I32 || t == MPS_U8;
}

/* The casts between bytes and f32 that a quantized model's compositions run
   at every layer (DequantizeLinear's in, QuantizeLinear's out), as loops
   the compiler vectorizes, with mps_elem_set's values: NaN to 0, truncated,
   saturated (on a resnet18's 800,000 elements: 4.7 ms through it). */
static bool mps_cpu_cast_bytes(const struct mps_tensor *x, struct mps_tensor *y, int64_t n)
{
    if (y->dtype == MPS_F32 && x->dtype == MPS_U8) {
        for (int64_t i = 0; i < n; i++)
            ((float *)y->data)[i] = ((const uint8_t *)x->data)[i];
    } else if (y->dtype == MPS_F32 && x->dtype == MPS_I8) {
        for (int64_t i = 0; i < n; i++)
            ((float *)y->data)[i] = ((const int8_t *)x->data)[i];
    } else if (x->dtype == MPS_F32 && (y->dtype == MPS_U8 || y->dtype == MPS_I8)) {
        float lo = y->dtype == MPS_U8 ? 0.0f : -128.0f, hi = y->dtype == MPS_U8 ? 255.0f : 127.0f;
        for (int64_t i = 0; i < n; i++) {
            float v = ((const float *)x->data)[i];
            v = v == v ? v : 0.0f;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            ((uint8_t *)y->data)[i] = (uint8_t)(int32_t)v; /* truncated: clamping first changes nothing */
        }
    } else {
        return false;
    }
    return true;
}

enum mps_status mps_cpu_cast(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0];
    struct mps_tensor *y = &a->out[0];
    int64_t n = mps_shape_numel(&x->shape);
    (void)err;
    if (x->dtype == MPS_STRING || y->dtype == MPS_STRING)
        return mps_cpu_cast_string(a, err);
    if (x->dtype == y->dtype)
        return mps_cpu_copy(a, err);
    if (mps_cpu_cast_bytes(x, y, n))
        return MPS_OK;
    if (mps_cast_is_int(x->dtype) && mps_cast_is_int(y->dtype)) {
        /* through int64, so that large i64 values stay exact; narrowing wraps as ONNX does */
        for (int64_t i = 0; i < n; i++) {
            int64_t v = x->dtype == MPS_I64 ? ((const int64_t *)x->data)[i]
                        : x->dtype == MPS_I32 ? ((const int32_t *)x->data)[i]
                                              : ((const uint8_t *)x->data)[i];
            if (y->dtype == MPS_I64)
                ((int64_t *)y->data)[i] = v;
            else if (y->dtype == MPS_I32)
                ((int32_t *)y->data)[i] = (int32_t)(uint32_t)v;
            else
                ((uint8_t *)y->data)[i] = (uint8_t)v;
        }
        return MPS_OK;
    }
    for (int64_t i = 0; i < n; i++)
        mps_elem_set(y->data, y->dtype, i, mps_elem_get(x->data, x->dtype, i));
    return MPS_OK;
}
