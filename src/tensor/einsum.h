/* einsum.h: an Einsum equation ("bij,bjk->bik", "...ii->...i", "i,i")
   resolved against its inputs' shapes: every index letter (and each dim an
   ellipsis stands for) becomes a label with one size; each input's dims and
   the output's are lists of labels. Shared by the shape rule and the cpu
   kernel, which both parse the equation the node keeps. */
#ifndef MPS_EINSUM_H
#define MPS_EINSUM_H

#include <stddef.h>

#include "tensor.h"

#define MPS_EINSUM_MAX_IN 8
#define MPS_EINSUM_MAX_LABELS (52 + MPS_MAX_DIMS) /* a-z, A-Z, then the ellipsis' dims */

struct mps_einsum {
    int n_in, n_labels;
    int ndim[MPS_EINSUM_MAX_IN];
    signed char label[MPS_EINSUM_MAX_IN][MPS_MAX_DIMS]; /* input k's dim d is label[k][d] */
    int out_ndim;
    signed char out[MPS_MAX_DIMS];
    int64_t size[MPS_EINSUM_MAX_LABELS]; /* each label's size (1 where every dim of it is 1) */
    bool in_out[MPS_EINSUM_MAX_LABELS];  /* the label is one of the output's */
};

/* Parses eq for n_in inputs of shapes in[]. Without "->" the output is the
   ellipsis' dims then the letters used once, in alphabetical order (numpy's
   rule). A letter's dims must agree; the ellipsis' dims broadcast. false
   with the reason in why. */
bool mps_einsum_parse(const char *eq, int n_in, const struct mps_shape *const *in, struct mps_einsum *e, char *why,
                      size_t size);

#endif
