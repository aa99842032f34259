/* memplan.h: places every intermediate tensor of a graph in one arena by
   liveness, so that running a compiled model allocates nothing. Shared by the
   backends: the CPU backend applies it to host memory, the GPU backends to a
   device arena.

       struct mps_memplan mp;
       if (mps_memplan_build(g, 64, NULL, &mp, &err) == MPS_OK) {
           void *arena = aligned_alloc(64, mp.size);
           // value v lives at arena + mp.offset[v] when mp.offset[v] >= 0
           mps_memplan_free(&mp);
       }

   A value is live from the node that writes it to the last node that reads
   it (graph outputs: to the end). Two values whose lifetimes overlap never
   share bytes; a value whose lifetime has ended gives its bytes to later ones.

   With views, the output of a Reshape, Flatten, Squeeze, Unsqueeze, Identity
   or Dropout is the bytes of its input (alias[v]: the value at the end of
   such a chain); that value then lives until the view's last reader. A
   backend that asks for views must give an alias its root's memory, inputs
   included, and copy nothing for the view node.

   With writer, a backend whose kernel for node w also computes a later node
   k (writer[k] = w: cuda's Conv writing the MaxPool after it) has k's
   outputs live from w on, so that they never share bytes with what w reads.

   With skip, the values marked are not placed (offset -1): outputs that a
   backend's fused kernel never makes nor reads (the cpu's 1x1 Conv made
   inside the depthwise after it). */
#ifndef MPS_MEMPLAN_H
#define MPS_MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

struct mps_memplan {
    int64_t *offset; /* per value: byte offset in the arena, -1 when not in it
                        (inputs, initializers); owned, freed by mps_memplan_free */
    int *first, *last; /* per value: node index range of its lifetime (-1 if not placed) */
    int *alias;        /* per value: the value whose bytes a view shares, -1 when none;
                          offset[v] is the root's (-1 for an input) */
    size_t size;     /* arena bytes */
    size_t total;    /* bytes of all placed values laid end to end, for comparison */
};

/* How a backend runs the nodes, where it differs from each node writing its own outputs in turn. */
struct mps_memplan_opts {
    bool views;        /* views share their input's bytes (above) */
    const int *writer; /* per node: the node (at or before it) whose kernels write its outputs; NULL: itself */
    const bool *skip;  /* per value: never written nor read, so not placed; NULL: none */
};

/* Plans the node outputs of the sorted, inferred graph g; offsets are multiples of align; opts may be NULL. */
enum mps_status mps_memplan_build(const struct mps_graph *g, size_t align, const struct mps_memplan_opts *opts,
                                  struct mps_memplan *mp, struct mps_error *err);
void mps_memplan_free(struct mps_memplan *mp);

#endif
