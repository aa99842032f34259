/* onnx_qdq.c: static quantization of a float model into the standard QDQ
   form (model.h's mps_qdq_*; `mpsrun quantize`), the form onnxruntime's
   quantizer writes and runs:

       x -> QuantizeLinear -> DequantizeLinear -> Conv <- DequantizeLinear <- W (int8)
                                                   ^---- DequantizeLinear <- B (int32)

   Activations are uint8 with a scale and zero point per tensor from the
   calibrated range; weights int8, symmetric, one scale per output channel;
   a bias int32 with zero point 0 and scale x's times the weight's, so that
   it adds in the accumulator's units. Everything is edited in the decoded
   protobuf, each new message, string and array malloc'd, so that the
   file's free_unpacked frees them with the rest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

static Onnx__TensorProto *mps_qdq_init(const Onnx__GraphProto *gp, const char *name, size_t *at)
{
    for (size_t k = 0; name && name[0] && k < gp->n_initializer; k++)
        if (gp->initializer[k]->name && !strcmp(gp->initializer[k]->name, name)) {
            if (at)
                *at = k;
            return gp->initializer[k];
        }
    return NULL;
}

/* The float values of initializer t (raw or float_data; NULL for another
   type or external data), count in *n. */
static const float *mps_qdq_floats(const Onnx__TensorProto *t, int64_t *n)
{
    *n = 1;
    for (size_t d = 0; d < t->n_dims; d++)
        *n *= t->dims[d];
    if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return NULL;
    if (t->has_raw_data && t->raw_data.len == (size_t)*n * 4 && (uintptr_t)t->raw_data.data % 4 == 0)
        return (const float *)t->raw_data.data;
    if (t->n_float_data == (size_t)*n)
        return t->float_data;
    return NULL;
}

static int64_t mps_qdq_attr(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    for (size_t a = 0; a < n->n_attribute; a++)
        if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, name))
            return n->attribute[a]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT ? (int64_t)n->attribute[a]->f
                                                                                         : n->attribute[a]->i;
    return def;
}

static bool mps_qdq_default_domain(const Onnx__NodeProto *n)
{
    return !n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx");
}

/* The nodes reading tensor name, and the last of them. */
static int mps_qdq_readers(const Onnx__GraphProto *gp, const char *name, size_t *last)
{
    int count = 0;
    for (size_t k = 0; k < gp->n_node; k++)
        for (size_t i = 0; i < gp->node[k]->n_input; i++)
            if (!strcmp(gp->node[k]->input[i], name))
                count++, *last = k;
    for (size_t o = 0; o < gp->n_output; o++)
        count += !strcmp(gp->output[o]->name, name);
    return count;
}

static bool mps_qdq_excluded(const Onnx__NodeProto *n, const char *const *exclude, int n_exclude)
{
    for (int e = 0; e < n_exclude; e++)
        if (n->name && !strcmp(n->name, exclude[e]))
            return true;
    return false;
}

/* Whether node k is a product quantize takes; *axis: its weight's output-channel axis. */
static bool mps_qdq_product(const Onnx__GraphProto *gp, size_t k, const char *const *exclude, int n_exclude, int *axis)
{
    const Onnx__NodeProto *n = gp->node[k];
    if (mps_qdq_excluded(n, exclude, n_exclude) || !mps_qdq_default_domain(n) || n->n_input < 2 || n->n_output < 1 ||
        !n->op_type)
        return false;
    const Onnx__TensorProto *w = mps_qdq_init(gp, n->input[1], NULL);
    int64_t count;
    if (!w || !mps_qdq_floats(w, &count))
        return false;
    if (!strcmp(n->op_type, "Conv"))
        return *axis = 0, w->n_dims == 4;
    if (!strcmp(n->op_type, "MatMul"))
        return *axis = 1, w->n_dims == 2;
    if (!strcmp(n->op_type, "Gemm"))
        return *axis = mps_qdq_attr(n, "transB", 0) ? 0 : 1, w->n_dims == 2 && !mps_qdq_attr(n, "transA", 0);
    return false;
}

/* Product k's output point: its output, or that of a Relu or Clip that alone reads it. */
static const char *mps_qdq_out(const Onnx__GraphProto *gp, size_t k)
{
    const char *y = gp->node[k]->output[0];
    size_t last = 0;
    if (mps_qdq_readers(gp, y, &last) == 1 && last > k && mps_qdq_default_domain(gp->node[last]) &&
        (!strcmp(gp->node[last]->op_type, "Relu") || !strcmp(gp->node[last]->op_type, "Clip")) &&
        gp->node[last]->n_output == 1)
        return gp->node[last]->output[0];
    return y;
}

static int mps_qdq_find(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return i;
    return -1;
}

static bool mps_qdq_add_name(const char ***names, int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp((*names)[i], name))
            return true;
    const char **more = realloc((void *)*names, sizeof *more * (size_t)(*n + 1));
    if (!more)
        return false;
    more[(*n)++] = name;
    *names = more;
    return true;
}

/* Float attribute name of node n, def where it has none. */
static float mps_qdq_fattr(const Onnx__NodeProto *n, const char *name, float def)
{
    for (size_t a = 0; a < n->n_attribute; a++)
        if (n->attribute[a]->name && !strcmp(n->attribute[a]->name, name) &&
            n->attribute[a]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
            return n->attribute[a]->f;
    return def;
}

/* Whether Mul node n is x times HardSigmoid(x) with HardSwish's constants (an export's HardSwish before opset
   14; passes.c's mps_pass_is_hard_swish makes it one op). */
static bool mps_qdq_hard_swish(const Onnx__GraphProto *gp, const Onnx__NodeProto *n)
{
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *h = gp->node[k];
        for (int i = 0; i < 2; i++)
            if (h->n_output == 1 && h->n_input == 1 && !strcmp(h->output[0], n->input[i]) && h->op_type &&
                !strcmp(h->op_type, "HardSigmoid") && !strcmp(h->input[0], n->input[1 - i]) &&
                fabsf(mps_qdq_fattr(h, "alpha", 0.2f) - 1.0f / 6.0f) < 1e-7f && mps_qdq_fattr(h, "beta", 0.5f) == 0.5f)
                return true;
    }
    return false;
}

static int64_t mps_qdq_opset(const Onnx__ModelProto *mp)
{
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const char *d = mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "";
        if (!d[0] || !strcmp(d, "ai.onnx"))
            return mp->opset_import[i]->version;
    }
    return -1;
}

enum mps_status mps_qdq_points(const struct mps_onnx_file *f, const char *const *exclude, int n_exclude,
                               const char ***names, int *n, int *n_nodes, struct mps_error *err)
{
    const Onnx__GraphProto *gp = f->mp->graph;
    *names = NULL, *n = 0, *n_nodes = 0;
    int64_t opset = mps_qdq_opset(f->mp);
    if (opset < 13)
        return mps_fail(err, MPS_ERR_MODEL,
                        "its opset is %lld: the weights' scales per channel need DequantizeLinear's axis, "
                        "opset 13 on (export the model at opset 13 or later)",
                        (long long)opset);
    for (int e = 0; e < n_exclude; e++) {
        bool found = false;
        for (size_t k = 0; gp && k < gp->n_node && !found; k++)
            found = gp->node[k]->name && !strcmp(gp->node[k]->name, exclude[e]);
        if (!found)
            return mps_fail(err, MPS_ERR_USAGE, "--exclude %s: the model has no node of that name", exclude[e]);
    }
    for (size_t k = 0; gp && k < gp->n_node; k++) {
        int axis;
        if (!mps_qdq_product(gp, k, exclude, n_exclude, &axis))
            continue;
        ++*n_nodes;
        if (!mps_qdq_add_name(names, n, gp->node[k]->input[0]) || !mps_qdq_add_name(names, n, mps_qdq_out(gp, k)))
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    /* a Mul of two run-time tensors (mobilenet_v3's squeeze-excite scaling; not x times HardSigmoid(x), an
       export's HardSwish, which mpsrun runs as one op) and a GlobalAveragePool: their inputs and output too, as
       onnxruntime's quantizer takes them, so that they run on bytes (passes.c: QLinearMul,
       QLinearGlobalAveragePool) and what made their inputs writes bytes (the block's HardSwish: QLinearUnary) */
    for (size_t k = 0; gp && k < gp->n_node && *n_nodes; k++) {
        const Onnx__NodeProto *node = gp->node[k];
        bool mul = node->op_type && !strcmp(node->op_type, "Mul") && node->n_input == 2 &&
                   !mps_qdq_init(gp, node->input[0], NULL) && !mps_qdq_init(gp, node->input[1], NULL) &&
                   !mps_qdq_hard_swish(gp, node);
        bool gap = node->op_type && !strcmp(node->op_type, "GlobalAveragePool") && node->n_input == 1;
        if (!(mul || gap) || !mps_qdq_default_domain(node) || node->n_output != 1 ||
            mps_qdq_excluded(node, exclude, n_exclude))
            continue;
        for (size_t i = 0; i < node->n_input; i++)
            if (!mps_qdq_add_name(names, n, node->input[i]))
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        if (!mps_qdq_add_name(names, n, node->output[0]))
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    if (!*n_nodes)
        return mps_fail(err, MPS_ERR_MODEL,
                        "no node to quantize: no Conv (2-D), MatMul or Gemm with float initializer weights%s",
                        n_exclude ? " that --exclude leaves" : "");
    /* a MaxPool's input too, where its output is a point (its range then goes to the output: mps_qdq_share), so
       that the MaxPool runs on bytes and what made its input (squeezenet1_1's Concat before two of its MaxPools:
       QLinearConcat) writes them; in reverse, so that a chain of MaxPools becomes points back to its start */
    for (size_t k = gp->n_node; k-- > 0;) {
        const Onnx__NodeProto *node = gp->node[k];
        if (mps_qdq_default_domain(node) && !strcmp(node->op_type, "MaxPool") && node->n_input >= 1 &&
            node->n_output == 1 && mps_qdq_find(*names, *n, node->output[0]) >= 0 &&
            !mps_qdq_add_name(names, n, node->input[0]))
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    return MPS_OK;
}

enum mps_status mps_qdq_observe(struct mps_onnx_file *f, const char *const *names, int n, struct mps_error *err)
{
    Onnx__GraphProto *gp = f->mp->graph;
    Onnx__ValueInfoProto **out = realloc(gp->output, sizeof *out * (gp->n_output + (size_t)n));
    if (!out)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    gp->output = out;
    for (int i = 0; i < n; i++) {
        Onnx__ValueInfoProto *vi = malloc(sizeof *vi);
        Onnx__TypeProto *tp = malloc(sizeof *tp);
        Onnx__TypeProto__Tensor *tt = malloc(sizeof *tt);
        char *name = strdup(names[i]);
        if (!vi || !tp || !tt || !name) {
            free(vi), free(tp), free(tt), free(name);
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
        *tt = (Onnx__TypeProto__Tensor)ONNX__TYPE_PROTO__TENSOR__INIT;
        tt->has_elem_type = 1, tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        *tp = (Onnx__TypeProto)ONNX__TYPE_PROTO__INIT;
        tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp->tensor_type = tt;
        *vi = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
        vi->name = name, vi->type = tp;
        gp->output[gp->n_output++] = vi; /* after the file's own: mps_qdq_write takes the last ones off */
    }
    return MPS_OK;
}

/* A new initializer: name, type, dims, the bytes of data (copied). */
static Onnx__TensorProto *mps_qdq_tensor(const char *name, int32_t type, const int64_t *dims, size_t n_dims,
                                         const void *data, size_t bytes)
{
    Onnx__TensorProto *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = strdup(name);
    t->dims = malloc(sizeof *t->dims * (n_dims + 1));
    t->raw_data.data = malloc(bytes + 1);
    if (!t->name || !t->dims || !t->raw_data.data) {
        onnx__tensor_proto__free_unpacked(t, NULL);
        return NULL;
    }
    if (n_dims) /* a scalar has no dims (and dims may be NULL) */
        memcpy(t->dims, dims, sizeof *dims * n_dims);
    t->n_dims = n_dims;
    t->has_data_type = 1, t->data_type = type;
    memcpy(t->raw_data.data, data, bytes);
    t->has_raw_data = 1, t->raw_data.len = bytes;
    return t;
}

/* A new node op(in[n_in]) -> out, axis set when axis >= 0. */
static Onnx__NodeProto *mps_qdq_node(const char *op, const char *const *in, size_t n_in, const char *out, int axis)
{
    Onnx__NodeProto *n = malloc(sizeof *n);
    if (!n)
        return NULL;
    *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    n->input = calloc(n_in, sizeof *n->input);
    n->output = calloc(1, sizeof *n->output);
    n->op_type = strdup(op);
    size_t len = strlen(out) + 8;
    n->name = malloc(len);
    bool ok = n->input && n->output && n->op_type && n->name && (n->output[0] = strdup(out));
    n->n_output = ok;
    for (size_t i = 0; ok && i < n_in; i++)
        ok = (n->input[i] = strdup(in[i])) != NULL, n->n_input = i + ok;
    if (ok)
        snprintf(n->name, len, "%s:%s", out, op[0] == 'Q' ? "q" : "dq");
    if (ok && axis >= 0) {
        Onnx__AttributeProto *a = malloc(sizeof *a);
        n->attribute = malloc(sizeof *n->attribute);
        ok = a && n->attribute;
        if (ok) {
            *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
            a->name = strdup("axis");
            a->has_type = 1, a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, a->has_i = 1, a->i = axis;
            n->attribute[0] = a, n->n_attribute = 1;
            ok = a->name != NULL;
        } else {
            free(a);
        }
    }
    if (!ok) {
        onnx__node_proto__free_unpacked(n, NULL);
        return NULL;
    }
    return n;
}

/* The growing lists of the rewritten graph. */
struct mps_qdq_out {
    Onnx__NodeProto **node;
    size_t n_node, cap_node;
    Onnx__TensorProto **init;
    size_t n_init, cap_init;
    bool oom;
};

static void *mps_qdq_push(void *arr, size_t *n, size_t *cap, void *item, bool *oom)
{
    void **a = arr;
    if (!item) {
        *oom = true;
        return arr;
    }
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        void **more = realloc(a, sizeof *more * c);
        if (!more) {
            *oom = true;
            return arr;
        }
        a = more, *cap = c;
    }
    a[(*n)++] = item;
    return a;
}

static void mps_qdq_add_node(struct mps_qdq_out *o, Onnx__NodeProto *n)
{
    o->node = mps_qdq_push(o->node, &o->n_node, &o->cap_node, n, &o->oom);
}

static void mps_qdq_add_init(struct mps_qdq_out *o, Onnx__TensorProto *t)
{
    o->init = mps_qdq_push(o->init, &o->n_init, &o->cap_init, t, &o->oom);
}

/* The pair Q, DQ of point name (scale s, zero point z) into o. */
static void mps_qdq_pair(struct mps_qdq_out *o, const char *name, float lo, float hi)
{
    lo = lo < 0 ? lo : 0, hi = hi > 0 ? hi : 0;
    float s = (hi - lo) / 255.0f;
    s = s > 0 && isfinite(s) ? s : 1.0f;
    double zf = nearbyint(-lo / s);
    uint8_t z = (uint8_t)(zf < 0 ? 0 : zf > 255 ? 255 : zf);
    char sn[600], zn[600], qn[600], dn[600];
    snprintf(sn, sizeof sn, "%.500s:scale", name), snprintf(zn, sizeof zn, "%.500s:zero_point", name);
    snprintf(qn, sizeof qn, "%.500s:q", name), snprintf(dn, sizeof dn, "%.500s:dq", name);
    mps_qdq_add_init(o, mps_qdq_tensor(sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, NULL, 0, &s, 4));
    mps_qdq_add_init(o, mps_qdq_tensor(zn, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, NULL, 0, &z, 1));
    mps_qdq_add_node(o, mps_qdq_node("QuantizeLinear", (const char *[]){name, sn, zn}, 3, qn, -1));
    mps_qdq_add_node(o, mps_qdq_node("DequantizeLinear", (const char *[]){qn, sn, zn}, 3, dn, -1));
}

/* Product n's weights (channel axis axis) as int8 and its bias as int32, each
   behind a DequantizeLinear; x_scale is its input's. Rewires n to them. */
static enum mps_status mps_qdq_weights(struct mps_qdq_out *o, const Onnx__GraphProto *gp, Onnx__NodeProto *n, int axis,
                                       float x_scale, struct mps_error *err)
{
    const Onnx__TensorProto *w = mps_qdq_init(gp, n->input[1], NULL);
    int64_t count, ch = w->dims[axis], inner = 1;
    const float *wf = mps_qdq_floats(w, &count);
    for (size_t d = (size_t)axis + 1; d < w->n_dims; d++)
        inner *= w->dims[d];
    int8_t *q = malloc((size_t)count + 1);
    float *s = malloc(sizeof *s * (size_t)ch);
    int8_t *z = calloc((size_t)ch, 1);
    if (!q || !s || !z) {
        free(q), free(s), free(z);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    for (int64_t c = 0; c < ch; c++) {
        float amax = 0;
        for (int64_t i = 0; i < count; i++)
            if (i / inner % ch == c)
                amax = fabsf(wf[i]) > amax ? fabsf(wf[i]) : amax;
        s[c] = amax > 0 ? amax / 127.0f : 1.0f;
    }
    for (int64_t i = 0; i < count; i++) {
        double v = nearbyint(wf[i] / s[i / inner % ch]);
        q[i] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
    }
    char qn[600], sn[600], zn[600], dn[600];
    const char *wn = n->input[1];
    snprintf(qn, sizeof qn, "%.500s:int8", wn), snprintf(sn, sizeof sn, "%.500s:scale", wn);
    for (size_t k = 0; k < o->n_init; k++)
        if (!strcmp(o->init[k]->name, qn)) { /* shared with a product before: its pair serves */
            free(q), free(s), free(z);
            return mps_fail(err, MPS_ERR_MODEL,
                            "node '%s' shares its weights '%s' with another product: "
                            "name one in --exclude",
                            n->name ? n->name : "", wn);
        }
    snprintf(zn, sizeof zn, "%.500s:zero_point", wn), snprintf(dn, sizeof dn, "%.500s:dq", wn);
    mps_qdq_add_init(o, mps_qdq_tensor(qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, w->dims, w->n_dims, q, (size_t)count));
    mps_qdq_add_init(o, mps_qdq_tensor(sn, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, &ch, 1, s, sizeof *s * (size_t)ch));
    mps_qdq_add_init(o, mps_qdq_tensor(zn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, &ch, 1, z, (size_t)ch));
    mps_qdq_add_node(o, mps_qdq_node("DequantizeLinear", (const char *[]){qn, sn, zn}, 3, dn, axis));
    const Onnx__TensorProto *b = n->n_input > 2 ? mps_qdq_init(gp, n->input[2], NULL) : NULL;
    int64_t nb = 0;
    const float *bf = b ? mps_qdq_floats(b, &nb) : NULL;
    char bq[600], bs[600], bz[600], bd[600];
    if (bf && nb == ch && b->n_dims == 1) {
        int32_t *bi = malloc(sizeof *bi * (size_t)ch), *b0 = calloc((size_t)ch, sizeof *b0);
        float *bsc = malloc(sizeof *bsc * (size_t)ch);
        for (int64_t c = 0; bi && b0 && bsc && c < ch; c++) {
            bsc[c] = x_scale * s[c];
            double v = nearbyint(bf[c] / bsc[c]);
            bi[c] = (int32_t)(v < -2147483647.0 ? -2147483647.0 : v > 2147483647.0 ? 2147483647.0 : v);
        }
        const char *bn = n->input[2];
        snprintf(bq, sizeof bq, "%.500s:int32", bn), snprintf(bs, sizeof bs, "%.500s:scale", bn);
        snprintf(bz, sizeof bz, "%.500s:zero_point", bn), snprintf(bd, sizeof bd, "%.500s:dq", bn);
        if (bi && b0 && bsc) {
            mps_qdq_add_init(o, mps_qdq_tensor(bq, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, &ch, 1, bi, 4 * (size_t)ch));
            mps_qdq_add_init(o, mps_qdq_tensor(bs, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, &ch, 1, bsc, 4 * (size_t)ch));
            mps_qdq_add_init(o, mps_qdq_tensor(bz, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, &ch, 1, b0, 4 * (size_t)ch));
            mps_qdq_add_node(o, mps_qdq_node("DequantizeLinear", (const char *[]){bq, bs, bz}, 3, bd, 0));
        } else {
            o->oom = true;
        }
        free(bi), free(b0), free(bsc);
    } else {
        bf = NULL;
    }
    free(q), free(s), free(z);
    char *wd = strdup(dn), *bdd = bf ? strdup(bd) : NULL;
    if (!wd || (bf && !bdd) || o->oom) {
        free(wd), free(bdd);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    free(n->input[1]), n->input[1] = wd;
    if (bf)
        free(n->input[2]), n->input[2] = bdd;
    return MPS_OK;
}

/* Drops the initializers no node reads any more (the float weights). */
static void mps_qdq_drop_unread(Onnx__GraphProto *gp)
{
    size_t kept = 0, last;
    for (size_t k = 0; k < gp->n_initializer; k++) {
        Onnx__TensorProto *t = gp->initializer[k];
        if (t->name && mps_qdq_readers(gp, t->name, &last) == 0) {
            for (size_t i = 0; i < gp->n_input; i++) /* IR < 4 lists initializers among the inputs */
                if (!strcmp(gp->input[i]->name, t->name)) {
                    onnx__value_info_proto__free_unpacked(gp->input[i], NULL);
                    memmove(gp->input + i, gp->input + i + 1, sizeof *gp->input * (gp->n_input - i - 1));
                    gp->n_input--;
                    break;
                }
            onnx__tensor_proto__free_unpacked(t, NULL);
            continue;
        }
        gp->initializer[kept++] = t;
    }
    gp->n_initializer = kept;
}

static enum mps_status mps_qdq_write_named(struct mps_onnx_file *f, const char *const *names, const float *lo,
                                           const float *hi, int n, const char *const *exclude, int n_exclude,
                                           unsigned char **buf, size_t *len, struct mps_error *err);

/* Whether node moves its input's values without changing one: a MaxPool
   (each output one of its inputs) or a Flatten. */
static bool mps_qdq_moves(const Onnx__NodeProto *node)
{
    return mps_qdq_default_domain(node) && (!strcmp(node->op_type, "MaxPool") || !strcmp(node->op_type, "Flatten")) &&
           node->n_input >= 1 && node->n_output == 1;
}

/* A MaxPool's or Flatten's output that is a point takes the range of its
   input where that is one, or of the point a chain of such nodes starts
   from (a classifier's MaxPool then Flatten), as onnxruntime's quantizer
   does for MaxPool: the pair after it then has the input's scale and zero
   point, and the MaxPool (and the Flatten) run on the bytes (passes.c). In
   the nodes' order, so that a chain of them shares one range. */
static void mps_qdq_share(const Onnx__GraphProto *gp, const char *const *names, int n, float *lo, float *hi)
{
    for (size_t k = 0; gp && k < gp->n_node; k++) {
        const Onnx__NodeProto *node = gp->node[k];
        int out = mps_qdq_moves(node) ? mps_qdq_find(names, n, node->output[0]) : -1;
        if (out < 0)
            continue;
        const char *v = node->input[0];
        int in = mps_qdq_find(names, n, v);
        for (size_t j = k; in < 0 && j-- > 0;) /* back through the chain's nodes, whose outputs are no points */
            if (gp->node[j]->n_output && !strcmp(gp->node[j]->output[0], v)) {
                if (!mps_qdq_moves(gp->node[j]))
                    break;
                v = gp->node[j]->input[0];
                in = mps_qdq_find(names, n, v);
            }
        if (in >= 0)
            lo[out] = lo[in], hi[out] = hi[in];
    }
}

enum mps_status mps_qdq_write(struct mps_onnx_file *f, const char *const *names, const float *lo, const float *hi,
                              int n, const char *const *exclude, int n_exclude, unsigned char **buf, size_t *len,
                              struct mps_error *err)
{
    *buf = NULL, *len = 0;
    char **own = calloc((size_t)n + 1, sizeof *own); /* the names live in strings the rewiring frees */
    for (int i = 0; own && i < n; i++)
        if (!(own[i] = strdup(names[i]))) {
            for (int j = 0; j < i; j++)
                free(own[j]);
            free(own), own = NULL;
        }
    float *range = own ? malloc(sizeof *range * 2 * ((size_t)n + 1)) : NULL;
    if (!range) {
        for (int i = 0; own && i < n; i++)
            free(own[i]);
        free(own);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    memcpy(range, lo, sizeof *range * (size_t)n), memcpy(range + n, hi, sizeof *range * (size_t)n);
    mps_qdq_share(f->mp->graph, names, n, range, range + n);
    enum mps_status st =
        mps_qdq_write_named(f, (const char *const *)own, range, range + n, n, exclude, n_exclude, buf, len, err);
    for (int i = 0; i < n; i++)
        free(own[i]);
    free(own), free(range);
    return st;
}

static enum mps_status mps_qdq_write_named(struct mps_onnx_file *f, const char *const *names, const float *lo,
                                           const float *hi, int n, const char *const *exclude, int n_exclude,
                                           unsigned char **buf, size_t *len, struct mps_error *err)
{
    Onnx__GraphProto *gp = f->mp->graph;
    for (int i = 0; i < n && gp->n_output > 0; i++) /* the observed points come off the outputs again */
        onnx__value_info_proto__free_unpacked(gp->output[--gp->n_output], NULL);
    struct mps_qdq_out o = {0};
    enum mps_status st = MPS_OK;
    for (size_t k = 0; k < gp->n_node && !st; k++) { /* the weights' DequantizeLinear nodes come first */
        int axis, x = -1;
        if (mps_qdq_product(gp, k, exclude, n_exclude, &axis) &&
            (x = mps_qdq_find(names, n, gp->node[k]->input[0])) >= 0) {
            float l = lo[x] < 0 ? lo[x] : 0, h = hi[x] > 0 ? hi[x] : 0, s = (h - l) / 255.0f;
            st = mps_qdq_weights(&o, gp, gp->node[k], axis, s > 0 && isfinite(s) ? s : 1.0f, err);
        }
    }
    for (size_t i = 0; i < gp->n_input && !st; i++) { /* the graph's inputs: quantized before any node */
        int p = mps_qdq_find(names, n, gp->input[i]->name);
        if (p >= 0)
            mps_qdq_pair(&o, names[p], lo[p], hi[p]);
    }
    for (size_t k = 0; k < gp->n_node && !st; k++) {
        Onnx__NodeProto *node = gp->node[k];
        for (size_t i = 0; i < node->n_input; i++) { /* read through the pair */
            int p = mps_qdq_find(names, n, node->input[i]);
            char dn[600], *s;
            if (p < 0)
                continue;
            snprintf(dn, sizeof dn, "%.500s:dq", names[p]);
            if (!(s = strdup(dn))) {
                o.oom = true;
                break;
            }
            free(node->input[i]), node->input[i] = s;
        }
        mps_qdq_add_node(&o, node);
        for (size_t j = 0; j < node->n_output; j++) {
            int p = mps_qdq_find(names, n, node->output[j]);
            if (p >= 0)
                mps_qdq_pair(&o, names[p], lo[p], hi[p]);
        }
    }
    if (!st && o.oom)
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    if (st) { /* the original nodes stay the graph's; the new ones go */
        for (size_t k = 0; k < o.n_node; k++) {
            bool original = false;
            for (size_t j = 0; j < gp->n_node && !original; j++)
                original = gp->node[j] == o.node[k];
            if (!original)
                onnx__node_proto__free_unpacked(o.node[k], NULL);
        }
        for (size_t k = 0; k < o.n_init; k++)
            onnx__tensor_proto__free_unpacked(o.init[k], NULL);
        free(o.node), free(o.init);
        return st;
    }
    free(gp->node);
    gp->node = o.node, gp->n_node = o.n_node;
    Onnx__TensorProto **inits = realloc(gp->initializer, sizeof *inits * (gp->n_initializer + o.n_init + 1));
    if (!inits) {
        for (size_t k = 0; k < o.n_init; k++)
            onnx__tensor_proto__free_unpacked(o.init[k], NULL);
        free(o.init);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    memcpy(inits + gp->n_initializer, o.init, sizeof *inits * o.n_init);
    gp->initializer = inits, gp->n_initializer += o.n_init;
    free(o.init);
    mps_qdq_drop_unread(gp);
    *len = onnx__model_proto__get_packed_size(f->mp);
    if (!(*buf = malloc(*len + 1)))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    onnx__model_proto__pack(f->mp, *buf);
    return MPS_OK;
}
