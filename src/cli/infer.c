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
#include "image.h"
#include "infer.h"
#include "inputs.h"
#include "npy.h"
#include "stream.h"

#define MPS_INFER_MAX_TOP 64

/* What infer does with each chunk beside reporting it: --expect's tally,
   --check's copy of the first output, --output's file. */
struct mps_infer_run {
    struct mps_infer_report rep;
    int64_t expect_items, expect_bad; /* items judged, and those whose top class is not --expect's */
    char expect_first[384];           /* the first of those, said */
    bool checking;                    /* --check: the first output of every item is kept */
    struct mps_tensor kept;           /* [items so far, item...] f32 */
    int64_t kept_cap;                 /* items kept has room for */
    const char *output;               /* --output, or NULL */
    struct mps_npy_stream *npy;       /* its file, opened before the run */
    bool write_failed;                /* writing it or a picture failed (the message names the file) */
    const char *png;                  /* --output-png: a .png file (one item), else a folder */
    bool png_folder, png_mask;        /* PATH is a folder; the output is a class mask (else an image) */
    int64_t png_written;              /* pictures written */
    uint8_t *pixels;                  /* one picture's bytes */
};

/* --output-png: whether the first output can be pictures, and which kind:
   [batch, C, H, W] or [batch, H, W]; a class mask when it is integer, when
   --mask asks, or when C is neither 1 nor 3 (the class per pixel is the
   argmax over C); else an image of C channels. */
static enum mps_status mps_infer_png_kind(const struct mps_value *o, bool mask, bool *is_mask, struct mps_error *err)
{
    char buf[64];
    int r = o->shape.ndim;
    bool integer = o->dtype == MPS_I64 || o->dtype == MPS_I32 || o->dtype == MPS_U8;
    int64_t c = r == 4 ? o->shape.dim[1] : 1;
    if ((r != 3 && r != 4) || (!integer && o->dtype != MPS_F32))
        return mps_fail(err, MPS_ERR_USAGE, "--output-png writes pictures: the model's first output must be "
                        "[batch, channels, height, width] or [batch, height, width], not %s %s",
                        mps_dtype_name(o->dtype), mps_shape_str(&o->shape, buf, sizeof buf));
    if (integer && c != 1)
        return mps_fail(err, MPS_ERR_USAGE, "--output-png: an integer output is a class mask of one channel, not %lld",
                        (long long)c);
    if (mask && !integer && c < 2)
        return mps_fail(err, MPS_ERR_USAGE, "--mask takes the class with the largest score at each pixel: the output "
                        "has %lld channel", (long long)c);
    *is_mask = integer || mask || (c != 1 && c != 3);
    if (*is_mask && !integer && c > 256)
        return mps_fail(err, MPS_ERR_USAGE, "--output-png: %lld classes; a palette PNG holds 256", (long long)c);
    return MPS_OK;
}

/* Row `row` of the chunk's first output as one picture's bytes: a mask's class
   per pixel (the first largest score; NaN scores never win, and a pixel of NaN
   scores only is class 0; integers as they are, 0 to 255), an image's values
   v in [0, 1] as round(255 v), clamped (NaN: 0), channels interleaved. */
static enum mps_status mps_infer_pixels(const struct mps_infer_run *run, const struct mps_tensor *out, int64_t row,
                                        struct mps_error *err)
{
    int r = out->shape.ndim;
    int64_t c = r == 4 ? out->shape.dim[1] : 1, h = out->shape.dim[r - 2], w = out->shape.dim[r - 1], plane = h * w;
    const float *f = (const float *)out->data + row * c * plane;
    for (int64_t i = 0; i < plane; i++) {
        if (!run->png_mask) {
            for (int64_t k = 0; k < c; k++) {
                float v = f[k * plane + i];
                run->pixels[i * c + k] = (uint8_t)(v > 0 ? (v < 1 ? lrintf(v * 255.0f) : 255) : 0);
            }
        } else if (out->dtype == MPS_F32) {
            int64_t best = -1;
            for (int64_t k = 0; k < c; k++) {
                float v = f[k * plane + i];
                if (v == v && (best < 0 || v > f[best * plane + i]))
                    best = k;
            }
            run->pixels[i] = (uint8_t)(best < 0 ? 0 : best);
        } else {
            int64_t at = row * plane + i;
            int64_t v = out->dtype == MPS_I64   ? ((const int64_t *)out->data)[at]
                        : out->dtype == MPS_I32 ? ((const int32_t *)out->data)[at]
                                                : ((const uint8_t *)out->data)[at];
            if (v < 0 || v > 255)
                return mps_fail(err, MPS_ERR_RUNTIME, "--output-png: class %lld at pixel %lld is outside the palette's "
                                "0 to 255", (long long)v, (long long)i);
            run->pixels[i] = (uint8_t)v;
        }
    }
    return MPS_OK;
}

/* Writes the chunk's pictures: PATH itself for the one item of a .png PATH,
   else PATH/NNNNNN.png by the input's place in the list (NNNNNN_K.png for
   item K of a .npy holding several). */
static enum mps_status mps_infer_pictures(struct mps_infer_run *run, const struct mps_infer_result *r,
                                          struct mps_error *err)
{
    const struct mps_tensor *out = &r->groups[0].out[0];
    int rank = out->shape.ndim;
    int64_t row = 0, h = out->shape.dim[rank - 2], w = out->shape.dim[rank - 1];
    int channels = run->png_mask ? 1 : (int)(rank == 4 ? out->shape.dim[1] : 1);
    int64_t items = 0;
    for (int fi = 0; fi < r->n_files; fi++)
        items += r->files[fi].items;
    if (!run->png_folder && run->png_written + items > 1) /* before writing any: one .npy may hold several */
        return mps_fail(err, MPS_ERR_USAGE, "--output-png %s is one file, and the inputs give several items: name a "
                        "folder", run->png);
    for (int fi = 0; fi < r->n_files; fi++)
        for (int64_t it = 0; it < r->files[fi].items; it++, row++) {
            char path[4096];
            if (!run->png_folder)
                snprintf(path, sizeof path, "%s", run->png);
            else if (r->files[fi].items > 1)
                snprintf(path, sizeof path, "%s/%06lld_%lld.png", run->png, (long long)r->files[fi].index,
                         (long long)it);
            else
                snprintf(path, sizeof path, "%s/%06lld.png", run->png, (long long)r->files[fi].index);
            enum mps_status st = mps_infer_pixels(run, out, row, err);
            if (!st)
                st = mps_image_write(path, channels, h, w, run->pixels, run->png_mask, err);
            if (st)
                return st;
            run->png_written++;
        }
    return MPS_OK;
}

static enum mps_status mps_infer_tally(struct mps_infer_run *run, const struct mps_infer_result *r,
                                       struct mps_error *err)
{
    const struct mps_infer_group *g = &r->groups[0];
    int64_t k = mps_infer_graph_classes(r->model->graph), row = 0;
    double *p = malloc(sizeof(double) * (size_t)(k + 1));
    if (!p)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int f = 0; f < r->n_files; f++)
        for (int64_t it = 0; it < r->files[f].items; it++, row++) {
            mps_infer_probabilities(r, g, row, p, k);
            int64_t top = mps_infer_top1(p, k);
            run->expect_items++;
            if (top == r->expect_class || run->expect_bad++)
                continue;
            char name[300];
            snprintf(name, sizeof name, r->files[f].items > 1 ? "%s (item %lld)" : "%s", r->files[f].path,
                     (long long)it);
            if (top < 0)
                snprintf(run->expect_first, sizeof run->expect_first, "%s has no top class: its output is NaN", name);
            else
                snprintf(run->expect_first, sizeof run->expect_first, "%s has top class %lld '%s'", name,
                         (long long)top, top < r->n_labels ? r->labels[top] : "");
        }
    free(p);
    return MPS_OK;
}

/* Appends the first output of the chunk's items to run->kept. */
static enum mps_status mps_infer_keep(struct mps_infer_run *run, const struct mps_tensor *out, struct mps_error *err)
{
    int64_t items = out->shape.ndim ? out->shape.dim[0] : 1, per = items ? mps_shape_numel(&out->shape) / items : 0;
    if (!run->kept.data) {
        run->kept = mps_tensor_make(out->dtype, &out->shape, NULL);
        run->kept.shape.dim[0] = 0;
    }
    if (out->dtype != run->kept.dtype || out->shape.ndim != run->kept.shape.ndim)
        return MPS_OK; /* not one array: the check will say the shapes differ */
    int64_t have = run->kept.shape.ndim ? run->kept.shape.dim[0] : 0;
    if (have + items > run->kept_cap) {
        int64_t cap = run->kept_cap ? run->kept_cap * 2 : items;
        cap = cap < have + items ? have + items : cap;
        void *data = realloc(run->kept.data, mps_dtype_size(out->dtype) * (size_t)(cap * per + 1));
        if (!data)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory keeping the output for --check");
        run->kept.data = data;
        run->kept_cap = cap;
    }
    memcpy((char *)run->kept.data + mps_dtype_size(out->dtype) * (size_t)(have * per), out->data,
           mps_tensor_bytes(out));
    if (run->kept.shape.ndim)
        run->kept.shape.dim[0] = have + items;
    return MPS_OK;
}

/* The stream's function: tally, keep and write each chunk, then report it. */
static enum mps_status mps_infer_chunk(void *ctx, struct mps_infer_result *r, struct mps_error *err)
{
    struct mps_infer_run *run = ctx;
    enum mps_status st = mps_infer_report_chunk(&run->rep, r, err);
    if (st || !r->n_groups)
        return st;
    const struct mps_tensor *out = &r->groups[0].out[0];
    if (r->expect && (st = mps_infer_tally(run, r, err)))
        return st;
    if (run->checking && (st = mps_infer_keep(run, out, err)))
        return st;
    if (run->npy && (st = mps_npy_stream_append(run->npy, out->data, out->shape.ndim ? out->shape.dim[0] : 1, err)))
        run->write_failed = true;
    if (!st && run->png && (st = mps_infer_pictures(run, r, err)))
        run->write_failed = true;
    return st;
}

/* --check ref.npy: the first output of every item must match the reference
   by mps_compare's rule (within atol + rtol times the reference's largest magnitude). */
static enum mps_status mps_infer_check(struct mps_infer_result *r, const struct mps_tensor *out, struct mps_error *err)
{
    struct mps_tensor ref;
    enum mps_status st = mps_npy_read(r->check_path, &ref, err);
    if (st) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        return mps_fail(err, st, "%s: %s", r->check_path, why);
    }
    char a[128], b[128];
    r->check_ok = false;
    if (!out->data || out->dtype != MPS_F32 || !mps_shape_eq(&out->shape, &ref.shape)) {
        snprintf(r->check_detail, sizeof r->check_detail, "output is %s %s, the reference f32 %s",
                 mps_dtype_name(out->dtype), out->data ? mps_shape_str(&out->shape, a, sizeof a) : "(none)",
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

/* A model with several inputs: one .npy each, one run, timed as --repeat says. */
static enum mps_status mps_infer_multi_run(struct mps_infer_result *r, struct mps_infer_run *run, char **paths,
                                           int n_paths, const char *backend, const struct mps_compile_opts *co,
                                           int warmup, int repeat, struct mps_error *err, const char **subject)
{
    double t0 = mps_cli_now_ms();
    enum mps_status st = mps_infer_multi(r, paths, n_paths, err, subject);
    r->t_preprocess = mps_cli_now_ms() - t0;
    if (st)
        return st;
    *subject = r->model->path;
    const struct mps_graph *g = r->model->graph;
    struct mps_infer_group *grp = &r->groups[0];
    struct mps_plan *plan = NULL;
    if (!(st = mps_backend_choose(g, backend, &r->backend, r->why_backend, sizeof r->why_backend, err)) &&
        !(st = r->backend->probe(&r->device, err)) && !(st = mps_passes_fuse(r->model->graph, r->backend, err))) {
        t0 = mps_cli_now_ms();
        st = mps_plan_compile(r->backend, g, co, &plan, err);
        r->t_compile = mps_cli_now_ms() - t0;
    }
    if (!st && !(grp->out = calloc((size_t)g->n_outputs, sizeof *grp->out)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int o = 0; !st && o < g->n_outputs; o++, grp->n_out++) {
        const struct mps_value *v = &g->values[g->outputs[o]];
        grp->out[o] = mps_tensor_make(v->dtype, &v->shape,
                                      malloc(mps_dtype_size(v->dtype) * (size_t)(mps_shape_numel(&v->shape) + 1)));
        if (!grp->out[o].data)
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    t0 = mps_cli_now_ms();
    if (!st)
        st = mps_plan_run(plan, grp->in, grp->out, err);
    r->t_first = r->t_run = mps_cli_now_ms() - t0;
    for (int i = 0; i < warmup && !st; i++)
        st = mps_plan_run(plan, grp->in, grp->out, err);
    if (!st && repeat > 0 && !(r->t_runs = calloc((size_t)repeat, sizeof *r->t_runs)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int i = 0; i < repeat && !st; i++) {
        t0 = mps_cli_now_ms();
        st = mps_plan_run(plan, grp->in, grp->out, err);
        r->t_runs[r->n_runs++] = mps_cli_now_ms() - t0;
    }
    mps_plan_free(plan);
    r->n_items = 1;
    r->t_total = r->t_preprocess + r->t_run;
    return st ? st : mps_infer_chunk(run, r, err);
}

/* Whether the INPUT arguments make a stream (several inputs, a folder, a
   list, stdin) rather than one file: known before anything is read. */
static bool mps_infer_is_stream(const char *const *args, int n)
{
    struct stat st;
    return n > 1 || !strcmp(args[0], "-") || args[0][0] == '@' || (stat(args[0], &st) == 0 && S_ISDIR(st.st_mode));
}

int mps_cli_infer(int argc, char **argv)
{
    struct arg_file *model = arg_file1(NULL, NULL, "MODEL", "an ONNX model");
    struct arg_file *inputs = arg_filen(NULL, NULL, "INPUT", 1, 1 << 16,
                                        "PNG images and .npy arrays (f32), folders of them (walked in order), "
                                        "@FILE (a list of paths, one a line), - (the list on stdin)");
    struct mps_infer_args a;
    mps_infer_args_make(&a);
    struct arg_int *top_k = arg_int0(NULL, "top-k", "K", "classes to show per input, 1 to 64 (default 5)");
    struct arg_int *repeat = arg_int0(NULL, "repeat", "N", "timed runs of one input after the first, 0 to 1000000 "
                                      "(default 10; 0 over many inputs)");
    struct arg_int *warmup = arg_int0(NULL, "warmup", "N", "untimed runs before them, 0 to 1000000 (default 1; "
                                      "0 over many inputs)");
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *jsonl = arg_lit0(NULL, "jsonl", "print a JSON object per input item, one a line, as they are ready");
    struct arg_lit *quiet = arg_lit0("q", "quiet", "print a tab-separated line per input item: path, item, class, "
                                     "label, probability");
    struct arg_lit *keep_going = arg_lit0(NULL, "keep-going", "an input that fails is said and skipped; exit 4 at the "
                                          "end if any did");
    struct arg_str *shard = arg_str0(NULL, "shard", "K/N", "run part K of N of the inputs (K from 0), or auto, "
                                     "auto/N: K (and N) from Slurm or Kubernetes");
    struct arg_file *output = arg_file0(NULL, "output", "out.npy", "write the first output (every item) to a .npy file");
    struct arg_file *png = arg_file0(NULL, "output-png", "PATH", "write the first output as pictures: a .png file for "
                                     "one input, else a folder of NNNNNN.png by input order (a class mask, or an image)");
    struct arg_lit *mask = arg_lit0(NULL, "mask", "with --output-png: a class mask even where the output has 1 or 3 "
                                    "channels (a 3-class model)");
    struct arg_str *expect = arg_str0(NULL, "expect", "CLASS", "exit 5 unless every input's top class is CLASS (an index, or a label in any case)");
    struct arg_file *check = arg_file0(NULL, "check", "ref.npy", "exit 5 unless the first output matches");
    struct arg_dbl *rtol = arg_dbl0(NULL, "rtol", "R", "--check's tolerance, 0 to 1, relative to the reference's "
                                    "largest magnitude (default 1e-5)");
    struct arg_dbl *atol = arg_dbl0(NULL, "atol", "A", "--check's absolute tolerance, 0 or more (default 0)");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(20);
    void *argtable[] = {model,  inputs, a.backend,  a.precision, a.threads, a.batch, top_k,      a.labels,
                        a.mean, a.std,  a.size,     repeat,      warmup,    json,    jsonl,      quiet,
                        keep_going, shard, output, png,        mask,        expect,    check,   rtol,       atol,
                        help,       end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Runs MODEL on each INPUT and prints the top classes with their probabilities.\n"
                           "One input: its run's timings. Many (several, a folder, a list): they stream\n"
                           "through in batches, results printed as they are ready, in bounded memory.\n"
                           "Labels, normalization and image size come from the model's metadata unless given.",
                           &done);
    struct mps_infer_result r = {.expect = expect->count ? expect->sval[0] : NULL,
                                 .check_path = check->count ? check->filename[0] : NULL};
    struct mps_infer_run run = {.output = output->count ? output->filename[0] : NULL, .checking = check->count > 0,
                                .png = png->count ? png->filename[0] : NULL};
    struct mps_inputs list = {0};
    struct mps_error err = {{0}};
    const char *subject = NULL;
    enum mps_status st = MPS_OK;
    int n_repeat = 0, n_warmup = 0, n_batch = 0;
    int64_t shard_k = 0, shard_n = 1;
    const char *shard_from = NULL;
    char shard_text[160];
    struct mps_compile_opts co = {0};
    r.tol = (struct mps_tolerance){.rtol = rtol->count ? rtol->dval[0] : 1e-5, .atol = atol->count ? atol->dval[0] : 0};
    if (done)
        goto out;
    /* every option that needs no model, before any work: one message per problem, naming the option */
    bool stream = mps_infer_is_stream(inputs->filename, inputs->count);
    if ((st = mps_infer_args_check(&a, &r, &co, &n_batch, &err)) ||
        (st = mps_cli_int(top_k, "--top-k", 1, MPS_INFER_MAX_TOP, 5, &r.top_k, &err)) ||
        (st = mps_cli_int(repeat, "--repeat", 0, 1000000, stream ? 0 : 10, &n_repeat, &err)) ||
        (st = mps_cli_int(warmup, "--warmup", 0, 1000000, stream ? 0 : 1, &n_warmup, &err)))
        goto out;
    if (stream && (n_repeat || n_warmup))
        st = mps_fail(&err, MPS_ERR_USAGE, "%s times one input's run; over many inputs the stream's speed is "
                      "reported (time a model with `mpsrun bench model`)", n_repeat ? "--repeat" : "--warmup");
    else if (!(r.tol.rtol >= 0 && r.tol.rtol <= 1))
        st = mps_fail(&err, MPS_ERR_USAGE, "--rtol must be 0 to 1, not %g", r.tol.rtol);
    else if (!(r.tol.atol >= 0 && isfinite(r.tol.atol)))
        st = mps_fail(&err, MPS_ERR_USAGE, "--atol must be a finite number not below 0, not %g", r.tol.atol);
    else if ((rtol->count || atol->count) && !check->count)
        st = mps_fail(&err, MPS_ERR_USAGE, "%s sets --check's tolerance: give --check too", rtol->count ? "--rtol"
                                                                                                        : "--atol");
    else if (json->count + jsonl->count + quiet->count > 1)
        st = mps_fail(&err, MPS_ERR_USAGE, "--%s and --%s are two report forms: give one",
                      json->count ? "json" : "jsonl", quiet->count ? "quiet" : "jsonl");
    else if (shard->count)
        st = mps_inputs_shard_parse(shard->sval[0], &shard_k, &shard_n, &shard_from, &err);
    if (!st && output->count)
        st = mps_cli_writable("--output", output->filename[0], &err);
    if (!st && mask->count && !png->count)
        st = mps_fail(&err, MPS_ERR_USAGE, "--mask says how --output-png writes: give --output-png too");
    if (!st && run.png) {
        size_t len = strlen(run.png);
        struct stat sb;
        run.png_folder = !(len > 4 && !strcasecmp(run.png + len - 4, ".png"));
        if (!run.png_folder)
            st = mps_cli_writable("--output-png", run.png, &err);
        else if (stat(run.png, &sb) == 0 && !S_ISDIR(sb.st_mode))
            st = mps_fail(&err, MPS_ERR_USAGE, "--output-png %s: not a folder (name a folder, or a file .png)", run.png);
        else if (stat(run.png, &sb) != 0 && mkdir(run.png, 0777) != 0)
            st = mps_fail(&err, MPS_ERR_USAGE, "--output-png %s: cannot make the folder: %s", run.png, strerror(errno));
    }
    if (st)
        goto out;
    run.rep = (struct mps_infer_report){.form = json->count    ? MPS_INFER_JSON
                                                : jsonl->count ? MPS_INFER_JSONL
                                                : quiet->count ? MPS_INFER_QUIET
                                                               : MPS_INFER_TEXT,
                                        .stream = stream, .keep_going = keep_going->count > 0};

    /* the inputs: folders walked, lists read, this process's share kept */
    for (int i = 0; i < inputs->count && !st; i++)
        st = mps_inputs_add(&list, inputs->filename[i], &err);
    if (st)
        goto out;
    if (shard->count) {
        mps_inputs_shard(&list, shard_k, shard_n);
        char x[32], y[32], z[32];
        snprintf(shard_text, sizeof shard_text, "shard %lld of %lld (%s): %s of %s inputs, from %s", (long long)shard_k,
                 (long long)shard_n, shard_from, mps_cli_count(list.n, x, sizeof x),
                 mps_cli_count(list.total, y, sizeof y), mps_cli_count(list.first, z, sizeof z));
        run.rep.shard = shard_text;
    } else if (!list.n) {
        st = mps_fail(&err, MPS_ERR_INPUT, "no inputs: the folders and lists given hold no .png or .npy file");
        goto out;
    }
    run.rep.total = list.n;
    if (run.png && !run.png_folder && list.n > 1) {
        st = mps_fail(&err, MPS_ERR_USAGE, "--output-png %s is one file, and there are %lld inputs: name a folder",
                      run.png, (long long)list.n);
        goto out;
    }

    /* the model, and what the options need of it, before any input is read */
    if ((st = mps_infer_setup(&r, model->filename[0], &a, &subject, &err)))
        goto out;
    if (r.model->graph->n_inputs > 1 && (stream || shard->count)) {
        st = mps_fail(&err, MPS_ERR_USAGE, "the model takes %d inputs: give one .npy file for each, as files",
                      r.model->graph->n_inputs);
        subject = NULL;
        goto out;
    }

    /* --output opened now, so that a file that cannot be written is said before any input runs */
    if (run.output) {
        const struct mps_value *o = &r.model->graph->values[r.model->graph->outputs[0]];
        struct mps_shape item = o->shape; /* each run appends its items of the output */
        item.ndim = item.ndim ? item.ndim - 1 : 0;
        memmove(item.dim, o->shape.dim + 1, sizeof(int64_t) * (size_t)item.ndim);
        if ((st = mps_npy_stream_open(run.output, o->dtype, &item, &run.npy, &err))) {
            subject = NULL; /* the message names the file */
            goto out;
        }
    }

    if (run.png) {
        const struct mps_value *o = &r.model->graph->values[r.model->graph->outputs[0]];
        int64_t plane = o->shape.ndim >= 2 ? o->shape.dim[o->shape.ndim - 1] * o->shape.dim[o->shape.ndim - 2] : 0;
        if ((st = mps_infer_png_kind(o, mask->count > 0, &run.png_mask, &err))) {
            subject = NULL;
            goto out;
        }
        if (!(run.pixels = malloc((size_t)(plane * 3 + 1)))) {
            st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
            goto out;
        }
    }

    /* the run: one model input streams, several take one .npy each */
    const char *be = a.backend->count ? a.backend->sval[0] : "auto";
    run.rep.batch = a.batch->count ? n_batch : mps_stream_default_batch(&r);
    if (r.model->graph->n_inputs > 1) {
        st = mps_infer_multi_run(&r, &run, (char **)inputs->filename, inputs->count, be, &co, n_warmup, n_repeat, &err,
                                 &subject);
    } else {
        struct mps_stream_opts so = {.batch = run.rep.batch, .keep_going = run.rep.keep_going, .co = &co,
                                     .backend = be, .warmup = n_warmup, .repeat = n_repeat,
                                     .progress = stream};
        st = mps_stream_run(&r, &list, &so, mps_infer_chunk, &run, &err, &subject);
    }
    if (st && !r.stopped) {
        subject = run.write_failed ? NULL : subject;
        goto out;
    }

    /* the checks, the report's end, the exit code; a stream stopped at a bad
       file ends its report (a --json document stays whole), checks nothing
       and exits with that file's error */
    struct mps_error stop = err;
    const char *stop_subject = subject;
    if ((st = mps_npy_stream_close(run.npy, &err))) {
        run.npy = NULL;
        subject = NULL; /* the message names the file */
        goto out;
    }
    run.npy = NULL;
    enum mps_status check_st = MPS_OK;
    if (r.check_path && !r.stopped)
        check_st = mps_infer_check(&r, &run.kept, &err);
    if (!check_st && r.expect && !r.stopped) {
        r.expect_ok = run.expect_items > 0 && !run.expect_bad; /* no item is no evidence */
        char x[32], y[32];
        if (!run.expect_items)
            check_st = mps_fail(&err, MPS_ERR_CHECK, "--expect %s: no input item was run", r.expect);
        else if (run.expect_bad == 1 && run.expect_items == 1)
            check_st = mps_fail(&err, MPS_ERR_CHECK, "--expect %s: %s", r.expect, run.expect_first);
        else if (run.expect_bad)
            check_st = mps_fail(&err, MPS_ERR_CHECK, "--expect %s: %s of %s items have another top class; the first: %s",
                                r.expect, mps_cli_count(run.expect_bad, x, sizeof x),
                                mps_cli_count(run.expect_items, y, sizeof y), run.expect_first);
    }
    if (!mps_infer_report_end(&run.rep, &r)) {
        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
    } else if (run.png_written && run.rep.form == MPS_INFER_TEXT && !r.stopped) {
        const struct mps_value *o = &r.model->graph->values[r.model->graph->outputs[0]];
        int64_t c = o->shape.ndim == 4 ? o->shape.dim[1] : 1;
        char x[32], kind[96];
        if (!run.png_mask)
            snprintf(kind, sizeof kind, "%s images, [0, 1] as 0 to 255", c == 3 ? "RGB" : "gray");
        else if (o->dtype == MPS_F32)
            snprintf(kind, sizeof kind, "class masks (the largest of %lld scores a pixel), VOC palette", (long long)c);
        else
            snprintf(kind, sizeof kind, "class masks (the output's classes), VOC palette");
        printf("pictures   %s PNG file%s %s %s: %s\n", mps_cli_count(run.png_written, x, sizeof x),
               run.png_written > 1 ? "s" : "", run.png_folder ? "in" : "as", run.png, kind);
    } else if (r.stopped) {
        err = stop;
        st = MPS_ERR_INPUT;
        subject = stop_subject;
        goto out;
    } else if (r.n_failed) {
        char x[32], y[32];
        st = mps_fail(&err, MPS_ERR_INPUT, "%s of %s inputs failed (each named above)",
                      mps_cli_count(r.n_failed, x, sizeof x), mps_cli_count(list.n, y, sizeof y));
    } else {
        st = check_st;
    }
    if (st)
        subject = NULL;
out:
    if (st) {
        mps_cli_error(subject, "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    mps_npy_stream_close(run.npy, &err);
    free(run.pixels);
    mps_infer_report_free(&run.rep);
    free(run.kept.data);
    mps_inputs_free(&list);
    mps_infer_free_groups(&r);
    free(r.t_runs);
    mps_model_free(r.model);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
