/* cpu.h: what the CPU backend offers besides its backend table: evaluating one
   node on constants, which the graph passes use to fold constants. */
#ifndef MPS_CPU_H
#define MPS_CPU_H

#include "../graph.h"

/* Runs node n of the inferred graph g, every input of which is a constant,
   on this thread. out[i] is a caller-owned buffer of output i's size;
   shapes[i] gets output i's shape: a bounded one's (mps_value.bounded) as
   the values made it. */
enum mps_status mps_cpu_eval_node(const struct mps_graph *g, const struct mps_node *n, void *const *out,
                                  struct mps_shape *shapes, struct mps_error *err);

#endif
