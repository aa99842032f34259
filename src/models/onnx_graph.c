/* onnx_graph.c: a GraphProto's nodes into the graph IR: the name map
   (values by their ONNX names), each node through the op mapping
   (onnx_ops.c), If, folded to the branch it takes or, decided at run time,
   both branches and an If node after them, and Loop and Scan, unrolled
   (sequences, which a Loop may carry: onnx_seq.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"
static size_t mps_onnx_hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The map again over n slots, from the values' names as they are now. */
static bool mps_onnx_map_rehash(struct mps_onnx_ctx *c, size_t n)
{
    int *slots = malloc(n * sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < n; i++)
        slots[i] = -1;
    for (int v = 0; v < c->g->n_values; v++) {
        size_t i = mps_onnx_hash(c->g->values[v].name) & (n - 1);
        while (slots[i] >= 0)
            i = (i + 1) & (n - 1);
        slots[i] = v;
    }
    free(c->slots);
    c->slots = slots;
    c->n_slots = n;
    return true;
}

static bool mps_onnx_map_grow(struct mps_onnx_ctx *c)
{
    return mps_onnx_map_rehash(c, c->n_slots ? c->n_slots * 2 : 256);
}

int mps_onnx_lookup(const struct mps_onnx_ctx *c, const char *name)
{
    if (!c->n_slots)
        return -1;
    for (size_t i = mps_onnx_hash(name) & (c->n_slots - 1);; i = (i + 1) & (c->n_slots - 1)) {
        int v = c->slots[i];
        if (v < 0)
            return -1;
        if (strcmp(c->g->values[v].name, name) == 0)
            return v;
    }
}

int mps_onnx_define(struct mps_onnx_ctx *c, const char *name, enum mps_dtype dt, const struct mps_shape *s)
{
    if (mps_onnx_lookup(c, name) >= 0)
        return -1;
    if ((size_t)(c->g->n_values + 1) * 2 > c->n_slots && !mps_onnx_map_grow(c))
        return -1;
    int v = mps_graph_add_value(c->g, name, dt, s);
    if (v < 0)
        return -1;
    size_t i = mps_onnx_hash(name) & (c->n_slots - 1);
    while (c->slots[i] >= 0)
        i = (i + 1) & (c->n_slots - 1);
    c->slots[i] = v;
    return v;
}

enum mps_status mps_onnx_oom(struct mps_error *err)
{
    return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
}

int mps_onnx_temp(struct mps_onnx_ctx *c, const char *hint)
{
    char name[300];
    do
        snprintf(name, sizeof name, "%.200s:%d", hint, c->n_generated++);
    while (mps_onnx_lookup(c, name) >= 0);
    return mps_onnx_define(c, name, MPS_F32, NULL);
}

int mps_onnx_const(struct mps_onnx_ctx *c, const char *hint, enum mps_dtype dt, const struct mps_shape *s,
                   const void *data)
{
    /* the shape copied first: s may be a value's own (quantization's weight fold), which defining the
       constant's value moves when the values grow (ASan, a fuzzed QDQ model: a read after the free) */
    struct mps_shape shape = *s;
    s = &shape;
    int v = mps_onnx_temp(c, hint);
    if (v < 0)
        return -1;
    int64_t n = mps_shape_numel(s);
    if (n < 0)
        return -1;
    size_t bytes = (size_t)n * mps_dtype_size(dt);
    void *copy = mps_graph_alloc(c->g, bytes);
    if (!copy)
        return -1;
    if (bytes && data)
        memcpy(copy, data, bytes);
    struct mps_value *val = &c->g->values[v];
    val->dtype = dt;
    val->shape = *s;
    val->shape_known = true;
    val->data = copy;
    return v;
}

/* The initializers of subgraph b (an If's branch what, a Loop's or Scan's body) as constants of the graph. */
static enum mps_status mps_onnx_initializers(struct mps_onnx_ctx *c, const struct mps_onnx_node *n,
                                             const Onnx__GraphProto *b, const char *what, struct mps_error *err)
{
    for (size_t i = 0; i < b->n_initializer; i++) {
        const Onnx__TensorProto *t = b->initializer[i];
        const char *name = t->name ? t->name : "";
        enum mps_dtype dt;
        struct mps_shape s;
        const void *data;
        enum mps_status st = mps_onnx_tensor(c, t, name, &dt, &s, &data, err);
        if (st)
            return st;
        int v = mps_onnx_define(c, name, dt, &s);
        if (v < 0)
            return mps_onnx_fail(n, err, "its %s's initializer '%s' takes a name already used", what, name);
        c->g->values[v].data = data;
    }
    return MPS_OK;
}

/* Maps branch side (1: then_branch, 0: else_branch) of If node n into the
   graph, its outputs' values into outs[n->n_out]. */
static enum mps_status mps_onnx_branch(struct mps_onnx_ctx *c, struct mps_onnx_node *n,
                                       const Onnx__AttributeProto *side, int *outs, struct mps_error *err)
{
    Onnx__GraphProto *b = onnx__graph_proto__unpack(NULL, side->g.len, side->g.data);
    if (!b)
        return mps_onnx_fail(n, err, "its %s does not decode", side->name);
    enum mps_status st = MPS_OK;
    if (b->n_output != (size_t)n->n_out)
        st = mps_onnx_fail(n, err, "its %s has %zu outputs, the If %d", side->name, b->n_output, n->n_out);
    if (!st)
        st = mps_onnx_initializers(c, n, b, side->name, err);
    c->depth++;
    if (!st)
        st = mps_onnx_nodes(c, b, err);
    c->depth--;
    for (int o = 0; !st && o < n->n_out; o++) {
        const char *name = b->output[o]->name ? b->output[o]->name : "";
        if ((outs[o] = mps_onnx_lookup(c, name)) < 0)
            st = mps_onnx_fail(n, err, "its %s's output '%s' is computed by no node", side->name, name);
    }
    onnx__graph_proto__free_unpacked(b, NULL);
    return st;
}

/* The values a branch of If node n made (from first on: initializers and
   node outputs, not outer names it read before they were defined) named
   "<If>/<side>/<name>": out of reach of the other branch and the nodes
   after the If, which may use the same names (a Loop's iteration: side "<k>"). */
static enum mps_status mps_onnx_branch_scope(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int first,
                                             const char *side, struct mps_error *err)
{
    char name[400];
    for (int v = first; v < c->g->n_values; v++) {
        struct mps_value *val = &c->g->values[v];
        if (val->producer < 0 && !val->data && !mps_onnx_list_of(c, v))
            continue;
        snprintf(name, sizeof name, "%.120s/%s/%.200s", n->name, side, val->name);
        if (!(val->name = mps_graph_strdup(c->g, name)))
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    return mps_onnx_map_rehash(c, c->n_slots) ? MPS_OK : mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
}

/* An If whose condition is known once the model is loaded is mapped as the
   branch it takes. One decided at run time maps both branches and an If
   node after them that passes on the taken one's outputs (MPS_OP_IF: the
   cpu backend runs only that branch's nodes; the GPU backends refuse it). */
static enum mps_status mps_onnx_if(struct mps_onnx_ctx *c, struct mps_onnx_node *n, struct mps_error *err)
{
    const Onnx__AttributeProto *branch[2] = {NULL, NULL};
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->np->attribute[i];
        int which = a->name && !strcmp(a->name, "then_branch")   ? 1
                    : a->name && !strcmp(a->name, "else_branch") ? 0
                                                                 : -1;
        if (which < 0)
            return mps_onnx_fail(n, err, "attribute '%s' is not supported", a->name ? a->name : "");
        branch[which] = a;
    }
    if (!branch[0] || !branch[1] || !branch[0]->has_g || !branch[1]->has_g || n->n_in != 1 || n->in[0] < 0)
        return mps_onnx_fail(n, err, "an If needs a condition, then_branch and else_branch");
    if (c->depth >= MPS_ONNX_MAX_NESTING)
        return mps_onnx_fail(n, err, "Ifs nested more than %d deep", MPS_ONNX_MAX_NESTING);
    bool known = false;
    enum mps_status st = mps_passes_fold_value(c->g, n->in[0], &known, err);
    if (st)
        return st;
    const struct mps_value *cond = &c->g->values[n->in[0]];
    if (known && (mps_shape_numel(&cond->shape) != 1 || (cond->dtype != MPS_BOOL && cond->dtype != MPS_U8)))
        return mps_onnx_fail(n, err, "its condition is %s of %lld elements, not one bool", mps_dtype_name(cond->dtype),
                             (long long)mps_shape_numel(&cond->shape));
    int outs[2][8], in[1 + 2 * 8];
    if (known) {
        if ((st = mps_onnx_branch(c, n, branch[((const uint8_t *)cond->data)[0] != 0], outs[0], err)))
            return st;
        for (int o = 0; o < n->n_out; o++) {
            char id_name[200];
            snprintf(id_name, sizeof id_name, "%s/out%d", n->name, o);
            if (n->out[o] >= 0 && (st = mps_onnx_alias(c, id_name, outs[0][o], n->out[o], err)))
                return st;
        }
        return MPS_OK;
    }
    for (int side = 1; side >= 0; side--) {
        int first = c->g->n_values;
        char outer[sizeof c->scope]; /* the branch's nodes named "<If>/<side>/<node>" (mps_onnx_nodes) */
        memcpy(outer, c->scope, sizeof outer);
        snprintf(c->scope, sizeof c->scope, "%.150s/%s/", n->name, side ? "then" : "else"); /* n->name: in outer */
        st = mps_onnx_branch(c, n, branch[side], outs[side], err);
        memcpy(c->scope, outer, sizeof outer);
        if (st || (st = mps_onnx_branch_scope(c, n, first, side ? "then" : "else", err)))
            return st;
    }
    in[0] = n->in[0];
    for (int o = 0; o < n->n_out; o++)
        if (mps_onnx_list_of(c, outs[0][o]) || mps_onnx_list_of(c, outs[1][o]))
            return mps_onnx_fail(n, err,
                                 "output %d is a sequence or optional and its condition is computed at run "
                                 "time: mpsrun resolves sequences at load",
                                 o);
    for (int o = 0; o < n->n_out; o++) {
        in[1 + o] = outs[1][o], in[1 + n->n_out + o] = outs[0][o];
        if (n->out[o] < 0 && (n->out[o] = mps_onnx_temp(c, n->name)) < 0) /* an output nothing reads */
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    return mps_graph_add_node(c->g, MPS_OP_IF, n->name, in, 1 + 2 * n->n_out, n->out, n->n_out, NULL, err);
}

bool mps_onnx_known_int(struct mps_onnx_ctx *c, int v, int64_t *x, struct mps_error *err)
{
    bool known = false;
    if (mps_passes_fold_value(c->g, v, &known, err) || !known || mps_shape_numel(&c->g->values[v].shape) != 1)
        return false;
    enum mps_dtype t = c->g->values[v].dtype; /* known once folded */
    if (!mps_dtype_is_int(t) && t != MPS_BOOL)
        return false;
    *x = mps_elem_get_int(c->g->values[v].data, t, 0);
    return true;
}

/* Body input i is bound through an Identity named as the input (or, a list,
   names it too); the body's values are renamed after it as an If's branches
   are. */
enum mps_status mps_onnx_iteration(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, const Onnx__GraphProto *b,
                                   int64_t k, const int *bind, int *out, struct mps_error *err)
{
    int first = c->g->n_values;
    char side[32], outer[sizeof c->scope];
    snprintf(side, sizeof side, "%lld", (long long)k);
    enum mps_status st = MPS_OK;
    for (size_t i = 0; i < b->n_input && !st; i++) {
        const char *name = b->input[i]->name ? b->input[i]->name : "";
        int v = name[0] ? mps_onnx_define(c, name, MPS_F32, NULL) : -1;
        if (name[0] && v < 0)
            return mps_onnx_fail(n, err, "its body's input '%s' takes a name already used", name);
        if (v >= 0)
            st = mps_onnx_alias(c, n->name, bind[i], v, err);
    }
    if (!st)
        st = mps_onnx_initializers(c, n, b, "body", err);
    memcpy(outer, c->scope, sizeof outer);
    snprintf(c->scope, sizeof c->scope, "%.150s/%s/", n->name, side);
    c->depth++;
    if (!st)
        st = mps_onnx_nodes(c, b, err);
    c->depth--;
    memcpy(c->scope, outer, sizeof outer);
    for (size_t o = 0; !st && o < b->n_output; o++) {
        const char *name = b->output[o]->name ? b->output[o]->name : "";
        if ((out[o] = mps_onnx_lookup(c, name)) < 0)
            return mps_onnx_fail(n, err, "its body's output '%s' is computed by no node", name);
    }
    return st ? st : mps_onnx_branch_scope(c, n, first, side, err);
}

/* Scan output s of node n: the steps' values step[0..count) (in that order,
   or reversed) stacked along a new axis, into out. */
static enum mps_status mps_onnx_stack(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, const int *step,
                                      int64_t count, int64_t axis, bool reverse, int out, struct mps_error *err)
{
    struct mps_shape one = {1, {1}};
    int axes = mps_onnx_const(c, n->name, MPS_I64, &one, &axis), parts[MPS_ONNX_MAX_UNROLL];
    union mps_op_params cat;
    mps_op_params_default(MPS_OP_CONCAT, &cat);
    cat.axis.axis = axis;
    if (count < 1)
        return mps_onnx_fail(n, err, "no iteration ran: its scan outputs have no shape");
    enum mps_status st = axes < 0 ? mps_fail(err, MPS_ERR_RUNTIME, "out of memory") : MPS_OK;
    for (int64_t j = 0; !st && j < count; j++) {
        if (mps_onnx_list_of(c, step[j]))
            return mps_onnx_fail(n, err, "a scan output is a sequence: only tensors stack");
        if ((parts[j] = mps_onnx_temp(c, n->name)) < 0)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        st = mps_graph_add_node(c->g, MPS_OP_UNSQUEEZE, n->name, (int[]){step[reverse ? count - 1 - j : j], axes}, 2,
                                &parts[j], 1, NULL, err);
    }
    return st ? st : mps_graph_add_node(c->g, MPS_OP_CONCAT, n->name, parts, (int)count, &out, 1, &cat, err);
}

enum mps_status mps_onnx_body(const struct mps_onnx_node *n, const char *also, Onnx__GraphProto **b,
                              struct mps_error *err)
{
    const Onnx__AttributeProto *body = NULL;
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->np->attribute[i];
        if (a->name && !strcmp(a->name, "body") && a->has_g)
            body = a;
        else if (!a->name || !strstr(also, a->name))
            return mps_onnx_fail(n, err, "attribute '%s' is not supported", a->name ? a->name : "");
    }
    if (!body)
        return mps_onnx_fail(n, err, "no body");
    if (!(*b = onnx__graph_proto__unpack(NULL, body->g.len, body->g.data)))
        return mps_onnx_fail(n, err, "its body does not decode");
    return MPS_OK;
}

/* A Loop whose trip count and condition are known once the model is loaded
   (constants, shapes, or inputs given as values) is unrolled: its body
   mapped once an iteration (mps_onnx_iteration), the carried values handed
   on, each scan output stacked along a new first axis. One whose count or
   condition is computed at run time is refused by name, and so is one of
   more than MPS_ONNX_MAX_UNROLL iterations. */
static enum mps_status mps_onnx_loop(struct mps_onnx_ctx *c, struct mps_onnx_node *n, struct mps_error *err)
{
    int carried = n->n_in - 2;
    if (carried < 0 || carried > 16)
        return mps_onnx_fail(n, err, "a Loop needs M, cond and at most 16 carried values");
    if (c->depth >= MPS_ONNX_MAX_NESTING)
        return mps_onnx_fail(n, err, "subgraphs nested more than %d deep", MPS_ONNX_MAX_NESTING);
    int64_t trips = -1, cond = 1;
    if ((n->in[0] >= 0 && !mps_onnx_known_int(c, n->in[0], &trips, err)) ||
        (n->in[1] >= 0 && !mps_onnx_known_int(c, n->in[1], &cond, err)))
        return mps_onnx_fail(n, err,
                             "its trip count or condition is computed at run time or not an integer: mpsrun "
                             "unrolls a Loop at load, which needs them known integers then");
    Onnx__GraphProto *b;
    enum mps_status st = mps_onnx_body(n, "", &b, err);
    if (st)
        return st;
    int scans = (int)b->n_output - 1 - carried, bind[18], out[1 + 16 + 64], *scan = NULL;
    if (b->n_input != (size_t)(2 + carried) || scans < 0 || scans > 64 || n->n_out > carried + scans)
        st = mps_onnx_fail(n, err,
                           "its body has %zu inputs and %zu outputs for %d carried values (at most 64 scan "
                           "outputs)",
                           b->n_input, b->n_output, carried);
    else if (!(scan = calloc((size_t)(scans * MPS_ONNX_MAX_UNROLL + 1), sizeof *scan)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    memcpy(bind + 2, n->in + 2, sizeof(int) * (size_t)(carried > 0 ? carried : 0));
    struct mps_shape one = {0, {0}};
    int64_t k = 0;
    const uint8_t yes = 1;
    for (bool go = cond != 0; !st && go && (trips < 0 || k < trips); k++) {
        if (k >= MPS_ONNX_MAX_UNROLL || c->g->n_nodes > MPS_ONNX_MAX_UNROLLED_NODES) {
            st = mps_onnx_fail(n, err, "more than %d iterations, or %d nodes unrolled: too many to unroll",
                               MPS_ONNX_MAX_UNROLL, MPS_ONNX_MAX_UNROLLED_NODES);
            break;
        }
        bind[0] = mps_onnx_const(c, n->name, MPS_I64, &one, &k);
        bind[1] = mps_onnx_const(c, n->name, MPS_BOOL, &one, &yes);
        if (bind[0] < 0 || bind[1] < 0 || (st = mps_onnx_iteration(c, n, b, k, bind, out, err)))
            break;
        if (!mps_onnx_known_int(c, out[0], &cond, err))
            st = mps_onnx_fail(n, err,
                               "its body computes its condition at run time: mpsrun unrolls a Loop at load, "
                               "which needs it known then");
        go = cond != 0;
        memcpy(bind + 2, out + 1, sizeof(int) * (size_t)carried);
        for (int s = 0; s < scans; s++)
            scan[s * MPS_ONNX_MAX_UNROLL + k] = out[1 + carried + s];
    }
    for (int i = 0; !st && i < n->n_out && i < carried; i++)
        if (n->out[i] >= 0)
            st = mps_onnx_alias(c, n->name, bind[2 + i], n->out[i], err);
    for (int s = 0; !st && carried + s < n->n_out; s++) /* scan output s: [k, ...] */
        if (n->out[carried + s] >= 0)
            st = mps_onnx_stack(c, n, scan + s * MPS_ONNX_MAX_UNROLL, k, 0, false, n->out[carried + s], err);
    free(scan);
    onnx__graph_proto__free_unpacked(b, NULL);
    return st;
}

/* Gathers slice at along axis of x (the axis dropped) into a new value *out. */
static enum mps_status mps_onnx_slice(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int x, int64_t axis,
                                      int64_t at, int *out, struct mps_error *err)
{
    struct mps_shape one = {0, {0}};
    union mps_op_params gp;
    mps_op_params_default(MPS_OP_GATHER, &gp);
    gp.axis.axis = axis;
    int ix = mps_onnx_const(c, n->name, MPS_I64, &one, &at);
    if (ix < 0 || (*out = mps_onnx_temp(c, n->name)) < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    return mps_graph_add_node(c->g, MPS_OP_GATHER, n->name, (int[]){x, ix}, 2, out, 1, &gp, err);
}

/* Scan of opset 8: input 0 sequence_lens (omitted, or every length the
   sequence's), then the states [batch, ...] and the scan inputs [batch, len,
   ...]; unrolled per batch element and step (as opset 9's is per step), each
   scan input walked from the end where its direction is 1; the states and
   the scan outputs ([batch, len, ...], in the order of the steps) stacked
   over the batch. */
static enum mps_status mps_onnx_scan8(struct mps_onnx_ctx *c, struct mps_onnx_node *n, struct mps_error *err)
{
    int64_t m, dir[16] = {0}, batch = -1, len = -1;
    int n_dir;
    enum mps_status st;
    if ((st = mps_attr_int(n, "num_scan_inputs", -1, &m, err)) ||
        (st = mps_attr_ints(n, "directions", dir, 16, &n_dir, err)))
        return st;
    int states = n->n_in - 1 - (int)m;
    if (m < 1 || m > 16 || states < 0 || states > 16 || (n_dir >= 0 && n_dir != m))
        return mps_onnx_fail(n, err, "num_scan_inputs %lld or its directions do not fit its %d inputs", (long long)m,
                             n->n_in);
    if (c->depth >= MPS_ONNX_MAX_NESTING)
        return mps_onnx_fail(n, err, "subgraphs nested more than %d deep", MPS_ONNX_MAX_NESTING);
    for (int j = 1; j < n->n_in; j++) { /* the batch of all, the length of the scan inputs, from their shapes */
        bool known;
        if (n->in[j] < 0 || (st = mps_passes_fold_value(c->g, n->in[j], &known, err)))
            return n->in[j] < 0 ? mps_onnx_fail(n, err, "input %d is missing", j) : st;
        const struct mps_shape *s = &c->g->values[n->in[j]].shape;
        bool scan = j > states;
        if (!c->g->values[n->in[j]].shape_known || s->ndim < (scan ? 2 : 1) || (batch >= 0 && s->dim[0] != batch) ||
            (scan && len >= 0 && s->dim[1] != len))
            return mps_onnx_fail(n, err, "input %d has no batch (and length) known at load, or others than input 1's",
                                 j);
        batch = s->dim[0], len = scan ? s->dim[1] : len;
    }
    int64_t lens[64];
    bool known = false;
    if (n->in[0] >= 0) { /* sequence_lens: only the full length is supported */
        if ((st = mps_passes_fold_value(c->g, n->in[0], &known, err)))
            return st;
        const struct mps_value *sl = &c->g->values[n->in[0]];
        for (int64_t b = 0; known && b < batch && b < 64; b++)
            lens[b] = mps_elem_get_int(sl->data, sl->dtype, b);
        for (int64_t b = 0; known && b < batch; b++)
            known = b < 64 && lens[b] == len && mps_shape_numel(&sl->shape) == batch;
        if (!known)
            return mps_onnx_fail(n, err,
                                 "sequence_lens other than the full length (or computed at run time) are not "
                                 "supported");
    }
    if (batch * len > MPS_ONNX_MAX_UNROLL)
        return mps_onnx_fail(n, err, "%lld steps over the batch: more than the %d it unrolls", (long long)(batch * len),
                             MPS_ONNX_MAX_UNROLL);
    Onnx__GraphProto *b;
    if ((st = mps_onnx_body(n, "num_scan_inputs directions", &b, err)))
        return st;
    int outs = (int)b->n_output - states, bind[32], out[16 + 64], *scan = NULL, *fin = NULL;
    if (b->n_input != (size_t)(states + m) || outs < 0 || outs > 64 || n->n_out > states + outs)
        st = mps_onnx_fail(n, err, "its body has %zu inputs and %zu outputs for %d states and %lld scan inputs",
                           b->n_input, b->n_output, states, (long long)m);
    else if (!(scan = calloc((size_t)(outs * MPS_ONNX_MAX_UNROLL + 1), sizeof *scan)) ||
             !(fin = calloc((size_t)(16 * batch + 1), sizeof *fin)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int64_t bi = 0; !st && bi < batch; bi++) {
        int rows[16];
        for (int i = 0; !st && i < states; i++)
            st = mps_onnx_slice(c, n, n->in[1 + i], 0, bi, &bind[i], err);
        for (int j = 0; !st && j < m; j++)
            st = mps_onnx_slice(c, n, n->in[1 + states + j], 0, bi, &rows[j], err);
        for (int64_t t = 0; !st && t < len; t++) {
            for (int j = 0; !st && j < m; j++)
                st = mps_onnx_slice(c, n, rows[j], 0, dir[j] ? len - 1 - t : t, &bind[states + j], err);
            if (!st && !(st = mps_onnx_iteration(c, n, b, bi * len + t, bind, out, err))) {
                memcpy(bind, out, sizeof(int) * (size_t)states);
                for (int s = 0; s < outs; s++)
                    scan[s * MPS_ONNX_MAX_UNROLL + bi * len + t] = out[states + s];
            }
        }
        for (int i = 0; i < states; i++)
            fin[i * batch + bi] = bind[i];
    }
    for (int i = 0; !st && i < n->n_out && i < states; i++) /* final states over the batch */
        if (n->out[i] >= 0)
            st = mps_onnx_stack(c, n, fin + i * batch, batch, 0, false, n->out[i], err);
    for (int s = 0; !st && states + s < n->n_out; s++) { /* each element's steps, then over the batch */
        int per[MPS_ONNX_MAX_UNROLL];
        for (int64_t bi = 0; !st && bi < batch; bi++)
            if ((per[bi] = mps_onnx_temp(c, n->name)) < 0)
                st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
            else
                st = mps_onnx_stack(c, n, scan + s * MPS_ONNX_MAX_UNROLL + bi * len, len, 0, false, per[bi], err);
        if (!st && n->out[states + s] >= 0)
            st = mps_onnx_stack(c, n, per, batch, 0, false, n->out[states + s], err);
    }
    free(scan);
    free(fin);
    onnx__graph_proto__free_unpacked(b, NULL);
    return st;
}

/* Scan (opset 9 on), unrolled at load over its scan inputs' length (known
   from their shapes): each step's body gets the states and each scan
   input's slice at that step (Gather along its axis, from the end where its
   direction is 1), hands the states on, and each scan output is stacked
   along its axis (in reverse where its direction is 1). */
static enum mps_status mps_onnx_scan(struct mps_onnx_ctx *c, struct mps_onnx_node *n, struct mps_error *err)
{
    int64_t m, ax_in[16] = {0}, dir_in[16] = {0}, ax_out[64] = {0}, dir_out[64] = {0};
    int n_ax_in, n_dir_in, n_ax_out, n_dir_out;
    enum mps_status st;
    if (c->opset < 9)
        return mps_onnx_scan8(c, n, err);
    if ((st = mps_attr_int(n, "num_scan_inputs", -1, &m, err)) ||
        (st = mps_attr_ints(n, "scan_input_axes", ax_in, 16, &n_ax_in, err)) ||
        (st = mps_attr_ints(n, "scan_input_directions", dir_in, 16, &n_dir_in, err)) ||
        (st = mps_attr_ints(n, "scan_output_axes", ax_out, 64, &n_ax_out, err)) ||
        (st = mps_attr_ints(n, "scan_output_directions", dir_out, 64, &n_dir_out, err)))
        return st;
    int states = n->n_in - (int)m;
    if (m < 1 || m > 16 || states < 0 || states > 16 || (n_ax_in >= 0 && n_ax_in != m) ||
        (n_dir_in >= 0 && n_dir_in != m))
        return mps_onnx_fail(n, err,
                             "num_scan_inputs %lld, its axes or directions do not fit its %d inputs (at most "
                             "16 states and 16 scan inputs)",
                             (long long)m, n->n_in);
    if (c->depth >= MPS_ONNX_MAX_NESTING)
        return mps_onnx_fail(n, err, "subgraphs nested more than %d deep", MPS_ONNX_MAX_NESTING);
    int64_t len = -1;
    for (int j = 0; j < m; j++) { /* every scan input's length along its axis, known from its shape */
        bool known;
        int v = n->in[states + j];
        if (v < 0 || (st = mps_passes_fold_value(c->g, v, &known, err)))
            return v < 0 ? mps_onnx_fail(n, err, "scan input %d is missing", j) : st;
        const struct mps_value *x = &c->g->values[v];
        int64_t a = ax_in[j] < 0 ? ax_in[j] + x->shape.ndim : ax_in[j];
        if (!x->shape_known || a < 0 || a >= x->shape.ndim || (len >= 0 && x->shape.dim[a] != len))
            return mps_onnx_fail(n, err,
                                 "scan input %d has no known length along axis %lld, or another than the "
                                 "first's",
                                 j, (long long)ax_in[j]);
        len = x->shape.dim[a], ax_in[j] = a;
    }
    Onnx__GraphProto *b;
    if ((st = mps_onnx_body(n,
                            "num_scan_inputs scan_input_axes scan_input_directions scan_output_axes "
                            "scan_output_directions",
                            &b, err)))
        return st;
    int outs = (int)b->n_output - states, bind[32], out[16 + 64], *scan = NULL;
    if (b->n_input != (size_t)(states + m) || outs < 0 || outs > 64 || n->n_out > states + outs ||
        (n_ax_out >= 0 && n_ax_out != outs) || (n_dir_out >= 0 && n_dir_out != outs))
        st = mps_onnx_fail(n, err, "its body has %zu inputs and %zu outputs for %d states and %lld scan inputs",
                           b->n_input, b->n_output, states, (long long)m);
    else if (len > MPS_ONNX_MAX_UNROLL)
        st = mps_onnx_fail(n, err, "%lld steps: more than the %d it unrolls", (long long)len, MPS_ONNX_MAX_UNROLL);
    else if (!(scan = calloc((size_t)(outs * MPS_ONNX_MAX_UNROLL + 1), sizeof *scan)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    memcpy(bind, n->in, sizeof(int) * (size_t)states);
    for (int64_t t = 0; !st && t < len; t++) {
        if (c->g->n_nodes > MPS_ONNX_MAX_UNROLLED_NODES) {
            st = mps_onnx_fail(n, err, "more than %d nodes unrolled: too many", MPS_ONNX_MAX_UNROLLED_NODES);
            break;
        }
        for (int j = 0; !st && j < m; j++)
            st = mps_onnx_slice(c, n, n->in[states + j], ax_in[j], dir_in[j] ? len - 1 - t : t, &bind[states + j], err);
        if (!st && !(st = mps_onnx_iteration(c, n, b, t, bind, out, err))) {
            memcpy(bind, out, sizeof(int) * (size_t)states);
            for (int s = 0; s < outs; s++)
                scan[s * MPS_ONNX_MAX_UNROLL + t] = out[states + s];
        }
    }
    for (int i = 0; !st && i < n->n_out && i < states; i++)
        if (n->out[i] >= 0)
            st = mps_graph_add_node(c->g, MPS_OP_IDENTITY, n->name, &bind[i], 1, &n->out[i], 1, NULL, err);
    for (int s = 0; !st && states + s < n->n_out; s++)
        if (n->out[states + s] >= 0)
            st = mps_onnx_stack(c, n, scan + s * MPS_ONNX_MAX_UNROLL, len, ax_out[s], dir_out[s] != 0,
                                n->out[states + s], err);
    free(scan);
    onnx__graph_proto__free_unpacked(b, NULL);
    return st;
}

enum mps_status mps_onnx_nodes(struct mps_onnx_ctx *c, const Onnx__GraphProto *gp, struct mps_error *err)
{
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *np = gp->node[k];
        char name[400];
        if (np->name && np->name[0])
            snprintf(name, sizeof name, "%s%.200s", c->scope, np->name);
        else
            snprintf(name, sizeof name, "%s%.100s_%zu", c->scope, np->op_type ? np->op_type : "node", k);
        struct mps_onnx_node n = {.np = np, .name = name};
        if (!np->op_type)
            return mps_onnx_fail(&n, err, "no op_type");
        const char *domain = np->domain ? np->domain : "";
        if (domain[0] && strcmp(domain, "ai.onnx") != 0 && strcmp(domain, "com.microsoft") != 0)
            return mps_onnx_fail(&n, err,
                                 "op %s of domain '%s' is not supported (the default ONNX domain is, and "
                                 "com.microsoft's QLinear ops)",
                                 np->op_type, domain);
        if (np->n_input > sizeof n.in / sizeof n.in[0] || np->n_output > sizeof n.out / sizeof n.out[0])
            return mps_onnx_fail(&n, err, "%zu inputs and %zu outputs are more than mpsrun takes", np->n_input,
                                 np->n_output);
        n.n_in = (int)np->n_input;
        for (size_t i = np->n_input; i < sizeof n.in / sizeof n.in[0]; i++)
            n.in[i] = -1; /* a mapper reading past the node's inputs finds them omitted */
        for (int i = 0; i < n.n_in; i++) {
            const char *in = np->input[i];
            n.in[i] = in && in[0] ? mps_onnx_lookup(c, in) : -1;
            if (in && in[0] && n.in[i] < 0) /* defined later (unsorted file) or never: add it, sort decides */
                n.in[i] = mps_onnx_define(c, in, MPS_F32, NULL);
            if (in && in[0] && n.in[i] < 0)
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
        n.n_out = (int)np->n_output;
        for (int i = 0; i < n.n_out; i++) {
            const char *out = np->output[i];
            n.out[i] = -1;
            if (!out || !out[0])
                continue;
            int v = mps_onnx_lookup(c, out);
            if (v >= 0 && (c->g->values[v].producer >= 0 || c->g->values[v].data || c->g->values[v].shape_known ||
                           mps_onnx_list_of(c, v)))
                return mps_onnx_fail(&n, err, "output '%s' is already defined elsewhere", out);
            n.out[i] = v >= 0 ? v : mps_onnx_define(c, out, MPS_F32, NULL);
            if (n.out[i] < 0)
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
        bool seq = false;
        enum mps_status st = mps_onnx_seq_node(c, &n, &seq, err);
        if (st || seq) {
            if (st)
                return st;
            continue;
        }
        const char *domain_ok = np->domain && np->domain[0] ? np->domain : "";
        st = domain_ok[0]                   ? mps_onnx_map_node(c, &n, err)
             : !strcmp(np->op_type, "If")   ? mps_onnx_if(c, &n, err)
             : !strcmp(np->op_type, "Loop") ? mps_onnx_loop(c, &n, err)
             : !strcmp(np->op_type, "Scan") ? mps_onnx_scan(c, &n, err)
                                            : mps_onnx_map_node(c, &n, err);
        if (st)
            return st;
    }
    return MPS_OK;
}
