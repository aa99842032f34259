#include "npy.h"

#include <errno.h>
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

enum mps_status mps_npy_write(const char *path, const struct mps_tensor *t, struct mps_error *err)
{
    static const char *const descr[MPS_DTYPE_COUNT] = {
        [MPS_F32] = "<f4", [MPS_F16] = "<f2", [MPS_I64] = "<i8", [MPS_I32] = "<i4",
        [MPS_U8] = "|u1",  [MPS_BOOL] = "|b1", [MPS_F64] = "<f8",
    };
    char shape[256] = "", hdr[512];
    size_t n = 0;
    for (int i = 0; i < t->shape.ndim; i++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, "%lld,%s", (long long)t->shape.dim[i],
                              i + 1 < t->shape.ndim ? " " : "");
    if (t->shape.ndim > 1)
        shape[strlen(shape) - 1] = '\0'; /* "(2, 3)" but "(5,)" */
    int h = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr[t->dtype],
                     shape);
    /* pad with spaces so that the data starts at a multiple of 64; end with '\n' */
    size_t total = (10 + (size_t)h + 1 + 63) / 64 * 64, hlen = total - 10;
    memset(hdr + h, ' ', hlen - (size_t)h - 1);
    hdr[hlen - 1] = '\n';
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    FILE *f = fopen(path, "wb");
    if (!f)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
    size_t bytes = mps_tensor_bytes(t);
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, hlen, f) == hlen &&
              (bytes == 0 || fwrite(t->data, 1, bytes, f) == bytes);
    if (fclose(f) != 0 || !ok)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", path, strerror(errno));
    return MPS_OK;
}
