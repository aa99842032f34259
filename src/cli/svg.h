/* svg.h: charts as SVG, written by mpsrun itself (no plotting runtime):
   line charts with error bars and a reference line, horizontal bars, and a
   heat map. A chart is panels on one page, each placed by its caller:

       struct mps_svg *svg = mps_svg_open("out.svg", 760, 440, "bench matmul", &err);
       mps_svg_lines(svg, &(struct mps_plot_box){0, 40, 760, 400}, &axes);
       mps_svg_close(svg, &err);     // MPS_ERR_RUNTIME when the file cannot be written

   Elements carry classes a test can count: each series' line is a path of
   class "series" (data-series its name), each bar a rect of class "bar",
   each heat-map cell a rect of class "cell", each axis title a text of
   class "axis-label". Text is escaped for XML; bytes that are not UTF-8,
   and characters XML cannot hold (control characters but tab and line
   breaks), become '?'. */
#ifndef MPS_CLI_SVG_H
#define MPS_CLI_SVG_H

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

struct mps_svg;

/* Where a panel goes on the page, in pixels. */
struct mps_plot_box {
    double x, y, w, h;
};

struct mps_plot_series {
    const char *name; /* in the legend */
    int n;
    const double *x, *y;   /* n points; a point with a y that is not finite and above 0 on a log axis is left out */
    const double *lo, *hi; /* optional: an error bar from lo to hi at each point */
    bool dashed;           /* drawn dashed, in the colour of the series before it (a baseline beside its series) */
};

struct mps_plot_axes {
    const char *title, *xlabel, *ylabel;
    bool xlog, ylog; /* log scales (base 2 for x, 10 for y) */
    const struct mps_plot_series *series;
    int n_series;
    double ref; /* above 0: a horizontal line at this y (a peak), labelled ref_label */
    const char *ref_label;
};

struct mps_plot_bars {
    const char *title, *xlabel;
    const char *const *labels;
    const double *values; /* n of them, drawn in the order given */
    int n;
    const char *unit; /* after each value, e.g. "ms", "%" */
    double max;       /* the value a full bar stands for (100 for a percentage); 0: the largest */
};

struct mps_plot_heat {
    const char *title, *xlabel, *ylabel;
    const char *const *labels; /* n: the rows' and columns' */
    const int64_t *counts;     /* [n][n], row-major */
    int n;
};

enum mps_status mps_svg_open(const char *path, double width, double height, const char *title, struct mps_svg **svg,
                             struct mps_error *err);
/* A line chart: axes with ticks, one line per series (markers at the points,
   error bars where given), a legend on the right. */
void mps_svg_lines(struct mps_svg *svg, const struct mps_plot_box *box, const struct mps_plot_axes *a);
/* Horizontal bars from 0, labelled on the left, their values at their ends. */
void mps_svg_bars(struct mps_svg *svg, const struct mps_plot_box *box, const struct mps_plot_bars *b);
/* A heat map of counts: a cell's shade is its count over its row's total
   (white to blue), the count written in it. */
void mps_svg_heat(struct mps_svg *svg, const struct mps_plot_box *box, const struct mps_plot_heat *h);
/* Ends the document and closes the file; NULL is a no-op. */
enum mps_status mps_svg_close(struct mps_svg *svg, struct mps_error *err);

#endif
