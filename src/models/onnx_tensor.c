/* onnx_tensor.c: ONNX TensorProtos into tensors of the graph: data types,
   raw_data, the typed fields, external data (read inside the model's folder),
   and float16 / bfloat16 widened to f32 for a model (model.h). Sizes are
   checked against what is really there before anything is copied. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "onnx_internal.h"

static const char *const mps_onnx_dtype_names[] = {
    "UNDEFINED", "FLOAT", "UINT8",  "INT8",   "UINT16",    "INT16",      "INT32",    "INT64",
    "STRING",    "BOOL",  "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16",
};

const char *mps_onnx_dtype_name(int32_t v)
{
    if (v >= 0 && (size_t)v < sizeof mps_onnx_dtype_names / sizeof mps_onnx_dtype_names[0])
        return mps_onnx_dtype_names[v];
    return "an unknown type";
}

bool mps_onnx_dtype(int32_t v, enum mps_dtype *dt)
{
    switch (v) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *dt = MPS_F32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *dt = MPS_F16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *dt = MPS_F64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *dt = MPS_I64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *dt = MPS_I32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *dt = MPS_U8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *dt = MPS_BOOL; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *dt = MPS_I8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *dt = MPS_I16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: *dt = MPS_U16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: *dt = MPS_U32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: *dt = MPS_U64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *dt = MPS_BF16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING: *dt = MPS_STRING; return true;
    default: return false;
    }
}

/* Reads length bytes at offset of the external file named by t into dst. */
static enum mps_status mps_onnx_external(struct mps_onnx_ctx *c, const Onnx__TensorProto *t, const char *what,
                                         void *dst, size_t bytes, struct mps_error *err)
{
    const char *loc = NULL;
    long long offset = 0, length = -1;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
        if (!k || !v)
            continue;
        char *end;
        errno = 0;
        if (strcmp(k, "location") == 0) {
            loc = v;
        } else if (strcmp(k, "offset") == 0 || strcmp(k, "length") == 0) {
            long long x = strtoll(v, &end, 10);
            if (errno || *end || x < 0)
                return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': external data %s '%s' is not a size", what, k, v);
            *(strcmp(k, "offset") == 0 ? &offset : &length) = x;
        }
    }
    if (!loc)
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': external data without a location", what);
    if (length >= 0 && (unsigned long long)length != bytes)
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': external data length %lld, but its shape needs %zu bytes",
                        what, length, bytes);
    int fd;
    int64_t size;
    enum mps_status st = mps_file_open_inside(c->dir, loc, MPS_ERR_MODEL, &fd, &size, err);
    if (st) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        return mps_fail(err, st, "tensor '%s': external data in the model's folder '%s': %s", what, c->dir, why);
    }
    if (offset > size || (unsigned long long)(size - offset) < bytes)
        st = mps_fail(err, MPS_ERR_MODEL, "tensor '%s': external data '%s' holds %lld bytes, fewer than offset %lld "
                      "+ %zu", what, loc, (long long)size, offset, bytes);
    else if ((st = mps_file_pread(fd, dst, bytes, offset, MPS_ERR_MODEL, err)))
        mps_fail(err, st, "tensor '%s': external data '%s' could not be read", what, loc);
    close(fd);
    return st;
}

/* The count of values held in the typed field of t matching its dtype. */
static size_t mps_onnx_typed_count(const Onnx__TensorProto *t, enum mps_dtype dt)
{
    switch (dt) {
    case MPS_F32: return t->n_float_data;
    case MPS_F64: return t->n_double_data;
    case MPS_I64: return t->n_int64_data;
    case MPS_U32:
    case MPS_U64: return t->n_uint64_data;
    case MPS_STRING: return t->n_string_data;
    default: return t->n_int32_data; /* i32, i16, i8, u16, u8, bool and f16 and bf16 bit patterns */
    }
}

/* t's data as stored: dtype, shape, data in the arena. */
static enum mps_status mps_onnx_tensor_stored(struct mps_onnx_ctx *c, const Onnx__TensorProto *t, const char *what,
                                              enum mps_dtype *dt, struct mps_shape *s, const void **data,
                                              struct mps_error *err)
{
    if (!mps_onnx_dtype(t->data_type, dt))
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s' has data type %s, which mpsrun does not support", what,
                        mps_onnx_dtype_name(t->data_type));
    if (t->n_dims > MPS_MAX_DIMS)
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s' has %zu dims; at most %d are supported", what, t->n_dims,
                        MPS_MAX_DIMS);
    *s = (struct mps_shape){.ndim = (int)t->n_dims};
    for (size_t i = 0; i < t->n_dims; i++)
        s->dim[i] = t->dims[i];
    int64_t n = mps_shape_numel(s);
    if (n < 0)
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s' has a negative dim or more than 2^40 elements", what);
    size_t elem = mps_dtype_size(*dt), bytes = (size_t)n * elem;
    bool external = t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    size_t typed = mps_onnx_typed_count(t, *dt);
    /* check what is there before allocating what the shape asks for */
    if (*dt == MPS_STRING && (external || t->has_raw_data))
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': strings are held in string_data, not in %s", what,
                        external ? "external data" : "raw_data");
    if (!external && t->has_raw_data && t->raw_data.len != bytes)
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': raw_data holds %zu bytes, its shape needs %zu", what,
                        t->raw_data.len, bytes);
    if (!external && !t->has_raw_data && typed != (size_t)n)
        return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': holds %zu values, its shape needs %lld", what, typed,
                        (long long)n);
    unsigned char *d = mps_graph_alloc(c->g, bytes);
    if (!d)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory for tensor '%s' (%zu bytes)", what, bytes);
    *data = d;
    if (external)
        return mps_onnx_external(c, t, what, d, bytes, err);
    if (t->has_raw_data) { /* little-endian, as the machines mpsrun runs on */
        if (bytes)
            memcpy(d, t->raw_data.data, bytes);
        return MPS_OK;
    }
    for (int64_t i = 0; i < n; i++)
        switch (*dt) {
        case MPS_F32: ((float *)d)[i] = t->float_data[i]; break;
        case MPS_F64: ((double *)d)[i] = t->double_data[i]; break;
        case MPS_I64: ((int64_t *)d)[i] = t->int64_data[i]; break;
        case MPS_U32:
        case MPS_U64: mps_elem_set_int(d, *dt, i, (int64_t)t->uint64_data[i]); break;
        case MPS_F16:
        case MPS_BF16: ((uint16_t *)d)[i] = (uint16_t)t->int32_data[i]; break; /* bit patterns */
        case MPS_STRING:
            if (t->string_data[i].len && memchr(t->string_data[i].data, '\0', t->string_data[i].len))
                return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': string %lld holds a NUL byte", what, (long long)i);
            if (!(((const char **)d)[i] =
                      mps_graph_strndup(c->g, (const char *)t->string_data[i].data, t->string_data[i].len)))
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory for tensor '%s'", what);
            break;
        default: /* the other integers, bool: int32_data holds them widened */
            mps_elem_set_int(d, *dt, i, t->int32_data[i]);
            if (mps_elem_get_int(d, *dt, i) != t->int32_data[i])
                return mps_fail(err, MPS_ERR_MODEL, "tensor '%s': value %d at %lld is outside %s's range", what,
                                (int)t->int32_data[i], (long long)i, mps_dtype_name(*dt));
            break;
        }
    return MPS_OK;
}

enum mps_status mps_onnx_tensor(struct mps_onnx_ctx *c, const Onnx__TensorProto *t, const char *what,
                                enum mps_dtype *dt, struct mps_shape *s, const void **data, struct mps_error *err)
{
    enum mps_status st = mps_onnx_tensor_stored(c, t, what, dt, s, data, err);
    if (st || (*dt != MPS_F16 && *dt != MPS_BF16) || !c->widen)
        return st;
    int64_t n = mps_shape_numel(s);
    const uint16_t *h = *data;
    float *f = mps_graph_alloc(c->g, sizeof(float) * (size_t)n);
    if (!f)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory for tensor '%s'", what);
    mps_convert_floats(*dt, h, MPS_F32, f, n);
    *dt = MPS_F32;
    *data = f;
    c->n_widened++;
    return MPS_OK;
}
