/* conv.h: what the CPU backend's convolution paths share (conv.c chooses
   the path and runs the others; conv_direct.c is the direct one,
   conv_depthwise.c the depthwise ones). Internal to the CPU backend. */
#ifndef MPS_CPU_CONV_H
#define MPS_CPU_CONV_H

#include "kernels.h"
#include "ukernels.h"

/* One convolution in 3-D terms, spatial axes (depth, height, width).
   ConvTranspose uses it the other way round: in is the col2im target's source. */
struct mps_conv_geom {
    int64_t n, c, m, g; /* images, input and output channels, groups */
    struct mps_window3 w;
    int64_t in_plane, out_plane, taps;
};

struct mps_conv_geom mps_conv_geom_of(const struct mps_node *node, const struct mps_shape *x,
                                      const struct mps_shape *y);
/* 1x1, stride 1, no padding: the input is already the GEMM's B. */
bool mps_conv_is_pointwise(const struct mps_conv_geom *q);

/* conv_direct.c: a 2-D convolution with constant weights as W times a B read
   in place by the family's conv tile (ukernels.h): from a zero-padded copy of
   the input laid out so that the columns of B are output positions one
   after another (a stride's phases apart), or, for a pointwise layer, from
   the input itself. No im2col, no packing per run; the weights are packed
   once, as for the GEMM. */
bool mps_direct_applies(const struct mps_conv_geom *q);
/* Bytes of the compile-time data (the weights packed as A, each group's, and
   the offset of each of B's rows), written to dst unless dst is NULL. */
size_t mps_direct_pack(const struct mps_conv_geom *q, const float *w, const struct mps_ukernels *uk, void *dst);
/* Scratch for the input's copies; with pool (a MaxPool it computes too,
   mps_cpu_args.pool_out), each thread's band of output rows as well. */
size_t mps_direct_scratch(const struct mps_conv_geom *q, const struct mps_maxpool_geom *pool,
                          const struct mps_ukernels *uk, int threads);
/* Runs it: y = act(W x + bias); data is what mps_direct_pack wrote. */
void mps_direct_conv(const struct mps_cpu_args *a, const struct mps_conv_geom *q, const void *data);
/* Whether QLinearConv n runs on that direct conv (qlinear.c): one input
   channel (mps_qlinear_one_plane), not 1x1, where it applies; its geometry
   to *q. */
bool mps_qlinear_fdirect(const struct mps_graph *g, const struct mps_node *n, const struct mps_ukernels *uk,
                         struct mps_conv_geom *q);

/* One Conv run: what the im2col and depthwise loops read (conv.c, conv_depthwise.c). */
struct mps_conv_job {
    const struct mps_conv_geom *q;
    const float *x; /* Conv: the group's input channels; depthwise: the whole input */
    const float *w, *bias;
    float *col, *y;
    const struct mps_fused_act *act;
    const struct mps_ukernels *uk;   /* depthwise: the family whose dw3 runs 3x3 planes */
    const struct mps_dwb_expand *ex; /* depthwise on dwb: the 1x1 Conv that makes its input, or NULL (x) */
    int64_t parts;                   /* depthwise on dwb: items a block, each a part of its output rows */
};

/* Input coordinate of output position o along axis j for kernel tap t, or -1 outside. */
static inline int64_t mps_conv_src(const struct mps_conv_geom *q, int j, int64_t o, int64_t t)
{
    int64_t i = o * q->w.s[j] - q->w.pb[j] + t * q->w.d[j];
    return i >= 0 && i < q->w.in[j] ? i : -1;
}

/* Outputs [lo, hi) along axis j whose input coordinate for tap t lies inside the input. */
static inline void mps_conv_valid(const struct mps_window3 *w, int j, int64_t t, int64_t *lo, int64_t *hi)
{
    int64_t first = w->pb[j] - t * w->d[j], last = w->in[j] - 1 + w->pb[j] - t * w->d[j];
    *lo = first <= 0 ? 0 : (first + w->s[j] - 1) / w->s[j];
    *hi = last < 0 ? 0 : last / w->s[j] + 1;
    if (*hi > w->out[j])
        *hi = w->out[j];
}

/* conv_depthwise.c */
/* Whether the family's dwb takes the depthwise layer q (sixteen planes a block). */
bool mps_dwb_applies(const struct mps_conv_geom *q, const struct mps_ukernels *uk);
/* The 2-D window of a depthwise layer as the plane kernels take it. */
struct mps_dwk_geom mps_dwk_geom_of(const struct mps_window3 *w);
/* Runs the depthwise Conv of a (run-time weights): y = act(W x + bias). */
void mps_conv_depthwise(const struct mps_cpu_args *a, const struct mps_conv_geom *q);
/* Runs the 1x1 Conv a and the depthwise a->dw after it as one job (mps_cpu_conv_expand). */
void mps_conv_expand_run(const struct mps_cpu_args *a);

#endif
