#include "ref.h"
#include "ref_window.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t ref_numel(const struct mps_shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->dim[i];
    return n;
}

void ref_unravel(const struct mps_shape *s, int64_t flat, int64_t *idx)
{
    for (int i = s->ndim - 1; i >= 0; i--) {
        idx[i] = s->dim[i] ? flat % s->dim[i] : 0;
        flat = s->dim[i] ? flat / s->dim[i] : 0;
    }
}

int64_t ref_ravel(const struct mps_shape *s, const int64_t *idx)
{
    int64_t off = 0;
    for (int i = 0; i < s->ndim; i++)
        off = off * s->dim[i] + idx[i];
    return off;
}

/* t read at the output index idx (rank r), numpy broadcasting (right-aligned). */
static double ref_bget(const struct ref_tensor *t, const int64_t *idx, int r)
{
    int64_t off = 0;
    for (int j = 0; j < t->shape.ndim; j++) {
        int64_t i = t->shape.dim[j] == 1 ? 0 : idx[r - t->shape.ndim + j];
        off = off * t->shape.dim[j] + i;
    }
    return t->d[off];
}

static int ref_axis(int64_t a, int r)
{
    return (int)(a < 0 ? a + r : a);
}

static void ref_matmul(const struct ref_tensor *in, struct ref_tensor *out)
{
    struct mps_shape sa = in[0].shape, sb = in[1].shape;
    if (sa.ndim == 1)
        sa = (struct mps_shape){2, {1, sa.dim[0]}};
    if (sb.ndim == 1)
        sb = (struct mps_shape){2, {sb.dim[0], 1}};
    int64_t m = sa.dim[sa.ndim - 2], k = sa.dim[sa.ndim - 1], n = sb.dim[sb.ndim - 1];
    int rb = (sa.ndim > sb.ndim ? sa.ndim : sb.ndim) - 2;
    struct mps_shape full = {rb + 2, {0}};
    for (int i = 0; i < rb; i++) {
        int ia = i - (rb - (sa.ndim - 2)), ib = i - (rb - (sb.ndim - 2));
        int64_t da = ia >= 0 ? sa.dim[ia] : 1, db = ib >= 0 ? sb.dim[ib] : 1;
        full.dim[i] = da > db ? da : db;
    }
    full.dim[rb] = m;
    full.dim[rb + 1] = n;
    struct ref_tensor a = {sa, in[0].d, false, NULL, MPS_F32}, b = {sb, in[1].d, false, NULL, MPS_F32};
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(&full); o++) {
        ref_unravel(&full, o, idx);
        int64_t i = idx[rb], j = idx[rb + 1];
        double s = 0;
        for (int64_t q = 0; q < k; q++) {
            idx[rb] = i, idx[rb + 1] = q;
            double x = ref_bget(&a, idx, rb + 2);
            idx[rb] = q, idx[rb + 1] = j;
            s += x * ref_bget(&b, idx, rb + 2);
        }
        out[0].d[o] = s;
    }
}

static void ref_gemm(const struct mps_gemm_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    int64_t m = out[0].shape.dim[0], n = out[0].shape.dim[1];
    int64_t k = in[0].shape.dim[p->trans_a ? 0 : 1];
    int64_t lda = in[0].shape.dim[1], ldb = in[1].shape.dim[1];
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t q = 0; q < k; q++)
                s += in[0].d[p->trans_a ? q * lda + i : i * lda + q] * in[1].d[p->trans_b ? j * ldb + q : q * ldb + j];
            double c = 0;
            if (n_in > 2 && in[2].d) {
                int64_t idx[2] = {i, j};
                c = ref_bget(&in[2], idx, 2);
            }
            out[0].d[i * n + j] = p->alpha * s + p->beta * c;
        }
}

static void ref_lrn(const struct mps_lrn_params *q, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    int64_t idx[MPS_MAX_DIMS];
    int64_t lo = (q->size - 1) / 2, hi = (q->size - 1) - lo; /* floor and ceil of (size - 1) / 2 */
    for (int64_t o = 0; o < ref_numel(xs); o++) {
        ref_unravel(xs, o, idx);
        int64_t c = idx[1];
        double sum = 0;
        for (int64_t k = c - lo; k <= c + hi; k++)
            if (k >= 0 && k < xs->dim[1]) {
                idx[1] = k;
                sum += pow(in[0].d[ref_ravel(xs, idx)], 2);
            }
        out[0].d[o] = in[0].d[o] / pow(q->bias + q->alpha / (double)q->size * sum, q->beta);
    }
}

static void ref_norm(enum mps_op op, const struct mps_norm_params *p, const struct ref_tensor *in, int n_in,
                     struct ref_tensor *out, int n_out)
{
    const struct mps_shape *xs = &in[0].shape;
    int64_t idx[MPS_MAX_DIMS];
    if (op == MPS_OP_BATCH_NORM) {
        for (int64_t o = 0; o < ref_numel(xs); o++) {
            ref_unravel(xs, o, idx);
            int64_t c = idx[1];
            out[0].d[o] = (in[0].d[o] - in[3].d[c]) / sqrt(in[4].d[c] + p->epsilon) * in[1].d[c] + in[2].d[c];
        }
        return;
    }
    if (op == MPS_OP_INSTANCE_NORM) { /* per (n, c): mean and variance of the plane, from the definition */
        int64_t plane = ref_numel(xs) / (xs->dim[0] * xs->dim[1]);
        for (int64_t q = 0; q < xs->dim[0] * xs->dim[1]; q++) {
            const double *x = in[0].d + q * plane;
            double mean = 0, var = 0;
            for (int64_t i = 0; i < plane; i++)
                mean += x[i] / (double)plane;
            for (int64_t i = 0; i < plane; i++)
                var += (x[i] - mean) * (x[i] - mean) / (double)plane;
            int64_t c = q % xs->dim[1];
            for (int64_t i = 0; i < plane; i++)
                out[0].d[q * plane + i] = (x[i] - mean) / sqrt(var + p->epsilon) * in[1].d[c] + in[2].d[c];
        }
        return;
    }
    int axis = ref_axis(p->axis, xs->ndim);
    if (op == MPS_OP_LAYER_NORM) {
        int64_t row = 1;
        for (int i = axis; i < xs->ndim; i++)
            row *= xs->dim[i];
        struct mps_shape tail = {xs->ndim - axis, {0}};
        memcpy(tail.dim, xs->dim + axis, sizeof(int64_t) * (size_t)tail.ndim);
        for (int64_t r = 0; r < ref_numel(xs) / row; r++) {
            double mean = 0, var = 0;
            for (int64_t i = 0; i < row; i++)
                mean += in[0].d[r * row + i] / (double)row;
            for (int64_t i = 0; i < row; i++)
                var += pow(in[0].d[r * row + i] - mean, 2) / (double)row;
            double inv = 1 / sqrt(var + p->epsilon);
            for (int64_t i = 0; i < row; i++) {
                ref_unravel(&tail, i, idx);
                double b = n_in > 2 && in[2].d ? ref_bget(&in[2], idx, tail.ndim) : 0;
                out[0].d[r * row + i] = (in[0].d[r * row + i] - mean) * inv * ref_bget(&in[1], idx, tail.ndim) + b;
            }
            if (n_out > 1)
                out[1].d[r] = mean;
            if (n_out > 2)
                out[2].d[r] = inv;
        }
        return;
    }
    /* Softmax, LogSoftmax */
    for (int64_t o = 0; o < ref_numel(xs); o++) {
        ref_unravel(xs, o, idx);
        int64_t self = idx[axis];
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < xs->dim[axis]; j++) {
            idx[axis] = j;
            mx = fmax(mx, in[0].d[ref_ravel(xs, idx)]);
        }
        for (int64_t j = 0; j < xs->dim[axis]; j++) {
            idx[axis] = j;
            sum += exp(in[0].d[ref_ravel(xs, idx)] - mx);
        }
        idx[axis] = self;
        double v = in[0].d[o] - mx;
        out[0].d[o] = op == MPS_OP_SOFTMAX ? exp(v) / sum : v - log(sum);
    }
}

double ref_unary1(enum mps_op op, const struct mps_act_params *p, double x)
{
    switch (op) {
    case MPS_OP_RELU: return x > 0 ? x : 0;
    case MPS_OP_LEAKY_RELU: return x >= 0 ? x : p->alpha * x;
    case MPS_OP_ELU: return x >= 0 ? x : p->alpha * (exp(x) - 1);
    case MPS_OP_SELU: return x > 0 ? p->beta * x : p->beta * p->alpha * (exp(x) - 1);
    case MPS_OP_SIGMOID: return 1 / (1 + exp(-x));
    case MPS_OP_HARD_SIGMOID: return fmax(0, fmin(1, p->alpha * x + p->beta));
    case MPS_OP_HARD_SWISH: return x * fmax(0, fmin(1, x / 6 + 0.5));
    case MPS_OP_TANH: return tanh(x);
    case MPS_OP_SOFTPLUS: return log(1 + exp(x));
    case MPS_OP_SOFTSIGN: return x / (1 + fabs(x));
    case MPS_OP_GELU:
        return p->beta != 0 ? 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)))
                            : 0.5 * x * (1 + erf(x / sqrt(2)));
    case MPS_OP_ERF: return erf(x);
    case MPS_OP_SIN: return sin(x);
    case MPS_OP_COS: return cos(x);
    case MPS_OP_TAN: return tan(x);
    case MPS_OP_ASIN: return asin(x);
    case MPS_OP_ACOS: return acos(x);
    case MPS_OP_ATAN: return atan(x);
    case MPS_OP_SINH: return sinh(x);
    case MPS_OP_COSH: return cosh(x);
    case MPS_OP_ASINH: return asinh(x);
    case MPS_OP_ACOSH: return acosh(x);
    case MPS_OP_ATANH: return atanh(x);
    case MPS_OP_EXP: return exp(x);
    case MPS_OP_LOG: return log(x);
    case MPS_OP_SQRT: return sqrt(x);
    case MPS_OP_ABS: return fabs(x);
    case MPS_OP_NEG: return -x;
    case MPS_OP_RECIPROCAL: return 1 / x;
    case MPS_OP_FLOOR: return floor(x);
    case MPS_OP_CEIL: return ceil(x);
    case MPS_OP_SIGN: return x > 0 ? 1 : x < 0 ? -1 : x;
    case MPS_OP_ROUND: { /* the spec: halves to the even neighbour */
        double f = floor(x), d = x - f;
        return d < 0.5 ? f : d > 0.5 ? f + 1 : fmod(f, 2) == 0 ? f : f + 1;
    }
    case MPS_OP_CLIP: return fmin(fmax(x, p->alpha), p->beta); /* its bounds resolved into p */
    case MPS_OP_THRESHOLDED_RELU: return x > p->alpha ? x : 0;
    case MPS_OP_SHRINK: return x < -p->alpha ? x + p->beta : x > p->alpha ? x - p->beta : 0;
    default: return x;
    }
}

static double ref_binary1(enum mps_op op, double a, double b, bool integer, bool mod_fmod)
{
    switch (op) {
    case MPS_OP_ADD:
    case MPS_OP_SUM:
    case MPS_OP_MEAN: return a + b;
    case MPS_OP_SUB: return a - b;
    case MPS_OP_MUL: return a * b;
    case MPS_OP_DIV: return integer ? trunc(a / b) : a / b;
    case MPS_OP_POW: return pow(a, b);
    case MPS_OP_MAX: return a > b || a != a ? a : b; /* a NaN on either side is the result (numpy's maximum) */
    case MPS_OP_MIN: return a < b || a != a ? a : b;
    case MPS_OP_PRELU: return a < 0 ? a * b : a;
    case MPS_OP_BIT_SHIFT: return mod_fmod ? floor(a / exp2(b)) : a * exp2(b); /* mod_fmod: right */
    case MPS_OP_MOD: { /* the spec: fmod's sign is the dividend's, else the divisor's; an integer by 0: 0 */
        if (integer && (b == 0 || b == -1))
            return 0;
        double r = fmod(a, b);
        return !mod_fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
    }
    default: return a;
    }
}

/* Comparisons, logic, IsNaN, IsInf (bool results as 0 or 1) and Where, broadcast. */
static void ref_logic(enum mps_op op, const struct mps_isinf_params *inf, const struct ref_tensor *in, int n_in,
                      struct ref_tensor *out)
{
    const struct mps_shape *ys = &out[0].shape;
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, idx);
        double a = ref_bget(&in[0], idx, ys->ndim), b = n_in > 1 ? ref_bget(&in[1], idx, ys->ndim) : 0, r;
        switch (op) {
        case MPS_OP_GREATER: r = a > b; break;
        case MPS_OP_LESS: r = a < b; break;
        case MPS_OP_EQUAL: r = a == b; break;
        case MPS_OP_GREATER_OR_EQUAL: r = a >= b; break;
        case MPS_OP_LESS_OR_EQUAL: r = a <= b; break;
        case MPS_OP_AND: r = a != 0 && b != 0; break;
        case MPS_OP_OR: r = a != 0 || b != 0; break;
        case MPS_OP_XOR: r = (a != 0) != (b != 0); break;
        case MPS_OP_NOT: r = a == 0; break;
        case MPS_OP_IS_NAN: r = isnan(a); break;
        case MPS_OP_IS_INF: r = isinf(a) && (a > 0 ? inf->positive : inf->negative); break;
        default: r = a != 0 ? b : ref_bget(&in[2], idx, ys->ndim); break; /* Where */
        }
        out[0].d[o] = r;
    }
}

static void ref_broadcast_op(enum mps_op op, const struct ref_tensor *in, int n_in, struct ref_tensor *out,
                             bool integer, bool mod_fmod)
{
    const struct mps_shape *ys = &out[0].shape;
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, idx);
        double acc = ref_bget(&in[0], idx, ys->ndim);
        for (int i = 1; i < n_in; i++)
            acc = ref_binary1(op, acc, ref_bget(&in[i], idx, ys->ndim), integer, mod_fmod);
        out[0].d[o] = op == MPS_OP_MEAN ? acc / n_in : acc;
    }
}

static void ref_reduce(enum mps_op op, const struct mps_reduce_params *p, const struct ref_tensor *in, int n_in,
                       struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    bool red[MPS_MAX_DIMS] = {false};
    int64_t n_axes = n_in > 1 && in[1].d ? ref_numel(&in[1].shape) : 0;
    for (int64_t i = 0; i < n_axes; i++)
        red[ref_axis((int64_t)in[1].d[i], xs->ndim)] = true;
    if (n_axes == 0 && !p->noop_with_empty_axes)
        for (int i = 0; i < xs->ndim; i++)
            red[i] = true;
    /* the kept-dims view of the output */
    struct mps_shape ks = *xs;
    for (int i = 0; i < xs->ndim; i++)
        if (red[i])
            ks.dim[i] = 1;
    /* LogSumExp: the spec's log(sum(exp(v))), each exp scaled by a constant of its box (here its
       first element) so that no double overflows */
    double *acc = out[0].d, *shift = calloc((size_t)ref_numel(&ks) + 1, sizeof *shift);
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t f = ref_numel(xs) - 1; f >= 0; f--) {
        ref_unravel(xs, f, idx);
        for (int i = 0; i < xs->ndim; i++)
            if (red[i])
                idx[i] = 0;
        shift[ref_ravel(&ks, idx)] = in[0].d[f];
    }
    for (int64_t o = 0; o < ref_numel(&ks); o++)
        acc[o] = op == MPS_OP_REDUCE_MAX ? -INFINITY : op == MPS_OP_REDUCE_MIN ? INFINITY : op == MPS_OP_REDUCE_PROD ? 1 : 0;
    for (int64_t f = 0; f < ref_numel(xs); f++) {
        ref_unravel(xs, f, idx);
        for (int i = 0; i < xs->ndim; i++)
            if (red[i])
                idx[i] = 0;
        int64_t o = ref_ravel(&ks, idx);
        double v = in[0].d[f];
        switch (op) {
        case MPS_OP_REDUCE_MAX: acc[o] = fmax(acc[o], v); break;
        case MPS_OP_REDUCE_MIN: acc[o] = fmin(acc[o], v); break;
        case MPS_OP_REDUCE_PROD: acc[o] *= v; break;
        case MPS_OP_REDUCE_L1: acc[o] += fabs(v); break;
        case MPS_OP_REDUCE_L2:
        case MPS_OP_REDUCE_SUM_SQUARE: acc[o] += v * v; break;
        case MPS_OP_REDUCE_LOG_SUM_EXP: acc[o] += exp(v - shift[o]); break;
        default: acc[o] += v; break;
        }
    }
    for (int64_t o = 0; o < ref_numel(&ks); o++)
        switch (op) {
        case MPS_OP_REDUCE_MEAN: acc[o] /= (double)(ref_numel(xs) / ref_numel(&ks)); break;
        case MPS_OP_REDUCE_L2: acc[o] = sqrt(acc[o]); break;
        case MPS_OP_REDUCE_LOG_SUM: acc[o] = log(acc[o]); break;
        case MPS_OP_REDUCE_LOG_SUM_EXP: acc[o] = log(acc[o]) + shift[o]; break;
        default: break;
        }
    free(shift);
}

static void ref_transpose(const struct mps_transpose_params *p, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int perm[MPS_MAX_DIMS];
    for (int i = 0; i < ys->ndim; i++)
        perm[i] = p->n_perm ? p->perm[i] : ys->ndim - 1 - i;
    int64_t yi[MPS_MAX_DIMS], xi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, yi);
        for (int i = 0; i < ys->ndim; i++)
            xi[perm[i]] = yi[i];
        out[0].d[o] = in[0].d[ref_ravel(xs, xi)];
    }
}

/* Concat (parts are the inputs) and Split (parts are the outputs). */
static void ref_parts(int64_t axis, struct ref_tensor *big, struct ref_tensor *parts, bool concat)
{
    int a = ref_axis(axis, big->shape.ndim);
    int64_t idx[MPS_MAX_DIMS];
    for (int64_t f = 0; f < ref_numel(&big->shape); f++) {
        ref_unravel(&big->shape, f, idx);
        int p = 0;
        while (idx[a] >= parts[p].shape.dim[a])
            idx[a] -= parts[p++].shape.dim[a];
        int64_t o = ref_ravel(&parts[p].shape, idx);
        if (concat)
            big->d[f] = parts[p].d[o];
        else
            parts[p].d[o] = big->d[f];
    }
}

static void ref_slice(const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    int64_t start[MPS_MAX_DIMS] = {0}, step[MPS_MAX_DIMS];
    for (int i = 0; i < xs->ndim; i++)
        step[i] = 1;
    int64_t n = ref_numel(&in[1].shape);
    for (int64_t i = 0; i < n; i++) {
        int a = ref_axis(n_in > 3 && in[3].d ? (int64_t)in[3].d[i] : i, xs->ndim);
        int64_t s = n_in > 4 && in[4].d ? (int64_t)in[4].d[i] : 1, d = xs->dim[a];
        double b = in[1].d[i];
        if (b < 0)
            b += (double)d;
        /* positive steps start in [0, d], negative ones in [0, d-1] */
        b = s > 0 ? fmin(fmax(b, 0), (double)d) : fmin(fmax(b, 0), (double)d - 1);
        start[a] = (int64_t)b;
        step[a] = s;
    }
    int64_t yi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(&out[0].shape); o++) {
        ref_unravel(&out[0].shape, o, yi);
        for (int i = 0; i < xs->ndim; i++)
            yi[i] = start[i] + yi[i] * step[i];
        out[0].d[o] = in[0].d[ref_ravel(xs, yi)];
    }
}

static void ref_gather(int64_t axis, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *is = &in[1].shape;
    int a = ref_axis(axis, xs->ndim);
    int64_t yi[MPS_MAX_DIMS], xi[MPS_MAX_DIMS], ii[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(&out[0].shape); o++) {
        ref_unravel(&out[0].shape, o, yi);
        for (int i = 0; i < is->ndim; i++)
            ii[i] = yi[a + i];
        int64_t k = (int64_t)in[1].d[ref_ravel(is, ii)];
        for (int i = 0; i < xs->ndim; i++)
            xi[i] = i < a ? yi[i] : i == a ? (k < 0 ? k + xs->dim[a] : k) : yi[i - 1 + is->ndim];
        out[0].d[o] = in[0].d[ref_ravel(xs, xi)];
    }
}

static void ref_pad(const struct mps_pad_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    int r = xs->ndim;
    int64_t pb[MPS_MAX_DIMS] = {0};
    int64_t n_axes = n_in > 3 && in[3].d ? ref_numel(&in[3].shape) : r;
    for (int64_t i = 0; i < n_axes; i++)
        pb[ref_axis(n_in > 3 && in[3].d ? (int64_t)in[3].d[i] : i, r)] = (int64_t)in[1].d[i];
    double value = n_in > 2 && in[2].d ? in[2].d[0] : 0;
    int64_t yi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(&out[0].shape); o++) {
        ref_unravel(&out[0].shape, o, yi);
        bool constant = false;
        for (int i = 0; i < r; i++) {
            int64_t v = yi[i] - pb[i], d = xs->dim[i];
            if (v < 0 || v >= d) {
                if (p->mode == MPS_PAD_CONSTANT)
                    constant = true;
                else if (p->mode == MPS_PAD_EDGE)
                    v = v < 0 ? 0 : d - 1;
                else
                    v = v < 0 ? -v : 2 * d - 2 - v;
            }
            yi[i] = v;
        }
        out[0].d[o] = constant ? value : in[0].d[ref_ravel(xs, yi)];
    }
}

/* Resize from the ONNX spec: each axis' output coordinate o becomes a weight
   for every input index along it (a dense row of weights); the output is the
   sum over the input of the product of the axes' weights. Scales come from
   in[2] or from in[3] (sizes / input lengths), for p->axes or every axis;
   the output length in the coordinate formulas is input length x scale,
   unrounded, as the spec's reference has it. */
static double ref_resize_x(const struct mps_resize_params *p, double o, double in, double out, double scale,
                           double start, double end)
{
    switch (p->coord) {
    case MPS_COORD_HALF_PIXEL: return (o + 0.5) / scale - 0.5;
    case MPS_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? (o + 0.5) / scale - 0.5 : 0;
    case MPS_COORD_ALIGN_CORNERS: return out == 1 ? 0 : o * (in - 1) / (out - 1);
    case MPS_COORD_ASYMMETRIC: return o / scale;
    case MPS_COORD_TF_HALF_PIXEL_FOR_NN: return (o + 0.5) / scale;
    case MPS_COORD_TF_CROP_AND_RESIZE:
        return out == 1 ? (end - start) * (in - 1) / 2 + start * (in - 1)
                        : o * (end - start) * (in - 1) / (out - 1) + start * (in - 1);
    }
    return 0;
}

static void ref_resize_weights(const struct mps_resize_params *p, double x, int64_t n, double scale, double *w)
{
    for (int64_t i = 0; i < n; i++)
        w[i] = 0;
    double f = floor(x), r = x - f;
#define REF_AT(i) w[(i) < 0 ? 0 : (i) >= n ? n - 1 : (i)]
    if (p->mode == MPS_RESIZE_NEAREST) {
        double k = p->nearest == MPS_NEAREST_FLOOR ? f
                   : p->nearest == MPS_NEAREST_CEIL ? ceil(x)
                   : p->nearest == MPS_NEAREST_LEGACY ? (scale < 1 ? ceil(x) : f)
                   : r == 0.5 ? (p->nearest == MPS_NEAREST_ROUND_PREFER_CEIL ? f + 1 : f)
                              : round(x);
        REF_AT((int64_t)k) += 1;
    } else if (p->mode == MPS_RESIZE_LINEAR) {
        REF_AT((int64_t)f) += 1 - r;
        REF_AT((int64_t)f + 1) += r;
    } else {
        double a = p->cubic_a, c[4], sum = 0;
        for (int k = 0; k < 4; k++) {
            double d = fabs(x - (f - 1 + k));
            c[k] = d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : d < 2 ? ((a * d - 5 * a) * d + 8 * a) * d - 4 * a : 0;
            if (p->exclude_outside && (f - 1 + k < 0 || f - 1 + k >= n))
                c[k] = 0;
            sum += c[k];
        }
        for (int k = 0; k < 4; k++)
            REF_AT((int64_t)f - 1 + k) += p->exclude_outside ? c[k] / sum : c[k];
    }
#undef REF_AT
}

static void ref_resize(const struct mps_resize_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int r = xs->ndim;
    double scale[MPS_MAX_DIMS], start[MPS_MAX_DIMS], end[MPS_MAX_DIMS];
    bool sizes = n_in > 3 && in[3].d && ref_numel(&in[3].shape) > 0, crop = p->coord == MPS_COORD_TF_CROP_AND_RESIZE;
    const struct ref_tensor *given = sizes ? &in[3] : &in[2];
    int64_t listed = ref_numel(&given->shape);
    for (int d = 0; d < r; d++)
        scale[d] = 1, start[d] = 0, end[d] = 1;
    for (int64_t i = 0; i < listed; i++) {
        int d = ref_axis(p->n_axes ? p->axes[i] : i, r);
        scale[d] = sizes ? given->d[i] / (double)xs->dim[d] : given->d[i];
        if (crop)
            start[d] = in[1].d[i], end[d] = in[1].d[listed + i];
    }
    double *w[MPS_MAX_DIMS];
    bool *outside[MPS_MAX_DIMS];
    for (int d = 0; d < r; d++) {
        double len = (double)xs->dim[d];
        w[d] = calloc((size_t)(ys->dim[d] * xs->dim[d] + 1), sizeof(double));
        outside[d] = calloc((size_t)ys->dim[d] + 1, sizeof(bool));
        for (int64_t o = 0; o < ys->dim[d]; o++) {
            double x = ref_resize_x(p, (double)o, len, len * scale[d], scale[d], start[d], end[d]);
            outside[d][o] = crop && (x < 0 || x > len - 1);
            ref_resize_weights(p, x, xs->dim[d], scale[d], w[d] + o * xs->dim[d]);
        }
    }
    int64_t yi[MPS_MAX_DIMS], xi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, yi);
        double acc = 0;
        bool extrapolate = false;
        for (int d = 0; d < r; d++)
            extrapolate = extrapolate || outside[d][yi[d]];
        for (int64_t i = 0; i < ref_numel(xs) && !extrapolate; i++) {
            ref_unravel(xs, i, xi);
            double weight = 1;
            for (int d = 0; d < r && weight != 0; d++)
                weight *= w[d][yi[d] * xs->dim[d] + xi[d]];
            if (weight != 0) /* inputs no tap reaches stay out, NaN included */
                acc += weight * in[0].d[i];
        }
        out[0].d[o] = extrapolate ? p->extrapolation : acc;
    }
    for (int d = 0; d < r; d++)
        free(w[d]), free(outside[d]);
}

/* DepthToSpace and SpaceToDepth by the spec's formulas: output (n, c, h, w)
   reads the input channel its block position (i, j) names. */
static void ref_depth(enum mps_op op, const struct mps_depth_params *p, const struct ref_tensor *in,
                      struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *ys = &out[0].shape;
    int64_t b = p->block, yi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(ys); o++) {
        ref_unravel(ys, o, yi);
        int64_t xi[4] = {yi[0], 0, 0, 0};
        if (op == MPS_OP_DEPTH_TO_SPACE) {
            int64_t i = yi[2] % b, j = yi[3] % b;
            xi[1] = p->crd ? yi[1] * b * b + i * b + j : (i * b + j) * ys->dim[1] + yi[1];
            xi[2] = yi[2] / b, xi[3] = yi[3] / b;
        } else {
            int64_t k = yi[1] / xs->dim[1];
            xi[1] = yi[1] % xs->dim[1], xi[2] = yi[2] * b + k / b, xi[3] = yi[3] * b + k % b;
        }
        out[0].d[o] = in[0].d[ref_ravel(xs, xi)];
    }
}

/* ArgMax, ArgMin as numpy has them (a NaN beats every number), ties to the
   first index, or the last with select_last_index. */
static void ref_arg(enum mps_op op, const struct mps_arg_params *p, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    int a = ref_axis(p->axis, xs->ndim);
    int64_t yi[MPS_MAX_DIMS], xi[MPS_MAX_DIMS];
    for (int64_t o = 0; o < ref_numel(&out[0].shape); o++) {
        ref_unravel(&out[0].shape, o, yi);
        for (int d = 0, k = 0; d < xs->ndim; d++) /* the output's index with the axis put back */
            xi[d] = d == a ? 0 : yi[p->keepdims ? d : k], k += d != a || p->keepdims;
        int64_t best = -1;
        double bv = 0;
        for (int64_t i = 0; i < xs->dim[a]; i++) {
            xi[a] = i;
            double v = in[0].d[ref_ravel(xs, xi)];
            bool nan = isnan(v), best_nan = best >= 0 && isnan(bv);
            bool better = best < 0 || (nan && !best_nan) ||
                          (!nan && !best_nan && (op == MPS_OP_ARG_MAX ? v > bv : v < bv));
            bool tie = best >= 0 && ((nan && best_nan) || (!nan && !best_nan && v == bv));
            if (better || (tie && p->last))
                best = i, bv = v;
        }
        out[0].d[o] = (double)best;
    }
}

/* TopK from the spec: sort each lane by (value, index), a NaN as the largest, and keep k. */
static void ref_topk(const struct mps_topk_params *p, const struct ref_tensor *in, struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape;
    int a = ref_axis(p->axis, xs->ndim);
    int64_t len = xs->dim[a], k = (int64_t)in[1].d[0], idx[MPS_MAX_DIMS] = {0};
    int64_t *order = calloc((size_t)len + 1, sizeof *order);
    for (int64_t o = 0; o < ref_numel(&out[0].shape); o++) {
        ref_unravel(&out[0].shape, o, idx);
        if (idx[a] != 0)
            continue; /* once per lane */
        for (int64_t i = 0; i < len; i++)
            order[i] = i;
        for (int64_t i = 1; i < len; i++) /* insertion sort: stable, so equal values keep index order */
            for (int64_t j = i; j > 0; j--) {
                idx[a] = order[j];
                double v = in[0].d[ref_ravel(xs, idx)];
                idx[a] = order[j - 1];
                double w = in[0].d[ref_ravel(xs, idx)];
                /* compare (is NaN, value): a NaN is the largest; equal keys keep index order */
                int c = isnan(v) != isnan(w) ? (isnan(v) ? 1 : -1) : isnan(v) || v == w ? 0 : v > w ? 1 : -1;
                bool swap = p->largest ? c > 0 : c < 0;
                if (!swap)
                    break;
                int64_t t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (int64_t r = 0; r < k; r++) {
            idx[a] = order[r];
            double v = in[0].d[ref_ravel(xs, idx)];
            idx[a] = r;
            out[0].d[ref_ravel(&out[0].shape, idx)] = v;
            out[1].d[ref_ravel(&out[1].shape, idx)] = (double)order[r];
        }
    }
    free(order);
}

static double ref_combine(enum mps_scatter_reduction r, double y, double u)
{
    return r == MPS_SCATTER_ADD ? y + u : r == MPS_SCATTER_MUL ? y * u : r == MPS_SCATTER_MAX ? fmax(y, u)
                                        : r == MPS_SCATTER_MIN ? fmin(y, u) : u;
}

/* GatherND, ScatterND, ScatterElements from the spec's loops. */
static void ref_index(enum mps_op op, const struct mps_index_params *p, const struct ref_tensor *in,
                      struct ref_tensor *out)
{
    const struct mps_shape *xs = &in[0].shape, *is = &in[1].shape;
    int64_t idx[MPS_MAX_DIMS] = {0}, at[MPS_MAX_DIMS] = {0};
    if (op != MPS_OP_GATHER_ND)
        memcpy(out[0].d, in[0].d, sizeof(double) * (size_t)ref_numel(xs));
    if (op == MPS_OP_SCATTER_ELEMENTS) {
        int a = ref_axis(p->axis, xs->ndim);
        for (int64_t o = 0; o < ref_numel(is); o++) {
            ref_unravel(is, o, idx);
            int64_t v = (int64_t)in[1].d[o];
            idx[a] = v < 0 ? v + xs->dim[a] : v;
            int64_t t = ref_ravel(xs, idx);
            out[0].d[t] = ref_combine(p->reduction, out[0].d[t], in[2].d[o]);
        }
        return;
    }
    int b = op == MPS_OP_GATHER_ND ? (int)p->batch_dims : 0, q = is->ndim, k = (int)is->dim[q - 1];
    const struct mps_shape *ws = op == MPS_OP_GATHER_ND ? &out[0].shape : &in[2].shape; /* [rows..., slice...] */
    for (int64_t o = 0; o < ref_numel(ws); o++) {
        ref_unravel(ws, o, idx); /* idx[0..q-1): the index row; idx[q-1..): the slice position */
        int n = 0;
        for (int d = 0; d < b; d++)
            at[n++] = idx[d];
        for (int j = 0; j < k; j++) {
            int64_t row[MPS_MAX_DIMS];
            memcpy(row, idx, sizeof row);
            row[q - 1] = j;
            int64_t v = (int64_t)in[1].d[ref_ravel(is, row)];
            at[n] = v < 0 ? v + xs->dim[n] : v;
            n++;
        }
        for (int d = q - 1; d < ws->ndim; d++)
            at[n++] = idx[d];
        int64_t t = ref_ravel(xs, at);
        if (op == MPS_OP_GATHER_ND)
            out[0].d[o] = in[0].d[t];
        else
            out[0].d[t] = ref_combine(p->reduction, out[0].d[t], in[2].d[o]);
    }
}

static void ref_fused_act(const struct mps_fused_act *act, struct ref_tensor *y)
{
    for (int64_t i = 0; act->on && i < ref_numel(&y->shape); i++)
        y->d[i] = ref_unary1(act->op, &act->p, y->d[i]);
}

void ref_op(enum mps_op op, const union mps_op_params *p, const struct ref_tensor *in, int n_in,
            struct ref_tensor *out, int n_out)
{
    int64_t ny = ref_numel(&out[0].shape), idx[MPS_MAX_DIMS];
    if (mps_op_is_logic(op)) {
        ref_logic(op, &p->isinf, in, n_in, out);
        return;
    }
    if (mps_op_is_reduce(op)) {
        ref_reduce(op, &p->reduce, in, n_in, out);
        return;
    }
    if (op == MPS_OP_RNN || op == MPS_OP_GRU || op == MPS_OP_LSTM) {
        ref_rnn(op, &p->rnn, in, n_in, out);
        return;
    }
    if (op == MPS_OP_NLL_LOSS || op == MPS_OP_SCE_LOSS) {
        ref_loss(op, &p->loss, in, n_in, out, n_out);
        return;
    }
    if (op == MPS_OP_IF) { /* the outputs of the branch the condition takes */
        for (int o = 0; o < n_out; o++)
            memcpy(out[o].d, in[in[0].d[0] != 0 ? 1 + o : 1 + n_out + o].d,
                   sizeof(double) * (size_t)ref_numel(&out[o].shape));
        return;
    }
    switch (op) {
    case MPS_OP_MATMUL: ref_matmul(in, out); break;
    case MPS_OP_GEMM:
        ref_gemm(&p->gemm, in, n_in, out);
        ref_fused_act(&p->gemm.act, &out[0]);
        break;
    case MPS_OP_CONV:
        ref_conv(&p->conv, in, n_in, out);
        ref_fused_act(&p->conv.act, &out[0]);
        break;
    case MPS_OP_CONV_TRANSPOSE:
        ref_conv_transpose(&p->conv, in, n_in, out);
        ref_fused_act(&p->conv.act, &out[0]);
        break;
    case MPS_OP_MAX_POOL:
    case MPS_OP_AVERAGE_POOL: ref_pool(op, &p->pool, in, out, n_out); break;
    case MPS_OP_GLOBAL_AVERAGE_POOL:
    case MPS_OP_GLOBAL_MAX_POOL:
    case MPS_OP_GLOBAL_LP_POOL: ref_global_pool(op, p->act.alpha, in, out); break;
    case MPS_OP_BATCH_NORM:
    case MPS_OP_INSTANCE_NORM:
    case MPS_OP_LAYER_NORM:
    case MPS_OP_SOFTMAX:
    case MPS_OP_LOG_SOFTMAX: ref_norm(op, &p->norm, in, n_in, out, n_out); break;
    case MPS_OP_LRN: ref_lrn(&p->lrn, in, out); break;
    case MPS_OP_CLIP: {
        double lo = n_in > 1 && in[1].d ? in[1].d[0] : -INFINITY, hi = n_in > 2 && in[2].d ? in[2].d[0] : INFINITY;
        for (int64_t i = 0; i < ny; i++)
            out[0].d[i] = fmin(fmax(in[0].d[i], lo), hi);
        break;
    }
    case MPS_OP_CAST:
        for (int64_t i = 0; i < ny; i++) {
            double v = in[0].d[i];
            enum mps_dtype t = p->cast.to;
            int e;
            double m = frexp(v, &e); /* bf16: 8 significant bits, halves to even (rint's default mode) */
            out[0].d[i] = t == MPS_F64                   ? v
                          : t == MPS_F32 || t == MPS_F16 ? (double)(float)v
                          : t == MPS_BF16                ? ldexp(rint(ldexp(m, 8)), e - 8)
                          : t == MPS_BOOL                ? (v != 0)
                                                         : trunc(v);
        }
        break;
    case MPS_OP_PRELU:
    case MPS_OP_ADD:
    case MPS_OP_SUB:
    case MPS_OP_MUL:
    case MPS_OP_DIV:
        ref_broadcast_op(op, in, n_in, out, in[0].integer, false);
        ref_fused_act(&p->binary.act, &out[0]);
        break;
    case MPS_OP_POW:
    case MPS_OP_MAX:
    case MPS_OP_MIN:
    case MPS_OP_SUM:
    case MPS_OP_MEAN: ref_broadcast_op(op, in, n_in, out, in[0].integer, false); break;
    case MPS_OP_MOD: ref_broadcast_op(op, in, n_in, out, in[0].integer, p->binary.fmod); break;
    case MPS_OP_BIT_SHIFT: ref_broadcast_op(op, in, n_in, out, true, p->binary.right); break;
    case MPS_OP_IDENTITY:
    case MPS_OP_DROPOUT:
    case MPS_OP_CONSTANT:
    case MPS_OP_RESHAPE:
    case MPS_OP_FLATTEN:
    case MPS_OP_SQUEEZE:
    case MPS_OP_UNSQUEEZE: memcpy(out[0].d, in[0].d, sizeof(double) * (size_t)ny); break;
    case MPS_OP_TRANSPOSE: ref_transpose(&p->transpose, in, out); break;
    case MPS_OP_CONCAT: ref_parts(p->axis.axis, &out[0], (struct ref_tensor *)in, true); break;
    case MPS_OP_SPLIT: ref_parts(p->axis.axis, (struct ref_tensor *)&in[0], out, false); break;
    case MPS_OP_SLICE: ref_slice(in, n_in, out); break;
    case MPS_OP_GATHER: ref_gather(p->axis.axis, in, out); break;
    case MPS_OP_SHAPE: {
        int64_t r = in[0].shape.ndim, s = p->shape.start < 0 ? p->shape.start + r : p->shape.start;
        s = s < 0 ? 0 : s > r ? r : s;
        for (int64_t i = 0; i < ny; i++)
            out[0].d[i] = (double)in[0].shape.dim[s + i];
        break;
    }
    case MPS_OP_CONSTANT_OF_SHAPE:
        for (int64_t i = 0; i < ny; i++)
            out[0].d[i] = p->fill.value;
        break;
    case MPS_OP_EXPAND:
        for (int64_t o = 0; o < ny; o++) {
            ref_unravel(&out[0].shape, o, idx);
            out[0].d[o] = ref_bget(&in[0], idx, out[0].shape.ndim);
        }
        break;
    case MPS_OP_PAD: ref_pad(&p->pad, in, n_in, out); break;
    case MPS_OP_RESIZE: ref_resize(&p->resize, in, n_in, out); break;
    case MPS_OP_ARG_MAX:
    case MPS_OP_ARG_MIN: ref_arg(op, &p->arg, in, out); break;
    case MPS_OP_GATHER_ELEMENTS: { /* out[i][j][k] = data[index[i][j][k]][j][k] (axis 0), from the spec */
        int a = ref_axis(p->axis.axis, in[0].shape.ndim);
        for (int64_t o = 0; o < ny; o++) {
            ref_unravel(&out[0].shape, o, idx);
            int64_t v = (int64_t)in[1].d[o];
            idx[a] = v < 0 ? v + in[0].shape.dim[a] : v;
            out[0].d[o] = in[0].d[ref_ravel(&in[0].shape, idx)];
        }
        break;
    }
    case MPS_OP_TILE: /* output index i along each axis reads input index i mod its dim */
        for (int64_t o = 0; o < ny; o++) {
            ref_unravel(&out[0].shape, o, idx);
            for (int d = 0; d < in[0].shape.ndim; d++)
                idx[d] %= in[0].shape.dim[d];
            out[0].d[o] = in[0].d[ref_ravel(&in[0].shape, idx)];
        }
        break;
    case MPS_OP_ONE_HOT: { /* the spec: on at index (from the end when negative), off elsewhere */
        int a = ref_axis(p->onehot.axis, out[0].shape.ndim);
        int64_t depth = (int64_t)in[1].d[0];
        for (int64_t o = 0; o < ny; o++) {
            ref_unravel(&out[0].shape, o, idx);
            int64_t k = idx[a];
            for (int d = a; d + 1 < out[0].shape.ndim; d++)
                idx[d] = idx[d + 1];
            int64_t v = (int64_t)in[0].d[ref_ravel(&in[0].shape, idx)];
            out[0].d[o] = (v < 0 ? v + depth : v) == k ? in[2].d[1] : in[2].d[0];
        }
        break;
    }
    case MPS_OP_RANGE:
        for (int64_t i = 0; i < ny; i++)
            out[0].d[i] = in[0].d[0] + (double)i * in[2].d[0];
        break;
    case MPS_OP_GRID_SAMPLE: ref_gridsample(&p->gridsample, in, out); break;
    case MPS_OP_EINSUM: ref_einsum(p->einsum.equation, in, n_in, out); break;
    case MPS_OP_DET: ref_det(in, out); break;
    case MPS_OP_COMPRESS:
    case MPS_OP_NON_ZERO: ref_select(op, &p->compress, in, out); break;
    case MPS_OP_NON_MAX_SUPPRESSION: ref_nms(&p->nms, in, n_in, out); break;
    case MPS_OP_QLINEAR_CONV:
    case MPS_OP_QLINEAR_MATMUL: ref_qlinear(op, p, in, n_in, out); break;
    case MPS_OP_DEQUANTIZE:
    case MPS_OP_QUANTIZE: ref_qcast(op, p->axis.axis, in, n_in, out); break;
    case MPS_OP_QLINEAR_ADD:
    case MPS_OP_QLINEAR_CONCAT:
    case MPS_OP_QLINEAR_UNARY:
    case MPS_OP_QLINEAR_MUL:
    case MPS_OP_QLINEAR_GAP: ref_qelementwise(op, p, in, n_in, out); break;
    case MPS_OP_UNIQUE: ref_unique(&p->unique, in, out, n_out); break;
    case MPS_OP_STRING_NORMALIZER: ref_strnorm(&p->strnorm, in, n_in, out); break;
    case MPS_OP_MAX_UNPOOL: ref_unpool(&p->pool, in, out); break;
    case MPS_OP_ROI_ALIGN: ref_roialign(&p->roialign, in, out); break;
    case MPS_OP_REVERSE_SEQUENCE: ref_revseq(&p->revseq, in, out); break;
    case MPS_OP_TFIDF: ref_tfidf(&p->tfidf, in, n_in, out); break;
    case MPS_OP_RANDOM_LIKE: /* the generator is the definition (op.h); test_graph checks its statistics */
        for (int64_t i = 0; i < ny; i++)
            out[0].d[i] = mps_random(&p->random, i);
        break;
    case MPS_OP_EYE_LIKE: /* the spec: 1 where column - row is k */
        for (int64_t i = 0; i < ny; i++)
            out[0].d[i] = i % out[0].shape.dim[1] - i / out[0].shape.dim[1] == p->eye.k;
        break;
    case MPS_OP_TRILU: { /* k from the input, as the spec has it */
        int64_t k = n_in > 1 && in[1].d ? (int64_t)in[1].d[0] : 0, nd = in[0].shape.ndim;
        for (int64_t o = 0; o < ny; o++) {
            ref_unravel(&in[0].shape, o, idx);
            int64_t diag = idx[nd - 1] - idx[nd - 2];
            out[0].d[o] = (p->trilu.upper ? diag >= k : diag <= k) ? in[0].d[o] : 0;
        }
        break;
    }
    case MPS_OP_CUM_SUM: { /* each output: the sum of its lane's elements before it (after it, reversed) */
        int a = ref_axis((int64_t)in[1].d[0], in[0].shape.ndim);
        for (int64_t o = 0; o < ny; o++) {
            ref_unravel(&in[0].shape, o, idx);
            int64_t at = idx[a];
            double sum = 0;
            for (int64_t k = 0; k < in[0].shape.dim[a]; k++) {
                bool before = p->cumsum.reverse ? k > at : k < at;
                if (before || (k == at && !p->cumsum.exclusive)) {
                    idx[a] = k;
                    sum += in[0].d[ref_ravel(&in[0].shape, idx)];
                }
            }
            out[0].d[o] = sum;
        }
        break;
    }
    case MPS_OP_TOP_K: ref_topk(&p->topk, in, out); break;
    case MPS_OP_GATHER_ND:
    case MPS_OP_SCATTER_ND:
    case MPS_OP_SCATTER_ELEMENTS: ref_index(op, &p->index, in, out); break;
    case MPS_OP_HARDMAX: { /* 1 where ArgMax (keepdims) points */
        struct mps_arg_params ap = {.axis = p->norm.axis, .keepdims = true};
        struct mps_shape ks = in[0].shape;
        int a = ref_axis(ap.axis, ks.ndim);
        ks.dim[a] = 1;
        struct ref_tensor best = {ks, calloc((size_t)ref_numel(&ks) + 1, sizeof(double)), true, NULL, MPS_F32};
        ref_arg(MPS_OP_ARG_MAX, &ap, in, &best);
        for (int64_t o = 0; o < ny; o++) {
            ref_unravel(&in[0].shape, o, idx);
            int64_t at = idx[a];
            idx[a] = 0;
            out[0].d[o] = best.d[ref_ravel(&ks, idx)] == (double)at;
        }
        free(best.d);
        break;
    }
    case MPS_OP_DEPTH_TO_SPACE:
    case MPS_OP_SPACE_TO_DEPTH: ref_depth(op, &p->depth, in, out); break;
    default: /* the elementwise unary ops */
        for (int64_t i = 0; i < ny; i++)
            out[0].d[i] = ref_unary1(op, &p->act, in[0].d[i]);
        break;
    }
}
