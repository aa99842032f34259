/* quantize.c: `mpsrun quantize MODEL CALIB... -o OUT.onnx`: static
   quantization. The float model runs over the calibration inputs (as infer
   streams them: PNGs with --mean, --std, --size, or .npy files), with the
   tensors around each Conv, MatMul and Gemm, and each Mul of two tensors
   and GlobalAveragePool, made outputs too (mps_qdq_points); each one's range is the minimum and maximum it took
   (minmax) or the 0.01 and 99.99 percentiles of its values (percentile,
   from a histogram of 2,048 bins over the first chunk's range, grown by
   doubling). Then the model is written in the QDQ form (mps_qdq_write),
   which mpsrun and onnxruntime both run. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "infer.h"
#include "inputs.h"
#include "outfile.h"
#include "stream.h"

#define MPS_QUANT_BINS 2048

struct mps_quant_point {
    float lo, hi;    /* seen so far */
    double hlo, hhi; /* the histogram's range (percentile) */
    int64_t bins[MPS_QUANT_BINS];
    int64_t count;
};

struct mps_quant {
    struct mps_quant_point *p;
    int n, first; /* points, and the graph output that is the first of them */
    bool percentile;
};

/* Widens p's histogram to hold [lo, hi] by doubling its range, merging bins. */
static void mps_quant_grow(struct mps_quant_point *p, double lo, double hi)
{
    while (lo < p->hlo || hi > p->hhi) {
        double w = p->hhi - p->hlo;
        bool down = lo < p->hlo; /* the new range: [hlo - w, hhi] or [hlo, hhi + w] */
        int64_t merged[MPS_QUANT_BINS] = {0};
        for (int b = 0; b < MPS_QUANT_BINS; b++)
            merged[(down ? MPS_QUANT_BINS : 0) / 2 + b / 2] += p->bins[b];
        memcpy(p->bins, merged, sizeof merged);
        if (down)
            p->hlo -= w;
        else
            p->hhi += w;
    }
}

static void mps_quant_observe(const struct mps_quant *q, struct mps_quant_point *p, const float *x, int64_t n)
{
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]))
            lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
    if (!(lo <= hi))
        return;
    bool first = !p->count;
    p->lo = first || lo < p->lo ? lo : p->lo;
    p->hi = first || hi > p->hi ? hi : p->hi;
    p->count += n;
    if (!q->percentile)
        return;
    if (first)
        p->hlo = lo, p->hhi = hi > lo ? hi : lo + 1e-6;
    mps_quant_grow(p, lo, hi);
    double scale = MPS_QUANT_BINS / (p->hhi - p->hlo);
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]))
            continue;
        int b = (int)((x[i] - p->hlo) * scale);
        p->bins[b < 0 ? 0 : b >= MPS_QUANT_BINS ? MPS_QUANT_BINS - 1 : b]++;
    }
}

/* p's range: what it took, or (percentile) its 0.01 and 99.99 percentiles. */
static void mps_quant_range(const struct mps_quant *q, const struct mps_quant_point *p, float *lo, float *hi)
{
    *lo = p->count ? p->lo : 0, *hi = p->count ? p->hi : 0;
    if (!q->percentile || !p->count)
        return;
    int64_t total = 0, seen = 0, cut = 0;
    for (int b = 0; b < MPS_QUANT_BINS; b++)
        total += p->bins[b];
    cut = total / 10000;
    double w = (p->hhi - p->hlo) / MPS_QUANT_BINS;
    int b0 = 0, b1 = MPS_QUANT_BINS - 1;
    for (seen = 0; b0 < MPS_QUANT_BINS - 1 && seen + p->bins[b0] <= cut; b0++)
        seen += p->bins[b0];
    for (seen = 0; b1 > b0 && seen + p->bins[b1] <= cut; b1--)
        seen += p->bins[b1];
    float plo = (float)(p->hlo + b0 * w), phi = (float)(p->hlo + (b1 + 1) * w);
    *lo = plo > *lo ? plo : *lo, *hi = phi < *hi ? phi : *hi;
}

static enum mps_status mps_quant_chunk(void *ctx, struct mps_infer_result *r, struct mps_error *err)
{
    struct mps_quant *q = ctx;
    (void)err;
    if (!r->n_groups)
        return MPS_OK;
    const struct mps_infer_group *g = &r->groups[0];
    for (int i = 0; i < q->n && q->first + i < g->n_out; i++) {
        const struct mps_tensor *t = &g->out[q->first + i];
        int64_t numel = mps_shape_numel(&t->shape), rows = t->shape.ndim ? t->shape.dim[0] : 1;
        /* the items' rows, where the tensor has them (a batch the model fixes runs padded) */
        int64_t n = rows == g->items || rows <= 0 ? numel : numel / rows * (g->items < rows ? g->items : rows);
        if (t->dtype == MPS_F32 && t->data)
            mps_quant_observe(q, &q->p[i], t->data, n);
    }
    return MPS_OK;
}

/* --json: what was quantized and written, as one object. */
static bool mps_quantize_json(const struct mps_infer_result *r, const struct mps_quant *q, int n_nodes,
                              const struct arg_str *exclude, const char *path, size_t bytes)
{
    cJSON *root = mps_infer_json_head(r), *j;
    if (!root)
        return false;
    cJSON_AddStringToObject(root, "output", path);
    cJSON_AddNumberToObject(root, "bytes", (double)bytes);
    cJSON_AddStringToObject(root, "calibrate", q->percentile ? "percentile" : "minmax");
    cJSON_AddNumberToObject(root, "products", n_nodes);
    cJSON_AddNumberToObject(root, "tensors", q->n);
    cJSON_AddNumberToObject(root, "inputs", (double)r->n_items);
    j = cJSON_AddArrayToObject(root, "excluded");
    for (int i = 0; j && i < exclude->count; i++)
        cJSON_AddItemToArray(j, cJSON_CreateString(exclude->sval[i]));
    mps_infer_json_stream_timings(root, r);
    bool ok = mps_cli_json_print(root);
    cJSON_Delete(root);
    return ok;
}

int mps_cli_quantize(int argc, char **argv)
{
    struct arg_file *model = arg_file1(NULL, NULL, "MODEL", "an ONNX model of float weights");
    struct arg_file *calib = arg_filen(NULL, NULL, "CALIB", 1, 1 << 20,
                                       "calibration inputs: PNG or .npy files, folders of them, @LIST files");
    struct arg_file *out = arg_file1("o", "output", "OUT.onnx", "where the quantized model goes");
    struct arg_str *method = arg_str0(NULL, "calibrate", "minmax|percentile",
                                      "each tensor's range: what it took (default), or its 0.01 and 99.99 "
                                      "percentiles (an outlier then saturates instead of coarsening the rest)");
    struct arg_str *exclude = arg_strn(NULL, "exclude", "NODE", 0, 1 << 16, "a node to keep in float (repeatable)");
    struct mps_infer_args a;
    mps_infer_args_make(&a);
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(20);
    void *argtable[] = {model, calib, out, method, exclude, a.threads, a.batch, a.mean, a.std, a.size, json, help, end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Quantizes MODEL statically: runs it over the calibration inputs (as infer reads\n"
                           "them), takes each Conv's, MatMul's and Gemm's input and output range, and writes\n"
                           "OUT.onnx in the QDQ form: activations uint8 per tensor, weights int8 per output\n"
                           "channel, biases int32. mpsrun runs it on int8 kernels; onnxruntime runs it too.",
                           &done);
    struct mps_infer_result r = {.top_k = 0};
    struct mps_inputs list = {0};
    struct mps_error err = {{0}};
    struct mps_compile_opts co = {0};
    struct mps_quant q = {0};
    const char **names = NULL;
    float *lo = NULL, *hi = NULL;
    unsigned char *buf = NULL;
    size_t len = 0;
    const char *subject = NULL;
    int n_batch, n_nodes = 0;
    enum mps_status st = MPS_OK;
    if (done)
        goto out;
    q.percentile = method->count && !strcmp(method->sval[0], "percentile");
    if (method->count && !q.percentile && strcmp(method->sval[0], "minmax")) {
        st = mps_fail(&err, MPS_ERR_USAGE, "--calibrate %s: minmax or percentile", method->sval[0]);
        goto out;
    }
    if ((st = mps_infer_args_check(&a, &r, &co, &n_batch, &err)))
        goto out;
    subject = model->filename[0];
    if ((st = mps_onnx_open(model->filename[0], &r.file, &err)) ||
        (st = mps_qdq_points(r.file, exclude->sval, exclude->count, &names, &q.n, &n_nodes, &err))) {
        subject = st == MPS_ERR_USAGE ? NULL : subject; /* the message names the option */
        goto out;
    }
    if (!(q.p = calloc((size_t)q.n, sizeof *q.p)) || !(lo = malloc(sizeof *lo * (size_t)q.n)) ||
        !(hi = malloc(sizeof *hi * (size_t)q.n))) {
        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
        goto out;
    }
    if ((st = mps_qdq_observe(r.file, names, q.n, &err)) ||
        (st = mps_infer_setup(&r, model->filename[0], &a, &subject, &err)))
        goto out;
    q.first = r.model->graph->n_outputs - q.n;
    subject = NULL;
    for (int i = 0; i < calib->count && !st; i++)
        st = mps_inputs_add(&list, calib->filename[i], &err);
    if (st)
        goto out;
    subject = model->filename[0];
    struct mps_stream_opts so = {.batch = a.batch->count ? n_batch : mps_stream_default_batch(&r),
                                 .co = &co,
                                 .backend = "cpu",
                                 .progress = true};
    if ((st = mps_stream_run(&r, &list, &so, mps_quant_chunk, &q, &err, &subject)))
        goto out;
    for (int i = 0; i < q.n; i++)
        mps_quant_range(&q, &q.p[i], &lo[i], &hi[i]);
    subject = model->filename[0];
    if ((st = mps_qdq_write(r.file, names, lo, hi, q.n, exclude->sval, exclude->count, &buf, &len, &err)))
        goto out;
    struct mps_out o;
    subject = NULL;
    if ((st = mps_out_open(out->filename[0], &o, &err)))
        goto out;
    if (fwrite(buf, 1, len, o.f) != len) {
        mps_out_abort(&o);
        st = mps_fail(&err, MPS_ERR_RUNTIME, "%s: cannot write it", out->filename[0]);
        goto out;
    }
    if ((st = mps_out_commit(&o, &err)))
        goto out;
    if (json->count) {
        if (!mps_quantize_json(&r, &q, n_nodes, exclude, out->filename[0], len))
            st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory printing the report");
        goto out;
    }
    char c[32];
    printf("quantized  %d of the model's products (Conv, MatMul, Gemm) to int8, %d tensors calibrated (%s)\n", n_nodes,
           q.n, q.percentile ? "percentile" : "minmax");
    printf("calibrated on %s inputs in %.3f s\n", mps_cli_count(r.n_items, c, sizeof c), r.t_total / 1e3);
    printf("wrote      %s (%zu bytes)\n", out->filename[0], len);
out:
    if (st) {
        mps_cli_error(subject, "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    free(buf), free(lo), free(hi), free(q.p), free((void *)names);
    mps_inputs_free(&list);
    free(r.t_runs);
    mps_model_free(r.model);
    mps_onnx_close(r.file);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    void *unused[] = {a.backend, a.precision, a.labels}; /* infer's options quantize does not take */
    arg_freetable(unused, sizeof unused / sizeof unused[0]);
    return rc;
}
