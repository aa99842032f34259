/* input.c: input files (PNG or .npy) into the items of a model's batch
   (stream.c puts them together into runs); a model with several inputs
   takes one .npy per input, in order, as one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "image.h"
#include "infer.h"
#include "npy.h"

enum mps_status mps_infer_decode(const struct mps_infer_prep *prep, const struct mps_shape *item, int64_t fixed_batch,
                                 struct mps_infer_file *file, float *dst, int64_t room, float **spill,
                                 struct mps_error *err)
{
    unsigned char *buf;
    size_t len;
    *spill = NULL;
    file->items = 0;
    enum mps_status st = mps_file_read(file->path, (size_t)1 << 31, MPS_ERR_INPUT, &buf, &len, err);
    if (st)
        return st;
    int64_t per = mps_shape_numel(item);
    char a[128], b[128];
    if (mps_image_is_png(buf, len)) {
        struct mps_image_opts o = {.channels = prep->channels, .height = prep->height, .width = prep->width};
        memcpy(o.mean, prep->mean, sizeof o.mean);
        memcpy(o.std, prep->std, sizeof o.std);
        struct mps_image_info info;
        file->png = true;
        if (per != prep->channels * prep->height * prep->width)
            st = mps_fail(err, MPS_ERR_INPUT, "the model's input %s is not an image (channels x height x width)",
                          mps_shape_str(item, a, sizeof a));
        else if (fixed_batch > 1)
            st = mps_fail(err, MPS_ERR_INPUT, "a PNG is one image, and the model fixes its batch at %lld: give a "
                          ".npy of %lld items", (long long)fixed_batch, (long long)fixed_batch);
        else
            st = mps_image_decode(buf, len, &o, dst, &info, err);
        if (!st) {
            file->items = 1;
            snprintf(file->source, sizeof file->source, "PNG %s %ux%u", info.format, info.width, info.height);
        }
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
            int64_t items = one ? 1 : whole ? t.shape.dim[0] : -1;
            if (items == 0) {
                st = mps_fail(err, MPS_ERR_INPUT, ".npy shape %s holds no items to run",
                              mps_shape_str(&t.shape, a, sizeof a));
            } else if (items < 0 || (fixed_batch && items != fixed_batch)) {
                struct mps_shape want = {item->ndim + 1, {fixed_batch ? fixed_batch : 1}};
                memcpy(want.dim + 1, item->dim, sizeof(int64_t) * (size_t)item->ndim);
                st = mps_fail(err, MPS_ERR_INPUT, ".npy shape %s does not fit the model's input %s%s",
                              mps_shape_str(&t.shape, a, sizeof a), mps_shape_str(&want, b, sizeof b),
                              fixed_batch ? "" : " (any batch)");
            } else {
                file->items = items;
                snprintf(file->source, sizeof file->source, "npy f32 %s", mps_shape_str(&t.shape, a, sizeof a));
                if (items <= room)
                    memcpy(dst, t.data, sizeof(float) * (size_t)(items * per));
                else
                    *spill = t.data, t.data = NULL;
            }
            free(t.data);
        }
    }
    free(buf);
    return st;
}

enum mps_status mps_infer_multi(struct mps_infer_result *r, char **paths, int n_paths, struct mps_error *err,
                                const char **bad_file)
{
    const struct mps_graph *g = r->model->graph;
    if (n_paths != g->n_inputs || g->n_inputs > 8)
        return mps_fail(err, MPS_ERR_USAGE, "the model takes %d inputs: give one .npy file for each", g->n_inputs);
    r->files = calloc((size_t)n_paths, sizeof *r->files);
    r->groups = calloc(1, sizeof *r->groups);
    if (!r->files || !r->groups)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    r->n_files = n_paths;
    r->n_groups = 1;
    struct mps_infer_group *grp = &r->groups[0];
    *grp = (struct mps_infer_group){0};
    for (int i = 0; i < g->n_inputs; i++) {
        r->files[i].path = paths[i];
        r->files[i].index = i;
        *bad_file = paths[i];
        enum mps_status st = mps_npy_read(paths[i], &grp->in[i], err);
        if (st)
            return st;
        grp->n_in++;
        r->files[i].items = 1;
        char a[128];
        snprintf(r->files[i].source, sizeof r->files[i].source, "npy f32 %s",
                 mps_shape_str(&grp->in[i].shape, a, sizeof a));
    }
    *bad_file = NULL;
    return MPS_OK;
}

void mps_infer_free_groups(struct mps_infer_result *r)
{
    for (int k = 0; k < r->n_groups && !r->groups[k].borrowed; k++) {
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
