#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool mps_node_gpu_dtypes(const struct mps_graph *g, const struct mps_node *n)
{
    enum mps_op op = n->op;
    enum mps_dtype first = n->n_in > 0 && n->in[0] >= 0 ? g->values[n->in[0]].dtype : MPS_F32;
    /* integer arithmetic in i64 and i32; float math in f32 and f16; comparisons of those and u8, bool */
    bool arith = op == MPS_OP_ADD || op == MPS_OP_SUB || op == MPS_OP_MUL || op == MPS_OP_DIV || op == MPS_OP_MOD ||
                 op == MPS_OP_MAX || op == MPS_OP_MIN || op == MPS_OP_SUM || op == MPS_OP_CUM_SUM;
    bool floats = op == MPS_OP_NEG || op == MPS_OP_ABS || op == MPS_OP_SIGN || op == MPS_OP_RELU || op == MPS_OP_CLIP ||
                  op == MPS_OP_POW || op == MPS_OP_MEAN || op == MPS_OP_MAX_POOL || mps_op_is_reduce(op);
    bool logic = mps_op_is_logic(op) && op != MPS_OP_WHERE;
    for (int i = 0; i < n->n_in + n->n_out; i++) {
        int v = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
        if (v < 0)
            continue;
        enum mps_dtype t = g->values[v].dtype;
        bool wide_int = t == MPS_I64 || t == MPS_I32, half = t == MPS_F32 || t == MPS_F16;
        if (!half && !wide_int && t != MPS_U8 && t != MPS_BOOL && t != MPS_F64)
            return false; /* the narrow integers and bf16: no GPU kernel takes them */
        if (i >= n->n_in || (i > 0 && mps_op_is_reduce(op))) /* outputs; a reduction's axes */
            continue;
        if ((arith || floats || logic) && t != first)
            return false;
        if ((floats && !half) || (arith && !half && !wide_int) || (logic && t == MPS_F64))
            return false;
    }
    return true;
}

/* Whether be runs node n: its supports(), and a run_shape for a bounded output. */
static bool mps_backend_runs(const struct mps_backend *be, const struct mps_graph *g, const struct mps_node *n)
{
    for (int i = 0; !be->run_shape && i < n->n_out; i++)
        if (g->values[n->out[i]].bounded)
            return false;
    return !be->supports || be->supports(g, n);
}

int mps_backend_unsupported(const struct mps_backend *be, const struct mps_graph *g, char *buf, size_t size)
{
    int count = 0;
    size_t used = 0;
    if (size)
        buf[0] = '\0';
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        if (mps_backend_runs(be, g, n))
            continue;
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, "%snode '%s' (%s)", count ? ", " : "", n->name,
                                     mps_op_name(n->op));
        count++;
    }
    return count;
}

enum mps_status mps_plan_compile(const struct mps_backend *be, const struct mps_graph *g,
                                 const struct mps_compile_opts *opts, struct mps_plan **plan, struct mps_error *err)
{
    *plan = NULL;
    struct mps_plan *p = calloc(1, sizeof *p);
    if (!p)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    p->backend = be;
    p->graph = g;
    enum mps_status st = be->compile(g, opts, &p->state, err);
    if (st) {
        free(p);
        return st;
    }
    *plan = p;
    return MPS_OK;
}

static enum mps_status mps_plan_check(const struct mps_graph *g, int value, const struct mps_tensor *t,
                                      const char *what, struct mps_error *err)
{
    const struct mps_value *v = &g->values[value];
    if (t->dtype != v->dtype || !mps_shape_eq(&t->shape, &v->shape) || (!t->data && mps_shape_numel(&v->shape))) {
        char a[160], b[160];
        return mps_fail(err, MPS_ERR_INPUT, "%s '%s' must be %s %s, got %s %s", what, v->name,
                        mps_dtype_name(v->dtype), mps_shape_str(&v->shape, a, sizeof a), mps_dtype_name(t->dtype),
                        mps_shape_str(&t->shape, b, sizeof b));
    }
    return MPS_OK;
}

enum mps_status mps_plan_run(struct mps_plan *plan, const struct mps_tensor *in, struct mps_tensor *out,
                             struct mps_error *err)
{
    const struct mps_graph *g = plan->graph;
    for (int i = 0; i < g->n_inputs; i++) {
        enum mps_status st = mps_plan_check(g, g->inputs[i], &in[i], "input", err);
        if (st)
            return st;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        enum mps_status st = mps_plan_check(g, g->outputs[i], &out[i], "output", err);
        if (st)
            return st;
    }
    return plan->backend->run(plan->state, in, out, err);
}

void mps_plan_output_shape(const struct mps_plan *plan, int i, struct mps_shape *shape)
{
    const struct mps_value *v = &plan->graph->values[plan->graph->outputs[i]];
    if (v->bounded && plan->backend->run_shape)
        plan->backend->run_shape(plan->state, i, shape);
    else
        *shape = v->shape;
}

enum mps_status mps_plan_host_io(struct mps_plan *plan, int slot, struct mps_tensor *in, struct mps_tensor *out,
                                 struct mps_error *err)
{
    if (!plan->backend->host_io)
        return mps_fail(err, MPS_ERR_USAGE, "the %s backend has no staging of its own", plan->backend->name);
    return plan->backend->host_io(plan->state, slot, in, out, err);
}

void mps_plan_rest(struct mps_plan *plan)
{
    if (plan && plan->backend->rest)
        plan->backend->rest(plan->state);
}

void mps_plan_free(struct mps_plan *plan)
{
    if (!plan)
        return;
    plan->backend->free(plan->state);
    free(plan);
}
