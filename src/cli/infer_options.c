/* infer_options.c: what infer and eval share before any input is read: their
   common options (backend, precision, threads, batch, labels, mean, std,
   size), checked first on their own and then against the loaded model. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "file.h"
#include "infer.h"

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
                        (long long)k - 1,
                        !r->n_labels ? "a label (the model has none; see --labels)"
                        : n_folded   ? "one label ignoring case (several match)"
                                     : "one of the labels");
    r->expect_class = exact >= 0 ? exact : folded;
    return MPS_OK;
}

void mps_infer_args_make(struct mps_infer_args *a)
{
    a->backend = arg_str0(NULL, "backend", "B", "auto (default), cpu, cuda or mps");
    a->precision = arg_str0(NULL, "precision", "P", "fp32 (default), tf32 or fp16 (GPU backends)");
    a->threads = arg_int0(NULL, "threads", "N", "CPU threads, 1 to 64 (4 per CPU if more; default: one per core)");
    a->batch = arg_int0(NULL, "batch", "N",
                        "items a run takes over many inputs, 1 to 65536 "
                        "(default: up to 32, fewer for large activations)");
    a->labels = arg_file0(NULL, "labels", "FILE", "class labels, one per line, one per class");
    a->mean = arg_str0(NULL, "mean", "a,b,c", "per-channel mean after scaling pixels to [0,1]: 1 or 3 numbers");
    a->std = arg_str0(NULL, "std", "a,b,c", "per-channel standard deviation: 1 or 3 numbers above 0");
    a->size = arg_str0(NULL, "size", "HxW", "image size when the model does not fix it (sides 1 to 65536)");
}

enum mps_status mps_infer_args_check(const struct mps_infer_args *a, struct mps_infer_result *r,
                                     struct mps_compile_opts *co, int *batch, struct mps_error *err)
{
    int64_t h, w;
    float v[3];
    int nv;
    enum mps_status st;
    r->precision = a->precision->count ? a->precision->sval[0] : "fp32";
    if ((st = mps_cli_threads(a->threads, &co->threads, err)) ||
        (st = mps_cli_int(a->batch, "--batch", 1, 65536, 1, batch, err)))
        return st;
    if (!strcmp(r->precision, "fp32") || !strcmp(r->precision, "tf32") || !strcmp(r->precision, "fp16"))
        co->precision = !strcmp(r->precision, "fp32")   ? MPS_PRECISION_FP32
                        : !strcmp(r->precision, "tf32") ? MPS_PRECISION_TF32
                                                        : MPS_PRECISION_FP16;
    else
        return mps_fail(err, MPS_ERR_USAGE, "--precision must be fp32, tf32 or fp16, not '%s'", r->precision);
    if (a->backend->count && strcmp(a->backend->sval[0], "auto") && !mps_backend_find(a->backend->sval[0]))
        return mps_backend_unknown(a->backend->sval[0], err);
    if (a->size->count && !mps_infer_size(a->size->sval[0], &h, &w))
        return mps_fail(err, MPS_ERR_USAGE, "--size %s: give HxW or N, each side 1 to %d", a->size->sval[0],
                        MPS_INFER_MAX_SIDE);
    if (a->mean->count && !mps_infer_floats(a->mean->sval[0], v, &nv))
        return mps_fail(err, MPS_ERR_USAGE, "--mean %s: give 1 or 3 finite numbers", a->mean->sval[0]);
    if (a->std->count && (!mps_infer_floats(a->std->sval[0], v, &nv) || !(v[0] > 0 && v[1] > 0 && v[2] > 0)))
        return mps_fail(err, MPS_ERR_USAGE, "--std %s: give 1 or 3 finite numbers, each above 0", a->std->sval[0]);
    return MPS_OK;
}

/* The model at its nominal shapes (mps_onnx_model_free): --size gives an
   image input's free height and width. Each run builds the model for its
   own shapes (stream.c); this one answers what every shape shares: the
   inputs, the outputs' ranks, the classes. */
static enum mps_status mps_infer_nominal(struct mps_infer_result *r, const char *size, struct mps_error *err)
{
    const char *names[8];
    struct mps_shape shapes[8];
    struct mps_model_input decl[8];
    int n = mps_onnx_inputs(r->file, names, shapes, decl, NULL, 8);
    if (n <= 0) /* the build says what is wrong, or there is nothing to size */
        return mps_onnx_model(r->file, NULL, &r->model, err);
    int64_t h = 0, w = 0;
    if (size && n == 1 && shapes[0].ndim == 4 && mps_infer_size(size, &h, &w)) { /* checked with the options */
        shapes[0].dim[2] = shapes[0].dim[2] < 0 ? h : shapes[0].dim[2];
        shapes[0].dim[3] = shapes[0].dim[3] < 0 ? w : shapes[0].dim[3];
    }
    return mps_onnx_model_free(r->file, n, shapes, &r->model, err);
}

/* A run fed by file (r->fed and r->groups[0].in read): the model built at
   the shapes given. Where it does not build so (a Reshape's shape given as
   an input; an If whose branches cannot both be built at these shapes), or
   builds with an If decided at run time (which only the cpu backend runs),
   again with the small integer and bool inputs given as values: the model
   is specialized for them (an If on a sample rate given is decided at load,
   its other branch never built) and takes the others only
   (r->groups[0].in compacted to its inputs). */
static enum mps_status mps_infer_fed_model(struct mps_infer_result *r, struct mps_error *err)
{
    struct mps_infer_group *grp = &r->groups[0];
    struct mps_shape shapes[8];
    struct mps_tensor values[8];
    int n = grp->n_in;
    for (int i = 0; i < n; i++) {
        shapes[i] = grp->in[i].shape;
        values[i] = grp->in[i];
        bool steers = (values[i].dtype == MPS_I64 || values[i].dtype == MPS_I32 || values[i].dtype == MPS_U8 ||
                       values[i].dtype == MPS_BOOL) &&
                      mps_shape_numel(&values[i].shape) <= 64;
        values[i].data = steers ? values[i].data : NULL;
    }
    struct mps_onnx_opts o = {.n_shapes = n, .shapes = shapes};
    enum mps_status st = mps_onnx_model(r->file, &o, &r->model, err);
    bool decided_late = false, steered = false;
    for (int k = 0; !st && k < r->model->graph->n_nodes; k++)
        decided_late = decided_late || r->model->graph->nodes[k].op == MPS_OP_IF;
    for (int i = 0; i < n; i++)
        steered = steered || values[i].data;
    if (steered && (st == MPS_ERR_MODEL || decided_late)) {
        struct mps_model *late = r->model; /* NULL, or the model with its run-time Ifs */
        struct mps_error why = *err;
        o.values = values;
        st = mps_onnx_model(r->file, &o, &r->model, &why);
        if (late && st) /* the values decide nothing more: the run-time Ifs stay */
            r->model = late, st = MPS_OK;
        else
            mps_model_free(late);
        if (st) /* the reason with the values: it went further */
            *err = why;
    }
    if (st)
        return st;
    const struct mps_graph *g = r->model->graph;
    struct mps_tensor kept[8];
    int k = 0;
    for (int j = 0; j < g->n_inputs; j++) /* the inputs the model still takes, in its order */
        for (int i = 0; i < n; i++)
            if (!strcmp(g->values[g->inputs[j]].name, r->fed[i].name))
                kept[k++] = grp->in[i];
    for (int i = 0; i < n; i++) { /* the ones given as values: the model holds a copy */
        bool taken = false;
        for (int j = 0; j < k; j++)
            taken = taken || kept[j].data == grp->in[i].data;
        if (!taken)
            free(grp->in[i].data);
    }
    memcpy(grp->in, kept, sizeof kept[0] * (size_t)k);
    grp->n_in = k;
    return MPS_OK;
}

static enum mps_status mps_infer_setup_model(struct mps_infer_result *r, const char *path,
                                             const struct mps_infer_args *a, const char **subject,
                                             struct mps_error *err)
{
    const char *labels = a->labels->count ? a->labels->filename[0] : NULL;
    *subject = path;
    double t0 = mps_cli_now_ms();
    enum mps_status st = r->file ? MPS_OK : mps_onnx_open(path, &r->file, err);
    if (!st)
        st = r->n_fed ? mps_infer_fed_model(r, err)
                      : mps_infer_nominal(r, a->size->count ? a->size->sval[0] : NULL, err);
    r->t_load = mps_cli_now_ms() - t0;
    if (st)
        return st;
    const struct mps_graph *g = r->model->graph;
    if (g->n_inputs == 0 && !r->n_fed)
        return mps_fail(err, MPS_ERR_MODEL, "the model has no runtime inputs");
    for (int i = 0; i < g->n_inputs + g->n_outputs; i++) {
        const struct mps_value *v = &g->values[i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs]];
        if (v->dtype == MPS_STRING)
            return mps_fail(err, MPS_ERR_MODEL,
                            "%s '%s' is a tensor of strings, which mpsrun does not %s on the command line yet",
                            i < g->n_inputs ? "input" : "output", v->name, i < g->n_inputs ? "read" : "print");
    }
    if (g->n_inputs == 1 &&
        (st = mps_infer_prep(r, a->mean->count ? a->mean->sval[0] : NULL, a->std->count ? a->std->sval[0] : NULL,
                             a->size->count ? a->size->sval[0] : NULL, err)))
        return st;
    *subject = labels ? labels : path;
    if ((st = mps_infer_labels(r, labels, err)))
        return st;
    *subject = path;
    if ((st = mps_infer_classes(r, labels, err)))
        return st;
    if (g->n_inputs == 0)
        return MPS_OK;
    const struct mps_value *in = &g->values[g->inputs[0]];
    if (a->batch->count && !r->model->inputs[0].symbolic[0] && a->batch->ival[0] != in->shape.dim[0])
        return mps_fail(err, MPS_ERR_USAGE, "--batch %d: the model fixes its batch at %lld", a->batch->ival[0],
                        (long long)in->shape.dim[0]);
    return MPS_OK;
}

enum mps_status mps_infer_setup(struct mps_infer_result *r, const char *path, const struct mps_infer_args *a,
                                const char **subject, struct mps_error *err)
{
    enum mps_status st = mps_infer_setup_model(r, path, a, subject, err);
    if (st == MPS_ERR_USAGE)
        *subject = NULL; /* the message names the option */
    return st;
}
