/* bench.h: what bench.c (shared parts, dispatch), bench_matmul.c,
   bench_model.c (the measurements) and bench_plot.c (their charts, --plot)
   share. Internal to src/cli. */
#ifndef MPS_CLI_BENCH_H
#define MPS_CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include <argtable2.h>
#include <cjson/cJSON.h>

#include "backend.h"
#include "status.h"

struct mps_bench_stats {
    double median, p10, p90;
};

/* One row of bench matmul. */
struct mps_bench_row {
    const char *backend, *precision;
    int64_t m, n, k;
    struct mps_bench_stats t; /* resident when the backend can (GPUs), else the run path */
    bool resident;
    struct mps_bench_stats run; /* the run path, host copies included (resident rows) */
    double gflops, max_err;
    bool has_base;
    struct mps_bench_stats base;
    double base_gflops;
};

/* A node's share of a profiled bench model row, as a chart bar. */
struct mps_bench_bar {
    char label[96]; /* "Conv+Relu /features/features.0/Conv" */
    double ms;      /* its median */
};

/* One row of bench model, kept for the chart. */
struct mps_bench_result {
    const char *backend, *precision;
    int64_t batch;
    struct mps_bench_stats t;
    double ips;
    struct mps_bench_bar *bars; /* the largest nodes, then "other"; NULL without --profile */
    int n_bars;
};

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
enum mps_status mps_bench_opts_parse(struct mps_bench_opts *o, struct arg_str *backends, struct arg_str *precs,
                                     struct arg_int *threads, struct arg_int *repeat, struct arg_int *warmup,
                                     struct arg_lit *json, struct arg_lit *csv, struct mps_error *err);
/* Whether backend b is skipped at precision p (it does not compute in it). */
bool mps_bench_skipped(const struct mps_bench_opts *o, int b, int p);
/* Median, p10 and p90 of t[n] (sorted in place). */
struct mps_bench_stats mps_bench_stats(double *t, int n);
/* The header: CPU model and cores, BLAS and threads, GPUs; into json, or printed. */
void mps_bench_machine(cJSON *json, bool print);
/* The machine in a line, for a chart's title; *peak its fp32 GFLOP/s (0: unknown). */
void mps_bench_machine_text(char *buf, size_t size, double *peak);
/* Random floats in [-1, 1) from seed on (xorshift64): the same data every run. */
void mps_bench_seed(uint64_t seed);
float mps_bench_rand(void);
/* The two targets (argv[1] "matmul" or "model"). */
int mps_bench_matmul(int argc, char **argv);
int mps_bench_model(int argc, char **argv);

/* The charts (SVG): matmul's GFLOP/s against size per backend and precision,
   the vendor GEMM dashed beside each, peak_gflops (fp32, 0: unknown) as a
   line; model's latency (median, p10 to p90) and throughput against batch,
   and each profiled row's largest nodes as bars. machine names the machine
   in the title. */
enum mps_status mps_bench_plot_matmul(const char *path, const char *machine, const struct mps_bench_row *rows, int n,
                                      double peak_gflops, struct mps_error *err);
enum mps_status mps_bench_plot_model(const char *path, const char *model, const char *machine,
                                     const struct mps_bench_result *rows, int n, struct mps_error *err);

#endif
