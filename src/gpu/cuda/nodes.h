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
/* The launcher of an elementwise, reduction or layout op (nodes_layout.c). */
mps_cuda_launcher mps_cuda_data_launcher(enum mps_op op);

#endif
