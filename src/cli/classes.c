/* classes.c: reading a model's first output as classes: whether it is
   [batch, K, 1...], whether it holds logits, probabilities or log
   probabilities (the metadata, else the op that ends the model, else the
   values), the probabilities of an item and its top classes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"

/* Classes per item of the first output, or 0 when it is not [batch, K, 1...]. */
int64_t mps_infer_class_count(const struct mps_infer_group *g)
{
    const struct mps_tensor *o = &g->out[0];
    if (o->dtype != MPS_F32 || o->shape.ndim < 2 || o->shape.dim[0] != g->items)
        return 0;
    for (int i = 2; i < o->shape.ndim; i++)
        if (o->shape.dim[i] != 1)
            return 0;
    return o->shape.dim[1] > 1 ? o->shape.dim[1] : 0;
}

int64_t mps_infer_graph_classes(const struct mps_graph *g)
{
    const struct mps_value *o = &g->values[g->outputs[0]];
    if (o->dtype != MPS_F32 || o->shape.ndim < 2)
        return 0;
    for (int i = 2; i < o->shape.ndim; i++)
        if (o->shape.dim[i] != 1)
            return 0;
    return o->shape.dim[1] > 1 ? o->shape.dim[1] : 0;
}

/* The op that computes g's first output, through views and with a fused
   activation counted as the op it is: what the model's last layer is. */
static enum mps_op mps_classes_last_op(const struct mps_graph *g)
{
    int v = g->outputs[0];
    while (g->values[v].producer >= 0) {
        const struct mps_node *n = &g->nodes[g->values[v].producer];
        const struct mps_fused_act *act = mps_node_act(n);
        if (act && act->on)
            return act->op;
        if (!mps_op_is_view(n->op))
            return n->op;
        v = n->in[0];
    }
    return MPS_OP_IDENTITY; /* an input or a constant */
}

void mps_infer_classify(struct mps_infer_result *r, const struct mps_infer_group *g)
{
    r->output_kind = NULL;
    int64_t k = r->model->graph->n_inputs == 1 ? mps_infer_graph_classes(r->model->graph) : 0;
    if (k == 0 || (g && mps_infer_class_count(g) != k))
        return;
    const char *said = mps_model_meta(r->model, "output");
    if (said && (!strcmp(said, "probabilities") || !strcmp(said, "log_probabilities") || !strcmp(said, "logits") ||
                 !strcmp(said, "scores"))) {
        r->output_kind = said;
        snprintf(r->kind_why, sizeof r->kind_why, "the model's metadata says so");
        return;
    }
    enum mps_op last = mps_classes_last_op(r->model->graph);
    if (last == MPS_OP_SOFTMAX || last == MPS_OP_LOG_SOFTMAX || mps_op_has(last, MPS_TR_SCORES)) {
        r->output_kind = last == MPS_OP_SOFTMAX ? "probabilities" : last == MPS_OP_LOG_SOFTMAX ? "log_probabilities"
                                                                                             : "scores";
        snprintf(r->kind_why, sizeof r->kind_why, "the model ends in %s", mps_op_name(last));
        return;
    }
    bool prob = g != NULL, logp = g != NULL;
    const float *y = g ? g->out[0].data : NULL;
    for (int64_t b = 0; g && b < g->out[0].shape.dim[0]; b++) {
        double sum = 0, esum = 0;
        for (int64_t c = 0; c < k; c++) {
            double v = y[b * k + c];
            prob = prob && v >= 0 && v <= 1;
            logp = logp && v <= 0;
            sum += v;
            esum += exp(v);
        }
        prob = prob && fabs(sum - 1) < 1e-3;
        logp = logp && fabs(esum - 1) < 1e-3;
    }
    r->output_kind = prob ? "probabilities" : logp ? "log_probabilities" : "logits";
    snprintf(r->kind_why, sizeof r->kind_why, "%s", prob ? "rows sum to 1" : logp ? "exponentials sum to 1"
                                                    : g ? "not probabilities"
                                                        : "no output was computed to say otherwise");
}

void mps_infer_probabilities(const struct mps_infer_result *r, const struct mps_infer_group *g, int64_t item,
                             double *p, int64_t k)
{
    const float *y = (const float *)g->out[0].data + item * k;
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < k; c++)
        mx = y[c] > mx ? y[c] : mx;
    for (int64_t c = 0; c < k; c++) {
        if (!strcmp(r->output_kind, "probabilities") || !strcmp(r->output_kind, "scores"))
            p[c] = y[c];
        else if (!strcmp(r->output_kind, "log_probabilities"))
            p[c] = exp(y[c]);
        else
            sum += p[c] = exp((double)y[c] - mx);
    }
    for (int64_t c = 0; sum > 0 && c < k; c++)
        p[c] /= sum;
}

/* The top n classes of p[k], best first, into idx (ties: lower index first). */
void mps_infer_top(const double *p, int64_t k, int64_t n, int64_t *idx)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t best = -1;
        for (int64_t c = 0; c < k; c++) {
            bool taken = false;
            for (int64_t j = 0; j < i && !taken; j++)
                taken = idx[j] == c;
            if (!taken && (best < 0 || p[c] > p[best]))
                best = c;
        }
        idx[i] = best;
    }
}

/* The classes whose probability is NaN (a NaN output, or softmax of an
   infinite logit): an item with any has no top class. */
int64_t mps_infer_nan_count(const double *p, int64_t k)
{
    int64_t n = 0;
    for (int64_t c = 0; c < k; c++)
        n += isnan(p[c]);
    return n;
}

int64_t mps_infer_top1(const double *p, int64_t k)
{
    int64_t top;
    mps_infer_top(p, k, 1, &top);
    return mps_infer_nan_count(p, k) ? -1 : top;
}

const char *mps_infer_label(const struct mps_infer_result *r, int64_t c)
{
    return c < r->n_labels ? r->labels[c] : "";
}
