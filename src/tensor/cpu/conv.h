/* conv.h: what the CPU backend's convolution paths share (conv.c chooses
   the path and runs the others; conv_direct.c is the direct one). Internal
   to the CPU backend. */
#ifndef MPS_CPU_CONV_H
#define MPS_CPU_CONV_H

#include "kernels.h"
#include "ukernels.h"

/* One convolution in 3-D terms, spatial axes (depth, height, width).
   ConvTranspose uses it the other way round: in is the col2im target's source. */
struct mps_conv_geom {
    int64_t n, c, m, g; /* images, input and output channels, groups */
    struct mps_cpu_window3 w;
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
size_t mps_direct_scratch(const struct mps_conv_geom *q, const struct mps_maxpool_geom *pool, int threads);
/* Runs it: y = act(W x + bias); data is what mps_direct_pack wrote. */
void mps_direct_conv(const struct mps_cpu_args *a, const struct mps_conv_geom *q, const void *data);

#endif
