/* logic.c: the ops with bool results or a bool operand, numpy broadcasting:
   Greater, Less, Equal, GreaterOrEqual, LessOrEqual of any number dtype or
   bool (a NaN compares false, except that it is not equal); And, Or, Xor, Not
   of bool; IsNaN and IsInf of f32; Where(cond, x, y) of any dtype. A bool is
   one byte, 0 or 1. */
#include <math.h>
#include <string.h>

#include "kernels.h"

/* The merged walk over y (contiguous) of up to three operands. */
struct mps_logic_walk {
    int nd;
    int64_t dim[MPS_MAX_DIMS], st[4][MPS_MAX_DIMS];
};

static void mps_logic_walk(const struct mps_tensor *in, int n_in, const struct mps_tensor *y, struct mps_logic_walk *w)
{
    w->nd = y->shape.ndim;
    memcpy(w->dim, y->shape.dim, sizeof w->dim);
    int64_t *st[4];
    for (int k = 0; k < n_in; k++) {
        mps_shape_broadcast_strides(&in[k].shape, &y->shape, w->st[k]);
        st[k] = w->st[k];
    }
    mps_shape_strides(&y->shape, w->st[n_in]);
    st[n_in] = w->st[n_in];
    w->nd = mps_walk_merge(w->nd, w->dim, n_in + 1, st);
}

/* The offsets in each operand of the first element of row r (all dims but the last). */
static void mps_logic_row(const struct mps_logic_walk *w, int n_in, int64_t r, int64_t *off)
{
    for (int k = 0; k < n_in; k++)
        off[k] = 0;
    for (int d = w->nd - 2; d >= 0; d--) {
        int64_t i = r % w->dim[d];
        r /= w->dim[d];
        for (int k = 0; k < n_in; k++)
            off[k] += i * w->st[k][d];
    }
}

/* -1, 0 or 1 as u < v, u == v, u > v; 2 when unordered (a NaN). */
#define MPS_ORDER(u, v) ((u) < (v) ? -1 : (u) > (v) ? 1 : (u) == (v) ? 0 : 2)

static int mps_logic_order(const void *a, const void *b, enum mps_dtype t, int64_t i, int64_t j)
{
    switch (t) {
    case MPS_F32: return MPS_ORDER(((const float *)a)[i], ((const float *)b)[j]);
    case MPS_I64: return MPS_ORDER(((const int64_t *)a)[i], ((const int64_t *)b)[j]);
    case MPS_I32: return MPS_ORDER(((const int32_t *)a)[i], ((const int32_t *)b)[j]);
    case MPS_U8:
    case MPS_BOOL: return MPS_ORDER(((const uint8_t *)a)[i], ((const uint8_t *)b)[j]);
    case MPS_U64: return MPS_ORDER(((const uint64_t *)a)[i], ((const uint64_t *)b)[j]);
    case MPS_F64: return MPS_ORDER(((const double *)a)[i], ((const double *)b)[j]);
    default: return MPS_ORDER(mps_elem_get_int(a, t, i), mps_elem_get_int(b, t, j)); /* i16, i8, u32, u16 */
    }
}

static bool mps_logic_of(enum mps_op op, int order, bool u, bool v)
{
    switch (op) {
    case MPS_OP_GREATER: return order == 1;
    case MPS_OP_LESS: return order == -1;
    case MPS_OP_EQUAL: return order == 0;
    case MPS_OP_GREATER_OR_EQUAL: return order == 1 || order == 0;
    case MPS_OP_LESS_OR_EQUAL: return order == -1 || order == 0;
    case MPS_OP_AND: return u && v;
    case MPS_OP_OR: return u || v;
    default: return u != v; /* Xor */
    }
}

enum mps_status mps_cpu_logic(const struct mps_cpu_args *a, struct mps_error *err)
{
    enum mps_op op = a->node->op;
    const struct mps_tensor *x = &a->in[0], *y = &a->in[a->node->n_in > 1 ? 1 : 0];
    uint8_t *out = a->out[0].data;
    bool ordered = op != MPS_OP_AND && op != MPS_OP_OR && op != MPS_OP_XOR;
    struct mps_logic_walk w;
    (void)err;
    mps_logic_walk(a->in, 2, &a->out[0], &w); /* a unary op walks its input twice */
    int64_t len = w.dim[w.nd - 1], rows = len ? mps_shape_numel(&a->out[0].shape) / len : 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t off[2];
        mps_logic_row(&w, 2, r, off);
        uint8_t *o = out + r * len;
        const uint8_t *u = (const uint8_t *)x->data + off[0], *v = (const uint8_t *)y->data + off[1];
        int64_t su = w.st[0][w.nd - 1], sv = w.st[1][w.nd - 1];
        const float *f = (const float *)x->data + off[0];
        for (int64_t i = 0; i < len; i++)
            switch (op) {
            case MPS_OP_NOT: o[i] = u[i * su] == 0; break;
            case MPS_OP_IS_NAN: o[i] = (uint8_t)(f[i * su] != f[i * su]); break;
            case MPS_OP_IS_INF: {
                const struct mps_isinf_params *p = &a->node->p.isinf;
                float e = f[i * su];
                o[i] = (p->positive && e == INFINITY) || (p->negative && e == -INFINITY);
                break;
            }
            default:
                o[i] = mps_logic_of(op, ordered ? mps_logic_order(x->data, y->data, x->dtype, off[0] + i * su,
                                                                  off[1] + i * sv)
                                                : 0,
                                    u[i * su], v[i * sv]);
                break;
            }
    }
    return MPS_OK;
}

enum mps_status mps_cpu_where(const struct mps_cpu_args *a, struct mps_error *err)
{
    size_t elem = mps_dtype_size(a->out[0].dtype);
    struct mps_logic_walk w;
    (void)err;
    mps_logic_walk(a->in, 3, &a->out[0], &w);
    int64_t len = w.dim[w.nd - 1], rows = len ? mps_shape_numel(&a->out[0].shape) / len : 0;
    const int64_t *s = (const int64_t[]){w.st[0][w.nd - 1], w.st[1][w.nd - 1], w.st[2][w.nd - 1]};
    const uint8_t *cond = a->in[0].data, *x = a->in[1].data, *y = a->in[2].data;
    uint8_t *out = a->out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        int64_t off[3];
        mps_logic_row(&w, 3, r, off);
        uint8_t *o = out + (size_t)(r * len) * elem;
        for (int64_t i = 0; i < len; i++) {
            const uint8_t *from = cond[off[0] + i * s[0]] ? x + (size_t)(off[1] + i * s[1]) * elem
                                                          : y + (size_t)(off[2] + i * s[2]) * elem;
            if (elem == 4)
                memcpy(o + (size_t)i * 4, from, 4);
            else
                memcpy(o + (size_t)i * elem, from, elem);
        }
    }
    return MPS_OK;
}

enum mps_status mps_cpu_if(const struct mps_cpu_args *a, struct mps_error *err)
{
    int n = a->node->n_out, from = ((const uint8_t *)a->in[0].data)[0] ? 1 : 1 + n;
    (void)err;
    for (int o = 0; o < n; o++) {
        size_t bytes = mps_tensor_bytes(&a->out[o]);
        if (bytes && a->out[o].data != a->in[from + o].data)
            memcpy(a->out[o].data, a->in[from + o].data, bytes);
    }
    return MPS_OK;
}
