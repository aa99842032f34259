/* bench.h: what bench.c (the measurements) and bench_plot.c (their
   charts, --plot) share. Internal to src/cli. */
#ifndef MPS_CLI_BENCH_H
#define MPS_CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>

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
