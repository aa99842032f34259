/* nodes.h: what the CUDA node launchers (nodes.c, nodes_layout.c) share.
   Internal to src/gpu/cuda. */
#ifndef MPS_CUDA_NODES_H
#define MPS_CUDA_NODES_H

#include "cuda_internal.h"

/* Device pointer and shape of input i / output i of node n. */
#define MPS_IN(i) (s->dptr[n->in[i]])
#define MPS_INV(i) (&g->values[n->in[i]])
#define MPS_OUT(i) (s->dptr[n->out[i]])
#define MPS_OUTV(i) (&g->values[n->out[i]])
#define MPS_HAS(i) (n->n_in > (i) && n->in[i] >= 0)

/* A walk over shape s with three operands' strides (NULL: 0). */
struct mps_cu_walk mps_cuda_walk(const struct mps_shape *s, const int64_t *s0, const int64_t *s1, const int64_t *s2);
/* The product of dims [from, to) of s. */
int64_t mps_cuda_prod(const struct mps_shape *s, int from, int to);
/* RNN, GRU and LSTM (nodes_rnn.c), and the scratch they need. */
enum mps_status mps_cuda_rnn(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err);
size_t mps_cuda_rnn_scratch(const struct mps_graph *g, const struct mps_node *n);
/* The window of a conv or pool between shapes x and y, in 3-D terms. */
struct mps_cu_window mps_cuda_window(const struct mps_window *w, const struct mps_shape *x, const struct mps_shape *y);
/* The int8 nodes (nodes_quant.c): their launchers; MaxPool of bytes; what they prepare at
   compile (bytes; host NULL: only counts); the scratch of their sums in parts; whether the kernels take node n (an int8
   op, a MaxPool of bytes). */
mps_cuda_launcher mps_cuda_quant_launcher(enum mps_op op);
enum mps_status mps_cuda_pool_bytes(struct mps_cuda_state *s, const struct mps_node *n, struct mps_error *err);
size_t mps_cuda_qlinear_prepared(const struct mps_graph *g, const struct mps_node *n, void *host);
size_t mps_cuda_qlinear_scratch(const struct mps_graph *g, const struct mps_node *n);
bool mps_cuda_quant_supports(const struct mps_graph *g, const struct mps_node *n);
/* The launcher of an elementwise, reduction or layout op (nodes_layout.c). */
mps_cuda_launcher mps_cuda_data_launcher(enum mps_op op);

#endif
