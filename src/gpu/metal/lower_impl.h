/* lower_impl.h: what lower.c and lower_ops.c share (not for the backend). */
#ifndef MPS_METAL_LOWER_IMPL_H
#define MPS_METAL_LOWER_IMPL_H

#include "lower.h"

struct mps_mtl_tensor {
    enum mps_dtype dtype;
    struct mps_shape shape;
    enum mps_mtl_kind kind; /* of the step defining it */
};

struct mps_mtl_lowerer {
    const struct mps_graph *g;
    struct mps_mtl_program *p;
    int *vid;                 /* per graph value: its tensor id, -1 until defined */
    struct mps_mtl_tensor *t; /* per tensor id */
    int node;                 /* the node being lowered (steps record it); -1 outside */
    bool oom;
    const char *bug; /* set when a helper meets what inference should have ruled out */
};

/* The window of a 1-D or 2-D convolution or pooling node as MPSGraph's 2-D
   descriptors see it: index 0 is height (1 for 1-D), 1 is width. For
   pooling, pe includes what ceil_mode needs beyond the ONNX pads (ceil_extra
   is its sum), so that floor division yields the inferred output size. */
struct mps_mtl_window_2d {
    int spatial;
    int64_t k[2], s[2], d[2], pb[2], pe[2];
    int64_t ceil_extra;
};
void mps_mtl_window_2d(const struct mps_graph *g, const struct mps_node *n, struct mps_mtl_window_2d *w);

void *mps_mtl_alloc(struct mps_mtl_lowerer *L, size_t size);
/* Appends a step defining a new tensor (returned, -1 when out of memory);
 *step points at it until the next emit. */
int mps_mtl_emit(struct mps_mtl_lowerer *L, enum mps_mtl_kind kind, int fn, enum mps_dtype dtype,
                 const struct mps_shape *shape, const int *in, int n_in, struct mps_mtl_step **step);
const struct mps_shape *mps_mtl_shape(const struct mps_mtl_lowerer *L, int id);
enum mps_dtype mps_mtl_dtype(const struct mps_mtl_lowerer *L, int id);
/* f32 becomes f16 under --precision fp16; every other type stays. */
enum mps_dtype mps_mtl_compute_dtype(const struct mps_mtl_lowerer *L, enum mps_dtype t);

/* The tensor of graph value v (a weight becomes a constant on first use). */
int mps_mtl_value(struct mps_mtl_lowerer *L, int v);
/* v seen with shape s: a weight becomes a constant of that shape, anything else a reshape. */
int mps_mtl_value_as(struct mps_mtl_lowerer *L, int v, const struct mps_shape *s);

/* Helpers returning the new tensor (or x unchanged when nothing is needed);
   -1 in, -1 out, so that chains need one check at the end. */
int mps_mtl_cast(struct mps_mtl_lowerer *L, int x, enum mps_dtype to);
int mps_mtl_reshape(struct mps_mtl_lowerer *L, int x, const struct mps_shape *s);
int mps_mtl_scalar(struct mps_mtl_lowerer *L, double value, enum mps_dtype t);
int mps_mtl_unary(struct mps_mtl_lowerer *L, enum mps_mtl_unary fn, int x);
int mps_mtl_binary(struct mps_mtl_lowerer *L, enum mps_mtl_binary fn, int a, int b);
int mps_mtl_binary_scalar(struct mps_mtl_lowerer *L, enum mps_mtl_binary fn, int a, double v);
int mps_mtl_select(struct mps_mtl_lowerer *L, int pred, int yes, int no);

/* Lowers node n (already checked by mps_mtl_node_supported), defining its outputs. */
void mps_mtl_lower_node(struct mps_mtl_lowerer *L, const struct mps_node *n);

#endif
