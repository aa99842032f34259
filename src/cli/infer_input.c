/* infer_input.c: input files (PNG or .npy) into the items of a model's batch
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
#include "npz.h"

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

/* Reads path for model input i (declared shape decl, a free dim -1; dtype dt):
   a .npy, or from a .npz the array named like the input (or its only one). */
static enum mps_status mps_infer_feed_file(const char *path, const char *input, const struct mps_shape *decl,
                                           enum mps_dtype dt, struct mps_tensor *t, char *source, size_t size,
                                           struct mps_error *err)
{
    struct mps_npz *z = NULL;
    char a[128], b[128];
    int at = -1;
    enum mps_status st = mps_npz_open(path, &z, err);
    if (!st && !z) /* no zip: a .npy */
        st = mps_npy_read(path, t, err);
    if (z) { /* a bundle: the array of the input's name */
        at = mps_npz_find(z, input);
        if (at < 0 && mps_npz_count(z) == 1)
            at = 0;
        st = at < 0 ? mps_fail(err, MPS_ERR_INPUT, ".npz holds no array named '%s'", input)
                    : mps_npz_read(z, at, t, err);
        mps_npz_close(z);
    }
    if (st)
        return st;
    bool fits = t->shape.ndim == decl->ndim;
    for (int d = 0; fits && d < decl->ndim; d++)
        fits = decl->dim[d] < 0 || decl->dim[d] == t->shape.dim[d];
    char conv[32] = "";
    enum mps_dtype given = t->dtype;
    bool floats = (dt == MPS_F32 || dt == MPS_F16 || dt == MPS_BF16) &&
                  (t->dtype == MPS_F16 || t->dtype == MPS_F32 || t->dtype == MPS_F64);
    if (floats && t->dtype != MPS_F32) { /* f32, what the graph computes an f16 input in (model.h) */
        if (t->dtype != dt)              /* numpy's default f64, or an f16 array: converted to the model's type */
            snprintf(conv, sizeof conv, " (to %s)", mps_dtype_name(dt));
        int64_t n = mps_shape_numel(&t->shape);
        float *f = malloc(sizeof(float) * (size_t)(n + 1));
        if (!f)
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        else
            mps_convert_floats(t->dtype, t->data, MPS_F32, f, n);
        free(t->data);
        t->data = f;
        t->dtype = MPS_F32;
    } else if (floats && t->dtype != dt) {
        snprintf(conv, sizeof conv, " (to %s)", mps_dtype_name(dt));
    } else if (t->dtype != dt) {
        st = mps_fail(err, MPS_ERR_INPUT, "input '%s' takes %s, and the array is %s", input, mps_dtype_name(dt),
                      mps_dtype_name(t->dtype));
    }
    if (!st && !fits)
        st = mps_fail(err, MPS_ERR_INPUT, "input '%s' is %s, and the array's shape %s does not fit it", input,
                      mps_infer_dims(decl, a, sizeof a), mps_shape_str(&t->shape, b, sizeof b));
    if (st) {
        free(t->data);
        t->data = NULL;
        return st;
    }
    snprintf(source, size, "%s %s %s%s", at >= 0 ? "npz" : "npy", mps_dtype_name(given),
             mps_shape_str(&t->shape, a, sizeof a), conv);
    return MPS_OK;
}

enum mps_status mps_infer_feed(struct mps_infer_result *r, const char *const *args, int n_args,
                               const char *const *named, int n_named, struct mps_shape *shapes, struct mps_error *err,
                               const char **bad_file)
{
    const char *names[8], *file[8] = {NULL};
    struct mps_shape decl[8];
    struct mps_model_input sym[8];
    enum mps_dtype dtype[8];
    int n = mps_onnx_inputs(r->file, names, decl, sym, dtype, 8);
    char list[512] = "";
    *bad_file = NULL;
    if (n < 0)
        return mps_fail(err, MPS_ERR_MODEL, "the model takes more than 8 inputs, or one without a declared shape");
    for (int i = 0; i < n; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s'", i ? ", " : "", names[i]);
    for (int k = 0; k < n_named; k++) { /* --input NAME=FILE */
        const char *eq = strchr(named[k], '=');
        int i = -1;
        for (int j = 0; eq && j < n && i < 0; j++)
            if (strlen(names[j]) == (size_t)(eq - named[k]) && !strncmp(names[j], named[k], (size_t)(eq - named[k])))
                i = j;
        if (!eq || !eq[1])
            return mps_fail(err, MPS_ERR_USAGE, "--input %s: give NAME=FILE", named[k]);
        if (i < 0)
            return mps_fail(err, MPS_ERR_USAGE, "--input %s: the model has no input '%.*s' (its inputs: %s)", named[k],
                            (int)(eq - named[k]), named[k], list);
        if (file[i])
            return mps_fail(err, MPS_ERR_USAGE, "input '%s' is given twice (%s and %s)", names[i], file[i], eq + 1);
        file[i] = eq + 1;
    }
    for (int k = 0; k < n_args; k++) { /* a bundle gives the inputs it names; a .npy the next input not given */
        struct mps_npz *z = NULL;
        struct mps_error ignored;
        if (mps_npz_open(args[k], &z, &ignored) == MPS_OK && z && mps_npz_count(z) > 0 && n > 1) {
            for (int a = 0; a < mps_npz_count(z); a++) {
                int i = -1;
                for (int j = 0; j < n && i < 0; j++)
                    if (!strcmp(names[j], mps_npz_name(z, a)))
                        i = j;
                enum mps_status st = i < 0     ? mps_fail(err, MPS_ERR_USAGE,
                                                          "%s: array '%s' is no input of the model "
                                                              "(its inputs: %s)",
                                                          args[k], mps_npz_name(z, a), list)
                                     : file[i] ? mps_fail(err, MPS_ERR_USAGE, "input '%s' is given twice (%s and %s)",
                                                          mps_npz_name(z, a), file[i], args[k])
                                               : MPS_OK;
                if (st) {
                    mps_npz_close(z);
                    return st;
                }
                file[i] = args[k];
            }
            mps_npz_close(z);
            continue;
        }
        mps_npz_close(z);
        int i = 0;
        while (i < n && file[i])
            i++;
        if (i == n)
            return mps_fail(err, MPS_ERR_USAGE, "%s: the model takes %d input%s (%s), and each has its file", args[k],
                            n, n == 1 ? "" : "s", list);
        file[i] = args[k];
    }
    for (int i = 0; i < n; i++)
        if (!file[i]) {
            char a[128];
            return mps_fail(err, MPS_ERR_USAGE,
                            "input '%s' (%s %s) is not given: give --input %s=FILE, a file for each input in order "
                            "(%s), or an .npz of them by name",
                            names[i], dtype[i] < MPS_DTYPE_COUNT ? mps_dtype_name(dtype[i]) : "?",
                            mps_infer_dims(&decl[i], a, sizeof a), names[i], list);
        }
    r->files = calloc(1, sizeof *r->files);
    r->groups = calloc(1, sizeof *r->groups);
    if (!r->files || !r->groups)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    r->n_files = 1;
    r->n_groups = 1;
    struct mps_infer_group *grp = &r->groups[0];
    *grp = (struct mps_infer_group){0};
    int64_t batch = 0;
    for (int i = 0; i < n; i++) {
        r->fed[i] = (struct mps_infer_fed){.name = names[i], .path = file[i]};
        *bad_file = file[i];
        if (dtype[i] == MPS_DTYPE_COUNT)
            return mps_fail(err, MPS_ERR_MODEL, "input '%s' has a data type mpsrun does not support", names[i]);
        enum mps_status st = mps_infer_feed_file(file[i], r->fed[i].name, &decl[i], dtype[i], &grp->in[i],
                                                 r->fed[i].source, sizeof r->fed[i].source, err);
        if (st)
            return st;
        r->n_fed++;
        grp->n_in++;
        shapes[i] = grp->in[i].shape;
        if (i == 0) /* the first input's free batch (of items of 1 dim or more): the run's items, each reported */
            batch = shapes[0].ndim >= 2 && sym[0].symbolic[0] ? shapes[0].dim[0] : 0;
        size_t len = strlen(r->fed_label);
        if (!i || strcmp(file[i], file[i - 1]) != 0) /* an .npz of them all is named once */
            snprintf(r->fed_label + len, sizeof r->fed_label - len, "%s%s", len ? " + " : "", file[i]);
    }
    int64_t items = batch > 0 ? batch : 1;
    r->files[0] = (struct mps_infer_file){.path = r->fed_label, .items = items, .file_items = items, .ends = true};
    snprintf(r->files[0].source, sizeof r->files[0].source, "%d input%s", n, n == 1 ? "" : "s");
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
