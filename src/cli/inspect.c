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
    case MPS_OP_RNN:
    case MPS_OP_GRU:
    case MPS_OP_LSTM: /* per step, sequence and direction: every gate's x W^T and h R^T (Y holds one h each) */
        c.macs = out * mps_rnn_gates(n->op) * (x->dim[2] + n->p.rnn.hidden);
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

/* The name of free dim d of input i: the model's, else "input[d]". */
static const char *mps_inspect_free_name(const char *const *names, const struct mps_model_input *decl, int i, int d,
                                         char *buf, size_t size)
{
    if (decl[i].dim_name[d] && decl[i].dim_name[d][0])
        snprintf(buf, size, "%.40s", decl[i].dim_name[d]);
    else
        snprintf(buf, size, "%.40s[%d]", names[i], d);
    return buf;
}

/* How output dim a0 -> a1 follows input dim x0 -> x1: "name", "name+2", "name*4", "name/8", or "f(name)". */
static void mps_inspect_relation(const char *name, int64_t x0, int64_t x1, int64_t a0, int64_t a1, char *buf,
                                 size_t size)
{
    if (a0 - x0 == a1 - x1 && a0 != x0)
        snprintf(buf, size, "%s%+lld", name, (long long)(a0 - x0));
    else if (a0 == x0 && a1 == x1)
        snprintf(buf, size, "%s", name);
    else if (x0 && a0 % x0 == 0 && a0 / x0 * x1 == a1)
        snprintf(buf, size, "%s*%lld", name, (long long)(a0 / x0));
    else if (a0 && x0 % a0 == 0 && x1 % (x0 / a0) == 0 && x1 / (x0 / a0) == a1)
        snprintf(buf, size, "%s/%lld", name, (long long)(x0 / a0));
    else
        snprintf(buf, size, "f(%s)", name);
}

/* Each output dim of m (built at the shapes its graph's inputs have) as the
   inputs' free dims make it: the model is built again with each free dim
   at another size, and an output dim that changes with it follows it. Into
   dims[output][dim]: a number, a free dim's name, or how it follows it. */
static void mps_inspect_follow(const struct mps_onnx_file *f, const struct mps_model *m, int n, const char **names,
                               const struct mps_model_input *decl, char (*dims)[MPS_MAX_DIMS][96])
{
    const struct mps_graph *g = m->graph;
    struct mps_shape base[8];
    for (int i = 0; i < n && i < g->n_inputs; i++)
        base[i] = g->values[g->inputs[i]].shape;
    for (int o = 0; o < g->n_outputs && o < 16; o++)
        for (int k = 0; k < g->values[g->outputs[o]].shape.ndim; k++)
            snprintf(dims[o][k], sizeof dims[o][k], "%lld", (long long)g->values[g->outputs[o]].shape.dim[k]);
    int follows[16][MPS_MAX_DIMS] = {{0}}; /* how many free dims each output dim follows */
    for (int i = 0; i < n && i < g->n_inputs; i++)
        for (int d = 0; d < base[i].ndim; d++) {
            if (!decl[i].symbolic[d])
                continue;
            struct mps_shape s[8];
            memcpy(s, base, sizeof s[0] * (size_t)n);
            s[i].dim[d] = base[i].dim[d] * 2 + (d == 0); /* 1 -> 3 for a batch: a batch of 2 can look like a pair */
            struct mps_model *m2;
            struct mps_error err;
            if (mps_onnx_model(f, &(struct mps_onnx_opts){.n_shapes = n, .shapes = s}, &m2, &err) != MPS_OK)
                continue; /* the dim has no other size the model takes: it is shown as a number */
            char nb[48];
            const char *name = mps_inspect_free_name(names, decl, i, d, nb, sizeof nb);
            for (int o = 0; o < g->n_outputs && o < 16 && o < m2->graph->n_outputs; o++) {
                const struct mps_shape *a = &g->values[g->outputs[o]].shape,
                                       *b = &m2->graph->values[m2->graph->outputs[o]].shape;
                for (int k = 0; k < a->ndim && a->ndim == b->ndim; k++) {
                    if (a->dim[k] == b->dim[k])
                        continue;
                    if (follows[o][k]++)
                        snprintf(dims[o][k], sizeof dims[o][k], "f(...)"); /* two free dims: no one name */
                    else
                        mps_inspect_relation(name, base[i].dim[d], s[i].dim[d], a->dim[k], b->dim[k], dims[o][k],
                                             sizeof dims[o][k]);
                }
            }
            mps_model_free(m2);
        }
}

/* Each output dim as the free dims make it (mps_inspect_follow), for the first 16 outputs. */
typedef char mps_inspect_dims_t[MPS_MAX_DIMS][96];

/* The JSON object's model, metadata, inputs and outputs. */
static void mps_inspect_json_head(cJSON *root, const struct mps_model *m, const char **names,
                                  const struct mps_model_input *decl, const mps_inspect_dims_t *dims, int n_in)
{
    const struct mps_graph *g = m->graph;
    cJSON_AddNumberToObject(root, "schema_version", 1);
    cJSON *jm = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(jm, "path", m->path);
    cJSON_AddStringToObject(jm, "producer", m->producer);
    cJSON_AddNumberToObject(jm, "opset", (double)m->opset);
    cJSON_AddNumberToObject(jm, "ir_version", (double)m->ir_version);
    if (m->n_widened) {
        cJSON_AddStringToObject(jm, "storage", "f16");
        cJSON_AddStringToObject(jm, "compute", "f32");
    }
    cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
    for (int i = 0; i < m->n_meta; i++)
        cJSON_AddStringToObject(meta, m->meta[i].key, m->meta[i].value);
    for (int io = 0; io < 2; io++) {
        cJSON *arr = cJSON_AddArrayToObject(root, io ? "outputs" : "inputs");
        for (int i = 0; i < (io ? g->n_outputs : g->n_inputs); i++) {
            const struct mps_value *v = &g->values[io ? g->outputs[i] : g->inputs[i]];
            cJSON *o = cJSON_CreateObject(), *jshape = cJSON_AddArrayToObject(o, "shape");
            cJSON *sizes = cJSON_AddArrayToObject(o, "sizes");
            cJSON_AddStringToObject(o, "name", v->name);
            cJSON_AddStringToObject(o, "dtype", mps_dtype_name(io ? m->output_dtype[i] : m->inputs[i].dtype));
            for (int d = 0; d < v->shape.ndim; d++) {
                char nb[48];
                const char *free_dim = io && i < 16 && n_in > 0 ? dims[i][d] : NULL;
                bool number = io ? !free_dim || (free_dim[0] >= '0' && free_dim[0] <= '9') : !m->inputs[i].symbolic[d];
                cJSON_AddItemToArray(
                    jshape, number ? cJSON_CreateNumber((double)v->shape.dim[d])
                                   : cJSON_CreateString(io ? free_dim
                                                           : mps_inspect_free_name(names, decl, i, d, nb, sizeof nb)));
                cJSON_AddItemToArray(sizes, cJSON_CreateNumber((double)v->shape.dim[d]));
            }
            cJSON_AddItemToArray(arr, o);
        }
    }
}

/* The text report's model, metadata, inputs and outputs. */
static void mps_inspect_text_head(const struct mps_model *m, const struct mps_shape *shapes,
                                  const struct mps_model_input *decl, const mps_inspect_dims_t *dims, int n_in)
{
    const struct mps_graph *g = m->graph;
    char a[256];
    printf("model      %s\nproducer   %s, opset %lld, IR version %lld\n", mps_cli_vis(m->path),
           m->producer[0] ? mps_cli_vis(m->producer) : "(unknown)", (long long)m->opset, (long long)m->ir_version);
    for (int i = 0; i < m->n_meta; i++)
        printf("%-10s %s: %.70s%s\n", i ? "" : "metadata", mps_cli_vis(m->meta[i].key), mps_cli_vis(m->meta[i].value),
               strlen(m->meta[i].value) > 70 ? "..." : "");
    if (m->n_widened)
        printf("%-10s f16 (%d weights, inputs, outputs and Casts), computed in f32\n", "dtypes", m->n_widened);
    for (int i = 0; i < g->n_inputs; i++) {
        const struct mps_value *v = &g->values[g->inputs[i]];
        mps_inspect_dims(m, i, &v->shape, a, sizeof a);
        printf("%-10s %s %s %s\n", i ? "" : "inputs", mps_cli_vis(v->name), mps_dtype_name(m->inputs[i].dtype), a);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const struct mps_value *v = &g->values[g->outputs[i]];
        size_t len = (size_t)snprintf(a, sizeof a, "[");
        bool free_dims = false;
        for (int d = 0; d < v->shape.ndim && len < sizeof a; d++) {
            free_dims = free_dims || (n_in > 0 && i < 16 && (dims[i][d][0] < '0' || dims[i][d][0] > '9'));
            len +=
                (size_t)snprintf(a + len, sizeof a - len, "%s%s", d ? "," : "", n_in > 0 && i < 16 ? dims[i][d] : "?");
        }
        if (len < sizeof a)
            snprintf(a + len, sizeof a - len, "]");
        char here[160];
        printf("%-10s %s %s %s", i ? "" : "outputs", mps_cli_vis(v->name), mps_dtype_name(m->output_dtype[i]),
               n_in > 0 ? a : mps_shape_str(&v->shape, here, sizeof here));
        if (free_dims)
            printf(" (here %s)", mps_shape_str(&v->shape, here, sizeof here));
        if (v->bounded)
            printf(" (dim %d at most: each run decides its size)", v->bound_axis);
        printf("\n");
    }
    bool any_free = false;
    for (int i = 0; i < n_in; i++)
        for (int d = 0; d < shapes[i].ndim; d++)
            any_free = any_free || decl[i].symbolic[d];
    if (any_free)
        printf("%-10s the sizes shown are --shape's, else a batch of 1 and the first of 1, 32, 224, 1024 the "
               "model builds at\n",
               "free dims");
}

/* Which backends are compiled in, available here, and run every node (into root, else as text). */
static void mps_inspect_backends(cJSON *root, const struct mps_graph *g)
{
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
}

int mps_cli_inspect(int argc, char **argv)
{
    struct arg_file *model = arg_file1(NULL, NULL, "MODEL", "an ONNX model");
    struct arg_str *shape = arg_strn(NULL, "shape", "NAME=AxBxC", 0, 8,
                                     "an input's shape, where the model leaves "
                                     "dims free (NAME= may be left out for a model of one input)");
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(8);
    void *argtable[] = {model, shape, json, help, end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Shows MODEL as mpsrun runs it (free dims as --shape gives them, else a batch of 1\n"
                           "and sizes the model builds at): inputs with their free dims, outputs and how\n"
                           "their dims follow those, metadata,\n"
                           "one row per node with its output shape, parameters and FLOPs, the totals, the\n"
                           "activation arena, and which backends can run every node.",
                           &done);
    struct mps_model *m = NULL;
    struct mps_onnx_file *file = NULL;
    const char *names[8];
    struct mps_shape shapes[8];
    struct mps_model_input decl[8];
    int n_in = 0;
    char(*dims)[MPS_MAX_DIMS][96] = calloc(16, sizeof *dims); /* each output dim as the free dims make it */
    struct mps_error err = {{0}};
    struct mps_memplan mp = {0};
    enum mps_status st = MPS_OK;
    cJSON *root = NULL;
    if (done)
        goto out;
    if (!dims) {
        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
        goto out;
    }
    if ((st = mps_onnx_open(model->filename[0], &file, &err)))
        goto out;
    if ((st = mps_cli_shapes(shape, file, &n_in, names, shapes, decl, &err)))
        goto out;
    if ((st = n_in > 0 ? mps_onnx_model_free(file, n_in, shapes, &m, &err) : mps_onnx_model(file, NULL, &m, &err)) ||
        (st = mps_memplan_build(m->graph, 64, NULL, &mp, &err)))
        goto out;
    if (n_in > 0)
        mps_inspect_follow(file, m, n_in, names, decl, dims);
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
        mps_inspect_json_head(root, m, names, decl, (const mps_inspect_dims_t *)dims, n_in);
        jnodes = cJSON_AddArrayToObject(root, "nodes");
    } else {
        mps_inspect_text_head(m, shapes, decl, (const mps_inspect_dims_t *)dims, n_in);
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
            cJSON *o = cJSON_CreateObject(), *jout = cJSON_AddArrayToObject(o, "output_shape");
            cJSON_AddStringToObject(o, "name", n->name);
            cJSON_AddStringToObject(o, "op", op);
            for (int d = 0; d < g->values[n->out[0]].shape.ndim; d++)
                cJSON_AddItemToArray(jout, cJSON_CreateNumber((double)g->values[n->out[0]].shape.dim[d]));
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
    mps_inspect_backends(root, g);
    if (root) {
        if (!mps_cli_json_print(root))
            st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
    }
out:
    cJSON_Delete(root);
    mps_memplan_free(&mp);
    if (st) {
        mps_cli_error(st == MPS_ERR_USAGE ? NULL : model->filename[0], "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    mps_model_free(m);
    mps_onnx_close(file);
    free(dims);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
