/* winograd.c: 3x3 stride-1 convolutions as Winograd F(2x2, 3x3).

   Each 2x2 block of outputs comes from a 4x4 input tile: the tile and the
   kernel are transformed (V = B^T d B, U = G g G^T, U at compile time), the
   16 positions of the 4x4 transform each become one GEMM over channels
   (M[k] = U[k] V[k]: [out channels x in channels] x [in channels x tiles]),
   and A^T M A gives the 2x2 outputs: 16 multiplies per 4 outputs instead of
   36, the products on the micro-kernels (each U[k] packed at compile as A).
   Used when the weights are constant and there are enough channels for the
   GEMMs to pay: mps_winograd_cpu_applies (the run is below; U and the shape
   rule are the core's, winograd_weights.h, which cuda shares).
   Not F(4x4, 3x3), though it multiplies 2.25 times less: in fp32 against a
   double reference (256 input channels, normal inputs, He-scaled weights)
   one layer errs 6e-7 of its output's scale here (a direct sum 4e-7),
   3-4e-6 as F(3x3, 3x3) and 3e-6 to 1e-5 as F(4x4, 3x3) (points 0, +-1
   and +-2 or +-1/2), a third or more of the 1e-5 a whole model meets. */
#include <string.h>

#include "kernels.h"
#include "pgemm.h"
#include "winograd_weights.h"

enum {
    MPS_WINOGRAD_NT = 32,           /* tiles a CPU task takes: a multiple of every family's nr */
    MPS_WINOGRAD_SKEW = 16,         /* floats past each of V's and M's 16 matrices: 64 bytes more than
                                       a multiple of 4 KB apart, the transforms' 16 streams do not all
                                       fall in one set of the L1 cache (they did: l1 4.3 -> 2.3 ms) */
    MPS_WINOGRAD_U_L2 = 512 << 10,  /* U up to this size stays in L2 from one task to the next */
    MPS_WINOGRAD_V_BYTES = 1 << 20, /* V of one task, where U does not (mps_winograd_split_of) */
};

/* Geometry of one Winograd convolution: images n, channels c -> m, input
   h x w, output oh x ow in th x tw tiles of 2x2, begin pads pt, pl. */
struct mps_winograd {
    int64_t n, c, m, h, w, oh, ow, th, tw, tiles, pt, pl;
};

static struct mps_winograd mps_winograd_of(const struct mps_shape *x, const struct mps_shape *y,
                                           const struct mps_node *node)
{
    struct mps_winograd q = {.n = x->dim[0],
                             .c = x->dim[1],
                             .m = y->dim[1],
                             .h = x->dim[2],
                             .w = x->dim[3],
                             .oh = y->dim[2],
                             .ow = y->dim[3],
                             .pt = node->p.conv.win.pad[0],
                             .pl = node->p.conv.win.pad[1]};
    q.th = (q.oh + 1) / 2;
    q.tw = (q.ow + 1) / 2;
    q.tiles = q.th * q.tw;
    return q;
}

bool mps_winograd_cpu_applies(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk)
{
    if (!mps_winograd_shape(g, n))
        return false;
    if (!uk || uk->nr < 32) /* every such layer measured gains on avx2 (1.3-2x), 7x7 planes included */
        return true;
    /* avx512's direct convolution runs near its peak, so Winograd takes a
       layer from 16 input and 32 output channels with 2 blocks of tiles or
       more, at least 3/4 full (Zen 4, 2 threads, against the direct path:
       resnet18's 14x14 256-channel layers at batch 1 0.69-0.76, the model
       0.94; squeezenet1_1's 13x13 layers 0.83-0.92; mnist_cnn at batch 8
       0.86, fashion_cnn at batch 1 0.89). 7x7 planes at batch 1 (one block,
       half full) stay direct: resnet18's 512-channel layers 1.1-1.35 with
       Winograd. A Conv whose one reader is a MaxPool stays direct too, which
       pools its rows as it makes them (mps_cpu_conv_pool; fashion_cnn at
       batch 8 1.14 with Winograd and the pool apart), unless the pool is 2x2
       stride 2, which Winograd's output transform computes, a tile a window
       (fashion_cnn at batch 8 0.85 of the direct path with its pool). */
    const struct mps_shape *ys = &g->values[n->out[0]].shape, *ws = &g->values[n->in[1]].shape;
    int64_t tiles = ys->dim[0] * ((ys->dim[2] + 1) / 2) * ((ys->dim[3] + 1) / 2);
    int64_t blocks = (tiles + MPS_WINOGRAD_NT - 1) / MPS_WINOGRAD_NT;
    int only = -1;
    struct mps_maxpool_geom pool;
    if (mps_graph_uses(g, n->out[0], &only) == 1 && only >= 0 && g->nodes[only].op == MPS_OP_MAX_POOL &&
        mps_cpu_maxpool_plane(g, &g->nodes[only], uk, &pool) && !mps_winograd_pools(g, n, &pool))
        return false;
    return ws->dim[1] >= 16 && ws->dim[0] >= 32 && blocks >= 2 && 4 * tiles >= 3 * blocks * MPS_WINOGRAD_NT;
}

bool mps_winograd_pools(const struct mps_graph *g, const struct mps_node *n, const struct mps_maxpool_geom *pg)
{
    const struct mps_shape *ys = &g->values[n->out[0]].shape;
    return pg->kh == 2 && pg->kw == 2 && pg->sh == 2 && pg->sw == 2 && pg->pt == 0 && pg->pl == 0 &&
           pg->out_h == ys->dim[2] / 2 && pg->out_w == ys->dim[3] / 2;
}

/* U[k] = (G g G^T)[k] for each 3x3 kernel g = W[m][c], as 16 [m x c]
   matrices, each packed as the A operand of uk's micro-kernels. */
size_t mps_winograd_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk, void *dst)
{
    struct mps_winograd q = mps_winograd_of(&g->values[n->in[0]].shape, &g->values[n->out[0]].shape, n);
    size_t per = mps_pgemm_packed_bytes(uk, q.m, q.c, true);
    if (dst) {
        memset(dst, 0, 16 * per); /* the panels' padding rows */
        mps_winograd_weights(g, n, uk->mr, (int64_t)(per / sizeof(float)), dst);
    }
    return 16 * per;
}

/* The run, fused: each task takes a block of MPS_WINOGRAD_NT tiles (2x2
   output blocks, counted over the images) and a part of the output
   channels, and does the three steps on it while its data sit in L2: the
   input transform of the block for every input channel, read from the
   input itself, the pads as zeros (V: 16 matrices of channels x tiles,
   laid out as the micro-kernels' packed B), the 16
   products M[k] = U[k] V[k] for its output channels, then the output
   transform with bias and activation. The transforms are the family's
   (ukernel_wino.h). Fused, because three passes over every tile go
   through megabytes of scratch and lose to the direct convolution on
   avx512. A task of a part of the channels transforms its block itself, as
   the other parts' tasks do: that repeats 1/(2 x part) of the products'
   work, cheaper than another job. The input is read in place, pads as
   zeros (mps_winograd_input): a padded copy would be a second hand-off
   between the threads at batch 1 and a copy as large as the input. */

struct mps_winograd_run {
    const struct mps_winograd *q;
    const struct mps_ukernels *uk;
    struct mps_pool *pool;
    const float *x, *u, *bias;       /* x: the input; u: U[k] packed as A, per floats apart */
    float *y;                        /* the output */
    int64_t y_image;                 /* floats from an image's output to the next's (a Concat's part: more) */
    const float *res;                /* its residual (laid out as a plain output: y_image apart or not; added
                                        after the transform, then act), or NULL */
    struct mps_wino_plane plane;     /* an input plane as the tiles read it */
    int64_t per;                     /* floats of one packed U[k] */
    int64_t nt, groups, mstep;       /* a task: nt tiles (a group of blocks) x mstep output channels (whole panels) */
    int64_t tail, tstep, threads;    /* mps_winograd_split's tail */
    float *scratch;                  /* per thread: V (16 x c x nt) then M (16 x mstep x nt) */
    struct mps_tile_epi epi, none;   /* the activation, where the tile's clamp and slope make it; nothing */
    const struct mps_fused_act *act; /* the others, applied after, or NULL */
    const struct mps_fused_act *full; /* the whole activation (after a residual, at an odd width's edge) */
    float *pooled;                    /* a fused MaxPool's output, or NULL */
};

/* Floats of one thread's V and M for tasks of nt tiles x mstep output channels. */
static int64_t mps_winograd_thread_floats(const struct mps_winograd *q, int64_t nt, int64_t mstep)
{
    return 16 * (nt * (q->c + mstep) + 2 * MPS_WINOGRAD_SKEW);
}

/* Floats from one of V's matrices to the next, and from one of M's to the next. */
static int64_t mps_winograd_vk(const struct mps_winograd *q, int64_t nt)
{
    return q->c * nt + MPS_WINOGRAD_SKEW;
}
static int64_t mps_winograd_mk(int64_t nt, int64_t mstep)
{
    return mstep * nt + MPS_WINOGRAD_SKEW;
}

/* How the images split into tasks: groups of blocks of NT tiles
   times parts of the output channels, about two tasks a thread. Each
   group's tasks read all of U between them: where U is small it stays in
   L2 and a group is one block; where it is not (256 channels: 4 MB), as
   many blocks as keep V within MPS_WINOGRAD_V_BYTES, so that U is read
   from memory fewer times (resnet18's 14x14 layers in the model: ...) --
   but no fewer groups than two a thread where the blocks allow: fewer
   groups split the output channels into parts, whose tasks each transform
   their group's input again (resnet18's 128-channel 28x28 layers at batch
   1, 2 threads: 7 blocks in 2 groups x 2 parts took 0.55, 0.50 and 0.49
   ms, in 7 groups 0.42, 0.41 and 0.42). Where the groups do not divide
   between the threads, the last few (tail) are each split into a part of
   the channels a thread, and each thread takes as many whole groups and
   one part of each of those: mnist_cnn's 13 blocks at batch 8 go 6.5 to
   each of two threads, not 7 and 6 (the tail's input transformed twice;
   against onnxruntime, 2 threads, Zen 4: mnist_cnn batch 8 0.729 instead of
   0.745, fashion_cnn batch 8 0.687 instead of 0.720). */
struct mps_winograd_split {
    int64_t group, groups, parts, mstep; /* blocks a group, groups; parts of mstep output channels */
    int64_t tail, tstep;                 /* groups split a part a thread, of tstep output channels (or 0) */
};

static struct mps_winograd_split mps_winograd_split_of(const struct mps_winograd *q, int64_t mr, int64_t threads)
{
    struct mps_winograd_split sp = {.group = 1};
    int64_t blocks = (q->n * q->tiles + MPS_WINOGRAD_NT - 1) / MPS_WINOGRAD_NT, m_panels = (q->m + mr - 1) / mr;
    int64_t want = 2 * threads;
    if (16 * q->m * q->c * (int64_t)sizeof(float) > MPS_WINOGRAD_U_L2) {
        sp.group = MPS_WINOGRAD_V_BYTES / (16 * q->c * MPS_WINOGRAD_NT * (int64_t)sizeof(float));
        sp.group = sp.group < blocks / want ? sp.group : blocks / want;
        sp.group = sp.group < 1 ? 1 : sp.group < blocks ? sp.group : blocks;
    }
    sp.groups = (blocks + sp.group - 1) / sp.group;
    sp.group = (blocks + sp.groups - 1) / sp.groups; /* groups of equal size */
    sp.parts = sp.groups >= want ? 1 : (want + sp.groups - 1) / sp.groups;
    sp.parts = sp.parts < m_panels ? sp.parts : m_panels;
    sp.mstep = (m_panels + sp.parts - 1) / sp.parts * mr;
    sp.parts = (m_panels * mr + sp.mstep - 1) / sp.mstep;
    if (sp.parts == 1 && threads > 1 && m_panels >= threads && sp.groups % threads) {
        sp.tail = sp.groups % threads;
        sp.tstep = (m_panels + threads - 1) / threads * mr;
    }
    return sp;
}

/* Tasks of a split: each group's parts, or (a tail) each thread's whole groups and its parts of the tail's. */
static int64_t mps_winograd_task_count(const struct mps_winograd_split *sp, int64_t threads)
{
    return sp->tail ? sp->groups - sp->tail + sp->tail * threads : sp->groups * sp->parts;
}

size_t mps_winograd_scratch(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                            int threads)
{
    struct mps_winograd q = mps_winograd_of(&g->values[n->in[0]].shape, &g->values[n->out[0]].shape, n);
    struct mps_winograd_split sp = mps_winograd_split_of(&q, uk->mr, threads > 0 ? threads : 1);
    int64_t per_thread = mps_winograd_thread_floats(&q, sp.group * MPS_WINOGRAD_NT, sp.mstep);
    return sizeof(float) * (size_t)(per_thread * (threads > 0 ? threads : 1)) + 64;
}

/* A run of a block's tiles along one row of tiles of one image: count
   tiles from (image b, tile row ty, column tx0), the block's
   tiles at .. at + count. */
struct mps_winograd_span {
    int64_t b, ty, tx0, count, at;
};

/* The runs of n <= MPS_WINOGRAD_NT tiles from tile j0, to s; their number.
   Worked out once for every output channel: per channel, their three
   divisions a run cost mnist_cnn at batch 8 3% (one thread, Zen 4). */
static int mps_winograd_spans(const struct mps_winograd *q, int64_t j0, int64_t n, struct mps_winograd_span *s)
{
    int count = 0;
    for (int64_t at = 0; at < n; at += s[count++].count) {
        int64_t j = j0 + at, tx0 = j % q->tw;
        s[count] = (struct mps_winograd_span){.b = j / q->tiles, .ty = j % q->tiles / q->tw, .tx0 = tx0, .at = at};
        s[count].count = q->tw - tx0 < n - at ? q->tw - tx0 : n - at;
    }
    return count;
}

/* V for a task's n tiles from j0, every input channel: V[k] is the packed
   B of the micro-kernels, channel c of the task's tile t at panel t / nr,
   offset c nr + t % nr; lanes past the tiles are zeros (the products read
   them). Each image's part of each panel is one call of the family's
   transform a channel, which reads the input plane in place (the pads as
   zeros): on 14x14 planes avx512's takes two rows of 7 tiles a step.
   Against a zero-padded copy first and a call a row of tiles (7 of 16
   lanes filled there), fashion_cnn's 32 -> 64 layer at batch 8 (pooled)
   0.84 at one thread, 0.79 at two (Zen 4). */
static void mps_winograd_input(const struct mps_winograd_run *r, int64_t j0, int64_t n, float *v)
{
    const struct mps_winograd *q = r->q;
    int64_t nr = r->uk->nr, vk = mps_winograd_vk(q, r->nt), plane = q->h * q->w;
    for (int64_t t = 0; t < n;) {
        int64_t b = (j0 + t) / q->tiles, j = (j0 + t) % q->tiles, len = q->tiles - j;
        len = len < n - t ? len : n - t;
        len = len < nr - t % nr ? len : nr - t % nr;
        /* the lanes past a call's tiles: this channel's next (a later call), else the next
           channel's (this call's next, where the row began with it) or the skew after V */
        int64_t end = t % nr + len, room = end < nr ? nr - end : t % nr == 0 ? 7 : 0;
        for (int64_t c = 0; c < q->c; c++)
            r->uk->wino_in(r->x + (b * q->c + c) * plane, &r->plane, j, len, room < 7 ? room : 7,
                           v + t / nr * q->c * nr + c * nr + t % nr, vk);
        t += len;
    }
    if (n % nr) /* the last panel's lanes past the tiles */
        for (int k = 0; k < 16; k++)
            for (int64_t c = 0; c < q->c; c++)
                memset(v + k * vk + n / nr * q->c * nr + c * nr + n % nr, 0, sizeof(float) * (size_t)(nr - n % nr));
}

/* Y's 2x2 blocks for output channels [m0, m1) of a task's tiles, from M
   (16 matrices of mstep rows x nt tiles): for each channel the transform
   over MPS_WINOGRAD_NT tiles at a time, into two rows on the stack, then
   each run's columns (a run: the tiles along one row of tiles) copied out,
   with the residual and the activation the transform did not apply. The
   transform once a run, straight into Y, had loops of a run's length: on
   14x14 planes (runs of 7) scalar code, a third of the layer's time
   (fashion_cnn's 32 -> 64 layer at batch 8: the transform 126 -> 16 us);
   six 56x56 64-channel layers 0.957 of that, six 28x28 128-channel 0.938.
   With a fused MaxPool (mps_cpu_args.pool_out), its outputs instead: each
   tile's 2x2 block is one window, which the transform pools (wino_pool),
   so the Conv's own output is never made; the tiles of an odd side's last
   row or column, in no window, are dropped. */
static void mps_winograd_output(const struct mps_winograd_run *r, int64_t j0, int64_t n, int64_t m0, int64_t m1,
                                const float *prod)
{
    const struct mps_winograd *q = r->q;
    int64_t ph = q->oh / 2, pw = q->ow / 2, mk = mps_winograd_mk(r->nt, r->mstep); /* ph x pw: the pool's output */
    float rows[2][2 * MPS_WINOGRAD_NT];
    struct mps_winograd_span spans[MPS_WINOGRAD_NT];
    for (int64_t p = 0; p < n; p += MPS_WINOGRAD_NT) {
        int64_t count = n - p < MPS_WINOGRAD_NT ? n - p : MPS_WINOGRAD_NT;
        int runs = mps_winograd_spans(q, j0 + p, count, spans);
        for (int64_t m = m0; m < m1; m++) {
            const float *mm = prod + (m - m0) * r->nt + p;
            float bias = r->bias ? r->bias[m] : 0.0f;
            if (r->pooled) {
                r->uk->wino_pool(mm, mk, count, bias, rows[0], &r->epi);
                for (int i = 0; i < runs; i++) {
                    const struct mps_winograd_span *s = &spans[i];
                    if (s->ty < ph && s->tx0 < pw)
                        memcpy(r->pooled + ((s->b * q->m + m) * ph + s->ty) * pw + s->tx0, rows[0] + s->at,
                               sizeof(float) * (size_t)(s->count < pw - s->tx0 ? s->count : pw - s->tx0));
                }
                continue;
            }
            r->uk->wino_out(mm, mk, count, bias, rows[0], rows[1], r->res ? &r->none : &r->epi);
            for (int i = 0; i < runs; i++) {
                const struct mps_winograd_span *s = &spans[i];
                int64_t at = (m * q->oh + 2 * s->ty) * q->ow + 2 * s->tx0; /* in the image's output */
                float *y0 = r->y + s->b * r->y_image + at;
                int64_t cols = 2 * s->count < q->ow - 2 * s->tx0 ? 2 * s->count : q->ow - 2 * s->tx0;
                for (int a = 0; a < 1 + (2 * s->ty + 1 < q->oh); a++) { /* an odd height's last tiles: one row */
                    float *ya = y0 + a * q->ow;
                    memcpy(ya, rows[a] + 2 * s->at, sizeof(float) * (size_t)cols);
                    if (r->res) /* laid out as a plain output */
                        mps_cpu_add_act(r->full, ya, r->res + s->b * q->m * q->oh * q->ow + at + a * q->ow, cols);
                    else if (r->act)
                        mps_cpu_act_inplace(r->act, ya, cols);
                }
            }
        }
    }
}

/* Task t's group of blocks (its first tile, to *j0) and output channels [*m0, *m1). */
static void mps_winograd_task(const struct mps_winograd_run *r, int64_t t, int64_t *j0, int64_t *m0, int64_t *m1)
{
    int64_t g = t % r->groups, step = r->mstep;
    *m0 = t / r->groups * r->mstep;
    if (r->tail) { /* thread s's share: its whole groups, then its part of each of the tail's */
        int64_t whole = (r->groups - r->tail) / r->threads, s = t / (whole + r->tail), i = t % (whole + r->tail);
        g = i < whole ? s * whole + i : r->groups - r->tail + (i - whole);
        *m0 = i < whole ? 0 : s * r->tstep;
        step = i < whole ? r->mstep : r->tstep;
    }
    *j0 = g * r->nt;
    *m1 = *m0 + step < r->q->m ? *m0 + step : r->q->m;
}

static void mps_winograd_tasks(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_winograd_run *r = ctx;
    const struct mps_winograd *q = r->q;
    const struct mps_ukernels *uk = r->uk;
    struct mps_tile_epi none = mps_tile_epi_none();
    int64_t vk = mps_winograd_vk(q, r->nt), mk = mps_winograd_mk(r->nt, r->mstep);
    float *v = r->scratch + mps_winograd_thread_floats(q, r->nt, r->mstep) * mps_pool_self(r->pool);
    float *prod = v + 16 * vk;
    for (int64_t task = begin; task < end; task++) {
        int64_t j0, m0, m1, total = q->n * q->tiles;
        mps_winograd_task(r, task, &j0, &m0, &m1);
        int64_t n = total - j0 < r->nt ? total - j0 : r->nt;
        if (m0 >= m1 || n <= 0)
            continue;
        mps_winograd_input(r, j0, n, v);
        /* M[k] = U[k] V[k]: each panel of U[k]'s rows (in L1) against the task's panels of V[k] (in L2) */
        for (int k = 0; k < 16; k++)
            for (int64_t i = m0; i < m1; i += uk->mr)
                for (int64_t p = 0; p < n; p += uk->nr)
                    uk->gemm(q->c, r->u + k * r->per + i * q->c, v + k * vk + p * q->c,
                             prod + k * mk + (i - m0) * r->nt + p, r->nt, (int)(m1 - i < uk->mr ? m1 - i : uk->mr),
                             (int)(n - p < uk->nr ? n - p : uk->nr), MPS_TILE_FINISH, &none);
        mps_winograd_output(r, j0, n, m0, m1, prod);
    }
}

void mps_winograd_conv(const struct mps_cpu_args *a, const void *packed)
{
    struct mps_winograd q = mps_winograd_of(&a->in[0].shape, &a->out[0].shape, a->node);
    const struct mps_ukernels *uk = a->uk;
    struct mps_winograd_split sp = mps_winograd_split_of(&q, uk->mr, mps_pool_threads(a->pool));
    struct mps_winograd_run r = {.q = &q,
                                 .uk = uk,
                                 .pool = a->pool,
                                 .x = a->in[0].data,
                                 .u = packed,
                                 .bias = a->in[2].data,
                                 .y = a->out[0].data,
                                 .y_image = a->out_stride ? a->out_stride : q.m * q.oh * q.ow,
                                 .res = a->res,
                                 .plane = {.h = q.h, .w = q.w, .pt = q.pt, .pl = q.pl, .tw = q.tw},
                                 .per = (int64_t)(mps_pgemm_packed_bytes(uk, q.m, q.c, true) / sizeof(float)),
                                 .nt = sp.group * MPS_WINOGRAD_NT,
                                 .groups = sp.groups,
                                 .mstep = sp.mstep,
                                 .tail = sp.tail,
                                 .tstep = sp.tstep,
                                 .threads = mps_pool_threads(a->pool),
                                 .scratch = (float *)(((uintptr_t)a->scratch + 63) & ~(uintptr_t)63),
                                 .epi = mps_tile_epi_none(),
                                 .pooled = a->pool_out ? a->pool_out->data : NULL};
    r.full = mps_cpu_conv_act(a);
    r.none = mps_tile_epi_none();
    r.act = mps_pgemm_act_epi(r.full, &r.epi) ? NULL : r.full;
    mps_pool_for(a->pool, mps_winograd_task_count(&sp, r.threads), 2 * 16 * r.nt * q.c * r.mstep, mps_winograd_tasks,
                 &r);
}
