/* bench_plot.c: bench's charts (--plot), drawn with plot.h from the rows
   bench.c measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "svg.h"

#define MPS_BENCH_PLOT_SERIES 32

/* A series of points, its arrays owned. */
struct mps_bench_line {
    char name[96];
    double *x, *y, *lo, *hi;
    int n;
};

static struct mps_bench_line *mps_bench_line_get(struct mps_bench_line *lines, int *n, const char *name, int cap)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(lines[i].name, name))
            return &lines[i];
    if (*n == MPS_BENCH_PLOT_SERIES)
        return NULL;
    struct mps_bench_line *l = &lines[(*n)++];
    *l = (struct mps_bench_line){.n = 0};
    snprintf(l->name, sizeof l->name, "%s", name);
    l->x = calloc((size_t)cap, sizeof *l->x);
    l->y = calloc((size_t)cap, sizeof *l->y);
    l->lo = calloc((size_t)cap, sizeof *l->lo);
    l->hi = calloc((size_t)cap, sizeof *l->hi);
    return l->x && l->y && l->lo && l->hi ? l : NULL;
}

static void mps_bench_lines_free(struct mps_bench_line *lines, int n)
{
    for (int i = 0; i < n; i++) {
        free(lines[i].x);
        free(lines[i].y);
        free(lines[i].lo);
        free(lines[i].hi);
    }
}

/* The lines as plot series; with_bars: their lo and hi as error bars. dashed[i]: line i is a baseline. */
static void mps_bench_series(const struct mps_bench_line *lines, int n, const bool *dashed, bool with_bars,
                             struct mps_plot_series *out)
{
    for (int i = 0; i < n; i++)
        out[i] = (struct mps_plot_series){.name = lines[i].name,
                                          .n = lines[i].n,
                                          .x = lines[i].x,
                                          .y = lines[i].y,
                                          .lo = with_bars ? lines[i].lo : NULL,
                                          .hi = with_bars ? lines[i].hi : NULL,
                                          .dashed = dashed && dashed[i]};
}

static const char *mps_bench_vendor(const char *backend)
{
    return !strcmp(backend, "cpu") ? "cblas_sgemm" : !strcmp(backend, "cuda") ? "cuBLAS" : "MPS";
}

enum mps_status mps_bench_plot_matmul(const char *path, const char *machine, const struct mps_bench_row *rows, int n,
                                      double peak_gflops, struct mps_error *err)
{
    struct mps_bench_line lines[MPS_BENCH_PLOT_SERIES];
    bool dashed[MPS_BENCH_PLOT_SERIES] = {false};
    int n_lines = 0;
    double ymin = INFINITY, ymax = 0;
    bool cuda = false;
    for (int i = 0; i < n; i++) {
        const struct mps_bench_row *r = &rows[i];
        char name[96];
        double x = cbrt((double)r->m * (double)r->n * (double)r->k);
        snprintf(name, sizeof name, "%s %s (mpsrun)", r->backend, r->precision);
        struct mps_bench_line *l = mps_bench_line_get(lines, &n_lines, name, n);
        if (!l)
            break;
        l->x[l->n] = x, l->y[l->n++] = r->gflops;
        ymin = fmin(ymin, r->gflops), ymax = fmax(ymax, r->gflops);
        cuda = cuda || !strcmp(r->backend, "cuda");
        if (!r->has_base)
            continue;
        snprintf(name, sizeof name, "%s %s (%s direct)", r->backend, r->precision, mps_bench_vendor(r->backend));
        int before = n_lines;
        if (!(l = mps_bench_line_get(lines, &n_lines, name, n)))
            break;
        if (n_lines > before)
            dashed[n_lines - 1] = true;
        l->x[l->n] = x, l->y[l->n++] = r->base_gflops;
        ymin = fmin(ymin, r->base_gflops), ymax = fmax(ymax, r->base_gflops);
    }
    struct mps_plot_series series[MPS_BENCH_PLOT_SERIES];
    mps_bench_series(lines, n_lines, dashed, false, series);
    char title[256], peak[64];
    snprintf(title, sizeof title, "bench matmul: %s", machine);
    snprintf(peak, sizeof peak, "fp32 peak %.1f TFLOP/s (CUDA cores)", peak_gflops / 1e3);
    struct mps_plot_axes ax = {.title = "C = A B through each backend's plan, beside its vendor GEMM",
                               .xlabel = "size n (square; MxNxK: the cube root of M·N·K)",
                               .ylabel = "GFLOP/s",
                               .xlog = true,
                               .ylog = ymax > 50 * ymin,
                               .series = series,
                               .n_series = n_lines,
                               .ref = cuda ? peak_gflops : 0,
                               .ref_label = peak};
    struct mps_svg *svg;
    enum mps_status st = mps_svg_open(path, 820, 460, title, &svg, err);
    if (!st) {
        mps_svg_lines(svg, &(struct mps_plot_box){0, 36, 820, 420}, &ax);
        st = mps_svg_close(svg, err);
    }
    mps_bench_lines_free(lines, n_lines);
    return st;
}

enum mps_status mps_bench_plot_model(const char *path, const char *model, const char *machine,
                                     const struct mps_bench_result *rows, int n, struct mps_error *err)
{
    struct mps_bench_line lat[MPS_BENCH_PLOT_SERIES], ips[MPS_BENCH_PLOT_SERIES];
    int n_lat = 0, n_ips = 0;
    double height = 460;
    for (int i = 0; i < n; i++) {
        const struct mps_bench_result *r = &rows[i];
        char name[96];
        snprintf(name, sizeof name, "%s %s", r->backend, r->precision);
        struct mps_bench_line *a = mps_bench_line_get(lat, &n_lat, name, n),
                              *b = mps_bench_line_get(ips, &n_ips, name, n);
        if (!a || !b)
            break;
        a->x[a->n] = (double)r->batch, a->y[a->n] = r->t.median, a->lo[a->n] = r->t.p10, a->hi[a->n++] = r->t.p90;
        b->x[b->n] = (double)r->batch, b->y[b->n++] = r->ips;
        height += r->bars ? 90 + 22.0 * r->n_bars : 0;
    }
    struct mps_plot_series s_lat[MPS_BENCH_PLOT_SERIES], s_ips[MPS_BENCH_PLOT_SERIES];
    mps_bench_series(lat, n_lat, NULL, true, s_lat);
    mps_bench_series(ips, n_ips, NULL, false, s_ips);
    char title[512];
    snprintf(title, sizeof title, "bench model %s: %s", model, machine);
    struct mps_svg *svg;
    enum mps_status st = mps_svg_open(path, 1200, height, title, &svg, err);
    if (st) {
        mps_bench_lines_free(lat, n_lat);
        mps_bench_lines_free(ips, n_ips);
        return st;
    }
    mps_svg_lines(svg, &(struct mps_plot_box){0, 36, 600, 420},
                  &(struct mps_plot_axes){.title = "latency: median, bars from p10 to p90",
                                          .xlabel = "batch",
                                          .ylabel = "ms per run",
                                          .xlog = true,
                                          .series = s_lat,
                                          .n_series = n_lat});
    mps_svg_lines(svg, &(struct mps_plot_box){600, 36, 600, 420},
                  &(struct mps_plot_axes){.title = "throughput",
                                          .xlabel = "batch",
                                          .ylabel = "inferences/s",
                                          .xlog = true,
                                          .series = s_ips,
                                          .n_series = n_ips});
    double y = 470;
    for (int i = 0; i < n; i++) {
        const struct mps_bench_result *r = &rows[i];
        if (!r->bars)
            continue;
        const char *labels[64];
        double values[64];
        int m = r->n_bars < 64 ? r->n_bars : 64;
        for (int j = 0; j < m; j++)
            labels[j] = r->bars[j].label, values[j] = r->bars[j].ms;
        char sub[160];
        snprintf(sub, sizeof sub, "profile, %s %s, batch %lld: each node's median time", r->backend, r->precision,
                 (long long)r->batch);
        mps_svg_bars(svg, &(struct mps_plot_box){0, y, 1200, 70 + 22.0 * m},
                     &(struct mps_plot_bars){.title = sub,
                                             .xlabel = "ms (fused nodes as in the text: Conv+Relu)",
                                             .labels = labels,
                                             .values = values,
                                             .n = m,
                                             .unit = " ms"});
        y += 90 + 22.0 * m;
    }
    mps_bench_lines_free(lat, n_lat);
    mps_bench_lines_free(ips, n_ips);
    return mps_svg_close(svg, err);
}
