/* winograd_weights.c: Winograd F(2x2, 3x3)'s shape rule and kernel
   transform (winograd_weights.h). */
#include "winograd_weights.h"

bool mps_winograd_shape(const struct mps_graph *g, const struct mps_node *n)
{
    if (n->op != MPS_OP_CONV || g->values[n->in[0]].shape.ndim != 4 || !g->values[n->in[1]].data)
        return false;
    const struct mps_conv_params *p = &n->p.conv;
    const struct mps_shape *ws = &g->values[n->in[1]].shape;
    for (int j = 0; j < 2; j++)
        if (p->win.kernel[j] != 3 || p->win.stride[j] != 1 || p->win.dilation[j] != 1)
            return false;
    return p->group == 1 && ws->dim[0] >= 16 && ws->dim[1] >= 16;
}

void mps_winograd_weights(const struct mps_graph *g, const struct mps_node *n, int64_t mr, int64_t stride, float *u)
{
    const struct mps_shape *ws = &g->values[n->in[1]].shape;
    int64_t cm = ws->dim[0], cc = ws->dim[1];
    const float *wt = g->values[n->in[1]].data;
    for (int64_t m = 0; m < cm; m++)
        for (int64_t c = 0; c < cc; c++) {
            const float *k = wt + (m * cc + c) * 9;
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
                u[i * stride + m / mr * mr * cc + c * mr + m % mr] = out[i / 4][i % 4];
        }
}
