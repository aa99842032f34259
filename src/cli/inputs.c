/* inputs.c: INPUT arguments into the list of files to run (inputs.h). */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MPS_INPUTS_BLOCK 65536    /* bytes of path text a block holds (a longer path gets one of its own) */
#define MPS_INPUTS_MAX_LINE 65536 /* a longer line of a list is no path (PATH_MAX is 4,096) */
#define MPS_INPUTS_MAX_DEPTH 256

struct mps_inputs_block {
    struct mps_inputs_block *next;
    size_t len, cap;
    char text[];
};

/* Lines of a file descriptor, read as they come. */
struct mps_inputs_reader {
    int fd;
    const char *name; /* in messages: "stdin" */
    char *buf;
    size_t start, len, cap; /* the bytes not yet handed out: buf[start, len) */
    bool eof;
};

/* Room for `need` bytes of text in a block that stays where it is. */
static char *mps_inputs_room(struct mps_inputs *in, size_t need)
{
    struct mps_inputs_block *b = in->blocks;
    if (!b || b->cap - b->len < need) {
        size_t cap = need > MPS_INPUTS_BLOCK ? need : MPS_INPUTS_BLOCK;
        if (!(b = malloc(sizeof *b + cap)))
            return NULL;
        *b = (struct mps_inputs_block){.next = in->blocks, .cap = cap};
        in->blocks = b;
    }
    char *p = b->text + b->len;
    b->len += need;
    return p;
}

/* Adds the path a (or a/b: a folder and a name in it), failed for `why` when it is not NULL. */
static enum mps_status mps_inputs_push(struct mps_inputs *in, const char *a, const char *b, const char *why,
                                       struct mps_error *err)
{
    size_t la = strlen(a), lb = b ? strlen(b) : 0, lw = why ? strlen(why) + 1 : 0;
    if (in->n == in->cap_n) {
        int64_t cap = in->cap_n ? in->cap_n * 2 : 256;
        struct mps_input *item = realloc(in->item, sizeof *item * (size_t)cap);
        if (!item)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing inputs");
        in->item = item;
        in->cap_n = cap;
    }
    char *p = mps_inputs_room(in, la + lb + 2 + lw);
    if (!p)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing inputs");
    memcpy(p, a, la);
    if (b) { /* a folder and a name in it */
        if (la && a[la - 1] != '/')
            p[la++] = '/';
        memcpy(p + la, b, lb);
    }
    p[la + lb] = '\0';
    in->item[in->n] = (struct mps_input){.path = p, .why = why ? memcpy(p + la + lb + 1, why, lw) : NULL};
    in->n++;
    in->total = in->n;
    return MPS_OK;
}

static bool mps_inputs_wanted(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && (!strcasecmp(name + n - 4, ".png") || !strcasecmp(name + n - 4, ".npy"));
}

static int mps_inputs_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir, sorted; an errno when it cannot be listed, -1 when out of memory. */
static int mps_inputs_list(const char *dir, char ***out, size_t *n_out)
{
    DIR *d = opendir(dir);
    *out = NULL;
    *n_out = 0;
    if (!d)
        return errno;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int e = 0;
    for (struct dirent *de; !e && (errno = 0, de = readdir(d));) {
        if (de->d_name[0] == '.')
            continue;
        char **grown = n < cap ? names : realloc(names, sizeof *grown * (cap = cap ? cap * 2 : 64));
        if (!grown || !(grown[n] = strdup(de->d_name)))
            e = -1;
        else
            n++;
        names = grown ? grown : names;
    }
    e = e ? e : errno; /* readdir's own failure */
    closedir(d);
    if (!e && n)
        qsort(names, n, sizeof *names, mps_inputs_cmp);
    *out = names;
    *n_out = n;
    return e;
}

enum mps_status mps_inputs_names(const char *dir, char ***out, size_t *n_out, struct mps_error *err)
{
    int e = mps_inputs_list(dir, out, n_out);
    if (e < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing %s", dir);
    if (e > 0)
        return mps_fail(err, MPS_ERR_INPUT, "%s: cannot read the folder: %s", dir, strerror(e));
    return MPS_OK;
}

void mps_inputs_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The folder dir, its entries in byte order, recursively; one that cannot
   be walked is an entry that failed, in its place. */
static enum mps_status mps_inputs_walk(struct mps_inputs *in, const char *dir, int depth, struct mps_error *err)
{
    char why[160];
    if (depth > MPS_INPUTS_MAX_DEPTH) {
        snprintf(why, sizeof why, "folders nested more than %d deep: not walked", MPS_INPUTS_MAX_DEPTH);
        return mps_inputs_push(in, dir, NULL, why, err);
    }
    char **names;
    size_t n;
    int e = mps_inputs_list(dir, &names, &n);
    if (e < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing %s", dir);
    if (e > 0) {
        snprintf(why, sizeof why, "cannot read the folder: %s", strerror(e));
        mps_inputs_names_free(names, n);
        return mps_inputs_push(in, dir, NULL, why, err);
    }
    enum mps_status st = MPS_OK;
    for (size_t i = 0; !st && i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(len);
        if (!path) {
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing %s", dir);
            break;
        }
        snprintf(path, len, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]);
        struct stat ls, s;
        if (lstat(path, &ls) != 0) /* gone since the listing */
            ;
        else if (S_ISDIR(ls.st_mode))
            st = mps_inputs_walk(in, path, depth + 1, err);
        else if (!(S_ISLNK(ls.st_mode) && stat(path, &s) == 0 && S_ISDIR(s.st_mode)) && mps_inputs_wanted(names[i]))
            st = mps_inputs_push(in, dir, names[i], NULL, err);
        free(path);
    }
    mps_inputs_names_free(names, n);
    return st;
}

/* A path named directly or in a list: a folder is walked, anything else taken as it is. */
static enum mps_status mps_inputs_named(struct mps_inputs *in, const char *path, struct mps_error *err)
{
    struct stat s;
    if (stat(path, &s) == 0 && S_ISDIR(s.st_mode)) {
        in->listed = true;
        return mps_inputs_walk(in, path, 0, err);
    }
    return mps_inputs_push(in, path, NULL, NULL, err); /* a file, or what its decoding will say is wrong */
}

/* The next line of r, without its line break, NUL-terminated: 1 with *line
   and *len set, 0 when none came within wait_ms (-1: wait as long as it
   takes), -1 at the end or on failure (*st). */
static int mps_inputs_line(struct mps_inputs_reader *r, int wait_ms, char **line, size_t *len, enum mps_status *st,
                           struct mps_error *err)
{
    for (;;) {
        char *nl = r->len > r->start ? memchr(r->buf + r->start, '\n', r->len - r->start) : NULL;
        if (nl || (r->eof && r->len > r->start)) {
            size_t end = nl ? (size_t)(nl - r->buf) : r->len;
            *line = r->buf + r->start;
            *len = end - r->start;
            r->buf[end] = '\0'; /* buf has a byte beyond cap for the last line's */
            r->start = nl ? end + 1 : r->len;
            return 1;
        }
        if (r->eof)
            return -1;
        if (r->start) { /* what is left to the front */
            memmove(r->buf, r->buf + r->start, r->len - r->start);
            r->len -= r->start;
            r->start = 0;
        }
        if (r->len == r->cap) {
            if (r->cap >= MPS_INPUTS_MAX_LINE) {
                *st = mps_fail(err, MPS_ERR_INPUT, "%s: a line longer than %d bytes: not a list of paths", r->name,
                               MPS_INPUTS_MAX_LINE);
                return -1;
            }
            size_t cap = r->cap ? r->cap * 2 : 4096;
            char *buf = realloc(r->buf, cap + 1);
            if (!buf) {
                *st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory reading %s", r->name);
                return -1;
            }
            r->buf = buf;
            r->cap = cap;
        }
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        int ready = poll(&p, 1, wait_ms);
        if (ready == 0 || (ready < 0 && errno == EINTR && wait_ms >= 0))
            return 0;
        ssize_t got = ready < 0 ? -1 : read(r->fd, r->buf + r->len, r->cap - r->len);
        if (got < 0 && errno != EINTR && errno != EAGAIN) {
            *st = mps_fail(err, MPS_ERR_INPUT, "%s: cannot read: %s", r->name, strerror(errno));
            return -1;
        }
        if (got == 0)
            r->eof = true;
        r->len += got > 0 ? (size_t)got : 0;
    }
}

/* Reads lines of r until in->n >= want, the end (*end), or a wait of wait_ms for a line. */
static enum mps_status mps_inputs_lines(struct mps_inputs *in, struct mps_inputs_reader *r, int64_t want, int wait_ms,
                                        bool *end, struct mps_error *err)
{
    enum mps_status st = MPS_OK;
    char *line;
    size_t len;
    int got = 1;
    while (!st && in->n < want && (got = mps_inputs_line(r, wait_ms, &line, &len, &st, err)) == 1) {
        if (strlen(line) != len) {
            st = mps_fail(err, MPS_ERR_INPUT, "%s: a line holds a NUL byte: not a list of paths", r->name);
            break;
        }
        while (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len)
            st = mps_inputs_named(in, line, err);
    }
    *end = got < 0;
    return st;
}

static void mps_inputs_reader_free(struct mps_inputs_reader *r)
{
    if (!r)
        return;
    if (r->fd > 2)
        close(r->fd);
    free(r->buf);
    free(r);
}

/* Starts reading the list fd (stdin, or an @FILE opened). */
static enum mps_status mps_inputs_reader_new(int fd, const char *name, struct mps_inputs_reader **out,
                                             struct mps_error *err)
{
    if (!(*out = calloc(1, sizeof **out)))
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    **out = (struct mps_inputs_reader){.fd = fd, .name = name};
    return MPS_OK;
}

/* Reads a whole list: stdin ("-") or an @FILE. */
static enum mps_status mps_inputs_list_file(struct mps_inputs *in, const char *arg, struct mps_error *err)
{
    bool std = !strcmp(arg, "-");
    int fd = std ? 0 : open(arg + 1, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mps_fail(err, MPS_ERR_INPUT, "%s: cannot open the list: %s", arg + 1, strerror(errno));
    struct mps_inputs_reader *r;
    enum mps_status st = mps_inputs_reader_new(fd, std ? "stdin" : arg + 1, &r, err);
    if (st) {
        if (!std)
            close(fd);
        return st;
    }
    bool end;
    in->listed = true;
    st = mps_inputs_lines(in, r, INT64_MAX, -1, &end, err);
    mps_inputs_reader_free(r);
    return st;
}

enum mps_status mps_inputs_add(struct mps_inputs *in, const char *arg, struct mps_error *err)
{
    if (!strcmp(arg, "-") || arg[0] == '@')
        return mps_inputs_list_file(in, arg, err);
    return mps_inputs_named(in, arg, err);
}

enum mps_status mps_inputs_begin(struct mps_inputs *in, const char *const *args, int n_args, bool lazy,
                                 struct mps_error *err)
{
    for (int i = 0; i < n_args; i++)
        if (args[i][0] == '@' && access(args[i] + 1, R_OK) != 0)
            return mps_fail(err, MPS_ERR_INPUT, "%s: cannot open the list: %s", args[i] + 1, strerror(errno));
    in->args = args;
    in->n_args = n_args;
    in->at_arg = 0;
    in->done = false;
    enum mps_status st = MPS_OK;
    while (!st && in->at_arg < n_args && strcmp(args[in->at_arg], "-") != 0)
        st = mps_inputs_add(in, args[in->at_arg++], err);
    if (!st && in->at_arg == n_args)
        in->done = true;
    return st || lazy ? st : mps_inputs_more(in, INT64_MAX, -1, err);
}

enum mps_status mps_inputs_more(struct mps_inputs *in, int64_t want, int wait_ms, struct mps_error *err)
{
    enum mps_status st = MPS_OK;
    while (!st && !in->done && in->n < want) {
        if (in->lines) {
            bool end;
            st = mps_inputs_lines(in, in->lines, want, wait_ms, &end, err);
            if (st || !end)
                return st;
            mps_inputs_reader_free(in->lines);
            in->lines = NULL;
            in->at_arg++;
        } else if (in->at_arg == in->n_args) {
            in->done = true;
        } else if (!strcmp(in->args[in->at_arg], "-")) {
            in->listed = true;
            st = mps_inputs_reader_new(0, "stdin", &in->lines, err);
        } else {
            st = mps_inputs_add(in, in->args[in->at_arg++], err);
        }
    }
    return st;
}

void mps_inputs_shard(struct mps_inputs *in, int64_t k, int64_t n)
{
    int64_t total = in->n;
    /* in 128 bits: total * k overflows 64 when both are near 2^32 or more */
    __extension__ typedef unsigned __int128 u128;
    int64_t lo = (int64_t)((u128)total * (u128)k / (u128)n), hi = (int64_t)((u128)total * (u128)(k + 1) / (u128)n);
    memmove(in->item, in->item + lo, sizeof *in->item * (size_t)(hi - lo));
    in->n = hi - lo;
    in->first = lo;
    in->total = total;
}

/* A whole number from 0 to INT64_MAX in s, else -1 (empty, signed, junk, or too large). */
static int64_t mps_inputs_number(const char *s)
{
    char *end;
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return *end || errno ? -1 : v;
}

/* The Slurm variable name as a number (absent: def), or a usage error naming it and its value. */
static enum mps_status mps_inputs_env(const char *value, const char *name, int64_t def, int64_t min, int64_t *v,
                                      struct mps_error *err)
{
    const char *s = getenv(name);
    *v = s ? mps_inputs_number(s) : def;
    if (*v < min)
        return mps_fail(err, MPS_ERR_USAGE, "--shard %s: %s=%s is not a whole number from %lld", value, name,
                        s ? s : "(unset)", (long long)min);
    return MPS_OK;
}

enum mps_status mps_inputs_shard_parse(const char *value, int64_t *k, int64_t *n, const char **from,
                                       struct mps_error *err)
{
    const char *slash = strchr(value, '/');
    char head[32];
    snprintf(head, sizeof head, "%.*s", slash ? (int)(slash - value) : (int)strlen(value), value);
    int64_t count = slash ? mps_inputs_number(slash + 1) : -1;
    if (slash && count < 1)
        return mps_fail(err, MPS_ERR_USAGE, "--shard %s: N must be a whole number from 1 to %lld", value,
                        (long long)INT64_MAX);
    if (strcmp(head, "auto") != 0) {
        *k = slash && (size_t)(slash - value) < sizeof head ? mps_inputs_number(head) : -1;
        *n = count;
        *from = "--shard";
        if (!slash || *k < 0 || *k >= count)
            return mps_fail(err, MPS_ERR_USAGE, "--shard %s: give K/N with K from 0 to N-1, or auto", value);
        return MPS_OK;
    }
    const char *slurm = getenv("SLURM_ARRAY_TASK_ID"), *kube = getenv("JOB_COMPLETION_INDEX");
    enum mps_status st;
    if (slurm) {
        int64_t id, min, step, tasks;
        *from = "Slurm array task";
        if ((st = mps_inputs_env(value, "SLURM_ARRAY_TASK_ID", -1, 0, &id, err)) ||
            (st = mps_inputs_env(value, "SLURM_ARRAY_TASK_MIN", 0, 0, &min, err)) ||
            (st = mps_inputs_env(value, "SLURM_ARRAY_TASK_STEP", 1, 1, &step, err)) ||
            (st = mps_inputs_env(value, "SLURM_ARRAY_TASK_COUNT", -1, 1, &tasks, err)))
            return st;
        if (id < min || (id - min) % step)
            return mps_fail(err, MPS_ERR_USAGE,
                            "--shard %s: SLURM_ARRAY_TASK_ID=%s is not a task of the array "
                            "from %lld by %lld",
                            value, slurm, (long long)min, (long long)step);
        if (count > 0 && count != tasks)
            return mps_fail(err, MPS_ERR_USAGE, "--shard %s: the Slurm array has %lld tasks", value, (long long)tasks);
        *k = (id - min) / step;
        *n = tasks;
    } else if (kube) {
        *from = "Kubernetes job index";
        *k = mps_inputs_number(kube);
        *n = count;
        if (*k < 0)
            return mps_fail(err, MPS_ERR_USAGE, "--shard %s: JOB_COMPLETION_INDEX=%s is not a whole number from 0",
                            value, kube);
        if (count < 1)
            return mps_fail(err, MPS_ERR_USAGE,
                            "--shard auto: JOB_COMPLETION_INDEX=%s gives the index only; give "
                            "the Job's completions too: --shard auto/N",
                            kube);
    } else {
        return mps_fail(err, MPS_ERR_USAGE,
                        "--shard %s: no scheduler's shard in the environment (neither "
                        "SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX is set)",
                        value);
    }
    if (*k >= *n)
        return mps_fail(err, MPS_ERR_USAGE, "--shard %s: index %lld from the %s is not below the count %lld", value,
                        (long long)*k, *from, (long long)*n);
    return MPS_OK;
}

void mps_inputs_free(struct mps_inputs *in)
{
    for (struct mps_inputs_block *b = in->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    mps_inputs_reader_free(in->lines);
    free(in->item);
    *in = (struct mps_inputs){0};
}
