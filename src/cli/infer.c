/* infer.c: `mpsrun infer MODEL INPUT...`: runs a model on PNG or .npy inputs
   and reports what it sees, with timings; --expect and --check turn it into a
   check for CI scripts (exit code 5). Every option is checked before any
   input is read; the exit code is decided in one place (mps_infer_verdict)
   from everything that happened; --output and the pictures are written
   whole or not at all (outfile.h; infer_png.c and infer_rows.c write them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "infer.h"
#include "infer_run.h"
#include "inputs.h"
#include "npy.h"
#include "npz.h"
#include "outfile.h"
#include "stream.h"

#define MPS_INFER_MAX_TOP 64

/* The stream's function: the pictures (so the report can name them), the
   report, then --expect's tally and the rows. */
static enum mps_status mps_infer_chunk(void *ctx, struct mps_infer_result *r, struct mps_error *err)
{
    struct mps_infer_run *run = ctx;
    enum mps_status st = MPS_OK, pic = MPS_OK;
    struct mps_error pic_err = {{0}};
    if (run->png && r->n_groups)
        pic = mps_infer_pictures(run, r, &pic_err);
    if ((st = mps_infer_report_chunk(&run->rep, r, err)))
        return st;
    if (pic) {
        *err = pic_err;
        return pic;
    }
    if (r->expect && r->n_groups && (st = mps_infer_tally(run, r, err)))
        return st;
    if ((run->rep.output_path || run->checking) && (st = mps_infer_rows(run, r, err)))
        return st;
    if (run->rep.outputs_path && r->n_groups && (st = mps_infer_write_outputs(run, r, err)))
        run->write_failed = true;
    return st;
}

/* A run fed by file (several inputs, an input of another type than f32,
   --input, an .npz): its inputs read (mps_infer_feed) and the model built
   at their shapes (mps_infer_setup) before it; one run, timed as --repeat
   says. */
static enum mps_status mps_infer_feed_run(struct mps_infer_result *r, struct mps_infer_run *run, const char *backend,
                                          const struct mps_compile_opts *co, int warmup, int repeat,
                                          struct mps_error *err, const char **subject)
{
    double t0;
    enum mps_status st = MPS_OK;
    *subject = r->model->path;
    struct mps_model *m = r->model;
    const struct mps_graph *g = m->graph;
    struct mps_infer_group *grp = &r->groups[0];
    struct mps_plan *plan = NULL;
    if (!(st = mps_backend_choose(g, backend, &r->backend, r->why_backend, sizeof r->why_backend, err)) &&
        !(st = r->backend->probe(&r->device, err)) && !(st = mps_passes_fuse(m->graph, r->backend, err))) {
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
    for (int i = 0; i < warmup && !st && !mps_out_interrupted(); i++)
        st = mps_plan_run(plan, grp->in, grp->out, err);
    if (!st && repeat > 0 && !(r->t_runs = calloc((size_t)repeat, sizeof *r->t_runs)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int i = 0; i < repeat && !st && !mps_out_interrupted(); i++) {
        t0 = mps_cli_now_ms();
        st = mps_plan_run(plan, grp->in, grp->out, err);
        r->t_runs[r->n_runs++] = mps_cli_now_ms() - t0;
    }
    if (plan)
        mps_stream_bounded_shapes(plan, grp->out, !st);
    mps_plan_free(plan);
    r->n_items = grp->items = r->files[0].items;
    r->n_done = 1;
    r->interrupted = mps_out_interrupted();
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

/* Whether the run feeds the model's inputs by file, one run (several
   inputs, one that is not a batch of f32, --input, an .npz), rather than
   streaming the INPUT arguments through its one input. */
static bool mps_infer_feeds(const struct mps_onnx_file *f, const struct arg_file *inputs, const struct arg_str *input)
{
    const char *names[8];
    struct mps_shape s[8];
    struct mps_model_input d[8];
    enum mps_dtype dt[8];
    int n = mps_onnx_inputs(f, names, s, d, dt, 8);
    if (input->count || n > 1)
        return true;
    if (n == 1 &&
        ((dt[0] != MPS_F32 && dt[0] != MPS_F16 && dt[0] != MPS_BF16) || s[0].ndim == 0)) /* f16, bf16: f32 (model.h) */
        return true;
    for (int i = 0; i < inputs->count; i++) {
        struct mps_npz *z;
        struct mps_error ignored;
        if (mps_npz_open(inputs->filename[i], &z, &ignored) == MPS_OK && z) {
            mps_npz_close(z);
            return true;
        }
    }
    return false;
}

/* The options infer has beside the ones it shares with eval. */
struct mps_infer_opts {
    struct mps_infer_args a;
    struct arg_file *model, *inputs, *output, *outputs, *png, *check, *labels;
    struct arg_str *input; /* --input NAME=FILE */
    struct arg_int *top_k, *repeat, *warmup;
    struct arg_lit *json, *jsonl, *quiet, *keep_going, *mask, *help;
    struct arg_str *shard, *expect;
    struct arg_dbl *rtol, *atol;
    struct arg_end *end;
};

/* --output-png PATH: a .png file, or a folder made (with its parents) if missing. */
static enum mps_status mps_infer_png_path(const char *path, bool stream, bool *folder, struct mps_error *err)
{
    size_t len = strlen(path);
    *folder = !(len > 4 && !strcasecmp(path + len - 4, ".png"));
    if (*folder)
        return mps_cli_folder("--output-png", path, err);
    if (stream)
        return mps_fail(err, MPS_ERR_USAGE,
                        "--output-png %s is one file, and the inputs are several (a folder, a list, stdin): name a "
                        "folder",
                        path);
    return mps_cli_writable("--output-png", path, err);
}

/* --outputs PATH: an .npz file, or a folder made (with its parents) if missing; one run only. */
static enum mps_status mps_infer_outputs_path(const char *path, bool stream, bool *npz, struct mps_error *err)
{
    size_t len = strlen(path);
    *npz = len > 4 && !strcasecmp(path + len - 4, ".npz");
    if (stream)
        return mps_fail(err, MPS_ERR_USAGE,
                        "--outputs %s writes the outputs of one run; over many inputs --output "
                        "writes the first output of each",
                        path);
    return *npz ? mps_cli_writable("--outputs", path, err) : mps_cli_folder("--outputs", path, err);
}

/* Every option that needs no model, before any work: one message per
   problem, naming the option. */
static enum mps_status mps_infer_options(struct mps_infer_opts *o, struct mps_infer_result *r,
                                         struct mps_infer_run *run, struct mps_compile_opts *co, bool stream, bool feed,
                                         int *n_batch, int *n_repeat, int *n_warmup, struct mps_error *err)
{
    enum mps_status st;
    if (!o->inputs->count && !o->input->count)
        return mps_fail(err, MPS_ERR_USAGE, "give an INPUT (or --input NAME=FILE)");
    if (feed && o->shard->count)
        return mps_fail(err, MPS_ERR_USAGE, "--shard splits a stream; this model's inputs are fed by file, one run");
    for (int i = 0; feed && i < o->inputs->count; i++)
        if (mps_infer_is_stream(o->inputs->filename + i, 1))
            return mps_fail(err, MPS_ERR_USAGE,
                            "%s: this model's inputs are given a file each (in its order, "
                            "--input NAME=FILE, or an .npz), one run; a folder, a list or stdin streams a model of "
                            "one f32 input",
                            o->inputs->filename[i]);
    if ((st = mps_infer_args_check(&o->a, r, co, n_batch, err)) ||
        (st = mps_cli_int(o->top_k, "--top-k", 1, MPS_INFER_MAX_TOP, 5, &r->top_k, err)) ||
        (st = mps_cli_int(o->repeat, "--repeat", 0, 1000000, stream ? 0 : 10, n_repeat, err)) ||
        (st = mps_cli_int(o->warmup, "--warmup", 0, 1000000, stream ? 0 : 1, n_warmup, err)))
        return st;
    if (stream && (*n_repeat || *n_warmup))
        return mps_fail(err, MPS_ERR_USAGE,
                        "%s times one input's run; over many inputs the stream's speed is "
                        "reported (time a model with `mpsrun bench model`)",
                        *n_repeat ? "--repeat" : "--warmup");
    if (!(r->tol.rtol >= 0 && r->tol.rtol <= 1))
        return mps_fail(err, MPS_ERR_USAGE, "--rtol must be 0 to 1, not %g", r->tol.rtol);
    if (!(r->tol.atol >= 0 && isfinite(r->tol.atol)))
        return mps_fail(err, MPS_ERR_USAGE, "--atol must be a finite number not below 0, not %g", r->tol.atol);
    if ((o->rtol->count || o->atol->count) && !o->check->count)
        return mps_fail(err, MPS_ERR_USAGE, "%s sets --check's tolerance: give --check too",
                        o->rtol->count ? "--rtol" : "--atol");
    if (o->json->count + o->jsonl->count + o->quiet->count > 1)
        return mps_fail(err, MPS_ERR_USAGE, "--%s and --%s are two report forms: give one",
                        o->json->count ? "json" : "jsonl", o->quiet->count ? "quiet" : "jsonl");
    if (o->output->count && (st = mps_cli_writable("--output", o->output->filename[0], err)))
        return st;
    if (o->mask->count && !o->png->count)
        return mps_fail(err, MPS_ERR_USAGE, "--mask says how --output-png writes: give --output-png too");
    if (run->png && (st = mps_infer_png_path(run->png, stream, &run->rep.png_folder, err)))
        return st;
    run->rep.outputs_path = o->outputs->count ? o->outputs->filename[0] : NULL;
    if (run->rep.outputs_path &&
        (st = mps_infer_outputs_path(run->rep.outputs_path, stream, &run->rep.outputs_npz, err)))
        return st;
    return MPS_OK;
}

/* --check's reference, read before anything runs: an input file (exit 4,
   naming it) when it cannot be read, is no .npy or holds no floats; f16
   (an f16 model's output) and f64 are compared as the f32 they convert to. */
static enum mps_status mps_infer_reference(struct mps_infer_run *run, const char *path, const char **subject,
                                           struct mps_error *err)
{
    enum mps_status st = mps_npy_read(path, &run->ref, err);
    if (!st && (run->ref.dtype == MPS_F16 || run->ref.dtype == MPS_F64)) {
        int64_t n = mps_shape_numel(&run->ref.shape);
        float *f = malloc(sizeof(float) * (size_t)(n + 1));
        if (f)
            mps_convert_floats(run->ref.dtype, run->ref.data, MPS_F32, f, n);
        else
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        free(run->ref.data);
        run->ref = mps_tensor_make(MPS_F32, &run->ref.shape, f);
    }
    struct mps_npy_info info = {.dtype = run->ref.dtype};
    if (!st && (st = mps_npy_require_f32(&info, err))) {
        free(run->ref.data);
        run->ref.data = NULL;
    }
    if (st) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        mps_fail(err, st, "--check's reference: %s", why);
        *subject = path;
    }
    return st;
}

/* The items of the .npy at path, by its header, for a model of one input:
   [items, item...]; 1 when it is anything else (its decoding says what is wrong). */
static int64_t mps_infer_file_items(const struct mps_infer_result *r, const char *path)
{
    const struct mps_graph *g = r->model->graph;
    struct mps_npy_info info;
    struct mps_error ignored;
    int fd;
    if (g->n_inputs != 1 || mps_npy_open(path, &info, &fd, &ignored) != MPS_OK)
        return 1;
    close(fd);
    return info.shape.ndim == g->values[g->inputs[0]].shape.ndim && info.shape.dim[0] > 1 ? info.shape.dim[0] : 1;
}

/* What the options need of the loaded model, before any input is read:
   --output opened (a file that cannot be written is said now), the kind of
   pictures, and a .png PATH against the items of its one input. */
static enum mps_status mps_infer_outputs(struct mps_infer_opts *o, struct mps_infer_result *r,
                                         struct mps_infer_run *run, struct mps_error *err)
{
    const struct mps_graph *g = r->model->graph;
    const struct mps_value *out = &g->values[g->outputs[0]];
    enum mps_status st;
    run->rep.output_path = o->output->count ? o->output->filename[0] : NULL; /* opened by the first chunk's shape */
    if (!run->png)
        return MPS_OK;
    if ((st = mps_infer_png_kind(out, o->mask->count > 0, &run->png_mask, err)))
        return st;
    run->rep.png_mask = run->png_mask;
    int64_t items = run->rep.png_folder || !o->inputs->count ? 0 : mps_infer_file_items(r, o->inputs->filename[0]);
    if (items > 1)
        return mps_fail(err, MPS_ERR_USAGE, "--output-png %s is one file, and %s holds %lld items: name a folder",
                        run->png, o->inputs->filename[0], (long long)items);
    return MPS_OK;
}

/* The exit status, from everything that happened, whatever the report form
   and the outputs: a write that failed (1) outranks an input that failed
   (4: the stream stopped at one, or some failed under --keep-going), which
   outranks a failed --check or --expect (5). err gets the message. */
static enum mps_status mps_infer_verdict(const struct mps_infer_result *r, const struct mps_infer_run *run,
                                         int64_t listed, enum mps_status check_st, const struct mps_error *check_err,
                                         struct mps_error *err)
{
    int64_t failed = r->n_failed + run->png_failed;
    char x[32], y[32];
    if (r->stopped)
        return MPS_ERR_INPUT; /* err holds the stop's message */
    if (failed) {
        char pics[64] = "";
        if (run->png_failed)
            snprintf(pics, sizeof pics, "; %s with no picture", mps_cli_count(run->png_failed, x, sizeof x));
        return mps_fail(err, MPS_ERR_INPUT, "%s of %s input%s failed (each named above%s)",
                        mps_cli_count(failed, x, sizeof x), mps_cli_count(listed, y, sizeof y), listed == 1 ? "" : "s",
                        pics);
    }
    if (check_st)
        *err = *check_err;
    return check_st;
}

/* After the run: the checks (when every input ran), the report's end, the
   outputs committed (or given up when the run did not end), the verdict.
   st and err are the run's. */
static enum mps_status mps_infer_finish(struct mps_infer_result *r, struct mps_infer_run *run,
                                        const struct mps_inputs *list, enum mps_status st, struct mps_error *err,
                                        const char **subject)
{
    struct mps_error check_err = {{0}};
    enum mps_status check_st = MPS_OK;
    bool whole = !r->stopped && !r->interrupted; /* every input ran: there is something to judge */
    run->rep.total = list->n;
    run->rep.listed_all = list->done;
    if (whole && r->check_path)
        check_st = mps_infer_check(r, run, &check_err);
    if (whole && r->expect) { /* judged beside --check: the report says both; the exit names the first */
        r->expect_ok = run->expect_items > 0 && !run->expect_bad; /* no item is no evidence */
        struct mps_error e = {{0}};
        enum mps_status expect_st = MPS_OK;
        char x[32], y[32];
        if (!run->expect_items)
            expect_st = mps_fail(&e, MPS_ERR_CHECK, "--expect %s: no input item was run", r->expect);
        else if (run->expect_bad == 1 && run->expect_items == 1)
            expect_st = mps_fail(&e, MPS_ERR_CHECK, "--expect %s: %s", r->expect, run->expect_first);
        else if (run->expect_bad)
            expect_st = mps_fail(&e, MPS_ERR_CHECK, "--expect %s: %s of %s items have another top class; the first: %s",
                                 r->expect, mps_cli_count(run->expect_bad, x, sizeof x),
                                 mps_cli_count(run->expect_items, y, sizeof y), run->expect_first);
        if (expect_st && !check_st) {
            check_st = expect_st;
            check_err = e;
        }
    }
    if (check_st && check_st != MPS_ERR_CHECK) { /* out of memory */
        *err = check_err;
        return check_st;
    }
    /* --output: written when every input ran, a failed one's rows as NaN */
    enum mps_status out_st = MPS_OK;
    struct mps_error out_err = {{0}};
    run->rep.output_rows = run->rows;
    run->rep.output_nan = run->n_failed_rows;
    run->rep.first_nan = run->n_failed_rows ? run->failed_rows[0] : -1;
    if (whole)
        out_st = mps_npy_stream_close(run->npy, &out_err);
    else
        mps_npy_stream_abort(run->npy);
    run->rep.output_written = whole && run->npy && !out_st;
    run->npy = NULL;
    run->rep.png_written = run->png_written;
    if (!mps_infer_report_end(&run->rep, r))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    if (out_st) {
        *subject = NULL; /* the message names the file */
        *err = out_err;
        return out_st;
    }
    if (r->stopped) {
        *subject = run->stop_named ? run->stop_subject : *subject;
        return st;
    }
    if (r->interrupted) { /* said, then the process ends by the signal */
        char x[32];
        mps_cli_error(NULL, "interrupted by %s after %s input%s%s", mps_out_signal_name(r->interrupted),
                      mps_cli_count(r->n_done, x, sizeof x), r->n_done == 1 ? "" : "s",
                      run->rep.output_path ? "; --output not written" : "");
        return MPS_OK;
    }
    *subject = NULL;
    return mps_infer_verdict(r, run, list->n, check_st, &check_err, err);
}

static void mps_infer_opts_make(struct mps_infer_opts *o)
{
    o->model = arg_file1(NULL, NULL, "MODEL", "an ONNX model");
    o->inputs = arg_filen(NULL, NULL, "INPUT", 0, 1 << 16,
                          "PNG images and .npy arrays (f32), folders of them (walked in order), "
                          "@FILE (a list of paths, one a line), - (the list on stdin, read as it comes); for a "
                          "model of several inputs (or one not f32), a .npy per input in its order, or an .npz");
    o->input = arg_strn(NULL, "input", "NAME=FILE", 0, 8,
                        "the model's input NAME from FILE (a .npy of its type, "
                        "or an .npz's array of that name)");
    mps_infer_args_make(&o->a);
    o->top_k = arg_int0(NULL, "top-k", "K", "classes to show per input, 1 to 64 (default 5)");
    o->repeat = arg_int0(NULL, "repeat", "N",
                         "timed runs of one input after the first, 0 to 1000000 "
                         "(default 10; 0 over many inputs)");
    o->warmup = arg_int0(NULL, "warmup", "N", "untimed runs before them, 0 to 1000000 (default 1; 0 over many inputs)");
    o->json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    o->jsonl = arg_lit0(NULL, "jsonl", "print a JSON object per input item, one a line, as they are ready");
    o->quiet = arg_lit0("q", "quiet",
                        "print a tab-separated line per input item: path, item, class, label, "
                        "probability");
    o->keep_going = arg_lit0(NULL, "keep-going",
                             "an input that fails is said and skipped; exit 4 at the end if any "
                             "did");
    o->shard = arg_str0(NULL, "shard", "K/N",
                        "run part K of N of the inputs (K from 0), or auto, auto/N: K (and N) "
                        "from Slurm or Kubernetes");
    o->output = arg_file0(NULL, "output", "out.npy",
                          "write the first output (every item; NaN for an input that "
                          "failed) to a .npy file");
    o->outputs = arg_file0(NULL, "outputs", "DIR|FILE.npz",
                           "write every output of the run: DIR/NAME.npy each, or "
                           "one .npz of them by name (one run: a file, or a model's inputs by file)");
    o->png = arg_file0(NULL, "output-png", "PATH",
                       "write the first output as pictures: a .png file for one input, "
                       "else a folder of NNNNNN.png by input order (a class mask, or an image)");
    o->mask = arg_lit0(NULL, "mask",
                       "with --output-png: a class mask even where the output has 1 or 3 channels "
                       "(a 3-class model)");
    o->expect = arg_str0(NULL, "expect", "CLASS",
                         "exit 5 unless every input's top class is CLASS (an index, or a "
                         "label in any case)");
    o->check = arg_file0(NULL, "check", "ref.npy", "exit 5 unless the first output matches");
    o->rtol = arg_dbl0(NULL, "rtol", "R",
                       "--check's tolerance, 0 to 1, relative to the reference's largest "
                       "magnitude (default 1e-5)");
    o->atol = arg_dbl0(NULL, "atol", "A", "--check's absolute tolerance, 0 or more (default 0)");
    o->help = arg_lit0("h", "help", "print this help");
    o->end = arg_end(20);
}

int mps_cli_infer(int argc, char **argv)
{
    struct mps_infer_opts o;
    mps_infer_opts_make(&o);
    void *argtable[] = {o.model,    o.inputs,     o.input, o.a.backend, o.a.precision, o.a.threads, o.a.batch, o.top_k,
                        o.a.labels, o.a.mean,     o.a.std, o.a.size,    o.repeat,      o.warmup,    o.json,    o.jsonl,
                        o.quiet,    o.keep_going, o.shard, o.output,    o.outputs,     o.png,       o.mask,    o.expect,
                        o.check,    o.rtol,       o.atol,  o.help,      o.end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, o.help, o.end,
                           "Runs MODEL on each INPUT and prints the top classes with their probabilities.\n"
                           "One input: its run's timings. Many (several, a folder, a list): they stream\n"
                           "through in batches, results printed as they are ready, in bounded memory.\n"
                           "Labels, normalization and image size come from the model's metadata unless given.",
                           &done);
    struct mps_infer_result r = {.expect = o.expect->count ? o.expect->sval[0] : NULL,
                                 .check_path = o.check->count ? o.check->filename[0] : NULL};
    struct mps_infer_run run = {.checking = o.check->count > 0,
                                .png = o.png->count ? o.png->filename[0] : NULL,
                                .keep_going = o.keep_going->count > 0};
    struct mps_inputs list = {0};
    struct mps_error err = {{0}};
    const char *subject = NULL;
    enum mps_status st = MPS_OK;
    int n_repeat = 0, n_warmup = 0, n_batch = 0;
    int64_t shard_k = 0, shard_n = 1;
    const char *shard_from = NULL;
    char shard_text[160];
    struct mps_compile_opts co = {0};
    r.tol = (struct mps_tolerance){.rtol = o.rtol->count ? o.rtol->dval[0] : 1e-5,
                                   .atol = o.atol->count ? o.atol->dval[0] : 0};
    if (done)
        goto out;
    if ((st = mps_onnx_open(o.model->filename[0], &r.file, &err))) {
        subject = o.model->filename[0];
        goto out;
    }
    bool feed = mps_infer_feeds(r.file, o.inputs, o.input);
    bool stream = !feed && o.inputs->count && mps_infer_is_stream(o.inputs->filename, o.inputs->count);
    run.rep = (struct mps_infer_report){.form = o.json->count    ? MPS_INFER_JSON
                                                : o.jsonl->count ? MPS_INFER_JSONL
                                                : o.quiet->count ? MPS_INFER_QUIET
                                                                 : MPS_INFER_TEXT,
                                        .stream = stream,
                                        .keep_going = run.keep_going,
                                        .png = run.png};
    if ((st = mps_infer_options(&o, &r, &run, &co, stream, feed, &n_batch, &n_repeat, &n_warmup, &err)) ||
        (o.shard->count && (st = mps_inputs_shard_parse(o.shard->sval[0], &shard_k, &shard_n, &shard_from, &err))) ||
        (r.check_path && (st = mps_infer_reference(&run, r.check_path, &subject, &err))))
        goto out;

    /* the inputs: folders walked, lists read (stdin as it comes, unless a shard needs all of it), this
       process's share kept */
    if (!feed && (st = mps_inputs_begin(&list, o.inputs->filename, o.inputs->count, !o.shard->count, &err)))
        goto out;
    if (o.shard->count) {
        mps_inputs_shard(&list, shard_k, shard_n);
        char x[32], y[32], z[32];
        snprintf(shard_text, sizeof shard_text, "shard %lld of %lld (%s): %s of %s inputs, from %s", (long long)shard_k,
                 (long long)shard_n, shard_from, mps_cli_count(list.n, x, sizeof x),
                 mps_cli_count(list.total, y, sizeof y), mps_cli_count(list.first, z, sizeof z));
        run.rep.shard = shard_text;
    } else if (!feed && !list.n && list.done) {
        st = mps_fail(&err, MPS_ERR_INPUT, "no inputs: the folders and lists given hold no .png or .npy file");
        goto out;
    }
    run.rep.total = list.done ? list.n : -1;

    /* a run fed by file reads its inputs first: the model is built at their shapes */
    if (feed) {
        struct mps_shape shapes[8];
        double t0 = mps_cli_now_ms();
        st = mps_infer_feed(&r, o.inputs->filename, o.inputs->count, o.input->sval, o.input->count, shapes, &err,
                            &subject);
        r.t_preprocess = mps_cli_now_ms() - t0;
        if (st)
            goto out;
    }

    /* the model, and what the options need of it, before any input is read */
    if ((st = mps_infer_setup(&r, o.model->filename[0], &o.a, &subject, &err)))
        goto out;
    if ((st = mps_infer_outputs(&o, &r, &run, &err))) {
        subject = NULL; /* the message names the option or the file */
        goto out;
    }

    /* the run: one model input streams, several take one .npy each; a signal ends it after the chunk that runs */
    const char *be = o.a.backend->count ? o.a.backend->sval[0] : "auto";
    run.rep.batch = o.a.batch->count ? n_batch : mps_stream_default_batch(&r);
    if (!stream && !feed && !o.a.batch->count) /* one file is one run, however many items it holds */
        run.rep.batch = mps_infer_file_items(&r, o.inputs->filename[0]) > run.rep.batch
                            ? mps_infer_file_items(&r, o.inputs->filename[0])
                            : run.rep.batch;
    mps_out_defer(true);
    if (feed) {
        st = mps_infer_feed_run(&r, &run, be, &co, n_warmup, n_repeat, &err, &subject);
    } else {
        struct mps_stream_opts so = {.batch = run.rep.batch,
                                     .keep_going = run.keep_going,
                                     .co = &co,
                                     .backend = be,
                                     .warmup = n_warmup,
                                     .repeat = n_repeat,
                                     .progress = stream,
                                     .cancel = mps_out_interrupted};
        st = mps_stream_run(&r, &list, &so, mps_infer_chunk, &run, &err, &subject);
    }
    if (st && !r.stopped) {
        subject = run.write_failed ? NULL : subject;
        goto out;
    }
    st = mps_infer_finish(&r, &run, &list, st, &err, &subject);
out:
    mps_npy_stream_abort(run.npy); /* a run that did not end leaves the file that was there */
    if (st) {
        mps_cli_error(subject, "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    fflush(stdout);
    mps_out_reraise(); /* ends the process by the signal that stopped the run, if one did */
    mps_out_defer(false);
    free(run.pixels);
    mps_infer_report_free(&run.rep);
    free(run.kept.data);
    free(run.ref.data);
    free(run.failed_rows);
    mps_inputs_free(&list);
    mps_infer_free_groups(&r);
    free(r.t_runs);
    mps_model_free(r.model);
    mps_onnx_close(r.file);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
