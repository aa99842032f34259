/* loss.c: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on the CPU
   (op.h has their rule). Scores [N, C, inner] are walked as N * inner lanes
   of C classes at stride inner; SoftmaxCrossEntropyLoss takes each lane's
   log-softmax first (written out when its second output is asked for). The
   sums of a reduction are kept in double. */
#include <math.h>

#include "kernels.h"

/* The log-softmax of the lane of len at stride st from x into y (y may be
   NULL: only the target's entry t is wanted, and returned). */
static double mps_loss_log_softmax(const float *x, int64_t len, int64_t st, float *y, int64_t t)
{
    float mx;
    double lsum = mps_cpu_lane_shift(x, len, st, &mx);
    if (y)
        for (int64_t c = 0; c < len; c++)
            y[c * st] = (float)((double)x[c * st] - mx - lsum);
    return t >= 0 ? (double)x[t * st] - mx - lsum : 0;
}

enum mps_status mps_cpu_loss(const struct mps_cpu_args *a, struct mps_error *err)
{
    const struct mps_loss_params *p = &a->node->p.loss;
    const struct mps_tensor *x = &a->in[0], *t = &a->in[1];
    const float *w = a->in[2].data, *xs = x->data;
    bool softmax = a->node->op == MPS_OP_SCE_LOSS;
    float *y = a->out[0].data, *logp = a->node->n_out > 1 ? a->out[1].data : NULL;
    int64_t n = x->shape.dim[0], classes = x->shape.dim[1], inner = mps_shape_numel(&x->shape) / (n * classes);
    double sum = 0, weights = 0;
    if (n * classes == 0)
        inner = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t l = i * inner + k, at = i * classes * inner + k;
            int64_t c = t->dtype == MPS_I64 ? ((const int64_t *)t->data)[l] : ((const int32_t *)t->data)[l];
            bool ignored = p->has_ignore && c == p->ignore_index;
            if (!ignored && (c < 0 || c >= classes))
                return mps_fail(err, MPS_ERR_INPUT, "node '%s' (%s): target %lld is outside the %lld classes",
                                a->node->name, mps_op_name(a->node->op), (long long)c, (long long)classes);
            double lp = softmax ? mps_loss_log_softmax(xs + at, classes, inner, logp ? logp + at : NULL,
                                                       ignored ? -1 : c)
                        : ignored ? 0
                                  : xs[at + c * inner];
            double wt = ignored ? 0 : w ? w[c] : 1;
            double loss = -wt * lp;
            if (p->reduction == MPS_LOSS_NONE)
                y[l] = (float)(ignored ? 0 : loss);
            sum += ignored ? 0 : loss;
            weights += wt;
        }
    if (p->reduction != MPS_LOSS_NONE)
        y[0] = (float)(p->reduction == MPS_LOSS_SUM ? sum : sum / weights);
    return MPS_OK;
}
