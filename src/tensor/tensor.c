#include "tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t mps_dtype_size(enum mps_dtype t)
{
    static const size_t size[MPS_DTYPE_COUNT] = {
        [MPS_F32] = 4,  [MPS_F16] = 2,
        [MPS_I64] = 8,  [MPS_I32] = 4,
        [MPS_U8] = 1,   [MPS_BOOL] = 1,
        [MPS_F64] = 8,  [MPS_I8] = 1,
        [MPS_I16] = 2,  [MPS_U16] = 2,
        [MPS_U32] = 4,  [MPS_U64] = 8,
        [MPS_BF16] = 2, [MPS_STRING] = sizeof(const char *),
    };
    return (unsigned)t < MPS_DTYPE_COUNT ? size[t] : 0;
}

const char *mps_dtype_name(enum mps_dtype t)
{
    static const char *const name[MPS_DTYPE_COUNT] = {
        [MPS_F32] = "f32",   [MPS_F16] = "f16", [MPS_I64] = "i64",   [MPS_I32] = "i32",       [MPS_U8] = "u8",
        [MPS_BOOL] = "bool", [MPS_F64] = "f64", [MPS_I8] = "i8",     [MPS_I16] = "i16",       [MPS_U16] = "u16",
        [MPS_U32] = "u32",   [MPS_U64] = "u64", [MPS_BF16] = "bf16", [MPS_STRING] = "string",
    };
    return (unsigned)t < MPS_DTYPE_COUNT ? name[t] : "?";
}

void *mps_strings_dup(const char *const *s, int64_t n)
{
    size_t chars = 0;
    for (int64_t i = 0; i < n; i++)
        chars += strlen(s[i]) + 1;
    char **d = malloc(sizeof(char *) * (size_t)n + chars + 1), *at = (char *)(d + n);
    for (int64_t i = 0; d && i < n; i++) {
        size_t len = strlen(s[i]) + 1;
        d[i] = memcpy(at, s[i], len);
        at += len;
    }
    return d;
}

bool mps_dtype_is_float(enum mps_dtype t)
{
    return t == MPS_F32 || t == MPS_F16 || t == MPS_BF16 || t == MPS_F64;
}

bool mps_dtype_is_unsigned(enum mps_dtype t)
{
    return t == MPS_U8 || t == MPS_U16 || t == MPS_U32 || t == MPS_U64;
}

bool mps_dtype_is_int(enum mps_dtype t)
{
    return t == MPS_I64 || t == MPS_I32 || t == MPS_I16 || t == MPS_I8 || mps_dtype_is_unsigned(t);
}

double mps_elem_get(const void *p, enum mps_dtype t, int64_t i)
{
    switch (t) {
    case MPS_F32: return ((const float *)p)[i];
    case MPS_F16: return mps_f16_to_f32(((const uint16_t *)p)[i]);
    case MPS_BF16: return mps_bf16_to_f32(((const uint16_t *)p)[i]);
    case MPS_F64: return ((const double *)p)[i];
    case MPS_U64: return (double)((const uint64_t *)p)[i];
    case MPS_STRING: return NAN; /* not a number: no op reads one as such */
    default: return (double)mps_elem_get_int(p, t, i);
    }
}

/* v truncated toward zero and clamped to [lo, hi]; NaN gives 0. */
static double mps_elem_clamp(double v, double lo, double hi)
{
    if (v != v)
        return 0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

/* the largest double below 2^63: the bound itself does not convert */
static int64_t mps_elem_i64(double v)
{
    return (int64_t)mps_elem_clamp(v, -9223372036854775808.0, 9223372036854774784.0);
}

void mps_elem_set(void *p, enum mps_dtype t, int64_t i, double v)
{
    switch (t) {
    case MPS_F32: ((float *)p)[i] = (float)v; break;
    case MPS_F16: ((uint16_t *)p)[i] = mps_f32_to_f16((float)v); break;
    case MPS_BF16: ((uint16_t *)p)[i] = mps_f32_to_bf16((float)v); break;
    case MPS_F64: ((double *)p)[i] = v; break;
    case MPS_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case MPS_I64: ((int64_t *)p)[i] = mps_elem_i64(v); break;
    /* the largest double below 2^64 */
    case MPS_U64: ((uint64_t *)p)[i] = (uint64_t)mps_elem_clamp(v, 0, 18446744073709549568.0); break;
    case MPS_I32: ((int32_t *)p)[i] = (int32_t)mps_elem_clamp(v, -2147483648.0, 2147483647.0); break;
    case MPS_U32: ((uint32_t *)p)[i] = (uint32_t)mps_elem_clamp(v, 0, 4294967295.0); break;
    case MPS_I16: ((int16_t *)p)[i] = (int16_t)mps_elem_clamp(v, -32768, 32767); break;
    case MPS_U16: ((uint16_t *)p)[i] = (uint16_t)mps_elem_clamp(v, 0, 65535); break;
    case MPS_I8: ((int8_t *)p)[i] = (int8_t)mps_elem_clamp(v, -128, 127); break;
    case MPS_U8: ((uint8_t *)p)[i] = (uint8_t)mps_elem_clamp(v, 0, 255); break;
    case MPS_STRING:
    case MPS_DTYPE_COUNT: break;
    }
}

int64_t mps_elem_get_int(const void *p, enum mps_dtype t, int64_t i)
{
    switch (t) {
    case MPS_I64:
    case MPS_U64: return ((const int64_t *)p)[i];
    case MPS_I32: return ((const int32_t *)p)[i];
    case MPS_U32: return ((const uint32_t *)p)[i];
    case MPS_I16: return ((const int16_t *)p)[i];
    case MPS_U16: return ((const uint16_t *)p)[i];
    case MPS_I8: return ((const int8_t *)p)[i];
    case MPS_U8:
    case MPS_BOOL: return ((const uint8_t *)p)[i];
    case MPS_STRING: return 0;
    /* a float read as an integer saturates as mps_elem_set's does: NaN is 0 */
    default: return mps_elem_i64(mps_elem_get(p, t, i));
    }
}

void mps_elem_set_int(void *p, enum mps_dtype t, int64_t i, int64_t v)
{
    uint64_t u = (uint64_t)v;
    switch (t) {
    case MPS_I64:
    case MPS_U64: ((uint64_t *)p)[i] = u; break;
    case MPS_I32:
    case MPS_U32: ((uint32_t *)p)[i] = (uint32_t)u; break;
    case MPS_I16:
    case MPS_U16: ((uint16_t *)p)[i] = (uint16_t)u; break;
    case MPS_I8:
    case MPS_U8: ((uint8_t *)p)[i] = (uint8_t)u; break;
    case MPS_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case MPS_STRING: break;
    default: mps_elem_set(p, t, i, (double)v); break;
    }
}

int64_t mps_shape_numel(const struct mps_shape *s)
{
    if (s->ndim < 0 || s->ndim > MPS_MAX_DIMS)
        return -1;
    /* the nonzero dims are bounded even when a zero makes the count 0: strides
       are products of them, and must not overflow either */
    int64_t nonzero = 1;
    bool empty = false;
    for (int i = 0; i < s->ndim; i++) {
        int64_t d = s->dim[i];
        if (d < 0 || d > MPS_MAX_NUMEL)
            return -1;
        if (d == 0)
            empty = true;
        else if (nonzero > MPS_MAX_NUMEL / d)
            return -1;
        else
            nonzero *= d;
    }
    return empty ? 0 : nonzero;
}

bool mps_shape_eq(const struct mps_shape *a, const struct mps_shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

char *mps_shape_str(const struct mps_shape *s, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "[");
    for (int i = 0; i < s->ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ",%lld" : "%lld", (long long)s->dim[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

enum mps_status mps_shape_broadcast(const struct mps_shape *a, const struct mps_shape *b,
                                    struct mps_shape *out, struct mps_error *err)
{
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
    struct mps_shape r = {.ndim = nd};
    for (int i = 0; i < nd; i++) {
        int ia = i - (nd - a->ndim), ib = i - (nd - b->ndim);
        int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return mps_fail(err, MPS_ERR_MODEL, "shapes %s and %s do not broadcast",
                            mps_shape_str(a, sa, sizeof sa), mps_shape_str(b, sb, sizeof sb));
        }
        r.dim[i] = da == 1 ? db : da;
    }
    *out = r;
    return MPS_OK;
}

void mps_shape_strides(const struct mps_shape *s, int64_t stride[MPS_MAX_DIMS])
{
    int64_t st = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        stride[i] = st;
        st *= s->dim[i];
    }
}

int mps_walk_merge(int nd, int64_t *dim, int n_ops, int64_t *const *st)
{
    int out = 0;
    for (int i = 0; i < nd; i++) {
        if (dim[i] == 1)
            continue;
        bool joins = out > 0;
        for (int j = 0; joins && j < n_ops; j++)
            joins = st[j][out - 1] == st[j][i] * dim[i];
        int to = joins ? out - 1 : out++;
        dim[to] = joins ? dim[to] * dim[i] : dim[i];
        for (int j = 0; j < n_ops; j++)
            st[j][to] = st[j][i];
    }
    if (out == 0) { /* a scalar, or all dims 1: one element */
        dim[0] = 1;
        for (int j = 0; j < n_ops; j++)
            st[j][0] = 0;
        out = 1;
    }
    return out;
}

void mps_shape_broadcast_strides(const struct mps_shape *src, const struct mps_shape *out,
                                 int64_t stride[MPS_MAX_DIMS])
{
    int64_t own[MPS_MAX_DIMS];
    mps_shape_strides(src, own);
    int off = out->ndim - src->ndim;
    for (int i = 0; i < out->ndim; i++) {
        int j = i - off;
        stride[i] = (j < 0 || src->dim[j] == 1) ? 0 : own[j];
    }
}

int mps_axis(int64_t axis, int ndim)
{
    if (axis < -ndim || axis >= ndim)
        return -1;
    return (int)(axis < 0 ? axis + ndim : axis);
}

struct mps_tensor mps_tensor_make(enum mps_dtype t, const struct mps_shape *s, void *data)
{
    struct mps_tensor r = {.dtype = t, .shape = *s, .data = data};
    mps_shape_strides(s, r.stride);
    return r;
}

size_t mps_tensor_bytes(const struct mps_tensor *t)
{
    return (size_t)mps_shape_numel(&t->shape) * mps_dtype_size(t->dtype);
}

struct mps_matmul_geom mps_matmul_geom(const struct mps_shape *a, const struct mps_shape *b)
{
    struct mps_shape sa = *a, sb = *b;
    if (sa.ndim == 1)
        sa = (struct mps_shape){2, {1, sa.dim[0]}};
    if (sb.ndim == 1)
        sb = (struct mps_shape){2, {sb.dim[0], 1}};
    struct mps_matmul_geom g = {.m = sa.dim[sa.ndim - 2], .k = sa.dim[sa.ndim - 1], .n = sb.dim[sb.ndim - 1]};
    struct mps_shape ba = {sa.ndim - 2, {0}}, bb = {sb.ndim - 2, {0}};
    memcpy(ba.dim, sa.dim, sizeof(int64_t) * (size_t)ba.ndim);
    memcpy(bb.dim, sb.dim, sizeof(int64_t) * (size_t)bb.ndim);
    mps_shape_broadcast(&ba, &bb, &g.batch, NULL); /* shape inference checked they broadcast */
    g.batches = mps_shape_numel(&g.batch);
    g.fold = mps_shape_numel(&bb) == 1 && mps_shape_numel(&ba) == g.batches;
    mps_shape_broadcast_strides(&ba, &g.batch, g.sa);
    mps_shape_broadcast_strides(&bb, &g.batch, g.sb);
    return g;
}

void mps_matmul_offsets(const struct mps_matmul_geom *g, int64_t i, int64_t *oa, int64_t *ob)
{
    int64_t a = 0, b = 0;
    for (int d = g->batch.ndim - 1; d >= 0; d--) {
        int64_t idx = i % g->batch.dim[d];
        i /= g->batch.dim[d];
        a += idx * g->sa[d];
        b += idx * g->sb[d];
    }
    *oa = a * g->m * g->k;
    *ob = b * g->k * g->n;
}

float mps_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf or nan */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign;
    } else { /* subnormal: normalize */
        exp = 113;
        while (!(man & 0x400)) {
            man <<= 1;
            exp--;
        }
        bits = sign | (exp << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t mps_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) /* inf or nan (keep nan quiet) */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00);
    if (absx < 0x38800000u) { /* below the smallest normal half: subnormal or zero */
        if (absx < 0x33000000u)
            return (uint16_t)sign;
        uint32_t man = (absx & 0x7fffff) | 0x800000;
        int shift = 126 - (int)(absx >> 23); /* 14..24 */
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((absx >> 13) - (112u << 10)), rem = absx & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1)))
        half++; /* round to nearest even; a carry into the exponent is correct */
    return (uint16_t)(sign | half);
}

float mps_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t mps_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fffu + ((x >> 16) & 1); /* to nearest even; a carry into the exponent is correct */
    return (uint16_t)(x >> 16);
}

void mps_convert_floats(enum mps_dtype from, const void *src, enum mps_dtype to, void *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        mps_elem_set(dst, to, i, mps_elem_get(src, from, i));
}
