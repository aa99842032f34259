/* compare.h: the one rule by which mpsrun judges an output against a reference:
   `infer --check`, the conformance runner, the PyTorch-export and shipped-model
   tests all call mps_compare.

   A float element matches when

       |got - want| <= atol + rtol * scale,   scale = the largest finite |want| of the tensor

   rtol is relative to the output's largest magnitude, not to each element's
   own (numpy.allclose's rtol). The rounding error of an fp32 result comes from
   summing terms of about the output's size, in an order that depends on the
   BLAS kernels and the thread split; judged element by element, a logit near
   zero fails on correct arithmetic. Judged against the scale, a correct fp32
   result passes under any summation order, and a wrong weight, a dropped bias
   or a shifted input, which move outputs by far more, still fail.

   Probabilities are compared as their natural logarithms (tol.log): the
   information of a saturated Softmax lies in its small values (0.99999 and
   1e-9), which no tolerance on the values themselves can see; ln p = z - ln
   sum(exp z) is a sum of logit-sized terms, so the same rule holds for it.
   A zero is ln 0 = -infinity; a negative value must equal its reference.

   NaN matches NaN only, and an infinity the same infinity only; a NaN or an
   infinity where the reference has a finite value is an infinite error.
   Integer and bool elements must be equal. An empty tensor matches.

       struct mps_comparison c;
       mps_compare(MPS_F32, got, want, n, (struct mps_tolerance){.rtol = 1e-5}, &c);
       if (!c.ok)
           printf("element %lld is %g, expected %g: %.2g of the scale\n",
                  (long long)c.worst, c.got, c.want, c.rel_err); */
#ifndef MPS_COMPARE_H
#define MPS_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "tensor.h"

struct mps_tolerance {
    double rtol; /* relative to the reference's scale (largest finite magnitude) */
    double atol; /* absolute */
    bool log;    /* compare ln(got) with ln(want): for probabilities */
};

struct mps_comparison {
    bool ok;          /* every element within the tolerance */
    int64_t n_bad;    /* elements outside it */
    double scale;     /* the largest finite |want| (|ln want| with log); 0 for an empty or all-zero reference */
    int64_t worst;    /* the element with the largest error (the first of equals); -1 when n is 0 */
    double got, want; /* the values at worst (not their logs) */
    double abs_err;   /* |got - want| (of the logs, with log) at worst; INFINITY for a NaN or infinity mismatch */
    double rel_err;   /* abs_err / scale (abs_err itself when the scale is 0) */
    double bound;     /* atol + rtol * scale: the largest error allowed; 0 for integers */
    bool exact;       /* an integer or bool dtype: equality was asked */
    bool log;         /* the logs were compared */
};

/* Compares n elements of dtype at got and want (contiguous) by the rule above;
   fills c. The tolerance is ignored for integer and bool dtypes. */
void mps_compare(enum mps_dtype dtype, const void *got, const void *want, int64_t n, struct mps_tolerance tol,
                 struct mps_comparison *c);

/* Writes one line about c, a comparison of n elements, into buf; returns buf:
   "max error 2.86e-06 = 2.62e-07 of the scale 10.9032, at element 1: got
   -4.49138498, expected -4.49138784", then, when it failed, "; 1 of 10 elements
   beyond 0.000109 (rtol 1e-05 of the scale, atol 0)". */
char *mps_compare_str(const struct mps_comparison *c, int64_t n, struct mps_tolerance tol, char *buf, size_t size);

#endif
