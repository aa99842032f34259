#include "npy.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"

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

enum mps_status mps_npy_parse(const void *buf, size_t len, struct mps_tensor *t, struct mps_error *err)
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
    if (hlen > len - start || hlen > 65536)
        return mps_fail(err, MPS_ERR_INPUT, ".npy header is truncated");
    char hdr[65537];
    memcpy(hdr, b + start, hlen);
    hdr[hlen] = '\0';
    const char *descr = mps_npy_field(hdr, "descr"), *order = mps_npy_field(hdr, "fortran_order"),
               *shape = mps_npy_field(hdr, "shape");
    if (!descr || !order || !shape || *shape != '(')
        return mps_fail(err, MPS_ERR_INPUT, ".npy header has no descr, fortran_order or shape");
    if (strncmp(descr, "'<f4'", 5) != 0 && strncmp(descr, "\"<f4\"", 5) != 0) {
        char d[16];
        snprintf(d, sizeof d, "%.*s", (int)strcspn(descr, ",}"), descr);
        return mps_fail(err, MPS_ERR_INPUT, ".npy dtype is %s; mpsrun reads float32 ('<f4')", d);
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
    size_t bytes = (size_t)n * 4, have = len - start - hlen;
    if (have != bytes)
        return mps_fail(err, MPS_ERR_INPUT, ".npy data holds %zu bytes, its shape needs %zu", have, bytes);
    void *data = malloc(bytes ? bytes : 1);
    if (!data)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    memcpy(data, b + start + hlen, bytes);
    *t = mps_tensor_make(MPS_F32, &s, data);
    return MPS_OK;
}

enum mps_status mps_npy_read(const char *path, struct mps_tensor *t, struct mps_error *err)
{
    unsigned char *buf;
    size_t len;
    enum mps_status st = mps_file_read(path, (size_t)1 << 32, MPS_ERR_INPUT, &buf, &len, err);
    if (st)
        return st;
    st = mps_npy_parse(buf, len, t, err);
    free(buf);
    return st;
}

/* The header of a version 1.0 .npy file of dtype and shape into hdr (at
   least min bytes, padded with spaces: the data starts at a multiple of 64);
   returns its length. */
static size_t mps_npy_header(enum mps_dtype dtype, const struct mps_shape *s, size_t min, char *hdr)
{
    static const char *const descr[MPS_DTYPE_COUNT] = {
        [MPS_F32] = "<f4", [MPS_F16] = "<f2", [MPS_I64] = "<i8", [MPS_I32] = "<i4",
        [MPS_U8] = "|u1",  [MPS_BOOL] = "|b1", [MPS_F64] = "<f8",
    };
    char shape[256] = "";
    size_t n = 0;
    for (int i = 0; i < s->ndim; i++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%lld,%s", (long long)s->dim[i], i + 1 < s->ndim ? " " : "");
    if (s->ndim > 1)
        shape[strlen(shape) - 1] = '\0'; /* "(2, 3)" but "(5,)" */
    int h = snprintf(hdr + 10, 400, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr[dtype], shape);
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

enum mps_status mps_npy_write(const char *path, const struct mps_tensor *t, struct mps_error *err)
{
    char hdr[512];
    size_t total = mps_npy_header(t->dtype, &t->shape, 0, hdr);
    FILE *f = fopen(path, "wb");
    if (!f)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
    size_t bytes = mps_tensor_bytes(t);
    bool ok = fwrite(hdr, 1, total, f) == total && (bytes == 0 || fwrite(t->data, 1, bytes, f) == bytes);
    if (fclose(f) != 0 || !ok)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
    return MPS_OK;
}

struct mps_npy_stream {
    FILE *f;
    const char *path;
    enum mps_dtype dtype;
    struct mps_shape shape; /* dim[0]: the items written so far */
    size_t header;          /* bytes, room for any item count */
};

enum mps_status mps_npy_stream_open(const char *path, enum mps_dtype dtype, const struct mps_shape *item,
                                    struct mps_npy_stream **out, struct mps_error *err)
{
    struct mps_npy_stream *s = calloc(1, sizeof *s);
    if (!s)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    *s = (struct mps_npy_stream){.path = path, .dtype = dtype, .shape = {item->ndim + 1, {INT64_MAX}}};
    memcpy(s->shape.dim + 1, item->dim, sizeof(int64_t) * (size_t)item->ndim);
    char hdr[512];
    s->header = mps_npy_header(dtype, &s->shape, 0, hdr); /* with the widest count, rewritten at the end */
    s->shape.dim[0] = 0;
    struct stat st = {0};
    if (!(s->f = fopen(path, "wb"))) {
        free(s);
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
    }
    if (fstat(fileno(s->f), &st) != 0 || !S_ISREG(st.st_mode) || fwrite(hdr, 1, s->header, s->f) != s->header) {
        fclose(s->f);
        free(s);
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write%s", path,
                        S_ISREG(st.st_mode) ? "" : ": not a regular file (the item count is written last)");
    }
    *out = s;
    return MPS_OK;
}

enum mps_status mps_npy_stream_append(struct mps_npy_stream *s, const void *data, int64_t items,
                                      struct mps_error *err)
{
    struct mps_shape item = s->shape;
    item.dim[0] = items;
    size_t bytes = mps_dtype_size(s->dtype) * (size_t)mps_shape_numel(&item);
    if (bytes && fwrite(data, 1, bytes, s->f) != bytes)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", s->path, strerror(errno));
    s->shape.dim[0] += items;
    return MPS_OK;
}

enum mps_status mps_npy_stream_close(struct mps_npy_stream *s, struct mps_error *err)
{
    if (!s)
        return MPS_OK;
    char hdr[512];
    mps_npy_header(s->dtype, &s->shape, s->header, hdr);
    bool ok = fseek(s->f, 0, SEEK_SET) == 0 && fwrite(hdr, 1, s->header, s->f) == s->header;
    ok = fclose(s->f) == 0 && ok;
    enum mps_status st = ok ? MPS_OK : mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", s->path, strerror(errno));
    free(s);
    return st;
}
