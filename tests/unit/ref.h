/* ref.h: naive reference implementations of every op, in double, written for
   the tests and independent of the kernels: index arithmetic per output
   element, no BLAS, no strides tricks. They take the op's parameters as the
   test gave them (not as shape inference resolved them), so that resolution
   (auto_pad, Slice clamping, negative axes) is checked too. The caller gives
   each output's shape (the test's expectation) and its buffer; of an output
   whose size the values decide (NonMaxSuppression, Unique, NonZero of a
   run-time input) the bound, and the reference sets the size it computes. */
#ifndef MPS_TEST_REF_H
#define MPS_TEST_REF_H

#include <stdbool.h>

#include "op.h"

struct ref_tensor {
    struct mps_shape shape;
    double *d;    /* numel(shape) values; NULL for an omitted optional input */
    bool integer; /* holds an integer dtype (Div truncates) */
    const char **s; /* strings (MPS_STRING): numel(shape) of them, d unused; an output's the reference allocates */
    enum mps_dtype dt; /* the value's dtype (a quantized output's range) */
};

/* Computes out[0..n_out) of op from in[0..n_in). */
/* Elementwise op op (MPS_TR_UNARY) of x, in double. */
double ref_unary1(enum mps_op op, const struct mps_act_params *p, double x);
void ref_op(enum mps_op op, const union mps_op_params *p, const struct ref_tensor *in, int n_in,
            struct ref_tensor *out, int n_out);

/* numel of a shape (shapes here are small and valid). */
int64_t ref_numel(const struct mps_shape *s);

#endif
