/* bench_model.c: `mpsrun bench model MODEL`: latency and throughput per
   batch size on each backend and precision asked; --profile gives each
   node's share on a backend that can time nodes (cpu). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "model.h"

struct mps_bench_node {
    int index;
    double ms;
};

static int mps_bench_node_cmp(const void *a, const void *b)
{
    double x = ((const struct mps_bench_node *)a)->ms, y = ((const struct mps_bench_node *)b)->ms;
    return x > y ? -1 : x < y;
}

/* Each node's median time over runs into nodes[n], biggest first; returns the sum of the medians. */
static double mps_bench_node_medians(const struct mps_graph *g, const double *node_ms, int runs,
                                     struct mps_bench_node *nodes)
{
    int n = g->n_nodes;
    double total = 0, *col = malloc(sizeof(double) * (size_t)runs);
    for (int k = 0; col && k < n; k++) {
        for (int r = 0; r < runs; r++)
            col[r] = node_ms[r * n + k];
        nodes[k] = (struct mps_bench_node){k, mps_bench_stats(col, runs).median};
        total += nodes[k].ms;
    }
    free(col);
    qsort(nodes, (size_t)n, sizeof *nodes, mps_bench_node_cmp);
    return total;
}

/* The profile: each node's median and share, biggest first, as text lines, JSON (into o) or CSV rows. */
static void mps_bench_profile(const struct mps_graph *g, const double *node_ms, int runs, cJSON *o, bool csv,
                              const char *csv_row)
{
    struct mps_bench_node *nodes = calloc((size_t)g->n_nodes + 1, sizeof *nodes);
    if (!nodes)
        return;
    double total = mps_bench_node_medians(g, node_ms, runs, nodes);
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "profile") : NULL;
    if (!o && !csv)
        printf("  %-10s %7s  %-24s %-28s %s\n", "median ms", "share", "op", "node", "output");
    for (int i = 0; i < g->n_nodes; i++) {
        const struct mps_node *nd = &g->nodes[nodes[i].index];
        char op[48], shape[96];
        double share = total > 0 ? nodes[i].ms / total : 0;
        mps_node_label(nd, op, sizeof op);
        mps_shape_str(&g->values[nd->out[0]].shape, shape, sizeof shape);
        if (arr) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "node", nd->name);
            cJSON_AddStringToObject(e, "op", op);
            cJSON_AddStringToObject(e, "output", shape);
            cJSON_AddNumberToObject(e, "median_ms", nodes[i].ms);
            cJSON_AddNumberToObject(e, "share", share);
            cJSON_AddItemToArray(arr, e);
        } else if (csv) {
            char name[512], label[96];
            printf("%s%.6f,,,,,%s,%s,%.6f\n", csv_row, nodes[i].ms, mps_cli_csv_quote(nd->name, name, sizeof name),
                   mps_cli_csv_quote(op, label, sizeof label), share);
        } else {
            printf("  %10.4f %6.1f%%  %-24s %-28.28s %s\n", nodes[i].ms, 100 * share, op, mps_cli_vis(nd->name), shape);
        }
    }
    if (!o && !csv)
        printf("  %10.4f 100.0%%  (sum of the nodes' medians)\n", total);
    free(nodes);
}

/* The largest nodes of a profile, as chart bars: the 12 largest, then the rest as "other". */
static void mps_bench_bars(const struct mps_graph *g, const double *node_ms, int runs, struct mps_bench_result *row)
{
    struct mps_bench_node *nodes = calloc((size_t)g->n_nodes + 1, sizeof *nodes);
    int top = g->n_nodes > 13 ? 12 : g->n_nodes;
    row->bars = calloc((size_t)top + 1, sizeof *row->bars);
    if (!nodes || !row->bars) {
        free(nodes);
        free(row->bars);
        row->bars = NULL;
        return;
    }
    double total = mps_bench_node_medians(g, node_ms, runs, nodes), shown = 0;
    for (int i = 0; i < top; i++) {
        const struct mps_node *nd = &g->nodes[nodes[i].index];
        char op[48];
        snprintf(row->bars[i].label, sizeof row->bars[i].label, "%s %s", mps_node_label(nd, op, sizeof op), nd->name);
        row->bars[i].ms = nodes[i].ms;
        shown += nodes[i].ms;
    }
    row->n_bars = top;
    if (top < g->n_nodes) {
        snprintf(row->bars[top].label, sizeof row->bars[top].label, "other (%d nodes)", g->n_nodes - top);
        row->bars[row->n_bars++].ms = total - shown;
    }
    free(nodes);
}

/* The model file and its inputs' shapes as --shape gives them (a free dim -1). */
struct mps_bench_inputs {
    struct mps_onnx_file *file;
    int n;
    const char *names[8];
    struct mps_shape shapes[8];
    struct mps_model_input decl[8];
};

/* The model with every input's free batch dim set to batch (the other free
   dims --shape's, or sizes it builds at); random inputs. */
static enum mps_status mps_bench_model_load(const struct mps_bench_inputs *t, int64_t batch, struct mps_model **m,
                                            struct mps_tensor *in, int *n_in, struct mps_error *err)
{
    struct mps_shape shapes[8];
    if (t->n <= 0)
        return mps_onnx_model(t->file, NULL, m, err);
    for (int i = 0; i < t->n; i++) {
        shapes[i] = t->shapes[i];
        if (shapes[i].ndim > 0 && t->decl[i].symbolic[0])
            shapes[i].dim[0] = batch;
        else if (batch != 1 && (shapes[i].ndim == 0 || shapes[i].dim[0] != batch))
            return mps_fail(err, MPS_ERR_USAGE, "the model fixes its batch; --batch %lld does not fit",
                            (long long)batch);
    }
    enum mps_status st = mps_onnx_model_free(t->file, t->n, shapes, m, err);
    if (st)
        return st;
    *n_in = (*m)->graph->n_inputs;
    for (int i = 0; i < *n_in; i++) {
        const struct mps_value *v = &(*m)->graph->values[(*m)->graph->inputs[i]];
        int64_t n = mps_shape_numel(&v->shape);
        float *d = calloc((size_t)n + 1, mps_dtype_size(v->dtype));
        for (int64_t j = 0; d && v->dtype == MPS_F32 && j < n; j++)
            d[j] = mps_bench_rand();
        in[i] = mps_tensor_make(v->dtype, &v->shape, d);
    }
    return MPS_OK;
}

/* What would stop bench model part way, found before any row is printed: a
   model that does not load, a batch it fixes otherwise, a node a backend
   asked for cannot run. */
static enum mps_status mps_bench_model_check(const struct mps_bench_inputs *t, char **batches, int n_batch,
                                             const struct mps_bench_opts *o, struct mps_error *err)
{
    struct mps_model *m;
    enum mps_status st =
        t->n > 0 ? mps_onnx_model_free(t->file, t->n, t->shapes, &m, err) : mps_onnx_model(t->file, NULL, &m, err);
    const struct mps_graph *g = st ? NULL : m->graph;
    for (int bi = 0; !st && bi < n_batch; bi++) {
        long long batch = strtoll(batches[bi], NULL, 10);
        for (int i = 0; !st && i < g->n_inputs; i++) {
            const struct mps_shape *s = &g->values[g->inputs[i]].shape;
            if (batch != 1 && !(s->ndim > 0 && (m->inputs[i].symbolic[0] || s->dim[0] == batch)))
                st = mps_fail(err, MPS_ERR_USAGE, "--batch %lld: the model fixes input '%s' at %s", batch,
                              g->values[g->inputs[i]].name, s->ndim ? "another batch" : "a scalar");
        }
    }
    for (int b = 0; !st && b < o->n_be; b++) {
        char nodes[sizeof err->msg / 2];
        int bad = mps_backend_unsupported(o->be[b], g, nodes, sizeof nodes);
        if (bad)
            st = mps_fail(err, MPS_ERR_MODEL, "backend %s cannot run %d node%s: %s", o->be[b]->name, bad,
                          bad > 1 ? "s" : "", nodes);
    }
    if (g)
        mps_model_free(m);
    return st;
}

/* One measurement: the model at a batch size on a backend and precision,
   its runs timed (and each node's, where profile and the backend can). */
struct mps_bench_run {
    struct mps_model *m;
    struct mps_plan *plan;
    struct mps_tensor in[8], *out;
    int n_in;
    double *times, *node_ms;      /* [repeat], [repeat][nodes] or NULL */
    struct mps_bench_stats t;     /* the runs with copies in and out */
    struct mps_bench_stats stays; /* resident: the inputs left on the device (where the backend can) */
};

static void mps_bench_run_free(struct mps_bench_run *r)
{
    mps_plan_free(r->plan);
    for (int i = 0; i < r->n_in; i++)
        free(r->in[i].data);
    for (int o = 0; r->out && r->m && o < r->m->graph->n_outputs; o++)
        free(r->out[o].data);
    free(r->out);
    free(r->times);
    free(r->node_ms);
    mps_model_free(r->m);
}

/* The timed runs through the plan (a backend with staging of its own, a
   GPU's pinned memory, takes the inputs there, as a stream decodes them,
   and leaves the outputs there), then the resident ones. */
static enum mps_status mps_bench_run_times(const struct mps_backend *be, const struct mps_bench_opts *opts,
                                           struct mps_bench_run *r, struct mps_error *err)
{
    const struct mps_graph *g = r->m->graph;
    enum mps_status st = MPS_OK;
    struct mps_tensor staged_in[8], *staged_out = calloc((size_t)g->n_outputs, sizeof *staged_out);
    const struct mps_tensor *run_in = r->in;
    struct mps_tensor *run_out = r->out;
    if (be->host_io && staged_out && !mps_plan_host_io(r->plan, 0, staged_in, staged_out, err)) {
        for (int i = 0; i < r->n_in; i++)
            memcpy(staged_in[i].data, r->in[i].data, mps_tensor_bytes(&r->in[i]));
        run_in = staged_in;
        run_out = staged_out;
    }
    for (int k = 0; k < opts->warmup + opts->repeat && !st; k++) {
        double t0 = mps_cli_now_ms();
        st = r->node_ms && k >= opts->warmup
                 ? be->profile(r->plan->state, r->in, r->out, r->node_ms + (size_t)(k - opts->warmup) * g->n_nodes, err)
                 : mps_plan_run(r->plan, run_in, run_out, err);
        if (k >= opts->warmup)
            r->times[k - opts->warmup] = mps_cli_now_ms() - t0;
    }
    free(staged_out);
    if (!st)
        r->t = mps_bench_stats(r->times, opts->repeat);
    if (st || !be->rerun)
        return st;
    double *rt = malloc(sizeof(double) * (size_t)opts->repeat); /* the same inputs, left there by the last run */
    for (int k = 0; rt && k < opts->repeat && !st; k++) {
        double t0 = mps_cli_now_ms();
        st = be->rerun(r->plan->state, err);
        rt[k] = mps_cli_now_ms() - t0;
    }
    if (!rt)
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    else if (!st)
        r->stays = mps_bench_stats(rt, opts->repeat);
    free(rt);
    return st;
}

/* Loads, fuses and compiles the model for backend be at precision prec, then times it. */
static enum mps_status mps_bench_run(const struct mps_bench_inputs *decl, long long batch,
                                     const struct mps_bench_opts *opts, const struct mps_backend *be,
                                     enum mps_precision prec, bool profile, struct mps_bench_run *r,
                                     struct mps_error *err)
{
    enum mps_status st = mps_bench_model_load(decl, batch, &r->m, r->in, &r->n_in, err);
    if (!st && (st = mps_passes_fuse(r->m->graph, be, err)) == MPS_OK) {
        int bad = mps_backend_unsupported(be, r->m->graph, err->msg, sizeof err->msg);
        if (bad)
            st = mps_fail(err, MPS_ERR_MODEL, "backend %s cannot run %d nodes", be->name, bad);
    }
    if (!st)
        st = mps_plan_compile(be, r->m->graph, &(struct mps_compile_opts){.threads = opts->threads, .precision = prec},
                              &r->plan, err);
    if (st)
        return st;
    const struct mps_graph *g = r->m->graph;
    r->out = calloc((size_t)g->n_outputs + 1, sizeof *r->out);
    for (int o = 0; r->out && o < g->n_outputs; o++) {
        const struct mps_value *v = &g->values[g->outputs[o]];
        r->out[o] = mps_tensor_make(v->dtype, &v->shape,
                                    calloc((size_t)mps_shape_numel(&v->shape) + 1, mps_dtype_size(v->dtype)));
    }
    r->times = malloc(sizeof(double) * (size_t)opts->repeat);
    if (profile && be->profile)
        r->node_ms = calloc((size_t)opts->repeat * (size_t)g->n_nodes + 1, sizeof *r->node_ms);
    if (!r->out || !r->times || (profile && be->profile && !r->node_ms))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    return mps_bench_run_times(be, opts, r, err);
}

/* How a row is reported: one of JSON (into res), CSV or text. */
struct mps_bench_form {
    cJSON *res;
    bool csv, profile;
    const char *model;
};

/* A measurement's row, with its profile where it has one. */
static void mps_bench_run_report(const struct mps_bench_form *f, const struct mps_backend *be, const char *prec,
                                 long long batch, const struct mps_bench_run *r, int repeat)
{
    const struct mps_graph *g = r->m->graph;
    double ips = (double)batch * 1e3 / r->t.median;
    if (f->res) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "backend", be->name);
        cJSON_AddStringToObject(o, "precision", prec);
        cJSON_AddNumberToObject(o, "batch", (double)batch);
        cJSON_AddNumberToObject(o, "median_ms", r->t.median);
        cJSON_AddNumberToObject(o, "p10_ms", r->t.p10);
        cJSON_AddNumberToObject(o, "p90_ms", r->t.p90);
        cJSON_AddNumberToObject(o, "inferences_per_s", ips);
        if (be->rerun)
            cJSON_AddNumberToObject(o, "resident_median_ms", r->stays.median);
        if (r->node_ms)
            mps_bench_profile(g, r->node_ms, repeat, o, false, NULL);
        else if (f->profile)
            cJSON_AddStringToObject(o, "profile_unavailable", "the backend cannot time its nodes");
        cJSON_AddItemToArray(f->res, o);
    } else if (f->csv) {
        char path[1024], row[1200];
        snprintf(row, sizeof row, "%s,%s,%s,%lld,", mps_cli_csv_quote(f->model, path, sizeof path), be->name, prec,
                 batch);
        printf("%s%.6f,%.6f,%.6f,%.2f,", row, r->t.median, r->t.p10, r->t.p90, ips);
        if (be->rerun)
            printf("%.6f", r->stays.median);
        printf("%s\n", f->profile ? ",,," : "");
        if (r->node_ms) /* a row per node after the model's */
            mps_bench_profile(g, r->node_ms, repeat, NULL, true, row);
    } else {
        printf("%-7s %-5s %6lld %10.4f %9.4f %9.4f %14.1f", be->name, prec, batch, r->t.median, r->t.p10, r->t.p90,
               ips);
        if (be->rerun)
            printf(" %12.4f\n", r->stays.median);
        else
            printf(" %12s\n", "-");
        if (r->node_ms)
            mps_bench_profile(g, r->node_ms, repeat, NULL, false, NULL);
        else if (f->profile)
            printf("  (the %s backend cannot time its nodes)\n", be->name);
    }
}

int mps_bench_model(int argc, char **argv)
{
    struct arg_rex *cmd = arg_rex1(NULL, NULL, "^model$", "model", 0, "what to measure");
    struct arg_file *model = arg_file1(NULL, NULL, "MODEL", "an ONNX model");
    struct arg_str *batches = arg_str0(NULL, "batch", "LIST", "batch sizes, comma separated (default 1)");
    struct arg_str *shape = arg_strn(NULL, "shape", "NAME=AxBxC", 0, 8,
                                     "an input's shape where the model leaves "
                                     "dims free (its batch --batch's; NAME= may be left out for one input)");
    struct arg_str *backends = arg_str0(NULL, "backend", "LIST", "backends, comma separated (default all available)");
    struct arg_str *precs = arg_str0(NULL, "precision", "LIST", "fp32 (default), tf32, fp16, comma separated");
    struct arg_int *threads = arg_int0(NULL, "threads", "N", "CPU threads (default: one per core)");
    struct arg_int *repeat = arg_int0(NULL, "repeat", "N", "timed runs (default 20)");
    struct arg_int *warmup = arg_int0(NULL, "warmup", "N", "untimed runs first (default 3)");
    struct arg_lit *profile = arg_lit0(NULL, "profile", "time every node too (cpu, cuda)");
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *csv = arg_lit0(NULL, "csv", "print CSV rows");
    struct arg_file *plot = arg_file0(NULL, "plot", "FILE.svg", "draw latency and throughput against batch (and, "
                                      "with --profile, the largest nodes)");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(20);
    void *argtable[] = {cmd,    model,   batches, shape, backends, precs, threads, repeat,
                        warmup, profile, json,    csv,   plot,     help,  end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Times MODEL on random inputs per batch size, backend and precision: latency\n"
                           "(median, p10, p90) and throughput; --profile adds each node's share.\n"
                           "A run copies inputs in and outputs out; GPU backends are also timed resident\n"
                           "(the same inputs kept on the device, the outputs left there).",
                           &done);
    struct mps_error err = {{0}};
    enum mps_status st = MPS_OK;
    const char *subject = "bench model";
    cJSON *root = NULL, *res = NULL;
    struct mps_bench_result *kept = NULL; /* the rows, for --plot */
    int n_kept = 0;
    struct mps_bench_inputs decl = {0};
    if (done)
        goto out;
    char bbuf[256], *batch_list[16];
    int n_batch = 0;
    struct mps_bench_opts opts = {0};
    st = mps_cli_list("--batch", batches->count ? batches->sval[0] : "1", bbuf, sizeof bbuf, batch_list, 16, &n_batch,
                      &err);
    if (!st)
        st = mps_bench_opts_parse(&opts, backends, precs, threads, repeat, warmup, json, csv, &err);
    for (int bi = 0; !st && bi < n_batch; bi++) {
        char *endp;
        long long batch = strtoll(batch_list[bi], &endp, 10);
        if (endp == batch_list[bi] || *endp || batch < 1 || batch > 65536)
            st = mps_fail(&err, MPS_ERR_USAGE, "--batch: '%s' is not a size from 1 to 65536", batch_list[bi]);
    }
    if (!st)
        st = mps_cli_plot_path(plot, &err);
    if (!st) {
        subject = model->filename[0];
        if (!(st = mps_onnx_open(subject, &decl.file, &err)) &&
            (st = mps_cli_shapes(shape, decl.file, &decl.n, decl.names, decl.shapes, decl.decl, &err)) == MPS_ERR_USAGE)
            subject = NULL; /* the message names the option */
        if (!st)
            st = mps_bench_model_check(&decl, batch_list, n_batch, &opts, &err);
    }
    if (!st && plot->count && !(kept = calloc((size_t)(n_batch * opts.n_pairs + 1), sizeof *kept)))
        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
    if (st)
        goto out;
    if (json->count) {
        root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "schema_version", 1);
        cJSON_AddStringToObject(root, "model", model->filename[0]);
        mps_bench_machine(cJSON_AddObjectToObject(root, "machine"), false);
        res = cJSON_AddArrayToObject(root, "results");
    } else if (csv->count) {
        printf("model,backend,precision,batch,median_ms,p10_ms,p90_ms,inferences_per_s,resident_median_ms%s\n",
               profile->count ? ",node,op,share" : "");
    } else if (!st) {
        mps_bench_machine(NULL, true);
        printf("model    %s\n\n%-7s %-5s %6s %10s %9s %9s %14s %12s\n", mps_cli_vis(model->filename[0]), "backend",
               "prec", "batch", "median ms", "p10 ms", "p90 ms", "inferences/s", "resident ms");
    }
    mps_bench_seed(0x9e3779b97f4a7c15ull);
    struct mps_bench_form form = {res, csv->count > 0, profile->count > 0, model->filename[0]};
    for (int bi = 0; !st && bi < n_batch; bi++) {
        long long batch = strtoll(batch_list[bi], NULL, 10);
        for (int b = 0; !st && b < opts.n_be; b++)
            for (int p = 0; !st && p < opts.n_precs; p++) {
                if (mps_bench_skipped(&opts, b, p))
                    continue;
                mps_cli_progress("bench model: batch %lld, %s %s", batch, opts.be[b]->name, opts.prec_name[p]);
                struct mps_bench_run r = {0};
                subject = model->filename[0];
                st = mps_bench_run(&decl, batch, &opts, opts.be[b], opts.prec[p], profile->count > 0, &r, &err);
                if (!st) {
                    mps_cli_progress_done();
                    if (kept) {
                        kept[n_kept] = (struct mps_bench_result){.backend = opts.be[b]->name,
                                                                 .precision = opts.prec_name[p],
                                                                 .batch = batch,
                                                                 .t = r.t,
                                                                 .ips = (double)batch * 1e3 / r.t.median};
                        if (r.node_ms)
                            mps_bench_bars(r.m->graph, r.node_ms, opts.repeat, &kept[n_kept]);
                        n_kept++;
                    }
                    mps_bench_run_report(&form, opts.be[b], opts.prec_name[p], batch, &r, opts.repeat);
                }
                mps_bench_run_free(&r);
            }
    }
    mps_cli_progress_done();
    if (!st && root) {
        if (!mps_cli_json_print(root))
            st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
    }
    if (!st && kept) {
        char machine[512];
        double peak;
        mps_bench_machine_text(machine, sizeof machine, &peak);
        subject = NULL; /* the message names the file */
        st = mps_bench_plot_model(plot->filename[0], model->filename[0], machine, kept, n_kept, &err);
    }
out:
    for (int i = 0; i < n_kept; i++)
        free(kept[i].bars);
    free(kept);
    cJSON_Delete(root);
    mps_onnx_close(decl.file);
    if (st) {
        mps_cli_error(subject, "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
