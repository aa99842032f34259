/* onnx_internal.h: shared by the ONNX loader (onnx.c) and its op mapping
   (onnx_ops.c, onnx_ops_math.c, onnx_ops_tensor.c). Internal to src/models. */
#ifndef MPS_ONNX_INTERNAL_H
#define MPS_ONNX_INTERNAL_H

#include "model.h"
#include "onnx.pb-c.h"

/* An opened file (model.h): its decoded protobuf, which onnx_qdq.c edits. */
struct mps_onnx_file {
    Onnx__ModelProto *mp;
    char *path;
    char dir[4096]; /* the model's folder, for external data */
};

/* Opsets of the default domain the mapping follows. Before opset 7 some ops had
   attributes that the rows do not list (consumed_inputs, string Cast 'to', ...):
   such files fail on those attributes, never run with other semantics. */
#define MPS_ONNX_OPSET_MIN 1
#define MPS_ONNX_OPSET_MAX 21

struct mps_onnx_ctx {
    struct mps_graph *g;
    int64_t opset;
    const char *dir; /* the model's folder, for external data */
    int *slots;      /* name -> value index, open addressing; -1 empty */
    size_t n_slots;  /* a power of two */
    int n_generated; /* counter for the names of values the loader adds */
    int depth;       /* the If branches being mapped, one inside another */
    bool widen;      /* f16 and bf16 tensors decode as f32, Cast to f16 rounds and stays f32 (a model's, not
                        a test's data file) */
    int n_widened;   /* tensors, inputs and Casts so widened */
    char scope[192]; /* "<If>/then/" ...: what the nodes of a run-time If's branches are named within */
    struct mps_onnx_list **lists; /* per value: the sequence or optional it names, else NULL (onnx_seq.c) */
    int n_lists;
};

/* Sequences and optionals exist at load only (onnx_seq.c): a value of either
   names a list of tensor values, and the sequence ops edit lists and map to
   tensor ops (SequenceAt to an Identity, ConcatFromSequence to a Concat...)
   with every position known then. A graph input or output of either is
   count tensors of the graph ("name[i]"). */
enum mps_onnx_list_kind {
    MPS_LIST_SEQ,        /* a sequence of item[n] */
    MPS_LIST_OPT_TENSOR, /* an optional holding the tensor item[0] */
    MPS_LIST_OPT_SEQ,    /* an optional holding the sequence item[n] */
    MPS_LIST_OPT_NONE,   /* an empty optional */
};
struct mps_onnx_list {
    enum mps_onnx_list_kind kind;
    int n;
    int item[]; /* tensor values */
};
struct mps_onnx_node;
/* The list value v names, or NULL for a tensor. */
const struct mps_onnx_list *mps_onnx_list_of(const struct mps_onnx_ctx *c, int v);
/* Makes value v name a list of kind holding item[n] (copied); false when out of memory. */
bool mps_onnx_set_list(struct mps_onnx_ctx *c, int v, enum mps_onnx_list_kind kind, const int *item, int n);
/* Value to takes from's contents: the same list, or a tensor through an Identity named name. */
enum mps_status mps_onnx_alias(struct mps_onnx_ctx *c, const char *name, int from, int to, struct mps_error *err);
/* Maps node n when it is a sequence or optional op (or an Identity of one):
   *mine true. A node of another op that reads a list fails naming it (Loop,
   whose carried values may be lists, is not checked). */
enum mps_status mps_onnx_seq_node(struct mps_onnx_ctx *c, struct mps_onnx_node *n, bool *mine, struct mps_error *err);

#define MPS_ONNX_MAX_NESTING 32 /* If branches inside each other (a file's nesting is its own; the stack is ours) */

/* The value named name, or -1. */
int mps_onnx_lookup(const struct mps_onnx_ctx *c, const char *name);
/* Adds a value named name (unique) to the graph and the map; -1 on failure. */
int mps_onnx_define(struct mps_onnx_ctx *c, const char *name, enum mps_dtype dt, const struct mps_shape *s);
/* Adds an initializer under a generated name derived from hint (data NULL:
   zeros, for the caller to fill); -1 on failure. */
int mps_onnx_const(struct mps_onnx_ctx *c, const char *hint, enum mps_dtype dt, const struct mps_shape *s,
                   const void *data);
/* MPS_ERR_RUNTIME "out of memory", for the mappers. */
enum mps_status mps_onnx_oom(struct mps_error *err);
/* Adds a value under a generated name derived from hint (no data); -1 on failure. */
int mps_onnx_temp(struct mps_onnx_ctx *c, const char *hint);

/* Decodes t (inline or external data) into dtype, shape and data copied into
   the graph arena. what names the tensor in messages. With c->widen an f16
   or bf16 tensor comes back as f32. */
enum mps_status mps_onnx_tensor(struct mps_onnx_ctx *c, const Onnx__TensorProto *t, const char *what,
                                enum mps_dtype *dt, struct mps_shape *s, const void **data, struct mps_error *err);
/* The mpsrun dtype of ONNX TensorProto.DataType v; false when unsupported. */
bool mps_onnx_dtype(int32_t v, enum mps_dtype *dt);
/* "FLOAT", "INT64", ... for messages. */
const char *mps_onnx_dtype_name(int32_t v);

/* A node being mapped: its ONNX form, a name for messages, and the values of
   its inputs (-1: omitted) and outputs (-1: omitted optional output). */
struct mps_onnx_node {
    const Onnx__NodeProto *np;
    const char *name;
    int in[32];
    int n_in;
    int out[8];
    int n_out;
    int last_op; /* a mapper whose expansion ends in another op than its row's sets it (else -1) */
};

/* Attribute name of node n, or NULL when absent. */
const Onnx__AttributeProto *mps_attr(const struct mps_onnx_node *n, const char *name);
/* Attribute readers: def when the attribute is absent; a wrong type or a
   value out of range fails naming the node. mps_attr_ints: *count -1 when
   absent. */
enum mps_status mps_attr_int(const struct mps_onnx_node *n, const char *name, int64_t def, int64_t *v,
                             struct mps_error *err);
enum mps_status mps_attr_float(const struct mps_onnx_node *n, const char *name, float def, float *v,
                               struct mps_error *err);
enum mps_status mps_attr_ints(const struct mps_onnx_node *n, const char *name, int64_t *v, int max, int *count,
                              struct mps_error *err);
enum mps_status mps_attr_string(const struct mps_onnx_node *n, const char *name, const char *def, char *v, size_t size,
                                struct mps_error *err);
enum mps_status mps_attr_floats(const struct mps_onnx_node *n, const char *name, float *v, int max, int *count,
                                struct mps_error *err);
/* Each string cut to 31 bytes. */
enum mps_status mps_attr_strings(const struct mps_onnx_node *n, const char *name, char (*v)[32], int max, int *count,
                                 struct mps_error *err);
/* An older opset's attribute v[count] as the constant input slot of the newest form. */
enum mps_status mps_attr_to_input(struct mps_onnx_ctx *c, struct mps_onnx_node *n, int slot, const int64_t *v,
                                  int count, struct mps_error *err);

/* Fills p (defaults already in it) from node n's attributes; may add the
   nodes an older form expands into and set n's inputs for the last one. */
typedef enum mps_status (*mps_onnx_mapper)(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                           struct mps_error *err);

/* One ONNX op: the IR op of its (last) node, every attribute accepted
   (space separated), the mapper (NULL: no attributes to read). */
struct mps_onnx_rule {
    const char *op_type;
    enum mps_op op;
    const char *attrs;
    mps_onnx_mapper map;
};
extern const struct mps_onnx_rule mps_onnx_rules_math[]; /* onnx_ops_math.c */
extern const size_t mps_onnx_n_rules_math;
extern const struct mps_onnx_rule mps_onnx_rules_tensor[]; /* onnx_ops_tensor.c */
extern const size_t mps_onnx_n_rules_tensor;
extern const struct mps_onnx_rule mps_onnx_rules_signal[]; /* onnx_signal.c */
extern const size_t mps_onnx_n_rules_signal;
extern const struct mps_onnx_rule mps_onnx_rules_quant[]; /* onnx_quant.c */
extern const size_t mps_onnx_n_rules_quant;
extern const struct mps_onnx_rule mps_onnx_rules_ms[]; /* onnx_quant.c: domain com.microsoft */
extern const size_t mps_onnx_n_rules_ms;
extern const struct mps_onnx_rule mps_onnx_rules_random[]; /* onnx_train.c */
extern const size_t mps_onnx_n_rules_random;

/* Value v known once the model is loaded (folded on demand) as one integer or bool into *x; false when
   it is computed at run time or is not one number (onnx_graph.c). */
bool mps_onnx_known_int(struct mps_onnx_ctx *c, int v, int64_t *x, struct mps_error *err);
/* The body attribute of node n (its only one, but for the names in also), decoded into *b. */
enum mps_status mps_onnx_body(const struct mps_onnx_node *n, const char *also, Onnx__GraphProto **b,
                              struct mps_error *err);
/* One iteration k of node n's body b (a Loop's, a Scan's, a SequenceMap's):
   body input i bound to value bind[i], its nodes mapped under the scope
   "<n>/<k>/"; out[o] gets body output o. */
enum mps_status mps_onnx_iteration(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, const Onnx__GraphProto *b,
                                   int64_t k, const int *bind, int *out, struct mps_error *err);
#define MPS_ONNX_MAX_UNROLL 1024
#define MPS_ONNX_MAX_UNROLLED_NODES (1 << 18) /* the graph's nodes once unrolled (Loops inside Loops multiply) */

/* Helpers for the rows loaded as compositions (onnx_signal.c): a node of op
   on in[n_in] (params p, NULL: the defaults; at most 8 inputs; in may
   point at out) into a new value *out; *x
   reshaped to s (in place: *x the new value); the shape of value v,
   inferred on demand (a failure naming n where it is not known). */
enum mps_status mps_onnx_add(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, enum mps_op op, const int *in,
                             int n_in, const union mps_op_params *p, int *out, struct mps_error *err);
enum mps_status mps_onnx_reshape(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int *x,
                                 const struct mps_shape *s, struct mps_error *err);
enum mps_status mps_onnx_shape_of(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int v, struct mps_shape *s,
                                  struct mps_error *err);
/* Input i of n as a number known once loaded into *v (absent: def); a
   failure naming n ("must be a constant") when it is computed at run time. */
enum mps_status mps_onnx_number(struct mps_onnx_ctx *c, const struct mps_onnx_node *n, int i, double def, double *v,
                                struct mps_error *err);
/* BatchNormalization in training mode (onnx_train.c), p holding its epsilon. */
enum mps_status mps_onnx_bn_training(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err);
/* Dropout with training_mode given (opset 12 on), for the row's mapper (onnx_train.c). */
enum mps_status mps_onnx_dropout_training(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                          bool *training, struct mps_error *err);
/* Conv's attributes into p (onnx_ops_math.c). */
enum mps_status mps_onnx_conv_params(struct mps_onnx_ctx *c, struct mps_onnx_node *n, union mps_op_params *p,
                                     struct mps_error *err);

/* Maps the nodes of gp (the graph's, or an If branch's) in order (onnx_graph.c). */
enum mps_status mps_onnx_nodes(struct mps_onnx_ctx *c, const Onnx__GraphProto *gp, struct mps_error *err);
/* Maps one ONNX node to IR nodes (onnx_ops.c). */
enum mps_status mps_onnx_map_node(struct mps_onnx_ctx *c, struct mps_onnx_node *n, struct mps_error *err);

/* "node 'name' (op_type): <reason>" with MPS_ERR_MODEL. */
enum mps_status mps_onnx_fail(const struct mps_onnx_node *n, struct mps_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
