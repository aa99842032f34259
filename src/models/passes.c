/* passes.c: the graph passes between loading and compiling.

   fold:     shape inference node by node; a node whose inputs are all
             constants (and every Shape node: shapes are static) is run once
             on the CPU and its outputs become constants. This is what turns
             the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of
             exporters into one constant shape. Then unused nodes go.
   optimize: Identity and Dropout removed; BatchNormalization folded into the
             Conv or Gemm before it (new weights; shared ones are untouched);
             x * HardSigmoid(x) (alpha 1/6, beta 1/2: exporters' HardSwish
             before opset 14) turned into one HardSwish, which fuse then
             puts into the Conv before it.
   fuse:     an activation after Conv, ConvTranspose, Gemm, or an Add, Sub,
             Mul or Div of two f32 inputs (resnet's residual Add -> Relu) is
             fused into it when the backend can run the fused node.
   Each changes results by float rounding at most; the conformance runner
   and test_passes compare with and without them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "model.h"

/* Outputs larger than this stay nodes: folding must not blow up the file. */
#define MPS_FOLD_MAX_BYTES ((size_t)64 << 20)

static bool mps_pass_foldable(const struct mps_graph *g, const struct mps_node *n)
{
    size_t bytes = 0;
    for (int i = 0; i < n->n_out; i++) {
        const struct mps_value *v = &g->values[n->out[i]];
        bytes += (size_t)mps_shape_numel(&v->shape) * mps_dtype_size(v->dtype);
    }
    if (bytes > MPS_FOLD_MAX_BYTES)
        return false;
    for (int i = 0; i < n->n_out; i++)
        if (g->values[n->out[i]].dtype == MPS_STRING) /* its characters would live in a plan's store */
            return false;
    if (n->op == MPS_OP_SHAPE || n->op == MPS_OP_EYE_LIKE ||
        n->op == MPS_OP_RANDOM_LIKE) /* they read the input's shape alone */
        return true;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i] >= 0 && !g->values[n->in[i]].data)
            return false;
    return true;
}

/* Computes node n, whose inputs are constants, into constants: a bounded
   output (its size a run's) takes the size these values give it. */
static enum mps_status mps_pass_eval(struct mps_graph *g, const struct mps_node *n, struct mps_error *err)
{
    void *out[8] = {NULL};
    struct mps_shape shapes[8];
    enum mps_status st = MPS_OK;
    struct mps_value *y = &g->values[n->out[0]];
    const struct mps_value *x = n->n_in ? &g->values[n->in[0]] : NULL;
    if ((n->op == MPS_OP_IDENTITY || n->op == MPS_OP_CONSTANT) && x && x->data && x->dtype == y->dtype &&
        x->dtype != MPS_STRING) { /* constants are never written: the output shares the input's data */
        y->data = x->data, y->shape = x->shape, y->bounded = false;
        return MPS_OK;
    }
    for (int o = 0; o < n->n_out && !st; o++) {
        const struct mps_value *v = &g->values[n->out[o]];
        if (!(out[o] = mps_graph_alloc(g, (size_t)mps_shape_numel(&v->shape) * mps_dtype_size(v->dtype) + 1)))
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory folding node '%s'", n->name);
    }
    if (!st && (st = mps_cpu_eval_node(g, n, out, shapes, err)) == MPS_ERR_INPUT)
        st = MPS_ERR_MODEL; /* every value it read is the model's own */
    for (int o = 0; o < n->n_out && !st; o++) {
        struct mps_value *v = &g->values[n->out[o]];
        v->data = out[o];
        v->shape = shapes[o];
        v->bounded = false;
    }
    return st;
}

/* Drops nodes that no graph output depends on. */
static void mps_pass_dead_code(struct mps_graph *g, bool *dead)
{
    bool *live = calloc((size_t)g->n_values + 1, sizeof *live);
    if (!live)
        return; /* keeping dead nodes is correct, only slower */
    for (int i = 0; i < g->n_outputs; i++)
        live[g->outputs[i]] = true;
    for (int k = g->n_nodes - 1; k >= 0; k--) {
        const struct mps_node *n = &g->nodes[k];
        bool needed = false;
        for (int o = 0; o < n->n_out; o++)
            needed = needed || live[n->out[o]];
        dead[k] = dead[k] || !needed;
        for (int i = 0; !dead[k] && i < n->n_in; i++)
            if (n->in[i] >= 0)
                live[n->in[i]] = true;
    }
    free(live);
    mps_graph_remove_nodes(g, dead);
}

enum mps_status mps_passes_fold(struct mps_graph *g, struct mps_error *err)
{
    for (int i = 0; i < g->n_inputs; i++)
        if (!g->values[g->inputs[i]].shape_known)
            return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' has no shape", g->values[g->inputs[i]].name);
    bool *dead = calloc((size_t)g->n_nodes + 1, sizeof *dead);
    if (!dead)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    enum mps_status st = MPS_OK;
    for (int k = 0; k < g->n_nodes && !st; k++) {
        struct mps_node *n = &g->nodes[k];
        if ((st = mps_graph_infer_node(g, n, err)) || !mps_pass_foldable(g, n))
            continue;
        st = mps_pass_eval(g, n, err);
        dead[k] = true;
    }
    if (!st)
        mps_pass_dead_code(g, dead);
    free(dead);
    return st;
}

/* Works out value v as fold would, on demand, and the values before it
   first: their shapes inferred, a node folded when its inputs are constants.
   A value whose shape is known was visited (or is an input) already. */
static enum mps_status mps_pass_value(struct mps_graph *g, int v, int depth, struct mps_error *err)
{
    int p = g->values[v].producer;
    if (g->values[v].data || g->values[v].shape_known || p < 0)
        return MPS_OK;
    if (depth > 4096)
        return mps_fail(err, MPS_ERR_MODEL, "value '%s' lies more than 4,096 nodes after a constant or an input",
                        g->values[v].name);
    enum mps_status st = MPS_OK;
    for (int i = 0; !st && i < g->nodes[p].n_in; i++)
        if (g->nodes[p].in[i] >= 0)
            st = mps_pass_value(g, g->nodes[p].in[i], depth + 1, err);
    if (!st)
        st = mps_graph_infer_node(g, &g->nodes[p], err);
    if (st || !mps_pass_foldable(g, &g->nodes[p]))
        return st;
    return mps_pass_eval(g, &g->nodes[p], err);
}

enum mps_status mps_passes_fold_value(struct mps_graph *g, int v, bool *known, struct mps_error *err)
{
    *known = false;
    if (v < 0 || v >= g->n_values) /* an omitted input a loader asked about */
        return mps_fail(err, MPS_ERR_MODEL, "a value the node needs is missing (an omitted input)");
    enum mps_status st = mps_pass_value(g, v, 0, err);
    *known = !st && g->values[v].data != NULL;
    return st;
}

/* A new constant holding a copy of value v's data, converted nowhere: f32 only. */
static int mps_pass_copy_const(struct mps_graph *g, int v, const char *suffix)
{
    const struct mps_value *val = &g->values[v];
    char name[512];
    int id = -1;
    for (int k = 0; id < 0 && k < 1000; k++) {
        snprintf(name, sizeof name, "%.400s:%s%d", val->name, suffix, k);
        if (mps_graph_find(g, name) < 0)
            id = mps_graph_add_const(g, name, MPS_F32, &val->shape, val->data);
    }
    return id;
}

static bool mps_pass_const_f32(const struct mps_graph *g, int v)
{
    return v >= 0 && g->values[v].data && g->values[v].dtype == MPS_F32;
}

/* Folds BatchNormalization node bn into Conv or Gemm node prev. */
static bool mps_pass_fold_bn(struct mps_graph *g, struct mps_node *prev, const struct mps_node *bn)
{
    for (int i = 1; i < 5; i++)
        if (!mps_pass_const_f32(g, bn->in[i]))
            return false;
    const float *scale = g->values[bn->in[1]].data, *beta = g->values[bn->in[2]].data,
                *mean = g->values[bn->in[3]].data, *var = g->values[bn->in[4]].data;
    int64_t channels = g->values[bn->in[1]].shape.dim[0];
    int b = prev->n_in > 2 ? prev->in[2] : -1;
    bool gemm = prev->op == MPS_OP_GEMM;
    if (!mps_pass_const_f32(g, prev->in[1]) || (b >= 0 && !mps_pass_const_f32(g, b)))
        return false;
    if (gemm && (g->values[bn->in[0]].shape.ndim != 2 ||
                 (b >= 0 && mps_shape_numel(&g->values[b].shape) != 1 && (g->values[b].shape.ndim == 2
                                                                            ? g->values[b].shape.dim[0] != 1
                                                                            : g->values[b].shape.ndim != 1))))
        return false; /* C varies along the batch: no per-channel fold */
    if (!gemm && prev->p.conv.act.on)
        return false;
    int w = mps_pass_copy_const(g, prev->in[1], "bn_folded");
    struct mps_shape bs = {1, {channels}};
    float *bias = calloc((size_t)channels, sizeof *bias);
    if (w < 0 || !bias) {
        free(bias);
        return false;
    }
    float *wd = (float *)g->values[w].data;
    const struct mps_shape *ws = &g->values[w].shape;
    int64_t per = mps_shape_numel(ws) / channels;
    const float *old_b = b >= 0 ? g->values[b].data : NULL;
    bool b_scalar = b >= 0 && mps_shape_numel(&g->values[b].shape) == 1;
    for (int64_t m = 0; m < channels; m++) {
        double k = scale[m] / sqrt((double)var[m] + bn->p.norm.epsilon);
        if (!gemm || prev->p.gemm.trans_b) /* rows of W are output channels */
            for (int64_t i = 0; i < per; i++)
                wd[m * per + i] = (float)(wd[m * per + i] * k);
        else /* Gemm without transB: B is [K, M], columns are channels */
            for (int64_t i = 0; i < per; i++)
                wd[i * channels + m] = (float)(wd[i * channels + m] * k);
        double c = old_b ? old_b[b_scalar ? 0 : m] * (gemm ? prev->p.gemm.beta : 1.0f) : 0.0;
        bias[m] = (float)((c - mean[m]) * k + beta[m]);
    }
    char name[512];
    snprintf(name, sizeof name, "%.400s:bn_bias", g->values[w].name);
    int nb = mps_graph_add_const(g, name, MPS_F32, &bs, bias);
    free(bias);
    int *in = mps_graph_alloc(g, 3 * sizeof *in);
    if (nb < 0 || !in)
        return false;
    in[0] = prev->in[0];
    in[1] = w;
    in[2] = nb;
    prev->in = in;
    prev->n_in = 3;
    if (gemm)
        prev->p.gemm.beta = 1.0f;
    prev->out[0] = bn->out[0];
    return true;
}

/* Whether node n is Mul(x, HardSigmoid(x)) with HardSwish's constants, the
   HardSigmoid read by nothing else; *hs: that HardSigmoid's index. */
static bool mps_pass_is_hard_swish(const struct mps_graph *g, const struct mps_node *n, int *hs)
{
    if (n->op != MPS_OP_MUL || n->n_in != 2 || mps_node_act(n)->on)
        return false;
    for (int i = 0; i < 2; i++) {
        int p = g->values[n->in[i]].producer, only = -1;
        if (p < 0)
            continue;
        const struct mps_node *h = &g->nodes[p];
        if (h->op == MPS_OP_HARD_SIGMOID && h->in[0] == n->in[1 - i] && fabsf(h->p.act.alpha - 1.0f / 6.0f) < 1e-7f &&
            h->p.act.beta == 0.5f && mps_graph_uses(g, n->in[i], &only) == 1 &&
            g->values[n->out[0]].dtype == MPS_F32 &&
            mps_shape_eq(&g->values[n->out[0]].shape, &g->values[h->in[0]].shape)) {
            *hs = p;
            return true;
        }
    }
    return false;
}

enum mps_status mps_passes_optimize(struct mps_graph *g, struct mps_error *err)
{
    bool *dead = calloc((size_t)g->n_nodes + 1, sizeof *dead);
    if (!dead)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int k = 0; k < g->n_nodes; k++) {
        struct mps_node *n = &g->nodes[k];
        int only = -1;
        if ((n->op == MPS_OP_IDENTITY || n->op == MPS_OP_DROPOUT) && n->n_out == 1 &&
            !mps_graph_is_output(g, n->out[0])) {
            mps_graph_replace_uses(g, n->out[0], n->in[0]);
            dead[k] = true;
        } else if (n->op == MPS_OP_BATCH_NORM && g->values[n->in[0]].producer >= 0 &&
                   mps_graph_uses(g, n->in[0], &only) == 1) {
            struct mps_node *prev = &g->nodes[g->values[n->in[0]].producer];
            if ((prev->op == MPS_OP_CONV || prev->op == MPS_OP_GEMM) && mps_pass_fold_bn(g, prev, n))
                dead[k] = true;
        } else if (mps_pass_is_hard_swish(g, n, &only) && !dead[only]) {
            int x = g->nodes[only].in[0];
            n->op = MPS_OP_HARD_SWISH; /* in place of the Mul: its output keeps its readers */
            n->n_in = 1;
            n->in[0] = x;
            mps_op_params_default(MPS_OP_HARD_SWISH, &n->p);
            dead[only] = true;
        }
    }
    mps_pass_dead_code(g, dead);
    free(dead);
    return MPS_OK;
}

/* The note of kind whose out is value v, or NULL. */
static const struct mps_qnote *mps_pass_qnote(const struct mps_graph *g, enum mps_qnote_kind kind, int v)
{
    for (int i = 0; v >= 0 && i < g->n_qnotes; i++)
        if (g->qnotes[i].kind == kind && (g->qnotes[i].out == v || g->qnotes[i].res == v))
            return &g->qnotes[i];
    return NULL;
}

/* Q's note reading value v, or NULL. */
static const struct mps_qnote *mps_pass_quantizer(const struct mps_graph *g, int v)
{
    for (int i = 0; i < g->n_qnotes; i++)
        if (g->qnotes[i].kind == MPS_QNOTE_Q && g->qnotes[i].in[0] == v)
            return &g->qnotes[i];
    return NULL;
}

/* A new constant: the transpose of 2-D constant v (bytes of size el). */
static int mps_pass_transposed(struct mps_graph *g, int v)
{
    const struct mps_value *val = &g->values[v];
    int64_t r = val->shape.dim[0], c = val->shape.dim[1];
    size_t el = mps_dtype_size(val->dtype);
    unsigned char *t = malloc((size_t)(r * c) * el + 1);
    if (!t)
        return -1;
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++)
            memcpy(t + (size_t)(j * r + i) * el, (const unsigned char *)val->data + (size_t)(i * c + j) * el, el);
    struct mps_shape s = {2, {c, r}};
    char name[512];
    int id = -1;
    for (int k = 0; id < 0 && k < 1000; k++) {
        snprintf(name, sizeof name, "%.400s:T%d", val->name, k);
        if (mps_graph_find(g, name) < 0)
            id = mps_graph_add_const(g, name, val->dtype, &s, t);
    }
    free(t);
    return id;
}

/* An int8 product that can replace Conv, MatMul or Gemm node k: its input
   and weights dequantized (notes DQ), its output, after a Relu or Clip,
   quantized (a note Q reading it alone) or not. Fills in[9] (ops.def's
   order), *op, *p, *y (the value the product writes) and *last (the node
   it takes the place of). */
static bool mps_pass_qdq(struct mps_graph *g, int k, int *in, enum mps_op *op, union mps_op_params *p, int *y,
                         int *last)
{
    const struct mps_node *n = &g->nodes[k];
    bool conv = n->op == MPS_OP_CONV, gemm = n->op == MPS_OP_GEMM;
    if (!conv && !gemm && n->op != MPS_OP_MATMUL)
        return false;
    const struct mps_qnote *dx = mps_pass_qnote(g, MPS_QNOTE_DQ, n->in[0]),
                           *dw = mps_pass_qnote(g, MPS_QNOTE_DQ, n->in[1]);
    if (!dx || !dw || g->values[dx->in[0]].data || !g->values[dw->in[0]].data)
        return false;
    int w = dw->in[0];
    const struct mps_value *wv = &g->values[w];
    int64_t per = mps_shape_numel(&g->values[dw->in[1]].shape),
            axis = dw->axis < 0 ? dw->axis + wv->shape.ndim : dw->axis;
    if (gemm && (n->p.gemm.trans_a || n->p.gemm.alpha != 1.0f || n->p.gemm.beta != 1.0f || wv->shape.ndim != 2))
        return false;
    bool tb = gemm && n->p.gemm.trans_b;
    if (per > 1 && axis != (conv || tb ? 0 : wv->shape.ndim - 1)) /* per output channel only */
        return false;
    int64_t cols = wv->shape.dim[tb || conv ? 0 : 1];
    if (tb && (w = mps_pass_transposed(g, w)) < 0) /* adds a value: wv is gone */
        return false;
    int bias = n->n_in > 2 ? n->in[2] : -1;
    if (bias >= 0 && (!g->values[bias].data || g->values[bias].shape.ndim != 1))
        return false;
    *op = conv ? MPS_OP_QLINEAR_CONV : MPS_OP_QLINEAR_MATMUL;
    mps_op_params_default(*op, p);
    if (conv)
        p->conv = n->p.conv;
    *y = n->out[0], *last = k;
    int only = -1;
    if (!conv && bias < 0 && mps_graph_uses(g, *y, &only) == 1 && only >= 0 && g->nodes[only].op == MPS_OP_ADD &&
        !g->nodes[only].p.binary.act.on) { /* MatMul -> Add of a bias per column (a Linear layer) */
        const struct mps_node *add = &g->nodes[only];
        int other = add->in[0] == *y ? add->in[1] : add->in[0];
        const struct mps_value *b = &g->values[other];
        if (b->data && b->dtype == MPS_F32 && b->shape.ndim == 1 && b->shape.dim[0] == cols)
            bias = other, *y = add->out[0], *last = only;
    }
    struct mps_fused_act *act = conv ? &p->conv.act : &p->gemm.act;
    if (mps_graph_uses(g, *y, &only) == 1 && only >= 0 && !act->on &&
        (g->nodes[only].op == MPS_OP_RELU || g->nodes[only].op == MPS_OP_CLIP) && g->nodes[only].in[0] == *y) {
        *act = (struct mps_fused_act){.on = true, .op = g->nodes[only].op, .p = g->nodes[only].p.act};
        *y = g->nodes[only].out[0], *last = only;
    }
    const struct mps_qnote *q = mps_pass_quantizer(g, *y);
    int ys = -1, yz = -1;
    if (q && mps_graph_uses(g, *y, &only) == 1 && g->values[q->out].producer >= 0) {
        ys = q->in[1], yz = q->in[2];
        *y = q->out, *last = g->values[q->out].producer;
    }
    int v[9] = {dx->in[0], dx->in[1], dx->in[2], w, dw->in[1], dw->in[2], ys, yz, bias};
    memcpy(in, v, sizeof v);
    return true;
}

/* Whether the int8 product's operands in (ops.def's order) are ones its
   kernels take: scales above 0, a 2-D Conv of one group or depthwise (one
   channel a group, at most 258 taps), sums short enough for int32 (K 255
   255 < 2^31). */
static bool mps_pass_qfits(const struct mps_graph *g, enum mps_op op, const int *in, const union mps_op_params *p)
{
    for (int k = 0; k < 3; k++) { /* x_scale, w_scale, y_scale */
        int i = (int[]){1, 4, 6}[k];
        const struct mps_value *s = in[i] >= 0 ? &g->values[in[i]] : NULL;
        if (s && (!s->data || s->dtype != MPS_F32))
            return false;
        for (int64_t j = 0; s && j < mps_shape_numel(&s->shape); j++)
            if (!(((const float *)s->data)[j] > 0.0f) || !isfinite(((const float *)s->data)[j]))
                return false;
    }
    const struct mps_shape *x = &g->values[in[0]].shape, *w = &g->values[in[3]].shape;
    int64_t k = op == MPS_OP_QLINEAR_CONV ? mps_shape_numel(w) / (w->dim[0] ? w->dim[0] : 1) : w->dim[0];
    if (op == MPS_OP_QLINEAR_CONV && x->ndim != 4)
        return false;
    if (op == MPS_OP_QLINEAR_CONV && p->conv.group != 1) /* depthwise only, summed exactly in f32 (< 2^24) */
        return p->conv.group == x->dim[1] && w->dim[0] == x->dim[1] && w->dim[1] == 1 && k <= 258;
    return k <= 32768;
}

/* Node k becomes op over in[n_in] (copied) with params p, where its output
   keeps its dtype and shape and be runs it; else it stays as it was (the
   composition runs: correct, only slower). */
static bool mps_pass_qbecome(struct mps_graph *g, const struct mps_backend *be, int k, enum mps_op op, const int *in,
                             int n_in, const union mps_op_params *p)
{
    struct mps_node *n = &g->nodes[k], old = *n;
    int y = n->out[0];
    struct mps_value was = g->values[y];
    int *ins = mps_graph_alloc(g, sizeof(int) * (size_t)n_in);
    if (!ins)
        return false;
    memcpy(ins, in, sizeof(int) * (size_t)n_in);
    n->op = op, n->in = ins, n->n_in = n_in, n->p = *p, n->n_out = 1;
    struct mps_error ignored;
    if (mps_graph_infer_node(g, n, &ignored) != MPS_OK || g->values[y].dtype != was.dtype ||
        !mps_shape_eq(&g->values[y].shape, &was.shape) || (be->supports && !be->supports(g, n))) {
        *n = old;
        g->values[y] = was;
        return false;
    }
    return true;
}

/* Note q's DequantizeLinear or QuantizeLinear of a run-time tensor, where
   its composition still runs, as one node (ops.def) where be runs it: the
   composition's last node (Mul; Cast) becomes it. */
static bool mps_pass_qcast(struct mps_graph *g, const struct mps_backend *be, const struct mps_qnote *q)
{
    bool dq = q->kind == MPS_QNOTE_DQ;
    int last = q->out >= 0 ? g->values[q->out].producer : -1;
    if ((!dq && q->kind != MPS_QNOTE_Q) || last < 0 || g->values[q->in[0]].data ||
        g->nodes[last].op != (dq ? MPS_OP_MUL : MPS_OP_CAST))
        return false;
    union mps_op_params p;
    enum mps_op op = dq ? MPS_OP_DEQUANTIZE : MPS_OP_QUANTIZE;
    mps_op_params_default(op, &p);
    p.axis.axis = q->axis;
    return mps_pass_qbecome(g, be, last, op, q->in, 3, &p);
}

/* Whether constants a and b (scales or zero points; -1: omitted, a zero)
   hold the same single value. */
static bool mps_pass_qsame(const struct mps_graph *g, int a, int b)
{
    if (a == b)
        return true;
    const struct mps_value *va = a >= 0 ? &g->values[a] : NULL, *vb = b >= 0 ? &g->values[b] : NULL;
    if ((va && (!va->data || mps_shape_numel(&va->shape) != 1)) ||
        (vb && (!vb->data || mps_shape_numel(&vb->shape) != 1)))
        return false;
    double x = va ? mps_elem_get(va->data, va->dtype, 0) : 0.0, y = vb ? mps_elem_get(vb->data, vb->dtype, 0) : 0.0;
    return x == y;
}

/* The MaxPool node pool reads the bytes x into a value of its own, and the
   composition's last node (Cast) becomes the Flatten node flat of it; else
   both stay as they were. */
static bool mps_pass_qpool_flat(struct mps_graph *g, const struct mps_backend *be, int pool, int flat, int last, int x)
{
    struct mps_node *n = &g->nodes[pool], old = *n;
    int was = n->out[0];
    char name[256];
    snprintf(name, sizeof name, "%s:q", g->values[was].name);
    int v = mps_graph_add_value(g, name, g->values[x].dtype, NULL), *io = mps_graph_alloc(g, 2 * sizeof(int));
    if (v < 0 || !io)
        return false;
    io[0] = x, io[1] = v;
    n->in = io, n->out = io + 1;
    g->values[v].producer = pool, g->values[was].producer = -1;
    struct mps_error ignored;
    if (mps_graph_infer_node(g, n, &ignored) == MPS_OK && (!be->supports || be->supports(g, n)) &&
        mps_pass_qbecome(g, be, last, MPS_OP_FLATTEN, &v, 1, &g->nodes[flat].p))
        return true;
    *n = old; /* v stays, read and written by nothing */
    g->values[was].producer = pool, g->values[v].producer = -1;
    return false;
}

/* Note q's QuantizeLinear of a MaxPool of a DequantizeLinear by the same
   scale and zero point (per tensor), or of a Flatten of such a MaxPool:
   the MaxPool of the bytes themselves, exactly (dequantizing is increasing,
   and quantizing a dequantized byte gives it back; a Flatten moves no
   value), where be runs MaxPool on bytes. The composition's last node
   (Cast) becomes the MaxPool, or the Flatten of the MaxPool node made to
   read the bytes; the rest goes with dead code. */
static bool mps_pass_qpool(struct mps_graph *g, const struct mps_backend *be, const struct mps_qnote *q)
{
    int last = q->kind == MPS_QNOTE_Q && q->out >= 0 ? g->values[q->out].producer : -1, only = -1;
    int pool = q->in[0] >= 0 ? g->values[q->in[0]].producer : -1, flat = -1;
    if (last < 0 || pool < 0 || g->nodes[last].op != MPS_OP_CAST || mps_graph_uses(g, q->in[0], &only) != 1)
        return false;
    if (g->nodes[pool].op == MPS_OP_FLATTEN) { /* a Flatten after the MaxPool (a classifier's head) */
        flat = pool;
        pool = mps_graph_uses(g, g->nodes[flat].in[0], &only) == 1 ? g->values[g->nodes[flat].in[0]].producer : -1;
    }
    if (pool < 0 || g->nodes[pool].op != MPS_OP_MAX_POOL || g->nodes[pool].n_out != 1)
        return false;
    const struct mps_qnote *dq = mps_pass_qnote(g, MPS_QNOTE_DQ, g->nodes[pool].in[0]);
    if (!dq || g->values[dq->in[0]].data || g->values[dq->in[0]].dtype != g->values[q->out].dtype ||
        mps_graph_uses(g, g->nodes[pool].in[0], &only) != 1 || !mps_pass_qsame(g, dq->in[1], q->in[1]) ||
        !mps_pass_qsame(g, dq->in[2], q->in[2]))
        return false;
    if (flat < 0)
        return mps_pass_qbecome(g, be, last, MPS_OP_MAX_POOL, &dq->in[0], 1, &g->nodes[pool].p);
    return mps_pass_qpool_flat(g, be, pool, flat, last, dq->in[0]);
}

/* Whether scale s and zero point z (-1: omitted) are per tensor: one
   value each, the scale an f32 above 0 and finite. */
static bool mps_pass_qtensor(const struct mps_graph *g, int s, int z)
{
    const struct mps_value *vs = s >= 0 ? &g->values[s] : NULL, *vz = z >= 0 ? &g->values[z] : NULL;
    if (!vs || !vs->data || vs->dtype != MPS_F32 || mps_shape_numel(&vs->shape) != 1)
        return false;
    float f = *(const float *)vs->data;
    return f > 0.0f && isfinite(f) && (!vz || (vz->data && mps_shape_numel(&vz->shape) == 1));
}

/* The DequantizeLinear note of value v, per tensor, or NULL. Other nodes
   may read v too (a squeeze-excite's HardSwish goes to a GlobalAveragePool
   and a Mul): the composition then stays for them, until they read the
   bytes too. */
static const struct mps_qnote *mps_pass_qpart(const struct mps_graph *g, int v)
{
    const struct mps_qnote *dq = mps_pass_qnote(g, MPS_QNOTE_DQ, v);
    return dq && mps_pass_qtensor(g, dq->in[1], dq->in[2]) ? dq : NULL;
}

/* The node that Q's note quantizes the output of, read by it alone, and
   the composition's last node (Cast) in *last; -1 where q is not a
   QuantizeLinear per tensor. */
static int mps_pass_qsource(const struct mps_graph *g, const struct mps_qnote *q, int *last)
{
    int only = -1;
    *last = q->kind == MPS_QNOTE_Q && q->out >= 0 ? g->values[q->out].producer : -1;
    if (*last < 0 || g->nodes[*last].op != MPS_OP_CAST || !mps_pass_qtensor(g, q->in[1], q->in[2]) ||
        mps_graph_uses(g, q->in[0], &only) != 1)
        return -1;
    return g->values[q->in[0]].producer;
}

/* Note q's QuantizeLinear of an Add, or of a Relu or Clip (constant bounds)
   of an Add that it alone reads, whose inputs are two DequantizeLinears
   (mps_pass_qpart) of one shape: a QLinearAdd, where be runs it, computing
   the same float steps (qcast.c). The composition's last node (Cast)
   becomes it; the rest goes with dead code. */
static bool mps_pass_qadd(struct mps_graph *g, const struct mps_backend *be, const struct mps_qnote *q)
{
    int last, k = mps_pass_qsource(g, q, &last), only = -1;
    union mps_op_params p;
    mps_op_params_default(MPS_OP_QLINEAR_ADD, &p);
    const struct mps_node *n = k >= 0 ? &g->nodes[k] : NULL;
    if (n && (n->op == MPS_OP_RELU || n->op == MPS_OP_CLIP)) {
        for (int i = 1; i < n->n_in; i++)
            if (n->in[i] >= 0 && !g->values[n->in[i]].data)
                return false;
        p.binary.act = (struct mps_fused_act){.on = true, .op = n->op, .p = n->p.act};
        k = mps_graph_uses(g, n->in[0], &only) == 1 ? g->values[n->in[0]].producer : -1;
        n = k >= 0 ? &g->nodes[k] : NULL;
    }
    if (!n || n->op != MPS_OP_ADD || n->n_in != 2 || n->p.binary.act.on)
        return false;
    const struct mps_qnote *da = mps_pass_qpart(g, n->in[0]), *db = mps_pass_qpart(g, n->in[1]);
    if (!da || !db || !mps_shape_eq(&g->values[da->in[0]].shape, &g->values[db->in[0]].shape))
        return false;
    int in[8] = {da->in[0], da->in[1], da->in[2], db->in[0], db->in[1], db->in[2], q->in[1], q->in[2]};
    return mps_pass_qbecome(g, be, last, MPS_OP_QLINEAR_ADD, in, 8, &p);
}

/* Note q's QuantizeLinear of a Concat of DequantizeLinears (mps_pass_qpart):
   a QLinearConcat, where be runs it, as mps_pass_qadd. */
static bool mps_pass_qconcat(struct mps_graph *g, const struct mps_backend *be, const struct mps_qnote *q)
{
    int last, k = mps_pass_qsource(g, q, &last);
    if (k < 0 || g->nodes[k].op != MPS_OP_CONCAT)
        return false;
    const struct mps_node *n = &g->nodes[k];
    int n_in = 2 + 3 * n->n_in, *in = malloc(sizeof(int) * (size_t)n_in);
    bool ok = in != NULL;
    for (int i = 0; ok && i < n->n_in; i++) {
        const struct mps_qnote *dq = mps_pass_qpart(g, n->in[i]);
        ok = dq != NULL;
        for (int j = 0; ok && j < 3; j++)
            in[2 + 3 * i + j] = dq->in[j];
    }
    union mps_op_params p;
    mps_op_params_default(MPS_OP_QLINEAR_CONCAT, &p);
    p.axis.axis = n->p.axis.axis;
    if (ok)
        in[0] = q->in[1], in[1] = q->in[2];
    ok = ok && mps_pass_qbecome(g, be, last, MPS_OP_QLINEAR_CONCAT, in, n_in, &p);
    free(in);
    return ok;
}

/* Note q's QuantizeLinear of a Mul of two DequantizeLinears
   (mps_pass_qpart), one of the other's shape or of its leading dims (a
   squeeze-excite's scale per channel; that one second: the product is the
   same either way): a QLinearMul, where be runs it, as mps_pass_qadd. */
static bool mps_pass_qmul(struct mps_graph *g, const struct mps_backend *be, const struct mps_qnote *q)
{
    int last, k = mps_pass_qsource(g, q, &last);
    const struct mps_node *n = k >= 0 ? &g->nodes[k] : NULL;
    if (!n || n->op != MPS_OP_MUL || n->n_in != 2 || n->p.binary.act.on)
        return false;
    const struct mps_qnote *da = mps_pass_qpart(g, n->in[0]), *db = mps_pass_qpart(g, n->in[1]);
    if (!da || !db)
        return false;
    if (mps_shape_numel(&g->values[da->in[0]].shape) < mps_shape_numel(&g->values[db->in[0]].shape)) {
        const struct mps_qnote *t = da;
        da = db, db = t;
    }
    union mps_op_params p;
    mps_op_params_default(MPS_OP_QLINEAR_MUL, &p);
    int in[8] = {da->in[0], da->in[1], da->in[2], db->in[0], db->in[1], db->in[2], q->in[1], q->in[2]};
    return mps_pass_qbecome(g, be, last, MPS_OP_QLINEAR_MUL, in, 8, &p);
}

/* Note q's QuantizeLinear of a GlobalAveragePool of a DequantizeLinear
   (mps_pass_qpart): a QLinearGlobalAveragePool, where be runs it, as
   mps_pass_qadd. */
static bool mps_pass_qgap(struct mps_graph *g, const struct mps_backend *be, const struct mps_qnote *q)
{
    int last, k = mps_pass_qsource(g, q, &last);
    const struct mps_qnote *dq =
        k >= 0 && g->nodes[k].op == MPS_OP_GLOBAL_AVERAGE_POOL ? mps_pass_qpart(g, g->nodes[k].in[0]) : NULL;
    if (!dq)
        return false;
    union mps_op_params p;
    mps_op_params_default(MPS_OP_QLINEAR_GAP, &p);
    int in[5] = {dq->in[0], dq->in[1], dq->in[2], q->in[1], q->in[2]};
    return mps_pass_qbecome(g, be, last, MPS_OP_QLINEAR_GAP, in, 5, &p);
}

/* Whether node k (-1: none) is an elementwise op of floats (MPS_TR_UNARY:
   HardSwish, Sigmoid, ...; a Clip's bounds constant) of a DequantizeLinear
   (mps_pass_qpart); *dq: that note. */
static bool mps_pass_qunary_of(const struct mps_graph *g, int k, const struct mps_qnote **dq)
{
    const struct mps_node *n = k >= 0 ? &g->nodes[k] : NULL;
    if (!n || !mps_op_is_unary(n->op) || g->values[n->out[0]].dtype != MPS_F32)
        return false;
    for (int i = 1; i < n->n_in; i++)
        if (n->in[i] >= 0 && !g->values[n->in[i]].data)
            return false;
    return (*dq = mps_pass_qpart(g, n->in[0])) != NULL;
}

/* Note q's QuantizeLinear of such an op (mps_pass_qunary_of), or (floats:
   q a DequantizeLinear) the op of q alone that no QuantizeLinear follows:
   a QLinearUnary, where be runs it, as mps_pass_qadd (qcast.c makes a
   table of the 256 bytes, or of their floats, by the same steps). */
static bool mps_pass_qunary(struct mps_graph *g, const struct mps_backend *be, const struct mps_qnote *q, bool floats)
{
    int k = -1, last = -1; /* the op's node; the node that becomes the QLinearUnary */
    const struct mps_qnote *dq = NULL;
    if (floats && q->kind == MPS_QNOTE_DQ && q->out >= 0 && mps_graph_uses(g, q->out, &k) == 1)
        last = k;
    if (!floats)
        k = mps_pass_qsource(g, q, &last);
    if (!mps_pass_qunary_of(g, k, &dq) || (floats && dq != q))
        return false;
    union mps_op_params p;
    mps_op_params_default(MPS_OP_QLINEAR_UNARY, &p);
    p.binary.act = (struct mps_fused_act){.on = true, .op = g->nodes[k].op, .p = g->nodes[k].p.act};
    int in[5] = {dq->in[0], dq->in[1], dq->in[2], floats ? -1 : q->in[1], floats ? -1 : q->in[2]};
    return mps_pass_qbecome(g, be, last, MPS_OP_QLINEAR_UNARY, in, 5, &p);
}

/* Drops the nodes no output needs any more. */
static enum mps_status mps_pass_prune(struct mps_graph *g, struct mps_error *err)
{
    bool *dead = calloc((size_t)g->n_nodes + 1, sizeof *dead);
    if (!dead)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    mps_pass_dead_code(g, dead);
    free(dead);
    return MPS_OK;
}

/* Replaces QDQ and QLinear compositions with int8 products (ops.def's
   QLinearConv and QLinearMatMul) where be runs them: the node that wrote
   the composition's result becomes the product; what only it read goes. */
static enum mps_status mps_passes_quant(struct mps_graph *g, const struct mps_backend *be, struct mps_error *err)
{
    bool changed = false;
    int notes = g->n_qnotes;
    for (int k = 0; k < notes + g->n_nodes; k++) {
        int in[9], y = -1, last = -1;
        enum mps_op op;
        union mps_op_params p;
        if (k < notes) {
            const struct mps_qnote *q = &g->qnotes[k];
            if (q->kind != MPS_QNOTE_QLINEAR || (last = g->values[q->out].producer) < 0 || g->nodes[last].op == q->op)
                continue;
            memcpy(in, q->in, sizeof in), op = q->op, p = q->p, y = q->out;
        } else if (!mps_pass_qdq(g, k - notes, in, &op, &p, &y, &last)) {
            continue;
        }
        if (!g->values[in[0]].shape_known || !mps_pass_qfits(g, op, in, &p))
            continue;
        if (g->nodes[last].out[0] == y && mps_pass_qbecome(g, be, last, op, in, 9, &p))
            changed = true;
    }
    for (int k = 0; k < notes; k++) /* MaxPools of bytes between a DequantizeLinear and a QuantizeLinear */
        changed |= mps_pass_qpool(g, be, &g->qnotes[k]);
    enum mps_status st;
    if (changed && (st = mps_pass_prune(g, err))) /* the float nodes the products replaced read no value now */
        return st;
    for (int k = 0; k < notes; k++) /* Adds, Concats, elementwise ops, Muls and GlobalAveragePools of bytes between
                                       DequantizeLinears and a QuantizeLinear */
        changed |= mps_pass_qadd(g, be, &g->qnotes[k]) || mps_pass_qconcat(g, be, &g->qnotes[k]) ||
                   mps_pass_qunary(g, be, &g->qnotes[k], false) || mps_pass_qmul(g, be, &g->qnotes[k]) ||
                   mps_pass_qgap(g, be, &g->qnotes[k]);
    for (int k = 0; k < notes; k++) /* an elementwise op of a DequantizeLinear alone, floats out */
        changed |= mps_pass_qunary(g, be, &g->qnotes[k], true);
    for (int k = 0; k < notes; k++) /* the rest: DequantizeLinear and QuantizeLinear nodes of their own */
        changed |= mps_pass_qcast(g, be, &g->qnotes[k]);
    return changed ? mps_pass_prune(g, err) : MPS_OK;
}

enum mps_status mps_passes_fuse(struct mps_graph *g, const struct mps_backend *be, struct mps_error *err)
{
    enum mps_status qst = mps_passes_quant(g, be, err);
    if (qst)
        return qst;
    bool *dead = calloc((size_t)g->n_nodes + 1, sizeof *dead);
    if (!dead)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int k = 0; k < g->n_nodes; k++) {
        struct mps_node *n = &g->nodes[k];
        struct mps_fused_act *act = mps_node_act(n); /* Add..Div have two inputs; f32: the act's output below */
        if (!act)
            continue;
        int only = -1;
        if (act->on || mps_graph_uses(g, n->out[0], &only) != 1 || only < 0)
            continue;
        const struct mps_node *a = &g->nodes[only];
        if (!mps_op_has(a->op, MPS_TR_ACT) || a->in[0] != n->out[0] || g->values[a->out[0]].dtype != MPS_F32)
            continue;
        if ((n->op == MPS_OP_QLINEAR_CONV || n->op == MPS_OP_QLINEAR_MATMUL) && a->op != MPS_OP_RELU &&
            a->op != MPS_OP_CLIP && a->op != MPS_OP_LEAKY_RELU)
            continue; /* the int8 store's clamp and slope */
        *act = (struct mps_fused_act){.on = true, .op = a->op, .p = a->p.act};
        if (be->supports && !be->supports(g, n)) {
            act->on = false;
            continue;
        }
        g->values[n->out[0]].producer = -1;
        n->out[0] = a->out[0];
        g->values[n->out[0]].producer = k;
        dead[only] = true;
    }
    mps_graph_remove_nodes(g, dead);
    free(dead);
    return MPS_OK;
}
