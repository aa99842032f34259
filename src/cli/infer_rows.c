/* infer_rows.c: what `mpsrun infer` keeps of the outputs as chunks run:
   --expect's tally, the first output's rows (--output's file, --check's
   copy, a NaN row for each failed input), every output of one run
   (--outputs), and --check's comparison at the end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "infer_run.h"
#include "npz.h"

enum mps_status mps_infer_tally(struct mps_infer_run *run, const struct mps_infer_result *r, struct mps_error *err)
{
    const struct mps_infer_group *g = &r->groups[0];
    int64_t k = mps_infer_graph_classes(r->model->graph), row = 0;
    double *p = malloc(sizeof(double) * (size_t)(k + 1));
    if (!p)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int f = 0; f < r->n_files; f++)
        for (int64_t it = 0; it < r->files[f].items; it++, row++) {
            mps_infer_probabilities(r, g, row, p, k);
            int64_t top = mps_infer_top1(p, k);
            run->expect_items++;
            if (top == r->expect_class || run->expect_bad++)
                continue;
            char name[300];
            snprintf(name, sizeof name, r->files[f].file_items > 1 ? "%s (item %lld)" : "%s", r->files[f].path,
                     (long long)(r->files[f].item0 + it));
            if (top < 0)
                snprintf(run->expect_first, sizeof run->expect_first, "%s has no top class: its output is NaN", name);
            else
                snprintf(run->expect_first, sizeof run->expect_first, "%s has top class %lld '%s'", name,
                         (long long)top, top < r->n_labels ? r->labels[top] : "");
        }
    free(p);
    return MPS_OK;
}

/* Appends items rows of data (NULL: of NaN, for a failed input) to run->kept,
   whose shape (the model's first output, its batch growing) is set before the run. */
static enum mps_status mps_infer_keep(struct mps_infer_run *run, const void *data, int64_t items, struct mps_error *err)
{
    struct mps_tensor *k = &run->kept;
    int64_t have = k->shape.dim[0], per = 1;
    for (int d = 1; d < k->shape.ndim; d++)
        per *= k->shape.dim[d];
    size_t size = mps_dtype_size(k->dtype);
    if (have + items > run->kept_cap) {
        int64_t cap = run->kept_cap ? run->kept_cap * 2 : items;
        cap = cap < have + items ? have + items : cap;
        void *grown = realloc(k->data, size * (size_t)(cap * per + 1));
        if (!grown)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory keeping the output for --check");
        k->data = grown;
        run->kept_cap = cap;
    }
    char *to = (char *)k->data + size * (size_t)(have * per);
    if (data)
        memcpy(to, data, size * (size_t)(items * per));
    else
        memset(to, 0, size * (size_t)(items * per));
    for (int64_t i = 0; !data && k->dtype == MPS_F32 && i < items * per; i++)
        ((float *)to)[i] = NAN;
    k->shape.dim[0] = have + items;
    return MPS_OK;
}

/* The shape of the first output's rows, from the first chunk that ran:
   --output opened and --check's copy begun with it, and the rows of the
   inputs that failed before it filled in. A later chunk of another shape
   (a model of free sizes given inputs of several) is a usage error. */
static enum mps_status mps_infer_row_shape(struct mps_infer_run *run, const struct mps_tensor *out, const char *path,
                                           struct mps_error *err)
{
    struct mps_shape item = {out->shape.ndim ? out->shape.ndim - 1 : 0, {0}};
    memcpy(item.dim, out->shape.dim + 1, sizeof(int64_t) * (size_t)item.ndim);
    char a[128], b[128];
    if (run->row_known) {
        if (mps_shape_eq(&item, &run->row_item) && out->dtype == run->row_dtype)
            return MPS_OK;
        return mps_fail(err, MPS_ERR_USAGE,
                        "%s takes one array: the first output of %s is %s %s, of the items "
                        "before it %s %s (a model of free sizes, inputs of several: give them apart)",
                        run->npy ? "--output" : "--check", path, mps_dtype_name(out->dtype),
                        mps_shape_str(&item, a, sizeof a), mps_dtype_name(run->row_dtype),
                        mps_shape_str(&run->row_item, b, sizeof b));
    }
    run->row_known = true;
    run->row_item = item;
    run->row_dtype = out->dtype;
    enum mps_status st = MPS_OK;
    if (run->rep.output_path && (st = mps_npy_stream_open(run->rep.output_path, out->dtype, &item, &run->npy, err)))
        return st;
    if (run->checking) {
        run->kept = mps_tensor_make(out->dtype, &out->shape, NULL);
        run->kept.shape.dim[0] = 0;
    }
    if (run->rows && run->npy) /* the inputs that failed before any ran */
        st = mps_npy_stream_fill(run->npy, run->rows, err);
    if (!st && run->rows && run->checking)
        st = mps_infer_keep(run, NULL, run->rows, err);
    return st;
}

/* The chunk's rows of the first output into --output and --check's copy:
   each item's row, and for an input that failed one row of NaN in its place
   (so that row i stays input i's), noted in failed_rows. */
enum mps_status mps_infer_rows(struct mps_infer_run *run, struct mps_infer_result *r, struct mps_error *err)
{
    const struct mps_tensor *out = r->n_groups ? &r->groups[0].out[0] : NULL;
    int64_t at = 0,
            per = out && out->shape.ndim && out->shape.dim[0] ? mps_shape_numel(&out->shape) / out->shape.dim[0] : 0;
    size_t size = out ? mps_dtype_size(out->dtype) : 0;
    enum mps_status st = MPS_OK;
    for (int f = 0; out && f < r->n_files && !st; f++) /* the first file that ran names the shape */
        if (!r->files[f].st)
            st = mps_infer_row_shape(run, out, r->files[f].path, err);
    if (st == MPS_ERR_USAGE) { /* a shape the options cannot take: the stream stops, the report ends */
        r->stopped = run->stop_named = true;
        run->stop_subject = NULL;
    }
    if (st) {
        run->write_failed = st == MPS_ERR_RUNTIME;
        return st;
    }
    for (int f = 0; f < r->n_files && !st; f++) {
        const struct mps_infer_file *file = &r->files[f];
        int64_t n = file->st ? 1 : file->items;
        const void *data = file->st ? NULL : (const char *)out->data + size * (size_t)(at * per);
        if (file->st) {
            if (run->n_failed_rows == run->cap_failed_rows) {
                int64_t cap = run->cap_failed_rows ? 2 * run->cap_failed_rows : 16;
                int64_t *grown = realloc(run->failed_rows, sizeof *grown * (size_t)cap);
                if (!grown)
                    return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
                run->failed_rows = grown;
                run->cap_failed_rows = cap;
            }
            run->failed_rows[run->n_failed_rows++] = run->rows;
        }
        if (run->npy)
            st = data ? mps_npy_stream_append(run->npy, data, n, err) : mps_npy_stream_fill(run->npy, n, err);
        if (st)
            run->write_failed = true;
        else if (run->checking && run->row_known)
            st = mps_infer_keep(run, data, n, err);
        run->rows += n;
        at += file->st ? 0 : file->items;
    }
    return st;
}

/* --outputs: every output of the run, DIR/NAME.npy each (a name's characters
   other than letters, digits, '.', '-' and '_' as '_'; a name taken twice
   gets _2, _3...), or one .npz of them by their names. */
enum mps_status mps_infer_write_outputs(struct mps_infer_run *run, const struct mps_infer_result *r,
                                        struct mps_error *err)
{
    const struct mps_graph *g = r->model->graph;
    const struct mps_infer_group *grp = &r->groups[0];
    const char *names[64];
    struct mps_tensor out[64];
    void *narrowed[64] = {NULL};
    enum mps_status st = MPS_OK;
    int n = grp->n_out < 64 ? grp->n_out : 64;
    for (int o = 0; o < n; o++) {
        names[o] = g->values[g->outputs[o]].name;
        out[o] = grp->out[o];
        enum mps_dtype dt = r->model->output_dtype[o];
        if (dt != MPS_F16 || out[o].dtype != MPS_F32)
            continue;
        /* as the model declares it: the f32 the graph computes it in holds f16 values (model.h) */
        int64_t count = mps_shape_numel(&out[o].shape);
        if (!(narrowed[o] = malloc(sizeof(uint16_t) * (size_t)(count + 1)))) {
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
            break;
        }
        mps_convert_floats(MPS_F32, out[o].data, dt, narrowed[o], count);
        out[o] = mps_tensor_make(dt, &out[o].shape, narrowed[o]);
    }
    if (!st && run->rep.outputs_npz) {
        st = mps_npz_write(run->rep.outputs_path, n, names, out, err);
        run->rep.outputs_written = st ? 0 : n;
    }
    for (int o = 0; !st && !run->rep.outputs_npz && o < n; o++) {
        char file[256], path[4400];
        size_t k = 0;
        for (const char *c = names[o]; *c && k + 1 < 200; c++)
            file[k++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
                                *c == '-' || *c == '_'
                            ? *c
                            : '_';
        file[k] = '\0';
        if (!k || !strcmp(file, ".") || !strcmp(file, ".."))
            snprintf(file, sizeof file, "output_%d", o);
        int same = 1;
        for (int p = 0; p < o; p++)
            same +=
                !strcmp(run->rep.outputs_file[p], file) || (!strncmp(run->rep.outputs_file[p], file, strlen(file)) &&
                                                            run->rep.outputs_file[p][strlen(file)] == '_');
        if (same > 1)
            snprintf(file + strlen(file), sizeof file - strlen(file), "_%d", same);
        snprintf(run->rep.outputs_file[o], sizeof run->rep.outputs_file[o], "%s", file);
        snprintf(path, sizeof path, "%s/%s.npy", run->rep.outputs_path, file);
        if (!(st = mps_npy_write(path, &out[o], err)))
            run->rep.outputs_written = o + 1;
    }
    for (int o = 0; o < n; o++)
        free(narrowed[o]);
    return st;
}

/* kept and ref without the rows of failed inputs, into a and b (owned). */
static bool mps_infer_drop_rows(const struct mps_infer_run *run, struct mps_tensor *a, struct mps_tensor *b)
{
    int64_t rows = run->kept.shape.dim[0], per = rows ? mps_shape_numel(&run->kept.shape) / rows : 0, n = 0;
    *a = run->kept;
    *b = run->ref;
    a->data = malloc(sizeof(float) * (size_t)(rows * per + 1));
    b->data = malloc(sizeof(float) * (size_t)(rows * per + 1));
    if (!a->data || !b->data)
        return false;
    for (int64_t i = 0, f = 0; i < rows; i++) {
        if (f < run->n_failed_rows && run->failed_rows[f] == i) {
            f++;
            continue;
        }
        memcpy((float *)a->data + n * per, (const float *)run->kept.data + i * per, sizeof(float) * (size_t)per);
        memcpy((float *)b->data + n * per, (const float *)run->ref.data + i * per, sizeof(float) * (size_t)per);
        n++;
    }
    a->shape.dim[0] = b->shape.dim[0] = n;
    return true;
}

/* --check ref.npy: the first output of every item must match the reference
   by mps_compare's rule (within atol + rtol times the reference's largest
   magnitude). Rows of inputs that failed (--keep-going) are left out of both. */
enum mps_status mps_infer_check(struct mps_infer_result *r, struct mps_infer_run *run, struct mps_error *err)
{
    const struct mps_tensor *out = &run->kept, *ref = &run->ref;
    struct mps_tensor a = {0}, b = {0};
    char x[128], y[128];
    r->check_ok = false;
    if (!out->data || out->dtype != MPS_F32 || !mps_shape_eq(&out->shape, &ref->shape)) {
        snprintf(r->check_detail, sizeof r->check_detail, "output is %s %s, the reference f32 %s",
                 mps_dtype_name(out->dtype), out->data ? mps_shape_str(&out->shape, x, sizeof x) : "(none)",
                 mps_shape_str(&ref->shape, y, sizeof y));
        return mps_fail(err, MPS_ERR_CHECK, "--check %s: %s", r->check_path, r->check_detail);
    }
    if (run->n_failed_rows) {
        if (!mps_infer_drop_rows(run, &a, &b)) {
            free(a.data);
            free(b.data);
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        }
        out = &a;
        ref = &b;
    }
    int64_t n = mps_shape_numel(&ref->shape);
    r->tol.log = mps_model_probabilities(r->model, 0);
    mps_compare(MPS_F32, out->data, ref->data, n, r->tol, &r->check);
    r->compared = true;
    /* NaN matching NaN, or nothing compared, shows nothing about the model */
    int64_t nan_out = 0, nan_ref = 0;
    for (int64_t i = 0; i < n; i++) {
        nan_out += isnan(((const float *)out->data)[i]);
        nan_ref += isnan(((const float *)ref->data)[i]);
    }
    int len = 0;
    if (nan_out || nan_ref)
        len = snprintf(r->check_detail, sizeof r->check_detail,
                       "%lld of %lld output and %lld reference values "
                       "are NaN, and a check needs numbers; ",
                       (long long)nan_out, (long long)n, (long long)nan_ref);
    mps_compare_str(&r->check, n, r->tol, r->check_detail + len, sizeof r->check_detail - (size_t)len);
    if (n == 0)
        snprintf(r->check_detail, sizeof r->check_detail, "the reference is empty: nothing to compare");
    r->check_ok = r->check.ok && n > 0 && !nan_out && !nan_ref;
    free(a.data);
    free(b.data);
    if (!r->check_ok)
        return mps_fail(err, MPS_ERR_CHECK, "--check %s: %s", r->check_path, r->check_detail);
    return MPS_OK;
}
