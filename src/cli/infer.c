/* infer.c: `mpsrun infer MODEL INPUT...`: runs a model on PNG or .npy inputs
   and reports what it sees, with timings; --expect and --check turn it into a
   check for CI scripts (exit code 5). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "file.h"
#include "infer.h"
#include "npy.h"

#define MPS_INFER_MAX_TOP 64

static double mps_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Parses "a" or "a,b,c" into v (1 or 3 finite values, the first repeated);
   *n gets the count; false if malformed. */
static bool mps_infer_floats(const char *s, float *v, int *n)
{
    char *end;
    *n = 0;
    for (const char *p = s; *n < 3; p = end + 1) {
        v[*n] = strtof(p, &end);
        if (end == p || !isfinite(v[(*n)++]))
            return false;
        if (*end == '\0')
            break;
        if (*end != ',')
            return false;
    }
    if (*n == 1)
        v[1] = v[2] = v[0];
    return *n == 1 || *n == 3;
}

#define MPS_INFER_MAX_SIDE 65536

/* "28x28" or "28" into height and width; false unless each is 1 to MPS_INFER_MAX_SIDE. */
static bool mps_infer_size(const char *s, int64_t *h, int64_t *w)
{
    char *end;
    long long a = strtoll(s, &end, 10), b = a;
    if (end == s)
        return false;
    if (*end == 'x' || *end == 'X') {
        const char *p = end + 1;
        b = strtoll(p, &end, 10);
        if (end == p)
            return false;
    }
    *h = a;
    *w = b;
    return *end == '\0' && a >= 1 && b >= 1 && a <= MPS_INFER_MAX_SIDE && b <= MPS_INFER_MAX_SIDE;
}

/* Labels from FILE (one per line) or the model's "labels" metadata (a JSON
   array of strings, or one label per line). Owned by the graph's arena. */
static enum mps_status mps_infer_labels(struct mps_infer_result *r, const char *file, struct mps_error *err)
{
    unsigned char *buf = NULL;
    size_t len = 0;
    const char *text = NULL;
    if (file) {
        enum mps_status st = mps_file_read(file, (size_t)16 << 20, MPS_ERR_INPUT, &buf, &len, err);
        if (st)
            return st;
        text = (const char *)buf;
    } else {
        text = mps_model_meta(r->model, "labels");
    }
    if (!text)
        return MPS_OK;
    struct mps_graph *g = r->model->graph;
    cJSON *json = file ? NULL : cJSON_Parse(text);
    int cap = 16;
    r->labels = mps_graph_alloc(g, sizeof *r->labels * (size_t)cap);
    if (json && cJSON_IsArray(json)) {
        cap = cJSON_GetArraySize(json);
        r->labels = mps_graph_alloc(g, sizeof *r->labels * (size_t)(cap + 1));
        for (cJSON *e = json->child; e && r->labels; e = e->next)
            r->labels[r->n_labels++] = mps_graph_strdup(g, cJSON_IsString(e) ? e->valuestring : "");
    } else {
        for (const char *p = text; *p && r->labels;) {
            size_t n = strcspn(p, "\r\n");
            if (r->n_labels == cap) {
                const char **grown = mps_graph_alloc(g, sizeof *grown * (size_t)(cap *= 2));
                if (grown)
                    memcpy(grown, r->labels, sizeof *grown * (size_t)r->n_labels);
                r->labels = grown;
            }
            char line[256];
            snprintf(line, sizeof line, "%.*s", (int)(n < 255 ? n : 255), p);
            if (r->labels)
                r->labels[r->n_labels++] = mps_graph_strdup(g, line);
            p += n;
            p += strspn(p, "\r\n");
        }
    }
    cJSON_Delete(json);
    free(buf);
    if (!r->labels)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    return MPS_OK;
}

/* Image size, channels and normalization: flags, else the model's metadata,
   else the model's input shape and no normalization. A flag the model
   contradicts (--size on a model that fixes it, three --mean values for one
   channel) is a usage error, said before any input is read. */
static enum mps_status mps_infer_prep(struct mps_infer_result *r, const char *mean, const char *std, const char *size,
                                      struct mps_error *err)
{
    struct mps_infer_prep *p = &r->prep;
    const struct mps_graph *g = r->model->graph;
    const struct mps_value *in = &g->values[g->inputs[0]];
    const struct mps_model_input *decl = &r->model->inputs[0];
    *p = (struct mps_infer_prep){.channels = 3, .mean = {0, 0, 0}, .std = {1, 1, 1}, .norm_from = "none"};
    bool fixed = false; /* the model's shape says the image size */
    if (in->shape.ndim == 4) {
        p->channels = decl->symbolic[1] ? 3 : (int)in->shape.dim[1];
        if (!decl->symbolic[2] && !decl->symbolic[3]) {
            p->height = in->shape.dim[2];
            p->width = in->shape.dim[3];
            fixed = true;
        }
    } else if (in->shape.ndim == 3) { /* [N, H, W]: one gray channel */
        p->channels = 1;
        p->height = in->shape.dim[1];
        p->width = in->shape.dim[2];
        fixed = !decl->symbolic[1] && !decl->symbolic[2];
    } else {
        p->channels = 1; /* a flat [N, D] input: the metadata says the image size */
    }
    if (p->channels != 1 && p->channels != 3)
        p->channels = 1; /* not an image model: PNG inputs are refused later with the input's shape */
    const char *meta_size = mps_model_meta(r->model, "image_size");
    int64_t h, w;
    if (size) {
        mps_infer_size(size, &h, &w); /* checked with the options */
        if (fixed && (h != p->height || w != p->width))
            return mps_fail(err, MPS_ERR_USAGE, "--size %s: the model fixes its images at %lldx%lld", size,
                            (long long)p->height, (long long)p->width);
        if (in->shape.ndim == 2 && !decl->symbolic[1] && h * w * p->channels != in->shape.dim[1])
            return mps_fail(err, MPS_ERR_USAGE, "--size %s gives %lld values per image; the model's input takes %lld",
                            size, (long long)(h * w * p->channels), (long long)in->shape.dim[1]);
        p->height = h;
        p->width = w;
    } else if (meta_size && !p->height && !mps_infer_size(meta_size, &p->height, &p->width)) {
        return mps_fail(err, MPS_ERR_MODEL, "the model's image_size metadata '%s' is not HxW", meta_size);
    }
    const char *flag[2] = {mean, std}, *name[2] = {"--mean", "--std"}, *key[2] = {"mean", "std"};
    float *dst[2] = {p->mean, p->std};
    for (int i = 0; i < 2; i++) {
        const char *text = flag[i] ? flag[i] : mps_model_meta(r->model, key[i]);
        int n = 0;
        if (!text)
            continue;
        p->norm_from = flag[0] || flag[1] ? "flags" : "model metadata";
        if (!mps_infer_floats(text, dst[i], &n) || (i == 1 && !(dst[i][0] > 0 && dst[i][1] > 0 && dst[i][2] > 0)))
            return flag[i] ? mps_fail(err, MPS_ERR_USAGE, "%s %s: give 1 or 3 finite numbers%s", name[i], text,
                                      i ? ", each above 0" : "")
                           : mps_fail(err, MPS_ERR_MODEL, "the model's %s metadata '%s' is not 1 or 3 finite numbers%s",
                                      key[i], text, i ? " above 0" : "");
        if (flag[i] && n == 3 && p->channels == 1)
            return mps_fail(err, MPS_ERR_USAGE, "%s %s: 3 values, but the model's images have 1 channel", name[i],
                            text);
    }
    return MPS_OK;
}

/* What --labels and --expect need of the loaded model, checked before any
   input is read: a classifier's output, as many labels as classes, and
   --expect naming one of them, by index or by label (the exact label, else
   the one label equal to it ignoring case). */
static enum mps_status mps_infer_classes(struct mps_infer_result *r, const char *labels_file, struct mps_error *err)
{
    int64_t k = r->model->graph->n_inputs == 1 ? mps_infer_graph_classes(r->model->graph) : 0;
    char a[128];
    const struct mps_value *out = &r->model->graph->values[r->model->graph->outputs[0]];
    if (!k && (labels_file || r->expect))
        return mps_fail(err, MPS_ERR_USAGE, "%s needs a classifier: the model's output is %s %s, not [batch, classes]",
                        r->expect ? "--expect" : "--labels", mps_dtype_name(out->dtype),
                        mps_shape_str(&out->shape, a, sizeof a));
    if (labels_file && r->n_labels != k)
        return mps_fail(err, MPS_ERR_USAGE, "--labels %s: %d labels for the model's %lld classes", labels_file,
                        r->n_labels, (long long)k);
    if (!r->expect)
        return MPS_OK;
    char *end;
    long long want = strtoll(r->expect, &end, 10);
    if (end != r->expect && !*end) {
        if (want < 0 || want >= k)
            return mps_fail(err, MPS_ERR_USAGE, "--expect %s: the model has %lld classes (0 to %lld)", r->expect,
                            (long long)k, (long long)k - 1);
        r->expect_class = want;
        return MPS_OK;
    }
    int exact = -1, folded = -1, n_folded = 0;
    for (int i = 0; i < r->n_labels && i < k; i++) {
        if (!strcmp(r->labels[i], r->expect) && exact < 0)
            exact = i;
        if (!strcasecmp(r->labels[i], r->expect) && n_folded++ == 0)
            folded = i;
    }
    if (exact < 0 && n_folded != 1)
        return mps_fail(err, MPS_ERR_USAGE, "--expect '%s' is neither a class index (0 to %lld) nor %s", r->expect,
                        (long long)k - 1, !r->n_labels ? "a label (the model has none; see --labels)"
                                          : n_folded ? "one label ignoring case (several match)"
                                                     : "one of the labels");
    r->expect_class = exact >= 0 ? exact : folded;
    return MPS_OK;
}

/* --expect CLASS: every input's top-1 must be r->expect_class. */
static enum mps_status mps_infer_expect(struct mps_infer_result *r, struct mps_error *err)
{
    int64_t want = r->expect_class, total = 0;
    for (int f = 0; f < r->n_files; f++)
        total += r->files[f].items;
    int64_t *top = malloc(sizeof *top * (size_t)(total + 1));
    if (!top)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    mps_infer_top1(r, top);
    r->expect_ok = total > 0; /* no item is no evidence */
    if (!total)
        mps_fail(err, MPS_ERR_CHECK, "--expect %s: no input item was run", r->expect);
    for (int64_t i = 0; i < total && r->expect_ok; i++)
        r->expect_ok = top[i] == want;
    if (total && !r->expect_ok) {
        int64_t i = 0, at = 0;
        int f = 0;
        while (top[i] == want)
            i++;
        while (at + r->files[f].items <= i) /* the file item i came from */
            at += r->files[f++].items;
        if (top[i] < 0)
            mps_fail(err, MPS_ERR_CHECK, "--expect %s: %s%s has no top class: its output is NaN", r->expect,
                     r->files[f].path, r->files[f].items > 1 ? " (an item of it)" : "");
        else
            mps_fail(err, MPS_ERR_CHECK, "--expect %s: %s%s has top class %lld '%s'", r->expect, r->files[f].path,
                     r->files[f].items > 1 ? " (an item of it)" : "", (long long)top[i],
                     top[i] < r->n_labels ? r->labels[top[i]] : "");
    }
    free(top);
    return r->expect_ok ? MPS_OK : MPS_ERR_CHECK;
}

/* --check ref.npy: the first output must match the reference by mps_compare's rule
   (within atol + rtol times the reference's largest magnitude). */
static enum mps_status mps_infer_check(struct mps_infer_result *r, struct mps_error *err)
{
    struct mps_tensor ref;
    enum mps_status st = mps_npy_read(r->check_path, &ref, err);
    if (st) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        return mps_fail(err, st, "%s: %s", r->check_path, why);
    }
    const struct mps_tensor *out = &r->groups[0].out[0];
    char a[128], b[128];
    r->check_ok = false;
    if (r->n_groups != 1 || out->dtype != MPS_F32 || !mps_shape_eq(&out->shape, &ref.shape)) {
        snprintf(r->check_detail, sizeof r->check_detail, "output is %s %s, the reference f32 %s",
                 mps_dtype_name(out->dtype), mps_shape_str(&out->shape, a, sizeof a),
                 mps_shape_str(&ref.shape, b, sizeof b));
    } else {
        int64_t n = mps_shape_numel(&ref.shape);
        r->tol.log = mps_model_probabilities(r->model, 0);
        mps_compare(MPS_F32, out->data, ref.data, n, r->tol, &r->check);
        r->compared = true;
        /* NaN matching NaN, or nothing compared, shows nothing about the model */
        int64_t nan_out = 0, nan_ref = 0;
        for (int64_t i = 0; i < n; i++) {
            nan_out += isnan(((const float *)out->data)[i]);
            nan_ref += isnan(((const float *)ref.data)[i]);
        }
        int len = 0;
        if (nan_out || nan_ref)
            len = snprintf(r->check_detail, sizeof r->check_detail, "%lld of %lld output and %lld reference values "
                           "are NaN, and a check needs numbers; ", (long long)nan_out, (long long)n, (long long)nan_ref);
        mps_compare_str(&r->check, n, r->tol, r->check_detail + len, sizeof r->check_detail - (size_t)len);
        if (n == 0)
            snprintf(r->check_detail, sizeof r->check_detail, "the reference is empty: nothing to compare");
        r->check_ok = r->check.ok && n > 0 && !nan_out && !nan_ref;
    }
    free(ref.data);
    if (!r->check_ok)
        return mps_fail(err, MPS_ERR_CHECK, "--check %s: %s", r->check_path, r->check_detail);
    return MPS_OK;
}

/* --output: a file that can be written, found out before the run (the write
   after it still reports its own failure). */
static enum mps_status mps_infer_writable(const char *path, struct mps_error *err)
{
    struct stat st;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1, slash ? path : ".");
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return mps_fail(err, MPS_ERR_USAGE, "--output %s: is a folder", path);
    if ((stat(path, &st) == 0 && access(path, W_OK) != 0) || (stat(path, &st) != 0 && access(dir, W_OK | X_OK) != 0))
        return mps_fail(err, MPS_ERR_USAGE, "--output %s: cannot write: %s", path, strerror(errno));
    return MPS_OK;
}

/* Compiles the model for the backend and runs every group; times group 0's runs. */
static enum mps_status mps_infer_run(struct mps_infer_result *r, const struct mps_compile_opts *co, int warmup,
                                     int repeat, struct mps_error *err)
{
    const struct mps_graph *g = r->model->graph;
    struct mps_plan *plan;
    double t0 = mps_now_ms();
    enum mps_status st = mps_plan_compile(r->backend, g, co, &plan, err);
    r->t_compile = mps_now_ms() - t0;
    if (st)
        return st;
    for (int k = 0; k < r->n_groups && !st; k++) {
        struct mps_infer_group *grp = &r->groups[k];
        grp->n_out = g->n_outputs;
        grp->out = calloc((size_t)g->n_outputs, sizeof *grp->out);
        for (int o = 0; grp->out && o < g->n_outputs; o++) {
            const struct mps_value *v = &g->values[g->outputs[o]];
            grp->out[o] = mps_tensor_make(v->dtype, &v->shape, malloc(mps_dtype_size(v->dtype) *
                                                                      (size_t)(mps_shape_numel(&v->shape) + 1)));
            if (!grp->out[o].data)
                st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
        if (!grp->out)
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        t0 = mps_now_ms();
        if (!st)
            st = mps_plan_run(plan, grp->in, grp->out, err);
        if (k == 0)
            r->t_first = mps_now_ms() - t0;
    }
    for (int i = 0; i < warmup && !st; i++)
        st = mps_plan_run(plan, r->groups[0].in, r->groups[0].out, err);
    r->t_runs = calloc((size_t)repeat + 1, sizeof *r->t_runs);
    for (int i = 0; i < repeat && !st && r->t_runs; i++) {
        t0 = mps_now_ms();
        st = mps_plan_run(plan, r->groups[0].in, r->groups[0].out, err);
        r->t_runs[r->n_runs++] = mps_now_ms() - t0;
    }
    mps_plan_free(plan);
    return st;
}

int mps_cli_infer(int argc, char **argv)
{
    struct arg_file *model = arg_file1(NULL, NULL, "MODEL", "an ONNX model");
    struct arg_file *inputs = arg_filen(NULL, NULL, "INPUT", 1, 1 << 16, "PNG images or .npy arrays (f32)");
    struct arg_str *backend = arg_str0(NULL, "backend", "B", "auto (default), cpu, cuda or mps");
    struct arg_str *precision = arg_str0(NULL, "precision", "P", "fp32 (default), tf32 or fp16 (GPU backends)");
    struct arg_int *threads = arg_int0(NULL, "threads", "N", "CPU threads, 1 to 64 (4 per CPU if more; default: one per core)");
    struct arg_int *top_k = arg_int0(NULL, "top-k", "K", "classes to show per input, 1 to 64 (default 5)");
    struct arg_file *labels = arg_file0(NULL, "labels", "FILE", "class labels, one per line, one per class");
    struct arg_str *mean = arg_str0(NULL, "mean", "a,b,c", "per-channel mean after scaling pixels to [0,1]: 1 or 3 numbers");
    struct arg_str *std = arg_str0(NULL, "std", "a,b,c", "per-channel standard deviation: 1 or 3 numbers above 0");
    struct arg_str *size = arg_str0(NULL, "size", "HxW", "image size when the model does not fix it (sides 1 to 65536)");
    struct arg_int *repeat = arg_int0(NULL, "repeat", "N", "timed runs after the first, 0 to 1000000 (default 10)");
    struct arg_int *warmup = arg_int0(NULL, "warmup", "N", "untimed runs before them, 0 to 1000000 (default 1)");
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_file *output = arg_file0(NULL, "output", "out.npy", "write the first output to a .npy file");
    struct arg_str *expect = arg_str0(NULL, "expect", "CLASS", "exit 5 unless every input's top class is CLASS (an index, or a label in any case)");
    struct arg_file *check = arg_file0(NULL, "check", "ref.npy", "exit 5 unless the first output matches");
    struct arg_dbl *rtol = arg_dbl0(NULL, "rtol", "R", "--check's tolerance, 0 to 1, relative to the reference's "
                                    "largest magnitude (default 1e-5)");
    struct arg_dbl *atol = arg_dbl0(NULL, "atol", "A", "--check's absolute tolerance, 0 or more (default 0)");
    struct arg_lit *quiet = arg_lit0("q", "quiet", "print only the top class of each input (not with --json)");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(20);
    void *argtable[] = {model, inputs, backend, precision, threads, top_k, labels, mean, std, size, repeat, warmup,
                        json, output, expect, check, rtol, atol, quiet, help, end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Runs MODEL on each INPUT and prints the top classes with their probabilities,\n"
                           "and the timings of loading, compiling, preprocessing and running. Labels,\n"
                           "normalization and image size come from the model's metadata unless given.",
                           &done);
    struct mps_infer_result r = {.precision = precision->count ? precision->sval[0] : "fp32",
                                 .expect = expect->count ? expect->sval[0] : NULL,
                                 .check_path = check->count ? check->filename[0] : NULL};
    struct mps_error err = {{0}};
    const char *subject = NULL;
    enum mps_status st = MPS_OK;
    int n_repeat = 0, n_warmup = 0;
    struct mps_compile_opts co = {0};
    r.tol = (struct mps_tolerance){.rtol = rtol->count ? rtol->dval[0] : 1e-5, .atol = atol->count ? atol->dval[0] : 0};
    if (done)
        goto out;
    /* every option that needs no model, before any work: one message per problem, naming the option */
    int64_t h, w;
    float v[3];
    int nv;
    if ((st = mps_cli_int(top_k, "--top-k", 1, MPS_INFER_MAX_TOP, 5, &r.top_k, &err)) ||
        (st = mps_cli_int(repeat, "--repeat", 0, 1000000, 10, &n_repeat, &err)) ||
        (st = mps_cli_int(warmup, "--warmup", 0, 1000000, 1, &n_warmup, &err)) ||
        (st = mps_cli_threads(threads, &co.threads, &err)))
        goto out;
    if (!(r.tol.rtol >= 0 && r.tol.rtol <= 1))
        st = mps_fail(&err, MPS_ERR_USAGE, "--rtol must be 0 to 1, not %g", r.tol.rtol);
    else if (!(r.tol.atol >= 0 && isfinite(r.tol.atol)))
        st = mps_fail(&err, MPS_ERR_USAGE, "--atol must be a finite number not below 0, not %g", r.tol.atol);
    else if ((rtol->count || atol->count) && !check->count)
        st = mps_fail(&err, MPS_ERR_USAGE, "%s sets --check's tolerance: give --check too", rtol->count ? "--rtol"
                                                                                                        : "--atol");
    else if (!strcmp(r.precision, "fp32") || !strcmp(r.precision, "tf32") || !strcmp(r.precision, "fp16"))
        co.precision = !strcmp(r.precision, "fp32")   ? MPS_PRECISION_FP32
                       : !strcmp(r.precision, "tf32") ? MPS_PRECISION_TF32
                                                      : MPS_PRECISION_FP16;
    else
        st = mps_fail(&err, MPS_ERR_USAGE, "--precision must be fp32, tf32 or fp16, not '%s'", r.precision);
    if (!st && backend->count && strcmp(backend->sval[0], "auto") && !mps_backend_find(backend->sval[0]))
        st = mps_backend_unknown(backend->sval[0], &err);
    else if (!st && size->count && !mps_infer_size(size->sval[0], &h, &w))
        st = mps_fail(&err, MPS_ERR_USAGE, "--size %s: give HxW or N, each side 1 to %d", size->sval[0],
                      MPS_INFER_MAX_SIDE);
    else if (!st && mean->count && !mps_infer_floats(mean->sval[0], v, &nv))
        st = mps_fail(&err, MPS_ERR_USAGE, "--mean %s: give 1 or 3 finite numbers", mean->sval[0]);
    else if (!st && std->count && (!mps_infer_floats(std->sval[0], v, &nv) || !(v[0] > 0 && v[1] > 0 && v[2] > 0)))
        st = mps_fail(&err, MPS_ERR_USAGE, "--std %s: give 1 or 3 finite numbers, each above 0", std->sval[0]);
    else if (!st && json->count && quiet->count)
        st = mps_fail(&err, MPS_ERR_USAGE, "--json and --quiet are two report forms: give one");
    else if (!st && output->count)
        st = mps_infer_writable(output->filename[0], &err);
    if (st)
        goto out;

    /* load for the declared shapes, read the inputs, load again if the batch differs */
    subject = model->filename[0];
    double t0 = mps_now_ms();
    st = mps_onnx_load(subject, NULL, &r.model, &err);
    r.t_load = mps_now_ms() - t0;
    if (!st && r.model->graph->n_inputs == 0)
        st = mps_fail(&err, MPS_ERR_MODEL, "the model has no runtime inputs");
    if (!st && r.model->graph->n_inputs == 1)
        if ((st = mps_infer_prep(&r, mean->count ? mean->sval[0] : NULL, std->count ? std->sval[0] : NULL,
                                 size->count ? size->sval[0] : NULL, &err)) == MPS_ERR_USAGE)
            subject = NULL;
    if (!st) {
        subject = labels->count ? labels->filename[0] : subject;
        st = mps_infer_labels(&r, labels->count ? labels->filename[0] : NULL, &err);
    }
    if (!st && (st = mps_infer_classes(&r, labels->count ? labels->filename[0] : NULL, &err)) == MPS_ERR_USAGE)
        subject = NULL;
    struct mps_shape shape;
    const char *bad_file = NULL;
    t0 = mps_now_ms();
    if (!st)
        st = mps_infer_inputs(&r, (char **)inputs->filename, inputs->count, &shape, &err, &bad_file);
    r.t_preprocess = mps_now_ms() - t0;
    if (bad_file)
        subject = bad_file;
    if (st)
        goto out;
    subject = model->filename[0];
    const struct mps_graph *g = r.model->graph;
    if (g->n_inputs == 1 && !mps_shape_eq(&shape, &g->values[g->inputs[0]].shape)) {
        /* the batch is free: compile for this one; keep the labels' arena alive with the first model */
        struct mps_model *first = r.model, *again = NULL;
        t0 = mps_now_ms();
        st = mps_onnx_load(subject, &(struct mps_onnx_opts){.n_shapes = 1, .shapes = &shape}, &again, &err);
        r.t_load += mps_now_ms() - t0;
        if (st)
            goto out;
        r.model = again;
        r.labels_owner = first;
    }
    g = r.model->graph;
    if (!(st = mps_backend_choose(g, backend->count ? backend->sval[0] : "auto", &r.backend, r.why_backend,
                                  sizeof r.why_backend, &err)) &&
        !(st = r.backend->probe(&r.device, &err)) && !(st = mps_passes_fuse(r.model->graph, r.backend, &err)))
        st = mps_infer_run(&r, &co, n_warmup, n_repeat, &err);
    if (st)
        goto out;
    mps_infer_classify(&r);
    if (output->count && (st = mps_npy_write(output->filename[0], &r.groups[0].out[0], &err)))
        subject = NULL; /* the message names the file */
    enum mps_status check_st = MPS_OK;
    if (!st && r.check_path)
        check_st = mps_infer_check(&r, &err);
    if (!st && !check_st && r.expect)
        check_st = mps_infer_expect(&r, &err);
    if (!st) {
        if (json->count)
            mps_infer_print_json(&r);
        else
            mps_infer_print_text(&r, quiet->count > 0);
    }
    if (!st && check_st) {
        st = check_st;
        subject = NULL;
    }
out:
    if (st) {
        mps_cli_error(subject, "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    mps_infer_free_groups(&r);
    free(r.t_runs);
    mps_model_free(r.model);
    mps_model_free(r.labels_owner);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
