/* onnx_seq.c: sequences and optionals, resolved at load. A plan holds
   tensors only, so a sequence is a list of the graph's tensor values kept
   beside the name map (ctx->lists), and an optional an empty list or one
   holding a tensor or a sequence. The sequence ops edit lists with every
   position known once the model is loaded (constants, or inputs given as
   values) and map to tensor ops where they compute: SequenceAt and
   OptionalGetElement to an Identity, ConcatFromSequence to a Concat,
   SplitToSequence to Slices, SequenceMap to its body once per element (as
   a Loop is unrolled), SequenceLength and OptionalHasElement to constants.
   A Loop carries lists from one iteration to the next; an If decided at
   run time cannot choose between two (refused by name). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

const struct mps_onnx_list *mps_onnx_list_of(const struct mps_onnx_ctx *c, int v)
{
    return v >= 0 && v < c->n_lists ? c->lists[v] : NULL;
}

bool mps_onnx_set_list(struct mps_onnx_ctx *c, int v, enum mps_onnx_list_kind kind, const int *item, int n)
{
    if (v >= c->n_lists) {
        int cap = c->g->n_values + 64;
        struct mps_onnx_list **grown = realloc(c->lists, sizeof *grown * (size_t)cap);
        if (!grown)
            return false;
        memset(grown + c->n_lists, 0, sizeof *grown * (size_t)(cap - c->n_lists));
        c->lists = grown;
        c->n_lists = cap;
    }
    struct mps_onnx_list *l = mps_graph_alloc(c->g, sizeof *l + sizeof(int) * (size_t)n);
    if (!l)
        return false;
    l->kind = kind;
    l->n = n;
    if (n)
        memcpy(l->item, item, sizeof(int) * (size_t)n);
    c->lists[v] = l;
    return true;
}

enum mps_status mps_onnx_alias(struct mps_onnx_ctx *c, const char *name, int from, int to, struct mps_error *err)
{
    const struct mps_onnx_list *l = mps_onnx_list_of(c, from);
    if (!l)
        return mps_graph_add_node(c->g, MPS_OP_IDENTITY, name, &from, 1, &to, 1, NULL, err);
    return mps_onnx_set_list(c, to, l->kind, l->item, l->n) ? MPS_OK : mps_onnx_oom(err);
}

/* Input i of n as a sequence (an optional holding one too, where opt). */
static enum mps_status mps_onnx_seq_in(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i,
                                       const struct mps_onnx_list **l, struct mps_error *err)
{
    *l = i < n->n_in ? mps_onnx_list_of(c, n->in[i]) : NULL;
    if (!*l || (*l)->kind != MPS_LIST_SEQ)
        return mps_onnx_fail(n, err, "input %d is not a sequence", i);
    return MPS_OK;
}

/* Position input i of n (absent: def) within [lo, hi] of a sequence of
   len, negative ones counted from the end, into *at. */
static enum mps_status mps_onnx_position(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i, int64_t def,
                                         int64_t lo, int64_t hi, int64_t len, int64_t *at, struct mps_error *err)
{
    *at = def;
    if (i < n->n_in && n->in[i] >= 0 && !mps_onnx_known_int(c, n->in[i], at, err))
        return mps_onnx_fail(n, err,
                             "its position is computed at run time: mpsrun resolves sequences at load, which "
                             "needs it known then");
    if (*at < lo || *at > hi)
        return mps_onnx_fail(n, err, "position %lld is outside [%lld, %lld] for a sequence of %lld", (long long)*at,
                             (long long)lo, (long long)hi, (long long)len);
    if (*at < 0)
        *at += len;
    return MPS_OK;
}

/* Output 0 of n as the constant scalar x of dtype dt. */
static enum mps_status mps_onnx_scalar_out(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, enum mps_dtype dt,
                                           int64_t x, struct mps_error *err)
{
    struct mps_value *v = &c->g->values[n->out[0]];
    void *data = mps_graph_alloc(c->g, 8);
    if (!data)
        return mps_onnx_oom(err);
    mps_elem_set_int(data, dt, 0, x);
    v->data = data;
    v->dtype = dt;
    v->shape = (struct mps_shape){0, {0}};
    v->shape_known = true;
    return MPS_OK;
}

/* SequenceInsert (erase false: tensor input 1 at position input 2, the end
   by default) or SequenceErase (the position is input 1, the last by
   default). */
static enum mps_status mps_onnx_seq_edit(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, bool erase,
                                         struct mps_error *err)
{
    const struct mps_onnx_list *s;
    enum mps_status st = mps_onnx_seq_in(c, n, 0, &s, err);
    if (st)
        return st;
    int64_t len = s->n, at;
    if (!erase && (n->n_in < 2 || n->in[1] < 0 || mps_onnx_list_of(c, n->in[1])))
        return mps_onnx_fail(n, err, "input 1 must be a tensor");
    if (erase ? (st = mps_onnx_position(c, n, 1, -1, -len, len - 1, len, &at, err))
              : (st = mps_onnx_position(c, n, 2, len, -len, len, len, &at, err)))
        return st;
    if (len + 1 > MPS_ONNX_MAX_UNROLL)
        return mps_onnx_fail(n, err, "more than %d elements", MPS_ONNX_MAX_UNROLL);
    int item[MPS_ONNX_MAX_UNROLL], k = 0;
    for (int64_t j = 0; j <= len; j++) {
        if (!erase && j == at)
            item[k++] = n->in[1];
        if (j < len && !(erase && j == at))
            item[k++] = s->item[j];
    }
    return mps_onnx_set_list(c, n->out[0], MPS_LIST_SEQ, item, k) ? MPS_OK : mps_onnx_oom(err);
}

/* ConcatFromSequence: the elements joined along axis (new_axis: each given
   that axis first, as a stack). */
static enum mps_status mps_onnx_seq_concat(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, struct mps_error *err)
{
    const struct mps_onnx_list *s;
    int64_t axis, stack;
    enum mps_status st = mps_onnx_seq_in(c, n, 0, &s, err);
    if (st || (st = mps_attr_int(n, "axis", INT64_MIN, &axis, err)) ||
        (st = mps_attr_int(n, "new_axis", 0, &stack, err)))
        return st;
    if (axis == INT64_MIN || s->n < 1)
        return mps_onnx_fail(n, err, "it needs an axis and a sequence of at least one element");
    int parts[MPS_ONNX_MAX_UNROLL];
    union mps_op_params cat;
    mps_op_params_default(MPS_OP_CONCAT, &cat);
    cat.axis.axis = axis;
    for (int j = 0; j < s->n; j++) {
        parts[j] = s->item[j];
        if (!stack)
            continue;
        bool known;
        if ((st = mps_passes_fold_value(c->g, s->item[j], &known, err)))
            return st;
        int rank = c->g->values[s->item[j]].shape.ndim;
        int64_t a = axis < 0 ? axis + rank + 1 : axis;
        struct mps_shape one = {1, {1}};
        int axes = mps_onnx_const(c, n->name, MPS_I64, &one, &a);
        if (axes < 0 || (parts[j] = mps_onnx_temp(c, n->name)) < 0)
            return mps_onnx_oom(err);
        if ((st = mps_graph_add_node(c->g, MPS_OP_UNSQUEEZE, n->name, (int[]){s->item[j], axes}, 2, &parts[j], 1, NULL,
                                     err)))
            return st;
        cat.axis.axis = a;
    }
    return mps_graph_add_node(c->g, MPS_OP_CONCAT, n->name, parts, s->n, &n->out[0], 1, &cat, err);
}

/* SplitToSequence: the input cut along axis into pieces of the sizes input 1
   gives (one size: equal pieces, the last shorter; a list: each), or into
   single slices (dropping the axis unless keepdims) when it is absent. */
static enum mps_status mps_onnx_seq_split(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, struct mps_error *err)
{
    int64_t axis, keep;
    bool known;
    enum mps_status st;
    if ((st = mps_attr_int(n, "axis", 0, &axis, err)) || (st = mps_attr_int(n, "keepdims", 1, &keep, err)) ||
        (st = mps_passes_fold_value(c->g, n->in[0], &known, err)))
        return st;
    const struct mps_value *x = &c->g->values[n->in[0]];
    if (!x->shape_known)
        return mps_onnx_fail(n, err, "its input's shape is not known at load");
    if (axis < -x->shape.ndim || axis >= x->shape.ndim)
        return mps_onnx_fail(n, err, "axis %lld is outside a rank-%d input", (long long)axis, x->shape.ndim);
    axis += axis < 0 ? x->shape.ndim : 0;
    int64_t len = x->shape.dim[axis], size[MPS_ONNX_MAX_UNROLL];
    int pieces = 0;
    bool given = n->n_in > 1 && n->in[1] >= 0;
    if (given) {
        if ((st = mps_passes_fold_value(c->g, n->in[1], &known, err)))
            return st;
        const struct mps_value *sp = &c->g->values[n->in[1]];
        int64_t count = mps_shape_numel(&sp->shape);
        if (!known || sp->shape.ndim > 1 || (sp->dtype != MPS_I64 && sp->dtype != MPS_I32) ||
            count > MPS_ONNX_MAX_UNROLL)
            return mps_onnx_fail(n, err, "its split must be known at load: one size or a list of at most %d",
                                 MPS_ONNX_MAX_UNROLL);
        int64_t total = 0;
        for (int64_t j = 0; sp->shape.ndim == 1 && j < count; j++)
            total += size[pieces++] = mps_elem_get_int(sp->data, sp->dtype, j);
        for (int64_t each = sp->shape.ndim ? 0 : mps_elem_get_int(sp->data, sp->dtype, 0), at = 0;
             each > 0 && at < len && pieces < MPS_ONNX_MAX_UNROLL; at += each)
            total += size[pieces++] = len - at < each ? len - at : each;
        for (int j = 0; j < pieces; j++)
            if (size[j] < 0)
                total = -1;
        if (total != len)
            return mps_onnx_fail(n, err, "its split does not cut an axis of %lld into pieces", (long long)len);
    } else {
        if (len > MPS_ONNX_MAX_UNROLL)
            return mps_onnx_fail(n, err, "more than %d pieces", MPS_ONNX_MAX_UNROLL);
        for (; pieces < len; pieces++)
            size[pieces] = 1;
    }
    int item[MPS_ONNX_MAX_UNROLL];
    struct mps_shape one = {1, {1}};
    int axes = mps_onnx_const(c, n->name, MPS_I64, &one, &axis);
    for (int64_t j = 0, at = 0; j < pieces && !st; at += size[j++]) {
        int64_t end = at + size[j];
        int b = mps_onnx_const(c, n->name, MPS_I64, &one, &at), e = mps_onnx_const(c, n->name, MPS_I64, &one, &end);
        if (axes < 0 || b < 0 || e < 0 || (item[j] = mps_onnx_temp(c, n->name)) < 0)
            return mps_onnx_oom(err);
        st = mps_graph_add_node(c->g, MPS_OP_SLICE, n->name, (int[]){n->in[0], b, e, axes}, 4, &item[j], 1, NULL, err);
        if (!st && !given && !keep) {
            int sliced = item[j];
            if ((item[j] = mps_onnx_temp(c, n->name)) < 0)
                return mps_onnx_oom(err);
            st = mps_graph_add_node(c->g, MPS_OP_SQUEEZE, n->name, (int[]){sliced, axes}, 2, &item[j], 1, NULL, err);
        }
    }
    if (st)
        return st;
    return mps_onnx_set_list(c, n->out[0], MPS_LIST_SEQ, item, pieces) ? MPS_OK : mps_onnx_oom(err);
}

/* SequenceMap: its body once per element of the first input, each sequence
   input bound to its element, each tensor input to itself; output o the
   sequence of the body's output o. */
static enum mps_status mps_onnx_seq_map(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, struct mps_error *err)
{
    const struct mps_onnx_list *s;
    enum mps_status st = mps_onnx_seq_in(c, n, 0, &s, err);
    if (st)
        return st;
    if (n->n_in > 16 || n->n_out > 8)
        return mps_onnx_fail(n, err, "more than 16 inputs or 8 outputs");
    for (int i = 1; i < n->n_in; i++) {
        const struct mps_onnx_list *l = mps_onnx_list_of(c, n->in[i]);
        if (n->in[i] < 0 || (l && (l->kind != MPS_LIST_SEQ || l->n != s->n)))
            return mps_onnx_fail(n, err, "input %d is missing, or a sequence of another length than input 0's", i);
    }
    Onnx__GraphProto *b;
    if ((st = mps_onnx_body(n, "", &b, err)))
        return st;
    int *item = calloc((size_t)(8 * s->n + 1), sizeof *item), bind[16], out[8];
    if (!item)
        st = mps_onnx_oom(err);
    else if (b->n_input != (size_t)n->n_in || b->n_output != (size_t)n->n_out)
        st = mps_onnx_fail(n, err, "its body has %zu inputs and %zu outputs, the node %d and %d", b->n_input,
                           b->n_output, n->n_in, n->n_out);
    for (int k = 0; !st && k < s->n; k++) {
        for (int i = 0; i < n->n_in; i++) {
            const struct mps_onnx_list *l = mps_onnx_list_of(c, n->in[i]);
            bind[i] = l ? l->item[k] : n->in[i];
        }
        if (c->g->n_nodes > MPS_ONNX_MAX_UNROLLED_NODES)
            st = mps_onnx_fail(n, err, "more than %d nodes unrolled: too many", MPS_ONNX_MAX_UNROLLED_NODES);
        else if (!(st = mps_onnx_iteration(c, n, b, k, bind, out, err)))
            for (int o = 0; o < n->n_out; o++)
                item[o * s->n + k] = out[o];
    }
    for (int o = 0; !st && o < n->n_out; o++)
        if (n->out[o] >= 0 && !mps_onnx_set_list(c, n->out[o], MPS_LIST_SEQ, item + o * s->n, s->n))
            st = mps_onnx_oom(err);
    free(item);
    onnx__graph_proto__free_unpacked(b, NULL);
    return st;
}

/* Optional, OptionalHasElement, OptionalGetElement. */
static enum mps_status mps_onnx_optional(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, const char *op,
                                         struct mps_error *err)
{
    bool given = n->n_in > 0 && n->in[0] >= 0;
    const struct mps_onnx_list *l = given ? mps_onnx_list_of(c, n->in[0]) : NULL;
    if (!strcmp(op, "Optional")) {
        if (!given)
            return mps_onnx_set_list(c, n->out[0], MPS_LIST_OPT_NONE, NULL, 0) ? MPS_OK : mps_onnx_oom(err);
        if (l && l->kind != MPS_LIST_SEQ)
            return mps_onnx_fail(n, err, "an optional of an optional is not supported");
        return mps_onnx_set_list(c, n->out[0], l ? MPS_LIST_OPT_SEQ : MPS_LIST_OPT_TENSOR, l ? l->item : &n->in[0],
                                 l ? l->n : 1)
                   ? MPS_OK
                   : mps_onnx_oom(err);
    }
    bool none = !given || (l && l->kind == MPS_LIST_OPT_NONE);
    if (!strcmp(op, "OptionalHasElement"))
        return mps_onnx_scalar_out(c, n, MPS_BOOL, !none, err);
    if (none)
        return mps_onnx_fail(n, err, "its optional input is empty");
    if (!l || l->kind == MPS_LIST_SEQ)
        return mps_onnx_alias(c, n->name, n->in[0], n->out[0], err);
    if (l->kind == MPS_LIST_OPT_TENSOR)
        return mps_onnx_alias(c, n->name, l->item[0], n->out[0], err);
    return mps_onnx_set_list(c, n->out[0], MPS_LIST_SEQ, l->item, l->n) ? MPS_OK : mps_onnx_oom(err);
}

enum mps_status mps_onnx_seq_node(struct mps_onnx_ctx *c, struct mps_onnx_node *n, bool *mine, struct mps_error *err)
{
    const char *op = n->np->op_type;
    bool lists = false;
    for (int i = 0; i < n->n_in; i++)
        lists = lists || mps_onnx_list_of(c, n->in[i]);
    static const struct {
        const char *op, *attrs;
    } ops[] = {{"SequenceEmpty", "dtype"},
               {"SequenceConstruct", ""},
               {"SequenceInsert", ""},
               {"SequenceErase", ""},
               {"SequenceAt", ""},
               {"SequenceLength", ""},
               {"ConcatFromSequence", "axis new_axis"},
               {"SplitToSequence", "axis keepdims"},
               {"SequenceMap", "body"},
               {"Optional", "type"},
               {"OptionalHasElement", ""},
               {"OptionalGetElement", ""},
               {"Identity", ""}};
    bool onnx = !n->np->domain || !n->np->domain[0] || !strcmp(n->np->domain, "ai.onnx");
    const char *attrs = NULL;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0] && onnx && !attrs; k++)
        if (!strcmp(op, ops[k].op) && (lists || strcmp(op, "Identity")))
            attrs = ops[k].attrs;
    *mine = attrs != NULL;
    for (size_t i = 0; attrs && i < n->np->n_attribute; i++) {
        const char *a = n->np->attribute[i]->name ? n->np->attribute[i]->name : "";
        const char *at = a[0] ? strstr(attrs, a) : NULL;
        size_t len = strlen(a);
        if (!at || (at[len] != ' ' && at[len] != 0) || (at != attrs && at[-1] != ' '))
            return mps_onnx_fail(n, err, "attribute '%s' is not supported", a);
    }
    if (!*mine) {
        for (int i = 0; lists && i < n->n_in && strcmp(op, "Loop"); i++)
            if (mps_onnx_list_of(c, n->in[i]))
                return mps_onnx_fail(n, err,
                                     "input %d ('%s') is a sequence or optional: only the sequence ops read one", i,
                                     n->np->input[i]);
        return MPS_OK;
    }
    if (n->n_out != 1 && strcmp(op, "SequenceMap"))
        return mps_onnx_fail(n, err, "it must have one output");
    if (n->out[0] < 0)
        return MPS_OK; /* nothing reads it */
    if (!strcmp(op, "Identity"))
        return mps_onnx_alias(c, n->name, n->in[0], n->out[0], err);
    if (!strcmp(op, "SequenceEmpty"))
        return mps_onnx_set_list(c, n->out[0], MPS_LIST_SEQ, NULL, 0) ? MPS_OK : mps_onnx_oom(err);
    if (!strcmp(op, "SequenceConstruct")) {
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] < 0 || mps_onnx_list_of(c, n->in[i]))
                return mps_onnx_fail(n, err, "input %d is not a tensor", i);
        return mps_onnx_set_list(c, n->out[0], MPS_LIST_SEQ, n->in, n->n_in) ? MPS_OK : mps_onnx_oom(err);
    }
    if (!strcmp(op, "SequenceInsert") || !strcmp(op, "SequenceErase"))
        return mps_onnx_seq_edit(c, n, !strcmp(op, "SequenceErase"), err);
    if (!strcmp(op, "ConcatFromSequence"))
        return mps_onnx_seq_concat(c, n, err);
    if (!strcmp(op, "SplitToSequence"))
        return mps_onnx_seq_split(c, n, err);
    if (!strcmp(op, "SequenceMap"))
        return mps_onnx_seq_map(c, n, err);
    if (!strncmp(op, "Optional", 8))
        return mps_onnx_optional(c, n, op, err);
    const struct mps_onnx_list *s;
    enum mps_status st = mps_onnx_seq_in(c, n, 0, &s, err);
    if (st || !strcmp(op, "SequenceLength"))
        return st ? st : mps_onnx_scalar_out(c, n, MPS_I64, s->n, err);
    int64_t at; /* SequenceAt */
    if ((st = mps_onnx_position(c, n, 1, INT64_MIN, -(int64_t)s->n, s->n - 1, s->n, &at, err)))
        return st;
    return mps_onnx_alias(c, n->name, s->item[at], n->out[0], err);
}
