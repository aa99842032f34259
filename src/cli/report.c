/* report.c: what infer prints, chunk by chunk as a stream runs: per input
   item the top-k classes with labels and probabilities (softmax applied only
   to logits, and said so; classes.c reads them), or the raw outputs of a
   model that is not a classifier; a file that failed with its reason; then
   timings, counts and checks. Four forms: text for a person, tab-separated lines (--quiet), one
   JSON object (--json, schema_version 1, docs/json.md) whose results are written
   as they come, and a JSON object per line (--jsonl). Nothing is kept from
   chunk to chunk but counts. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "infer.h"
#include "outfile.h"

#define MPS_REPORT_TEXT_VALUES 8 /* raw values the text shows per output */

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

/* "x.npy[2]" for an item of a file of several, else the path. */
static const char *mps_report_name(const struct mps_infer_file *f, int64_t item, char *buf, size_t size)
{
    snprintf(buf, size, f->file_items > 1 ? "%s[%lld]" : "%s", f->path, (long long)item);
    return buf;
}

void mps_infer_picture_path(const struct mps_infer_report *rep, const struct mps_infer_file *f, int64_t item, char *buf,
                            size_t size)
{
    if (!rep->png_folder)
        snprintf(buf, size, "%s", rep->png);
    else if (f->file_items > 1)
        snprintf(buf, size, "%s/%06lld_%lld.png", rep->png, (long long)f->index, (long long)item);
    else
        snprintf(buf, size, "%s/%06lld.png", rep->png, (long long)f->index);
}

/* Why the chunk's item `row` has no picture, or NULL when it has one. */
static const char *mps_report_pic_why(const struct mps_infer_report *rep, int64_t row)
{
    for (int i = 0; i < rep->n_pic_failed; i++)
        if (rep->pic_failed[i].row == row)
            return rep->pic_failed[i].why;
    return NULL;
}

/* Writes s as a field of a tab-separated line: a backslash, tab, newline
   or carriage return written as \\, \t, \n, \r, so that a line always
   splits, and another control character as mps_cli_vis writes it. */
static void mps_report_tsv(const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '\\': fputs("\\\\", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        case '\n': fputs("\\n", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        default: {
            int n = mps_cli_control(s);
            if (n)
                printf(n == 1 ? "\\x%02x" : "\\u%04x", (unsigned char)s[n - 1]);
            else
                putchar(*s);
            s += n ? n - 1 : 0;
        }
        }
}

/* A float for JSON: NaN and infinities, which JSON lacks, as null. */
static void mps_report_json_float(double v)
{
    if (isfinite(v))
        printf("%.9g", v);
    else
        fputs("null", stdout);
}

/* The values of item `item` of output o: first and count. */
static const struct mps_tensor *mps_report_slice(const struct mps_infer_group *g, int o, int64_t item, int64_t *first,
                                                 int64_t *count, struct mps_shape *shape)
{
    const struct mps_tensor *t = &g->out[o];
    int64_t rows = t->shape.ndim ? t->shape.dim[0] : 1, n = mps_shape_numel(&t->shape);
    bool batched = t->shape.ndim > 0 && rows == g->items;
    *count = batched ? n / (rows ? rows : 1) : n;
    *first = batched ? item * *count : 0;
    *shape = t->shape;
    if (batched) { /* the item's own shape, without the batch */
        shape->ndim--;
        memmove(shape->dim, shape->dim + 1, sizeof(int64_t) * (size_t)shape->ndim);
    }
    return t;
}

static double mps_report_value(const struct mps_tensor *t, int64_t i)
{
    return mps_elem_get(t->data, t->dtype, i);
}

/* One result as a JSON object (the --json results[] entry and a --jsonl
   line): the file, the item, the top classes or the error; raw values are
   written by the caller (they can be millions: not through cJSON). */
static cJSON *mps_report_json_item(const struct mps_infer_report *rep, const struct mps_infer_result *r,
                                   const struct mps_infer_file *f, const struct mps_infer_group *g, int64_t item,
                                   int64_t row)
{
    cJSON *res = cJSON_CreateObject();
    cJSON_AddStringToObject(res, "input", f->path);
    cJSON_AddNumberToObject(res, "index", (double)f->index);
    if (f->st) {
        cJSON *e = cJSON_AddObjectToObject(res, "error");
        cJSON_AddStringToObject(e, "message", f->error);
        cJSON_AddNumberToObject(e, "exit_code", mps_cli_exit_code(f->st));
        return res;
    }
    cJSON_AddNumberToObject(res, "item", (double)item);
    cJSON_AddStringToObject(res, "source", f->source);
    cJSON *fed = r->n_fed ? cJSON_AddArrayToObject(res, "inputs") : NULL;
    for (int i = 0; fed && i < r->n_fed; i++) {
        cJSON *one = cJSON_CreateObject();
        cJSON_AddStringToObject(one, "name", r->fed[i].name);
        cJSON_AddStringToObject(one, "file", r->fed[i].path);
        cJSON_AddStringToObject(one, "source", r->fed[i].source);
        cJSON_AddItemToArray(fed, one);
    }
    if (rep->png) {
        const char *why = mps_report_pic_why(rep, row);
        char path[4200];
        mps_infer_picture_path(rep, f, item, path, sizeof path);
        if (why) {
            cJSON_AddNullToObject(res, "picture");
            cJSON_AddStringToObject(res, "picture_error", why);
        } else {
            cJSON_AddStringToObject(res, "picture", path);
        }
    }
    cJSON *top = cJSON_AddArrayToObject(res, "top");
    if (!r->output_kind)
        return res;
    int64_t k = mps_infer_class_count(g), idx[64];
    mps_infer_probabilities(r, g, row, rep->p, k);
    int64_t n = r->top_k < k ? r->top_k : k, n_nan = mps_infer_nan_count(rep->p, k);
    if (n_nan) {
        char why[96];
        snprintf(why, sizeof why, "%lld of %lld class values are NaN", (long long)n_nan, (long long)k);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "error"), "message", why);
        return res;
    }
    mps_infer_top(rep->p, k, n, idx);
    bool scores = !strcmp(r->output_kind, "scores");
    for (int64_t i = 0; i < n; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "index", (double)idx[i]);
        cJSON_AddStringToObject(c, "label", mps_infer_label(r, idx[i]));
        cJSON_AddNumberToObject(c, scores ? "score" : "probability", rep->p[idx[i]]);
        cJSON_AddItemToArray(top, c);
    }
    return res;
}

/* Prints a result object; with raw values (jsonl of a model that is not a
   classifier), each output's name, shape and values are spliced in. */
/* The least, the largest and the mean of values [first, first + count) of
   t, over the ones that are numbers; *nan the others (NaN, infinite). */
static void mps_report_summary(const struct mps_tensor *t, int64_t first, int64_t count, double *lo, double *hi,
                               double *mean, int64_t *nan)
{
    double sum = 0;
    int64_t n = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    *nan = 0;
    for (int64_t i = 0; i < count; i++) {
        double v = mps_report_value(t, first + i);
        if (!isfinite(v)) {
            (*nan)++;
            continue;
        }
        *lo = v < *lo ? v : *lo;
        *hi = v > *hi ? v : *hi;
        sum += v;
        n++;
    }
    *mean = n ? sum / (double)n : NAN;
}

/* Prints a result object; with summary, every output's name, dtype, shape
   (the item's), least, largest and mean value (and how many are not
   numbers) are spliced in, and with values (jsonl of a model that is not a
   classifier) every value too. */
static bool mps_report_json_write(cJSON *res, const struct mps_infer_result *r, const struct mps_infer_group *g,
                                  int64_t row, bool summary, bool values, bool pictured)
{
    char *text = mps_cli_json_text(res, false);
    if (!text)
        return false;
    if (!summary) {
        fputs(text, stdout);
        cJSON_free(text);
        return true;
    }
    text[strlen(text) - 1] = '\0'; /* the closing brace, written after the outputs */
    fputs(text, stdout);
    cJSON_free(text);
    fputs(",\"outputs\":[", stdout);
    for (int o = 0; o < g->n_out; o++) {
        int64_t first, count, nan;
        double lo, hi, mean;
        struct mps_shape shape;
        const struct mps_tensor *t = mps_report_slice(g, o, row, &first, &count, &shape);
        cJSON *name = cJSON_CreateString(r->model->graph->values[r->model->graph->outputs[o]].name);
        char *quoted = name ? mps_cli_json_text(name, false) : NULL;
        printf("%s{\"name\":%s,\"dtype\":\"%s\",\"shape\":[", o ? "," : "", quoted ? quoted : "\"\"",
               mps_dtype_name(r->model->output_dtype[o]));
        cJSON_free(quoted);
        cJSON_Delete(name);
        for (int d = 0; d < shape.ndim; d++)
            printf("%s%lld", d ? "," : "", (long long)shape.dim[d]);
        mps_report_summary(t, first, count, &lo, &hi, &mean, &nan);
        fputs("]", stdout);
        if (nan < count) { /* of the numbers: absent when there are none */
            printf(",\"min\":%.9g,\"max\":%.9g,\"mean\":", lo, hi);
            mps_report_json_float(mean);
        }
        printf(",\"not_finite\":%lld", (long long)nan);
        if (!values || (o == 0 && pictured)) { /* no values, or they are the picture */
            fputs("}", stdout);
            continue;
        }
        fputs(",\"values\":[", stdout);
        for (int64_t i = 0; i < count; i++) {
            if (i)
                putchar(',');
            mps_report_json_float(mps_report_value(t, first + i));
        }
        fputs("]}", stdout);
    }
    fputs("]}", stdout);
    return true;
}

/* Outputs from..n of the item: name, dtype, the item's shape, its first
   values and, past them, the least, largest and mean. */
static void mps_report_text_outputs(const struct mps_infer_result *r, const struct mps_infer_group *g, int64_t row,
                                    int from)
{
    for (int o = from; o < g->n_out; o++) {
        int64_t first, count, nan;
        double lo, hi, mean;
        struct mps_shape shape;
        char a[128];
        const struct mps_tensor *t = mps_report_slice(g, o, row, &first, &count, &shape);
        printf("  output %d  '%s' %s %s:", o, mps_cli_vis(r->model->graph->values[r->model->graph->outputs[o]].name),
               mps_dtype_name(r->model->output_dtype[o]), mps_shape_str(&shape, a, sizeof a));
        for (int64_t i = 0; i < count && i < MPS_REPORT_TEXT_VALUES; i++)
            printf(" %g", mps_report_value(t, first + i));
        if (count <= MPS_REPORT_TEXT_VALUES) {
            printf("\n");
            continue;
        }
        mps_report_summary(t, first, count, &lo, &hi, &mean, &nan);
        printf(" ... (min %g, max %g, mean %g", lo, hi, mean);
        printf(nan ? ", %lld not finite)\n" : ")\n", (long long)nan);
    }
}

static void mps_report_text_item(const struct mps_infer_report *rep, const struct mps_infer_result *r,
                                 const struct mps_infer_file *f, const struct mps_infer_group *g, int64_t item,
                                 int64_t row)
{
    char name[300];
    mps_report_name(f, item, name, sizeof name);
    if (f->st) {
        printf("input      %s  error: %s\n", mps_cli_vis(f->path), mps_cli_vis(f->error));
        return;
    }
    printf("input      %s  %s\n", mps_cli_vis(name), mps_cli_vis(f->source));
    if (rep->png) {
        const char *why = mps_report_pic_why(rep, row);
        char path[4200];
        mps_infer_picture_path(rep, f, item, path, sizeof path);
        printf("  picture   %s%s\n", why ? "none: " : mps_cli_vis(path), why ? mps_cli_vis(why) : "");
    }
    if (!r->output_kind) { /* not a classifier: the first values of each output */
        mps_report_text_outputs(r, g, row, 0);
        return;
    }
    mps_report_text_outputs(r, g, row, 1); /* a classifier's other outputs, after its classes */
    int64_t k = mps_infer_class_count(g), idx[64];
    mps_infer_probabilities(r, g, row, rep->p, k);
    int64_t n = r->top_k < k ? r->top_k : k, n_nan = mps_infer_nan_count(rep->p, k);
    if (n_nan) {
        printf("  top-k     none: %lld of %lld class values are NaN\n", (long long)n_nan, (long long)k);
        return;
    }
    mps_infer_top(rep->p, k, n, idx);
    bool scores = !strcmp(r->output_kind, "scores");
    for (int64_t i = 0; i < n; i++) {
        printf("%s %4lld  %-14s ", i ? "          " : "  top-k   ", (long long)idx[i],
               mps_cli_vis(mps_infer_label(r, idx[i])));
        printf(scores ? "%9.4g\n" : "%8.4f%%\n", scores ? rep->p[idx[i]] : 100.0 * rep->p[idx[i]]);
    }
}

/* --quiet: "PATH<tab>ITEM<tab>CLASS<tab>LABEL<tab>VALUE" (class "-" and value
   nan when NaN), or for a model that is not a classifier PATH, ITEM and the
   first output's values; a failed file prints nothing here (its error goes to stderr). */
static void mps_report_quiet_item(const struct mps_infer_report *rep, const struct mps_infer_result *r,
                                  const struct mps_infer_file *f, const struct mps_infer_group *g, int64_t item,
                                  int64_t row)
{
    if (f->st)
        return;
    mps_report_tsv(f->path);
    printf("\t%lld", (long long)item);
    if (!r->output_kind && rep->png) { /* the picture written, not its millions of values */
        char path[4200];
        mps_infer_picture_path(rep, f, item, path, sizeof path);
        putchar('\t');
        mps_report_tsv(mps_report_pic_why(rep, row) ? "-" : path);
        putchar('\n');
        return;
    }
    if (!r->output_kind) {
        int64_t first, count;
        struct mps_shape shape;
        const struct mps_tensor *t = mps_report_slice(g, 0, row, &first, &count, &shape);
        for (int64_t i = 0; i < count; i++)
            printf("\t%.9g", mps_report_value(t, first + i));
        putchar('\n');
        return;
    }
    int64_t k = mps_infer_class_count(g);
    mps_infer_probabilities(r, g, row, rep->p, k);
    int64_t top = mps_infer_top1(rep->p, k);
    if (top < 0) {
        fputs("\t-\t\tnan\n", stdout);
        return;
    }
    printf("\t%lld\t", (long long)top);
    mps_report_tsv(mps_infer_label(r, top));
    printf("\t%.6g\n", rep->p[top]);
}

/* A quantized model's int8 products that run on int8 kernels on the
   backend compiled for (the quantization pass made them), or -1 where the
   model holds no quantization (its QDQ or QLinear compositions then run in
   f32 on a backend without int8 kernels: dequantized, and said so). */
static int mps_report_int8(const struct mps_infer_result *r)
{
    const struct mps_graph *g = r->model->graph;
    int n = 0;
    for (int k = 0; k < g->n_nodes; k++)
        n += g->nodes[k].op == MPS_OP_QLINEAR_CONV || g->nodes[k].op == MPS_OP_QLINEAR_MATMUL;
    return g->n_qnotes || n ? n : -1;
}

void mps_infer_text_head(const struct mps_infer_result *r)
{
    char q[96] = "";
    int int8 = r->backend ? mps_report_int8(r) : -1;
    if (int8 > 0)
        snprintf(q, sizeof q, "; int8, %d product%s on int8 kernels", int8, int8 == 1 ? "" : "s");
    else if (int8 == 0)
        snprintf(q, sizeof q, "; int8, dequantized: computed in f32 (%s has no int8 kernels)", r->backend->name);
    printf("model      %s (opset %lld%s%s%s%s)\n", mps_cli_vis(r->model->path), (long long)r->model->opset,
           r->model->producer[0] ? ", " : "", mps_cli_vis(r->model->producer),
           r->model->n_widened ? "; f16, computed in f32" : "", q);
    if (r->backend)
        printf("backend    %s: %s; %s\n", r->backend->name, r->device.device, r->why_backend);
}

cJSON *mps_infer_json_head(const struct mps_infer_result *r)
{
    cJSON *root = cJSON_CreateObject(), *j;
    cJSON_AddNumberToObject(root, "schema_version", 1);
    j = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(j, "path", r->model->path);
    cJSON_AddNumberToObject(j, "opset", (double)r->model->opset);
    cJSON_AddNumberToObject(j, "ir_version", (double)r->model->ir_version);
    cJSON_AddStringToObject(j, "producer", r->model->producer);
    if (r->model->n_widened) { /* model.h: f16 is stored, not computed */
        cJSON_AddStringToObject(j, "storage", "f16");
        cJSON_AddStringToObject(j, "compute", "f32");
    }
    int int8 = r->backend ? mps_report_int8(r) : -1;
    if (int8 >= 0) { /* quantized: the products on int8 kernels, or none (dequantized, f32) */
        cJSON_AddStringToObject(j, "quantized", "int8");
        cJSON_AddNumberToObject(j, "int8_products", int8);
        if (!int8 && !r->model->n_widened) /* an f16 model said so above */
            cJSON_AddStringToObject(j, "compute", "f32");
    }
    if (r->backend) {
        j = cJSON_AddObjectToObject(root, "backend");
        cJSON_AddStringToObject(j, "name", r->backend->name);
        cJSON_AddStringToObject(j, "device", r->device.device);
        cJSON_AddStringToObject(j, "reason", r->why_backend);
        cJSON_AddStringToObject(j, "precision", r->precision);
    }
    return root;
}

void mps_infer_json_stream_timings(struct cJSON *root, const struct mps_infer_result *r)
{
    cJSON *j = cJSON_AddObjectToObject(root, "timings_ms");
    cJSON_AddNumberToObject(j, "load", r->t_load);
    cJSON_AddNumberToObject(j, "compile", r->t_compile);
    cJSON_AddNumberToObject(j, "decode", r->t_preprocess);
    cJSON_AddNumberToObject(j, "runs", r->t_run);
    cJSON_AddNumberToObject(j, "total", r->t_total);
}

/* The head of the text report and of --json: what ran, how; g the first run (NULL: none ran). */
static bool mps_report_head(struct mps_infer_report *rep, const struct mps_infer_result *r,
                            const struct mps_infer_group *g)
{
    char a[128], b[32];
    rep->head = true;
    if (rep->form == MPS_INFER_TEXT) {
        mps_infer_text_head(r);
        char kind[160];
        if (r->output_kind && g) {
            mps_report_kind_text(r, kind, sizeof kind);
            printf("output     '%s' %s: %s\n", mps_cli_vis(r->model->graph->values[r->model->graph->outputs[0]].name),
                   mps_shape_str(&g->out[0].shape, a, sizeof a), kind);
        }
        if (rep->shard)
            printf("inputs     %s\n", rep->shard);
        for (int i = 0; i < r->n_fed; i++) /* a run fed by file: each input's */
            printf("%-10s %s  %s  %s\n", i ? "" : "inputs", mps_cli_vis(r->fed[i].name), mps_cli_vis(r->fed[i].path),
                   r->fed[i].source);
        if (r->n_fed)
            ;
        else if (!rep->stream && g)
            printf("batch      %s, one run\n", mps_shape_str(&g->in[0].shape, a, sizeof a));
        else if (g && rep->total < 0)
            printf("batch      %s a run, inputs listed on stdin as they come\n",
                   mps_shape_str(&g->in[0].shape, a, sizeof a));
        else if (g)
            printf("batch      %s a run, %s input%s\n", mps_shape_str(&g->in[0].shape, a, sizeof a),
                   mps_cli_count(rep->total, b, sizeof b), rep->total == 1 ? "" : "s");
        return true;
    }
    cJSON *root = mps_infer_json_head(r);
    cJSON_AddStringToObject(root, "output_kind", r->output_kind ? r->output_kind : "raw");
    if (r->output_kind)
        cJSON_AddStringToObject(root, "output_kind_reason", r->kind_why);
    cJSON *outs = cJSON_AddArrayToObject(root, "outputs");
    for (int o = 0; g && o < g->n_out; o++) {
        cJSON *out = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(out, "shape");
        const struct mps_tensor *t = &g->out[o];
        cJSON_AddStringToObject(out, "name", r->model->graph->values[r->model->graph->outputs[o]].name);
        cJSON_AddStringToObject(out, "dtype", mps_dtype_name(r->model->output_dtype[o]));
        for (int d = 0; d < t->shape.ndim; d++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape.dim[d]));
        cJSON_AddItemToArray(outs, out);
    }
    char *text = mps_cli_json_text(root, false);
    cJSON_Delete(root);
    if (!text)
        return false;
    text[strlen(text) - 1] = '\0'; /* the object goes on with the results */
    printf("%s,\"results\":[", text);
    cJSON_free(text);
    for (cJSON *held = rep->held ? rep->held->child : NULL; held; held = held->next) {
        char *h = mps_cli_json_text(held, false);
        if (!h)
            return false;
        printf("%s\n%s", rep->n_results++ ? "," : "", h);
        cJSON_free(h);
    }
    cJSON_Delete(rep->held);
    rep->held = NULL;
    return true;
}

enum mps_status mps_infer_report_chunk(void *ctx, struct mps_infer_result *r, struct mps_error *err)
{
    struct mps_infer_report *rep = ctx;
    const struct mps_infer_group *g = r->n_groups ? &r->groups[0] : NULL;
    if (!rep->classified && g) {
        mps_infer_classify(r, g);
        rep->classified = true;
    }
    if (!rep->p && !(rep->p = malloc(sizeof(double) * (size_t)(mps_infer_graph_classes(r->model->graph) + 1))))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    bool json = rep->form == MPS_INFER_JSON || rep->form == MPS_INFER_JSONL;
    if (g && !rep->head && (rep->form == MPS_INFER_TEXT || rep->form == MPS_INFER_JSON) && !mps_report_head(rep, r, g))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    int64_t row = 0;
    for (int fi = 0; fi < r->n_files; fi++) {
        const struct mps_infer_file *f = &r->files[fi];
        if (f->st && rep->keep_going) /* said at once on stderr; the run goes on */
            mps_cli_error(f->path, "%s", f->error);
        for (int64_t it = 0; rep->keep_going && !f->st && it < f->items; it++) {
            const char *why = mps_report_pic_why(rep, row + it);
            char name[300];
            if (why)
                mps_cli_error(mps_report_name(f, f->item0 + it, name, sizeof name), "%s", why);
        }
        if (f->st && !json)
            continue; /* text and TSV: stderr says it (without keep_going, the stream's last word) */
        for (int64_t it = 0; it < (f->st ? 1 : f->items); it++, row += !f->st) {
            int64_t item = f->item0 + it;
            if (!json) {
                if (rep->form == MPS_INFER_TEXT)
                    mps_report_text_item(rep, r, f, g, item, row);
                else
                    mps_report_quiet_item(rep, r, f, g, item, row);
                continue;
            }
            cJSON *res = mps_report_json_item(rep, r, f, g, item, row);
            if (!res)
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
            if (rep->form == MPS_INFER_JSON && !rep->head) { /* a failed file before anything ran */
                if (!rep->held && !(rep->held = cJSON_CreateArray())) {
                    cJSON_Delete(res);
                    return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
                }
                cJSON_AddItemToArray(rep->held, res);
                continue;
            }
            if (rep->form == MPS_INFER_JSON)
                printf("%s\n", rep->n_results++ ? "," : "");
            bool values = rep->form == MPS_INFER_JSONL && !r->output_kind && !f->st;
            bool ok = mps_report_json_write(res, r, g, row, !f->st && g, values, rep->png != NULL);
            cJSON_Delete(res);
            if (!ok)
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
            if (rep->form == MPS_INFER_JSONL)
                putchar('\n');
        }
    }
    /* a chunk's results reach a pipe as soon as they are known; a reader that is gone ends the run (where
       SIGPIPE is ignored: else the signal does) */
    if (fflush(stdout) != 0 || ferror(stdout))
        return mps_fail(err, MPS_ERR_RUNTIME, "cannot write the report to stdout: %s", strerror(errno));
    return MPS_OK;
}

/* The text report's lines on what was written: --output, the pictures. */
static void mps_report_written_text(const struct mps_infer_report *rep, const struct mps_infer_result *r)
{
    char a[32], b[32];
    if (rep->output_path && !rep->output_written)
        printf("output     %s: not written (not every input ran; a file there is as it was)\n",
               mps_cli_vis(rep->output_path));
    else if (rep->output_path && rep->output_nan)
        printf("output     %s: %s rows, %s of NaN for inputs that failed (the first: row %lld)\n",
               mps_cli_vis(rep->output_path), mps_cli_count(rep->output_rows, a, sizeof a),
               mps_cli_count(rep->output_nan, b, sizeof b), (long long)rep->first_nan);
    else if (rep->output_path)
        printf("output     %s: %s rows\n", mps_cli_vis(rep->output_path), mps_cli_count(rep->output_rows, a, sizeof a));
    if (rep->outputs_path && rep->outputs_npz)
        printf("outputs    %s: %d array%s by name\n", mps_cli_vis(rep->outputs_path), rep->outputs_written,
               rep->outputs_written == 1 ? "" : "s");
    else if (rep->outputs_path) {
        printf("outputs    %s:", mps_cli_vis(rep->outputs_path));
        for (int i = 0; i < rep->outputs_written; i++)
            printf("%s %s.npy", i ? "," : "", mps_cli_vis(rep->outputs_file[i]));
        printf("%s\n", rep->outputs_written ? "" : " none written");
    }
    if (!rep->png)
        return;
    const struct mps_value *o = &r->model->graph->values[r->model->graph->outputs[0]];
    int64_t c = o->shape.ndim == 4 ? o->shape.dim[1] : 1;
    bool mask = o->dtype != MPS_F32 || (c != 1 && c != 3) || rep->png_mask;
    char kind[96];
    if (!mask)
        snprintf(kind, sizeof kind, "%s images, [0, 1] as 0 to 255", c == 3 ? "RGB" : "gray");
    else if (o->dtype == MPS_F32)
        snprintf(kind, sizeof kind, "class masks (the largest of %lld scores a pixel), VOC palette", (long long)c);
    else
        snprintf(kind, sizeof kind, "class masks (the output's classes), VOC palette");
    printf("pictures   %s PNG file%s %s %s: %s\n", mps_cli_count(rep->png_written, a, sizeof a),
           rep->png_written == 1 ? "" : "s", rep->png_folder ? "in" : "as", mps_cli_vis(rep->png), kind);
}

bool mps_infer_report_end(struct mps_infer_report *rep, struct mps_infer_result *r)
{
    char a[32], b[32], c[32];
    if (!rep->classified)
        mps_infer_classify(r, NULL);
    if (!rep->head && (rep->form == MPS_INFER_TEXT || rep->form == MPS_INFER_JSON) && !mps_report_head(rep, r, NULL))
        return false;
    double rate = r->t_total > 0 ? (double)(r->n_items) * 1e3 / r->t_total : 0;
    if (rep->form == MPS_INFER_TEXT) {
        if (r->n_png) { /* how PNGs became tensors; .npy inputs go in as they are */
            printf("images     %dx%lldx%lld, mean", r->prep.channels, (long long)r->prep.height,
                   (long long)r->prep.width);
            for (int ch = 0; ch < r->prep.channels; ch++)
                printf("%s%g", ch ? "," : " ", r->prep.mean[ch]);
            printf(" std");
            for (int ch = 0; ch < r->prep.channels; ch++)
                printf("%s%g", ch ? "," : " ", r->prep.std[ch]);
            printf(" (%s)\n", r->prep.norm_from);
        }
        if (rep->stream) {
            printf("timings    load %.2f ms, compile %.2f ms, decode %.2f ms (beside the runs), runs %.2f ms\n",
                   r->t_load, r->t_compile, r->t_preprocess, r->t_run);
            printf("           %s items in %.3f s: %s items/s\n", mps_cli_count(r->n_items, a, sizeof a),
                   r->t_total / 1e3, mps_cli_count((int64_t)(rate + 0.5), b, sizeof b));
        } else {
            printf("timings    load %.2f ms, compile %.2f ms, preprocess %.2f ms, first run %.3f ms\n", r->t_load,
                   r->t_compile, r->t_preprocess, r->t_first);
        }
        if (r->n_runs > 0) {
            double p50, p10, p90;
            mps_report_stats(r, &p50, &p10, &p90);
            printf("           %d runs: median %.3f ms, p10 %.3f ms, p90 %.3f ms\n", r->n_runs, p50, p10, p90);
        }
        const char *so_far = rep->listed_all ? "" : " listed so far (stdin was not read to its end)";
        if ((r->stopped && rep->stream) || r->interrupted) /* one input that failed: stderr says it */
            printf("%s %s: %s of %s inputs%s not run\n", r->stopped ? "stopped   " : "interrupted",
                   r->stopped ? "at an input that failed (named on stderr)" : mps_out_signal_name(r->interrupted),
                   mps_cli_count(rep->total - r->n_done, a, sizeof a), mps_cli_count(rep->total, c, sizeof c), so_far);
        if (r->n_failed && rep->keep_going)
            printf("failed     %s of %s input%s (each named above)\n", mps_cli_count(r->n_failed, a, sizeof a),
                   mps_cli_count(rep->total, c, sizeof c), rep->total == 1 ? "" : "s");
        if (r->expect)
            printf("expect     %s: %s\n", mps_cli_vis(r->expect),
                   r->stopped || r->interrupted ? "not judged: not every input ran"
                   : r->expect_ok               ? "passed"
                                                : "FAILED");
        if (r->check_path)
            printf("check      %s: %s%s%s%s\n", mps_cli_vis(r->check_path),
                   r->stopped || r->interrupted ? "not judged: not every input ran"
                   : r->check_ok                ? "passed"
                                                : "FAILED",
                   r->check_detail[0] ? " (" : "", r->check_detail, r->check_detail[0] ? ")" : "");
        mps_report_written_text(rep, r);
        return true;
    }
    if (rep->form != MPS_INFER_JSON)
        return true;
    cJSON *root = cJSON_CreateObject(), *j;
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
    cJSON_AddNumberToObject(j, "all_runs", r->t_run);
    cJSON_AddNumberToObject(j, "total", r->t_total);
    j = cJSON_AddObjectToObject(root, "inputs");
    cJSON_AddNumberToObject(j, "files", (double)rep->total);
    cJSON_AddNumberToObject(j, "items", (double)r->n_items);
    cJSON_AddNumberToObject(j, "failed", (double)r->n_failed);
    if (rep->listed_all)
        cJSON_AddNumberToObject(j, "not_run", (double)(rep->total - r->n_done));
    else
        cJSON_AddNullToObject(j, "not_run"); /* stdin was not read to its end */
    cJSON_AddNumberToObject(j, "items_per_s", rate);
    if (rep->shard)
        cJSON_AddStringToObject(j, "shard", rep->shard);
    if (r->interrupted)
        cJSON_AddStringToObject(j, "interrupted", mps_out_signal_name(r->interrupted));
    if (rep->output_path || rep->png || rep->outputs_path) {
        j = cJSON_AddObjectToObject(root, "written");
        if (rep->outputs_path) {
            cJSON *o = cJSON_AddObjectToObject(j, "outputs");
            cJSON_AddStringToObject(o, rep->outputs_npz ? "file" : "folder", rep->outputs_path);
            cJSON *files = rep->outputs_npz ? NULL : cJSON_AddArrayToObject(o, "files");
            for (int i = 0; files && i < rep->outputs_written; i++) {
                char f[270];
                snprintf(f, sizeof f, "%s.npy", rep->outputs_file[i]);
                cJSON_AddItemToArray(files, cJSON_CreateString(f));
            }
            cJSON_AddNumberToObject(o, "arrays", rep->outputs_written);
        }
        if (rep->output_path) {
            cJSON *o = cJSON_AddObjectToObject(j, "output");
            cJSON_AddStringToObject(o, "file", rep->output_path);
            cJSON_AddBoolToObject(o, "written", rep->output_written);
            cJSON_AddNumberToObject(o, "rows", (double)rep->output_rows);
            cJSON_AddNumberToObject(o, "nan_rows", (double)rep->output_nan);
        }
        if (rep->png) {
            cJSON *o = cJSON_AddObjectToObject(j, "pictures");
            cJSON_AddStringToObject(o, "path", rep->png);
            cJSON_AddNumberToObject(o, "files", (double)rep->png_written);
        }
    }
    if (r->expect || r->check_path) {
        j = cJSON_AddObjectToObject(root, "checks");
        if (r->expect) {
            cJSON *e = cJSON_AddObjectToObject(j, "expect");
            cJSON_AddStringToObject(e, "class", r->expect);
            cJSON_AddBoolToObject(e, "passed", r->expect_ok);
            cJSON_AddBoolToObject(e, "judged", !r->stopped && !r->interrupted);
        }
        if (r->check_path) {
            cJSON *ck = cJSON_AddObjectToObject(j, "check");
            cJSON_AddStringToObject(ck, "file", r->check_path);
            cJSON_AddBoolToObject(ck, "passed", r->check_ok);
            cJSON_AddBoolToObject(ck, "judged", !r->stopped && !r->interrupted);
            cJSON_AddStringToObject(ck, "detail", r->check_detail);
            cJSON_AddNumberToObject(ck, "rtol", r->tol.rtol);
            cJSON_AddNumberToObject(ck, "atol", r->tol.atol);
            cJSON_AddBoolToObject(ck, "logarithms", r->tol.log);
            if (r->compared) { /* cJSON writes an infinite error (a NaN mismatch) as null */
                cJSON_AddNumberToObject(ck, "scale", r->check.scale);
                cJSON_AddNumberToObject(ck, "worst_element", (double)r->check.worst);
                cJSON_AddNumberToObject(ck, "max_abs_err", r->check.abs_err);
                cJSON_AddNumberToObject(ck, "max_rel_err", r->check.rel_err);
                cJSON_AddNumberToObject(ck, "elements_outside", (double)r->check.n_bad);
            }
        }
    }
    char *text = mps_cli_json_text(root, false);
    cJSON_Delete(root);
    if (!text)
        return false;
    printf("\n],%s\n", text + 1); /* the results' array closed, the rest of the object after them */
    cJSON_free(text);
    return true;
}

void mps_infer_report_free(struct mps_infer_report *rep)
{
    free(rep->pic_failed);
    rep->pic_failed = NULL;
    cJSON_Delete(rep->held);
    free(rep->p);
    rep->held = NULL;
    rep->p = NULL;
}
