/* npz.c: NumPy .npz bundles (npz.h): the zip's central directory read
   first, each entry's local header and data after it, stored or deflated. */
#include "npz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"
#include "npy.h"
#include "outfile.h"

#define MPS_NPZ_MAX_ENTRIES 4096
#define MPS_NPZ_MAX_RATIO 1032                /* deflate at best: a 258-byte match in about 2 bits (RFC 1951) */
#define MPS_NPZ_MAX_BYTES ((uint64_t)1 << 32) /* an entry's data, either way: a zip without zip64 */

struct mps_npz_entry {
    char name[256]; /* without .npy */
    uint16_t method; /* 0 stored, 8 deflated */
    uint32_t crc, packed, size;
    uint64_t local; /* the local header's offset */
};

struct mps_npz {
    int fd;
    int64_t len;
    const char *path;
    struct mps_npz_entry *e;
    int n;
};

static uint16_t mps_npz_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t mps_npz_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int mps_npz_is_zip(const void *buf, size_t len)
{
    return len >= 4 && !memcmp(buf, "PK\3\4", 4);
}

/* The end-of-central-directory record: the last 22 bytes, or up to 64 KiB earlier past a comment. */
static enum mps_status mps_npz_end(struct mps_npz *z, uint64_t *cd, uint32_t *cd_size, int *n, struct mps_error *err)
{
    size_t tail = z->len < 65557 ? (size_t)z->len : 65557;
    unsigned char *b = malloc(tail + 1);
    if (!b)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    enum mps_status st = mps_file_pread(z->fd, b, tail, z->len - (int64_t)tail, MPS_ERR_INPUT, err);
    int64_t at = -1;
    for (int64_t i = (int64_t)tail - 22; !st && i >= 0 && at < 0; i--)
        if (mps_npz_u32(b + i) == 0x06054b50 && (size_t)i + 22 + mps_npz_u16(b + i + 20) == tail)
            at = i;
    if (!st && at < 0)
        st = mps_fail(err, MPS_ERR_INPUT, ".npz: no zip directory at its end (cut short, or not a zip)");
    if (!st) {
        *n = mps_npz_u16(b + at + 10);
        *cd_size = mps_npz_u32(b + at + 12);
        *cd = mps_npz_u32(b + at + 16);
        if (*n == 0xffff || *cd == 0xffffffffu || *cd_size == 0xffffffffu)
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: a zip64 bundle (over 4 GiB or 65,535 arrays) is not read");
        else if (*cd + *cd_size > (uint64_t)(z->len - (int64_t)tail + at))
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: its zip directory lies outside the file");
    }
    free(b);
    return st;
}

/* The central directory's entries into z->e. */
static enum mps_status mps_npz_directory(struct mps_npz *z, uint64_t cd, uint32_t size, int n, struct mps_error *err)
{
    if (n > MPS_NPZ_MAX_ENTRIES)
        return mps_fail(err, MPS_ERR_INPUT, ".npz: %d arrays (mpsrun reads up to %d)", n, MPS_NPZ_MAX_ENTRIES);
    unsigned char *b = malloc((size_t)size + 1);
    z->e = calloc((size_t)n + 1, sizeof *z->e);
    if (!b || !z->e) {
        free(b);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    enum mps_status st = mps_file_pread(z->fd, b, size, (int64_t)cd, MPS_ERR_INPUT, err);
    for (uint32_t at = 0; !st && z->n < n;) {
        if (at + 46 > size || mps_npz_u32(b + at) != 0x02014b50) {
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: its zip directory is cut short or broken");
            break;
        }
        struct mps_npz_entry *e = &z->e[z->n];
        uint16_t flags = mps_npz_u16(b + at + 8), name_len = mps_npz_u16(b + at + 28);
        uint32_t next = at + 46 + name_len + mps_npz_u16(b + at + 30) + mps_npz_u16(b + at + 32);
        e->method = mps_npz_u16(b + at + 10);
        e->crc = mps_npz_u32(b + at + 16);
        e->packed = mps_npz_u32(b + at + 20);
        e->size = mps_npz_u32(b + at + 24);
        e->local = mps_npz_u32(b + at + 42);
        if (next > size || name_len < 5 || (size_t)(name_len - 4) >= sizeof e->name ||
            memcmp(b + at + 46 + name_len - 4, ".npy", 4) != 0) {
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: entry %d is not a .npy file (or its name is too long)", z->n);
            break;
        }
        memcpy(e->name, b + at + 46, name_len - 4u);
        e->name[name_len - 4] = '\0';
        if (strlen(e->name) != name_len - 4u)
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: entry %d's name holds a NUL byte", z->n);
        else if (flags & 1)
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: array '%s' is encrypted", e->name);
        else if (e->method != 0 && e->method != 8)
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: array '%s' is compressed by method %u (stored and deflated "
                          "are read)", e->name, e->method);
        else if (e->method == 0 && e->packed != e->size)
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: array '%s' is stored, but its sizes differ", e->name);
        else if (e->method == 8 && (uint64_t)e->size > (uint64_t)e->packed * MPS_NPZ_MAX_RATIO + 1024)
            /* found by fuzz_npz: 92 bytes that said 4 GiB were allocated before inflating */
            st = mps_fail(err, MPS_ERR_INPUT,
                          ".npz: array '%s' says %u bytes from %u deflated, more than deflate "
                          "can make of them",
                          e->name, e->size, e->packed);
        else if (e->local + 30 + (uint64_t)e->packed > (uint64_t)z->len)
            st = mps_fail(err, MPS_ERR_INPUT, ".npz: array '%s' lies past the end of the file", e->name);
        for (int k = 0; !st && k < z->n; k++)
            if (!strcmp(z->e[k].name, e->name))
                st = mps_fail(err, MPS_ERR_INPUT, ".npz: two arrays are named '%s'", e->name);
        z->n += !st;
        at = next;
    }
    free(b);
    return st;
}

enum mps_status mps_npz_open(const char *path, struct mps_npz **out, struct mps_error *err)
{
    struct mps_npz *z = calloc(1, sizeof *z);
    *out = NULL;
    if (!z)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    z->path = path;
    enum mps_status st = mps_file_open(path, MPS_ERR_INPUT, &z->fd, &z->len, err);
    uint64_t cd = 0;
    uint32_t cd_size = 0;
    int n = 0;
    if (st)
        z->fd = -1;
    unsigned char head[4];
    if (!st && (z->len < 4 || mps_file_pread(z->fd, head, 4, 0, MPS_ERR_INPUT, err) || !mps_npz_is_zip(head, 4))) {
        mps_npz_close(z); /* not a bundle: the caller reads it as something else */
        return MPS_OK;
    }
    if (!st && z->len < 22)
        st = mps_fail(err, MPS_ERR_INPUT, ".npz: %lld bytes are no zip", (long long)z->len);
    if (!st && !(st = mps_npz_end(z, &cd, &cd_size, &n, err)))
        st = mps_npz_directory(z, cd, cd_size, n, err);
    if (st) {
        mps_npz_close(z);
        return st;
    }
    *out = z;
    return MPS_OK;
}

int mps_npz_count(const struct mps_npz *z)
{
    return z->n;
}

const char *mps_npz_name(const struct mps_npz *z, int i)
{
    return z->e[i].name;
}

int mps_npz_find(const struct mps_npz *z, const char *name)
{
    for (int i = 0; i < z->n; i++)
        if (!strcmp(z->e[i].name, name))
            return i;
    return -1;
}

/* Inflates packed[n] into out[size] exactly. */
static bool mps_npz_inflate(const unsigned char *packed, uint32_t n, unsigned char *out, uint32_t size)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -MAX_WBITS) != Z_OK) /* raw deflate: a zip's entries carry no zlib header */
        return false;
    s.next_in = (unsigned char *)packed;
    s.avail_in = n;
    s.next_out = out;
    s.avail_out = size;
    int r = inflate(&s, Z_FINISH);
    bool ok = r == Z_STREAM_END && s.avail_out == 0;
    inflateEnd(&s);
    return ok;
}

enum mps_status mps_npz_read(struct mps_npz *z, int i, struct mps_tensor *t, struct mps_error *err)
{
    const struct mps_npz_entry *e = &z->e[i];
    unsigned char head[30];
    enum mps_status st = mps_file_pread(z->fd, head, sizeof head, (int64_t)e->local, MPS_ERR_INPUT, err);
    if (st)
        return st;
    uint64_t data = e->local + 30 + mps_npz_u16(head + 26) + mps_npz_u16(head + 28);
    if (mps_npz_u32(head) != 0x04034b50 || data + e->packed > (uint64_t)z->len)
        return mps_fail(err, MPS_ERR_INPUT, ".npz: array '%s': its zip entry is broken", e->name);
    unsigned char *packed = malloc((size_t)e->packed + 1), *bytes = e->method ? malloc((size_t)e->size + 1) : packed;
    if (!packed || !bytes) {
        free(packed);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading array '%s' (%u bytes)", e->name, e->size);
    }
    st = mps_file_pread(z->fd, packed, e->packed, (int64_t)data, MPS_ERR_INPUT, err);
    if (!st && e->method && !mps_npz_inflate(packed, e->packed, bytes, e->size))
        st = mps_fail(err, MPS_ERR_INPUT, ".npz: array '%s' does not inflate to its %u bytes", e->name, e->size);
    if (!st && (uint32_t)crc32(0, bytes, e->size) != e->crc)
        st = mps_fail(err, MPS_ERR_INPUT, ".npz: array '%s' fails its CRC", e->name);
    if (!st && (st = mps_npy_parse(bytes, e->size, t, err))) {
        char why[sizeof err->msg];
        memcpy(why, err->msg, sizeof why);
        mps_fail(err, st, ".npz: array '%s': %s", e->name, why);
    }
    if (bytes != packed)
        free(bytes);
    free(packed);
    return st;
}

void mps_npz_close(struct mps_npz *z)
{
    if (!z)
        return;
    if (z->fd >= 0)
        close(z->fd);
    free(z->e);
    free(z);
}

static void mps_npz_put16(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void mps_npz_put32(unsigned char *p, uint32_t v)
{
    mps_npz_put16(p, v & 0xffff);
    mps_npz_put16(p + 2, v >> 16);
}

enum mps_status mps_npz_write(const char *path, int n, const char *const *names, const struct mps_tensor *t,
                              struct mps_error *err)
{
    struct mps_out out;
    enum mps_status st = mps_out_open(path, &out, err);
    if (st)
        return st;
    unsigned char *cd = malloc((size_t)n * (46 + 260) + 1);
    uint32_t cd_len = 0, at = 0;
    bool ok = cd != NULL;
    for (int i = 0; ok && i < n; i++) {
        char hdr[512], name[260];
        size_t h = mps_npy_header_bytes(t[i].dtype, &t[i].shape, hdr), bytes = mps_tensor_bytes(&t[i]);
        int name_len = snprintf(name, sizeof name, "%s.npy", names[i]);
        if (name_len < 0 || (size_t)name_len >= sizeof name || (uint64_t)h + bytes + at >= MPS_NPZ_MAX_BYTES) {
            st = mps_fail(err, MPS_ERR_RUNTIME, "%s: output '%s' does not fit a zip without zip64 (4 GiB)", path,
                          names[i]);
            ok = false;
            break;
        }
        uint32_t crc = (uint32_t)crc32(crc32(0, (const unsigned char *)hdr, (uInt)h), t[i].data, (uInt)bytes),
                 size = (uint32_t)(h + bytes);
        unsigned char local[30] = {'P', 'K', 3, 4, 20, 0};
        mps_npz_put32(local + 14, crc);
        mps_npz_put32(local + 18, size);
        mps_npz_put32(local + 22, size);
        mps_npz_put16(local + 26, (uint32_t)name_len);
        unsigned char *c = cd + cd_len;
        memset(c, 0, 46);
        memcpy(c, "PK\1\2", 4);
        mps_npz_put16(c + 4, 20);
        mps_npz_put16(c + 6, 20);
        memcpy(c + 16, local + 14, 12); /* crc and both sizes */
        mps_npz_put16(c + 28, (uint32_t)name_len);
        mps_npz_put32(c + 42, at);
        memcpy(c + 46, name, (size_t)name_len);
        cd_len += 46 + (uint32_t)name_len;
        ok = fwrite(local, 1, 30, out.f) == 30 && fwrite(name, 1, (size_t)name_len, out.f) == (size_t)name_len &&
             fwrite(hdr, 1, h, out.f) == h && (!bytes || fwrite(t[i].data, 1, bytes, out.f) == bytes);
        at += 30 + (uint32_t)name_len + size;
    }
    unsigned char end[22] = {'P', 'K', 5, 6};
    mps_npz_put16(end + 8, (uint32_t)n);
    mps_npz_put16(end + 10, (uint32_t)n);
    mps_npz_put32(end + 12, cd_len);
    mps_npz_put32(end + 16, at);
    ok = ok && fwrite(cd, 1, cd_len, out.f) == cd_len && fwrite(end, 1, 22, out.f) == 22;
    free(cd);
    if (!ok) {
        mps_out_abort(&out);
        return st ? st : mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write", path);
    }
    return mps_out_commit(&out, err);
}
