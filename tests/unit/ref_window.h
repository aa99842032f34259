/* ref_window.h: what ref.c shares with ref_window.c, ref_seq.c and ref_select.c: index
   helpers, the sliding-window ops (ref_window.c), the recurrent nets and
   the losses (ref_seq.c), called from ref_op. Test code only. */
#ifndef MPS_TEST_REF_WINDOW_H
#define MPS_TEST_REF_WINDOW_H

#include "ref.h"

/* Row-major index <-> flat offset in shape s. */
void ref_unravel(const struct mps_shape *s, int64_t flat, int64_t *idx);
int64_t ref_ravel(const struct mps_shape *s, const int64_t *idx);

/* out[0] of each op from in[0..n_in), the parameters as the test gave them. */
void ref_conv(const struct mps_conv_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out);
void ref_conv_transpose(const struct mps_conv_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out);
/* MaxPool's second output (the flat argmax) where n_out is 2. */
void ref_pool(enum mps_op op, const struct mps_pool_params *p, const struct ref_tensor *in, struct ref_tensor *out,
              int n_out);
/* GridSample, from the spec's reference: each output pixel's taps read with the padding rule. */
void ref_gridsample(const struct mps_gridsample_params *p, const struct ref_tensor *in, struct ref_tensor *out);
/* MaxUnpool: X at I's places, I unravelled in the window's shape and ravelled in the output's. */
void ref_unpool(const struct mps_pool_params *p, const struct ref_tensor *in, struct ref_tensor *out);
/* RoiAlign by Caffe2's and onnxruntime's rule (op.h). */
void ref_roialign(const struct mps_roialign_params *p, const struct ref_tensor *in, struct ref_tensor *out);
/* GlobalLpPool's p is lp. */
void ref_global_pool(enum mps_op op, double lp, const struct ref_tensor *in, struct ref_tensor *out);

/* RNN, GRU, LSTM: every output (op.h has their inputs). */
void ref_rnn(enum mps_op op, const struct mps_rnn_params *p, const struct ref_tensor *in, int n_in,
             struct ref_tensor *out);
/* ref_select.c: Compress and NonZero, NonMaxSuppression, Unique: each sets the sizes it computes. */
void ref_select(enum mps_op op, const struct mps_compress_params *p, const struct ref_tensor *in,
                struct ref_tensor *out);
/* ref_quant.c */
void ref_qlinear(enum mps_op op, const union mps_op_params *p, const struct ref_tensor *in, int n_in,
                 struct ref_tensor *out);
void ref_qcast(enum mps_op op, int64_t axis, const struct ref_tensor *in, int n_in, struct ref_tensor *out);
/* QLinearAdd and QLinearConcat: the parts dequantized, added or concatenated, quantized */
void ref_qelementwise(enum mps_op op, const union mps_op_params *p, const struct ref_tensor *in, int n_in,
                      struct ref_tensor *out);
void ref_nms(const struct mps_nms_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out);
void ref_unique(const struct mps_unique_params *p, const struct ref_tensor *in, struct ref_tensor *out, int n_out);
/* StringNormalizer: each word and stopword compared letter by letter. */
void ref_strnorm(const struct mps_strnorm_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out);
/* ReverseSequence; Det (by Laplace expansion). */
void ref_revseq(const struct mps_revseq_params *p, const struct ref_tensor *in, struct ref_tensor *out);
/* TfIdfVectorizer, n-gram by n-gram: each of the pool's counted over every start and skip. */
void ref_tfidf(const struct mps_tfidf_params *p, const struct ref_tensor *in, int n_in, struct ref_tensor *out);
void ref_det(const struct ref_tensor *in, struct ref_tensor *out);
/* Einsum of an equation with "->" and letters only. */
void ref_einsum(const char *eq, const struct ref_tensor *in, int n_in, struct ref_tensor *out);
/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (with its log-softmax where n_out is 2). */
void ref_loss(enum mps_op op, const struct mps_loss_params *p, const struct ref_tensor *in, int n_in,
              struct ref_tensor *out, int n_out);

#endif
