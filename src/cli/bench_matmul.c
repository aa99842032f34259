/* bench_matmul.c: `mpsrun bench matmul`: a one-node MatMul graph (A an
   input, B a weight) through each backend's normal compile and run path, so
   it measures what inference pays; beside it, in the same run, the backend's
   vendor GEMM called directly (cblas_sgemm for cpu), so mpsrun's own cost
   shows. fp16 multiplies f16 data (the tensor cores' own, as PyTorch's half
   `a @ b`); fp32 and tf32 f32. Every result is checked against a
   double-precision reference on a sample of entries. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

/* Milliseconds of untimed runs before each round of timed ones. */
#define MPS_BENCH_WARM_MS 20.0

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

int mps_bench_matmul(int argc, char **argv)
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
                mps_bench_seed(0x9e3779b97f4a7c15ull ^ (uint64_t)(seed->count ? seed->ival[0] : 1));
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
