#include "npy.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "outfile.h"

/* The value of 'key' in the header dict: points just after "'key':" and blanks. */
static const char *mps_npy_field(const char *hdr, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", key);
    const char *p = strstr(hdr, quoted);
    if (!p) {
        snprintf(quoted, sizeof quoted, "\"%s\"", key);
        p = strstr(hdr, quoted);
    }
    if (!p)
        return NULL;
    p += strlen(quoted);
    while (*p == ' ')
        p++;
    if (*p++ != ':')
        return NULL;
    while (*p == ' ')
        p++;
    return p;
}

/* numpy's descr of each dtype (little-endian, as the machines mpsrun runs
   on); bf16 has none: numpy has no bfloat16 (a model's bf16 inputs and
   outputs are f32 arrays, model.h). */
static const char *const mps_npy_descr[MPS_DTYPE_COUNT] = {
    [MPS_F32] = "<f4", [MPS_F16] = "<f2", [MPS_F64] = "<f8", [MPS_I64] = "<i8", [MPS_I32] = "<i4", [MPS_I16] = "<i2",
    [MPS_I8] = "|i1",  [MPS_U64] = "<u8", [MPS_U32] = "<u4", [MPS_U16] = "<u2", [MPS_U8] = "|u1",  [MPS_BOOL] = "|b1",
};

/* The dtype a descr names: '<f4', '|u1', ... (little-endian or either, as numpy writes them here). */
static bool mps_npy_dtype(const char *descr, enum mps_dtype *dt)
{
    char q = descr[0];
    if (q != '\'' && q != '"')
        return false;
    for (int i = 0; i < MPS_DTYPE_COUNT; i++)
        if (mps_npy_descr[i] && !strncmp(descr + 1, mps_npy_descr[i], 3) && descr[4] == q) {
            *dt = (enum mps_dtype)i;
            return true;
        }
    return false;
}

enum mps_status mps_npy_header(const void *buf, size_t len, struct mps_npy_info *info, struct mps_error *err)
{
    const unsigned char *b = buf;
    if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return mps_fail(err, MPS_ERR_INPUT, "not a .npy file (no \\x93NUMPY magic)");
    unsigned major = b[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        start = 10;
    } else if ((major == 2 || major == 3) && len >= 12) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        start = 12;
    } else {
        return mps_fail(err, MPS_ERR_INPUT, ".npy format version %u is not supported", major);
    }
    if (hlen > len - start || hlen > MPS_NPY_MAX_HEADER)
        return mps_fail(err, MPS_ERR_INPUT, ".npy header is truncated");
    char hdr[MPS_NPY_MAX_HEADER + 1];
    memcpy(hdr, b + start, hlen);
    hdr[hlen] = '\0';
    const char *descr = mps_npy_field(hdr, "descr"), *order = mps_npy_field(hdr, "fortran_order"),
               *shape = mps_npy_field(hdr, "shape");
    if (!descr || !order || !shape || *shape != '(')
        return mps_fail(err, MPS_ERR_INPUT, ".npy header has no descr, fortran_order or shape");
    if (!mps_npy_dtype(descr, &info->dtype)) {
        char d[16];
        snprintf(d, sizeof d, "%.*s", (int)strcspn(descr, ",}"), descr);
        return mps_fail(err, MPS_ERR_INPUT,
                        ".npy dtype is %s, which mpsrun does not read (float32 '<f4', float16, "
                        "float64, int64, int32, uint8, bool)",
                        d);
    }
    if (strncmp(order, "False", 5) != 0)
        return mps_fail(err, MPS_ERR_INPUT, ".npy array is in Fortran order; save it in C order");
    struct mps_shape s = {0, {0}};
    const char *p = shape + 1;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        char *end;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (end == p || errno || d < 0 || s.ndim == MPS_MAX_DIMS)
            return mps_fail(err, MPS_ERR_INPUT, ".npy shape is not a tuple of at most %d sizes", MPS_MAX_DIMS);
        s.dim[s.ndim++] = d;
        p = end;
    }
    int64_t n = mps_shape_numel(&s);
    if (n < 0)
        return mps_fail(err, MPS_ERR_INPUT, ".npy shape is too large");
    info->shape = s;
    info->offset = start + hlen;
    info->bytes = (size_t)n * mps_dtype_size(info->dtype);
    return MPS_OK;
}

/* The data must be exactly as long as the header says. */
static enum mps_status mps_npy_length(const struct mps_npy_info *info, uint64_t file_len, struct mps_error *err)
{
    if (file_len - info->offset != info->bytes)
        return mps_fail(err, MPS_ERR_INPUT, ".npy data holds %llu bytes, its shape needs %zu",
                        (unsigned long long)(file_len - info->offset), info->bytes);
    return MPS_OK;
}

enum mps_status mps_npy_require_f32(const struct mps_npy_info *info, struct mps_error *err)
{
    if (info->dtype == MPS_F32)
        return MPS_OK;
    return mps_fail(err, MPS_ERR_INPUT, ".npy dtype is '%s' (%s); mpsrun reads float32 ('<f4') here",
                    mps_npy_descr[info->dtype], mps_dtype_name(info->dtype));
}

enum mps_status mps_npy_parse(const void *buf, size_t len, struct mps_tensor *t, struct mps_error *err)
{
    struct mps_npy_info info;
    enum mps_status st = mps_npy_header(buf, len, &info, err);
    if (st || (st = mps_npy_length(&info, len, err)))
        return st;
    void *data = malloc(info.bytes ? info.bytes : 1);
    if (!data)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    memcpy(data, (const unsigned char *)buf + info.offset, info.bytes);
    *t = mps_tensor_make(info.dtype, &info.shape, data);
    return MPS_OK;
}

enum mps_status mps_npy_header_fd(int fd, int64_t size, struct mps_npy_info *info, struct mps_error *err)
{
    unsigned char head[12], *hdr = NULL;
    size_t got = size < 12 ? (size_t)size : 12, need = 0; /* the header's bytes, when they can be told */
    enum mps_status st = mps_file_pread(fd, head, got, 0, MPS_ERR_INPUT, err);
    if (!st && got >= 10 && !memcmp(head, "\x93NUMPY", 6))
        need = head[6] == 1 ? 10 + ((size_t)head[8] | (size_t)head[9] << 8)
               : got == 12
                   ? 12 + ((size_t)head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24)
                   : 0;
    if (st)
        ;
    else if (need <= got || need > (uint64_t)size || need > MPS_NPY_MAX_HEADER + 12)
        st = mps_npy_header(head, got, info, err); /* says what is wrong */
    else if (!(hdr = malloc(need)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    else if (!(st = mps_file_pread(fd, hdr, need, 0, MPS_ERR_INPUT, err)))
        st = mps_npy_header(hdr, need, info, err);
    free(hdr);
    return st ? st : mps_npy_length(info, (uint64_t)size, err);
}

enum mps_status mps_npy_open(const char *path, struct mps_npy_info *info, int *fd, struct mps_error *err)
{
    int64_t size;
    enum mps_status st = mps_file_open(path, MPS_ERR_INPUT, fd, &size, err);
    if (!st && (st = mps_npy_header_fd(*fd, size, info, err))) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

enum mps_status mps_npy_read(const char *path, struct mps_tensor *t, struct mps_error *err)
{
    struct mps_npy_info info;
    int fd;
    enum mps_status st = mps_npy_open(path, &info, &fd, err);
    if (st)
        return st;
    void *data = malloc(info.bytes ? info.bytes : 1);
    if (!data)
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading %zu bytes", info.bytes);
    else
        st = mps_file_pread(fd, data, info.bytes, (int64_t)info.offset, MPS_ERR_INPUT, err);
    close(fd);
    if (st) {
        free(data);
        return st;
    }
    *t = mps_tensor_make(info.dtype, &info.shape, data);
    return MPS_OK;
}

/* The header of a version 1.0 .npy file of dtype and shape into hdr (at
   least min bytes, padded with spaces: the data starts at a multiple of 64);
   returns its length. */
static size_t mps_npy_header_text(enum mps_dtype dtype, const struct mps_shape *s, size_t min, char *hdr)
{
    char shape[256] = "";
    size_t n = 0;
    for (int i = 0; i < s->ndim; i++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%lld,%s", (long long)s->dim[i], i + 1 < s->ndim ? " " : "");
    if (s->ndim > 1)
        shape[strlen(shape) - 1] = '\0'; /* "(2, 3)" but "(5,)" */
    int h = snprintf(hdr + 10, 400, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", mps_npy_descr[dtype],
                     shape);
    size_t total = (10 + (size_t)h + 1 + 63) / 64 * 64;
    while (total < min)
        total += 64;
    size_t hlen = total - 10;
    memset(hdr + 10 + h, ' ', hlen - (size_t)h - 1);
    hdr[total - 1] = '\n';
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)(hlen & 0xff);
    hdr[9] = (char)(hlen >> 8);
    return total;
}

size_t mps_npy_header_bytes(enum mps_dtype dtype, const struct mps_shape *s, char *hdr)
{
    return mps_npy_header_text(dtype, s, 0, hdr);
}

enum mps_status mps_npy_write(const char *path, const struct mps_tensor *t, struct mps_error *err)
{
    char hdr[512];
    size_t h = mps_npy_header_text(t->dtype, &t->shape, 0, hdr), bytes = mps_tensor_bytes(t);
    struct mps_out out;
    enum mps_status st = mps_out_open(path, &out, err);
    if (st)
        return st;
    if (fwrite(hdr, 1, h, out.f) != h || (bytes && fwrite(t->data, 1, bytes, out.f) != bytes)) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
        mps_out_abort(&out);
        return st;
    }
    return mps_out_commit(&out, err);
}

struct mps_npy_stream {
    struct mps_out out;
    enum mps_dtype dtype;
    struct mps_shape shape; /* dim[0]: the items written so far */
    size_t header;          /* bytes, room for any item count */
    void *fill;             /* one item of NaN (zeros for integers), for mps_npy_stream_fill */
};

enum mps_status mps_npy_stream_open(const char *path, enum mps_dtype dtype, const struct mps_shape *item,
                                    struct mps_npy_stream **out, struct mps_error *err)
{
    struct mps_npy_stream *s = calloc(1, sizeof *s);
    if (!s)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    *s = (struct mps_npy_stream){.dtype = dtype, .shape = {item->ndim + 1, {INT64_MAX}}};
    memcpy(s->shape.dim + 1, item->dim, sizeof(int64_t) * (size_t)item->ndim);
    char hdr[512];
    s->header = mps_npy_header_text(dtype, &s->shape, 0, hdr); /* with the widest count, rewritten at the end */
    s->shape.dim[0] = 0;
    enum mps_status st = mps_out_open(path, &s->out, err);
    if (!st && fwrite(hdr, 1, s->header, s->out.f) != s->header) {
        mps_out_abort(&s->out);
        st = mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
    }
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return MPS_OK;
}

static size_t mps_npy_stream_bytes(const struct mps_npy_stream *s, int64_t items)
{
    struct mps_shape item = s->shape;
    item.dim[0] = items;
    return mps_dtype_size(s->dtype) * (size_t)mps_shape_numel(&item);
}

enum mps_status mps_npy_stream_append(struct mps_npy_stream *s, const void *data, int64_t items, struct mps_error *err)
{
    size_t bytes = mps_npy_stream_bytes(s, items);
    if (bytes && fwrite(data, 1, bytes, s->out.f) != bytes)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", s->out.path, strerror(errno));
    s->shape.dim[0] += items;
    return MPS_OK;
}

enum mps_status mps_npy_stream_fill(struct mps_npy_stream *s, int64_t items, struct mps_error *err)
{
    size_t per = mps_npy_stream_bytes(s, 1), n = per / mps_dtype_size(s->dtype);
    if (!s->fill) {
        if (!(s->fill = calloc(1, per + 1)))
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        for (size_t i = 0; i < n; i++)
            if (s->dtype == MPS_F32)
                ((float *)s->fill)[i] = NAN;
            else if (s->dtype == MPS_F64)
                ((double *)s->fill)[i] = NAN;
            else if (s->dtype == MPS_F16)
                ((uint16_t *)s->fill)[i] = 0x7e00;
    }
    enum mps_status st = MPS_OK;
    for (int64_t i = 0; i < items && !st; i++)
        st = mps_npy_stream_append(s, s->fill, 1, err);
    return st;
}

enum mps_status mps_npy_stream_close(struct mps_npy_stream *s, struct mps_error *err)
{
    if (!s)
        return MPS_OK;
    char hdr[512];
    mps_npy_header_text(s->dtype, &s->shape, s->header, hdr);
    enum mps_status st = MPS_OK;
    if (fseek(s->out.f, 0, SEEK_SET) != 0 || fwrite(hdr, 1, s->header, s->out.f) != s->header) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", s->out.path, strerror(errno));
        mps_out_abort(&s->out);
    } else {
        st = mps_out_commit(&s->out, err);
    }
    free(s->fill);
    free(s);
    return st;
}

void mps_npy_stream_abort(struct mps_npy_stream *s)
{
    if (!s)
        return;
    mps_out_abort(&s->out);
    free(s->fill);
    free(s);
}
