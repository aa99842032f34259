/* input.c: INPUT files (PNG or .npy) into the batches a model runs.

   A model with one input whose batch dim is free runs every file as one
   batch; otherwise each file runs on its own and must fill the model's batch.
   A model with several inputs takes one .npy per input, in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "image.h"
#include "infer.h"
#include "npy.h"

/* The decoded items of one file, [items, item shape...] flattened. */
struct mps_infer_data {
    float *data;
    int64_t items;
};

static enum mps_status mps_infer_decode(struct mps_infer_result *r, int f, const struct mps_shape *item,
                                        bool free_batch, int64_t batch, struct mps_infer_data *d,
                                        struct mps_error *err)
{
    struct mps_infer_file *file = &r->files[f];
    unsigned char *buf;
    size_t len;
    enum mps_status st = mps_file_read(file->path, (size_t)1 << 31, MPS_ERR_INPUT, &buf, &len, err);
    if (st)
        return st;
    int64_t per = mps_shape_numel(item);
    char a[128], b[128];
    if (mps_image_is_png(buf, len)) {
        const struct mps_infer_prep *p = &r->prep;
        if (per != p->channels * p->height * p->width) {
            free(buf);
            return mps_fail(err, MPS_ERR_INPUT, "the model's input %s is not an image (channels x height x width)",
                            mps_shape_str(item, a, sizeof a));
        }
        struct mps_image_opts o = {.channels = p->channels, .height = p->height, .width = p->width};
        memcpy(o.mean, p->mean, sizeof o.mean);
        memcpy(o.std, p->std, sizeof o.std);
        struct mps_image_info info;
        d->items = 1;
        d->data = malloc(sizeof(float) * (size_t)per);
        st = d->data ? mps_image_decode(buf, len, &o, d->data, &info, err)
                     : mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        snprintf(file->source, sizeof file->source, "PNG %s %ux%u", info.format, info.width, info.height);
        r->n_png++;
    } else if (len < 6 || memcmp(buf, "\x93NUMPY", 6) != 0) {
        st = mps_fail(err, MPS_ERR_INPUT, "not a PNG or .npy file (neither signature)");
    } else {
        struct mps_tensor t;
        st = mps_npy_parse(buf, len, &t, err);
        if (!st) {
            /* [items, item...] or one item without the batch dim */
            bool whole = t.shape.ndim == item->ndim + 1, one = mps_shape_eq(&t.shape, item);
            for (int i = 0; whole && i < item->ndim; i++)
                whole = t.shape.dim[i + 1] == item->dim[i];
            d->items = one ? 1 : whole ? t.shape.dim[0] : -1;
            if (d->items == 0) {
                st = mps_fail(err, MPS_ERR_INPUT, ".npy shape %s holds no items to run",
                              mps_shape_str(&t.shape, a, sizeof a));
                free(t.data);
            } else if (d->items < 0 || (!free_batch && d->items != batch)) {
                struct mps_shape want = {item->ndim + 1, {batch}};
                memcpy(want.dim + 1, item->dim, sizeof(int64_t) * (size_t)item->ndim);
                st = mps_fail(err, MPS_ERR_INPUT, ".npy shape %s does not fit the model's input %s%s",
                              mps_shape_str(&t.shape, a, sizeof a), mps_shape_str(&want, b, sizeof b),
                              free_batch ? " (any batch)" : "");
                free(t.data);
            } else {
                d->data = t.data;
                snprintf(file->source, sizeof file->source, "npy f32 %s", mps_shape_str(&t.shape, a, sizeof a));
            }
        }
    }
    free(buf);
    file->items = st ? 0 : d->items;
    return st;
}

/* Concatenates the items of files [first, first + n) into one input tensor. */
static enum mps_status mps_infer_stack(struct mps_infer_data *d, int first, int n, const struct mps_shape *item,
                                       struct mps_tensor *t, struct mps_error *err)
{
    int64_t items = 0, per = mps_shape_numel(item);
    for (int f = first; f < first + n; f++)
        items += d[f].items;
    struct mps_shape s = {item->ndim + 1, {items}};
    memcpy(s.dim + 1, item->dim, sizeof(int64_t) * (size_t)item->ndim);
    float *data = malloc(sizeof(float) * (size_t)(items * per + 1));
    if (!data)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int f = first, at = 0; f < first + n; at += (int)d[f].items, f++)
        memcpy(data + at * per, d[f].data, sizeof(float) * (size_t)(d[f].items * per));
    *t = mps_tensor_make(MPS_F32, &s, data);
    return MPS_OK;
}

/* A model with several inputs: one .npy per input, one group. */
static enum mps_status mps_infer_multi(struct mps_infer_result *r, struct mps_error *err, const char **bad_file)
{
    const struct mps_graph *g = r->model->graph;
    if (r->n_files != g->n_inputs || g->n_inputs > 8)
        return mps_fail(err, MPS_ERR_USAGE, "the model takes %d inputs: give one .npy file for each", g->n_inputs);
    struct mps_infer_group *grp = &r->groups[0];
    *grp = (struct mps_infer_group){.first_file = 0, .n_files = r->n_files, .n_in = g->n_inputs};
    r->n_groups = 1;
    for (int i = 0; i < g->n_inputs; i++) {
        *bad_file = r->files[i].path;
        enum mps_status st = mps_npy_read(r->files[i].path, &grp->in[i], err);
        if (st)
            return st;
        r->files[i].items = 1;
        char a[128];
        snprintf(r->files[i].source, sizeof r->files[i].source, "npy f32 %s",
                 mps_shape_str(&grp->in[i].shape, a, sizeof a));
    }
    *bad_file = NULL;
    return MPS_OK;
}

enum mps_status mps_infer_inputs(struct mps_infer_result *r, char **paths, int n_paths, struct mps_shape *shape,
                                 struct mps_error *err, const char **bad_file)
{
    const struct mps_graph *g = r->model->graph;
    r->n_files = n_paths;
    r->files = calloc((size_t)n_paths, sizeof *r->files);
    r->groups = calloc((size_t)n_paths, sizeof *r->groups);
    struct mps_infer_data *d = calloc((size_t)n_paths, sizeof *d);
    if (!r->files || !r->groups || !d) {
        free(d);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    for (int f = 0; f < n_paths; f++)
        r->files[f].path = paths[f];
    enum mps_status st = MPS_OK;
    *bad_file = NULL;
    if (g->n_inputs != 1) {
        st = mps_infer_multi(r, err, bad_file);
        free(d);
        return st;
    }
    const struct mps_value *in = &g->values[g->inputs[0]];
    bool free_batch = in->shape.ndim >= 1 && r->model->inputs[0].symbolic[0];
    if (in->shape.ndim < 1 || in->dtype != MPS_F32) {
        free(d);
        return mps_fail(err, MPS_ERR_MODEL, "the model's input '%s' is not a batch of f32 data", in->name);
    }
    struct mps_shape item = {in->shape.ndim - 1, {0}};
    memcpy(item.dim, in->shape.dim + 1, sizeof(int64_t) * (size_t)item.ndim);
    for (int f = 0; f < n_paths && !st; f++) {
        st = mps_infer_decode(r, f, &item, free_batch, in->shape.dim[0], &d[f], err);
        if (st)
            *bad_file = paths[f];
    }
    /* one batch of every file when the batch is free, else one run per file */
    r->n_groups = st ? 0 : free_batch ? 1 : n_paths;
    for (int k = 0; k < r->n_groups && !st; k++) {
        struct mps_infer_group *grp = &r->groups[k];
        grp->first_file = free_batch ? 0 : k;
        grp->n_files = free_batch ? n_paths : 1;
        grp->n_in = 1;
        st = mps_infer_stack(d, grp->first_file, grp->n_files, &item, &grp->in[0], err);
    }
    if (!st)
        *shape = r->groups[0].in[0].shape;
    for (int f = 0; f < n_paths; f++)
        free(d[f].data);
    free(d);
    return st;
}

void mps_infer_free_groups(struct mps_infer_result *r)
{
    for (int k = 0; k < r->n_groups; k++) {
        struct mps_infer_group *grp = &r->groups[k];
        for (int i = 0; i < grp->n_in; i++)
            free(grp->in[i].data);
        for (int i = 0; grp->out && i < grp->n_out; i++)
            free(grp->out[i].data);
        free(grp->out);
    }
    free(r->groups);
    free(r->files);
}
