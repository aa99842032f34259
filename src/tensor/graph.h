/* graph.h: the graph IR every backend compiles.

   A graph is a list of values (named tensors: inputs, initializers and node
   outputs) and a list of nodes, each reading and writing values by index.
   It owns all of its memory (names, index arrays, initializer data) in one
   arena that mps_graph_free releases at once, so a loader that fails half
   way leaks nothing.

       struct mps_graph *g = mps_graph_new();
       int x = mps_graph_add_value(g, "x", MPS_F32, &(struct mps_shape){2, {1, 784}});
       int w = mps_graph_add_const(g, "w", MPS_F32, &wshape, weights);  // copied
       int y = mps_graph_add_value(g, "y", MPS_F32, NULL);             // shape inferred
       mps_graph_add_node(g, MPS_OP_GEMM, "fc", (int[]){x, w}, 2, &y, 1, &params, &err);
       mps_graph_add_input(g, x);  mps_graph_add_output(g, y);
       mps_graph_sort(g, &err);   // topological order; rejects cycles, undefined inputs
       mps_graph_infer(g, &err);  // shapes, dtypes, resolved params (shape*.c)

   After mps_graph_infer every value has a known dtype and shape, and every
   node has been validated: backends may trust what they read. */
#ifndef MPS_GRAPH_H
#define MPS_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "op.h"
#include "status.h"
#include "tensor.h"

struct mps_value {
    const char *name;       /* unique in the graph; arena-owned */
    enum mps_dtype dtype;
    struct mps_shape shape; /* meaningful when shape_known */
    bool shape_known;
    /* bounded: shape.dim[bound_axis] is an upper bound, the size a run's (the output of a NonMaxSuppression, a
       Unique, a NonZero of a run-time input); only a graph output may be so, and a backend runs it only where
       it has run_shape (backend.h) */
    bool bounded;
    int bound_axis;
    const void *data;       /* initializer: contiguous, arena-owned; NULL otherwise */
    int producer;           /* index of the node writing it, -1 for inputs and initializers */
};

struct mps_node {
    enum mps_op op;
    const char *name;       /* arena-owned; may be "" in a file, the loader names it */
    int n_in, n_out;
    int *in;                /* value indices (n_in); -1 for an omitted optional input */
    int *out;               /* value indices (n_out) */
    union mps_op_params p;
};

struct mps_graph_arena;

/* What a loader knew of the quantization it composed (onnx_quant.c), for the
   pass that runs int8 products (passes.c): DQ, a value out = (in[0] - zero
   point in[2]) * scale in[1] (along axis); Q, in[0] quantized into out by
   in[1] and in[2]; QLINEAR, a QLinearConv or QLinearMatMul (op, p) whose
   nine inputs are in (ops.def's order, -1 where omitted) and result out.
   Scales and zero points are the file's own values; -1 where omitted. res
   is the node's output in the file: out until a pass removes the Identity
   between them, or folds the two into one constant (a weight's DQ). */
enum mps_qnote_kind { MPS_QNOTE_DQ, MPS_QNOTE_Q, MPS_QNOTE_QLINEAR };
struct mps_qnote {
    enum mps_qnote_kind kind;
    int in[9];
    int out, res;
    int64_t axis;
    enum mps_op op;
    union mps_op_params p;
};

struct mps_graph {
    struct mps_value *values;
    int n_values, cap_values;
    struct mps_node *nodes; /* topological order after mps_graph_sort */
    int n_nodes, cap_nodes;
    int *inputs;            /* value indices of the runtime inputs */
    int n_inputs, cap_inputs;
    int *outputs;           /* value indices of the outputs */
    int n_outputs, cap_outputs;
    struct mps_graph_arena *arena;
    struct mps_qnote *qnotes; /* nothing reads them but the quantization pass */
    int n_qnotes, cap_qnotes;
};

/* A new empty graph, or NULL when out of memory. Free with mps_graph_free. */
struct mps_graph *mps_graph_new(void);
/* Frees g and everything it owns; NULL is a no-op. */
void mps_graph_free(struct mps_graph *g);

/* size bytes from the graph's arena, 64-byte aligned, zeroed; NULL when out of memory. */
void *mps_graph_alloc(struct mps_graph *g, size_t size);
/* A copy of s in the arena. */
const char *mps_graph_strdup(struct mps_graph *g, const char *s);
/* The first len bytes of s, NUL-terminated, in the arena. */
const char *mps_graph_strndup(struct mps_graph *g, const char *s, size_t len);

/* Adds a value; shape may be NULL (unknown until inference). Returns its index,
   or -1 when out of memory or the name is taken (see mps_graph_find). */
int mps_graph_add_value(struct mps_graph *g, const char *name, enum mps_dtype dtype,
                        const struct mps_shape *shape);
/* Adds an initializer, copying numel(shape) elements from data (of strings, the characters too). Returns its
   index or -1. */
int mps_graph_add_const(struct mps_graph *g, const char *name, enum mps_dtype dtype,
                        const struct mps_shape *shape, const void *data);
/* Keeps note (a copy); false when out of memory. */
bool mps_graph_add_qnote(struct mps_graph *g, const struct mps_qnote *note);
/* Index of the value named name, or -1. Linear: loaders should keep their own map. */
int mps_graph_find(const struct mps_graph *g, const char *name);

/* Adds a node reading in[n_in] and writing out[n_out] (value indices, copied).
   params may be NULL for the op's defaults. Fails with MPS_ERR_MODEL when the
   arity is wrong for the op, an index is out of range, or an output already
   has a producer. */
enum mps_status mps_graph_add_node(struct mps_graph *g, enum mps_op op, const char *name,
                                   const int *in, int n_in, const int *out, int n_out,
                                   const union mps_op_params *params, struct mps_error *err);
enum mps_status mps_graph_add_input(struct mps_graph *g, int value, struct mps_error *err);
enum mps_status mps_graph_add_output(struct mps_graph *g, int value, struct mps_error *err);

/* Puts the nodes in topological order (stable: independent nodes keep their
   order). MPS_ERR_MODEL when a node reads a value nothing defines, or when
   the nodes form a cycle (the message names a node on it). */
enum mps_status mps_graph_sort(struct mps_graph *g, struct mps_error *err);

/* Shape and dtype inference over the sorted graph, with full validation of
   each node (shape.c). Graph inputs must have known shapes. */
enum mps_status mps_graph_infer(struct mps_graph *g, struct mps_error *err);

/* Infers one node whose inputs are known (the step mps_graph_infer takes per node). */
enum mps_status mps_graph_infer_node(struct mps_graph *g, struct mps_node *n, struct mps_error *err);

/* Removes the nodes k with dead[k], keeping the order of the others. Values
   that dead nodes wrote lose their producer: they must be constants by then,
   or unused. */
void mps_graph_remove_nodes(struct mps_graph *g, const bool *dead);
/* Makes every node (and quantization note) that reads value from read value to instead. */
void mps_graph_replace_uses(struct mps_graph *g, int from, int to);
/* Whether value v is one of the graph's outputs. */
bool mps_graph_is_output(const struct mps_graph *g, int v);
/* Readers of value v among the nodes, counting a graph output as one; *only
   is set to the last reading node's index (when the count is 1 and v is not
   an output: its one reader). */
int mps_graph_uses(const struct mps_graph *g, int v, int *only);

/* A run-time If (MPS_OP_IF) has both branches' nodes in the graph before it;
   a run needs only the taken one's. A branch condition: the nodes it guards
   run when value cond (one bool, computed before them) is taken (true: the
   then branch) and the condition parent (-1: none, an If inside a branch)
   holds too. */
struct mps_branch {
    int cond;
    bool taken;
    int parent;
};
/* The conditions under which each node's result is read: guard[k] (n_nodes
   entries) -1 when every run needs node k, else an index into
   branches[0, 2 * n_nodes) (caller's arrays). A node that several branches
   read is guarded by what they share. Returns the count of guarded nodes. */
int mps_graph_branches(const struct mps_graph *g, int *guard, struct mps_branch *branches);
/* Whether branch condition b holds, cond values read by value(v, ctx) != 0. */
bool mps_branch_holds(const struct mps_branch *branches, int b, bool (*value)(int v, void *ctx), void *ctx);

/* The input of node n at slot i as a value, or NULL when omitted. */
const struct mps_value *mps_node_input(const struct mps_graph *g, const struct mps_node *n, int i);

/* The activation slot of node n (Conv, ConvTranspose, Gemm, Add, Sub, Mul,
   Div), or NULL when its op has none. Like strchr it drops the const: the
   fuse pass writes through it, everyone else only reads. */
struct mps_fused_act *mps_node_act(const struct mps_node *n);
/* DepthToSpace and SpaceToDepth as the transpose they are: the input [N,C,H,W]
   seen as six dims (view), permuted (output dim i is view dim perm[i]) into
   six dims whose contiguous layout is the output's. */
void mps_depth_view(const struct mps_node *n, const struct mps_shape *x, struct mps_shape *view, int perm[6]);
/* The same as a strided copy: out6, the permuted dims, and src[i], the
   input's stride (elements) along out6's dim i. */
void mps_depth_transpose(const struct mps_node *n, const struct mps_shape *x, struct mps_shape *out6, int64_t src[6]);

/* GatherElements: the offset in data (shape x, contiguous) that output
   element o (of shape idx, the indices' shape) reads, given its index v
   along axis (already made >= 0). */
int64_t mps_gather_elements_at(const struct mps_shape *x, const struct mps_shape *idx, int axis, int64_t o, int64_t v);

/* GatherND and ScatterND: indices [..., k] of data x name slices of
   x.shape[b + k:] (b batch dims). mps_nd_rows gives the number of index
   rows (the indices' leading dims) and the slice size; mps_nd_base the
   offset in x (contiguous) where row r's slice starts, its k indices t
   (each already made >= 0). */
void mps_nd_rows(const struct mps_shape *x, const struct mps_shape *idx, int b, int64_t *rows, int64_t *slice);
int64_t mps_nd_base(const struct mps_shape *x, const struct mps_shape *idx, int b, int64_t r, const int64_t *t);

/* GatherElements, GatherND, ScatterElements, ScatterND with constant indices
   (checked at load) as flat offsets, computed once: for the gathers, the data
   offset each output element reads; for the scatters, the output offset each
   update element lands on, with reduction none -1 for an update a later one
   overwrites. Returns how many (off NULL: only counts); *repeats tells
   whether two updates land on one element. */
int64_t mps_index_plan(const struct mps_graph *g, const struct mps_node *n, int64_t *off, bool *repeats);

/* Tile as a strided copy: view, the output seen as [r0, d0, r1, d1, ...]
   (a repeat of 1 leaves its axis out), and src[i], the input's stride along
   view dim i (0 along a repeat). False when the view has more than
   MPS_MAX_DIMS dims. */
bool mps_tile_view(const struct mps_shape *x, const int64_t *repeats, struct mps_shape *view, int64_t *src);

/* n's op with its fused activation, "Conv" or "Add+Relu", into buf. */
const char *mps_node_label(const struct mps_node *n, char *buf, size_t size);

#endif
