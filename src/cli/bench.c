/* bench.c: `mpsrun bench matmul` and `mpsrun bench model MODEL`.

   matmul: a one-node MatMul graph (A an input, B a weight) through each
   backend's normal compile and run path, so it measures what inference pays;
   beside it, in the same run, the backend's vendor GEMM called directly
   (cblas_sgemm for cpu), so mpsrun's own cost shows. fp16 multiplies f16
   data (the tensor cores' own, as PyTorch's half `a @ b`); fp32 and tf32 f32.
   Every result is checked against a double-precision reference on a sample
   of entries.
   model: latency and throughput per batch size; --profile gives each node's
   share on a backend that can time nodes (cpu). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "cpu/pool.h"
#include "model.h"

static int mps_bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static struct mps_bench_stats mps_bench_stats(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, mps_bench_cmp);
    return (struct mps_bench_stats){t[n / 2], t[n / 10], t[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1]};
}

/* Parses --precision's comma list into names[] and precs[]; *n gets the count. */
static enum mps_status mps_bench_precisions(const char *list, char *buf, size_t size, char **names,
                                            enum mps_precision *precs, int *n, struct mps_error *err)
{
    enum mps_status st = mps_cli_list("--precision", list, buf, size, names, 3, n, err);
    for (int i = 0; !st && i < *n; i++) {
        const char *s = names[i];
        if (strcmp(s, "fp32") && strcmp(s, "tf32") && strcmp(s, "fp16"))
            return mps_fail(err, MPS_ERR_USAGE, "precision '%s' is not fp32, tf32 or fp16", s);
        precs[i] = !strcmp(s, "fp32")   ? MPS_PRECISION_FP32
                   : !strcmp(s, "tf32") ? MPS_PRECISION_TF32
                                        : MPS_PRECISION_FP16;
    }
    return st;
}

/* The backends named in list ("all": every available one); unavailable ones are reported and dropped. */
static enum mps_status mps_bench_backends(const char *list, const struct mps_backend **out, int *n,
                                          struct mps_error *err)
{
    char buf[256], *items[8];
    int count, n_all;
    const struct mps_backend *const *all = mps_backend_list(&n_all);
    *n = 0;
    if (!strcmp(list, "all")) {
        /* none available is an error, with each one's reason (the cpu backend's
           can be a bad MPSRUN_CPU_KERNELS): not an empty table and exit 0 */
        char reasons[sizeof err->msg - 64] = "";
        enum mps_status worst = MPS_OK;
        for (int i = 0; i < n_all; i++) {
            struct mps_backend_info info;
            struct mps_error why = {{0}};
            enum mps_status st = all[i]->probe(&info, &why);
            if (st == MPS_OK) {
                out[(*n)++] = all[i];
                continue;
            }
            worst = worst == MPS_ERR_USAGE || st == MPS_ERR_USAGE ? MPS_ERR_USAGE : MPS_ERR_RUNTIME;
            size_t used = strlen(reasons);
            snprintf(reasons + used, sizeof reasons - used, "%s%s: %.*s", used ? "; " : "", all[i]->name,
                     (int)(sizeof reasons / 2), why.msg);
        }
        return *n ? MPS_OK : mps_fail(err, worst, "no backend is available (%s)", reasons);
    }
    enum mps_status st = mps_cli_list("--backend", list, buf, sizeof buf, items, 8, &count, err);
    for (int i = 0; !st && i < count; i++) {
        const struct mps_backend *be = mps_backend_find(items[i]);
        struct mps_backend_info info;
        if (!be)
            return mps_backend_unknown(items[i], err);
        st = be->probe(&info, err);
        if (st != MPS_OK) { /* a usage error stays one (a bad MPSRUN_CPU_KERNELS); else the machine lacks it */
            char why[sizeof err->msg];
            memcpy(why, err->msg, sizeof why);
            return mps_fail(err, st == MPS_ERR_USAGE ? st : MPS_ERR_RUNTIME, "backend '%s' is not available: %s",
                            items[i], why);
        }
        out[(*n)++] = be;
    }
    return st;
}

/* The options both bench targets share, parsed and checked before any work. */
struct mps_bench_opts {
    int repeat, warmup, threads;
    char buf[64];
    char *prec_name[3];
    enum mps_precision prec[3];
    int n_precs;
    const struct mps_backend *be[8];
    int n_be;
    unsigned skip[8]; /* per backend: MPS_PRECISION_BIT of each asked precision it does not compute in */
    int n_pairs;      /* backend and precision pairs that run */
};

static enum mps_status mps_bench_opts_parse(struct mps_bench_opts *o, struct arg_str *backends, struct arg_str *precs,
                                            struct arg_int *threads, struct arg_int *repeat, struct arg_int *warmup,
                                            struct arg_lit *json, struct arg_lit *csv, struct mps_error *err)
{
    enum mps_status st;
    if ((st = mps_cli_int(repeat, "--repeat", 1, 1000000, 20, &o->repeat, err)) ||
        (st = mps_cli_int(warmup, "--warmup", 0, 1000000, 3, &o->warmup, err)) ||
        (st = mps_cli_threads(threads, &o->threads, err)))
        return st;
    if (json->count && csv->count)
        return mps_fail(err, MPS_ERR_USAGE, "--json and --csv are two report forms: give one");
    if ((st = mps_bench_precisions(precs->count ? precs->sval[0] : "fp32", o->buf, sizeof o->buf, o->prec_name,
                                   o->prec, &o->n_precs, err)) ||
        (st = mps_bench_backends(backends->count ? backends->sval[0] : "all", o->be, &o->n_be, err)))
        return st;
    /* a pair a backend cannot compute is said up front and skipped; nothing to run is a usage error */
    char none[sizeof err->msg / 2] = "";
    for (int b = 0; b < o->n_be; b++)
        for (int p = 0; p < o->n_precs; p++) {
            if (o->be[b]->precisions & MPS_PRECISION_BIT(o->prec[p])) {
                o->n_pairs++;
                continue;
            }
            o->skip[b] |= MPS_PRECISION_BIT(o->prec[p]);
            size_t used = strlen(none);
            snprintf(none + used, sizeof none - used, "%s%s %s", used ? ", " : "", o->be[b]->name, o->prec_name[p]);
        }
    if (!o->n_pairs)
        return mps_fail(err, MPS_ERR_USAGE, "--precision %s: no backend asked computes in it (%s)",
                        precs->count ? precs->sval[0] : "fp32", none);
    if (none[0])
        fprintf(stderr, "mpsrun: bench: skipping %s: not a precision of that backend\n", none);
    return MPS_OK;
}

static bool mps_bench_skipped(const struct mps_bench_opts *o, int b, int p)
{
    return o->skip[b] & MPS_PRECISION_BIT(o->prec[p]);
}

/* The header: CPU model and cores, BLAS and threads, GPUs. */
static void mps_bench_machine(cJSON *json, bool print)
{
    int n;
    const struct mps_backend *const *all = mps_backend_list(&n);
    cJSON *gpus = json ? cJSON_AddArrayToObject(json, "gpus") : NULL;
    for (int i = 0; i < n; i++) {
        struct mps_backend_info info;
        struct mps_error err = {{0}};
        bool ok = all[i]->probe(&info, &err) == MPS_OK;
        if (all[i] == &mps_backend_cpu && ok) {
            /* where threads share the work, what a line costs between them (pool.h) */
            double trip = mps_pool_round_trip_ns();
            if (print)
                printf("machine  %s, %.1f GiB; %s\n", info.device, (double)info.memory_bytes / (1 << 30), info.detail);
            if (print && trip > 0)
                printf("cores    a cache line from one thread to another and back: %.0f ns\n", trip);
            if (json) {
                cJSON_AddStringToObject(json, "cpu", info.device);
                cJSON_AddStringToObject(json, "blas", info.detail);
                cJSON_AddNumberToObject(json, "threads", info.threads);
                if (trip > 0)
                    cJSON_AddNumberToObject(json, "core_round_trip_ns", round(trip));
            }
        } else if (ok) {
            if (print)
                printf("gpu      %s: %s, %.1f GiB%s", all[i]->name, info.device, (double)info.memory_bytes / (1 << 30),
                       info.peak_gflops > 0 ? "" : "\n");
            if (print && info.peak_gflops > 0)
                printf(", fp32 peak %.1f TFLOP/s\n", info.peak_gflops / 1e3);
            if (gpus)
                cJSON_AddItemToArray(gpus, cJSON_CreateString(info.device));
            if (json && info.peak_gflops > 0) {
                cJSON *peaks = cJSON_GetObjectItem(json, "peak_fp32_gflops");
                peaks = peaks ? peaks : cJSON_AddObjectToObject(json, "peak_fp32_gflops");
                cJSON_AddNumberToObject(peaks, all[i]->name, info.peak_gflops);
            }
        }
    }
}

/* The machine in a line, for a chart's title: the CPU, its kernels and
   threads, the GPUs; *peak gets the first GPU's fp32 peak (0: none known). */
static void mps_bench_machine_text(char *buf, size_t size, double *peak)
{
    int n;
    const struct mps_backend *const *all = mps_backend_list(&n);
    size_t used = 0;
    *peak = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < size; i++) {
        struct mps_backend_info info;
        struct mps_error err = {{0}};
        if (all[i]->probe(&info, &err) != MPS_OK)
            continue;
        if (all[i] == &mps_backend_cpu) {
            char kernels[64] = "";
            sscanf(info.detail, "kernels %63s", kernels);
            used += (size_t)snprintf(buf + used, size - used, "%s%s, %s kernels, %d threads", used ? "; " : "",
                                     info.device, kernels, info.threads);
        } else {
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "; " : "", info.device);
            *peak = *peak > 0 ? *peak : info.peak_gflops;
        }
    }
}

/* ---- matmul ------------------------------------------------------------------ */

/* Milliseconds of untimed runs before each round of timed ones. */
#define MPS_BENCH_WARM_MS 20.0

static uint64_t mps_bench_rng;

static float mps_bench_rand(void)
{
    mps_bench_rng ^= mps_bench_rng << 13;
    mps_bench_rng ^= mps_bench_rng >> 7;
    mps_bench_rng ^= mps_bench_rng << 17;
    return (float)((double)(mps_bench_rng >> 11) / 9007199254740992.0 * 2 - 1);
}

/* C = A B through be; checks 64 sampled entries in double. */
static enum mps_status mps_bench_matmul_one(const struct mps_backend *be, enum mps_precision prec, int threads,
                                            struct mps_bench_row *row, int warmup, int repeat, struct mps_error *err)
{
    int64_t m = row->m, n = row->n, k = row->k;
    enum mps_dtype dt = prec == MPS_PRECISION_FP16 ? MPS_F16 : MPS_F32; /* fp16: half data, PyTorch's half a @ b */
    struct mps_graph *g = mps_graph_new();
    float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(k * n)),
          *c = malloc(sizeof(float) * (size_t)(m * n));
    uint16_t *h = dt == MPS_F16 ? malloc(sizeof(uint16_t) * (size_t)(m * k + k * n + m * n)) : NULL;
    double *times = malloc(sizeof(double) * (size_t)(repeat + 1)),
           *base_times = malloc(sizeof(double) * (size_t)(repeat + 1)),
           *run_times = malloc(sizeof(double) * (size_t)(repeat + 1));
    enum mps_status st = MPS_OK;
    struct mps_plan *plan = NULL;
    if (!g || !a || !b || !c || (dt == MPS_F16 && !h) || !times || !base_times || !run_times) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory for a %lldx%lldx%lld matmul", (long long)m, (long long)n,
                      (long long)k);
        goto out;
    }
    for (int64_t i = 0; i < m * k; i++)
        a[i] = mps_bench_rand();
    for (int64_t i = 0; i < k * n; i++)
        b[i] = mps_bench_rand();
    uint16_t *ha = h, *hb = h ? h + m * k : NULL, *hc = h ? hb + k * n : NULL;
    for (int64_t i = 0; h && i < m * k + k * n; i++) { /* rounded to f16; the reference sees what the GPU does */
        float *v = i < m * k ? &a[i] : &b[i - m * k];
        h[i] = mps_f32_to_f16(*v);
        *v = mps_f16_to_f32(h[i]);
    }
    struct mps_shape sa = {2, {m, k}}, sb = {2, {k, n}}, sc = {2, {m, n}};
    int va = mps_graph_add_value(g, "A", dt, &sa), vb = mps_graph_add_const(g, "B", dt, &sb, h ? (void *)hb : b),
        vc = mps_graph_add_value(g, "C", dt, NULL);
    if ((st = mps_graph_add_input(g, va, err)) ||
        (st = mps_graph_add_node(g, MPS_OP_MATMUL, "matmul", (int[]){va, vb}, 2, &vc, 1, NULL, err)) ||
        (st = mps_graph_add_output(g, vc, err)) || (st = mps_graph_sort(g, err)) || (st = mps_graph_infer(g, err)) ||
        (st = mps_plan_compile(be, g, &(struct mps_compile_opts){.threads = threads, .precision = prec}, &plan, err)))
        goto out;
    struct mps_tensor ta = mps_tensor_make(dt, &sa, h ? (void *)ha : a),
                      tc = mps_tensor_make(dt, &sc, h ? (void *)hc : c);
    /* mpsrun and the direct GEMM alternate in rounds, so that a burst of noise
       from elsewhere on the machine lands on both alike. A GPU backend is timed
       resident (A already on the device, as the direct call's), its run path too. */
    int rounds = repeat >= 10 ? 5 : 1;
    bool base = be->bench_baseline != NULL;
    row->resident = be->rerun != NULL;
    for (int r = 0; r < warmup + 1 && !st; r++)
        st = mps_plan_run(plan, &ta, &tc, err);
    for (int round = 0, done = 0; round < rounds && !st; round++) {
        int per = (repeat - done) / (rounds - round);
        /* untimed runs for MPS_BENCH_WARM_MS first: on a VM, cores that sat idle
           (the direct GEMM's turn, or before the first round) run the next tens
           of milliseconds slowly, and a few runs of microseconds do not cover that */
        for (double t0 = mps_cli_now_ms(); !st && warmup > 0 && mps_cli_now_ms() - t0 < MPS_BENCH_WARM_MS;)
            st = mps_plan_run(plan, &ta, &tc, err);
        for (int r = 0; r < per && !st; r++) {
            double t0 = mps_cli_now_ms();
            st = mps_plan_run(plan, &ta, &tc, err);
            run_times[done + r] = mps_cli_now_ms() - t0;
        }
        for (int r = 0; r < per && !st && row->resident; r++) {
            double t0 = mps_cli_now_ms();
            st = be->rerun(plan->state, err);
            times[done + r] = mps_cli_now_ms() - t0;
        }
        if (!st && base && be->bench_baseline(m, n, k, prec, threads, round ? 1 : warmup, per, base_times + done, err))
            base = false;
        done += per;
    }
    if (st)
        goto out;
    row->run = mps_bench_stats(run_times, repeat);
    row->t = row->resident ? mps_bench_stats(times, repeat) : row->run;
    row->gflops = 2.0 * (double)m * (double)n * (double)k / (row->t.median * 1e6);
    for (int64_t i = 0; h && i < m * n; i++)
        c[i] = mps_f16_to_f32(hc[i]);
    /* error against a double reference, relative to sum |a_ik b_kj| (the scale rounding works at) */
    row->max_err = 0;
    for (int s = 0; s < 64; s++) {
        int64_t i = (int64_t)((mps_bench_rand() + 1) / 2 * (float)m) % m,
                j = (int64_t)((mps_bench_rand() + 1) / 2 * (float)n) % n;
        double ref = 0, scale = 0;
        for (int64_t q = 0; q < k; q++) {
            ref += (double)a[i * k + q] * b[q * n + j];
            scale += fabs((double)a[i * k + q] * b[q * n + j]);
        }
        double e = fabs(c[i * n + j] - ref) / (scale > 0 ? scale : 1);
        row->max_err = e > row->max_err ? e : row->max_err;
    }
    if (base) {
        row->has_base = true;
        row->base = mps_bench_stats(base_times, repeat);
        row->base_gflops = 2.0 * (double)m * (double)n * (double)k / (row->base.median * 1e6);
    }
out:
    mps_plan_free(plan);
    mps_graph_free(g);
    free(a);
    free(b);
    free(c);
    free(h);
    free(times);
    free(base_times);
    free(run_times);
    return st;
}

static bool mps_bench_size(const char *s, int64_t *m, int64_t *n, int64_t *k)
{
    long long a, b, c;
    char tail;
    if (sscanf(s, "%lldx%lldx%lld%c", &a, &b, &c, &tail) == 3) {
        *m = a, *n = b, *k = c;
    } else if (sscanf(s, "%lld%c", &a, &tail) == 1) {
        *m = *n = *k = a;
    } else {
        return false;
    }
    return *m > 0 && *n > 0 && *k > 0 && *m <= 32768 && *n <= 32768 && *k <= 32768;
}

static int mps_bench_matmul(int argc, char **argv)
{
    struct arg_rex *cmd = arg_rex1(NULL, NULL, "^matmul$", "matmul", 0, "what to measure");
    struct arg_str *sizes = arg_str0(NULL, "sizes", "LIST", "n or MxNxK, comma separated (default 64,256,1024)");
    struct arg_str *backends = arg_str0(NULL, "backend", "LIST", "backends, comma separated (default all available)");
    struct arg_str *precs =
        arg_str0(NULL, "precision", "LIST", "fp32 (default), tf32, fp16 (f16 A and B), comma separated");
    struct arg_int *threads = arg_int0(NULL, "threads", "N", "CPU threads (default: one per core)");
    struct arg_int *repeat = arg_int0(NULL, "repeat", "N", "timed runs (default 20)");
    struct arg_int *warmup = arg_int0(NULL, "warmup", "N", "untimed runs first (default 3)");
    struct arg_int *seed = arg_int0(NULL, "seed", "S", "random data seed (default 1)");
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *csv = arg_lit0(NULL, "csv", "print CSV rows");
    struct arg_file *plot = arg_file0(NULL, "plot", "FILE.svg", "draw GFLOP/s against size, beside each vendor GEMM");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(20);
    void *argtable[] = {cmd, sizes, backends, precs, threads, repeat, warmup, seed, json, csv, plot, help, end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Times C = A B through each backend's compile and run path (A an input, B a weight),\n"
                           "beside the backend's vendor GEMM called directly, and checks the results.\n"
                           "GPU backends are timed resident (A already on the device, as the direct call's)\n"
                           "and through the run path (A in and C out through host memory).",
                           &done);
    struct mps_error err = {{0}};
    enum mps_status st = MPS_OK;
    struct mps_bench_row *rows = NULL;
    int n_rows = 0;
    if (done)
        goto out;
    char sbuf[512], *size_list[32];
    int n_sizes = 0;
    struct mps_bench_opts opts = {0};
    st = mps_cli_list("--sizes", sizes->count ? sizes->sval[0] : "64,256,1024", sbuf, sizeof sbuf, size_list, 32,
                      &n_sizes, &err);
    if (!st)
        st = mps_bench_opts_parse(&opts, backends, precs, threads, repeat, warmup, json, csv, &err);
    if (!st)
        st = mps_cli_plot_path(plot, &err);
    for (int s = 0; !st && s < n_sizes; s++) {
        int64_t m, n, k;
        if (!mps_bench_size(size_list[s], &m, &n, &k))
            st = mps_fail(&err, MPS_ERR_USAGE, "--sizes: '%s' is not n or MxNxK (1 to 32768)", size_list[s]);
    }
    rows = calloc((size_t)(n_sizes * opts.n_pairs + 1), sizeof *rows);
    for (int s = 0; !st && s < n_sizes; s++) {
        int64_t m, n, k;
        mps_bench_size(size_list[s], &m, &n, &k);
        for (int b = 0; !st && b < opts.n_be; b++)
            for (int p = 0; !st && p < opts.n_precs; p++) {
                enum mps_precision prec = opts.prec[p];
                if (mps_bench_skipped(&opts, b, p))
                    continue;
                struct mps_bench_row *row = &rows[n_rows];
                *row = (struct mps_bench_row){
                    .backend = opts.be[b]->name, .precision = opts.prec_name[p], .m = m, .n = n, .k = k};
                mps_cli_progress("bench matmul: %d/%d  %s %s %lldx%lldx%lld", n_rows + 1, n_sizes * opts.n_pairs,
                                   row->backend, row->precision, (long long)m, (long long)n, (long long)k);
                mps_bench_rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(seed->count ? seed->ival[0] : 1);
                st = mps_bench_matmul_one(opts.be[b], prec, opts.threads, row, opts.warmup, opts.repeat, &err);
                n_rows++;
            }
    }
    mps_cli_progress_done();
    if (!st && plot->count) {
        char machine[512];
        double peak;
        mps_bench_machine_text(machine, sizeof machine, &peak);
        st = mps_bench_plot_matmul(plot->filename[0], machine, rows, n_rows, peak, &err);
    }
    if (st)
        goto out;
    if (json->count) {
        cJSON *root = cJSON_CreateObject(), *machine, *res;
        cJSON_AddNumberToObject(root, "schema_version", 1);
        machine = cJSON_AddObjectToObject(root, "machine");
        mps_bench_machine(machine, false);
        res = cJSON_AddArrayToObject(root, "results");
        for (int i = 0; i < n_rows; i++) {
            const struct mps_bench_row *r = &rows[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "backend", r->backend);
            cJSON_AddStringToObject(o, "precision", r->precision);
            cJSON_AddNumberToObject(o, "m", (double)r->m);
            cJSON_AddNumberToObject(o, "n", (double)r->n);
            cJSON_AddNumberToObject(o, "k", (double)r->k);
            cJSON_AddNumberToObject(o, "median_ms", r->t.median);
            cJSON_AddNumberToObject(o, "p10_ms", r->t.p10);
            cJSON_AddNumberToObject(o, "p90_ms", r->t.p90);
            cJSON_AddNumberToObject(o, "gflops", r->gflops);
            cJSON_AddNumberToObject(o, "max_rel_err", r->max_err);
            cJSON_AddBoolToObject(o, "resident", r->resident);
            if (r->resident)
                cJSON_AddNumberToObject(o, "run_median_ms", r->run.median);
            if (r->has_base) {
                cJSON *d = cJSON_AddObjectToObject(o, "direct");
                cJSON_AddNumberToObject(d, "median_ms", r->base.median);
                cJSON_AddNumberToObject(d, "gflops", r->base_gflops);
                cJSON_AddNumberToObject(d, "ratio", r->gflops / r->base_gflops);
                cJSON_AddNumberToObject(d, "overhead_us", (r->t.median - r->base.median) * 1e3);
            }
            cJSON_AddItemToArray(res, o);
        }
        if (!mps_cli_json_print(root))
            st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
        cJSON_Delete(root);
    } else if (csv->count) {
        printf("backend,precision,m,n,k,median_ms,p10_ms,p90_ms,gflops,max_rel_err,direct_median_ms,direct_gflops\n");
        for (int i = 0; i < n_rows; i++) {
            const struct mps_bench_row *r = &rows[i];
            printf("%s,%s,%lld,%lld,%lld,%.6f,%.6f,%.6f,%.3f,%.3g,%.6f,%.3f\n", r->backend, r->precision,
                   (long long)r->m, (long long)r->n, (long long)r->k, r->t.median, r->t.p10, r->t.p90, r->gflops,
                   r->max_err, r->has_base ? r->base.median : 0, r->has_base ? r->base_gflops : 0);
        }
    } else {
        mps_bench_machine(NULL, true);
        printf("\n%-7s %-5s %17s %10s %9s %9s %8s %9s  %s\n", "backend", "prec", "MxNxK", "median ms", "p10 ms",
               "p90 ms", "GFLOP/s", "max err", "direct (vendor GEMM): GFLOP/s, ratio, overhead");
        for (int i = 0; i < n_rows; i++) {
            const struct mps_bench_row *r = &rows[i];
            char mnk[48];
            snprintf(mnk, sizeof mnk, "%lldx%lldx%lld", (long long)r->m, (long long)r->n, (long long)r->k);
            printf("%-7s %-5s %17s %10.4f %9.4f %9.4f %8.1f %9.1e", r->backend, r->precision, mnk, r->t.median,
                   r->t.p10, r->t.p90, r->gflops, r->max_err);
            if (r->has_base)
                printf("  %8.1f  %5.1f%%  %+.2f us", r->base_gflops, 100.0 * r->gflops / r->base_gflops,
                       (r->t.median - r->base.median) * 1e3);
            if (r->resident)
                printf("  (resident; run path %.4f ms)", r->run.median);
            printf("\n");
        }
    }
out:
    if (st) {
        mps_cli_error("bench matmul", "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    free(rows);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}

/* ---- model -------------------------------------------------------------------- */

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

static int mps_bench_model(int argc, char **argv)
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
    mps_bench_rng = 0x9e3779b97f4a7c15ull;
    for (int bi = 0; !st && bi < n_batch; bi++) {
        long long batch = strtoll(batch_list[bi], NULL, 10);
        for (int b = 0; !st && b < opts.n_be; b++)
            for (int p = 0; !st && p < opts.n_precs; p++) {
                enum mps_precision prec = opts.prec[p];
                if (mps_bench_skipped(&opts, b, p))
                    continue;
                mps_cli_progress("bench model: batch %lld, %s %s", batch, opts.be[b]->name, opts.prec_name[p]);
                struct mps_model *m = NULL;
                struct mps_tensor in[8] = {{0}}, *out = NULL;
                int n_in = 0;
                struct mps_plan *plan = NULL;
                double *times = malloc(sizeof(double) * (size_t)opts.repeat), *node_ms = NULL;
                subject = model->filename[0];
                st = mps_bench_model_load(&decl, batch, &m, in, &n_in, &err);
                if (!st && (st = mps_passes_fuse(m->graph, opts.be[b], &err)) == MPS_OK) {
                    int bad = mps_backend_unsupported(opts.be[b], m->graph, err.msg, sizeof err.msg);
                    if (bad)
                        st = mps_fail(&err, MPS_ERR_MODEL, "backend %s cannot run %d nodes", opts.be[b]->name, bad);
                }
                if (!st)
                    st = mps_plan_compile(opts.be[b], m->graph,
                                          &(struct mps_compile_opts){.threads = opts.threads, .precision = prec},
                                          &plan, &err);
                const struct mps_graph *g = m ? m->graph : NULL;
                if (!st) {
                    out = calloc((size_t)g->n_outputs, sizeof *out);
                    for (int o = 0; out && o < g->n_outputs; o++) {
                        const struct mps_value *v = &g->values[g->outputs[o]];
                        out[o] =
                            mps_tensor_make(v->dtype, &v->shape,
                                            calloc((size_t)mps_shape_numel(&v->shape) + 1, mps_dtype_size(v->dtype)));
                    }
                    bool prof = profile->count && opts.be[b]->profile;
                    node_ms = prof ? calloc((size_t)opts.repeat * (size_t)g->n_nodes + 1, sizeof *node_ms) : NULL;
                    /* a backend with staging of its own (a GPU's pinned memory) takes the inputs there,
                       as a stream decodes them, and leaves the outputs there */
                    struct mps_tensor staged_in[8], *staged_out = calloc((size_t)g->n_outputs, sizeof *staged_out);
                    const struct mps_tensor *run_in = in;
                    struct mps_tensor *run_out = out;
                    if (opts.be[b]->host_io && staged_out && !mps_plan_host_io(plan, 0, staged_in, staged_out, &err)) {
                        for (int i = 0; i < n_in; i++)
                            memcpy(staged_in[i].data, in[i].data, mps_tensor_bytes(&in[i]));
                        run_in = staged_in;
                        run_out = staged_out;
                    }
                    for (int r = 0; r < opts.warmup + opts.repeat && !st; r++) {
                        double t0 = mps_cli_now_ms();
                        st = node_ms && r >= opts.warmup
                                 ? opts.be[b]->profile(plan->state, in, out,
                                                       node_ms + (size_t)(r - opts.warmup) * g->n_nodes, &err)
                                 : mps_plan_run(plan, run_in, run_out, &err);
                        if (r >= opts.warmup)
                            times[r - opts.warmup] = mps_cli_now_ms() - t0;
                    }
                    free(staged_out);
                }
                struct mps_bench_stats resident = {0};
                if (!st && opts.be[b]->rerun) { /* the same inputs, left on the device by the last run */
                    double *rt = malloc(sizeof(double) * (size_t)opts.repeat);
                    for (int r = 0; rt && r < opts.repeat && !st; r++) {
                        double t0 = mps_cli_now_ms();
                        st = opts.be[b]->rerun(plan->state, &err);
                        rt[r] = mps_cli_now_ms() - t0;
                    }
                    if (!rt)
                        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
                    else if (!st)
                        resident = mps_bench_stats(rt, opts.repeat);
                    free(rt);
                }
                if (!st) {
                    struct mps_bench_stats t = mps_bench_stats(times, opts.repeat);
                    double ips = (double)batch * 1e3 / t.median;
                    mps_cli_progress_done();
                    if (kept) {
                        kept[n_kept] = (struct mps_bench_result){
                            .backend = opts.be[b]->name, .precision = opts.prec_name[p], .batch = batch, .t = t, .ips = ips};
                        if (node_ms)
                            mps_bench_bars(g, node_ms, opts.repeat, &kept[n_kept]);
                        n_kept++;
                    }
                    if (res) {
                        cJSON *o = cJSON_CreateObject();
                        cJSON_AddStringToObject(o, "backend", opts.be[b]->name);
                        cJSON_AddStringToObject(o, "precision", opts.prec_name[p]);
                        cJSON_AddNumberToObject(o, "batch", (double)batch);
                        cJSON_AddNumberToObject(o, "median_ms", t.median);
                        cJSON_AddNumberToObject(o, "p10_ms", t.p10);
                        cJSON_AddNumberToObject(o, "p90_ms", t.p90);
                        cJSON_AddNumberToObject(o, "inferences_per_s", ips);
                        if (opts.be[b]->rerun)
                            cJSON_AddNumberToObject(o, "resident_median_ms", resident.median);
                        if (node_ms)
                            mps_bench_profile(g, node_ms, opts.repeat, o, false, NULL);
                        else if (profile->count)
                            cJSON_AddStringToObject(o, "profile_unavailable", "the backend cannot time its nodes");
                        cJSON_AddItemToArray(res, o);
                    } else if (csv->count) {
                        char path[1024], row[1200];
                        snprintf(row, sizeof row, "%s,%s,%s,%lld,", mps_cli_csv_quote(model->filename[0], path,
                                 sizeof path), opts.be[b]->name, opts.prec_name[p], batch);
                        printf("%s%.6f,%.6f,%.6f,%.2f,", row, t.median, t.p10, t.p90, ips);
                        if (opts.be[b]->rerun)
                            printf("%.6f", resident.median);
                        printf("%s\n", profile->count ? ",,," : "");
                        if (node_ms) /* a row per node after the model's */
                            mps_bench_profile(g, node_ms, opts.repeat, NULL, true, row);
                    } else {
                        printf("%-7s %-5s %6lld %10.4f %9.4f %9.4f %14.1f", opts.be[b]->name, opts.prec_name[p],
                               batch, t.median, t.p10, t.p90, ips);
                        if (opts.be[b]->rerun)
                            printf(" %12.4f", resident.median);
                        else
                            printf(" %12s", "-");
                        printf("\n");
                        if (node_ms)
                            mps_bench_profile(g, node_ms, opts.repeat, NULL, false, NULL);
                        else if (profile->count)
                            printf("  (the %s backend cannot time its nodes)\n", opts.be[b]->name);
                    }
                }
                mps_plan_free(plan);
                for (int i = 0; i < n_in; i++)
                    free(in[i].data);
                for (int o = 0; out && g && o < g->n_outputs; o++)
                    free(out[o].data);
                free(out);
                free(times);
                free(node_ms);
                mps_model_free(m);
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

int mps_cli_bench(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "matmul"))
        return mps_bench_matmul(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "model"))
        return mps_bench_model(argc, argv);
    bool help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    fprintf(help ? stdout : stderr, "usage: mpsrun bench matmul [options]   (mpsrun bench matmul --help)\n"
                                    "       mpsrun bench model MODEL [options]   (mpsrun bench model --help)\n");
    return help ? MPS_EXIT_OK : MPS_EXIT_USAGE;
}
