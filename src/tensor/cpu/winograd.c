/* winograd.c: 3x3 stride-1 convolutions as Winograd F(2x2, 3x3).

   Each 2x2 block of outputs comes from a 4x4 input tile: the tile and the
   kernel are transformed (V = B^T d B, U = G g G^T, U at compile time), the
   16 positions of the 4x4 transform each become one GEMM over channels
   (M[k] = U[k] V[k]: [out channels x in channels] x [in channels x tiles]),
   and A^T M A gives the 2x2 outputs: 16 multiplies per 4 outputs instead of
   36, the products through sgemm. Used when the weights are constant and
   there are enough channels for the GEMMs to pay (mps_winograd_applies). */
#include <string.h>

#include "blas.h"
#include "kernels.h"

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
       channels the 16 small GEMMs cost more than im2col's one */
    const struct mps_shape *ys = &g->values[n->out[0]].shape;
    int64_t tiles = (ys->dim[2] + 1) / 2 * ((ys->dim[3] + 1) / 2);
    return p->group == 1 && ws->dim[0] >= 16 && ws->dim[1] >= 16 && tiles >= 32 && ys->dim[3] + 4 <= MPS_WINOGRAD_ROW;
}

size_t mps_winograd_scratch(const struct mps_graph *g, const struct mps_node *n)
{
    struct mps_winograd q = mps_winograd_of(&g->values[n->in[0]].shape, &g->values[n->out[0]].shape, n);
    return (size_t)(16 * (q.c + q.m) * q.tiles * q.group) * sizeof(float);
}

/* U[k][m][c] = (G g G^T)[k] for each 3x3 kernel g = W[m][c]. */
size_t mps_winograd_pack(const struct mps_graph *g, const struct mps_node *n, void *dst)
{
    struct mps_winograd q = mps_winograd_of(&g->values[n->in[0]].shape, &g->values[n->out[0]].shape, n);
    size_t bytes = (size_t)(16 * q.m * q.c) * sizeof(float);
    if (!dst)
        return bytes;
    const float *wt = g->values[n->in[1]].data;
    float *u = dst;
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
            for (int i = 0; i < 16; i++)
                u[(i * q.m + m) * q.c + c] = out[i / 4][i % 4];
        }
    return bytes;
}

struct mps_winograd_job {
    const struct mps_winograd *q;
    const float *x, *bias;
    float *v, *prod, *y;
    int64_t span; /* tiles of the images in one GEMM: the row length of v and prod */
    const struct mps_fused_act *act;
};

/* V[k][c][image, tile] = (B^T d B)[k] for each 4x4 input tile d of items
   [begin, end) (image * channels + channel of the group), a row of tiles at
   a time: B^T along the rows over the whole padded width, then B along the
   columns for every tile, loops over tiles that the compiler vectorizes. */
static void mps_winograd_input(void *ctx, int64_t begin, int64_t end)
{
    const struct mps_winograd_job *jb = ctx;
    const struct mps_winograd *q = jb->q;
    int64_t stride = q->c * jb->span, wp = 2 * q->tw + 2; /* padded width the tiles read */
    float in[4][MPS_WINOGRAD_ROW], t[4][MPS_WINOGRAD_ROW];
    for (int64_t item = begin; item < end; item++) {
        int64_t b = item / q->c, c = item % q->c;
        const float *xc = jb->x + item * q->h * q->w;
        for (int64_t ty = 0; ty < q->th; ty++) {
            for (int i = 0; i < 4; i++) {
                int64_t r = 2 * ty - q->pt + i;
                for (int64_t j = 0; j < wp; j++) {
                    int64_t col = j - q->pl;
                    in[i][j] = r >= 0 && r < q->h && col >= 0 && col < q->w ? xc[r * q->w + col] : 0.0f;
                }
            }
            for (int64_t j = 0; j < wp; j++) {
                t[0][j] = in[0][j] - in[2][j];
                t[1][j] = in[1][j] + in[2][j];
                t[2][j] = in[2][j] - in[1][j];
                t[3][j] = in[1][j] - in[3][j];
            }
            float *at = jb->v + c * jb->span + b * q->tiles + ty * q->tw;
            for (int i = 0; i < 4; i++) {
                const float *ti = t[i];
                float *v0 = at + (4 * i) * stride, *v1 = v0 + stride, *v2 = v1 + stride, *v3 = v2 + stride;
                for (int64_t tx = 0; tx < q->tw; tx++) {
                    v0[tx] = ti[2 * tx] - ti[2 * tx + 2];
                    v1[tx] = ti[2 * tx + 1] + ti[2 * tx + 2];
                    v2[tx] = ti[2 * tx + 2] - ti[2 * tx + 1];
                    v3[tx] = ti[2 * tx + 1] - ti[2 * tx + 3];
                }
            }
        }
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

void mps_winograd_conv(const struct mps_cpu_args *a)
{
    struct mps_winograd q = mps_winograd_of(&a->in[0].shape, &a->out[0].shape, a->node);
    const float *u = a->packed;
    for (int64_t b = 0; b < q.n; b += q.group) {
        int64_t nb = q.n - b < q.group ? q.n - b : q.group, span = nb * q.tiles;
        struct mps_winograd_job jb = {.q = &q,
                                      .x = (const float *)a->in[0].data + b * q.c * q.h * q.w,
                                      .bias = a->in[2].data,
                                      .v = a->scratch,
                                      .prod = (float *)a->scratch + 16 * q.c * span,
                                      .y = (float *)a->out[0].data + b * q.m * q.oh * q.ow,
                                      .span = span,
                                      .act = &a->node->p.conv.act};
        mps_pool_for(a->pool, nb * q.c, 16 * q.tiles * 4, mps_winograd_input, &jb);
        for (int k = 0; k < 16; k++)
            mps_cpu_sgemm_ld(a->pool, false, false, q.m, span, q.c, 1.0f, u + k * q.m * q.c, q.c,
                             jb.v + k * q.c * span, span, 0.0f, jb.prod + k * q.m * span, span);
        mps_pool_for(a->pool, nb * q.m, 16 * q.tiles * 2, mps_winograd_output, &jb);
    }
}
