#include "file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Checks that the open fd is a regular file and gives its size; closes it if not. */
static enum mps_status mps_file_regular(int fd, enum mps_status bad, int64_t *size, struct mps_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return mps_fail(err, bad, "not a regular file");
    }
    *size = (int64_t)st.st_size;
    return MPS_OK;
}

enum mps_status mps_file_pread(int fd, void *dst, size_t bytes, int64_t offset, enum mps_status bad,
                               struct mps_error *err)
{
    for (size_t done = 0; done < bytes;) {
        ssize_t n = pread(fd, (char *)dst + done, bytes - done, (off_t)(offset + (int64_t)done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return mps_fail(err, bad, n < 0 ? "cannot read: %s" : "cannot read: the file ended early%s",
                            n < 0 ? strerror(errno) : "");
        done += (size_t)n;
    }
    return MPS_OK;
}

enum mps_status mps_file_open(const char *path, enum mps_status bad, int *fd, int64_t *size, struct mps_error *err)
{
    /* O_NONBLOCK: a FIFO is refused as not a regular file instead of waiting for a writer */
    *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0)
        return mps_fail(err, bad, "cannot open: %s", strerror(errno));
    enum mps_status st = mps_file_regular(*fd, bad, size, err);
    if (st)
        *fd = -1;
    return st;
}

enum mps_status mps_file_read(const char *path, size_t max, enum mps_status bad, unsigned char **buf, size_t *len,
                              struct mps_error *err)
{
    int64_t size;
    int fd;
    enum mps_status st = mps_file_open(path, bad, &fd, &size, err);
    if (st)
        return st;
    if ((uint64_t)size > max) {
        close(fd);
        return mps_fail(err, bad, "file of %lld bytes is larger than mpsrun reads (%zu MiB)", (long long)size,
                        max >> 20);
    }
    *len = (size_t)size;
    *buf = malloc(*len + 1);
    if (!*buf) {
        close(fd);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading %zu bytes", *len);
    }
    st = mps_file_pread(fd, *buf, *len, 0, bad, err);
    close(fd);
    if (st) {
        free(*buf);
        *buf = NULL;
        return st;
    }
    (*buf)[*len] = 0;
    return MPS_OK;
}

enum mps_status mps_file_open_inside(const char *dir, const char *rel, enum mps_status bad, int *fd, int64_t *size,
                                     struct mps_error *err)
{
    *fd = -1;
    if (!rel[0] || rel[0] == '/')
        return mps_fail(err, bad, "'%s' is not a relative path", rel);
    int at = open(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (at < 0)
        return mps_fail(err, bad, "cannot open the folder '%s': %s", dir, strerror(errno));
    enum mps_status st = MPS_OK;
    for (const char *p = rel;;) {
        size_t n = strcspn(p, "/");
        bool last = p[n] == '\0';
        int upto = (int)(p - rel) + (int)n; /* rel up to this component */
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        p += n + !last;
        if (n >= sizeof name) {
            st = mps_fail(err, bad, "'%s': a name in it is too long", rel);
            break;
        }
        if (n == 0 || !strcmp(name, ".")) { /* "a//b", "./a", "a/" */
            if (last)
                st = mps_fail(err, bad, "'%s' names a folder, not a file", rel);
            if (last)
                break;
            continue;
        }
        if (!strcmp(name, "..")) {
            st = mps_fail(err, bad, "'%s' leaves the folder ('..')", rel);
            break;
        }
        int next = openat(at, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW | (last ? 0 : O_DIRECTORY));
        struct stat link;
        if (next < 0) {
            int e = errno; /* O_NOFOLLOW refuses a link with ELOOP (EMLINK on FreeBSD, ENOTDIR with O_DIRECTORY) */
            if (fstatat(at, name, &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode))
                st = mps_fail(err, bad, "'%.*s' is a symbolic link: only files inside the folder, reached without "
                              "links, are read", upto, rel);
            else
                st = mps_fail(err, bad, "'%.*s': cannot open: %s", upto, rel, strerror(e));
            break;
        }
        close(at);
        at = next;
        if (last)
            break;
    }
    if (st) {
        close(at);
        return st;
    }
    if ((st = mps_file_regular(at, bad, size, err)))
        return mps_fail(err, bad, "'%s' is not a regular file", rel);
    *fd = at;
    return MPS_OK;
}
