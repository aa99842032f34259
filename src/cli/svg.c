/* svg.c: SVG charts (svg.h). Hand-written SVG: a few hundred lines of
   text that any browser, rsvg-convert or Inkscape draws. */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "outfile.h"

struct mps_svg {
    struct mps_out out; /* written beside its name, renamed over it when closed */
    FILE *f;
};

/* Tableau's ten colours: told apart by most readers, in print too. */
static const char *const mps_plot_colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                              "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define MPS_PLOT_N_COLORS (int)(sizeof mps_plot_colors / sizeof mps_plot_colors[0])

/* s as XML text: &, <, >, " escaped; a byte that is not part of well-formed
   UTF-8, and a character XML 1.0 does not allow at all, escaped or not (the
   controls but tab, line feed and carriage return; U+FFFE, U+FFFF), as '?'. */
static void mps_svg_escaped(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = mps_cli_utf8_len(p);
        bool control = n == 1 && ((*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r') || *p == 0x7f);
        bool nonchar = n == 3 && p[0] == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf);
        if (!n || control || nonchar) {
            fputc('?', f);
            p += n ? n : 1;
        } else if (*p == '&' || *p == '<' || *p == '>' || *p == '"') {
            fputs(*p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : "&quot;", f);
            p++;
        } else {
            fwrite(p, 1, (size_t)n, f);
            p += n;
        }
    }
}

/* <text> at (x, y): anchor start, middle or end; cls may be NULL. */
static void mps_svg_text(struct mps_svg *svg, double x, double y, const char *anchor, const char *cls, int size,
                         const char *extra, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(svg->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\"%s%s%s %s>", x, y, anchor, size,
            cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "", extra ? extra : "");
    mps_svg_escaped(svg->f, buf);
    fputs("</text>\n", svg->f);
}

enum mps_status mps_svg_open(const char *path, double width, double height, const char *title, struct mps_svg **out,
                             struct mps_error *err)
{
    struct mps_svg *svg = calloc(1, sizeof *svg);
    if (!svg)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    enum mps_status st = mps_out_open(path, &svg->out, err);
    if (st) {
        free(svg);
        return st;
    }
    svg->f = svg->out.f;
    fprintf(svg->f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
            "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            width, height, width, height);
    mps_svg_text(svg, width / 2, 24, "middle", "title", 16, "font-weight=\"bold\"", "%s", title);
    *out = svg;
    return MPS_OK;
}

enum mps_status mps_svg_close(struct mps_svg *svg, struct mps_error *err)
{
    if (!svg)
        return MPS_OK;
    fputs("</svg>\n", svg->f);
    enum mps_status st = mps_out_commit(&svg->out, err);
    free(svg);
    return st;
}

/* A value for a tick label: 1, 2.5, 1k, 2M... */
static const char *mps_plot_num(double v, char *buf, size_t size)
{
    double a = fabs(v);
    if (a >= 1e6)
        snprintf(buf, size, "%gM", v / 1e6);
    else if (a >= 1e3)
        snprintf(buf, size, "%gk", v / 1e3);
    else
        snprintf(buf, size, "%g", v);
    return buf;
}

/* The step between linear ticks: 1, 2 or 5 times a power of 10, about 5 of them over span. */
static double mps_plot_step(double span)
{
    double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static bool mps_plot_usable(double v, bool log)
{
    return isfinite(v) && (!log || v > 0);
}

/* Maps a value to a pixel: [lo, hi] onto [a, b], on a log scale or not. */
static double mps_plot_map(double v, double lo, double hi, double a, double b, bool log)
{
    double t = log ? (log2(v) - log2(lo)) / (log2(hi) - log2(lo)) : (v - lo) / (hi - lo);
    return a + t * (b - a);
}

void mps_svg_lines(struct mps_svg *svg, const struct mps_plot_box *box, const struct mps_plot_axes *ax)
{
    FILE *f = svg->f;
    size_t longest = 0; /* the legend takes what its longest name needs */
    for (int s = 0; s < ax->n_series; s++)
        longest = strlen(ax->series[s].name) > longest ? strlen(ax->series[s].name) : longest;
    double legend = fmin(fmax(110, 6.6 * (double)longest + 56), box->w / 2);
    double left = box->x + 70, right = box->x + box->w - legend, top = box->y + 30, bottom = box->y + box->h - 50;
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int s = 0; s < ax->n_series; s++)
        for (int i = 0; i < ax->series[s].n; i++) {
            const struct mps_plot_series *se = &ax->series[s];
            if (!mps_plot_usable(se->x[i], ax->xlog) || !mps_plot_usable(se->y[i], ax->ylog))
                continue;
            xlo = fmin(xlo, se->x[i]), xhi = fmax(xhi, se->x[i]);
            double lo = se->lo && mps_plot_usable(se->lo[i], ax->ylog) ? se->lo[i] : se->y[i];
            double hi = se->hi && isfinite(se->hi[i]) ? se->hi[i] : se->y[i];
            ylo = fmin(ylo, lo), yhi = fmax(yhi, hi);
        }
    if (ax->ref > 0)
        yhi = fmax(yhi, ax->ref), ylo = fmin(ylo, ax->ref);
    if (!(xlo <= xhi)) /* nothing to draw: an empty frame */
        xlo = 1, xhi = 2, ylo = 1, yhi = 2;
    if (xlo == xhi)
        xlo = ax->xlog ? xlo / 2 : xlo - 1, xhi = ax->xlog ? xhi * 2 : xhi + 1;
    /* y: from 0 on a linear scale, whole decades on a log one */
    double ystep = 0;
    if (ax->ylog) {
        ylo = pow(10, floor(log10(ylo))), yhi = pow(10, ceil(log10(yhi)));
        if (ylo == yhi)
            yhi *= 10;
    } else {
        ylo = fmin(0, ylo);
        ystep = mps_plot_step(yhi - ylo > 0 ? yhi - ylo : 1);
        yhi = ceil(yhi * 1.05 / ystep) * ystep;
    }
    /* x: a margin of half a step on each side, so no point sits on the frame */
    double xpad = ax->xlog ? pow(2, (log2(xhi) - log2(xlo)) * 0.04) : (xhi - xlo) * 0.04;
    double xa = ax->xlog ? xlo / xpad : xlo - xpad, xb = ax->xlog ? xhi * xpad : xhi + xpad;
    fprintf(f,
            "<g class=\"panel\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
            "stroke=\"#333\"/>\n",
            left, top, right - left, bottom - top);
    char num[32];
    if (ax->ylog) {
        for (double t = ylo; t <= yhi * 1.0001; t *= 10) {
            double y = mps_plot_map(t, ylo, yhi, bottom, top, true);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, right, y);
            mps_svg_text(svg, left - 6, y + 4, "end", NULL, 11, NULL, "%s", mps_plot_num(t, num, sizeof num));
        }
    } else {
        for (double t = ylo; t <= yhi + ystep / 2; t += ystep) {
            double y = mps_plot_map(t, ylo, yhi, bottom, top, false);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", left, y, right, y);
            mps_svg_text(svg, left - 6, y + 4, "end", NULL, 11, NULL, "%s", mps_plot_num(t, num, sizeof num));
        }
    }
    /* x ticks at the points' x values */
    double drawn[64];
    int n_drawn = 0;
    for (int s = 0; s < ax->n_series; s++)
        for (int i = 0; i < ax->series[s].n && n_drawn < 64; i++) {
            double v = ax->series[s].x[i];
            bool seen = !mps_plot_usable(v, ax->xlog);
            for (int j = 0; j < n_drawn && !seen; j++)
                seen = drawn[j] == v;
            if (seen)
                continue;
            drawn[n_drawn++] = v;
            double x = mps_plot_map(v, xa, xb, left, right, ax->xlog);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", x, bottom, x,
                    bottom + 4);
            mps_svg_text(svg, x, bottom + 17, "middle", NULL, 11, NULL, "%g", v); /* sizes, batches: as given */
        }
    mps_svg_text(svg, (left + right) / 2, top - 10, "middle", "panel-title", 13, NULL, "%s", ax->title);
    mps_svg_text(svg, (left + right) / 2, bottom + 38, "middle", "axis-label", 12, NULL, "%s", ax->xlabel);
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", box->x + 18, (top + bottom) / 2);
    mps_svg_text(svg, box->x + 18, (top + bottom) / 2, "middle", "axis-label", 12, rot, "%s", ax->ylabel);
    if (ax->ref > 0) {
        double y = mps_plot_map(ax->ref, ylo, yhi, bottom, top, ax->ylog);
        fprintf(f,
                "<line class=\"ref\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
                "stroke-dasharray=\"2,3\"/>\n",
                left, y, right, y);
        mps_svg_text(svg, right - 4, y - 5, "end", NULL, 11, "fill=\"#666\"", "%s", ax->ref_label ? ax->ref_label : "");
    }
    /* the series, then the legend */
    for (int s = 0, color = -1; s < ax->n_series; s++) {
        const struct mps_plot_series *se = &ax->series[s];
        color = se->dashed && color >= 0 ? color : color + 1;
        const char *c = mps_plot_colors[color % MPS_PLOT_N_COLORS];
        fprintf(f, "<path class=\"series\" data-series=\"");
        mps_svg_escaped(f, se->name);
        fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s d=\"", c,
                se->dashed ? " stroke-dasharray=\"6,4\"" : "");
        for (int i = 0, first = 1; i < se->n; i++) {
            if (!mps_plot_usable(se->x[i], ax->xlog) || !mps_plot_usable(se->y[i], ax->ylog))
                continue;
            fprintf(f, "%s%.1f %.1f ", first ? "M" : "L", mps_plot_map(se->x[i], xa, xb, left, right, ax->xlog),
                    mps_plot_map(se->y[i], ylo, yhi, bottom, top, ax->ylog));
            first = 0;
        }
        fputs("\"/>\n", f);
        for (int i = 0; i < se->n; i++) {
            if (!mps_plot_usable(se->x[i], ax->xlog) || !mps_plot_usable(se->y[i], ax->ylog))
                continue;
            double x = mps_plot_map(se->x[i], xa, xb, left, right, ax->xlog);
            if (se->lo && se->hi && mps_plot_usable(se->lo[i], ax->ylog) && isfinite(se->hi[i]))
                fprintf(f,
                        "<path class=\"errorbar\" stroke=\"%s\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1fM%.1f "
                        "%.1fL%.1f %.1f\"/>\n",
                        c, x, mps_plot_map(se->lo[i], ylo, yhi, bottom, top, ax->ylog), x,
                        mps_plot_map(se->hi[i], ylo, yhi, bottom, top, ax->ylog), x - 4,
                        mps_plot_map(se->lo[i], ylo, yhi, bottom, top, ax->ylog), x + 4,
                        mps_plot_map(se->lo[i], ylo, yhi, bottom, top, ax->ylog), x - 4,
                        mps_plot_map(se->hi[i], ylo, yhi, bottom, top, ax->ylog), x + 4,
                        mps_plot_map(se->hi[i], ylo, yhi, bottom, top, ax->ylog));
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x,
                    mps_plot_map(se->y[i], ylo, yhi, bottom, top, ax->ylog), c);
        }
        double ly = top + 8 + 18 * s;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                right + 12, ly, right + 36, ly, c, se->dashed ? " stroke-dasharray=\"6,4\"" : "");
        mps_svg_text(svg, right + 42, ly + 4, "start", "legend", 11, NULL, "%s", se->name);
    }
    fputs("</g>\n", f);
}

void mps_svg_bars(struct mps_svg *svg, const struct mps_plot_box *box, const struct mps_plot_bars *b)
{
    FILE *f = svg->f;
    size_t longest = 0; /* the labels take what the longest needs */
    for (int i = 0; i < b->n; i++)
        longest = strlen(b->labels[i]) > longest ? strlen(b->labels[i]) : longest;
    double left = box->x + fmin(fmax(6.6 * (double)(longest < 46 ? longest : 46) + 16, 80), 320);
    double right = box->x + box->w - 90, top = box->y + 30;
    double row = b->n ? fmin(22, (box->h - 70) / b->n) : 22, max = b->max;
    for (int i = 0; i < b->n && !(b->max > 0); i++)
        max = isfinite(b->values[i]) ? fmax(max, b->values[i]) : max;
    max = max > 0 ? max : 1;
    fputs("<g class=\"panel\">\n", f);
    mps_svg_text(svg, (left + right) / 2, top - 10, "middle", "panel-title", 13, NULL, "%s", b->title);
    for (int i = 0; i < b->n; i++) {
        double y = top + row * i, v = isfinite(b->values[i]) ? b->values[i] : 0;
        double w = (right - left) * v / max;
        fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", left,
                y + 2, w, row - 4, mps_plot_colors[0]);
        mps_svg_text(svg, left - 6, y + row / 2 + 4, "end", NULL, 11, NULL, "%.46s", b->labels[i]);
        mps_svg_text(svg, left + w + 4, y + row / 2 + 4, "start", NULL, 11, NULL, "%.3g%s", b->values[i],
                     b->unit ? b->unit : "");
    }
    double bottom = top + row * b->n;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", left, top, left, bottom);
    mps_svg_text(svg, (left + right) / 2, bottom + 24, "middle", "axis-label", 12, NULL, "%s", b->xlabel);
    fputs("</g>\n", f);
}

void mps_svg_heat(struct mps_svg *svg, const struct mps_plot_box *box, const struct mps_plot_heat *h)
{
    FILE *f = svg->f;
    int n = h->n;
    bool labels = n <= 40, numbers = n <= 20;
    double left = box->x + (labels ? 130 : 50), top = box->y + 40;
    double cell = fmin((box->w - (left - box->x) - 20) / n, (box->h - 160) / n);
    fputs("<g class=\"panel\">\n", f);
    mps_svg_text(svg, left + cell * n / 2, box->y + 20, "middle", "panel-title", 13, NULL, "%s", h->title);
    for (int r = 0; r < n; r++) {
        int64_t total = 0;
        for (int c = 0; c < n; c++)
            total += h->counts[(size_t)r * (size_t)n + (size_t)c];
        for (int c = 0; c < n; c++) {
            int64_t v = h->counts[(size_t)r * (size_t)n + (size_t)c];
            double t = total ? (double)v / (double)total : 0; /* white (0) to dark blue (1) */
            int red = (int)(247 - t * (247 - 8)), green = (int)(251 - t * (251 - 48)),
                blue = (int)(255 - t * (255 - 107));
            double x = left + cell * c, y = top + cell * r;
            fprintf(f,
                    "<rect class=\"cell\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                    "fill=\"rgb(%d,%d,%d)\" stroke=\"#fff\"/>\n",
                    x, y, cell, cell, red, green, blue);
            if (numbers && v)
                mps_svg_text(svg, x + cell / 2, y + cell / 2 + 4, "middle", NULL, cell < 30 ? 9 : 11,
                             t > 0.5 ? "fill=\"white\"" : NULL, "%lld", (long long)v);
        }
    }
    double below = top + cell * n; /* the columns' labels, slanted down */
    for (int i = 0; labels && i < n; i++) {
        mps_svg_text(svg, left - 6, top + cell * i + cell / 2 + 4, "end", NULL, 11, NULL, "%.18s", h->labels[i]);
        char rot[96];
        double x = left + cell * i + cell / 2 - 3, y = below + 10;
        snprintf(rot, sizeof rot, "transform=\"rotate(45 %.1f %.1f)\"", x, y);
        mps_svg_text(svg, x, y, "start", NULL, 11, rot, "%.18s", h->labels[i]);
    }
    mps_svg_text(svg, left + cell * n / 2, below + (labels ? 105 : 24), "middle", "axis-label", 12, NULL, "%s",
                 h->xlabel);
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", box->x + 14, top + cell * n / 2);
    mps_svg_text(svg, box->x + 14, top + cell * n / 2, "middle", "axis-label", 12, rot, "%s", h->ylabel);
    fputs("</g>\n", f);
}
