/* report.c: what infer prints: per input the top-k classes with labels and
   probabilities (softmax applied only to logits, and said so), or the raw
   outputs of a model that is not a classifier; timings; checks. Text for a
   person, one JSON object (schema_version 1, README) for scripts. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "infer.h"

/* Classes per item of the first output, or 0 when it is not [batch, K, 1...]. */
static int64_t mps_report_classes(const struct mps_infer_group *g)
{
    const struct mps_tensor *o = &g->out[0];
    if (o->dtype != MPS_F32 || o->shape.ndim < 2 || o->shape.dim[0] != g->in[0].shape.dim[0])
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
static enum mps_op mps_report_last_op(const struct mps_graph *g)
{
    int v = g->outputs[0];
    while (g->values[v].producer >= 0) {
        const struct mps_node *n = &g->nodes[g->values[v].producer];
        const struct mps_fused_act *act = mps_node_act(n);
        if (act && act->on)
            return act->op;
        switch (n->op) {
        case MPS_OP_RESHAPE:
        case MPS_OP_FLATTEN:
        case MPS_OP_SQUEEZE:
        case MPS_OP_UNSQUEEZE:
        case MPS_OP_IDENTITY:
        case MPS_OP_DROPOUT: v = n->in[0]; continue;
        default: return n->op;
        }
    }
    return MPS_OP_IDENTITY; /* an input or a constant */
}

/* Whether op, ending a model, gives scores that softmax would misread:
   bounded or one-sided values (a Relu's, a Sigmoid's), not logits. */
static bool mps_report_scores(enum mps_op op)
{
    switch (op) {
    case MPS_OP_RELU:
    case MPS_OP_LEAKY_RELU:
    case MPS_OP_ELU:
    case MPS_OP_SELU:
    case MPS_OP_SIGMOID:
    case MPS_OP_HARD_SIGMOID:
    case MPS_OP_HARD_SWISH:
    case MPS_OP_TANH:
    case MPS_OP_SOFTPLUS:
    case MPS_OP_SOFTSIGN:
    case MPS_OP_GELU:
    case MPS_OP_CLIP:
    case MPS_OP_ABS:
    case MPS_OP_EXP:
    case MPS_OP_SQRT: return true;
    default: return false;
    }
}

void mps_infer_classify(struct mps_infer_result *r)
{
    r->output_kind = NULL;
    if (r->model->graph->n_inputs != 1)
        return;
    int64_t k = mps_report_classes(&r->groups[0]);
    if (k == 0)
        return;
    const char *said = mps_model_meta(r->model, "output");
    if (said && (!strcmp(said, "probabilities") || !strcmp(said, "log_probabilities") || !strcmp(said, "logits") ||
                 !strcmp(said, "scores"))) {
        r->output_kind = said;
        snprintf(r->kind_why, sizeof r->kind_why, "the model's metadata says so");
        return;
    }
    enum mps_op last = mps_report_last_op(r->model->graph);
    if (last == MPS_OP_SOFTMAX || last == MPS_OP_LOG_SOFTMAX || mps_report_scores(last)) {
        r->output_kind = last == MPS_OP_SOFTMAX ? "probabilities" : last == MPS_OP_LOG_SOFTMAX ? "log_probabilities"
                                                                                             : "scores";
        snprintf(r->kind_why, sizeof r->kind_why, "the model ends in %s", mps_op_name(last));
        return;
    }
    bool prob = true, logp = true;
    for (int gi = 0; gi < r->n_groups; gi++) {
        const struct mps_infer_group *g = &r->groups[gi];
        const float *y = g->out[0].data;
        for (int64_t b = 0; b < g->out[0].shape.dim[0]; b++) {
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
    }
    r->output_kind = prob ? "probabilities" : logp ? "log_probabilities" : "logits";
    snprintf(r->kind_why, sizeof r->kind_why, "%s", prob ? "rows sum to 1" : logp ? "exponentials sum to 1"
                                                                            : "not probabilities");
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
static void mps_report_top(const double *p, int64_t k, int64_t n, int64_t *idx)
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
static int64_t mps_report_nan(const double *p, int64_t k)
{
    int64_t n = 0;
    for (int64_t c = 0; c < k; c++)
        n += isnan(p[c]);
    return n;
}

/* One batch item: where its output row is and which file it came from. */
struct mps_report_item {
    const struct mps_infer_group *g;
    int file;
    int64_t row;     /* in the group's output */
    int64_t in_file; /* its index within its file */
};

/* Every item of every file, in file order; free() the list. */
static struct mps_report_item *mps_report_items(const struct mps_infer_result *r, int64_t *n)
{
    int64_t total = 0;
    for (int f = 0; f < r->n_files; f++)
        total += r->files[f].items;
    struct mps_report_item *list = malloc(sizeof *list * (size_t)(total + 1));
    *n = 0;
    for (int gi = 0; list && gi < r->n_groups; gi++) {
        const struct mps_infer_group *g = &r->groups[gi];
        int64_t row = 0;
        for (int f = g->first_file; f < g->first_file + g->n_files; f++)
            for (int64_t i = 0; i < r->files[f].items; i++)
                list[(*n)++] = (struct mps_report_item){g, f, row++, i};
    }
    return list;
}

void mps_infer_top1(const struct mps_infer_result *r, int64_t *top1)
{
    int64_t k = mps_report_classes(&r->groups[0]), n;
    double *p = malloc(sizeof(double) * (size_t)(k + 1));
    struct mps_report_item *items = mps_report_items(r, &n);
    for (int64_t i = 0; p && items && i < n; i++) {
        mps_infer_probabilities(r, items[i].g, items[i].row, p, k);
        mps_report_top(p, k, 1, &top1[i]);
        if (mps_report_nan(p, k))
            top1[i] = -1;
    }
    free(items);
    free(p);
}

static const char *mps_report_label(const struct mps_infer_result *r, int64_t c)
{
    return c < r->n_labels ? r->labels[c] : "";
}

/* "logits, softmax applied (the model ends in Gemm)" */
static void mps_report_kind_text(const struct mps_infer_result *r, char *buf, size_t size)
{
    const char *k = r->output_kind;
    snprintf(buf, size, "%s (%s)", !strcmp(k, "probabilities")       ? "probabilities"
                                   : !strcmp(k, "log_probabilities") ? "log-probabilities, exponentiated"
                                   : !strcmp(k, "scores")            ? "scores, ranked as they are"
                                                                     : "logits, softmax applied",
             r->kind_why);
}

static void mps_report_stats(const struct mps_infer_result *r, double *p50, double *p10, double *p90)
{
    double *s = malloc(sizeof(double) * (size_t)(r->n_runs + 1));
    memcpy(s, r->t_runs, sizeof(double) * (size_t)r->n_runs);
    for (int i = 1; i < r->n_runs; i++) /* insertion sort: a few hundred values at most */
        for (int j = i; j > 0 && s[j] < s[j - 1]; j--) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    *p50 = s[r->n_runs / 2];
    *p10 = s[r->n_runs / 10];
    *p90 = s[(r->n_runs * 9) / 10 < r->n_runs ? (r->n_runs * 9) / 10 : r->n_runs - 1];
    free(s);
}

void mps_infer_print_text(const struct mps_infer_result *r, bool quiet)
{
    int64_t k = r->output_kind ? mps_report_classes(&r->groups[0]) : 0;
    double *p = malloc(sizeof(double) * (size_t)(k + 1));
    int64_t idx[64];
    char a[128];
    if (!quiet) {
        printf("model      %s (opset %lld%s%s)\n", r->model->path, (long long)r->model->opset,
               r->model->producer[0] ? ", " : "", r->model->producer);
        printf("backend    %s: %s; %s\n", r->backend->name, r->device.device, r->why_backend);
        char kind[160];
        if (r->output_kind) {
            mps_report_kind_text(r, kind, sizeof kind);
            printf("output     '%s' %s: %s\n", r->model->graph->values[r->model->graph->outputs[0]].name,
                   mps_shape_str(&r->groups[0].out[0].shape, a, sizeof a), kind);
        }
        if (r->n_groups == 1)
            printf("batch      %s, one run\n", mps_shape_str(&r->groups[0].in[0].shape, a, sizeof a));
        else
            printf("batch      %s, one run per input (%d runs)\n", mps_shape_str(&r->groups[0].in[0].shape, a, sizeof a),
                   r->n_groups);
    }
    bool scores = r->output_kind && !strcmp(r->output_kind, "scores");
    int64_t n_items;
    struct mps_report_item *items = mps_report_items(r, &n_items);
    for (int64_t it = 0; items && it < n_items; it++) {
        const struct mps_infer_group *g = items[it].g;
        const struct mps_infer_file *file = &r->files[items[it].file];
        bool many = r->n_files > 1 || file->items > 1;
        char name[300];
        snprintf(name, sizeof name, file->items > 1 ? "%s[%lld]" : "%s", file->path, (long long)items[it].in_file);
        if (!r->output_kind) {
            if (!quiet)
                printf("input      %s  %s\n", name, file->source);
            continue;
        }
        mps_infer_probabilities(r, g, items[it].row, p, k);
        int64_t n = r->top_k < k ? r->top_k : k, n_nan = mps_report_nan(p, k);
        mps_report_top(p, k, quiet ? 1 : n, idx);
        if (n_nan) {
            if (quiet)
                printf("%s%snan\n", many ? name : "", many ? ": " : "");
            else
                printf("input      %s  %s\n  top-k     none: %lld of %lld class values are NaN\n", name, file->source,
                       (long long)n_nan, (long long)k);
            continue;
        }
        if (quiet) {
            printf("%s%s%lld %s %.4f\n", many ? name : "", many ? ": " : "", (long long)idx[0],
                   mps_report_label(r, idx[0]), p[idx[0]]);
            continue;
        }
        printf("input      %s  %s\n", name, file->source);
        for (int64_t i = 0; i < n; i++) {
            printf("%s %4lld  %-14s ", i ? "          " : "  top-k   ", (long long)idx[i], mps_report_label(r, idx[i]));
            printf(scores ? "%9.4g\n" : "%8.4f%%\n", scores ? p[idx[i]] : 100.0 * p[idx[i]]);
        }
    }
    free(items);
    free(p);
    if (quiet)
        return;
    if (!r->output_kind) /* not a classifier: the raw outputs */
        for (int gi = 0; gi < r->n_groups; gi++)
            for (int o = 0; o < r->groups[gi].n_out; o++) {
                const struct mps_tensor *t = &r->groups[gi].out[o];
                int64_t n = mps_shape_numel(&t->shape);
                printf("output %d   %s %s:", o, mps_dtype_name(t->dtype), mps_shape_str(&t->shape, a, sizeof a));
                for (int64_t i = 0; i < n && i < 8; i++)
                    printf(" %g", t->dtype == MPS_F32 ? ((const float *)t->data)[i]
                                  : t->dtype == MPS_I64 ? (double)((const int64_t *)t->data)[i] : 0.0);
                printf("%s\n", n > 8 ? " ..." : "");
            }
    if (r->n_png) { /* how PNGs became tensors; .npy inputs go in as they are */
        printf("images     %dx%lldx%lld, mean", r->prep.channels, (long long)r->prep.height, (long long)r->prep.width);
        for (int c = 0; c < r->prep.channels; c++)
            printf("%s%g", c ? "," : " ", r->prep.mean[c]);
        printf(" std");
        for (int c = 0; c < r->prep.channels; c++)
            printf("%s%g", c ? "," : " ", r->prep.std[c]);
        printf(" (%s)\n", r->prep.norm_from);
    }
    printf("timings    load %.2f ms, compile %.2f ms, preprocess %.2f ms, first run %.3f ms\n", r->t_load,
           r->t_compile, r->t_preprocess, r->t_first);
    if (r->n_runs > 0) {
        double p50, p10, p90;
        mps_report_stats(r, &p50, &p10, &p90);
        printf("           %d runs: median %.3f ms, p10 %.3f ms, p90 %.3f ms\n", r->n_runs, p50, p10, p90);
    }
    if (r->expect)
        printf("expect     %s: %s\n", r->expect, r->expect_ok ? "passed" : "FAILED");
    if (r->check_path)
        printf("check      %s: %s (%s)\n", r->check_path, r->check_ok ? "passed" : "FAILED", r->check_detail);
}

int mps_infer_print_json(const struct mps_infer_result *r)
{
    cJSON *root = cJSON_CreateObject(), *j;
    cJSON_AddNumberToObject(root, "schema_version", 1);
    j = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(j, "path", r->model->path);
    cJSON_AddNumberToObject(j, "opset", (double)r->model->opset);
    cJSON_AddNumberToObject(j, "ir_version", (double)r->model->ir_version);
    cJSON_AddStringToObject(j, "producer", r->model->producer);
    j = cJSON_AddObjectToObject(root, "backend");
    cJSON_AddStringToObject(j, "name", r->backend->name);
    cJSON_AddStringToObject(j, "device", r->device.device);
    cJSON_AddStringToObject(j, "reason", r->why_backend);
    cJSON_AddStringToObject(j, "precision", r->precision);
    cJSON_AddStringToObject(root, "output_kind", r->output_kind ? r->output_kind : "raw");
    if (r->output_kind)
        cJSON_AddStringToObject(root, "output_kind_reason", r->kind_why);
    cJSON *results = cJSON_AddArrayToObject(root, "results");
    int64_t k = r->output_kind ? mps_report_classes(&r->groups[0]) : 0;
    double *p = malloc(sizeof(double) * (size_t)(k + 1));
    int64_t idx[64];
    int64_t n_items;
    struct mps_report_item *items = mps_report_items(r, &n_items);
    for (int64_t it = 0; items && it < n_items; it++) {
        const struct mps_infer_file *file = &r->files[items[it].file];
        cJSON *res = cJSON_CreateObject();
        cJSON_AddStringToObject(res, "input", file->path);
        cJSON_AddNumberToObject(res, "item", (double)items[it].in_file);
        cJSON_AddStringToObject(res, "source", file->source);
        cJSON *top = cJSON_AddArrayToObject(res, "top");
        if (r->output_kind) {
            mps_infer_probabilities(r, items[it].g, items[it].row, p, k);
            int64_t n = r->top_k < k ? r->top_k : k, n_nan = mps_report_nan(p, k);
            mps_report_top(p, k, n, idx);
            if (n_nan) {
                char why[96];
                snprintf(why, sizeof why, "%lld of %lld class values are NaN", (long long)n_nan, (long long)k);
                cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "error"), "message", why);
                n = 0;
            }
            for (int64_t i = 0; i < n; i++) {
                cJSON *c = cJSON_CreateObject();
                cJSON_AddNumberToObject(c, "index", (double)idx[i]);
                cJSON_AddStringToObject(c, "label", mps_report_label(r, idx[i]));
                bool scores = !strcmp(r->output_kind, "scores");
                cJSON_AddNumberToObject(c, scores ? "score" : "probability", p[idx[i]]);
                cJSON_AddItemToArray(top, c);
            }
        }
        cJSON_AddItemToArray(results, res);
    }
    free(items);
    free(p);
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int o = 0; o < r->groups[0].n_out; o++) {
        cJSON *out = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(out, "shape");
        const struct mps_tensor *t = &r->groups[0].out[o];
        cJSON_AddStringToObject(out, "name", r->model->graph->values[r->model->graph->outputs[o]].name);
        cJSON_AddStringToObject(out, "dtype", mps_dtype_name(t->dtype));
        for (int d = 0; d < t->shape.ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape.dim[d]));
        cJSON_AddItemToArray(outs, out);
    }
    j = cJSON_AddObjectToObject(root, "timings_ms");
    cJSON_AddNumberToObject(j, "load", r->t_load);
    cJSON_AddNumberToObject(j, "compile", r->t_compile);
    cJSON_AddNumberToObject(j, "preprocess", r->t_preprocess);
    cJSON_AddNumberToObject(j, "first_run", r->t_first);
    cJSON_AddNumberToObject(j, "runs", r->n_runs);
    if (r->n_runs > 0) {
        double p50, p10, p90;
        mps_report_stats(r, &p50, &p10, &p90);
        cJSON_AddNumberToObject(j, "median", p50);
        cJSON_AddNumberToObject(j, "p10", p10);
        cJSON_AddNumberToObject(j, "p90", p90);
    }
    if (r->expect || r->check_path) {
        j = cJSON_AddObjectToObject(root, "checks");
        if (r->expect) {
            cJSON *e = cJSON_AddObjectToObject(j, "expect");
            cJSON_AddStringToObject(e, "class", r->expect);
            cJSON_AddBoolToObject(e, "passed", r->expect_ok);
        }
        if (r->check_path) {
            cJSON *c = cJSON_AddObjectToObject(j, "check");
            cJSON_AddStringToObject(c, "file", r->check_path);
            cJSON_AddBoolToObject(c, "passed", r->check_ok);
            cJSON_AddStringToObject(c, "detail", r->check_detail);
            cJSON_AddNumberToObject(c, "rtol", r->tol.rtol);
            cJSON_AddNumberToObject(c, "atol", r->tol.atol);
            cJSON_AddBoolToObject(c, "logarithms", r->tol.log);
            if (r->compared) { /* cJSON writes an infinite error (a NaN mismatch) as null */
                cJSON_AddNumberToObject(c, "scale", r->check.scale);
                cJSON_AddNumberToObject(c, "worst_element", (double)r->check.worst);
                cJSON_AddNumberToObject(c, "max_abs_err", r->check.abs_err);
                cJSON_AddNumberToObject(c, "max_rel_err", r->check.rel_err);
                cJSON_AddNumberToObject(c, "elements_outside", (double)r->check.n_bad);
            }
        }
    }
    bool printed = mps_cli_json_print(root);
    cJSON_Delete(root);
    return printed ? MPS_EXIT_OK : MPS_EXIT_RUNTIME;
}
