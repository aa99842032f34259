#include "op.h"

#include <math.h>
#include <string.h>

static const struct mps_op_info mps_op_table[MPS_OP_COUNT] = {
#define MPS_OP(e, nm, imin, imax, omin, omax, tr)                                                                      \
    [MPS_OP_##e] = {.name = nm, .in_min = imin, .in_max = imax, .out_min = omin, .out_max = omax, .traits = (tr)},
#include "ops.def"
#undef MPS_OP
};

const struct mps_op_info *mps_op_info(enum mps_op op)
{
    return (unsigned)op < MPS_OP_COUNT ? &mps_op_table[op] : NULL;
}

const char *mps_op_name(enum mps_op op)
{
    return (unsigned)op < MPS_OP_COUNT ? mps_op_table[op].name : "?";
}

enum mps_op mps_op_from_name(const char *name)
{
    for (int i = 0; i < MPS_OP_COUNT; i++)
        if (strcmp(mps_op_table[i].name, name) == 0)
            return (enum mps_op)i;
    return MPS_OP_COUNT;
}

bool mps_op_has(enum mps_op op, unsigned traits)
{
    return (unsigned)op < MPS_OP_COUNT && (mps_op_table[op].traits & traits) == traits;
}

bool mps_op_is_reduce(enum mps_op op)
{
    return mps_op_has(op, MPS_TR_REDUCE);
}

bool mps_op_is_unary(enum mps_op op)
{
    return mps_op_has(op, MPS_TR_UNARY);
}

bool mps_op_is_logic(enum mps_op op)
{
    return mps_op_has(op, MPS_TR_LOGIC);
}

bool mps_op_is_view(enum mps_op op)
{
    return mps_op_has(op, MPS_TR_VIEW);
}

bool mps_act_clamp(const struct mps_fused_act *act, float *lo, float *hi, float *slope)
{
    if (!act || !act->on)
        return true;
    switch (act->op) {
    case MPS_OP_RELU: *lo = 0.0f; return true;
    case MPS_OP_CLIP: *lo = act->p.alpha, *hi = act->p.beta; return true;
    case MPS_OP_LEAKY_RELU: *slope = act->p.alpha; return true;
    default: return false;
    }
}

struct mps_window3 mps_window3_of(const struct mps_window *w, const struct mps_shape *x, const struct mps_shape *y)
{
    struct mps_window3 q;
    int sp = x->ndim - 2;
    for (int j = 0; j < 3; j++) {
        int i = j - (3 - sp); /* the op's spatial axis, or < 0 for a leading size-1 axis */
        q.in[j] = i < 0 ? 1 : x->dim[2 + i];
        q.out[j] = i < 0 ? 1 : y->dim[2 + i];
        q.k[j] = i < 0 ? 1 : w->kernel[i];
        q.s[j] = i < 0 ? 1 : w->stride[i];
        q.d[j] = i < 0 ? 1 : w->dilation[i];
        q.pb[j] = i < 0 ? 0 : w->pad[i];
        q.pe[j] = i < 0 ? 0 : w->pad[i + sp];
    }
    return q;
}

static void mps_op_window_default(struct mps_window *w)
{
    for (int i = 0; i < MPS_MAX_SPATIAL; i++)
        w->stride[i] = w->dilation[i] = 1;
}

void mps_op_params_default(enum mps_op op, union mps_op_params *p)
{
    memset(p, 0, sizeof *p);
    switch (op) {
    case MPS_OP_GEMM:
        p->gemm.alpha = p->gemm.beta = 1.0f;
        break;
    case MPS_OP_CONV:
    case MPS_OP_CONV_TRANSPOSE:
    case MPS_OP_QLINEAR_CONV:
        mps_op_window_default(&p->conv.win);
        p->conv.group = 1;
        break;
    case MPS_OP_MAX_POOL:
    case MPS_OP_AVERAGE_POOL:
    case MPS_OP_MAX_UNPOOL:
        mps_op_window_default(&p->pool.win);
        break;
    case MPS_OP_ROI_ALIGN:
        p->roialign = (struct mps_roialign_params){.half_pixel = true, .out_h = 1, .out_w = 1, .scale = 1.0f};
        break;
    case MPS_OP_BATCH_NORM:
    case MPS_OP_INSTANCE_NORM:
        p->norm.epsilon = 1e-5f;
        break;
    case MPS_OP_LAYER_NORM:
    case MPS_OP_SOFTMAX:
    case MPS_OP_LOG_SOFTMAX:
    case MPS_OP_HARDMAX:
        p->norm.axis = -1;
        p->norm.epsilon = 1e-5f;
        break;
    case MPS_OP_LEAKY_RELU:
        p->act.alpha = 0.01f;
        break;
    case MPS_OP_ELU:
        p->act.alpha = 1.0f;
        break;
    case MPS_OP_SELU:
        p->act.alpha = 1.67326319217681884765625f;
        p->act.beta = 1.05070102214813232421875f;
        break;
    case MPS_OP_THRESHOLDED_RELU:
        p->act.alpha = 1.0f;
        break;
    case MPS_OP_GLOBAL_LP_POOL:
        p->act.alpha = 2.0f;
        break;
    case MPS_OP_SHRINK:
        p->act.alpha = 0.5f;
        break;
    case MPS_OP_HARD_SIGMOID:
        p->act.alpha = 0.2f;
        p->act.beta = 0.5f;
        break;
    case MPS_OP_CLIP:
        p->act.alpha = -INFINITY;
        p->act.beta = INFINITY;
        break;
    case MPS_OP_CAST:
        p->cast.to = MPS_F32;
        break;
    case MPS_OP_FLATTEN:
        p->axis.axis = 1;
        break;
    case MPS_OP_SHAPE:
        p->shape.end = INT64_MAX;
        break;
    case MPS_OP_CONSTANT_OF_SHAPE:
        p->fill.dtype = MPS_F32;
        break;
    case MPS_OP_RESIZE:
        p->resize.cubic_a = -0.75f;
        break;
    case MPS_OP_ARG_MAX:
    case MPS_OP_ARG_MIN:
        p->arg.keepdims = true;
        break;
    case MPS_OP_LRN:
        p->lrn.alpha = 1e-4f;
        p->lrn.beta = 0.75f;
        p->lrn.bias = 1.0f;
        break;
    case MPS_OP_ONE_HOT:
        p->onehot.axis = -1;
        break;
    case MPS_OP_TOP_K:
        p->topk.axis = -1;
        p->topk.largest = true;
        break;
    case MPS_OP_TRILU:
        p->trilu.upper = true;
        break;
    case MPS_OP_REVERSE_SEQUENCE: p->revseq.batch_axis = 1; break;
    case MPS_OP_EYE_LIKE: p->eye.dtype = MPS_DTYPE_COUNT; break;
    case MPS_OP_RANDOM_LIKE: p->random = (struct mps_random_params){.dtype = MPS_DTYPE_COUNT, .b = 1}; break;
    case MPS_OP_IS_INF:
        p->isinf.negative = p->isinf.positive = true;
        break;
    case MPS_OP_RNN:
    case MPS_OP_GRU:
    case MPS_OP_LSTM: /* f Sigmoid, g Tanh, h Tanh; RNN's one Tanh */
        for (int d = 0; d < 2; d++) {
            p->rnn.act[d * 3] = (struct mps_rnn_act){op == MPS_OP_RNN ? MPS_RNN_TANH : MPS_RNN_SIGMOID, 0, 0};
            p->rnn.act[d * 3 + 1] = p->rnn.act[d * 3 + 2] = (struct mps_rnn_act){MPS_RNN_TANH, 0, 0};
        }
        break;
    default:
        if (mps_op_is_reduce(op))
            p->reduce.keepdims = true;
        break;
    }
}

int mps_rnn_gates(enum mps_op op)
{
    return op == MPS_OP_LSTM ? 4 : op == MPS_OP_GRU ? 3 : 1;
}

int mps_rnn_fns(enum mps_op op)
{
    return op == MPS_OP_LSTM ? 3 : op == MPS_OP_GRU ? 2 : 1;
}

float mps_rnn_apply(const struct mps_rnn_act *a, float x)
{
    switch (a->fn) {
    case MPS_RNN_SIGMOID: { /* in the form that does not overflow either way */
        float e = expf(-fabsf(x));
        return x >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
    }
    case MPS_RNN_TANH: return tanhf(x);
    case MPS_RNN_RELU: return x > 0 ? x : 0;
    case MPS_RNN_AFFINE: return a->alpha * x + a->beta;
    case MPS_RNN_LEAKY_RELU: return x >= 0 ? x : a->alpha * x;
    case MPS_RNN_THRESHOLDED_RELU: return x > a->alpha ? x : 0;
    case MPS_RNN_SCALED_TANH: return a->alpha * tanhf(a->beta * x);
    case MPS_RNN_HARD_SIGMOID: {
        float y = a->alpha * x + a->beta;
        return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case MPS_RNN_ELU: return x >= 0 ? x : a->alpha * expm1f(x);
    case MPS_RNN_SOFTSIGN: return x / (1 + fabsf(x));
    case MPS_RNN_SOFTPLUS: return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
    default: return x;
    }
}

static double mps_random_u01(uint64_t seed, uint64_t i)
{
    uint64_t x = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return (double)(x >> 11) * 0x1.0p-53;
}

double mps_random(const struct mps_random_params *p, int64_t i)
{
    if (!p->normal)
        return p->a + (p->b - p->a) * mps_random_u01(p->seed, (uint64_t)i);
    double u0 = mps_random_u01(p->seed, 2 * (uint64_t)i), u1 = mps_random_u01(p->seed, 2 * (uint64_t)i + 1);
    return p->a + p->b * sqrt(-2 * log(1 - u0)) * cos(2 * M_PI * u1);
}
