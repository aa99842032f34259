/* layout.c: Transpose, Concat, Split, Slice, Expand (all strided copies),
   Gather, Shape, ConstantOfShape and Pad, for every dtype. Reshape, Flatten,
   Squeeze and Unsqueeze keep the bytes and are plain copies (unary.c). */
#include <string.h>

#include "kernels.h"

/* A strided copy with its dims coalesced: size-1 dims dropped, neighbours
   that are one run in both layouts merged (a Concat's part is then one run
   per image, not one per row), the last dim cut into pieces for the pool. */
struct mps_copy_job {
    unsigned char *dst;
    const unsigned char *src;
    int nd;                                 /* dims after coalescing, >= 1 */
    int64_t dim[MPS_MAX_DIMS], ds[MPS_MAX_DIMS], ss[MPS_MAX_DIMS];
    int64_t piece, pieces;                  /* of the last dim: elements a piece, pieces a row */
    size_t elem;
};

static void mps_copy_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_copy_job *jb = ctx;
    int last = jb->nd - 1;
    int64_t ds = jb->ds[last], ss = jb->ss[last];
    for (int64_t item = begin; item < end; item++) {
        int64_t row = item / jb->pieces, j0 = item % jb->pieces * jb->piece, od = 0, os = 0;
        for (int i = last - 1; i >= 0; i--, row /= jb->dim[i + 1]) {
            od += row % jb->dim[i] * jb->ds[i];
            os += row % jb->dim[i] * jb->ss[i];
        }
        int64_t n = jb->dim[last] - j0 < jb->piece ? jb->dim[last] - j0 : jb->piece;
        unsigned char *d = jb->dst + (od + j0 * ds) * (int64_t)jb->elem;
        const unsigned char *s = jb->src + (os + j0 * ss) * (int64_t)jb->elem;
        if (ds == 1 && ss == 1) {
            memcpy(d, s, (size_t)n * jb->elem);
            continue;
        }
#define MPS_COPY_ROW(T)                                                                                                \
    for (int64_t i = 0; i < n; i++)                                                                                    \
        ((T *)d)[i * ds] = ((const T *)s)[i * ss];                                                                     \
    break
        switch (jb->elem) {
        case 1: MPS_COPY_ROW(uint8_t);
        case 2: MPS_COPY_ROW(uint16_t);
        case 4: MPS_COPY_ROW(uint32_t);
        default: MPS_COPY_ROW(uint64_t);
        }
#undef MPS_COPY_ROW
    }
}

/* Elements of a contiguous row one piece takes: a row longer than that is split over the pool. */
enum { MPS_COPY_PIECE = 16384 };

void mps_cpu_copy_strided(struct mps_pool *pool, void *dst, const int64_t *dst_stride, const void *src,
                          const int64_t *src_stride, const struct mps_shape *shape, size_t elem)
{
    if (mps_shape_numel(shape) == 0)
        return;
    struct mps_copy_job jb = {.dst = dst, .src = src, .elem = elem};
    for (int i = 0; i < shape->ndim; i++) {
        if (shape->dim[i] == 1)
            continue;
        int at = jb.nd - 1;
        if (jb.nd > 0 && jb.ds[at] == dst_stride[i] * shape->dim[i] && jb.ss[at] == src_stride[i] * shape->dim[i]) {
            jb.dim[at] *= shape->dim[i]; /* one run with the dim before it in both layouts */
            jb.ds[at] = dst_stride[i], jb.ss[at] = src_stride[i];
            continue;
        }
        jb.dim[jb.nd] = shape->dim[i], jb.ds[jb.nd] = dst_stride[i], jb.ss[jb.nd] = src_stride[i];
        jb.nd++;
    }
    if (jb.nd == 0) /* every dim 1: one element */
        jb.dim[0] = 1, jb.ds[0] = jb.ss[0] = 1, jb.nd = 1;
    int64_t n = jb.dim[jb.nd - 1], rows = mps_shape_numel(shape) / n;
    bool run = jb.ds[jb.nd - 1] == 1 && jb.ss[jb.nd - 1] == 1;
    jb.piece = run && n > MPS_COPY_PIECE ? MPS_COPY_PIECE : n;
    jb.pieces = (n + jb.piece - 1) / jb.piece;
    mps_pool_for(pool, rows * jb.pieces, jb.piece * (run ? 1 : 4), mps_copy_rows, &jb);
}

enum mps_status mps_cpu_transpose(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0];
    struct mps_tensor *y = &a->out[0];
    int64_t src[MPS_MAX_DIMS];
    for (int i = 0; i < y->shape.ndim; i++)
        src[i] = x->stride[a->node->p.transpose.perm[i]];
    (void)err;
    mps_cpu_copy_strided(a->pool, y->data, y->stride, x->data, src, &y->shape, mps_dtype_size(y->dtype));
    return MPS_OK;
}

enum mps_status mps_cpu_depth(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_shape out6;
    int64_t src[6], dst[MPS_MAX_DIMS];
    mps_depth_transpose(a->node, &a->in[0].shape, &out6, src);
    mps_shape_strides(&out6, dst);
    (void)err;
    mps_cpu_copy_strided(a->pool, a->out[0].data, dst, a->in[0].data, src, &out6, mps_dtype_size(a->out[0].dtype));
    return MPS_OK;
}

enum mps_status mps_cpu_slice(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0];
    struct mps_tensor *y = &a->out[0];
    const struct mps_slice_params *p = &a->node->p.slice;
    int64_t src[MPS_MAX_DIMS], base = 0;
    for (int i = 0; i < y->shape.ndim; i++) {
        src[i] = x->stride[i] * p->step[i];
        if (y->shape.dim[i])
            base += p->start[i] * x->stride[i];
    }
    size_t elem = mps_dtype_size(y->dtype);
    (void)err;
    mps_cpu_copy_strided(a->pool, y->data, y->stride, (const unsigned char *)x->data + base * (int64_t)elem, src,
                         &y->shape, elem);
    return MPS_OK;
}

enum mps_status mps_cpu_expand(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0];
    struct mps_tensor *y = &a->out[0];
    int64_t src[MPS_MAX_DIMS];
    mps_shape_broadcast_strides(&x->shape, &y->shape, src);
    (void)err;
    mps_cpu_copy_strided(a->pool, y->data, y->stride, x->data, src, &y->shape, mps_dtype_size(y->dtype));
    return MPS_OK;
}

/* Concat and Split move blocks along axis between one big and several small tensors. */
static void mps_cpu_blocks(struct mps_pool *pool, struct mps_tensor *big, const struct mps_tensor *parts, int n_parts,
                           int axis, bool into_big)
{
    size_t elem = mps_dtype_size(big->dtype);
    int64_t off = 0;
    for (int i = 0; i < n_parts; i++) {
        const struct mps_tensor *t = &parts[i];
        unsigned char *b = (unsigned char *)big->data + off * big->stride[axis] * (int64_t)elem;
        if (into_big)
            mps_cpu_copy_strided(pool, b, big->stride, t->data, t->stride, &t->shape, elem);
        else
            mps_cpu_copy_strided(pool, t->data, t->stride, b, big->stride, &t->shape, elem);
        off += t->shape.dim[axis];
    }
}

enum mps_status mps_cpu_concat(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    mps_cpu_blocks(a->pool, &a->out[0], a->in, a->node->n_in, (int)a->node->p.axis.axis, true);
    return MPS_OK;
}

enum mps_status mps_cpu_split(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    mps_cpu_blocks(a->pool, (struct mps_tensor *)&a->in[0], a->out, a->node->n_out, (int)a->node->p.axis.axis, false);
    return MPS_OK;
}

enum mps_status mps_cpu_gather(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *ix = &a->in[1];
    int axis = (int)a->node->p.axis.axis;
    int64_t outer = 1, inner = 1, len = x->shape.dim[axis], count = mps_shape_numel(&ix->shape);
    for (int i = 0; i < axis; i++)
        outer *= x->shape.dim[i];
    for (int i = axis + 1; i < x->shape.ndim; i++)
        inner *= x->shape.dim[i];
    for (int64_t j = 0; j < count; j++) {
        int64_t v = ix->dtype == MPS_I64 ? ((const int64_t *)ix->data)[j] : ((const int32_t *)ix->data)[j];
        if (v < -len || v >= len)
            return mps_fail(err, MPS_ERR_INPUT, "node '%s' (Gather): index %lld is out of range for an axis of %lld",
                            a->node->name, (long long)v, (long long)len);
    }
    size_t row = (size_t)inner * mps_dtype_size(x->dtype);
    const unsigned char *src = x->data;
    unsigned char *dst = a->out[0].data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < count; j++) {
            int64_t v = ix->dtype == MPS_I64 ? ((const int64_t *)ix->data)[j] : ((const int32_t *)ix->data)[j];
            if (v < 0)
                v += len;
            memcpy(dst + (o * count + j) * (int64_t)row, src + (o * len + v) * (int64_t)row, row);
        }
    return MPS_OK;
}

/* Index i of ix made >= 0 against an axis of len, or an error naming the node. */
static enum mps_status mps_index_at(const struct mps_cpu_args *a, const struct mps_tensor *ix, int64_t i, int64_t len,
                                    int64_t *v, struct mps_error *err)
{
    *v = ix->dtype == MPS_I64 ? ((const int64_t *)ix->data)[i] : ((const int32_t *)ix->data)[i];
    if (*v < -len || *v >= len)
        return mps_fail(err, MPS_ERR_INPUT, "node '%s' (%s): index %lld is out of range for an axis of %lld",
                        a->node->name, mps_op_name(a->node->op), (long long)*v, (long long)len);
    *v += *v < 0 ? len : 0;
    return MPS_OK;
}

enum mps_status mps_cpu_gather_elements(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *ix = &a->in[1];
    int axis = (int)a->node->p.axis.axis;
    int64_t len = x->shape.dim[axis], count = mps_shape_numel(&ix->shape);
    size_t elem = mps_dtype_size(x->dtype);
    for (int64_t o = 0; o < count; o++) {
        int64_t v;
        enum mps_status st = mps_index_at(a, ix, o, len, &v, err);
        if (st)
            return st;
        int64_t at = mps_gather_elements_at(&x->shape, &ix->shape, axis, o, v);
        memcpy((unsigned char *)a->out[0].data + (size_t)o * elem, (const unsigned char *)x->data + (size_t)at * elem,
               elem);
    }
    return MPS_OK;
}

/* The k indices of GatherND's or ScatterND's row r, checked and made >= 0. */
static enum mps_status mps_nd_tuple(const struct mps_cpu_args *a, int b, int64_t r, int64_t *t, struct mps_error *err)
{
    const struct mps_tensor *ix = &a->in[1];
    int64_t k = ix->shape.dim[ix->shape.ndim - 1];
    enum mps_status st = MPS_OK;
    for (int64_t j = 0; j < k && !st; j++)
        st = mps_index_at(a, ix, r * k + j, a->in[0].shape.dim[b + j], &t[j], err);
    return st;
}

/* y[at] combined with u[ui] by the reduction, in their dtype (f32, i64, i32; none: any dtype). */
static void mps_scatter_combine(void *y, int64_t at, const void *u, int64_t ui, enum mps_dtype t,
                                enum mps_scatter_reduction red)
{
    size_t elem = mps_dtype_size(t);
    if (red == MPS_SCATTER_NONE || (t != MPS_F32 && t != MPS_I64 && t != MPS_I32)) {
        memcpy((unsigned char *)y + (size_t)at * elem, (const unsigned char *)u + (size_t)ui * elem, elem);
        return;
    }
#define MPS_COMBINE(T)                                                                          \
    do {                                                                                        \
        T *p = (T *)y + at, v = ((const T *)u)[ui];                                             \
        *p = red == MPS_SCATTER_ADD   ? (T)(*p + v)                                            \
             : red == MPS_SCATTER_MUL ? (T)(*p * v)                                            \
             : red == MPS_SCATTER_MAX ? (*p > v || *p != *p ? *p : v)                          \
                                      : (*p < v || *p != *p ? *p : v);                         \
    } while (0)
    if (t == MPS_F32)
        MPS_COMBINE(float);
    else if (t == MPS_I64)
        MPS_COMBINE(int64_t);
    else
        MPS_COMBINE(int32_t);
#undef MPS_COMBINE
}

enum mps_status mps_cpu_gather_nd(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *ix = &a->in[1];
    int b = (int)a->node->p.index.batch_dims;
    int64_t rows, slice, t[MPS_MAX_DIMS];
    size_t elem = mps_dtype_size(x->dtype);
    mps_nd_rows(&x->shape, &ix->shape, b, &rows, &slice);
    for (int64_t r = 0; r < rows; r++) {
        enum mps_status st = mps_nd_tuple(a, b, r, t, err);
        if (st)
            return st;
        memcpy((unsigned char *)a->out[0].data + (size_t)(r * slice) * elem,
               (const unsigned char *)x->data + (size_t)mps_nd_base(&x->shape, &ix->shape, b, r, t) * elem,
               (size_t)slice * elem);
    }
    return MPS_OK;
}

enum mps_status mps_cpu_scatter_nd(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *ix = &a->in[1], *u = &a->in[2];
    int64_t rows, slice, t[MPS_MAX_DIMS];
    mps_nd_rows(&x->shape, &ix->shape, 0, &rows, &slice);
    if (a->out[0].data != x->data)
        memcpy(a->out[0].data, x->data, mps_tensor_bytes(x));
    for (int64_t r = 0; r < rows; r++) {
        enum mps_status st = mps_nd_tuple(a, 0, r, t, err);
        if (st)
            return st;
        int64_t base = mps_nd_base(&x->shape, &ix->shape, 0, r, t);
        for (int64_t e = 0; e < slice; e++)
            mps_scatter_combine(a->out[0].data, base + e, u->data, r * slice + e, x->dtype, a->node->p.index.reduction);
    }
    return MPS_OK;
}

enum mps_status mps_cpu_scatter_elements(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0], *ix = &a->in[1], *u = &a->in[2];
    int axis = (int)a->node->p.index.axis;
    if (a->out[0].data != x->data)
        memcpy(a->out[0].data, x->data, mps_tensor_bytes(x));
    for (int64_t o = 0; o < mps_shape_numel(&ix->shape); o++) {
        int64_t v;
        enum mps_status st = mps_index_at(a, ix, o, x->shape.dim[axis], &v, err);
        if (st)
            return st;
        mps_scatter_combine(a->out[0].data, mps_gather_elements_at(&x->shape, &ix->shape, axis, o, v), u->data, o,
                            x->dtype, a->node->p.index.reduction);
    }
    return MPS_OK;
}

enum mps_status mps_cpu_shape(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_shape_params *p = &a->node->p.shape;
    int64_t *y = a->out[0].data;
    (void)err;
    for (int64_t i = p->start; i < p->end; i++)
        y[i - p->start] = a->in[0].shape.dim[i];
    return MPS_OK;
}

enum mps_status mps_cpu_fill(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_tensor *y = &a->out[0];
    int64_t n = mps_shape_numel(&y->shape);
    (void)err;
    for (int64_t i = 0; i < n; i++)
        mps_elem_set(y->data, y->dtype, i, a->node->p.fill.value);
    return MPS_OK;
}

/* Index into an axis of size d for output position o with begin pad b, or -1 for the constant. */
static int64_t mps_pad_source(enum mps_pad_mode mode, int64_t o, int64_t b, int64_t d)
{
    int64_t i = o - b;
    if (i >= 0 && i < d)
        return i;
    if (mode == MPS_PAD_CONSTANT)
        return -1;
    if (mode == MPS_PAD_EDGE)
        return i < 0 ? 0 : d - 1;
    /* reflect: pads are smaller than d, so one reflection lands inside */
    return i < 0 ? -i : 2 * (d - 1) - i;
}

struct mps_pad_job {
    const struct mps_tensor *x;
    struct mps_tensor *y;
    const struct mps_pad_params *p;
    size_t elem;
    unsigned char fill[8];
};

/* Output rows [begin, end) (all dims but the last): the source row from the
   outer dims' rule, then the row's inside as one copy and its edges one
   element at a time. */
static void mps_pad_rows(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_pad_job *q = ctx;
    const struct mps_tensor *x = q->x;
    const struct mps_pad_params *p = q->p;
    int nd = q->y->shape.ndim, last = nd - 1;
    int64_t w = q->y->shape.dim[last], d = x->shape.dim[last], b = p->pads[last], xs = x->stride[last];
    int64_t lo = b > 0 ? b : 0, hi = b + d < w ? b + d : w; /* outputs [lo, hi) read x directly */
    size_t elem = q->elem;
    for (int64_t r = begin; r < end; r++) {
        int64_t src = 0, rem = r;
        for (int k = last - 1; k >= 0 && src >= 0; k--) {
            int64_t i = mps_pad_source(p->mode, rem % q->y->shape.dim[k], p->pads[k], x->shape.dim[k]);
            rem /= q->y->shape.dim[k];
            src = i < 0 ? -1 : src + i * x->stride[k];
        }
        unsigned char *out = (unsigned char *)q->y->data + (size_t)(r * w) * elem;
        const unsigned char *in = (const unsigned char *)x->data;
        for (int64_t o = 0; o < w; o++) {
            if (o == lo && src >= 0 && xs == 1 && hi > lo) { /* the inside, contiguous */
                memcpy(out + (size_t)o * elem, in + (size_t)(src + o - b) * elem, (size_t)(hi - lo) * elem);
                o = hi - 1;
                continue;
            }
            int64_t i = src < 0 ? -1 : mps_pad_source(p->mode, o, b, d);
            memcpy(out + (size_t)o * elem, i < 0 ? q->fill : in + (size_t)(src + i * xs) * elem, elem);
        }
    }
}

enum mps_status mps_cpu_pad(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_tensor *y = &a->out[0];
    struct mps_pad_job q = {.x = &a->in[0], .y = y, .p = &a->node->p.pad, .elem = mps_dtype_size(y->dtype)};
    mps_elem_set(q.fill, y->dtype, 0, q.p->value);
    (void)err;
    int64_t n = mps_shape_numel(&y->shape), w = y->shape.ndim ? y->shape.dim[y->shape.ndim - 1] : 1;
    if (n == 0)
        return MPS_OK;
    if (y->shape.ndim == 0) { /* a scalar: nothing to pad */
        memcpy(y->data, a->in[0].data, q.elem);
        return MPS_OK;
    }
    mps_pool_for(a->pool, n / w, w, mps_pad_rows, &q);
    return MPS_OK;
}

enum mps_status mps_cpu_trilu(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_trilu_params *p = &a->node->p.trilu;
    const struct mps_shape *s = &a->out[0].shape;
    int64_t rows = s->dim[s->ndim - 2], cols = s->dim[s->ndim - 1], n = mps_shape_numel(s);
    int64_t mats = n ? n / (rows * cols) : 0;
    size_t elem = mps_dtype_size(a->out[0].dtype);
    const unsigned char *x = a->in[0].data;
    unsigned char *y = a->out[0].data;
    (void)err;
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < rows; i++) {
            size_t row = (size_t)((m * rows + i) * cols) * elem;
            for (int64_t j = 0; j < cols; j++) {
                bool keep = p->upper ? j - i >= p->k : j - i <= p->k;
                if (keep)
                    memcpy(y + row + (size_t)j * elem, x + row + (size_t)j * elem, elem);
                else
                    memset(y + row + (size_t)j * elem, 0, elem);
            }
        }
    return MPS_OK;
}

enum mps_status mps_cpu_eyelike(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_tensor *y = &a->out[0];
    int64_t rows = y->shape.dim[0], cols = y->shape.dim[1], k = a->node->p.eye.k;
    (void)err;
    memset(y->data, 0, mps_tensor_bytes(y));
    for (int64_t i = 0; i < rows; i++)
        if (i + k >= 0 && i + k < cols)
            mps_elem_set(y->data, y->dtype, i * cols + i + k, 1);
    return MPS_OK;
}

enum mps_status mps_cpu_random(const struct mps_cpu_args *a, struct mps_error *err)
{
    struct mps_tensor *y = &a->out[0];
    (void)err;
    for (int64_t i = 0, n = mps_shape_numel(&y->shape); i < n; i++)
        mps_elem_set(y->data, y->dtype, i, mps_random(&a->node->p.random, i));
    return MPS_OK;
}

enum mps_status mps_cpu_revseq(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_revseq_params *p = &a->node->p.revseq;
    const struct mps_tensor *x = &a->in[0], *lens = &a->in[1];
    int64_t batch = x->shape.dim[p->batch_axis], time = x->shape.dim[p->time_axis],
            inner = batch * time != 0 ? mps_shape_numel(&x->shape) / (batch * time) : 0;
    size_t elem = mps_dtype_size(x->dtype), row = (size_t)inner * elem;
    for (int64_t b = 0; b < batch; b++) {
        int64_t len = mps_elem_get_int(lens->data, lens->dtype, b);
        if (len < 0 || len > time)
            return mps_fail(err, MPS_ERR_INPUT, "node '%s' (ReverseSequence): sequence length %lld is not 0 to %lld",
                            a->node->name, (long long)len, (long long)time);
        for (int64_t t = 0; t < time; t++) {
            int64_t from = t < len ? len - 1 - t : t;
            int64_t dst = p->time_axis == 0 ? t * batch + b : b * time + t,
                    src = p->time_axis == 0 ? from * batch + b : b * time + from;
            memcpy((char *)a->out[0].data + (size_t)dst * row, (const char *)x->data + (size_t)src * row, row);
        }
    }
    return MPS_OK;
}

enum mps_status mps_cpu_compress(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_compress_params *p = &a->node->p.compress;
    const struct mps_tensor *x = &a->in[0], *cond = &a->in[1];
    const uint8_t *keep = cond->data;
    int64_t len = p->has_axis ? x->shape.dim[p->axis] : mps_shape_numel(&x->shape), outer = 1, inner = 1;
    for (int d = 0; p->has_axis && d < x->shape.ndim; d++)
        if (d < p->axis)
            outer *= x->shape.dim[d];
        else if (d > p->axis)
            inner *= x->shape.dim[d];
    size_t row = (size_t)inner * mps_dtype_size(x->dtype);
    int64_t c = cond->shape.dim[0] < len ? cond->shape.dim[0] : len, kept = 0;
    for (int64_t k = 0; k < c; k++)
        kept += keep[k] != 0;
    a->out[0].shape.dim[p->has_axis ? p->axis : 0] = kept; /* the bound's, or a run's (bounded) */
    unsigned char *y = a->out[0].data;
    (void)err;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0, at = 0; k < c; k++)
            if (keep[k])
                memcpy(y + (size_t)(o * kept + at++) * row,
                       (const unsigned char *)x->data + (size_t)(o * len + k) * row, row);
    return MPS_OK;
}

enum mps_status mps_cpu_nonzero(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_tensor *x = &a->in[0];
    int64_t n = mps_shape_numel(&x->shape), count = 0, at = 0, idx[MPS_MAX_DIMS];
    int64_t *y = a->out[0].data;
    (void)err;
    for (int64_t i = 0; i < n; i++)
        count += mps_elem_get(x->data, x->dtype, i) != 0;
    a->out[0].shape.dim[1] = count; /* a run's, where the output is bounded */
    for (int64_t i = 0; i < n; i++) {
        if (mps_elem_get(x->data, x->dtype, i) == 0)
            continue;
        int64_t rem = i;
        for (int d = x->shape.ndim - 1; d >= 0; d--)
            idx[d] = rem % x->shape.dim[d], rem /= x->shape.dim[d];
        for (int d = 0; d < x->shape.ndim; d++)
            y[d * count + at] = idx[d];
        at++;
    }
    return MPS_OK;
}

enum mps_status mps_cpu_tile(const struct mps_cpu_args *a, struct mps_error *err)
{
    int64_t src[MPS_MAX_DIMS], dst[MPS_MAX_DIMS];
    struct mps_shape view;
    (void)err;
    mps_tile_view(&a->in[0].shape, a->node->p.tile.repeats, &view, src);
    mps_shape_strides(&view, dst);
    mps_cpu_copy_strided(a->pool, a->out[0].data, dst, a->in[0].data, src, &view, mps_dtype_size(a->out[0].dtype));
    return MPS_OK;
}

enum mps_status mps_cpu_range(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_range_params *p = &a->node->p.range;
    (void)err;
    for (int64_t i = 0; i < a->out[0].shape.dim[0]; i++)
        mps_elem_set(a->out[0].data, a->out[0].dtype, i, p->start + (double)i * p->delta);
    return MPS_OK;
}

/* OneHot: output [outer, depth, inner] around the new axis; indices [outer, inner]. */
enum mps_status mps_cpu_onehot(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_onehot_params *p = &a->node->p.onehot;
    const struct mps_tensor *ix = &a->in[0], *y = &a->out[0];
    int64_t inner = 1, count = mps_shape_numel(&ix->shape);
    for (int d = (int)p->axis + 1; d < y->shape.ndim; d++)
        inner *= y->shape.dim[d];
    (void)err;
    for (int64_t i = 0; i < count; i++) {
        double v = mps_elem_get(ix->data, ix->dtype, i);
        int64_t at = (int64_t)v < 0 ? (int64_t)v + p->depth : (int64_t)v, o = i / inner, r = i % inner;
        for (int64_t k = 0; k < p->depth; k++)
            mps_elem_set(y->data, y->dtype, (o * p->depth + k) * inner + r, k == at ? p->on : p->off);
    }
    return MPS_OK;
}
