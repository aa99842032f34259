/* lower.c: the graph → MPSGraph program step (see lower.h): the program's
   memory, the checks behind supports(), the helpers every op uses, the
   driver, and the dump. The ops themselves are in lower_ops.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lower_impl.h"
#include "resize.h"

struct mps_mtl_block {
    struct mps_mtl_block *next;
    _Alignas(16) unsigned char data[];
};

void *mps_mtl_alloc(struct mps_mtl_lowerer *L, size_t size)
{
    struct mps_mtl_block *b = malloc(sizeof *b + size);
    if (!b) {
        L->oom = true;
        return NULL;
    }
    b->next = L->p->blocks;
    L->p->blocks = b;
    return b->data;
}

void mps_mtl_program_free(struct mps_mtl_program *p)
{
    if (!p)
        return;
    for (struct mps_mtl_block *b = p->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(p->steps);
    free(p);
}

/* ---- what MPSGraph cannot be given --------------------------------------- */

static bool mps_mtl_dtype_ok(enum mps_dtype t)
{
    return t == MPS_F32 || t == MPS_F16 || t == MPS_I64 || t == MPS_I32 || t == MPS_U8 || t == MPS_BOOL;
}

#define MPS_MTL_WHY(...) (snprintf(why, size, __VA_ARGS__), false)

/* Constant inputs that shape inference resolved into the node's parameters
   (a Resize's roi, scales and sizes; a reduction's axes): never an MPSGraph
   tensor, so an empty one does not matter. */
static bool mps_mtl_param_input(const struct mps_node *n, int i)
{
    return i > 0 && i < n->n_in && (n->op == MPS_OP_RESIZE || mps_op_is_reduce(n->op));
}

/* The reasons a node cannot be lowered, whatever the precision. */
bool mps_mtl_node_supported(const struct mps_graph *g, const struct mps_node *n, char *why, size_t size)
{
    char buf[64];
    if (n->op == MPS_OP_IF)
        return MPS_MTL_WHY("an If decided at run time: the cpu backend runs it, the taken branch alone");
    if (!mps_mtl_op_lowered(n->op))
        return MPS_MTL_WHY("no MPSGraph lowering");
    if (!mps_node_gpu_dtypes(g, n))
        return MPS_MTL_WHY("its dtypes: the GPU backends compute in f32 and f16, and in i64 and i32 where "
                           "integers are exact (backend.h); the cpu computes the others");
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        int v = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
        if (v < 0 || mps_mtl_param_input(n, i))
            continue;
        const struct mps_value *val = &g->values[v];
        if (!mps_mtl_dtype_ok(val->dtype))
            return MPS_MTL_WHY("%s tensor '%s': MPSGraph has no such type", mps_dtype_name(val->dtype), val->name);
        if (mps_shape_numel(&val->shape) == 0)
            return MPS_MTL_WHY("empty tensor '%s' %s: MPSGraph tensors have at least one element", val->name,
                               mps_shape_str(&val->shape, buf, sizeof buf));
    }
    const struct mps_value *x = n->n_in > 0 && n->in[0] >= 0 ? &g->values[n->in[0]] : NULL;
    switch (n->op) {
    case MPS_OP_CONV:
    case MPS_OP_CONV_TRANSPOSE:
    case MPS_OP_MAX_POOL:
    case MPS_OP_AVERAGE_POOL:
        if (x->shape.ndim > 4)
            return MPS_MTL_WHY("%d-D %s: the lowering builds 1-D and 2-D windows only", x->shape.ndim - 2,
                               n->op == MPS_OP_CONV || n->op == MPS_OP_CONV_TRANSPOSE ? "convolution" : "pooling");
        break;
    default: break;
    }
    const struct mps_window *w = n->op == MPS_OP_CONV || n->op == MPS_OP_CONV_TRANSPOSE     ? &n->p.conv.win
                                 : n->op == MPS_OP_MAX_POOL || n->op == MPS_OP_AVERAGE_POOL ? &n->p.pool.win
                                                                                            : NULL;
    if (w)
        for (int j = 0; j < 2 * (x->shape.ndim - 2); j++)
            if (w->pad[j] < 0)
                return MPS_MTL_WHY("negative padding %lld: MPSGraph paddings are unsigned", (long long)w->pad[j]);
    switch (n->op) {
    case MPS_OP_CONV_TRANSPOSE: {
        const struct mps_shape *y = &g->values[n->out[0]].shape;
        int sp = x->shape.ndim - 2;
        for (int j = 0; j < sp; j++) {
            int64_t k = g->values[n->in[1]].shape.dim[2 + j];
            int64_t span = y->dim[2 + j] + w->pad[j] + w->pad[sp + j] - w->dilation[j] * (k - 1) - 1;
            if (span < 0 || span / w->stride[j] + 1 != x->shape.dim[2 + j])
                return MPS_MTL_WHY("output size %lld on spatial axis %d is not one the forward convolution of "
                                   "MPSGraph's transpose maps back to %lld",
                                   (long long)y->dim[2 + j], j, (long long)x->shape.dim[2 + j]);
        }
        break;
    }
    case MPS_OP_MAX_POOL:
        if (n->n_out > 1 && n->out[1] >= 0 && n->p.pool.column_major)
            return MPS_MTL_WHY("Indices with storage_order 1: MPSGraph flattens indices row-major only");
        break;
    case MPS_OP_AVERAGE_POOL:
        if (n->p.pool.count_include_pad) {
            struct mps_mtl_window_2d d;
            mps_mtl_window_2d(g, n, &d);
            if (d.ceil_extra)
                return MPS_MTL_WHY("count_include_pad with ceil_mode windows past the padding: MPSGraph would "
                                   "count the extra cells in the divisor");
        }
        break;
    case MPS_OP_RNN:
    case MPS_OP_GRU:
    case MPS_OP_LSTM: { /* sequences that end early: each step would need a mask per sequence */
        const struct mps_value *lens = n->n_in > 4 && n->in[4] >= 0 ? &g->values[n->in[4]] : NULL;
        int64_t steps = x->shape.dim[n->p.rnn.batch_first];
        for (int64_t b = 0; lens && b < mps_shape_numel(&lens->shape); b++)
            if (!lens->data || mps_elem_get_int(lens->data, lens->dtype, b) < steps)
                return MPS_MTL_WHY("sequence_lens %s: the lowering runs every sequence to its end",
                                   lens->data ? "shorter than the sequence" : "given at run time");
        break;
    }
    case MPS_OP_DIV:
    case MPS_OP_POW:
        if (g->values[n->out[0]].dtype != MPS_F32 && g->values[n->out[0]].dtype != MPS_F16)
            return MPS_MTL_WHY("%s of %s: MPSGraph does not document integer rounding", mps_op_name(n->op),
                               mps_dtype_name(g->values[n->out[0]].dtype));
        break;
    case MPS_OP_RESIZE: {
        const struct mps_shape *y = &g->values[n->out[0]].shape;
        if (n->p.resize.coord == MPS_COORD_TF_CROP_AND_RESIZE)
            return MPS_MTL_WHY("tf_crop_and_resize: its extrapolated outputs are not a product of the input");
        if (x->shape.ndim < 2)
            return MPS_MTL_WHY("a %d-D resize: the lowering resizes the last two axes", x->shape.ndim);
        for (int d = 0; d < x->shape.ndim - 2; d++)
            if (!mps_resize_identity(&n->p.resize, d, x->shape.dim[d], y->dim[d]))
                return MPS_MTL_WHY("axis %d resized: the lowering resizes the last two axes only", d);
        break;
    }
    case MPS_OP_SCATTER_ND:
    case MPS_OP_SCATTER_ELEMENTS:
    case MPS_OP_GATHER_ND:
    case MPS_OP_GATHER_ELEMENTS: /* constant indices are checked at load */
        if (!g->values[n->in[1]].data)
            return MPS_MTL_WHY("indices computed at run time: a bad index cannot be refused inside MPSGraph");
        break;
    case MPS_OP_GATHER: {
        const struct mps_value *idx = &g->values[n->in[1]];
        if (!idx->data)
            return MPS_MTL_WHY("indices computed at run time: a bad index cannot be refused inside MPSGraph");
        int64_t dim = x->shape.dim[n->p.axis.axis], count = mps_shape_numel(&idx->shape);
        for (int64_t i = 0; i < count; i++) {
            int64_t v = idx->dtype == MPS_I64 ? ((const int64_t *)idx->data)[i] : ((const int32_t *)idx->data)[i];
            if (v < -dim || v >= dim)
                return MPS_MTL_WHY("index %lld out of range [%lld, %lld)", (long long)v, (long long)-dim,
                                   (long long)dim);
        }
        break;
    }
    default: break;
    }
    return true;
}

/* ---- tensors ------------------------------------------------------------------ */

enum mps_dtype mps_mtl_compute_dtype(const struct mps_mtl_lowerer *L, enum mps_dtype t)
{
    return L->p->precision == MPS_PRECISION_FP16 && t == MPS_F32 ? MPS_F16 : t;
}

int mps_mtl_emit(struct mps_mtl_lowerer *L, enum mps_mtl_kind kind, int fn, enum mps_dtype dtype,
                 const struct mps_shape *shape, const int *in, int n_in, struct mps_mtl_step **step)
{
    struct mps_mtl_program *p = L->p;
    struct mps_shape result = *shape; /* shape may point into L->t, which may move below */
    *step = NULL;
    if (L->oom)
        return -1;
    if (p->n_steps == p->cap_steps) {
        int cap = p->cap_steps ? 2 * p->cap_steps : 64;
        struct mps_mtl_step *s = realloc(p->steps, sizeof *s * (size_t)cap);
        struct mps_mtl_tensor *t = realloc(L->t, sizeof *t * (size_t)(2 * cap));
        if (s)
            p->steps = s;
        if (t)
            L->t = t;
        if (!s || !t) {
            L->oom = true;
            return -1;
        }
        p->cap_steps = cap;
    }
    int *ins = n_in ? mps_mtl_alloc(L, sizeof(int) * (size_t)n_in) : NULL;
    if (n_in && !ins)
        return -1;
    if (n_in)
        memcpy(ins, in, sizeof(int) * (size_t)n_in);
    struct mps_mtl_step *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->fn = fn;
    s->out = p->n_tensors++;
    s->out2 = -1;
    s->n_in = n_in;
    s->in = ins;
    s->dtype = dtype;
    s->shape = result;
    s->node = L->node;
    L->t[s->out] = (struct mps_mtl_tensor){dtype, result, kind};
    *step = s;
    return s->out;
}

const struct mps_shape *mps_mtl_shape(const struct mps_mtl_lowerer *L, int id)
{
    return &L->t[id].shape;
}

enum mps_dtype mps_mtl_dtype(const struct mps_mtl_lowerer *L, int id)
{
    return L->t[id].dtype;
}

int mps_mtl_const_data(struct mps_mtl_lowerer *L, enum mps_dtype t, const struct mps_shape *s, const void *data)
{
    struct mps_mtl_step *st;
    int id = data ? mps_mtl_emit(L, MPS_MTL_CONSTANT, 0, t, s, NULL, 0, &st) : -1;
    if (id < 0)
        return -1;
    st->p.constant.data = data;
    st->p.constant.bytes = (size_t)mps_shape_numel(s) * mps_dtype_size(t);
    return id;
}

/* A constant over the initializer v's bytes, seen with shape s (same count),
   cast to the compute type. A new step each time: MPSGraph folds duplicates. */
static int mps_mtl_constant(struct mps_mtl_lowerer *L, int v, const struct mps_shape *s)
{
    const struct mps_value *val = &L->g->values[v];
    int id = mps_mtl_const_data(L, val->dtype, s, val->data);
    if (id >= 0)
        L->p->steps[L->p->n_steps - 1].node = -1; /* a weight, not the node's */
    return mps_mtl_cast(L, id, mps_mtl_compute_dtype(L, val->dtype));
}

int mps_mtl_value(struct mps_mtl_lowerer *L, int v)
{
    if (v < 0)
        return -1;
    if (L->vid[v] < 0 && L->g->values[v].data)
        L->vid[v] = mps_mtl_constant(L, v, &L->g->values[v].shape);
    return L->vid[v];
}

int mps_mtl_value_as(struct mps_mtl_lowerer *L, int v, const struct mps_shape *s)
{
    if (v < 0)
        return -1;
    if (L->g->values[v].data && L->vid[v] < 0)
        return mps_mtl_constant(L, v, s);
    return mps_mtl_reshape(L, mps_mtl_value(L, v), s);
}

int mps_mtl_cast(struct mps_mtl_lowerer *L, int x, enum mps_dtype to)
{
    if (x < 0 || mps_mtl_dtype(L, x) == to)
        return x;
    struct mps_mtl_step *s;
    return mps_mtl_emit(L, MPS_MTL_CAST, 0, to, mps_mtl_shape(L, x), &x, 1, &s);
}

int mps_mtl_reshape(struct mps_mtl_lowerer *L, int x, const struct mps_shape *s)
{
    if (x < 0 || mps_shape_eq(mps_mtl_shape(L, x), s))
        return x;
    struct mps_mtl_step *st;
    return mps_mtl_emit(L, MPS_MTL_RESHAPE, 0, mps_mtl_dtype(L, x), s, &x, 1, &st);
}

int mps_mtl_scalar(struct mps_mtl_lowerer *L, double value, enum mps_dtype t)
{
    struct mps_mtl_step *s;
    int id = mps_mtl_emit(L, MPS_MTL_FILL, 0, t, &(struct mps_shape){0, {0}}, NULL, 0, &s);
    if (s)
        s->p.scalar = value;
    return id;
}

int mps_mtl_unary(struct mps_mtl_lowerer *L, enum mps_mtl_unary fn, int x)
{
    if (x < 0)
        return -1;
    struct mps_mtl_step *s;
    return mps_mtl_emit(L, MPS_MTL_UNARY, fn, mps_mtl_dtype(L, x), mps_mtl_shape(L, x), &x, 1, &s);
}

int mps_mtl_binary(struct mps_mtl_lowerer *L, enum mps_mtl_binary fn, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    struct mps_shape shape;
    struct mps_error err;
    if (mps_shape_broadcast(mps_mtl_shape(L, a), mps_mtl_shape(L, b), &shape, &err) != MPS_OK) {
        L->bug = "operands that do not broadcast";
        return -1;
    }
    bool compare = fn >= MPS_MTL_GREATER;
    struct mps_mtl_step *s;
    return mps_mtl_emit(L, MPS_MTL_BINARY, fn, compare ? MPS_BOOL : mps_mtl_dtype(L, a), &shape, (int[]){a, b}, 2, &s);
}

/* a <op> scalar, the scalar in a's type. */
int mps_mtl_binary_scalar(struct mps_mtl_lowerer *L, enum mps_mtl_binary fn, int a, double v)
{
    return a < 0 ? -1 : mps_mtl_binary(L, fn, a, mps_mtl_scalar(L, v, mps_mtl_dtype(L, a)));
}

int mps_mtl_select(struct mps_mtl_lowerer *L, int pred, int yes, int no)
{
    if (pred < 0 || yes < 0 || no < 0)
        return -1;
    struct mps_shape shape, tmp;
    struct mps_error err;
    if (mps_shape_broadcast(mps_mtl_shape(L, yes), mps_mtl_shape(L, no), &tmp, &err) != MPS_OK ||
        mps_shape_broadcast(mps_mtl_shape(L, pred), &tmp, &shape, &err) != MPS_OK) {
        L->bug = "select operands that do not broadcast";
        return -1;
    }
    struct mps_mtl_step *s;
    return mps_mtl_emit(L, MPS_MTL_SELECT, 0, mps_mtl_dtype(L, yes), &shape, (int[]){pred, yes, no}, 3, &s);
}

/* ---- helpers of the lowerings -------------------------------------------------- */

const struct mps_shape *mps_mtl_vshape(const struct mps_mtl_lowerer *L, int v)
{
    return &L->g->values[v].shape;
}

/* Defines graph value v (a node output) as tensor id. */
void mps_mtl_define(struct mps_mtl_lowerer *L, int v, int id)
{
    if (v < 0)
        return;
    if (id < 0 && !L->oom && !L->bug)
        L->bug = "an operand was never defined";
    L->vid[v] = id;
}

/* Defines v as x reshaped to v's inferred shape (same count). */
void mps_mtl_define_as(struct mps_mtl_lowerer *L, int v, int x)
{
    mps_mtl_define(L, v, mps_mtl_reshape(L, x, mps_mtl_vshape(L, v)));
}

/* x broadcast to s (Expand); a reshape when only the rank differs. */
int mps_mtl_broadcast_to(struct mps_mtl_lowerer *L, int x, const struct mps_shape *s)
{
    if (x < 0 || mps_shape_eq(mps_mtl_shape(L, x), s))
        return x;
    if (mps_shape_numel(mps_mtl_shape(L, x)) == mps_shape_numel(s))
        return mps_mtl_reshape(L, x, s);
    struct mps_mtl_step *st;
    return mps_mtl_emit(L, MPS_MTL_BROADCAST, 0, mps_mtl_dtype(L, x), s, &x, 1, &st);
}

/* fn over axes, reduced dims kept as 1; x itself when axes is empty. */
int mps_mtl_reduce(struct mps_mtl_lowerer *L, enum mps_mtl_reduce fn, int x, uint32_t axes)
{
    if (x < 0 || !axes)
        return x;
    struct mps_shape s = *mps_mtl_shape(L, x);
    for (int i = 0; i < s.ndim; i++)
        if (axes & (1u << i))
            s.dim[i] = 1;
    struct mps_mtl_step *st;
    int id = mps_mtl_emit(L, MPS_MTL_REDUCE, fn, mps_mtl_dtype(L, x), &s, &x, 1, &st);
    if (st)
        st->p.axes = axes;
    return id;
}

int mps_mtl_matmul_ids(struct mps_mtl_lowerer *L, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    struct mps_matmul_geom geo = mps_matmul_geom(mps_mtl_shape(L, a), mps_mtl_shape(L, b));
    struct mps_shape s = geo.batch;
    s.dim[s.ndim++] = geo.m;
    s.dim[s.ndim++] = geo.n;
    struct mps_mtl_step *st;
    return mps_mtl_emit(L, MPS_MTL_MATMUL, 0, mps_mtl_dtype(L, a), &s, (int[]){a, b}, 2, &st);
}

int mps_mtl_int32s(struct mps_mtl_lowerer *L, const int64_t *v, const struct mps_shape *s)
{
    int64_t count = mps_shape_numel(s);
    int32_t *data = mps_mtl_alloc(L, sizeof(int32_t) * (size_t)(count + 1));
    for (int64_t i = 0; data && i < count; i++)
        data[i] = (int32_t)v[i];
    return mps_mtl_const_data(L, MPS_I32, s, data);
}

int mps_mtl_iota(struct mps_mtl_lowerer *L, int rank, int axis, int64_t len)
{
    struct mps_shape s = {rank, {0}};
    for (int i = 0; i < rank; i++)
        s.dim[i] = i == axis ? len : 1;
    int32_t *data = mps_mtl_alloc(L, sizeof(int32_t) * (size_t)(len + 1));
    for (int64_t i = 0; data && i < len; i++)
        data[i] = (int32_t)i;
    return mps_mtl_const_data(L, MPS_I32, &s, data);
}

/* ---- the driver ------------------------------------------------------------- */

/* Graph outputs must be results of operations MPSGraph runs, one tensor
   each: an input, a weight or a tensor that is already an output gets an
   identity. fp16 results are cast back to the graph's type. */
static int mps_mtl_output(struct mps_mtl_lowerer *L, int v, int index)
{
    int id = mps_mtl_value(L, v);
    if (id < 0)
        return -1;
    enum mps_mtl_kind k = L->t[id].kind;
    bool taken = false;
    for (int i = 0; i < index; i++)
        taken |= L->p->outputs[i] == id;
    if (k == MPS_MTL_PLACEHOLDER || k == MPS_MTL_CONSTANT || k == MPS_MTL_FILL || taken)
        id = mps_mtl_unary(L, MPS_MTL_IDENTITY, id);
    return mps_mtl_cast(L, id, L->g->values[v].dtype);
}

enum mps_status mps_mtl_lower(const struct mps_graph *g, enum mps_precision precision, struct mps_mtl_program **out,
                              struct mps_error *err)
{
    *out = NULL;
    if (precision == MPS_PRECISION_TF32)
        return mps_fail(err, MPS_ERR_USAGE, "mps: precision tf32 does not exist on Apple GPUs (use fp32 or fp16)");
    char why[256];
    for (int i = 0; i < g->n_nodes; i++)
        if (!mps_mtl_node_supported(g, &g->nodes[i], why, sizeof why))
            return mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): %s", g->nodes[i].name, mps_op_name(g->nodes[i].op),
                            why);
    for (int i = 0; i < g->n_inputs; i++)
        if (!mps_mtl_dtype_ok(g->values[g->inputs[i]].dtype) || mps_shape_numel(&g->values[g->inputs[i]].shape) == 0)
            return mps_fail(err, MPS_ERR_MODEL, "input '%s': MPSGraph cannot take a %s tensor of that shape",
                            g->values[g->inputs[i]].name, mps_dtype_name(g->values[g->inputs[i]].dtype));
    struct mps_mtl_program *p = calloc(1, sizeof *p);
    struct mps_mtl_lowerer L = {.g = g, .p = p, .node = -1};
    if (p) {
        p->precision = precision;
        p->n_inputs = g->n_inputs;
        p->n_outputs = g->n_outputs;
        L.vid = malloc(sizeof(int) * (size_t)(g->n_values ? g->n_values : 1));
        p->inputs = mps_mtl_alloc(&L, sizeof(int) * (size_t)(g->n_inputs + 1));
        p->outputs = mps_mtl_alloc(&L, sizeof(int) * (size_t)(g->n_outputs + 1));
    }
    if (!p || !L.vid || L.oom) {
        free(L.vid);
        mps_mtl_program_free(p);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory lowering the graph for MPSGraph");
    }
    for (int v = 0; v < g->n_values; v++)
        L.vid[v] = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        const struct mps_value *v = &g->values[g->inputs[i]];
        struct mps_mtl_step *s;
        int id = mps_mtl_emit(&L, MPS_MTL_PLACEHOLDER, 0, v->dtype, &v->shape, NULL, 0, &s);
        if (s)
            s->p.index = i;
        p->inputs[i] = id;
        L.vid[g->inputs[i]] = mps_mtl_cast(&L, id, mps_mtl_compute_dtype(&L, v->dtype));
    }
    for (int i = 0; i < g->n_nodes && !L.oom && !L.bug; i++) {
        L.node = i;
        mps_mtl_lower_node(&L, &g->nodes[i]);
    }
    L.node = -1;
    for (int i = 0; i < g->n_outputs && !L.oom && !L.bug; i++)
        p->outputs[i] = mps_mtl_output(&L, g->outputs[i], i);
    free(L.vid);
    free(L.t);
    if (L.oom || L.bug) {
        const struct mps_node *n = L.node >= 0 ? &g->nodes[L.node] : NULL;
        enum mps_status st =
            L.oom ? mps_fail(err, MPS_ERR_RUNTIME, "out of memory lowering the graph for MPSGraph")
            : n   ? mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): lowering bug: %s", n->name, mps_op_name(n->op), L.bug)
                  : mps_fail(err, MPS_ERR_MODEL, "lowering bug: %s", L.bug);
        mps_mtl_program_free(p);
        return st;
    }
    *out = p;
    return MPS_OK;
}

/* ---- names and the dump --------------------------------------------------------- */

const char *mps_mtl_kind_name(enum mps_mtl_kind k)
{
    static const char *const names[MPS_MTL_KIND_COUNT] = {
        "placeholder",      "constant",  "fill",    "unary",      "binary",
        "select",           "cast",      "matmul",  "transpose2", "conv2d",
        "conv_transpose2d", "pool2d",    "reduce",  "variance",   "normalize",
        "softmax",          "reshape",   "permute", "slice",      "reverse",
        "concat",           "broadcast", "pad",     "gather",     "cumsum",
    };
    return k < MPS_MTL_KIND_COUNT ? names[k] : "?";
}

const char *mps_mtl_unary_name(int fn)
{
    static const char *const names[MPS_MTL_UNARY_COUNT] = {
        "identity", "relu",       "sigmoid", "tanh", "exp", "log", "sqrt", "abs",
        "neg",      "reciprocal", "floor",   "ceil", "erf", "not", "sign", "rint",
        "sin",      "cos",        "tan",     "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
    };
    return fn >= 0 && fn < MPS_MTL_UNARY_COUNT ? names[fn] : "?";
}

const char *mps_mtl_binary_name(int fn)
{
    static const char *const names[MPS_MTL_BINARY_COUNT] = {
        "add",           "sub",  "mul",        "div",   "pow",       "max", "min", "greater",
        "greater_equal", "less", "less_equal", "equal", "not_equal", "and", "or",  "xor",
    };
    return fn >= 0 && fn < MPS_MTL_BINARY_COUNT ? names[fn] : "?";
}

static void mps_mtl_dump_axes(FILE *f, uint32_t axes)
{
    fprintf(f, " axes");
    for (int i = 0; i < 32; i++)
        if (axes & (1u << i))
            fprintf(f, " %d", i);
}

static void mps_mtl_dump_ints(FILE *f, const char *label, const int64_t *v, int n)
{
    fprintf(f, " %s ", label);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)v[i]);
}

static void mps_mtl_dump_step(FILE *f, const struct mps_mtl_step *s)
{
    static const char *const reduce[] = {"sum", "max", "min", "mean", "prod"};
    switch (s->kind) {
    case MPS_MTL_PLACEHOLDER: fprintf(f, " input %d", s->p.index); break;
    case MPS_MTL_CONSTANT: fprintf(f, " %zu bytes", s->p.constant.bytes); break;
    case MPS_MTL_FILL: fprintf(f, " value %g", s->p.scalar); break;
    case MPS_MTL_UNARY: fprintf(f, " %s", mps_mtl_unary_name(s->fn)); break;
    case MPS_MTL_BINARY: fprintf(f, " %s", mps_mtl_binary_name(s->fn)); break;
    case MPS_MTL_TRANSPOSE2: fprintf(f, " dims %d,%d", s->p.ax.axis, s->p.ax.axis2); break;
    case MPS_MTL_CONV2D:
    case MPS_MTL_CONV_TRANSPOSE2D: {
        const struct mps_mtl_conv *c = &s->p.conv;
        fprintf(f, " stride %lldx%lld dilation %lldx%lld groups %lld pad l%lld r%lld t%lld b%lld %s/%s",
                (long long)c->stride_y, (long long)c->stride_x, (long long)c->dilation_y, (long long)c->dilation_x,
                (long long)c->groups, (long long)c->pad_left, (long long)c->pad_right, (long long)c->pad_top,
                (long long)c->pad_bottom, c->data_layout == MPS_MTL_LAYOUT_NCHW ? "NCHW" : "?",
                c->weights_layout == MPS_MTL_LAYOUT_OIHW ? "OIHW" : "?");
        break;
    }
    case MPS_MTL_POOL2D: {
        const struct mps_mtl_pool_desc *q = &s->p.pool;
        fprintf(f, " %s kernel %lldx%lld stride %lldx%lld dilation %lldx%lld pad l%lld r%lld t%lld b%lld%s%s",
                s->fn == MPS_MTL_POOL_MAX ? "max" : "avg", (long long)q->kernel_h, (long long)q->kernel_w,
                (long long)q->stride_y, (long long)q->stride_x, (long long)q->dilation_y, (long long)q->dilation_x,
                (long long)q->pad_left, (long long)q->pad_right, (long long)q->pad_top, (long long)q->pad_bottom,
                q->include_zero_pad ? " include_zero_pad" : "", q->return_indices ? " indices" : "");
        break;
    }
    case MPS_MTL_REDUCE:
        fprintf(f, " %s", reduce[s->fn]);
        mps_mtl_dump_axes(f, s->p.axes);
        break;
    case MPS_MTL_VARIANCE:
    case MPS_MTL_REVERSE: mps_mtl_dump_axes(f, s->p.axes); break;
    case MPS_MTL_NORMALIZE: fprintf(f, " epsilon %g", (double)s->p.epsilon); break;
    case MPS_MTL_CUMSUM:
        fprintf(f, " axis %d%s%s", s->p.cumsum.axis, s->p.cumsum.exclusive ? " exclusive" : "",
                s->p.cumsum.reverse ? " reverse" : "");
        break;
    case MPS_MTL_SOFTMAX:
    case MPS_MTL_CONCAT:
    case MPS_MTL_GATHER: fprintf(f, " axis %d", s->p.ax.axis); break;
    case MPS_MTL_PERMUTE:
        fprintf(f, " perm ");
        for (int i = 0; i < s->shape.ndim; i++)
            fprintf(f, "%s%d", i ? "," : "", s->p.perm[i]);
        break;
    case MPS_MTL_SLICE:
        mps_mtl_dump_ints(f, "starts", s->p.slice.start, s->shape.ndim);
        mps_mtl_dump_ints(f, "ends", s->p.slice.end, s->shape.ndim);
        mps_mtl_dump_ints(f, "strides", s->p.slice.stride, s->shape.ndim);
        break;
    case MPS_MTL_PAD: {
        static const char *const modes[] = {"constant", "reflect", "?", "clamp_to_edge"};
        fprintf(f, " %s", modes[s->p.pad.mode]);
        mps_mtl_dump_ints(f, "left", s->p.pad.left, s->shape.ndim);
        mps_mtl_dump_ints(f, "right", s->p.pad.right, s->shape.ndim);
        fprintf(f, " value %g", s->p.pad.value);
        break;
    }
    default: break;
    }
}

void mps_mtl_program_dump(const struct mps_mtl_program *p, const struct mps_graph *g, FILE *f)
{
    char buf[128];
    for (int i = 0; i < p->n_steps; i++) {
        const struct mps_mtl_step *s = &p->steps[i];
        fprintf(f, "t%d", s->out);
        if (s->out2 >= 0)
            fprintf(f, ", t%d", s->out2);
        fprintf(f, " = %s(", mps_mtl_kind_name(s->kind));
        for (int k = 0; k < s->n_in; k++)
            s->in[k] < 0 ? fprintf(f, "%snil", k ? ", " : "") : fprintf(f, "%st%d", k ? ", " : "", s->in[k]);
        fprintf(f, ") %s %s", mps_dtype_name(s->dtype), mps_shape_str(&s->shape, buf, sizeof buf));
        mps_mtl_dump_step(f, s);
        if (s->node >= 0)
            fprintf(f, "  # %s", g->nodes[s->node].name);
        fputc('\n', f);
    }
    fprintf(f, "outputs:");
    for (int i = 0; i < p->n_outputs; i++)
        fprintf(f, " t%d", p->outputs[i]);
    fputc('\n', f);
}
