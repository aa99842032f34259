#include "harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int th_passed, th_failed, th_skipped;

#define TH_REPORT(tag, counter)             \
    do {                                    \
        va_list ap;                         \
        va_start(ap, fmt);                  \
        printf("%s ", tag);                 \
        vprintf(fmt, ap);                   \
        putchar('\n');                      \
        va_end(ap);                         \
        counter++;                          \
    } while (0)

void th_pass(const char *fmt, ...)
{
    TH_REPORT("ok  ", th_passed);
}

void th_fail(const char *fmt, ...)
{
    TH_REPORT("FAIL", th_failed);
}

void th_skip(const char *fmt, ...)
{
    TH_REPORT("skip", th_skipped);
}

bool th_check(bool ok, const char *fmt, ...)
{
    if (ok)
        TH_REPORT("ok  ", th_passed);
    else
        TH_REPORT("FAIL", th_failed);
    return ok;
}

int th_summary(void)
{
    printf("%d passed, %d failed, %d skipped\n", th_passed, th_failed, th_skipped);
    return th_failed ? 1 : 0;
}

static uint64_t th_state = 88172645463325252ull;

void th_seed(const char *name)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    th_state = h ? h : 1;
}

double th_uniform(double lo, double hi)
{
    th_state ^= th_state << 13; /* xorshift64 */
    th_state ^= th_state >> 7;
    th_state ^= th_state << 17;
    return lo + (hi - lo) * (double)(th_state >> 11) / 9007199254740992.0;
}

int th_backends(const struct mps_backend **list, int max)
{
    static const char *const known[] = {"cpu", "cuda", "mps"};
    int n = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const struct mps_backend *be = mps_backend_find(known[i]);
        struct mps_backend_info info;
        struct mps_error err = {{0}};
        if (!be)
            th_skip("backend %s: not compiled in", known[i]);
        else if (be->probe(&info, &err) != MPS_OK)
            th_skip("backend %s: not available: %s", known[i], err.msg);
        else if (n < max)
            list[n++] = be;
    }
    if (n < max)
        list[n++] = &th_backend_mps_sim;
    return n;
}

void *th_alloc(enum mps_dtype t, int64_t n)
{
    return calloc((size_t)(n > 0 ? n : 1), mps_dtype_size(t));
}

void th_to_double(enum mps_dtype t, const void *p, int64_t n, double *out)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = mps_elem_get(p, t, i);
}

void th_from_double(enum mps_dtype t, const double *v, int64_t n, void *p)
{
    for (int64_t i = 0; i < n; i++)
        mps_elem_set(p, t, i, v[i]);
}

int th_add_random_const(struct mps_graph *g, const char *name, const struct mps_shape *s, double lo, double hi)
{
    int64_t n = mps_shape_numel(s);
    float *d = th_alloc(MPS_F32, n);
    for (int64_t i = 0; i < n; i++)
        d[i] = (float)th_uniform(lo, hi);
    int id = mps_graph_add_const(g, name, MPS_F32, s, d);
    free(d);
    return id;
}

enum mps_status th_run(const struct mps_backend *be, const struct mps_graph *g, const struct mps_tensor *in,
                       struct mps_tensor *out, struct mps_error *err)
{
    for (int i = 0; i < g->n_outputs; i++) {
        const struct mps_value *v = &g->values[g->outputs[i]];
        out[i] = mps_tensor_make(v->dtype, &v->shape, th_alloc(v->dtype, mps_shape_numel(&v->shape)));
    }
    struct mps_plan *plan;
    enum mps_status st = mps_plan_compile(be, g, &(struct mps_compile_opts){0}, &plan, err);
    if (st)
        return st;
    st = mps_plan_run(plan, in, out, err);
    for (int i = 0; !st && i < g->n_outputs; i++) { /* a bounded output: the size the run gave it */
        struct mps_shape shape;
        mps_plan_output_shape(plan, i, &shape);
        out[i] = mps_tensor_make(out[i].dtype, &shape, out[i].data);
        if (out[i].dtype == MPS_STRING) { /* the characters live in the plan: copied out before it goes */
            void *copy = mps_strings_dup(out[i].data, mps_shape_numel(&shape));
            free(out[i].data);
            out[i].data = copy;
        }
    }
    mps_plan_free(plan);
    return st;
}

void th_free_tensors(struct mps_tensor *t, int n)
{
    for (int i = 0; i < n; i++) {
        free(t[i].data);
        t[i].data = NULL;
    }
}

static bool th_is_int(enum mps_dtype t)
{
    return t == MPS_I64 || t == MPS_I32 || t == MPS_U8 || t == MPS_BOOL;
}

void th_ref_graph(const struct mps_graph *g, const struct mps_tensor *in, struct ref_tensor *out)
{
    struct ref_tensor *vals = calloc((size_t)g->n_values, sizeof *vals);
    for (int v = 0; v < g->n_values; v++) {
        const struct mps_value *val = &g->values[v];
        vals[v].shape = val->shape;
        vals[v].integer = th_is_int(val->dtype);
        vals[v].dt = val->dtype;
        if (val->data) {
            int64_t n = mps_shape_numel(&val->shape);
            vals[v].d = malloc(sizeof(double) * (size_t)(n ? n : 1));
            th_to_double(val->dtype, val->data, n, vals[v].d);
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        struct ref_tensor *r = &vals[g->inputs[i]];
        int64_t n = mps_shape_numel(&r->shape);
        r->d = malloc(sizeof(double) * (size_t)(n ? n : 1));
        th_to_double(in[i].dtype, in[i].data, n, r->d);
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        struct ref_tensor rin[16], rout[8];
        memset(rin, 0, sizeof rin);
        for (int i = 0; i < n->n_in && i < 16; i++)
            if (n->in[i] >= 0)
                rin[i] = vals[n->in[i]];
        for (int i = 0; i < n->n_out; i++) {
            struct ref_tensor *r = &vals[n->out[i]];
            r->d = calloc((size_t)(ref_numel(&r->shape) + 1), sizeof(double));
            rout[i] = *r;
        }
        ref_op(n->op, &n->p, rin, n->n_in, rout, n->n_out);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        const struct ref_tensor *r = &vals[g->outputs[i]];
        int64_t n = ref_numel(&r->shape);
        out[i] = *r;
        out[i].d = malloc(sizeof(double) * (size_t)(n ? n : 1));
        memcpy(out[i].d, r->d, sizeof(double) * (size_t)n);
    }
    for (int v = 0; v < g->n_values; v++)
        free(vals[v].d);
    free(vals);
}

double th_nmse(const double *got, const double *want, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(got[i]) != isnan(want[i]) || (isinf(want[i]) && got[i] != want[i]))
            return INFINITY;
        if (isnan(want[i]) || isinf(want[i]))
            continue;
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return den > 0 ? num / den : num;
}
