/* qcast.c: the elementwise kernels of quantized tensors (ops.def):
   DequantizeLinear and QuantizeLinear, and the QLinearAdd, QLinearMul,
   QLinearConcat, QLinearUnary and QLinearGlobalAveragePool the pass makes
   of DequantizeLinear, the float op, QuantizeLinear.

   Each computes what the loader's compositions compute (Cast, Sub, Mul;
   Div, Round, Add, Clip, Cast), step for step in f32, so that a fused node
   gives the bytes of the nodes it replaces: dequantized, ((float)x -
   (float)z) * s; quantized, round half to even of x / s plus z, saturated
   (NaN: 0, as the composition's Cast makes it). This file is built without
   contraction (-std=c11), so that a product and a sum stay two roundings. */
#include <math.h>

#include "isa.h"
#include "kernels.h"
#include "ukernel_q.h"

/* A scale (one value) and a zero point (one value, or omitted: 0) of tensors s and z. */
static float mps_qscale(const struct mps_tensor *s)
{
    return ((const float *)s->data)[0];
}

static float mps_qzero(const struct mps_tensor *z)
{
    return !z->data ? 0.0f : z->dtype == MPS_I8 ? ((const int8_t *)z->data)[0] : ((const uint8_t *)z->data)[0];
}

/* DequantizeLinear and QuantizeLinear: a run of inner elements shares a
   scale (the elements after the axis; per tensor, all of them), in items
   of at most MPS_QCAST_CHUNK elements (a tensor per tensor had been one item,
   one thread), each on the family's loop. */
enum { MPS_QCAST_CHUNK = 16384 };
struct mps_qcast {
    const struct mps_uqgemm *uq;
    const struct mps_tensor *x, *s, *z;
    struct mps_tensor *y;
    int64_t inner, per, chunks; /* chunks: a run's */
};

static void mps_qcast_run(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qcast *c = ctx;
    bool dq = c->y->dtype == MPS_F32, sgn = (dq ? c->x->dtype : c->y->dtype) == MPS_I8;
    const float *s = c->s->data;
    for (int64_t item = begin; item < end; item++) {
        int64_t run = item / c->chunks, from = item % c->chunks * MPS_QCAST_CHUNK;
        int64_t ch = c->per > 1 ? run % c->per : 0, at = run * c->inner + from;
        int64_t n = c->inner - from < MPS_QCAST_CHUNK ? c->inner - from : MPS_QCAST_CHUNK;
        float z = !c->z ? 0.0f : sgn ? ((const int8_t *)c->z->data)[ch] : ((const uint8_t *)c->z->data)[ch];
        if (dq) { /* an int8 byte made unsigned by its top bit, its zero point plus 128: the same difference */
            struct mps_qdeq d = {s[ch], z + (sgn ? 128.0f : 0.0f), sgn ? 0x80 : 0};
            c->uq->dequantize((const uint8_t *)c->x->data + at, n, &d, (float *)c->y->data + at);
        } else {
            struct mps_qto q = mps_qto_of(s[ch], z, sgn);
            c->uq->quantize((const float *)c->x->data + at, n, &q, (uint8_t *)c->y->data + at);
        }
    }
}

enum mps_status mps_cpu_quantize(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    const struct mps_shape *xs = &a->in[0].shape;
    int64_t axis = a->node->p.axis.axis, per = mps_shape_numel(&a->in[1].shape), inner = 1, numel = mps_shape_numel(xs);
    for (int d = per > 1 ? (int)axis + 1 : 0; d < xs->ndim; d++)
        inner *= xs->dim[d];
    struct mps_qcast c = {mps_isa_qgemm(a->uk), &a->in[0],         &a->in[1], a->in[2].data ? &a->in[2] : NULL,
                          &a->out[0],           inner ? inner : 1, per,       0};
    c.chunks = (c.inner + MPS_QCAST_CHUNK - 1) / MPS_QCAST_CHUNK;
    if (numel)
        mps_pool_for(a->pool, numel / c.inner * c.chunks, MPS_QCAST_CHUNK * 2, mps_qcast_run, &c);
    return MPS_OK;
}

/* Part at of QLinearAdd or QLinearConcat: its dequantization (an int8
   byte made unsigned by its top bit, its zero point plus 128: the
   difference is the same integer, exactly, and the loops read one kind of
   byte) and its elements from axis on in *inner. */
static struct mps_qdeq mps_qdeq_of(const struct mps_cpu_args *a, int at, int axis, int64_t *inner)
{
    const struct mps_tensor *x = &a->in[at];
    bool sgn = x->dtype == MPS_I8;
    *inner = 1;
    for (int d = axis; d < x->shape.ndim; d++)
        *inner *= x->shape.dim[d];
    return (struct mps_qdeq){mps_qscale(&a->in[at + 1]), mps_qzero(&a->in[at + 2]) + (sgn ? 128.0f : 0.0f),
                             sgn ? 0x80 : 0};
}

/* QLinearAdd: y = Q(clamp(DQa(a) + DQb(b))), chunks of MPS_QADD_CHUNK elements an item. */
struct mps_qadd {
    const struct mps_uqgemm *uq;
    const uint8_t *a, *b;
    struct mps_qdeq da, db;
    float lo, hi;
    struct mps_qto q;
    int64_t numel;
    uint8_t *y;
};

enum { MPS_QADD_CHUNK = 4096 };

static void mps_qadd_run(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qadd *c = ctx;
    for (int64_t k = begin; k < end; k++) {
        int64_t at = k * MPS_QADD_CHUNK, n = c->numel - at < MPS_QADD_CHUNK ? c->numel - at : MPS_QADD_CHUNK;
        c->uq->requant(c->a + at, &c->da, c->b + at, &c->db, c->lo, c->hi, &c->q, n, c->y + at);
    }
}

enum mps_status mps_cpu_qadd(const struct mps_cpu_args *a, struct mps_error *err)
{
    int64_t numel;
    struct mps_qadd c = {.uq = mps_isa_qgemm(a->uk),
                         .a = a->in[0].data,
                         .b = a->in[3].data,
                         .da = mps_qdeq_of(a, 0, 0, &numel),
                         .db = mps_qdeq_of(a, 3, 0, &numel),
                         .lo = -INFINITY,
                         .hi = INFINITY,
                         .q = mps_qto_of(mps_qscale(&a->in[6]), mps_qzero(&a->in[7]), a->out[0].dtype == MPS_I8),
                         .numel = numel,
                         .y = a->out[0].data};
    float slope;
    const struct mps_fused_act *act = &a->node->p.binary.act;
    if (act->on && !mps_act_clamp(act, &c.lo, &c.hi, &slope))
        return mps_fail(err, MPS_ERR_RUNTIME, "node '%s' (QLinearAdd): its activation is not a clamp", a->node->name);
    if (numel)
        mps_pool_for(a->pool, (numel + MPS_QADD_CHUNK - 1) / MPS_QADD_CHUNK, MPS_QADD_CHUNK, mps_qadd_run, &c);
    return MPS_OK;
}

/* y[i] = table[x[i]] for i < n: the family's lut, or byte by byte where it has none. */
static void mps_qlut(const struct mps_uqgemm *uq, const uint8_t *table, const uint8_t *x, int64_t n, uint8_t *y)
{
    if (uq->lut) {
        uq->lut(table, x, n, y);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        y[i] = table[x[i]];
}

/* QLinearConcat: each part's runs (its elements from the axis on, once
   per index before the axis) requantized into y's, by a table of the 256
   bytes that the family's requantization made (the same bytes as element
   by element, without a division each); an item MPS_QCAT_CHUNK bytes of a
   run of a part. */
enum { MPS_QCAT_CHUNK = 65536 };
struct mps_qcat {
    const struct mps_cpu_args *a;
    const struct mps_uqgemm *uq;
    int n, axis;
    int64_t run;    /* y's elements from the axis on */
    int64_t chunks; /* a run's at most */
    struct mps_qto q;
};

static void mps_qcat_run(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qcat *c = ctx;
    uint8_t bytes[256], table[256];
    for (int b = 0; b < 256; b++)
        bytes[b] = (uint8_t)b;
    for (int64_t item = begin; item < end; item++) {
        int64_t o = item / (c->n * c->chunks), at = 0, inner = 0, chunk = item % c->chunks;
        int part = (int)(item / c->chunks % c->n);
        for (int i = 0; i <= part; i++) { /* its place in y's run: the parts' before it */
            at += inner;
            mps_qdeq_of(c->a, 2 + 3 * i, c->axis, &inner);
        }
        int64_t from = chunk * MPS_QCAT_CHUNK, count = inner - from < MPS_QCAT_CHUNK ? inner - from : MPS_QCAT_CHUNK;
        if (count <= 0)
            continue;
        struct mps_qdeq d = mps_qdeq_of(c->a, 2 + 3 * part, c->axis, &inner);
        c->uq->requant(bytes, &d, NULL, NULL, -INFINITY, INFINITY, &c->q, 256, table);
        const uint8_t *x = (const uint8_t *)c->a->in[2 + 3 * part].data + o * inner + from;
        uint8_t *y = (uint8_t *)c->a->out[0].data + o * c->run + at + from;
        mps_qlut(c->uq, table, x, count, y);
    }
}

enum mps_status mps_cpu_qconcat(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    struct mps_qcat c = {.a = a,
                         .uq = mps_isa_qgemm(a->uk),
                         .n = (a->node->n_in - 2) / 3,
                         .axis = (int)a->node->p.axis.axis,
                         .q = mps_qto_of(mps_qscale(&a->in[0]), mps_qzero(&a->in[1]), a->out[0].dtype == MPS_I8)};
    int64_t outer = 1, numel = mps_shape_numel(&a->out[0].shape);
    for (int d = 0; d < c.axis; d++)
        outer *= a->out[0].shape.dim[d];
    c.run = outer ? numel / outer : 0;
    c.chunks = (c.run + MPS_QCAT_CHUNK - 1) / MPS_QCAT_CHUNK; /* a part's run is at most y's */
    if (numel)
        mps_pool_for(a->pool, outer * c.n * c.chunks, MPS_QCAT_CHUNK, mps_qcat_run, &c);
    return MPS_OK;
}

/* QLinearUnary: y = Q(f(DQ(x))), f the node's elementwise op, by a table of
   the 256 bytes made of the composition's own steps (the family's
   dequantization, f as its node computes it, the family's quantization):
   the same bytes as the three nodes, a byte looked up an element (the float
   op on every element had cost LR-ASPP int8 a third of its time, its
   HardSwishes with the DequantizeLinear and QuantizeLinear around them).
   Without y's scale, y = f(DQ(x)) in f32 by a table of 256 floats: the
   floats of the two nodes. */
struct mps_qunary {
    const struct mps_uqgemm *uq;
    const uint8_t *x, *table; /* table: the bytes', NULL for floats out */
    const float *floats;
    int64_t numel;
    void *y;
};

static void mps_qunary_run(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qunary *c = ctx;
    for (int64_t k = begin; k < end; k++) {
        int64_t at = k * MPS_QCAT_CHUNK, n = c->numel - at < MPS_QCAT_CHUNK ? c->numel - at : MPS_QCAT_CHUNK;
        const uint8_t *x = c->x + at;
        if (!c->table) {
            float *y = (float *)c->y + at;
            for (int64_t i = 0; i < n; i++)
                y[i] = c->floats[x[i]];
            continue;
        }
        mps_qlut(c->uq, c->table, x, n, (uint8_t *)c->y + at);
    }
}

enum mps_status mps_cpu_qunary(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    int64_t numel;
    const struct mps_fused_act *act = &a->node->p.binary.act;
    struct mps_qdeq d = mps_qdeq_of(a, 0, 0, &numel);
    uint8_t bytes[256], table[256];
    float f[256];
    struct mps_qunary c = {mps_isa_qgemm(a->uk), a->in[0].data, a->out[0].dtype == MPS_F32 ? NULL : table, f, numel,
                           a->out[0].data};
    for (int b = 0; b < 256; b++)
        bytes[b] = (uint8_t)b;
    c.uq->dequantize(bytes, 256, &d, f);
    mps_cpu_unary_f32(act->op, &act->p, f, f, 256);
    if (c.table) {
        struct mps_qto q = mps_qto_of(mps_qscale(&a->in[3]), mps_qzero(&a->in[4]), a->out[0].dtype == MPS_I8);
        c.uq->quantize(f, 256, &q, table);
    }
    if (numel)
        mps_pool_for(a->pool, (numel + MPS_QCAT_CHUNK - 1) / MPS_QCAT_CHUNK, MPS_QCAT_CHUNK, mps_qunary_run, &c);
    return MPS_OK;
}

/* QLinearMul: y = Q(DQa(a) * DQb(b)), b of a's shape (inner 1) or one value
   for each run of inner elements of a (a squeeze-excite's scale per
   channel): the family's mul row, each step rounded as the composition's
   node rounds it; chunks of MPS_QADD_CHUNK elements an item, b's floats
   dequantized in blocks of 256. */
struct mps_qmul {
    const struct mps_uqgemm *uq;
    const uint8_t *a, *b;
    struct mps_qdeq da, db;
    struct mps_qto q;
    int64_t numel, inner;
    uint8_t *y;
};

static void mps_qmul_run(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qmul *c = ctx;
    float fb[256];
    for (int64_t k = begin; k < end; k++) {
        int64_t stop = (k + 1) * MPS_QADD_CHUNK < c->numel ? (k + 1) * MPS_QADD_CHUNK : c->numel;
        for (int64_t i = k * MPS_QADD_CHUNK, n; i < stop; i += n) {
            n = stop - i < 256 ? stop - i : 256;
            if (c->inner > 1 && n > c->inner - i % c->inner)
                n = c->inner - i % c->inner; /* one b value a block */
            c->uq->dequantize(c->inner > 1 ? c->b + i / c->inner : c->b + i, c->inner > 1 ? 1 : n, &c->db, fb);
            c->uq->mul(c->a + i, &c->da, fb, c->inner > 1 ? 0 : 1, &c->q, n, c->y + i);
        }
    }
}

enum mps_status mps_cpu_qmul(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    int64_t numel, nb;
    struct mps_qmul c = {.uq = mps_isa_qgemm(a->uk),
                         .a = a->in[0].data,
                         .b = a->in[3].data,
                         .da = mps_qdeq_of(a, 0, 0, &numel),
                         .db = mps_qdeq_of(a, 3, 0, &nb),
                         .q = mps_qto_of(mps_qscale(&a->in[6]), mps_qzero(&a->in[7]), a->out[0].dtype == MPS_I8),
                         .y = a->out[0].data};
    c.numel = numel, c.inner = nb ? numel / nb : 1;
    if (numel)
        mps_pool_for(a->pool, (numel + MPS_QADD_CHUNK - 1) / MPS_QADD_CHUNK, MPS_QADD_CHUNK, mps_qmul_run, &c);
    return MPS_OK;
}

/* QLinearGlobalAveragePool: each plane's bytes dequantized and summed as the
   float pool sums its runs of 256 (the family's sum row, mps_cpu_sum_run's
   order), the means of an item's planes quantized at once: the
   composition's steps. An item MPS_QGAP_PLANES planes. */
enum { MPS_QGAP_PLANES = 64 };
struct mps_qgap {
    const struct mps_uqgemm *uq;
    const uint8_t *x;
    struct mps_qdeq d;
    struct mps_qto q;
    int64_t plane, planes;
    uint8_t *y;
};

static void mps_qgap_run(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_qgap *c = ctx;
    float mean[MPS_QGAP_PLANES];
    for (int64_t item = begin; item < end; item++) {
        int64_t p0 = item * MPS_QGAP_PLANES, np = c->planes - p0 < MPS_QGAP_PLANES ? c->planes - p0 : MPS_QGAP_PLANES;
        for (int64_t p = 0; p < np; p++) {
            double s = 0;
            const uint8_t *x = c->x + (p0 + p) * c->plane;
            for (int64_t i0 = 0; i0 < c->plane; i0 += 256)
                s = c->uq->sum(s, x + i0, &c->d, c->plane - i0 < 256 ? c->plane - i0 : 256);
            mean[p] = (float)(s / (double)c->plane);
        }
        c->uq->quantize(mean, np, &c->q, c->y + p0);
    }
}

enum mps_status mps_cpu_qgap(const struct mps_cpu_args *a, struct mps_error *err)
{
    (void)err;
    int64_t numel;
    struct mps_qgap c = {.uq = mps_isa_qgemm(a->uk),
                         .x = a->in[0].data,
                         .d = mps_qdeq_of(a, 0, 0, &numel),
                         .q = mps_qto_of(mps_qscale(&a->in[3]), mps_qzero(&a->in[4]), a->out[0].dtype == MPS_I8),
                         .planes = mps_shape_numel(&a->out[0].shape),
                         .y = a->out[0].data};
    c.plane = c.planes ? numel / c.planes : 0;
    if (c.planes)
        mps_pool_for(a->pool, (c.planes + MPS_QGAP_PLANES - 1) / MPS_QGAP_PLANES,
                     MPS_QGAP_PLANES * (c.plane ? c.plane : 1), mps_qgap_run, &c);
    return MPS_OK;
}
