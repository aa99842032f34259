/* onnx.c: reads an ONNX file: walks and decodes the ModelProto (protobuf-c),
   checks opsets, reads initializers (onnx_tensor.c), declares the inputs at
   the shapes given (float16 ones rounded where they are read), maps the
   nodes (onnx_graph.c), takes the outputs, then runs the passes. Nothing in
   a file is trusted: sizes are checked against what is really there before
   anything is copied. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "onnx_internal.h"

/* Largest model file read into memory: far above a "small network". */
#define MPS_ONNX_MAX_FILE ((size_t)1 << 31)

enum mps_status mps_onnx_fail(const struct mps_onnx_node *n, struct mps_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    enum mps_status st = mps_vfail_node(err, n->name, n->np->op_type ? n->np->op_type : "?", fmt, ap);
    va_end(ap);
    return st;
}

/* ---- files -------------------------------------------------------------------- */

/* A protobuf varint at b[0, n): its value in *v and its length, or 0. */
static int mps_onnx_varint(const unsigned char *b, size_t n, uint64_t *v)
{
    *v = 0;
    for (int i = 0; i < 10 && (size_t)i < n; i++) {
        *v |= (uint64_t)(b[i] & 0x7f) << (7 * i);
        if (!(b[i] & 0x80))
            return i + 1;
    }
    return 0;
}

/* The top-level fields of a ModelProto (ir_version, graph, opset_import...)
   walked without reading what they hold: a file of zeros, text or another
   format fails after a few bytes, before gigabytes of it are read. */
enum mps_status mps_onnx_walk(int fd, int64_t size, struct mps_error *err)
{
    for (int64_t at = 0; at < size;) {
        unsigned char b[32];
        size_t n = size - at < (int64_t)sizeof b ? (size_t)(size - at) : sizeof b;
        enum mps_status st = mps_file_pread(fd, b, n, at, MPS_ERR_MODEL, err);
        if (st)
            return st;
        uint64_t tag, v;
        int used = mps_onnx_varint(b, n, &tag), more = 0;
        unsigned type = (unsigned)(tag & 7);
        if (!used || tag >> 3 == 0 || (type != 0 && type != 1 && type != 2 && type != 5))
            return mps_fail(err, MPS_ERR_MODEL, "not an ONNX model: byte %lld is no protobuf field (another format?)",
                            (long long)at);
        if (type == 0 || type == 2) {
            more = mps_onnx_varint(b + used, n - (size_t)used, &v);
            if (!more)
                return mps_fail(err, MPS_ERR_MODEL, "not an ONNX model: a field at byte %lld is cut short",
                                (long long)at);
        }
        uint64_t skip = type == 1 ? 8 : type == 5 ? 4 : type == 2 ? v : 0;
        if (skip > (uint64_t)(size - at - used - more))
            return mps_fail(err, MPS_ERR_MODEL,
                            "not an ONNX model: a field at byte %lld runs past the end of the file "
                            "(truncated?)",
                            (long long)at);
        at += used + more + (int64_t)skip;
    }
    return MPS_OK;
}

static enum mps_status mps_onnx_read_file(const char *path, unsigned char **buf, size_t *len, struct mps_error *err)
{
    int fd;
    int64_t size;
    enum mps_status st = mps_file_open(path, MPS_ERR_MODEL, &fd, &size, err);
    if (st)
        return st;
    if ((uint64_t)size > MPS_ONNX_MAX_FILE)
        st = mps_fail(err, MPS_ERR_MODEL, "file of %lld bytes is larger than mpsrun reads (%zu MiB)", (long long)size,
                      MPS_ONNX_MAX_FILE >> 20);
    else if (!(st = mps_onnx_walk(fd, size, err)) && !(*buf = malloc((size_t)size + 1)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading %lld bytes", (long long)size);
    else if (!st && (st = mps_file_pread(fd, *buf, (size_t)size, 0, MPS_ERR_MODEL, err)))
        free(*buf);
    close(fd);
    *len = (size_t)size;
    return st;
}

/* Tensor tp decoded into *t, its data a copy of its own (what: for messages). */
static enum mps_status mps_onnx_tensor_copy(const Onnx__TensorProto *tp, const char *what, struct mps_tensor *t,
                                            struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_onnx_ctx c = {.g = g, .dir = "."};
    const void *data = NULL;
    enum mps_dtype dt;
    struct mps_shape s;
    enum mps_status st;
    if (!g)
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    else if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        st = mps_fail(err, MPS_ERR_INPUT, "tensor file with external data");
    else
        st = mps_onnx_tensor(&c, tp, tp->name ? tp->name : what, &dt, &s, &data, err);
    if (st == MPS_OK) {
        size_t bytes = (size_t)mps_shape_numel(&s) * mps_dtype_size(dt);
        void *copy = dt == MPS_STRING ? mps_strings_dup(data, mps_shape_numel(&s)) : malloc(bytes ? bytes : 1);
        if (!copy) {
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        } else {
            if (dt != MPS_STRING)
                memcpy(copy, data, bytes);
            *t = mps_tensor_make(dt, &s, copy);
        }
    } else if (st == MPS_ERR_MODEL) {
        st = MPS_ERR_INPUT;
    }
    mps_graph_free(g);
    return st;
}

enum mps_status mps_onnx_read_tensor_file(const char *path, struct mps_tensor *t, struct mps_error *err)
{
    int n;
    return mps_onnx_read_value_file(path, MPS_IO_TENSOR, t, 1, &n, err);
}

enum mps_status mps_onnx_read_value_file(const char *path, enum mps_io_kind kind, struct mps_tensor *t, int max, int *n,
                                         struct mps_error *err)
{
    unsigned char *buf;
    size_t len;
    *n = 0;
    enum mps_status st = mps_onnx_read_file(path, &buf, &len, err);
    if (st)
        return st == MPS_ERR_MODEL ? MPS_ERR_INPUT : st;
    Onnx__TensorProto *tp = kind == MPS_IO_TENSOR ? onnx__tensor_proto__unpack(NULL, len, buf) : NULL;
    Onnx__OptionalProto *op = kind == MPS_IO_OPTIONAL ? onnx__optional_proto__unpack(NULL, len, buf) : NULL;
    Onnx__SequenceProto *sp = kind == MPS_IO_SEQUENCE ? onnx__sequence_proto__unpack(NULL, len, buf)
                              : op                    ? op->sequence_value
                                                      : NULL;
    free(buf);
    const Onnx__TensorProto *one = tp ? tp : op ? op->tensor_value : NULL;
    if (!tp && !op && !sp)
        st = mps_fail(err, MPS_ERR_INPUT, "not a serialized ONNX %s",
                      kind == MPS_IO_TENSOR     ? "TensorProto"
                      : kind == MPS_IO_SEQUENCE ? "SequenceProto"
                                                : "OptionalProto");
    else if (op && !one && !sp)
        *n = -1;
    else if ((one ? 1 : (int64_t)sp->n_tensor_values) > max)
        st = mps_fail(err, MPS_ERR_INPUT, "more than %d tensors", max);
    for (size_t i = 0; !st && *n >= 0 && i < (one ? 1 : sp->n_tensor_values); i++) {
        if (!(st = mps_onnx_tensor_copy(one ? one : sp->tensor_values[i], path, &t[*n], err)))
            (*n)++;
    }
    for (int i = 0; st && i < *n; i++)
        free(t[i].data);
    if (tp)
        onnx__tensor_proto__free_unpacked(tp, NULL);
    if (op)
        onnx__optional_proto__free_unpacked(op, NULL);
    else if (sp)
        onnx__sequence_proto__free_unpacked(sp, NULL);
    return st;
}

/* ---- the model ----------------------------------------------------------------- */

void mps_model_free(struct mps_model *m)
{
    if (!m)
        return;
    mps_graph_free(m->graph);
    free(m);
}

const char *mps_model_meta(const struct mps_model *m, const char *key)
{
    for (int i = 0; i < m->n_meta; i++)
        if (strcmp(m->meta[i].key, key) == 0)
            return m->meta[i].value;
    return NULL;
}

bool mps_model_probabilities(const struct mps_model *m, int i)
{
    const struct mps_graph *g = m->graph;
    if (i < 0 || i >= g->n_outputs)
        return false;
    const char *said = mps_model_meta(m, "output");
    int p = g->values[g->outputs[i]].producer;
    return (i == 0 && said && strcmp(said, "probabilities") == 0) || (p >= 0 && g->nodes[p].op == MPS_OP_SOFTMAX);
}

static enum mps_status mps_onnx_opsets(struct mps_model *m, const Onnx__ModelProto *mp, struct mps_error *err)
{
    m->opset = -1;
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        const char *d = o->domain ? o->domain : "";
        if (d[0] == '\0' || strcmp(d, "ai.onnx") == 0)
            m->opset = o->version;
    }
    if (m->opset < 0 && mp->ir_version < 3)
        m->opset = 1; /* before opset imports: opset 1 */
    if (m->opset < 0)
        return MPS_OK; /* no default-domain ops then: any node is refused by its domain */
    if (m->opset < MPS_ONNX_OPSET_MIN || m->opset > MPS_ONNX_OPSET_MAX)
        return mps_fail(err, MPS_ERR_MODEL, "opset %lld of the default domain is outside what mpsrun supports "
                        "(%d to %d)", (long long)m->opset, MPS_ONNX_OPSET_MIN, MPS_ONNX_OPSET_MAX);
    return MPS_OK;
}

/* Whether name is one of gp's initializers (IR < 4 lists them among the inputs). */
static bool mps_onnx_is_initializer(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t k = 0; name && k < gp->n_initializer; k++)
        if (gp->initializer[k]->name && !strcmp(gp->initializer[k]->name, name))
            return true;
    return false;
}

/* The tensor type of tp, of the elements where it is a sequence, an
   optional or an optional sequence (*kind says which); NULL for another. */
static const Onnx__TypeProto__Tensor *mps_onnx_tensor_type(const Onnx__TypeProto *tp, enum mps_io_kind *kind, bool *seq)
{
    *kind = MPS_IO_TENSOR;
    *seq = false;
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type) {
        *kind = MPS_IO_OPTIONAL;
        tp = tp->optional_type->elem_type;
    }
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && tp->sequence_type) {
        *kind = *kind == MPS_IO_OPTIONAL ? MPS_IO_OPTIONAL : MPS_IO_SEQUENCE;
        *seq = true;
        tp = tp->sequence_type->elem_type;
    }
    return tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? tp->tensor_type : NULL;
}

/* Declares graph input name of tensor type tt with the shape in the file,
   symbolic dims taken from the caller's shape (or 1). */
static enum mps_status mps_onnx_input(struct mps_onnx_ctx *c, struct mps_model *m, const char *name,
                                      const Onnx__TypeProto__Tensor *tt, int k, const struct mps_onnx_opts *opts,
                                      struct mps_error *err)
{
    enum mps_dtype dt;
    if (!mps_onnx_dtype(tt->elem_type, &dt))
        return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' has data type %s, which mpsrun does not support", name,
                        mps_onnx_dtype_name(tt->elem_type));
    const struct mps_shape *given = opts && k < opts->n_shapes ? &opts->shapes[k] : NULL;
    const struct mps_tensor *value = opts && opts->values && k < opts->n_shapes && opts->values[k].data
                                         ? &opts->values[k] : NULL;
    struct mps_shape s = {0, {0}};
    struct mps_model_input info;
    memset(&info, 0, sizeof info);
    info.dtype = dt;
    if ((dt == MPS_F16 || dt == MPS_BF16) && c->widen) /* an f32 input, rounded where read (mps_onnx_round_inputs) */
        dt = MPS_F32;
    if (tt->shape) {
        if (tt->shape->n_dim > MPS_MAX_DIMS)
            return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' has %zu dims; at most %d are supported", name,
                            tt->shape->n_dim, MPS_MAX_DIMS);
        s.ndim = (int)tt->shape->n_dim;
        for (int i = 0; i < s.ndim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0) {
                s.dim[i] = d->dim_value;
            } else {
                info.symbolic[i] = true;
                s.dim[i] = 1;
                if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param)
                    info.dim_name[i] = mps_graph_strdup(c->g, d->dim_param);
            }
        }
    } else if (!given) {
        return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' has no shape; give one", name);
    }
    if (given) {
        char a[160], b[160];
        bool fits = !tt->shape || given->ndim == s.ndim;
        for (int i = 0; fits && tt->shape && i < s.ndim; i++)
            fits = info.symbolic[i] || given->dim[i] == s.dim[i];
        if (!fits)
            return mps_fail(err, MPS_ERR_INPUT, "input '%s' of the model has shape %s, the input given is %s", name,
                            mps_shape_str(&s, a, sizeof a), mps_shape_str(given, b, sizeof b));
        s = *given;
    }
    if (mps_shape_numel(&s) < 0)
        return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' is too large", name);
    int v = mps_onnx_define(c, name, dt, &s);
    if (v < 0)
        return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' is declared twice", name);
    if (value) { /* an f16 one widened as a weight is */
        if (value->dtype != info.dtype)
            return mps_fail(err, MPS_ERR_INPUT, "input '%s' must be %s, the value given is %s", name,
                            mps_dtype_name(info.dtype), mps_dtype_name(value->dtype));
        int64_t n = mps_shape_numel(&value->shape);
        void *copy = mps_graph_alloc(c->g, (size_t)n * mps_dtype_size(dt));
        if (!copy)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        if (dt != info.dtype)
            mps_convert_floats(info.dtype, value->data, dt, copy, n);
        else if (dt != MPS_STRING)
            memcpy(copy, value->data, mps_tensor_bytes(value));
        for (int64_t i = 0; dt == MPS_STRING && i < n; i++) /* the characters too, into the graph */
            if (!(((const char **)copy)[i] = mps_graph_strdup(c->g, ((const char *const *)value->data)[i])))
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        c->g->values[v].data = copy;
        return MPS_OK;
    }
    enum mps_status st = mps_graph_add_input(c->g, v, err);
    if (st)
        return st;
    m->inputs[c->g->n_inputs - 1] = info;
    return MPS_OK;
}

/* Value v rounded to half (f16 or bf16) and back (two Casts named after it): into *out, a new f32 value. */
static enum mps_status mps_onnx_round_half(struct mps_onnx_ctx *c, int v, enum mps_dtype half, int *out,
                                           struct mps_error *err)
{
    char name[200];
    snprintf(name, sizeof name, "%.180s (%s)", c->g->values[v].name, mps_dtype_name(half));
    int mid = mps_onnx_temp(c, name), back = mid >= 0 ? mps_onnx_temp(c, name) : -1;
    if (back < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    union mps_op_params to16, to32;
    mps_op_params_default(MPS_OP_CAST, &to16);
    mps_op_params_default(MPS_OP_CAST, &to32);
    to16.cast.to = half;
    to32.cast.to = MPS_F32;
    enum mps_status st = mps_graph_add_node(c->g, MPS_OP_CAST, name, &v, 1, &mid, 1, &to16, err);
    if (!st)
        st = mps_graph_add_node(c->g, MPS_OP_CAST, name, &mid, 1, &back, 1, &to32, err);
    *out = back;
    c->n_widened++;
    return st;
}

/* Every reader of an input the file declares f16 (bf16) reads it rounded so,
   as the model's own f16 input would hold it (the graph input is f32, so
   that an image or an f32 array goes in as for any model). */
static enum mps_status mps_onnx_round_inputs(struct mps_onnx_ctx *c, const struct mps_model *m, struct mps_error *err)
{
    for (int i = 0; i < c->g->n_inputs; i++) {
        int x = c->g->inputs[i], rounded;
        if ((m->inputs[i].dtype != MPS_F16 && m->inputs[i].dtype != MPS_BF16) || c->g->values[x].dtype != MPS_F32)
            continue;
        int first = c->g->n_nodes;
        enum mps_status st = mps_onnx_round_half(c, x, m->inputs[i].dtype, &rounded, err);
        if (st)
            return st;
        for (int k = 0; k < first; k++) /* the readers before the two Casts: not the first Cast itself */
            for (int j = 0; j < c->g->nodes[k].n_in; j++)
                if (c->g->nodes[k].in[j] == x)
                    c->g->nodes[k].in[j] = rounded;
    }
    return MPS_OK;
}

/* Graph output i of the file: value v, or where the file declares it f16
   (bf16) and the graph computes it in f32, v rounded so, under v's name (v
   renamed). */
static enum mps_status mps_onnx_output(struct mps_onnx_ctx *c, struct mps_model *m, const Onnx__ValueInfoProto *vi,
                                       int v, struct mps_error *err)
{
    const Onnx__TypeProto *tp = vi->type;
    enum mps_dtype half = MPS_DTYPE_COUNT;
    if (c->widen && tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
        (tp->tensor_type->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
         tp->tensor_type->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16))
        mps_onnx_dtype(tp->tensor_type->elem_type, &half);
    m->output_dtype[c->g->n_outputs] = half; /* else the graph's: known after inference */
    int out = v;
    enum mps_status st;
    if (half != MPS_DTYPE_COUNT && c->g->values[v].producer >= 0) {
        if ((st = mps_onnx_round_half(c, v, half, &out, err)))
            return st;
        const char *name = c->g->values[v].name; /* the map is not asked again: the names can change places */
        c->g->values[v].name = c->g->values[out].name;
        c->g->values[out].name = name;
    }
    return mps_graph_add_output(c->g, out, err);
}

/* Runtime input vi of the file: a tensor (graph input *k), or a sequence or
   optional of opts->counts tensors (graph inputs *k on, "name[i]"); *k
   moves past them. */
static enum mps_status mps_onnx_input_io(struct mps_onnx_ctx *c, struct mps_model *m, const Onnx__ValueInfoProto *vi,
                                         int *k, const struct mps_onnx_opts *opts, struct mps_error *err)
{
    const char *name = vi->name ? vi->name : "";
    struct mps_model_io *io = &m->in_io[m->n_in_io];
    bool seq;
    const Onnx__TypeProto__Tensor *tt = mps_onnx_tensor_type(vi->type, &io->kind, &seq);
    if (!tt)
        return mps_fail(err, MPS_ERR_MODEL,
                        "graph input '%s' is not a tensor, nor a sequence or optional of "
                        "tensors (maps are not supported)",
                        name);
    int count = io->kind == MPS_IO_TENSOR ? 1 : opts && opts->counts ? opts->counts[m->n_in_io] : -2;
    if (count == -2 || count > MPS_ONNX_MAX_UNROLL || (count < 0 && io->kind != MPS_IO_OPTIONAL))
        return mps_fail(err, MPS_ERR_INPUT,
                        "graph input '%s' is a %s of tensors: mpsrun builds the model for a given number of them "
                        "and none was given (the command line feeds tensors only)",
                        name, io->kind == MPS_IO_SEQUENCE ? "sequence" : "optional");
    io->name = mps_graph_strdup(c->g, name);
    io->first = c->g->n_inputs;
    io->count = count > 0 ? count : 0;
    m->n_in_io++;
    if (io->kind == MPS_IO_TENSOR)
        return mps_onnx_input(c, m, name, tt, (*k)++, opts, err);
    int item[MPS_ONNX_MAX_UNROLL];
    for (int i = 0; i < io->count; i++) {
        char elem[300];
        snprintf(elem, sizeof elem, "%.280s[%d]", name, i);
        enum mps_status st = mps_onnx_input(c, m, elem, tt, (*k)++, opts, err);
        if (st)
            return st;
        item[i] = mps_onnx_lookup(c, elem);
    }
    int v = mps_onnx_define(c, name, MPS_F32, NULL);
    enum mps_onnx_list_kind kind = io->kind == MPS_IO_SEQUENCE ? MPS_LIST_SEQ
                                   : count < 0                 ? MPS_LIST_OPT_NONE
                                   : seq                       ? MPS_LIST_OPT_SEQ
                                                               : MPS_LIST_OPT_TENSOR;
    if (kind == MPS_LIST_OPT_TENSOR && count != 1)
        return mps_fail(err, MPS_ERR_INPUT, "graph input '%s' is an optional tensor: it holds one or none", name);
    if (v < 0)
        return mps_fail(err, MPS_ERR_MODEL, "graph input '%s' is declared twice", name);
    return mps_onnx_set_list(c, v, kind, item, io->count) ? MPS_OK : mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
}

/* Graph output vi of the file, value v: a tensor, or each tensor of a
   sequence or optional through an Identity named "name[i]". */
static enum mps_status mps_onnx_output_io(struct mps_onnx_ctx *c, struct mps_model *m, const Onnx__ValueInfoProto *vi,
                                          int v, struct mps_error *err)
{
    const char *name = vi->name ? vi->name : "";
    const struct mps_onnx_list *l = mps_onnx_list_of(c, v);
    struct mps_model_io *io = &m->out_io[m->n_out_io++];
    io->name = mps_graph_strdup(c->g, name);
    io->first = c->g->n_outputs;
    io->count = l ? l->n : 1;
    io->kind = !l ? MPS_IO_TENSOR : l->kind == MPS_LIST_SEQ ? MPS_IO_SEQUENCE : MPS_IO_OPTIONAL;
    if (!io->name)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    if (!l)
        return mps_onnx_output(c, m, vi, v, err);
    for (int i = 0; i < l->n; i++) {
        char elem[300];
        snprintf(elem, sizeof elem, "%.280s[%d]", name, i);
        int e = mps_onnx_define(c, elem, MPS_F32, NULL);
        enum mps_status st = e < 0 ? mps_fail(err, MPS_ERR_MODEL, "value '%s' is defined twice", elem)
                                   : mps_graph_add_node(c->g, MPS_OP_IDENTITY, elem, &l->item[i], 1, &e, 1, NULL, err);
        m->output_dtype[c->g->n_outputs] = MPS_DTYPE_COUNT;
        if (st || (st = mps_graph_add_output(c->g, e, err)))
            return st;
    }
    return MPS_OK;
}

static enum mps_status mps_onnx_build(struct mps_onnx_ctx *c, struct mps_model *m, const Onnx__ModelProto *mp,
                                      const struct mps_onnx_opts *opts, struct mps_error *err)
{
    const Onnx__GraphProto *gp = mp->graph;
    if (!gp)
        return mps_fail(err, MPS_ERR_MODEL, "the model has no graph");
    size_t n_rt = 0, tensors = 0; /* the file's runtime inputs, and the tensors they hold */
    for (size_t i = 0; i < gp->n_input; i++)
        n_rt += !mps_onnx_is_initializer(gp, gp->input[i]->name);
    for (size_t i = 0; i < n_rt; i++)
        tensors += opts && opts->counts && opts->counts[i] > 0 ? (size_t)opts->counts[i] : 1;
    m->ir_version = mp->ir_version;
    enum mps_status st = mps_onnx_opsets(m, mp, err);
    if (st)
        return st;
    c->opset = m->opset;
    char producer[160];
    snprintf(producer, sizeof producer, "%s%s%s", mp->producer_name ? mp->producer_name : "",
             mp->producer_version && mp->producer_version[0] ? " " : "",
             mp->producer_version ? mp->producer_version : "");
    m->producer = mps_graph_strdup(c->g, producer);
    m->meta = mps_graph_alloc(c->g, sizeof *m->meta * (mp->n_metadata_props + 1));
    m->inputs = mps_graph_alloc(c->g, sizeof *m->inputs * (tensors + 1));
    m->in_io = mps_graph_alloc(c->g, sizeof *m->in_io * (n_rt + 1));
    m->out_io = mps_graph_alloc(c->g, sizeof *m->out_io * (gp->n_output + 1));
    if (!m->producer || !m->meta || !m->inputs || !m->in_io || !m->out_io)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *e = mp->metadata_props[i];
        m->meta[m->n_meta].key = mps_graph_strdup(c->g, e->key ? e->key : "");
        m->meta[m->n_meta].value = mps_graph_strdup(c->g, e->value ? e->value : "");
        if (!m->meta[m->n_meta].key || !m->meta[m->n_meta].value)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        m->n_meta++;
    }
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        const char *name = t->name ? t->name : "";
        enum mps_dtype dt;
        struct mps_shape s;
        const void *data;
        if ((st = mps_onnx_tensor(c, t, name, &dt, &s, &data, err)))
            return st;
        int v = mps_onnx_define(c, name, dt, &s);
        if (v < 0)
            return mps_fail(err, MPS_ERR_MODEL, "initializer '%s' is defined twice", name);
        c->g->values[v].data = data;
    }
    /* Graph inputs that name an initializer (IR < 4 lists every weight) are
       constants, not runtime inputs. */
    int k = 0;
    for (size_t i = 0; i < gp->n_input; i++) {
        int v = gp->input[i]->name ? mps_onnx_lookup(c, gp->input[i]->name) : -1;
        if (v >= 0 && c->g->values[v].data)
            continue;
        if ((st = mps_onnx_input_io(c, m, gp->input[i], &k, opts, err)))
            return st;
    }
    if (opts && opts->n_shapes && opts->n_shapes != k)
        return mps_fail(err, MPS_ERR_INPUT, "the model takes %d inputs, %d were given", k, opts->n_shapes);
    if ((st = mps_onnx_nodes(c, gp, err)) || (st = mps_onnx_round_inputs(c, m, err)))
        return st;
    if (gp->n_output == 0)
        return mps_fail(err, MPS_ERR_MODEL, "the graph has no outputs");
    int *outs = mps_graph_alloc(c->g, sizeof *outs * gp->n_output);
    if (!outs)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    size_t n_out = 0;
    for (size_t i = 0; i < gp->n_output; i++) { /* every name looked up before an f16 one is renamed */
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        if ((outs[i] = mps_onnx_lookup(c, name)) < 0)
            return mps_fail(err, MPS_ERR_MODEL, "graph output '%s' is not computed by any node", name);
        n_out += mps_onnx_list_of(c, outs[i]) ? (size_t)mps_onnx_list_of(c, outs[i])->n : 1;
    }
    if (!(m->output_dtype = mps_graph_alloc(c->g, sizeof *m->output_dtype * (n_out + 1))))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < gp->n_output; i++)
        if ((st = mps_onnx_output_io(c, m, gp->output[i], outs[i], err)))
            return st;
    if ((st = mps_graph_sort(c->g, err)) || (st = mps_passes_fold(c->g, err)))
        return st;
    if (!(opts && opts->no_optimize) && (st = mps_passes_optimize(c->g, err)))
        return st;
    for (int i = 0; i < c->g->n_outputs; i++)
        if (m->output_dtype[i] == MPS_DTYPE_COUNT)
            m->output_dtype[i] = c->g->values[c->g->outputs[i]].dtype;
    m->n_widened = c->n_widened;
    return MPS_OK;
}

/* Builds the model of mp for opts into *model (dir: where external data is). */
static enum mps_status mps_onnx_model_of(const Onnx__ModelProto *mp, const char *dir, const struct mps_onnx_opts *opts,
                                         struct mps_model **model, struct mps_error *err)
{
    *model = NULL;
    struct mps_model *m = calloc(1, sizeof *m);
    struct mps_graph *g = mps_graph_new();
    struct mps_onnx_ctx c = {.g = g, .dir = dir, .widen = true};
    enum mps_status st;
    if (!m || !g) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    } else {
        m->graph = g;
        st = mps_onnx_build(&c, m, mp, opts, err);
    }
    free(c.slots);
    free(c.lists);
    if (st) {
        if (m)
            mps_model_free(m);
        else
            mps_graph_free(g);
        return st;
    }
    *model = m;
    return MPS_OK;
}

enum mps_status mps_onnx_load_buffer(const void *buf, size_t len, const char *dir, const struct mps_onnx_opts *opts,
                                     struct mps_model **model, struct mps_error *err)
{
    *model = NULL;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, buf);
    if (!mp)
        return mps_fail(err, MPS_ERR_MODEL,
                        "not an ONNX model: the protobuf does not decode (truncated or another "
                        "format?)");
    enum mps_status st = mps_onnx_model_of(mp, dir, opts, model, err);
    onnx__model_proto__free_unpacked(mp, NULL);
    return st;
}

enum mps_status mps_onnx_open(const char *path, struct mps_onnx_file **out, struct mps_error *err)
{
    *out = NULL;
    unsigned char *buf;
    size_t len;
    enum mps_status st = mps_onnx_read_file(path, &buf, &len, err);
    if (st)
        return st;
    struct mps_onnx_file *f = calloc(1, sizeof *f);
    if (f && !(f->path = strdup(path))) {
        free(f);
        f = NULL;
    }
    if (!f) {
        free(buf);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(f->dir, sizeof f->dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    else
        snprintf(f->dir, sizeof f->dir, ".");
    f->mp = onnx__model_proto__unpack(NULL, len, buf);
    free(buf);
    if (!f->mp) {
        mps_onnx_close(f);
        return mps_fail(err, MPS_ERR_MODEL,
                        "not an ONNX model: the protobuf does not decode (truncated or another "
                        "format?)");
    }
    *out = f;
    return MPS_OK;
}

enum mps_status mps_onnx_model(const struct mps_onnx_file *f, const struct mps_onnx_opts *opts,
                               struct mps_model **model, struct mps_error *err)
{
    enum mps_status st = mps_onnx_model_of(f->mp, f->dir, opts, model, err);
    if (st == MPS_OK && !((*model)->path = mps_graph_strdup((*model)->graph, f->path))) {
        mps_model_free(*model);
        *model = NULL;
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    return st;
}

int mps_onnx_inputs(const struct mps_onnx_file *f, const char **names, struct mps_shape *shapes,
                    struct mps_model_input *decl, enum mps_dtype *dtypes, int max)
{
    const Onnx__GraphProto *gp = f->mp->graph;
    int n = 0;
    for (size_t i = 0; gp && i < gp->n_input; i++) {
        const char *name = gp->input[i]->name ? gp->input[i]->name : "";
        if (mps_onnx_is_initializer(gp, name))
            continue;
        if (n == max)
            return -1;
        const Onnx__TypeProto *tp = gp->input[i]->type;
        const Onnx__TensorShapeProto *sp =
            tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type ? tp->tensor_type->shape
                                                                                           : NULL;
        if (!sp || sp->n_dim > MPS_MAX_DIMS)
            return -1;
        names[n] = name;
        if (dtypes && !mps_onnx_dtype(tp->tensor_type->elem_type, &dtypes[n]))
            dtypes[n] = MPS_DTYPE_COUNT;
        shapes[n] = (struct mps_shape){(int)sp->n_dim, {0}};
        memset(&decl[n], 0, sizeof decl[n]);
        for (size_t d = 0; d < sp->n_dim; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
            bool known = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && dim->dim_value >= 0;
            shapes[n].dim[d] = known ? dim->dim_value : -1;
            decl[n].symbolic[d] = !known;
            decl[n].dim_name[d] =
                dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM ? dim->dim_param : NULL;
        }
        n++;
    }
    return n;
}

int mps_onnx_io_kinds(const struct mps_onnx_file *f, bool outputs, enum mps_io_kind *kinds, int max)
{
    const Onnx__GraphProto *gp = f->mp->graph;
    size_t count = !gp ? 0 : outputs ? gp->n_output : gp->n_input;
    int n = 0;
    for (size_t i = 0; i < count; i++) {
        const Onnx__ValueInfoProto *vi = outputs ? gp->output[i] : gp->input[i];
        bool seq;
        if (!outputs && mps_onnx_is_initializer(gp, vi->name))
            continue;
        if (n == max)
            return -1;
        mps_onnx_tensor_type(vi->type, &kinds[n++], &seq);
    }
    return n;
}

enum mps_status mps_onnx_model_free(const struct mps_onnx_file *f, int n, const struct mps_shape *shapes,
                                    struct mps_model **model, struct mps_error *err)
{
    static const int64_t probe[] = {1, 32, 224, 1024, 16384};
    struct mps_shape s[8];
    enum mps_status first = MPS_OK;
    struct mps_error first_err = {{0}};
    if (n < 0 || n > 8)
        return mps_fail(err, MPS_ERR_MODEL, "more than 8 inputs");
    for (size_t t = 0; t < sizeof probe / sizeof probe[0]; t++) {
        bool free_size = false;
        for (int i = 0; i < n; i++) {
            s[i] = shapes[i];
            for (int d = 0; d < s[i].ndim; d++)
                if (s[i].dim[d] < 0) {
                    s[i].dim[d] = d == 0 ? 1 : probe[t];
                    free_size = free_size || d > 0;
                }
        }
        enum mps_status st = mps_onnx_model(f, &(struct mps_onnx_opts){.n_shapes = n, .shapes = s}, model, err);
        if (st == MPS_OK)
            return MPS_OK;
        if (!first) {
            first = st;
            first_err = *err;
        }
        if (!free_size || st != MPS_ERR_MODEL)
            break;
    }
    *err = first_err; /* what went wrong at the sizes a user would guess first */
    return first;
}

const char *mps_onnx_path(const struct mps_onnx_file *f)
{
    return f->path;
}

void mps_onnx_close(struct mps_onnx_file *f)
{
    if (!f)
        return;
    if (f->mp)
        onnx__model_proto__free_unpacked(f->mp, NULL);
    free(f->path);
    free(f);
}

enum mps_status mps_onnx_load(const char *path, const struct mps_onnx_opts *opts, struct mps_model **model,
                              struct mps_error *err)
{
    struct mps_onnx_file *f;
    *model = NULL;
    enum mps_status st = mps_onnx_open(path, &f, err);
    if (!st)
        st = mps_onnx_model(f, opts, model, err);
    mps_onnx_close(f);
    return st;
}
