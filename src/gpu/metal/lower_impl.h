/* lower_impl.h: what lower.c and the lowerings (lower_ops.c, lower_layout.c,
   lower_index.c, lower_rnn.c) share (not for the backend). */
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

/* The inferred shape of graph value v. */
const struct mps_shape *mps_mtl_vshape(const struct mps_mtl_lowerer *L, int v);
/* Defines graph value v (a node output) as tensor id; as x reshaped to v's shape (same count). */
void mps_mtl_define(struct mps_mtl_lowerer *L, int v, int id);
void mps_mtl_define_as(struct mps_mtl_lowerer *L, int v, int x);
/* x broadcast to s (Expand); a reshape when only the rank differs. */
int mps_mtl_broadcast_to(struct mps_mtl_lowerer *L, int x, const struct mps_shape *s);
/* fn over axes, reduced dims kept as 1; x itself when axes is empty. */
int mps_mtl_reduce(struct mps_mtl_lowerer *L, enum mps_mtl_reduce fn, int x, uint32_t axes);
/* a b with MatMul's batch broadcasting. */
int mps_mtl_matmul_ids(struct mps_mtl_lowerer *L, int a, int b);
/* A constant of dtype t and shape s over data (program-owned, from mps_mtl_alloc, or the graph's;
   not copied); -1 when data is NULL (out of memory). */
int mps_mtl_const_data(struct mps_mtl_lowerer *L, enum mps_dtype t, const struct mps_shape *s, const void *data);
/* An int32 constant of shape s from int64 values; 0, 1, ... len-1 along axis of a rank-dims shape of 1s. */
int mps_mtl_int32s(struct mps_mtl_lowerer *L, const int64_t *v, const struct mps_shape *s);
int mps_mtl_iota(struct mps_mtl_lowerer *L, int rank, int axis, int64_t len);

/* op (an elementwise activation of lower_ops.c, with its alpha and beta) of x. */
int mps_mtl_activation(struct mps_mtl_lowerer *L, enum mps_op op, const struct mps_act_params *a, int x);

/* The lowerings of the op families other than lower_ops.c's, for its table. */
void mps_mtl_lower_rnn(struct mps_mtl_lowerer *L, const struct mps_node *n); /* RNN, GRU, LSTM (lower_rnn.c) */
typedef void (*mps_mtl_lowering)(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_transpose(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_depth(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_concat(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_slice(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_split(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_pad(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_resize(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_shape(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_fill(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_alias(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_cast(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_reshape(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_expand(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_tile(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_range(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_trilu(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_cumsum(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_arg(struct mps_mtl_lowerer *L, const struct mps_node *n); /* ArgMax, ArgMin, Hardmax */
void mps_mtl_lower_topk(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_gather(struct mps_mtl_lowerer *L, const struct mps_node *n);
void mps_mtl_lower_index(struct mps_mtl_lowerer *L, const struct mps_node *n); /* GatherElements, GatherND, Scatter* */
void mps_mtl_lower_onehot(struct mps_mtl_lowerer *L, const struct mps_node *n);

/* Lowers node n (already checked by mps_mtl_node_supported), defining its outputs. */
void mps_mtl_lower_node(struct mps_mtl_lowerer *L, const struct mps_node *n);

#endif
