/* input.c: input files (PNG or .npy) into the items of a model's batch
   (stream.c puts them together into runs); a model with several inputs
   takes one .npy per input, in order, as one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "image.h"
#include "infer.h"
#include "npy.h"

/* s with a free dim (-1) as "?": "[1,3,?,?]". */
static const char *mps_infer_dims(const struct mps_shape *s, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s->ndim && n < size; i++)
        n += (size_t)(s->dim[i] < 0 ? snprintf(buf + n, size - n, "%s?", i ? "," : "")
                                    : snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)s->dim[i]));
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* Whether the dims of s fit those of decl (-1 in decl: any size). */
static bool mps_infer_fits(const int64_t *s, const int64_t *decl, int n)
{
    for (int i = 0; i < n; i++)
        if (decl[i] >= 0 && s[i] != decl[i])
            return false;
    return true;
}

/* A .npy's items: [items, item...], or one item without the batch dim; its item shape into *got. */
static enum mps_status mps_infer_npy_items(const struct mps_npy_info *info, const struct mps_shape *item,
                                           int64_t fixed_batch, int64_t *items, struct mps_shape *got,
                                           struct mps_error *err)
{
    char a[128], b[128];
    const struct mps_shape *s = &info->shape;
    bool one = s->ndim == item->ndim && mps_infer_fits(s->dim, item->dim, item->ndim);
    bool whole = s->ndim == item->ndim + 1 && mps_infer_fits(s->dim + 1, item->dim, item->ndim);
    *items = one ? 1 : whole ? s->dim[0] : -1;
    *got = (struct mps_shape){item->ndim, {0}};
    memcpy(got->dim, s->dim + (whole ? 1 : 0), sizeof(int64_t) * (size_t)item->ndim);
    if (*items == 0)
        return mps_fail(err, MPS_ERR_INPUT, ".npy shape %s holds no items to run", mps_shape_str(s, a, sizeof a));
    if (*items < 0 || (fixed_batch && *items != fixed_batch)) {
        struct mps_shape want = {item->ndim + 1, {fixed_batch ? fixed_batch : 1}};
        memcpy(want.dim + 1, item->dim, sizeof(int64_t) * (size_t)item->ndim);
        return mps_fail(err, MPS_ERR_INPUT, ".npy shape %s does not fit the model's input %s%s",
                        mps_shape_str(s, a, sizeof a), mps_infer_dims(&want, b, sizeof b),
                        fixed_batch ? "" : " (any batch)");
    }
    for (int i = 0; i < got->ndim; i++)
        if (got->dim[i] == 0)
            return mps_fail(err, MPS_ERR_INPUT, ".npy shape %s: an item of it is empty", mps_shape_str(s, a, sizeof a));
    return MPS_OK;
}

/* The item a PNG makes for the model's input item: [C, H, W] (or [H, W]
   for a [N, H, W] input), H and W from prep or, where the model leaves them
   free and nothing sets them, the image's own w x h. */
static bool mps_infer_png_item(const struct mps_infer_prep *prep, const struct mps_shape *item, uint32_t w, uint32_t h,
                               struct mps_shape *got)
{
    int r = item->ndim;
    if (r != 2 && r != 3)
        return false;
    *got = *item;
    if (r == 3)
        got->dim[0] = prep->channels;
    got->dim[r - 2] = prep->height ? prep->height : h;
    got->dim[r - 1] = prep->width ? prep->width : w;
    return (r == 2 ? prep->channels == 1 : true) && mps_infer_fits(got->dim, item->dim, r) && got->dim[r - 2] > 0 &&
           got->dim[r - 1] > 0;
}

static enum mps_status mps_infer_decode_png(const struct mps_infer_prep *prep, const struct mps_shape *item,
                                            int64_t fixed_batch, int fd, int64_t size, const unsigned char *head,
                                            size_t got, struct mps_infer_file *file, float *dst, float **own,
                                            struct mps_error *err)
{
    char a[128];
    uint32_t w = 0, h = 0;
    file->png = true;
    enum mps_status st = mps_image_check_head(head, got, &w, &h, err);
    if (st)
        return st;
    if (!mps_infer_png_item(prep, item, w, h, &file->item) ||
        (!dst && !prep->height && (!w || !h))) /* a free size, and no IHDR to take it from: libpng says why */
        return mps_fail(err, MPS_ERR_INPUT, "the model's input %s is not an image (channels x height x width)",
                        mps_infer_dims(item, a, sizeof a));
    if (fixed_batch > 1)
        return mps_fail(err, MPS_ERR_INPUT,
                        "a PNG is one image, and the model fixes its batch at %lld: give a .npy of %lld items",
                        (long long)fixed_batch, (long long)fixed_batch);
    if ((uint64_t)size > (uint64_t)1 << 30)
        return mps_fail(err, MPS_ERR_INPUT, "a PNG file of %lld bytes is larger than mpsrun reads (1 GiB)",
                        (long long)size);
    int r = file->item.ndim;
    struct mps_image_opts o = {
        .channels = prep->channels, .height = file->item.dim[r - 2], .width = file->item.dim[r - 1]};
    memcpy(o.mean, prep->mean, sizeof o.mean);
    memcpy(o.std, prep->std, sizeof o.std);
    unsigned char *buf = malloc((size_t)size + 1);
    if (!dst && buf)
        dst = *own = malloc(sizeof(float) * (size_t)(o.channels * o.height * o.width));
    if (!buf || !dst) {
        free(buf);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading %lld bytes", (long long)size);
    }
    struct mps_image_info info;
    if (!(st = mps_file_pread(fd, buf, (size_t)size, 0, MPS_ERR_INPUT, err)))
        st = mps_image_decode(buf, (size_t)size, &o, dst, &info, err);
    free(buf);
    if (!st) {
        file->file_items = 1;
        snprintf(file->source, sizeof file->source, "PNG %s %ux%u", info.format, info.width, info.height);
    }
    return st;
}

enum mps_status mps_infer_decode(const struct mps_infer_prep *prep, const struct mps_shape *item, int64_t fixed_batch,
                                 struct mps_infer_file *file, float *dst, float **own, struct mps_error *err)
{
    file->file_items = 0;
    *own = NULL;
    int fd;
    int64_t size;
    enum mps_status st = mps_file_open(file->path, MPS_ERR_INPUT, &fd, &size, err);
    if (st)
        return st;
    unsigned char head[24];
    size_t got = size < (int64_t)sizeof head ? (size_t)size : sizeof head;
    if ((st = mps_file_pread(fd, head, got, 0, MPS_ERR_INPUT, err))) {
    } else if (mps_image_is_png(head, got)) {
        st = mps_infer_decode_png(prep, item, fixed_batch, fd, size, head, got, file, dst, own, err);
    } else if (got < 6 || memcmp(head, "\x93NUMPY", 6) != 0) {
        st = mps_fail(err, MPS_ERR_INPUT, "not a PNG or .npy file (neither signature)");
    } else {
        struct mps_npy_info info;
        int64_t items;
        char a[128];
        if (!(st = mps_npy_header_fd(fd, size, &info, err)) && !(st = mps_npy_require_f32(&info, err)) &&
            !(st = mps_infer_npy_items(&info, item, fixed_batch, &items, &file->item, err))) {
            file->file_items = items;
            file->data_at = (int64_t)info.offset;
            snprintf(file->source, sizeof file->source, "npy f32 %s", mps_shape_str(&info.shape, a, sizeof a));
            if (items == 1 && !dst && !(dst = *own = malloc(info.bytes + 1)))
                st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading %zu bytes", info.bytes);
            else if (items == 1) /* read now, beside the other files of its window */
                st = mps_file_pread(fd, dst, info.bytes, file->data_at, MPS_ERR_INPUT, err);
        }
    }
    close(fd);
    if (st) {
        file->file_items = 0;
        free(*own);
        *own = NULL;
    }
    return st;
}

enum mps_status mps_infer_read_items(const struct mps_infer_file *file, int64_t first, int64_t count, int64_t per,
                                     float *dst, struct mps_error *err)
{
    int fd;
    int64_t size, bytes = (int64_t)sizeof(float) * per;
    enum mps_status st = mps_file_open(file->path, MPS_ERR_INPUT, &fd, &size, err);
    if (st)
        return st;
    if (size != file->data_at + bytes * file->file_items)
        st = mps_fail(err, MPS_ERR_INPUT, "the file changed while it was read (%lld bytes, not %lld)", (long long)size,
                      (long long)(file->data_at + bytes * file->file_items));
    else
        st = mps_file_pread(fd, dst, (size_t)(bytes * count), file->data_at + bytes * first, MPS_ERR_INPUT, err);
    close(fd);
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
        struct mps_npy_info info = {.dtype = grp->in[i].dtype};
        if ((st = mps_npy_require_f32(&info, err)))
            return st;
        r->files[i].items = r->files[i].file_items = 1;
        r->files[i].ends = true;
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
