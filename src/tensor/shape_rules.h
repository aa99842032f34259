/* shape_rules.h: helpers shared by the shape rules of shape.c (math ops),
   shape_layout.c (layout ops) and shape_seq.c (recurrent nets, If).
   Internal to src/tensor. */
#ifndef MPS_SHAPE_RULES_H
#define MPS_SHAPE_RULES_H

#include "graph.h"

/* A shape rule validates node n of g (inputs already inferred), fills its
   resolved params and sets the dtype and shape of each of its outputs. */
typedef enum mps_status (*mps_shape_rule)(struct mps_graph *g, struct mps_node *n, struct mps_error *err);

/* Fails with MPS_ERR_MODEL and "node 'name' (Op): <reason>". */
enum mps_status mps_shape_fail(const struct mps_node *n, struct mps_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Input i of n (NULL when omitted). */
const struct mps_value *mps_shape_in(const struct mps_graph *g, const struct mps_node *n, int i);
/* Sets output i of n. */
void mps_shape_set(struct mps_graph *g, const struct mps_node *n, int i, enum mps_dtype dt,
                   const struct mps_shape *s);
/* Sets output i of n to a shape whose dim axis is an upper bound: a run
   computes its size (mps_value.bounded). */
void mps_shape_set_bounded(struct mps_graph *g, const struct mps_node *n, int i, enum mps_dtype dt,
                           const struct mps_shape *s, int axis);
/* Fails unless input i has one of the dtypes in mask (bit per enum mps_dtype). */
enum mps_status mps_shape_need_dtype(const struct mps_graph *g, const struct mps_node *n, int i, unsigned mask,
                                     struct mps_error *err);
/* Reads constant integer input i (i64 or i32, at most max elements) into v;
   *count gets the element count. Fails when it is not a constant. */
enum mps_status mps_shape_const_ints(const struct mps_graph *g, const struct mps_node *n, int i, int64_t *v,
                                     int max, int *count, struct mps_error *err);
/* Reads constant integer input i as a shape: every entry >= 0, within the size limit. */
enum mps_status mps_shape_const_shape(const struct mps_graph *g, const struct mps_node *n, int i, struct mps_shape *s,
                                      struct mps_error *err);
/* Element i of constant value c (any numeric dtype) as a double. */
double mps_shape_const_at(const struct mps_value *c, int64_t i);
/* Reads constant scalar input i (any numeric dtype, one element) into *v. */
enum mps_status mps_shape_const_scalar(const struct mps_graph *g, const struct mps_node *n, int i, double *v,
                                       struct mps_error *err);
/* Resolves *axis (negative counts from the end) against rank ndim, in place. */
enum mps_status mps_shape_resolve_axis(const struct mps_node *n, int64_t *axis, int ndim, struct mps_error *err);
/* A bitmask of axes from v[count], each in [-ndim, ndim); rejects repeats. */
enum mps_status mps_shape_axes_mask(const struct mps_node *n, const int64_t *v, int count, int ndim,
                                    uint32_t *mask, struct mps_error *err);

#define MPS_DT(t) (1u << (t))
#define MPS_DT_FLOAT MPS_DT(MPS_F32)
#define MPS_DT_INT (MPS_DT(MPS_I64) | MPS_DT(MPS_I32))
/* every integer and f32, f64: what the cpu's arithmetic computes */
#define MPS_DT_NUMBER                                                                                                  \
    (MPS_DT_FLOAT | MPS_DT(MPS_F64) | MPS_DT_INT | MPS_DT(MPS_I16) | MPS_DT(MPS_I8) | MPS_DT(MPS_U64) |                \
     MPS_DT(MPS_U32) | MPS_DT(MPS_U16) | MPS_DT(MPS_U8))
#define MPS_DT_ANY ((1u << MPS_DTYPE_COUNT) - 1)

/* The quantized operands of QLinearConv and QLinearMatMul (ops.def's
   order): x uint8 or int8 with a constant f32 scale and zero point of its
   type (one each); w a constant uint8 or int8 with constant scales and zero
   points, one or one per output channel (Conv: w's first axis; MatMul: its
   last); y_scale and y_zero_point one each, uint8 or int8 (omitted: an f32
   output); B f32 or int32, one per output channel. *dt gets the output's
   dtype. (shape_seq.c) */
enum mps_status mps_shape_quantized(const struct mps_graph *g, const struct mps_node *n, enum mps_dtype *dt,
                                    struct mps_error *err);

/* The layout rules, indexed by op (shape_layout.c); NULL for other ops. */
extern const mps_shape_rule mps_shape_layout_rules[MPS_OP_COUNT];
/* The recurrent nets', a run-time If's, the losses', GridSample's, Einsum's, TfIdfVectorizer's, RandomLike's
 * (shape_seq.c). */
extern const mps_shape_rule mps_shape_seq_rules[MPS_OP_COUNT];

#endif
