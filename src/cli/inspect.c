/* inspect.c: `mpsrun inspect MODEL [--json]`: what a model is and costs, as
   mpsrun will run it (after constant folding and BatchNormalization folding,
   before backend-specific fusion): inputs and outputs, opset, producer,
   metadata, one row per node (op, output shape, parameters, FLOPs), totals,
   the activation arena, and which backends can run every node.

   FLOPs: 2 per multiply-accumulate of Conv, ConvTranspose, Gemm and MatMul,
   and of an interpolating Resize (per output, the taps of the axes it
   resizes: 2 each linear, 4 cubic), one per output element of the other
   computing ops, none for ops that only move data (a nearest Resize too).
   Parameters: elements of the floating-point initializers a node
   reads; each initializer counts once in the totals. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "memplan.h"
#include "model.h"
#include "resize.h"

struct mps_inspect_node {
    int64_t params, macs, flops;
};

static bool mps_inspect_moves_only(enum mps_op op)
{
    if (mps_op_is_view(op))
        return true;
    switch (op) {
    case MPS_OP_SHAPE:
    case MPS_OP_CONSTANT:
    case MPS_OP_TRANSPOSE:
    case MPS_OP_CONCAT:
    case MPS_OP_SPLIT:
    case MPS_OP_SLICE:
    case MPS_OP_GATHER:
    case MPS_OP_EXPAND:
    case MPS_OP_PAD:
    case MPS_OP_DEPTH_TO_SPACE:
    case MPS_OP_SPACE_TO_DEPTH:
    case MPS_OP_CAST: return true;
    default: return false;
    }
}

static bool mps_inspect_is_weight(const struct mps_value *v)
{
    return v && v->data && (v->dtype == MPS_F32 || v->dtype == MPS_F16 || v->dtype == MPS_F64);
}

static struct mps_inspect_node mps_inspect_cost(const struct mps_graph *g, const struct mps_node *n)
{
    struct mps_inspect_node c = {0};
    for (int i = 0; i < n->n_in; i++) {
        const struct mps_value *v = mps_node_input(g, n, i);
        if (mps_inspect_is_weight(v))
            c.params += mps_shape_numel(&v->shape);
    }
    const struct mps_shape *y = &g->values[n->out[0]].shape, *x = &g->values[n->in[0]].shape;
    int64_t out = mps_shape_numel(y);
    switch (n->op) {
    case MPS_OP_CONV: { /* per output element: C/group x kernel taps */
        const struct mps_shape *w = &g->values[n->in[1]].shape;
        c.macs = out * (mps_shape_numel(w) / w->dim[0]);
        break;
    }
    case MPS_OP_CONV_TRANSPOSE: { /* per input element: M/group x kernel taps */
        const struct mps_shape *w = &g->values[n->in[1]].shape;
        c.macs = mps_shape_numel(x) * (mps_shape_numel(w) / w->dim[0]);
        break;
    }
    case MPS_OP_GEMM:
        c.macs = out * x->dim[n->p.gemm.trans_a ? 0 : 1];
        break;
    case MPS_OP_MATMUL:
        c.macs = out * x->dim[x->ndim - 1];
        break;
    case MPS_OP_RESIZE: {
        const struct mps_resize_params *p = &n->p.resize;
        int64_t taps = 1;
        for (int d = 0; d < y->ndim && p->mode != MPS_RESIZE_NEAREST; d++)
            if (!mps_resize_identity(p, d, x->dim[d], y->dim[d]))
                taps *= p->mode == MPS_RESIZE_LINEAR ? 2 : 4;
        c.macs = taps > 1 ? out * taps : 0;
        c.flops = 2 * c.macs;
        return c;
    }
    case MPS_OP_LRN: /* per output: the window's squares and sum, then the power and the division */
        c.flops = out * (2 * n->p.lrn.size + 3);
        return c;
    case MPS_OP_INSTANCE_NORM: /* per element: the mean's add, the variance's two, the scale's two */
        c.flops = 5 * out;
        return c;
    default:
        if (mps_op_is_reduce(n->op)) { /* one step per input element; a product first for L2, SumSquare */
            bool square = n->op == MPS_OP_REDUCE_L2 || n->op == MPS_OP_REDUCE_SUM_SQUARE;
            c.flops = mps_shape_numel(x) * (square ? 2 : 1);
            return c;
        }
        break;
    }
    c.flops = c.macs ? 2 * c.macs : mps_inspect_moves_only(n->op) ? 0 : out;
    return c;
}

/* "[batch=1,1,28,28]": symbolic dims with their names. */
static void mps_inspect_dims(const struct mps_model *m, int input, const struct mps_shape *s, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s->ndim && n < size; i++) {
        const struct mps_model_input *d = input >= 0 ? &m->inputs[input] : NULL;
        if (d && d->symbolic[i])
            n += (size_t)snprintf(buf + n, size - n, "%s%s=%lld", i ? "," : "", d->dim_name[i] ? d->dim_name[i] : "?",
                                  (long long)s->dim[i]);
        else
            n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)s->dim[i]);
    }
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

static const char *const mps_inspect_known[] = {"cpu", "cuda", "mps"};

int mps_cli_inspect(int argc, char **argv)
{
    struct arg_file *model = arg_file1(NULL, NULL, "MODEL", "an ONNX model");
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(8);
    void *argtable[] = {model, json, help, end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Shows MODEL as mpsrun runs it (a free batch set to 1): inputs, outputs, metadata,\n"
                           "one row per node with its output shape, parameters and FLOPs, the totals, the\n"
                           "activation arena, and which backends can run every node.",
                           &done);
    struct mps_model *m = NULL;
    struct mps_error err = {{0}};
    struct mps_memplan mp = {0};
    enum mps_status st = MPS_OK;
    cJSON *root = NULL;
    if (done)
        goto out;
    if ((st = mps_onnx_load(model->filename[0], NULL, &m, &err)) ||
        (st = mps_memplan_build(m->graph, 64, NULL, &mp, &err)))
        goto out;
    const struct mps_graph *g = m->graph;
    char a[256];
    int64_t params = 0, macs = 0, flops = 0, weight_bytes = 0;
    bool *read = calloc((size_t)g->n_values + 1, sizeof *read);
    if (!read) {
        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
        goto out;
    }
    for (int k = 0; k < g->n_nodes; k++)
        for (int i = 0; i < g->nodes[k].n_in; i++)
            if (g->nodes[k].in[i] >= 0)
                read[g->nodes[k].in[i]] = true;
    for (int v = 0; v < g->n_values; v++) {
        if (read[v] && mps_inspect_is_weight(&g->values[v])) {
            params += mps_shape_numel(&g->values[v].shape);
            weight_bytes += (int64_t)(mps_shape_numel(&g->values[v].shape) * (int64_t)mps_dtype_size(g->values[v].dtype));
        }
    }
    free(read);
    root = json->count ? cJSON_CreateObject() : NULL;
    cJSON *jnodes = NULL;
    if (root) {
        cJSON_AddNumberToObject(root, "schema_version", 1);
        cJSON *jm = cJSON_AddObjectToObject(root, "model");
        cJSON_AddStringToObject(jm, "path", m->path);
        cJSON_AddStringToObject(jm, "producer", m->producer);
        cJSON_AddNumberToObject(jm, "opset", (double)m->opset);
        cJSON_AddNumberToObject(jm, "ir_version", (double)m->ir_version);
        cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
        for (int i = 0; i < m->n_meta; i++)
            cJSON_AddStringToObject(meta, m->meta[i].key, m->meta[i].value);
        for (int io = 0; io < 2; io++) {
            cJSON *arr = cJSON_AddArrayToObject(root, io ? "outputs" : "inputs");
            for (int i = 0; i < (io ? g->n_outputs : g->n_inputs); i++) {
                const struct mps_value *v = &g->values[io ? g->outputs[i] : g->inputs[i]];
                cJSON *o = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(o, "shape");
                cJSON_AddStringToObject(o, "name", v->name);
                cJSON_AddStringToObject(o, "dtype", mps_dtype_name(v->dtype));
                for (int d = 0; d < v->shape.ndim; d++)
                    cJSON_AddItemToArray(shape, io || !m->inputs[i].symbolic[d]
                                                    ? cJSON_CreateNumber((double)v->shape.dim[d])
                                                    : cJSON_CreateString(m->inputs[i].dim_name[d]
                                                                             ? m->inputs[i].dim_name[d] : "?"));
                cJSON_AddItemToArray(arr, o);
            }
        }
        jnodes = cJSON_AddArrayToObject(root, "nodes");
    } else {
        printf("model      %s\nproducer   %s, opset %lld, IR version %lld\n", mps_cli_vis(m->path),
               m->producer[0] ? mps_cli_vis(m->producer) : "(unknown)", (long long)m->opset, (long long)m->ir_version);
        for (int i = 0; i < m->n_meta; i++)
            printf("%-10s %s: %.70s%s\n", i ? "" : "metadata", mps_cli_vis(m->meta[i].key),
                   mps_cli_vis(m->meta[i].value), strlen(m->meta[i].value) > 70 ? "..." : "");
        for (int i = 0; i < g->n_inputs; i++) {
            const struct mps_value *v = &g->values[g->inputs[i]];
            mps_inspect_dims(m, i, &v->shape, a, sizeof a);
            printf("%-10s %s %s %s\n", i ? "" : "inputs", mps_cli_vis(v->name), mps_dtype_name(v->dtype), a);
        }
        for (int i = 0; i < g->n_outputs; i++) {
            const struct mps_value *v = &g->values[g->outputs[i]];
            printf("%-10s %s %s %s\n", i ? "" : "outputs", mps_cli_vis(v->name), mps_dtype_name(v->dtype),
                   mps_shape_str(&v->shape, a, sizeof a));
        }
        printf("\n%4s  %-32s %-18s %-20s %11s %14s\n", "#", "node", "op", "output", "params", "FLOPs");
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        struct mps_inspect_node c = mps_inspect_cost(g, n);
        char op[48];
        mps_node_label(n, op, sizeof op);
        mps_shape_str(&g->values[n->out[0]].shape, a, sizeof a);
        macs += c.macs;
        flops += c.flops;
        if (jnodes) {
            cJSON *o = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(o, "output_shape");
            cJSON_AddStringToObject(o, "name", n->name);
            cJSON_AddStringToObject(o, "op", op);
            for (int d = 0; d < g->values[n->out[0]].shape.ndim; d++)
                cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)g->values[n->out[0]].shape.dim[d]));
            cJSON_AddNumberToObject(o, "params", (double)c.params);
            cJSON_AddNumberToObject(o, "macs", (double)c.macs);
            cJSON_AddNumberToObject(o, "flops", (double)c.flops);
            cJSON_AddItemToArray(jnodes, o);
        } else {
            char np[32], nf[32];
            printf("%4d  %-32.32s %-18s %-20s %11s %14s\n", k, mps_cli_vis(n->name), op, a,
                   mps_cli_count(c.params, np, sizeof np), mps_cli_count(c.flops, nf, sizeof nf));
        }
    }
    if (root) {
        cJSON *t = cJSON_AddObjectToObject(root, "totals");
        cJSON_AddNumberToObject(t, "nodes", g->n_nodes);
        cJSON_AddNumberToObject(t, "params", (double)params);
        cJSON_AddNumberToObject(t, "weight_bytes", (double)weight_bytes);
        cJSON_AddNumberToObject(t, "macs", (double)macs);
        cJSON_AddNumberToObject(t, "flops", (double)flops);
        cJSON_AddNumberToObject(t, "arena_bytes", (double)mp.size);
        cJSON_AddNumberToObject(t, "activation_bytes_without_reuse", (double)mp.total);
    } else {
        char nn[32], np[32], wb[32], nf[32], nm[32], as[32], at[32];
        printf("\ntotals     %s nodes, %s parameters (%s of weights), %sFLOPs (%s multiply-accumulates)\n",
               mps_cli_count(g->n_nodes, nn, sizeof nn), mps_cli_count(params, np, sizeof np),
               mps_cli_bytes((double)weight_bytes, wb, sizeof wb), mps_cli_si((double)flops, nf, sizeof nf),
               mps_cli_si((double)macs, nm, sizeof nm));
        printf("memory     activations: %s in one arena (%s if every tensor had its own)\n",
               mps_cli_bytes((double)mp.size, as, sizeof as), mps_cli_bytes((double)mp.total, at, sizeof at));
    }
    cJSON *jb = root ? cJSON_AddArrayToObject(root, "backends") : NULL;
    for (size_t i = 0; i < sizeof mps_inspect_known / sizeof mps_inspect_known[0]; i++) {
        const struct mps_backend *be = mps_backend_find(mps_inspect_known[i]);
        struct mps_backend_info info;
        struct mps_error why = {{0}};
        bool avail = be && be->probe(&info, &why) == MPS_OK;
        char list[384] = "";
        int bad = be ? mps_backend_unsupported(be, g, list, sizeof list) : 0;
        if (jb) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", mps_inspect_known[i]);
            cJSON_AddBoolToObject(o, "compiled", be != NULL);
            cJSON_AddBoolToObject(o, "available", avail);
            cJSON_AddBoolToObject(o, "runs_every_node", be && bad == 0);
            cJSON_AddStringToObject(o, "unsupported", list);
            cJSON_AddItemToArray(jb, o);
        } else {
            printf("%-10s %-5s %s%s%s\n", i ? "" : "backends", mps_inspect_known[i],
                   !be   ? "not compiled in"
                   : bad ? "cannot run: "
                         : "runs every node",
                   bad ? mps_cli_vis(list) : "", be && !avail ? " (not available on this machine)" : "");
        }
    }
    if (root) {
        if (!mps_cli_json_print(root))
            st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
    }
out:
    cJSON_Delete(root);
    mps_memplan_free(&mp);
    if (st) {
        mps_cli_error(model->filename[0], "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    mps_model_free(m);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
