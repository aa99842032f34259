/* bench.c: `mpsrun bench matmul` (bench_matmul.c) and `mpsrun bench model
   MODEL` (bench_model.c): what both share (options, the machine they ran
   on, statistics, random data) and the dispatch. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"
#include "cpu/thread_pool.h"

static int mps_bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct mps_bench_stats mps_bench_stats(double *t, int n)
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

enum mps_status mps_bench_opts_parse(struct mps_bench_opts *o, struct arg_str *backends, struct arg_str *precs,
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

bool mps_bench_skipped(const struct mps_bench_opts *o, int b, int p)
{
    return o->skip[b] & MPS_PRECISION_BIT(o->prec[p]);
}

/* The header: CPU model and cores, BLAS and threads, GPUs. */
void mps_bench_machine(cJSON *json, bool print)
{
    int n;
    const struct mps_backend *const *all = mps_backend_list(&n);
    cJSON *gpus = json ? cJSON_AddArrayToObject(json, "gpus") : NULL;
    for (int i = 0; i < n; i++) {
        struct mps_backend_info info;
        struct mps_error err = {{0}};
        bool ok = all[i]->probe(&info, &err) == MPS_OK;
        if (all[i] == &mps_backend_cpu && ok) {
            /* where threads share the work, what a line costs between them (thread_pool.h) */
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
void mps_bench_machine_text(char *buf, size_t size, double *peak)
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

static uint64_t mps_bench_rng; /* xorshift64 */

void mps_bench_seed(uint64_t s)
{
    mps_bench_rng = s;
}

float mps_bench_rand(void)
{
    mps_bench_rng ^= mps_bench_rng << 13;
    mps_bench_rng ^= mps_bench_rng >> 7;
    mps_bench_rng ^= mps_bench_rng << 17;
    return (float)((double)(mps_bench_rng >> 11) / 9007199254740992.0 * 2 - 1);
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
