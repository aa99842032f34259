#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bump allocator in chunks; everything is released with the graph. */
struct mps_graph_arena {
    struct mps_graph_arena *next;
    size_t used, size;
    _Alignas(64) unsigned char mem[];
};

#define MPS_GRAPH_CHUNK ((size_t)1 << 20)

struct mps_graph *mps_graph_new(void)
{
    return calloc(1, sizeof(struct mps_graph));
}

void mps_graph_free(struct mps_graph *g)
{
    if (!g)
        return;
    for (struct mps_graph_arena *a = g->arena, *next; a; a = next) {
        next = a->next;
        free(a);
    }
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->qnotes);
    free(g);
}

void *mps_graph_alloc(struct mps_graph *g, size_t size)
{
    size = (size + 63) & ~(size_t)63;
    if (size == 0)
        size = 64;
    struct mps_graph_arena *a = g->arena;
    if (!a || a->size - a->used < size) {
        size_t cap = size > MPS_GRAPH_CHUNK ? size : MPS_GRAPH_CHUNK;
        if (cap > SIZE_MAX - sizeof *a)
            return NULL;
        a = malloc(sizeof *a + cap);
        if (!a)
            return NULL;
        a->used = 0;
        a->size = cap;
        /* a big block goes behind the current chunk so the chunk keeps filling */
        if (g->arena && cap > MPS_GRAPH_CHUNK) {
            a->next = g->arena->next;
            g->arena->next = a;
        } else {
            a->next = g->arena;
            g->arena = a;
        }
    }
    void *p = a->mem + a->used;
    a->used += size;
    memset(p, 0, size);
    return p;
}

const char *mps_graph_strndup(struct mps_graph *g, const char *s, size_t len)
{
    char *d = mps_graph_alloc(g, len + 1);
    if (d && len)
        memcpy(d, s, len);
    if (d)
        d[len] = '\0';
    return d;
}

const char *mps_graph_strdup(struct mps_graph *g, const char *s)
{
    return mps_graph_strndup(g, s, strlen(s));
}

/* Grows *arr (of elem-size items) so that it holds at least n + 1. */
static bool mps_graph_grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap)
        return true;
    int nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

int mps_graph_find(const struct mps_graph *g, const char *name)
{
    for (int i = 0; i < g->n_values; i++)
        if (strcmp(g->values[i].name, name) == 0)
            return i;
    return -1;
}

int mps_graph_add_value(struct mps_graph *g, const char *name, enum mps_dtype dtype,
                        const struct mps_shape *shape)
{
    if ((unsigned)dtype >= MPS_DTYPE_COUNT || (shape && mps_shape_numel(shape) < 0))
        return -1;
    if (!mps_graph_grow((void **)&g->values, &g->cap_values, g->n_values, sizeof *g->values))
        return -1;
    const char *nm = mps_graph_strdup(g, name);
    if (!nm)
        return -1;
    struct mps_value *v = &g->values[g->n_values];
    *v = (struct mps_value){.name = nm, .dtype = dtype, .producer = -1};
    if (shape) {
        v->shape = *shape;
        v->shape_known = true;
    }
    return g->n_values++;
}

int mps_graph_add_const(struct mps_graph *g, const char *name, enum mps_dtype dtype,
                        const struct mps_shape *shape, const void *data)
{
    int64_t n = mps_shape_numel(shape);
    if (n < 0 || (unsigned)dtype >= MPS_DTYPE_COUNT)
        return -1;
    size_t bytes = (size_t)n * mps_dtype_size(dtype);
    void *copy = mps_graph_alloc(g, bytes);
    if (!copy)
        return -1;
    if (bytes)
        memcpy(copy, data, bytes);
    for (int64_t i = 0; dtype == MPS_STRING && i < n; i++) /* the characters too */
        if (!(((const char **)copy)[i] = mps_graph_strdup(g, ((const char *const *)data)[i])))
            return -1;
    int id = mps_graph_add_value(g, name, dtype, shape);
    if (id >= 0)
        g->values[id].data = copy;
    return id;
}

bool mps_graph_add_qnote(struct mps_graph *g, const struct mps_qnote *note)
{
    if (!mps_graph_grow((void **)&g->qnotes, &g->cap_qnotes, g->n_qnotes, sizeof *g->qnotes))
        return false;
    g->qnotes[g->n_qnotes++] = *note;
    return true;
}

enum mps_status mps_graph_add_node(struct mps_graph *g, enum mps_op op, const char *name,
                                   const int *in, int n_in, const int *out, int n_out,
                                   const union mps_op_params *params, struct mps_error *err)
{
    const struct mps_op_info *info = mps_op_info(op);
    if (!info)
        return mps_fail(err, MPS_ERR_MODEL, "node '%s': unknown op %d", name, (int)op);
    if (n_in < info->in_min || (info->in_max >= 0 && n_in > info->in_max) || n_out < info->out_min ||
        (info->out_max >= 0 && n_out > info->out_max))
        return mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): %d inputs and %d outputs, which %s does not take",
                        name, info->name, n_in, n_out, info->name);
    for (int i = 0; i < n_in; i++)
        if (in[i] < -1 || in[i] >= g->n_values || (in[i] == -1 && i < info->in_min))
            return mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): input %d is missing", name, info->name, i);
    for (int i = 0; i < n_out; i++) {
        if (out[i] < 0 || out[i] >= g->n_values)
            return mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): output %d is missing", name, info->name, i);
        const struct mps_value *v = &g->values[out[i]];
        if (v->producer >= 0 || v->data)
            return mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): output '%s' is already defined", name,
                            info->name, v->name);
        for (int j = 0; j < i; j++)
            if (out[j] == out[i])
                return mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): output '%s' written twice", name,
                                info->name, v->name);
    }
    if (!mps_graph_grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes, sizeof *g->nodes))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    struct mps_node *n = &g->nodes[g->n_nodes];
    *n = (struct mps_node){.op = op, .n_in = n_in, .n_out = n_out};
    n->name = mps_graph_strdup(g, name);
    n->in = mps_graph_alloc(g, sizeof(int) * (size_t)(n_in ? n_in : 1));
    n->out = mps_graph_alloc(g, sizeof(int) * (size_t)n_out);
    if (!n->name || !n->in || !n->out)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    if (n_in)
        memcpy(n->in, in, sizeof(int) * (size_t)n_in);
    memcpy(n->out, out, sizeof(int) * (size_t)n_out);
    if (params)
        n->p = *params;
    else
        mps_op_params_default(op, &n->p);
    for (int i = 0; i < n_out; i++)
        g->values[out[i]].producer = g->n_nodes;
    g->n_nodes++;
    return MPS_OK;
}

static enum mps_status mps_graph_add_io(int **arr, int *n, int *cap, const struct mps_graph *g, int value,
                                        struct mps_error *err)
{
    if (value < 0 || value >= g->n_values)
        return mps_fail(err, MPS_ERR_MODEL, "graph input/output %d does not exist", value);
    if (!mps_graph_grow((void **)arr, cap, *n, sizeof(int)))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    (*arr)[(*n)++] = value;
    return MPS_OK;
}

enum mps_status mps_graph_add_input(struct mps_graph *g, int value, struct mps_error *err)
{
    if (value >= 0 && value < g->n_values && (g->values[value].producer >= 0 || g->values[value].data))
        return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' is also computed or constant",
                        g->values[value].name);
    return mps_graph_add_io(&g->inputs, &g->n_inputs, &g->cap_inputs, g, value, err);
}

enum mps_status mps_graph_add_output(struct mps_graph *g, int value, struct mps_error *err)
{
    return mps_graph_add_io(&g->outputs, &g->n_outputs, &g->cap_outputs, g, value, err);
}

void mps_graph_remove_nodes(struct mps_graph *g, const bool *dead)
{
    int kept = 0;
    /* every value loses its producer first, then the kept nodes' outputs get theirs: a
       dead node may write a value a kept node now writes too (a fusion gives the Conv
       its Relu's output), and a value a node wrote before a fusion may have none now */
    for (int v = 0; v < g->n_values; v++)
        g->values[v].producer = -1;
    for (int k = 0; k < g->n_nodes; k++) {
        struct mps_node *n = &g->nodes[k];
        if (dead[k])
            continue;
        g->nodes[kept] = *n;
        for (int o = 0; o < n->n_out; o++)
            g->values[n->out[o]].producer = kept;
        kept++;
    }
    g->n_nodes = kept;
}

void mps_graph_replace_uses(struct mps_graph *g, int from, int to)
{
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_in; i++)
            if (g->nodes[k].in[i] == from)
                g->nodes[k].in[i] = to;
    for (int k = 0; k < g->n_qnotes; k++) /* what they name is read too */
        for (int i = 0; i < 9; i++)
            if (g->qnotes[k].in[i] == from)
                g->qnotes[k].in[i] = to;
}

bool mps_graph_is_output(const struct mps_graph *g, int v)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

int mps_graph_uses(const struct mps_graph *g, int v, int *only)
{
    int uses = mps_graph_is_output(g, v);
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_in; i++)
            if (g->nodes[k].in[i] == v) {
                uses++;
                *only = k;
            }
    return uses;
}

const struct mps_value *mps_node_input(const struct mps_graph *g, const struct mps_node *n, int i)
{
    return i < n->n_in && n->in[i] >= 0 ? &g->values[n->in[i]] : NULL;
}

struct mps_fused_act *mps_node_act(const struct mps_node *n)
{
    union mps_op_params *p = (union mps_op_params *)&n->p;
    switch (n->op) {
    case MPS_OP_GEMM:
    case MPS_OP_QLINEAR_MATMUL: return &p->gemm.act;
    case MPS_OP_CONV:
    case MPS_OP_CONV_TRANSPOSE:
    case MPS_OP_QLINEAR_CONV: return &p->conv.act;
    case MPS_OP_ADD:
    case MPS_OP_SUB:
    case MPS_OP_MUL:
    case MPS_OP_DIV:
    case MPS_OP_QLINEAR_ADD:
    case MPS_OP_QLINEAR_UNARY: return &p->binary.act; /* QLinearUnary's: its op, always on */
    default: return NULL;
    }
}

void mps_depth_view(const struct mps_node *n, const struct mps_shape *x, struct mps_shape *view, int perm[6])
{
    int64_t b = n->p.depth.block, nn = x->dim[0], c = x->dim[1], h = x->dim[2], w = x->dim[3];
    static const int dcr[6] = {0, 3, 4, 1, 5, 2}, crd[6] = {0, 1, 4, 2, 5, 3}, s2d[6] = {0, 3, 5, 1, 2, 4};
    const int *p = dcr; /* DCR: channel (i b + j) C' + c; CRD: c b b + i b + j */
    *view = (struct mps_shape){6, {nn, b, b, c / (b * b), h, w}};
    if (n->op == MPS_OP_SPACE_TO_DEPTH)
        *view = (struct mps_shape){6, {nn, c, h / b, b, w / b, b}}, p = s2d;
    else if (n->p.depth.crd)
        *view = (struct mps_shape){6, {nn, c / (b * b), b, b, h, w}}, p = crd;
    memcpy(perm, p, sizeof(int) * 6);
}

void mps_depth_transpose(const struct mps_node *n, const struct mps_shape *x, struct mps_shape *out6, int64_t src[6])
{
    struct mps_shape view;
    int perm[6];
    int64_t vs[MPS_MAX_DIMS];
    mps_depth_view(n, x, &view, perm);
    mps_shape_strides(&view, vs);
    *out6 = (struct mps_shape){6, {0}};
    for (int i = 0; i < 6; i++)
        out6->dim[i] = view.dim[perm[i]], src[i] = vs[perm[i]];
}

const char *mps_node_label(const struct mps_node *n, char *buf, size_t size)
{
    const struct mps_fused_act *act = mps_node_act(n);
    bool on = act && act->on;
    snprintf(buf, size, "%s%s%s", mps_op_name(n->op), on ? "+" : "", on ? mps_op_name(act->op) : "");
    return buf;
}

/* Kahn's algorithm, O(nodes + edges). A graph already in order (ONNX asks
   for that, and exporters write it so) keeps its order: the sort only runs
   when some node reads a value written after it. */
enum mps_status mps_graph_sort(struct mps_graph *g, struct mps_error *err)
{
    enum mps_status st = MPS_OK;
    int nn = g->n_nodes, nv = g->n_values, n_use = 0;
    for (int k = 0; k < nn; k++)
        n_use += g->nodes[k].n_in;
    bool *is_input = calloc((size_t)nv + 1, sizeof *is_input);
    int *pending = calloc((size_t)nn + 1, sizeof *pending); /* unmet inputs per node */
    int *first = calloc((size_t)nv + 2, sizeof *first);      /* readers of value v: use[first[v] .. first[v + 1]) */
    int *use = malloc(sizeof *use * ((size_t)n_use + 1));
    int *order = malloc(sizeof *order * ((size_t)nn + 1)); /* the sorted nodes, and Kahn's queue */
    struct mps_node *sorted = malloc(sizeof *sorted * ((size_t)nn + 1));
    if (!is_input || !pending || !first || !use || !order || !sorted) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        goto out;
    }
    for (int i = 0; i < g->n_inputs; i++)
        is_input[g->inputs[i]] = true;
    bool in_order = true;
    for (int k = 0; k < nn; k++) {
        const struct mps_node *n = &g->nodes[k];
        for (int i = 0; i < n->n_in; i++) {
            int v = n->in[i];
            if (v < 0)
                continue;
            const struct mps_value *val = &g->values[v];
            if (val->producer >= 0) {
                pending[k]++;
                first[v + 2]++;
                in_order = in_order && val->producer < k;
            } else if (!val->data && !is_input[v]) {
                st = mps_fail(err, MPS_ERR_MODEL, "node '%s' (%s): input '%s' is not a graph input, an initializer "
                              "or any node's output", n->name, mps_op_name(n->op), val->name);
                goto out;
            }
        }
    }
    if (in_order)
        goto outputs;
    for (int v = 0; v < nv; v++) /* counts at first[v + 2] into starts at first[v + 1], then filled below */
        first[v + 2] += first[v + 1];
    for (int k = 0; k < nn; k++)
        for (int i = 0; i < g->nodes[k].n_in; i++) {
            int v = g->nodes[k].in[i];
            if (v >= 0 && g->values[v].producer >= 0)
                use[first[v + 1]++] = k;
        }
    int count = 0;
    for (int k = 0; k < nn; k++)
        if (pending[k] == 0)
            order[count++] = k;
    for (int head = 0; head < count; head++) {
        const struct mps_node *p = &g->nodes[order[head]];
        for (int o = 0; o < p->n_out; o++)
            for (int u = first[p->out[o]]; u < first[p->out[o] + 1]; u++)
                if (--pending[use[u]] == 0)
                    order[count++] = use[u];
    }
    if (count < nn) {
        /* each node left waits on a node left: stepping back nn times lands on a cycle */
        int k = 0;
        while (pending[k] == 0)
            k++;
        for (int step = 0; step < nn; step++) {
            const struct mps_node *n = &g->nodes[k];
            for (int i = 0; i < n->n_in; i++) {
                int p = n->in[i] >= 0 ? g->values[n->in[i]].producer : -1;
                if (p >= 0 && pending[p] > 0) {
                    k = p;
                    break;
                }
            }
        }
        st = mps_fail(err, MPS_ERR_MODEL, "the graph has a cycle through node '%s' (%s)", g->nodes[k].name,
                      mps_op_name(g->nodes[k].op));
        goto out;
    }
    for (int i = 0; i < g->n_values; i++)
        g->values[i].producer = -1;
    for (int i = 0; i < nn; i++) {
        sorted[i] = g->nodes[order[i]];
        for (int o = 0; o < sorted[i].n_out; o++)
            g->values[sorted[i].out[o]].producer = i;
    }
    if (nn)
        memcpy(g->nodes, sorted, sizeof *sorted * (size_t)nn);
outputs:
    for (int i = 0; i < g->n_outputs; i++) {
        const struct mps_value *v = &g->values[g->outputs[i]];
        if (v->producer < 0 && !v->data && !is_input[g->outputs[i]]) {
            st = mps_fail(err, MPS_ERR_MODEL, "graph output '%s' is never computed", v->name);
            goto out;
        }
    }
out:
    free(is_input);
    free(pending);
    free(first);
    free(use);
    free(order);
    free(sorted);
    return st;
}

bool mps_tile_view(const struct mps_shape *x, const int64_t *repeats, struct mps_shape *view, int64_t *src)
{
    int64_t st[MPS_MAX_DIMS];
    mps_shape_strides(x, st);
    view->ndim = 0;
    for (int i = 0; i < x->ndim; i++) {
        if (view->ndim + (repeats[i] != 1) + 1 > MPS_MAX_DIMS)
            return false;
        if (repeats[i] != 1) {
            src[view->ndim] = 0;
            view->dim[view->ndim++] = repeats[i];
        }
        src[view->ndim] = st[i];
        view->dim[view->ndim++] = x->dim[i];
    }
    return true;
}

int64_t mps_gather_elements_at(const struct mps_shape *x, const struct mps_shape *idx, int axis, int64_t o, int64_t v)
{
    int64_t off = 0, stride = 1;
    for (int d = idx->ndim - 1; d >= 0; d--) {
        int64_t i = o % idx->dim[d];
        o /= idx->dim[d];
        off += (d == axis ? v : i) * stride;
        stride *= x->dim[d];
    }
    return off;
}

void mps_nd_rows(const struct mps_shape *x, const struct mps_shape *idx, int b, int64_t *rows, int64_t *slice)
{
    int k = (int)idx->dim[idx->ndim - 1];
    *rows = 1, *slice = 1;
    for (int d = 0; d < idx->ndim - 1; d++)
        *rows *= idx->dim[d];
    for (int d = b + k; d < x->ndim; d++)
        *slice *= x->dim[d];
}

int64_t mps_nd_base(const struct mps_shape *x, const struct mps_shape *idx, int b, int64_t r, const int64_t *t)
{
    int k = (int)idx->dim[idx->ndim - 1];
    int64_t per_batch = 1, batch_rows = 1, off = 0, stride = 1;
    for (int d = b; d < idx->ndim - 1; d++)
        batch_rows *= idx->dim[d];
    for (int d = x->ndim - 1; d >= b; d--) {
        if (d < b + k)
            off += t[d - b] * stride;
        stride *= x->dim[d];
    }
    per_batch = stride; /* the elements of x.shape[b:] */
    return r / batch_rows * per_batch + off;
}

/* Constant index i of v made >= 0 against len (load checked the range). */
static int64_t mps_index_const(const struct mps_value *v, int64_t i, int64_t len)
{
    int64_t at = v->dtype == MPS_I64 ? ((const int64_t *)v->data)[i] : ((const int32_t *)v->data)[i];
    return at < 0 ? at + len : at;
}

int64_t mps_index_plan(const struct mps_graph *g, const struct mps_node *n, int64_t *off, bool *repeats)
{
    const struct mps_value *x = &g->values[n->in[0]], *ix = &g->values[n->in[1]];
    bool scatter = n->op == MPS_OP_SCATTER_ELEMENTS || n->op == MPS_OP_SCATTER_ND;
    int64_t count = scatter ? mps_shape_numel(&g->values[n->in[2]].shape) : mps_shape_numel(&g->values[n->out[0]].shape);
    if (repeats)
        *repeats = false;
    if (!off)
        return count;
    if (n->op == MPS_OP_GATHER_ELEMENTS || n->op == MPS_OP_SCATTER_ELEMENTS) {
        int axis = (int)(n->op == MPS_OP_GATHER_ELEMENTS ? n->p.axis.axis : n->p.index.axis);
        for (int64_t o = 0; o < count; o++)
            off[o] = mps_gather_elements_at(&x->shape, &ix->shape, axis, o,
                                            mps_index_const(ix, o, x->shape.dim[axis]));
    } else {
        int b = n->op == MPS_OP_GATHER_ND ? (int)n->p.index.batch_dims : 0;
        int64_t rows, slice, t[MPS_MAX_DIMS], k = ix->shape.dim[ix->shape.ndim - 1];
        mps_nd_rows(&x->shape, &ix->shape, b, &rows, &slice);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t j = 0; j < k; j++)
                t[j] = mps_index_const(ix, r * k + j, x->shape.dim[b + j]);
            int64_t base = mps_nd_base(&x->shape, &ix->shape, b, r, t);
            for (int64_t e = 0; e < slice; e++)
                off[r * slice + e] = base + e;
        }
    }
    if (!scatter)
        return count;
    int64_t n_out = mps_shape_numel(&x->shape), *last = malloc(sizeof(int64_t) * (size_t)(n_out + 1));
    if (!last)
        return -1;
    for (int64_t t = 0; t < n_out; t++)
        last[t] = -1;
    for (int64_t i = 0; i < count; i++) {
        if (last[off[i]] >= 0 && repeats)
            *repeats = true;
        last[off[i]] = i;
    }
    for (int64_t i = 0; i < count && n->p.index.reduction == MPS_SCATTER_NONE; i++)
        if (last[off[i]] != i)
            off[i] = -1; /* a later update overwrites this one */
    free(last);
    return count;
}

/* The deepest condition both a and b lie under (-1: none). */
static int mps_branch_common(const struct mps_branch *br, int a, int b)
{
    for (int x = a; x >= 0; x = br[x].parent)
        for (int y = b; y >= 0; y = br[y].parent)
            if (x == y)
                return x;
    return -1;
}

/* Whether every condition of b's chain is computed before node k. */
static bool mps_branch_ready(const struct mps_graph *g, const struct mps_branch *br, int b, int k)
{
    for (; b >= 0; b = br[b].parent)
        if (g->values[br[b].cond].producer >= k)
            return false;
    return true;
}

int mps_graph_branches(const struct mps_graph *g, int *guard, struct mps_branch *br)
{
    int guarded = 0;
    int *reader = malloc(sizeof *reader * ((size_t)g->n_values + 1)); /* per value: what its readers need so far */
    bool *read = calloc((size_t)g->n_values + 1, sizeof *read);
    if (!reader || !read) { /* every node runs */
        for (int k = 0; k < g->n_nodes; k++)
            guard[k] = -1;
        free(reader);
        free(read);
        return 0;
    }
    for (int i = 0; i < g->n_outputs; i++)
        read[g->outputs[i]] = true, reader[g->outputs[i]] = -1;
    for (int k = g->n_nodes - 1; k >= 0; k--) { /* readers before writers */
        const struct mps_node *n = &g->nodes[k];
        bool any = false;
        int need = -1;
        for (int o = 0; o < n->n_out; o++)
            if (read[n->out[o]]) {
                need = any ? mps_branch_common(br, need, reader[n->out[o]]) : reader[n->out[o]];
                any = true;
            }
        guard[k] = any && mps_branch_ready(g, br, need, k) ? need : -1;
        guarded += guard[k] >= 0;
        if (n->op == MPS_OP_IF)
            for (int side = 0; side < 2; side++)
                br[2 * k + side] = (struct mps_branch){.cond = n->in[0], .taken = side == 0, .parent = guard[k]};
        for (int i = 0; i < n->n_in; i++) {
            int v = n->in[i];
            if (v < 0)
                continue;
            int b = n->op != MPS_OP_IF || i == 0 ? guard[k] : 2 * k + (i > n->n_out); /* a branch's output */
            reader[v] = read[v] ? mps_branch_common(br, reader[v], b) : b;
            read[v] = true;
        }
    }
    free(reader);
    free(read);
    return guarded;
}

bool mps_branch_holds(const struct mps_branch *br, int b, bool (*value)(int v, void *ctx), void *ctx)
{
    for (; b >= 0; b = br[b].parent)
        if (value(br[b].cond, ctx) != br[b].taken)
            return false;
    return true;
}
