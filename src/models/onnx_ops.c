/* onnx_ops.c: maps each ONNX node to IR nodes, one row per ONNX op. A row
   lists every attribute the op has in opsets 6 to 21; any other attribute,
   or a value mpsrun cannot honour, fails the load naming node, op and
   reason, so that nothing runs with wrong numbers. Older opsets' attribute
   forms become the constant inputs of the newest form (ops.def). The rows
   and their mappers live by op family: onnx_ops_math.c (products,
   windows, normalization, elementwise), onnx_ops_tensor.c (reductions,
   layout, indexing, constants) and onnx_signal.c (DFT, STFT, the window
   functions); this file reads attributes and runs a row. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- attributes -------------------------------------------------------------- */

const Onnx__AttributeProto *mps_attr(const struct mps_onnx_node *n, const char *name)
{
    for (size_t i = 0; i < n->np->n_attribute; i++)
        if (n->np->attribute[i]->name && strcmp(n->np->attribute[i]->name, name) == 0)
            return n->np->attribute[i];
    return NULL;
}

/* The type an attribute has, from its type field or, in old files, its content. */
static Onnx__AttributeProto__AttributeType mps_attr_type(const Onnx__AttributeProto *a)
{
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return a->type;
    if (a->n_ints)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (a->n_floats)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (a->t)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (a->has_s)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (a->has_f)
        return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
}

enum mps_status mps_attr_int(const struct mps_onnx_node *n, const char *name, int64_t def, int64_t *v,
                             struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *v = def;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return mps_onnx_fail(n, err, "attribute '%s' must be an int", name);
    *v = a->i;
    return MPS_OK;
}

enum mps_status mps_attr_float(const struct mps_onnx_node *n, const char *name, float def, float *v,
                               struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *v = def;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return mps_onnx_fail(n, err, "attribute '%s' must be a float", name);
    *v = a->f;
    return MPS_OK;
}

/* Reads ints attribute name into v[max]; *count is -1 when it is absent. */
enum mps_status mps_attr_ints(const struct mps_onnx_node *n, const char *name, int64_t *v, int max, int *count,
                              struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *count = -1;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return mps_onnx_fail(n, err, "attribute '%s' must be a list of ints", name);
    if (a->n_ints > (size_t)max)
        return mps_onnx_fail(n, err, "attribute '%s' has %zu values; at most %d are supported", name, a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++)
        v[i] = a->ints[i];
    *count = (int)a->n_ints;
    return MPS_OK;
}

enum mps_status mps_attr_floats(const struct mps_onnx_node *n, const char *name, float *v, int max, int *count,
                                struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *count = -1;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS)
        return mps_onnx_fail(n, err, "attribute '%s' must be a list of floats", name);
    if (a->n_floats > (size_t)max)
        return mps_onnx_fail(n, err, "attribute '%s' has %zu values; at most %d are supported", name, a->n_floats, max);
    for (size_t i = 0; i < a->n_floats; i++)
        v[i] = a->floats[i];
    *count = (int)a->n_floats;
    return MPS_OK;
}

enum mps_status mps_attr_strings(const struct mps_onnx_node *n, const char *name, char (*v)[32], int max, int *count,
                                 struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    *count = -1;
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS)
        return mps_onnx_fail(n, err, "attribute '%s' must be a list of strings", name);
    if (a->n_strings > (size_t)max)
        return mps_onnx_fail(n, err, "attribute '%s' has %zu values; at most %d are supported", name, a->n_strings,
                             max);
    for (size_t i = 0; i < a->n_strings; i++)
        snprintf(v[i], 32, "%.*s", (int)(a->strings[i].len < 31 ? a->strings[i].len : 31),
                 (const char *)a->strings[i].data);
    *count = (int)a->n_strings;
    return MPS_OK;
}

enum mps_status mps_attr_string(const struct mps_onnx_node *n, const char *name, const char *def, char *v, size_t size,
                                struct mps_error *err)
{
    const Onnx__AttributeProto *a = mps_attr(n, name);
    snprintf(v, size, "%s", def);
    if (!a)
        return MPS_OK;
    if (mps_attr_type(a) != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return mps_onnx_fail(n, err, "attribute '%s' must be a string", name);
    snprintf(v, size, "%.*s", (int)(a->s.len < size ? a->s.len : size - 1), (const char *)a->s.data);
    return MPS_OK;
}

/* Appends a constant i64 vector as input slot `slot` of n. */
enum mps_status mps_attr_to_input(struct mps_onnx_ctx *c, struct mps_onnx_node *n, int slot, const int64_t *v,
                                  int count, struct mps_error *err)
{
    struct mps_shape s = {1, {count}};
    int id = mps_onnx_const(c, n->name, MPS_I64, &s, v);
    if (id < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    while (n->n_in < slot)
        n->in[n->n_in++] = -1;
    n->in[slot] = id;
    if (n->n_in <= slot)
        n->n_in = slot + 1;
    return MPS_OK;
}

static bool mps_onnx_listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return false; /* and strstr would find "" everywhere, forever */
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
            return true;
    return false;
}

enum mps_status mps_onnx_map_node(struct mps_onnx_ctx *c, struct mps_onnx_node *n, struct mps_error *err)
{
    static const struct {
        const struct mps_onnx_rule *rows;
        const size_t *count;
    } families[] = {{mps_onnx_rules_math, &mps_onnx_n_rules_math},
                    {mps_onnx_rules_tensor, &mps_onnx_n_rules_tensor},
                    {mps_onnx_rules_signal, &mps_onnx_n_rules_signal},
                    {mps_onnx_rules_quant, &mps_onnx_n_rules_quant},
                    {mps_onnx_rules_ms, &mps_onnx_n_rules_ms},
                    {mps_onnx_rules_random, &mps_onnx_n_rules_random}};
    const struct mps_onnx_rule *r = NULL;
    bool ms = n->np->domain && !strcmp(n->np->domain, "com.microsoft");
    for (size_t f = 0; f < sizeof families / sizeof families[0] && !r; f++)
        for (size_t i = 0; i < *families[f].count && !r; i++)
            if ((families[f].rows == mps_onnx_rules_ms) == ms &&
                strcmp(families[f].rows[i].op_type, n->np->op_type) == 0)
                r = &families[f].rows[i];
    if (!r && ms)
        return mps_onnx_fail(n, err,
                             "op %s of domain 'com.microsoft' is not supported (of that domain mpsrun takes the "
                             "QLinear ops onnxruntime's quantizer writes)",
                             n->np->op_type);
    if (!r)
        return mps_onnx_fail(n, err, "op %s is not supported", n->np->op_type);
    for (size_t i = 0; i < n->np->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->np->attribute[i];
        if (!a->name || !mps_onnx_listed(r->attrs, a->name))
            return mps_onnx_fail(n, err, "attribute '%s' is not supported", a->name ? a->name : "");
        if (a->ref_attr_name)
            return mps_onnx_fail(n, err, "attribute '%s' refers to a function attribute", a->name);
    }
    union mps_op_params p;
    mps_op_params_default(r->op, &p);
    n->last_op = -1;
    enum mps_status st = r->map ? r->map(c, n, &p, err) : MPS_OK;
    if (st)
        return st;
    enum mps_op op = n->last_op >= 0 ? (enum mps_op)n->last_op : r->op;
    if (op != r->op) /* the last node of an expansion, with its own defaults */
        mps_op_params_default(op, &p);
    /* Trailing omitted outputs are dropped; an omitted one in the middle gets a throwaway value. */
    while (n->n_out > 0 && n->out[n->n_out - 1] < 0)
        n->n_out--;
    while (n->n_in > 0 && n->in[n->n_in - 1] < 0)
        n->n_in--;
    for (int i = 0; i < n->n_out; i++)
        if (n->out[i] < 0 && (n->out[i] = mps_onnx_temp(c, n->name)) < 0)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    const struct mps_op_info *info = mps_op_info(op);
    if (n->n_in < info->in_min || (info->in_max >= 0 && n->n_in > info->in_max))
        return mps_onnx_fail(n, err, "%d inputs; %s takes %d to %d here", n->n_in, n->np->op_type, info->in_min,
                             info->in_max);
    if (n->n_out < 1 || (info->out_max >= 0 && n->n_out > info->out_max))
        return mps_onnx_fail(n, err, "%d outputs; at most %d are supported", n->n_out, info->out_max);
    st = mps_graph_add_node(c->g, op, n->name, n->in, n->n_in, n->out, n->n_out, &p, err);
    if (st == MPS_ERR_MODEL && err && !strstr(err->msg, n->name)) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        return mps_onnx_fail(n, err, "%s", why);
    }
    return st;
}
