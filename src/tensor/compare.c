#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The value compared: ln v with log (-infinity for 0), else v. A negative
   value under log stays itself (the caller compares it for equality). */
static double mps_compare_val(double v, bool log_of)
{
    return log_of && v >= 0 ? log(v) : v;
}

/* |g - w| of the compared values, with NaN equal to NaN and an infinity equal
   to itself only. */
static double mps_compare_err(double g, double w, bool log_of)
{
    if (log_of && (g < 0 || w < 0))
        return g == w ? 0 : INFINITY;
    g = mps_compare_val(g, log_of), w = mps_compare_val(w, log_of);
    if (isnan(g) || isnan(w))
        return isnan(g) && isnan(w) ? 0 : INFINITY;
    if (isinf(g) || isinf(w))
        return g == w ? 0 : INFINITY;
    return fabs(g - w);
}

void mps_compare(enum mps_dtype dtype, const void *got, const void *want, int64_t n, struct mps_tolerance tol,
                 struct mps_comparison *c)
{
    bool exact = !mps_dtype_is_float(dtype), log_of = tol.log && !exact;
    *c = (struct mps_comparison){.ok = true, .worst = -1, .exact = exact, .log = log_of};
    for (int64_t i = 0; i < n; i++) {
        double w = fabs(mps_compare_val(mps_elem_get(want, dtype, i), log_of));
        if (isfinite(w) && w > c->scale)
            c->scale = w;
    }
    /* the comparison is written so that a NaN bound (a NaN tolerance) fails */
    double bound = c->bound = exact ? 0 : tol.atol + tol.rtol * c->scale;
    for (int64_t i = 0; i < n; i++) {
        double g = mps_elem_get(got, dtype, i), w = mps_elem_get(want, dtype, i),
               e = dtype == MPS_STRING ? strcmp(((const char *const *)got)[i], ((const char *const *)want)[i]) != 0
                   : exact ? (mps_elem_get_int(got, dtype, i) != mps_elem_get_int(want, dtype, i) ? fabs(g - w) + 1 : 0)
                           : mps_compare_err(g, w, log_of);
        if (!(e <= bound))
            c->n_bad++;
        if (c->worst < 0 || e > c->abs_err) {
            c->worst = i;
            c->got = g, c->want = w, c->abs_err = e;
        }
    }
    c->ok = c->n_bad == 0;
    c->rel_err = c->scale > 0 ? c->abs_err / c->scale : c->abs_err;
}

char *mps_compare_str(const struct mps_comparison *c, int64_t n, struct mps_tolerance tol, char *buf, size_t size)
{
    if (c->worst < 0) {
        snprintf(buf, size, "no elements");
        return buf;
    }
    const char *ln = c->log ? "ln " : "";
    int len =
        snprintf(buf, size, "max %serror %.3g = %.3g of the %sscale %.6g, at element %lld: got %.9g, expected %.9g", ln,
                 c->abs_err, c->rel_err, ln, c->scale, (long long)c->worst, c->got, c->want);
    if (c->ok || len < 0 || (size_t)len >= size)
        return buf;
    if (c->exact)
        snprintf(buf + len, size - (size_t)len, "; %lld of %lld elements differ", (long long)c->n_bad, (long long)n);
    else
        snprintf(buf + len, size - (size_t)len, "; %lld of %lld elements beyond %.3g (rtol %g of the scale, atol %g)%s",
                 (long long)c->n_bad, (long long)n, c->bound, tol.rtol, tol.atol,
                 c->log ? "; probabilities are compared as logarithms" : "");
    return buf;
}
