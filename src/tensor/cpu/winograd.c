/* winograd.c: 3x3 stride-1 convolutions as Winograd F(2x2, 3x3).

   Each 2x2 block of outputs comes from a 4x4 input tile: the tile and the
   kernel are transformed (V = B^T d B, U = G g G^T, U at compile time), the
   16 positions of the 4x4 transform each become one GEMM over channels
   (M[k] = U[k] V[k]: [out channels x in channels] x [in channels x tiles]),
   and A^T M A gives the 2x2 outputs: 16 multiplies per 4 outputs instead of
   36, the products on the micro-kernels (each U[k] packed at compile as A).
   Used when the weights are constant and there are enough channels for the
   GEMMs to pay (mps_winograd_applies). */
#include <string.h>

#include "kernels.h"
#include "pgemm.h"

/* Geometry of one Winograd convolution: images n, channels c -> m, input
   h x w, output oh x ow in th x tw tiles of 2x2, begin pads pt, pl. */
/* The widest (padded) row the transforms handle in their stack buffers. */
enum { MPS_WINOGRAD_ROW = 1024 };

struct mps_winograd {
    int64_t n, c, m, h, w, oh, ow, th, tw, tiles, pt, pl;
    int64_t group; /* images whose tiles share one set of GEMMs */
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
    /* small images side by side, so that the GEMMs see at least ~256 tiles */
    q.group = (256 + q.tiles - 1) / q.tiles;
    q.group = q.group < q.n ? q.group : q.n;
    return q;
}

bool mps_winograd_applies(const struct mps_graph *g, const struct mps_node *n)
{
    if (n->op != MPS_OP_CONV || g->values[n->in[0]].shape.ndim != 4 || !g->values[n->in[1]].data)
        return false;
    const struct mps_conv_params *p = &n->p.conv;
    const struct mps_shape *ws = &g->values[n->in[1]].shape;
    for (int j = 0; j < 2; j++)
        if (p->win.kernel[j] != 3 || p->win.stride[j] != 1 || p->win.dilation[j] != 1)
            return false;
    /* measured on resnet18 (2 cores): a gain from 14x14 outputs up (49 tiles; 1.8 -> 1.3 ms
       on its 256-channel layer), a loss at 7x7 (16 tiles: 2.1 -> 2.4 ms); and below 16
       channels the 16 small GEMMs cost more than im2col's one (the cpu asks for more:
       conv.c) */
    const struct mps_shape *ys = &g->values[n->out[0]].shape;
    int64_t tiles = (ys->dim[2] + 1) / 2 * ((ys->dim[3] + 1) / 2);
    return p->group == 1 && ws->dim[0] >= 16 && ws->dim[1] >= 16 && tiles >= 32 && ys->dim[3] + 4 <= MPS_WINOGRAD_ROW;
}

/* V (16 x channels x tiles, the tiles rounded up to the widest panel of any
   kernel family, 32) then the products (16 x out channels x tiles). */
size_t mps_winograd_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    struct mps_winograd q = mps_winograd_of(&g->values[n->in[0]].shape, &g->values[n->out[0]].shape, n);
    int64_t span = q.tiles * q.group;
    return (size_t)(16 * (q.c * ((span + 31) / 32 * 32) + q.m * span)) * sizeof(float);
}

/* U[k] = (G g G^T)[k] for each 3x3 kernel g = W[m][c], as 16 [m x c]
   matrices, each packed as the A operand of uk's micro-kernels; uk NULL:
   plain, U[k][m][c] (the CUDA backend's layout: packed with 1-row panels). */
size_t mps_winograd_pack(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         void *dst)
{
    struct mps_winograd q = mps_winograd_of(&g->values[n->in[0]].shape, &g->values[n->out[0]].shape, n);
    size_t per = uk ? mps_pgemm_packed_bytes(uk, q.m, q.c, true) : sizeof(float) * (size_t)(q.m * q.c);
    size_t bytes = 16 * per;
    if (!dst)
        return bytes;
    memset(dst, 0, bytes); /* the panels' padding rows */
    const float *wt = g->values[n->in[1]].data;
    float *u = dst;
    int64_t mr = uk ? uk->mr : 1, stride = (int64_t)(per / sizeof(float));
    for (int64_t m = 0; m < q.m; m++)
        for (int64_t c = 0; c < q.c; c++) {
            const float *k = wt + (m * q.c + c) * 9;
            float gg[4][3], out[4][4];
            for (int j = 0; j < 3; j++) {
                gg[0][j] = k[j];
                gg[1][j] = 0.5f * (k[j] + k[3 + j] + k[6 + j]);
                gg[2][j] = 0.5f * (k[j] - k[3 + j] + k[6 + j]);
                gg[3][j] = k[6 + j];
            }
            for (int i = 0; i < 4; i++) {
                out[i][0] = gg[i][0];
                out[i][1] = 0.5f * (gg[i][0] + gg[i][1] + gg[i][2]);
                out[i][2] = 0.5f * (gg[i][0] - gg[i][1] + gg[i][2]);
                out[i][3] = gg[i][2];
            }
            /* element (m, c) of matrix i: panel m / mr, offset c * mr + m % mr */
            for (int i = 0; i < 16; i++)
                u[i * stride + m / mr * mr * q.c + c * mr + m % mr] = out[i / 4][i % 4];
        }
    return bytes;
}

struct mps_winograd_job {
    const struct mps_winograd *q;
    const float *x, *bias;
    float *v, *prod, *y;
    int64_t span;    /* tiles of the images in one GEMM: B's columns, the row length of prod */
    int64_t nr;      /* the micro-kernels' panel width: v is written packed as their B */
    int64_t vstride; /* floats of one V[k]: span rounded up to nr, times the channels */
    const struct mps_fused_act *act;
};

/* Copies n floats of src to the packed V, tiles j0 .. j0 + n of one channel:
   runs of up to nr, one panel (panel floats apart) each. */
static void mps_winograd_put(float *v, int64_t j0, int64_t n, int64_t nr, int64_t panel, const float *src)
{
    for (int64_t done = 0; done < n;) {
        int64_t j = j0 + done, off = j % nr, len = nr - off < n - done ? nr - off : n - done;
        memcpy(v + j / nr * panel + off, src + done, sizeof(float) * (size_t)len);
        done += len;
    }
}

/* V[k] = (B^T d B)[k] for each 4x4 input tile d of items [begin, end) (image *
   channels + channel of the group), a row of tiles at a time: B^T down the
   four padded rows the tiles read, each result split into its even and odd
   columns, then B across them, the 16 values of every tile as 16 runs (loops
   over the tiles that the compiler vectorizes). Each V[k] is written as the
   packed B of the micro-kernels (channel kk of tile j at panel j / nr, offset
   kk * nr + j % nr); the last image's items zero their channel's padding. */
static void mps_winograd_input(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_winograd_job *jb = ctx;
    const struct mps_winograd *q = jb->q;
    int64_t nr = jb->nr, panel = q->c * nr, wp = 2 * q->tw + 2; /* padded width the tiles read */
    int64_t half = q->tw + 1;                                    /* even (and odd) columns of a padded row */
    float in[4][MPS_WINOGRAD_ROW], ev[4][MPS_WINOGRAD_ROW / 2 + 1], od[4][MPS_WINOGRAD_ROW / 2 + 1];
    float out[16][MPS_WINOGRAD_ROW / 2];
    int64_t inside = q->w < wp - q->pl ? q->w : wp - q->pl; /* the input columns the tiles read */
    for (int64_t item = begin; item < end; item++) {
        int64_t b = item / q->c, c = item % q->c;
        const float *xc = jb->x + item * q->h * q->w;
        float *vc = jb->v + c * nr;
        for (int64_t ty = 0; ty < q->th; ty++) {
            for (int i = 0; i < 4; i++) {
                int64_t r = 2 * ty - q->pt + i;
                if (r < 0 || r >= q->h) {
                    memset(in[i], 0, sizeof(float) * (size_t)wp);
                    continue;
                }
                memset(in[i], 0, sizeof(float) * (size_t)q->pl);
                memcpy(in[i] + q->pl, xc + r * q->w, sizeof(float) * (size_t)inside);
                memset(in[i] + q->pl + inside, 0, sizeof(float) * (size_t)(wp - q->pl - inside));
            }
            for (int64_t j = 0; j < half; j++) {
                float e0 = in[0][2 * j], e1 = in[1][2 * j], e2 = in[2][2 * j], e3 = in[3][2 * j];
                float o0 = in[0][2 * j + 1], o1 = in[1][2 * j + 1], o2 = in[2][2 * j + 1], o3 = in[3][2 * j + 1];
                ev[0][j] = e0 - e2, ev[1][j] = e1 + e2, ev[2][j] = e2 - e1, ev[3][j] = e1 - e3;
                od[0][j] = o0 - o2, od[1][j] = o1 + o2, od[2][j] = o2 - o1, od[3][j] = o1 - o3;
            }
            for (int i = 0; i < 4; i++)
                for (int64_t tx = 0; tx < q->tw; tx++) {
                    out[4 * i][tx] = ev[i][tx] - ev[i][tx + 1];
                    out[4 * i + 1][tx] = od[i][tx] + ev[i][tx + 1];
                    out[4 * i + 2][tx] = ev[i][tx + 1] - od[i][tx];
                    out[4 * i + 3][tx] = od[i][tx] - od[i][tx + 1];
                }
            for (int k = 0; k < 16; k++)
                mps_winograd_put(vc + k * jb->vstride, b * q->tiles + ty * q->tw, q->tw, nr, panel, out[k]);
        }
        if (b == jb->span / q->tiles - 1 && jb->span % nr) /* the last panel's columns past the tiles */
            for (int k = 0; k < 16; k++)
                memset(vc + k * jb->vstride + jb->span / nr * panel + jb->span % nr, 0,
                       sizeof(float) * (size_t)(nr - jb->span % nr));
    }
}

/* Y[image][m] 2x2 blocks = act(A^T M[.][m][image, tile] A + bias) for items
   [begin, end) (image * channels + channel of the group), a row of tiles at
   a time (vectorized over the tiles). */
static void mps_winograd_output(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_winograd_job *jb = ctx;
    const struct mps_winograd *q = jb->q;
    int64_t stride = q->m * jb->span;
    float r[2][4][MPS_WINOGRAD_ROW / 2], out[2][MPS_WINOGRAD_ROW];
    for (int64_t item = begin; item < end; item++) {
        int64_t b = item / q->m, m = item % q->m;
        float *ym = jb->y + item * q->oh * q->ow, bias = jb->bias ? jb->bias[m] : 0.0f;
        for (int64_t ty = 0; ty < q->th; ty++) {
            const float *at = jb->prod + m * jb->span + b * q->tiles + ty * q->tw;
            for (int j = 0; j < 4; j++) {
                const float *s0 = at + j * stride, *s1 = s0 + 4 * stride, *s2 = s1 + 4 * stride, *s3 = s2 + 4 * stride;
                for (int64_t tx = 0; tx < q->tw; tx++) {
                    r[0][j][tx] = s0[tx] + s1[tx] + s2[tx];
                    r[1][j][tx] = s1[tx] - s2[tx] - s3[tx];
                }
            }
            for (int a = 0; a < 2; a++) {
                for (int64_t tx = 0; tx < q->tw; tx++) {
                    out[a][2 * tx] = r[a][0][tx] + r[a][1][tx] + r[a][2][tx] + bias;
                    out[a][2 * tx + 1] = r[a][1][tx] - r[a][2][tx] - r[a][3][tx] + bias;
                }
                mps_cpu_act_inplace(jb->act, out[a], q->ow);
                if (2 * ty + a < q->oh)
                    memcpy(ym + (2 * ty + a) * q->ow, out[a], sizeof(float) * (size_t)q->ow);
            }
        }
    }
}

void mps_winograd_conv(const struct mps_cpu_args *a, const void *packed)
{
    struct mps_winograd q = mps_winograd_of(&a->in[0].shape, &a->out[0].shape, a->node);
    const float *u = packed;
    size_t per = mps_pgemm_packed_bytes(a->uk, q.m, q.c, true) / sizeof(float);
    int64_t nr = a->uk->nr;
    for (int64_t b = 0; b < q.n; b += q.group) {
        int64_t nb = q.n - b < q.group ? q.n - b : q.group, span = nb * q.tiles;
        int64_t vstride = (span + nr - 1) / nr * nr * q.c;
        struct mps_winograd_job jb = {.q = &q,
                                      .x = (const float *)a->in[0].data + b * q.c * q.h * q.w,
                                      .bias = a->in[2].data,
                                      .v = a->scratch,
                                      .prod = (float *)a->scratch + 16 * vstride,
                                      .y = (float *)a->out[0].data + b * q.m * q.oh * q.ow,
                                      .span = span,
                                      .nr = nr,
                                      .vstride = vstride,
                                      .act = &a->node->p.conv.act};
        mps_pool_for(a->pool, nb * q.c, 16 * q.tiles * 4, mps_winograd_input, &jb);
        /* M[k] = U[k] V[k], the 16 products in one job, both operands packed */
        struct mps_pgemm_item items[16];
        for (int k = 0; k < 16; k++)
            items[k] = (struct mps_pgemm_item){.a = {.packed = u + k * per},
                                               .b = {.packed = jb.v + k * vstride},
                                               .c = jb.prod + k * q.m * span};
        mps_pgemm_batch(a->pool, a->uk, 16, items, q.m, span, q.c, span, NULL, NULL, a->gemm_scratch, NULL);
        mps_pool_for(a->pool, nb * q.m, 16 * q.tiles * 2, mps_winograd_output, &jb);
    }
}
