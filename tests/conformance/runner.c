/* runner.c: tests in the layout of the official ONNX backend test suite, on
   every available backend.

   conformance [--rtol R] [--atol A] [--filter TEXT] EXPECTED DIR...

   For each DIR/test_* (the suite's folders node, pytorch-converted, ...; or
   PyTorch exports written the same way by tests/models/export_torch.py):
   loads model.onnx for the shapes of test_data_set_0's inputs, runs every
   test_data_set_N (one whose inputs have other shapes, as a model of free
   sizes is tested at several, on the model built again for them), and
   compares each output_N.pb by mps_compare's rule
   (compare.h: |got - want| <= atol + rtol * the output's largest magnitude;
   by default rtol 1e-5, atol 0; integers exactly). Each model also runs
   without the optimizing passes, and both runs must agree by the same rule.
   Integer and one-element inputs (shapes, axes, bounds the suite feeds at
   run time) are given to the loader as values: mpsrun compiles a model for
   them, as it does for input shapes; so are short float lists (Resize's
   scales and roi) and small bool tensors where the model does not load
   without them, as `mpsrun infer` does. (Compress's condition and NonZero's
   input are run-time inputs: their outputs' sizes are each run's.)
   A test is skipped, with its reason, when it uses an op outside mpsrun's
   set, a data type mpsrun does not support, or training mode; anything else
   that goes wrong is a failure. EXPECTED lists the tests that must pass (one
   "folder/test" a line): the exit code is 1 when any of them does not. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare.h"
#include "harness.h" /* th_backend_mps_sim */
#include "model.h"

#define MPS_CONF_MAX_IO 32

enum mps_conf_result { MPS_CONF_PASS, MPS_CONF_FAIL, MPS_CONF_SKIP };

struct mps_conf_set {
    struct mps_tensor in[MPS_CONF_MAX_IO], out[MPS_CONF_MAX_IO];
    int n_in, n_out;
    struct mps_tensor rt[MPS_CONF_MAX_IO]; /* the inputs that stay runtime inputs */
    int n_rt;
    int counts[MPS_CONF_MAX_IO]; /* per input file: the tensors in[] holds of it (sequences, optionals) */
};

/* Whether the suite's input t is a parameter the model is specialized for
   (lists: short 1-D float lists too). */
static bool mps_conf_is_param(const struct mps_tensor *t, bool lists)
{
    return t->dtype == MPS_I64 || t->dtype == MPS_I32 || mps_shape_numel(&t->shape) <= 1 ||
           (lists && t->shape.ndim == 1 && t->shape.dim[0] <= 2 * MPS_MAX_DIMS) ||
           (lists && t->dtype == MPS_BOOL && mps_shape_numel(&t->shape) <= 64);
}

static int mps_conf_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the entries of dir starting with prefix; free each and the array. */
static char **mps_conf_list(const char *dir, const char *prefix, int *count)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    *count = 0;
    if (!d)
        return NULL;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char **grown = realloc(names, sizeof *names * (size_t)(*count + 1));
        if (!grown)
            break;
        names = grown;
        names[(*count)++] = strdup(e->d_name);
    }
    closedir(d);
    if (names)
        qsort(names, (size_t)*count, sizeof *names, mps_conf_cmp);
    return names;
}

static void mps_conf_free_list(char **names, int count)
{
    for (int i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

static void mps_conf_free_set(struct mps_conf_set *s)
{
    for (int i = 0; i < s->n_in; i++)
        free(s->in[i].data);
    for (int i = 0; i < s->n_out; i++)
        free(s->out[i].data);
    memset(s, 0, sizeof *s);
}

/* Reads dir/<prefix>_0.pb, _1.pb, ... while they exist, file j of kinds[j]
   (a tensor past n_kinds): their tensors in order into t[*n], how many each
   file held into counts[j] (an empty optional -1). */
static enum mps_status mps_conf_read_pbs(const char *dir, const char *prefix, const enum mps_io_kind *kinds,
                                         int n_kinds, struct mps_tensor *t, int *n, int *counts,
                                         struct mps_error *err)
{
    char path[1024];
    struct stat st;
    *n = 0;
    for (int j = 0; *n < MPS_CONF_MAX_IO; j++) {
        snprintf(path, sizeof path, "%s/%s_%d.pb", dir, prefix, j);
        if (stat(path, &st) != 0)
            return MPS_OK;
        enum mps_status s = mps_onnx_read_value_file(path, j < n_kinds ? kinds[j] : MPS_IO_TENSOR, t + *n,
                                                     MPS_CONF_MAX_IO - *n, &counts[j], err);
        if (s)
            return s;
        *n += counts[j] > 0 ? counts[j] : 0;
    }
    return MPS_OK;
}

/* Whether data of dtype file goes into (or comes out of) the graph as dtype graph: the f16 the model file
   declares, computed in f32 (model.h). */
static bool mps_conf_widened(enum mps_dtype graph, enum mps_dtype file)
{
    return graph == MPS_F32 && (file == MPS_F16 || file == MPS_BF16);
}

/* ONNX 1.12's suite stores bfloat16 data as uint16 tensors of the bit
   patterns: t as what it holds where the graph has a bf16 (or, a model's
   bf16 widened, an f32) in its place. */
static void mps_conf_bf16_bits(enum mps_dtype graph, struct mps_tensor *t)
{
    if ((graph == MPS_BF16 || graph == MPS_F32) && t->dtype == MPS_U16)
        t->dtype = MPS_BF16;
}

/* Compares got with want by mps_compare's rule; writes why they differ into why.
   *worst keeps the largest error seen, relative to the output's scale. */
static bool mps_conf_close(const struct mps_tensor *got, const struct mps_tensor *want, struct mps_tolerance tol,
                           double *worst, char *why, size_t size)
{
    char a[128], b[128];
    struct mps_tensor bits = *want;
    mps_conf_bf16_bits(got->dtype, &bits);
    want = &bits;
    if ((got->dtype != want->dtype && !mps_conf_widened(got->dtype, want->dtype)) ||
        !mps_shape_eq(&got->shape, &want->shape)) {
        snprintf(why, size, "got %s %s, expected %s %s", mps_dtype_name(got->dtype),
                 mps_shape_str(&got->shape, a, sizeof a), mps_dtype_name(want->dtype),
                 mps_shape_str(&want->shape, b, sizeof b));
        return false;
    }
    int64_t n = mps_shape_numel(&want->shape);
    for (int64_t i = 0; want->dtype == MPS_STRING && i < n; i++) {
        const char *g = ((const char *const *)got->data)[i], *w = ((const char *const *)want->data)[i];
        if (strcmp(g, w)) {
            snprintf(why, size, "element %lld: got \"%.40s\", expected \"%.40s\"", (long long)i, g, w);
            return false;
        }
    }
    if (want->dtype == MPS_STRING)
        return true;
    struct mps_comparison c;
    void *narrow = NULL;
    if (got->dtype != want->dtype) { /* the f16 output the model declares, as the graph's f32 */
        if (!(narrow = malloc(mps_tensor_bytes(want) + 1))) {
            snprintf(why, size, "out of memory");
            return false;
        }
        mps_convert_floats(got->dtype, got->data, want->dtype, narrow, n);
    }
    if (want->dtype == MPS_F16 || want->dtype == MPS_BF16) /* computed in f32 and rounded once: one step */
        tol.rtol = fmax(tol.rtol, want->dtype == MPS_F16 ? 0x1p-10 : 0x1p-7);
    mps_compare(want->dtype, narrow ? narrow : got->data, want->data, n, tol, &c);
    free(narrow);
    *worst = c.rel_err > *worst ? c.rel_err : *worst;
    if (!c.ok)
        mps_compare_str(&c, n, tol, why, size);
    return c.ok;
}

/* A load error that puts the test outside mpsrun's scope, or NULL. */
static const char *mps_conf_out_of_scope(const char *msg)
{
    if (strstr(msg, ": op ") && strstr(msg, "is not supported"))
        return "op outside the supported set";
    if (strstr(msg, "data type") || strstr(msg, "dtype") || strstr(msg, "is not a tensor") ||
        strstr(msg, "(Cast): cast to"))
        return "data type";
    if (strstr(msg, "training"))
        return "training mode";
    return NULL;
}

/* Runs model m on backend be over every data set; the results go into got[set][output]. */
/* Runs data set s's inputs on plan (a plan of model g) into got[s]. */
static enum mps_status mps_conf_run_set(const struct mps_graph *g, struct mps_plan *plan, struct mps_conf_set *sets,
                                        int s, struct mps_tensor (*got)[MPS_CONF_MAX_IO], struct mps_error *err)
{
    if (sets[s].n_out != g->n_outputs || sets[s].n_rt != g->n_inputs)
        return mps_fail(err, MPS_ERR_MODEL, "data set %d has %d inputs and %d outputs, the model %d and %d", s,
                        sets[s].n_rt, sets[s].n_out, g->n_inputs, g->n_outputs);
    for (int o = 0; o < g->n_outputs; o++) {
        const struct mps_value *v = &g->values[g->outputs[o]];
        size_t bytes = (size_t)mps_shape_numel(&v->shape) * mps_dtype_size(v->dtype);
        got[s][o] = mps_tensor_make(v->dtype, &v->shape, calloc(1, bytes ? bytes : 1));
    }
    struct mps_tensor in[MPS_CONF_MAX_IO];
    void *wide[MPS_CONF_MAX_IO] = {NULL};
    enum mps_status st = MPS_OK;
    for (int i = 0; i < sets[s].n_rt; i++) { /* an f16 input of the file: the graph's f32 */
        in[i] = sets[s].rt[i];
        enum mps_dtype dt = g->values[g->inputs[i]].dtype;
        mps_conf_bf16_bits(dt, &in[i]);
        if (in[i].dtype == dt || !mps_conf_widened(dt, in[i].dtype))
            continue;
        int64_t n = mps_shape_numel(&in[i].shape);
        if (!(wide[i] = malloc(sizeof(float) * (size_t)(n + 1)))) {
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
            break;
        }
        mps_convert_floats(in[i].dtype, in[i].data, dt, wide[i], n);
        in[i] = mps_tensor_make(dt, &in[i].shape, wide[i]);
    }
    if (!st)
        st = mps_plan_run(plan, in, got[s], err);
    for (int o = 0; !st && o < g->n_outputs; o++) { /* a bounded output: the size the run gave it */
        struct mps_shape shape;
        mps_plan_output_shape(plan, o, &shape);
        got[s][o] = mps_tensor_make(got[s][o].dtype, &shape, got[s][o].data);
        if (got[s][o].dtype == MPS_STRING) { /* its characters live in the plan until it goes: copied out */
            void *copy = mps_strings_dup(got[s][o].data, mps_shape_numel(&shape));
            free(got[s][o].data);
            got[s][o].data = copy;
            if (!copy)
                st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
    }
    for (int i = 0; i < sets[s].n_rt; i++)
        free(wide[i]);
    return st;
}

/* Runs every data set on backend be: on m, built for data set 0's shapes,
   and where a data set's inputs have other shapes (a model of free sizes
   run at several), on the model built again from path for them (o's
   values and passes, the set's shapes). */
static enum mps_status mps_conf_run(const char *path, const struct mps_onnx_opts *o, struct mps_model *m,
                                    const struct mps_backend *be, struct mps_conf_set *sets, int n_sets,
                                    struct mps_tensor (*got)[MPS_CONF_MAX_IO], struct mps_error *err)
{
    const struct mps_graph *g = m->graph;
    enum mps_status st = mps_passes_fuse(m->graph, be, err);
    struct mps_plan *plan = NULL;
    if (!st)
        st = mps_plan_compile(be, g, &(struct mps_compile_opts){0}, &plan, err);
    for (int s = 0; !st && s < n_sets; s++) {
        bool same = sets[s].n_rt == g->n_inputs;
        for (int i = 0; same && i < sets[s].n_rt; i++)
            same = mps_shape_eq(&sets[s].rt[i].shape, &g->values[g->inputs[i]].shape);
        if (same) {
            st = mps_conf_run_set(g, plan, sets, s, got, err);
            continue;
        }
        struct mps_shape shapes[MPS_CONF_MAX_IO];
        struct mps_onnx_opts os = *o;
        struct mps_model *ms = NULL;
        struct mps_plan *ps = NULL;
        for (int i = 0; i < sets[s].n_in; i++)
            shapes[i] = sets[s].in[i].shape;
        os.shapes = shapes;
        os.n_shapes = sets[s].n_in;
        os.counts = sets[s].counts;
        if (!(st = mps_onnx_load(path, &os, &ms, err)) && !(st = mps_passes_fuse(ms->graph, be, err)) &&
            !(st = mps_plan_compile(be, ms->graph, &(struct mps_compile_opts){0}, &ps, err)))
            st = mps_conf_run_set(ms->graph, ps, sets, s, got, err);
        mps_plan_free(ps);
        mps_model_free(ms);
    }
    mps_plan_free(plan);
    return st;
}

static struct mps_tolerance mps_conf_tol = {.rtol = 1e-5};
/* the passes (BN folding, fusion) change the summation order only */
static const struct mps_tolerance mps_conf_passes_tol = {.rtol = 1e-5};

/* Whether name contains one of the comma-separated parts of list. */
static bool mps_conf_matches(const char *name, const char *list)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *part = strtok(buf, ","); part; part = strtok(NULL, ","))
        if (strstr(name, part))
            return true;
    return false;
}

/* Tests of random numbers: the suite's expected values came from numpy's
   generator, which mpsrun does not reproduce (its own is seeded and the
   same on every run and backend: op.h). Their outputs are checked for what
   the op guarantees instead: Bernoulli's (and a Dropout's mask) are each 0
   or 1; a Dropout's output each 0 or the input times the expected's one
   scale 1 / (1 - ratio); and of 16 or more values, some are 0 and some not. */
enum mps_conf_random { MPS_CONF_EXACT, MPS_CONF_BINARY, MPS_CONF_DROPOUT };

static enum mps_conf_random mps_conf_random_kind(const char *test)
{
    const char *base = strrchr(test, '/');
    base = base ? base + 1 : test;
    if (!strncmp(base, "test_bernoulli", 14))
        return MPS_CONF_BINARY;
    if (!strncmp(base, "test_training_dropout", 21) && !strstr(base, "zero_ratio"))
        return MPS_CONF_DROPOUT;
    return MPS_CONF_EXACT;
}

/* got against the rule kind (output o; x the first input); why says where it fails. */
static bool mps_conf_random_ok(enum mps_conf_random kind, int o, const struct mps_tensor *got,
                               const struct mps_tensor *want, const struct mps_tensor *x, char *why, size_t size)
{
    int64_t n = mps_shape_numel(&got->shape);
    if (!mps_shape_eq(&got->shape, &want->shape) || got->dtype != want->dtype) {
        snprintf(why, size, "random output %d: another shape or dtype than the suite's", o);
        return false;
    }
    double k = 0; /* the kept elements' scale, from the expected output */
    for (int64_t i = 0; kind == MPS_CONF_DROPOUT && o == 0 && i < n && !k; i++)
        if (mps_elem_get(want->data, want->dtype, i) != 0 && mps_elem_get(x->data, x->dtype, i) != 0)
            k = mps_elem_get(want->data, want->dtype, i) / mps_elem_get(x->data, x->dtype, i);
    int64_t zeros = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = mps_elem_get(got->data, got->dtype, i), kept = k * mps_elem_get(x->data, x->dtype, i);
        zeros += g == 0;
        bool ok = kind == MPS_CONF_DROPOUT && o == 0 ? g == 0 || fabs(g - kept) <= 1e-6 * fabs(kept) : g == 0 || g == 1;
        if (!ok) {
            snprintf(why, size, "random output %d: element %lld is %g, not %s", o, (long long)i, g,
                     kind == MPS_CONF_DROPOUT && o == 0 ? "0 or the input over (1 - ratio)" : "0 or 1");
            return false;
        }
    }
    if (n >= 16 && (zeros == 0 || zeros == n)) { /* a generator stuck at one end passes the test above */
        snprintf(why, size, "random output %d: %lld of its %lld values are 0", o, (long long)zeros, (long long)n);
        return false;
    }
    return true;
}

/* Runs the test in dir on each backend; worst[0] gets the largest error against the
   suite's outputs, worst[1] between the runs with and without the passes, each
   relative to the output's scale. */
static enum mps_conf_result mps_conf_test(const char *dir, const struct mps_backend *const *bes, int n_bes,
                                          int *ran, double worst[2], char *why, size_t size)
{
    char path[1024];
    int n_sets;
    char **set_names = mps_conf_list(dir, "test_data_set_", &n_sets);
    struct mps_conf_set *sets = calloc((size_t)n_sets + 1, sizeof *sets);
    struct mps_tensor (*got)[MPS_CONF_MAX_IO] = calloc((size_t)n_sets + 1, sizeof *got);
    struct mps_tensor (*plain)[MPS_CONF_MAX_IO] = calloc((size_t)n_sets + 1, sizeof *plain);
    struct mps_error err = {{0}};
    enum mps_conf_result r = MPS_CONF_PASS;
    struct mps_model *opt = NULL, *raw = NULL;
    snprintf(why, size, "ok");
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    enum mps_io_kind kinds[2][MPS_CONF_MAX_IO]; /* of the inputs, of the outputs */
    int n_kinds[2] = {0, 0}, out_counts[MPS_CONF_MAX_IO];
    struct mps_onnx_file *file = NULL;
    if (!mps_onnx_open(path, &file, &err))
        for (int io = 0; io < 2; io++)
            n_kinds[io] = mps_onnx_io_kinds(file, io == 1, kinds[io], MPS_CONF_MAX_IO);
    mps_onnx_close(file);
    for (int s = 0; s < n_sets && r == MPS_CONF_PASS; s++) {
        char set_dir[1024];
        snprintf(set_dir, sizeof set_dir, "%s/%s", dir, set_names[s]);
        if (mps_conf_read_pbs(set_dir, "input", kinds[0], n_kinds[0], sets[s].in, &sets[s].n_in, sets[s].counts,
                              &err) ||
            mps_conf_read_pbs(set_dir, "output", kinds[1], n_kinds[1], sets[s].out, &sets[s].n_out, out_counts,
                              &err)) {
            /* a data type the reader does not take: the model says whether it is in scope */
            struct mps_model *m = NULL;
            struct mps_error why_model = {{0}};
            const char *scope = mps_onnx_load(path, NULL, &m, &why_model) ? mps_conf_out_of_scope(why_model.msg)
                                                                            : NULL;
            snprintf(why, size, "%s: %s", scope ? scope : "data type", scope ? why_model.msg : err.msg);
            mps_model_free(m);
            r = MPS_CONF_SKIP;
        }
    }
    if (r == MPS_CONF_PASS && n_sets == 0) {
        snprintf(why, size, "no test data sets");
        r = MPS_CONF_FAIL;
    }
    struct mps_shape shapes[MPS_CONF_MAX_IO];
    struct mps_tensor values[MPS_CONF_MAX_IO];
    struct mps_onnx_opts o = {.n_shapes = sets[0].n_in, .shapes = shapes, .values = values, .counts = sets[0].counts};
    for (int lists = 0; lists < 2 && r == MPS_CONF_PASS && !opt; lists++) {
        for (int s = 0; s < n_sets && r == MPS_CONF_PASS; s++) {
            sets[s].n_rt = 0;
            for (int i = 0; i < sets[s].n_in; i++)
                if (!mps_conf_is_param(&sets[s].in[i], lists))
                    sets[s].rt[sets[s].n_rt++] = sets[s].in[i];
            for (int i = 0; s > 0 && i < sets[s].n_in; i++)
                if (mps_conf_is_param(&sets[s].in[i], lists) &&
                    memcmp(sets[s].in[i].data, sets[0].in[i].data, mps_tensor_bytes(&sets[s].in[i])) != 0) {
                    snprintf(why, size, "data set %d gives other parameter values than data set 0", s);
                    r = MPS_CONF_FAIL;
                }
        }
        for (int i = 0; r == MPS_CONF_PASS && i < sets[0].n_in; i++) {
            shapes[i] = sets[0].in[i].shape;
            values[i] = sets[0].in[i];
            if (!mps_conf_is_param(&values[i], lists))
                values[i].data = NULL;
        }
        if (r == MPS_CONF_PASS && mps_onnx_load(path, &o, &opt, &err)) {
            if (!lists && strstr(err.msg, "must be a constant"))
                continue; /* again with the float lists as values */
            const char *scope = mps_conf_out_of_scope(err.msg);
            snprintf(why, size, "%s%s%s", scope ? scope : "", scope ? ": " : "", err.msg);
            r = scope ? MPS_CONF_SKIP : MPS_CONF_FAIL;
        }
    }
    o.no_optimize = true;
    if (r == MPS_CONF_PASS && mps_onnx_load(path, &o, &raw, &err)) {
        snprintf(why, size, "without the passes: %s", err.msg);
        r = MPS_CONF_FAIL;
    }
    for (int b = 0; r == MPS_CONF_PASS && b < n_bes; b++) {
        struct mps_onnx_opts o_raw = o;
        o_raw.no_optimize = true;
        o.no_optimize = false;
        if (b > 0) { /* the last backend's passes (the int8 products, fusions) are its own: loaded again */
            mps_model_free(opt);
            mps_model_free(raw);
            opt = raw = NULL;
            if (mps_onnx_load(path, &o, &opt, &err) || mps_onnx_load(path, &o_raw, &raw, &err)) {
                snprintf(why, size, "loaded again: %s", err.msg);
                r = MPS_CONF_FAIL;
                break;
            }
        }
        if (mps_backend_unsupported(bes[b], opt->graph, why, size))
            continue; /* a GPU backend without this op: counted in ran[] */
        ran[b]++;
        if (mps_conf_run(path, &o, opt, bes[b], sets, n_sets, got, &err) ||
            mps_conf_run(path, &o_raw, raw, bes[b], sets, n_sets, plain, &err)) {
            snprintf(why, size, "[%s] %s", bes[b]->name, err.msg);
            r = MPS_CONF_FAIL;
            break;
        }
        for (int s = 0; r == MPS_CONF_PASS && s < n_sets; s++)
            for (int i = 0; r == MPS_CONF_PASS && i < sets[s].n_out; i++) {
                char detail[256];
                struct mps_tolerance tol = mps_conf_tol, passes_tol = mps_conf_passes_tol;
                tol.log = passes_tol.log = mps_model_probabilities(opt, i);
                enum mps_conf_random random = mps_conf_random_kind(dir);
                if (random != MPS_CONF_EXACT) {
                    if (!mps_conf_random_ok(random, i, &got[s][i], &sets[s].out[i], &sets[s].in[0], detail,
                                            sizeof detail)) {
                        snprintf(why, size, "[%s] data set %d: %s", bes[b]->name, s, detail);
                        r = MPS_CONF_FAIL;
                    }
                } else if (!mps_conf_close(&got[s][i], &sets[s].out[i], tol, &worst[0], detail, sizeof detail)) {
                    snprintf(why, size, "[%s] data set %d output %d: %s", bes[b]->name, s, i, detail);
                    r = MPS_CONF_FAIL;
                } else if (!mps_conf_close(&plain[s][i], &got[s][i], passes_tol, &worst[1], detail, sizeof detail)) {
                    snprintf(why, size, "[%s] data set %d output %d: the passes changed the result: %s",
                             bes[b]->name, s, i, detail);
                    r = MPS_CONF_FAIL;
                }
            }
        for (int s = 0; s < n_sets; s++)
            for (int i = 0; i < MPS_CONF_MAX_IO; i++) {
                free(got[s][i].data);
                free(plain[s][i].data);
                got[s][i].data = plain[s][i].data = NULL;
            }
    }
    mps_model_free(opt);
    mps_model_free(raw);
    for (int s = 0; s < n_sets; s++)
        mps_conf_free_set(&sets[s]);
    free(sets);
    free(got);
    free(plain);
    mps_conf_free_list(set_names, n_sets);
    return r;
}

/* Tests whose data is not the model's, run all the same: a FAIL becomes a
   skip with the reason. ONNX 1.12's data for the window functions and their
   expanded forms, computed with pi taken as 3.1415 (hann of 10 at element 8
   0.34556 where cos gives 0.34549 and onnxruntime 1.30 agrees with it); for
   CastLike with bfloat16, a 'like' input of shape [1]
   where the model declares [3, 4] (onnxruntime refuses it too); for
   RoiAlign, values cut to 4 decimals (0.9727 where onnxruntime 1.30 and
   mpsrun give 0.97278). */
static const char *mps_conf_wrong_data(const char *test)
{
    static const struct {
        const char *test, *why;
    } wrong[] = {
#define MPS_CONF_WINDOW                                                                                         \
    "the suite's expected output is not the model's: it took pi as 3.1415 (onnxruntime computes what mpsrun does)"
#define MPS_CONF_LIKE "the suite's 'like' input is [1], the model declares [3,4] (onnxruntime refuses it too)"
#define MPS_CONF_ROI "the suite's expected values are cut to 4 decimals (onnxruntime computes what mpsrun does)"
        {"test_blackmanwindow", MPS_CONF_WINDOW},
        {"test_blackmanwindow_symmetric", MPS_CONF_WINDOW},
        {"test_hammingwindow", MPS_CONF_WINDOW},
        {"test_hammingwindow_symmetric", MPS_CONF_WINDOW},
        {"test_hannwindow", MPS_CONF_WINDOW},
        {"test_hannwindow_symmetric", MPS_CONF_WINDOW},
        {"test_blackmanwindow_expanded", MPS_CONF_WINDOW},
        {"test_blackmanwindow_symmetric_expanded", MPS_CONF_WINDOW},
        {"test_hammingwindow_expanded", MPS_CONF_WINDOW},
        {"test_hammingwindow_symmetric_expanded", MPS_CONF_WINDOW},
        {"test_hannwindow_expanded", MPS_CONF_WINDOW},
        {"test_hannwindow_symmetric_expanded", MPS_CONF_WINDOW},
        {"test_castlike_BFLOAT16_to_FLOAT", MPS_CONF_LIKE},
        {"test_castlike_BFLOAT16_to_FLOAT_expanded", MPS_CONF_LIKE},
        {"test_castlike_FLOAT_to_BFLOAT16", MPS_CONF_LIKE},
        {"test_castlike_FLOAT_to_BFLOAT16_expanded", MPS_CONF_LIKE},
        {"test_roialign_aligned_false", MPS_CONF_ROI},
        {"test_roialign_aligned_true", MPS_CONF_ROI},
#undef MPS_CONF_WINDOW
#undef MPS_CONF_LIKE
#undef MPS_CONF_ROI
    };
    const char *base = strrchr(test, '/');
    base = base ? base + 1 : test;
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
        if (!strcmp(base, wrong[i].test))
            return wrong[i].why;
    return NULL;
}

/* Whether name is in the sorted list; marks it seen. */
static bool mps_conf_expected(char **list, bool *seen, int n, const char *name)
{
    char **hit = bsearch(&name, list, (size_t)n, sizeof *list, mps_conf_cmp);
    if (hit)
        seen[hit - list] = true;
    return hit != NULL;
}

static char **mps_conf_read_expected(const char *path, int *count)
{
    FILE *f = fopen(path, "r");
    char **list = malloc(sizeof *list), line[512];
    *count = 0;
    if (!f || !list) {
        free(list);
        if (f)
            fclose(f);
        return NULL;
    }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0] || line[0] == '#')
            continue;
        char **grown = realloc(list, sizeof *list * (size_t)(*count + 1));
        if (!grown)
            break;
        list = grown;
        list[(*count)++] = strdup(line);
    }
    fclose(f);
    if (list)
        qsort(list, (size_t)*count, sizeof *list, mps_conf_cmp);
    return list;
}

int main(int argc, char **argv)
{
    const char *filter = NULL, *sim_on = NULL;
    int arg = 1;
    for (; arg + 1 < argc && strncmp(argv[arg], "--", 2) == 0; arg += 2) {
        if (strcmp(argv[arg], "--rtol") == 0)
            mps_conf_tol.rtol = atof(argv[arg + 1]);
        else if (strcmp(argv[arg], "--atol") == 0)
            mps_conf_tol.atol = atof(argv[arg + 1]);
        else if (strcmp(argv[arg], "--filter") == 0)
            filter = argv[arg + 1];
        else if (strcmp(argv[arg], "--sim-only") == 0)
            sim_on = argv[arg + 1];
        else
            break;
    }
    if (argc - arg < 2) {
        fprintf(stderr, "usage: conformance [--rtol R] [--atol A] [--filter TEXT] [--sim-only A,B,...] EXPECTED DIR...\n");
        return 2;
    }
    int n_expected;
    char **expected = mps_conf_read_expected(argv[arg], &n_expected);
    if (!expected) {
        fprintf(stderr, "conformance: cannot read the expected list %s\n", argv[arg]);
        return 2;
    }
    bool *seen = calloc((size_t)n_expected + 1, sizeof *seen);
    const struct mps_backend *bes[5];
    int n_bes = 0, n_all, ran[5] = {0};
    const struct mps_backend *const *all = mps_backend_list(&n_all);
    for (int i = 0; i < n_all; i++) {
        struct mps_backend_info info;
        struct mps_error err = {{0}};
        if (all[i]->probe(&info, &err) == MPS_OK)
            bes[n_bes++] = all[i];
        else
            printf("skip backend %s: %s\n", all[i]->name, err.msg);
    }
    bes[n_bes++] = &th_backend_mps_sim; /* the mps lowering, simulated (tests/unit/mtl_sim.c) */
    int passed = 0, failed = 0, skipped = 0, regressions = 0, n_dirs = argc - arg - 1;
    char (*summary)[200] = calloc((size_t)n_dirs, sizeof *summary);
    for (int f = 0; f < n_dirs; f++) {
        const char *dir = argv[arg + 1 + f], *slash = strrchr(dir, '/');
        const char *folder = slash && slash[1] ? slash + 1 : dir;
        struct stat st;
        if (stat(dir, &st) != 0) {
            printf("FAIL %s: no such folder (Debian: apt-get install libonnx-testdata)\n", dir);
            failed++, regressions++;
            continue;
        }
        int n_tests, fp = 0, ff = 0, fs = 0;
        char **tests = mps_conf_list(dir, "test_", &n_tests);
        for (int t = 0; t < n_tests; t++) {
            char name[512], tdir[1024], why[512];
            snprintf(name, sizeof name, "%s/%s", folder, tests[t]);
            if (filter && !strstr(name, filter))
                continue;
            snprintf(tdir, sizeof tdir, "%s/%s", dir, tests[t]);
            /* the mps-sim backend is last; --sim-only keeps it to the tests it names (it runs in double) */
            int n_run = sim_on && !mps_conf_matches(name, sim_on) ? n_bes - 1 : n_bes;
            double worst[2] = {0, 0};
            enum mps_conf_result r = mps_conf_test(tdir, bes, n_run, ran, worst, why, sizeof why);
            const char *wrong = r == MPS_CONF_FAIL ? mps_conf_wrong_data(tests[t]) : NULL;
            if (wrong) {
                char was[sizeof why];
                memcpy(was, why, sizeof was);
                snprintf(why, sizeof why, "%s: %s", wrong, was);
                r = MPS_CONF_SKIP;
            }
            bool want = mps_conf_expected(expected, seen, n_expected, name);
            if (r == MPS_CONF_PASS && mps_conf_random_kind(tests[t]) != MPS_CONF_EXACT) {
                printf("ok   %s (random: each value checked for what the op allows, not against numpy's draws)\n",
                       name);
                fp++;
            } else if (r == MPS_CONF_PASS) {
                printf("ok   %s (max error %.2g of the scale; with vs without the passes %.2g)\n", name, worst[0],
                       worst[1]);
                fp++;
            } else if (r == MPS_CONF_SKIP) {
                printf("skip %s: %s\n", name, why);
                fs++;
            } else {
                printf("FAIL %s: %s\n", name, why);
                ff++;
            }
            if (want && r != MPS_CONF_PASS) {
                printf("     ^ regression: %s is in the expected list\n", name);
                regressions++;
            }
        }
        snprintf(summary[f], sizeof summary[f], "%-18s %4d passed / %4d in scope / %4d total", folder, fp, fp + ff,
                 fp + ff + fs);
        passed += fp, failed += ff, skipped += fs;
        mps_conf_free_list(tests, n_tests);
    }
    for (int i = 0; i < n_expected && !filter; i++)
        if (!seen[i]) {
            printf("FAIL %s: in the expected list but not found\n", expected[i]);
            regressions++;
        }
    free(seen);
    printf("\n");
    for (int f = 0; f < n_dirs; f++)
        if (summary[f][0])
            printf("%s\n", summary[f]);
    for (int b = 0; b < n_bes; b++)
        printf("backend %-8s ran %d tests (the others hold a node it does not take)\n", bes[b]->name, ran[b]);
    if (regressions)
        printf("%d test%s of the expected list did not pass\n", regressions, regressions == 1 ? "" : "s");
    free(summary);
    mps_conf_free_list(expected, n_expected);
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return regressions ? 1 : 0;
}
