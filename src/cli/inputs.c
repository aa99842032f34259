/* inputs.c: INPUT arguments into the list of files to run (inputs.h). */
#include "inputs.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static enum mps_status mps_inputs_push(struct mps_inputs *in, const char *a, const char *b, struct mps_error *err)
{
    size_t la = strlen(a), lb = b ? strlen(b) : 0, need = la + lb + 2;
    if (in->n == in->cap_n) {
        int64_t cap = in->cap_n ? in->cap_n * 2 : 256;
        size_t *at = realloc(in->at, sizeof *at * (size_t)cap);
        if (!at)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing inputs");
        in->at = at;
        in->cap_n = cap;
    }
    if (in->len + need > in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 16384;
        while (cap < in->len + need)
            cap *= 2;
        char *text = realloc(in->text, cap);
        if (!text)
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing inputs");
        in->text = text;
        in->cap = cap;
    }
    char *p = in->text + in->len;
    memcpy(p, a, la);
    if (b) { /* a folder and a name in it */
        if (la && a[la - 1] != '/')
            p[la++] = '/';
        memcpy(p + la, b, lb);
    }
    p[la + lb] = '\0';
    in->at[in->n++] = in->len;
    in->len += la + lb + 1;
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

enum mps_status mps_inputs_names(const char *dir, char ***out, size_t *n_out, struct mps_error *err)
{
    DIR *d = opendir(dir);
    *out = NULL;
    *n_out = 0;
    if (!d)
        return mps_fail(err, MPS_ERR_INPUT, "%s: cannot read the folder: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    enum mps_status st = MPS_OK;
    for (struct dirent *e; !st && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char **grown = n < cap ? names : realloc(names, sizeof *grown * (cap = cap ? cap * 2 : 64));
        if (!grown || !(grown[n] = strdup(e->d_name)))
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory listing %s", dir);
        else
            n++;
        names = grown ? grown : names;
    }
    closedir(d);
    if (!st && n)
        qsort(names, n, sizeof *names, mps_inputs_cmp);
    *out = names;
    *n_out = n;
    return st;
}

void mps_inputs_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The folder dir, its entries in byte order, recursively. */
static enum mps_status mps_inputs_walk(struct mps_inputs *in, const char *dir, int depth, struct mps_error *err)
{
    if (depth > 256)
        return mps_fail(err, MPS_ERR_INPUT, "%s: folders nested more than 256 deep", dir);
    char **names;
    size_t n;
    enum mps_status st = mps_inputs_names(dir, &names, &n, err);
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
            st = mps_inputs_push(in, dir, names[i], err);
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
    return mps_inputs_push(in, path, NULL, err); /* a file, or what its decoding will say is wrong */
}

/* One path per line of f (named name in messages). */
static enum mps_status mps_inputs_lines(struct mps_inputs *in, FILE *f, const char *name, struct mps_error *err)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    enum mps_status st = MPS_OK;
    while (!st && (len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0)
            continue;
        if (strlen(line) != (size_t)len)
            st = mps_fail(err, MPS_ERR_INPUT, "%s: a line holds a NUL byte: not a list of paths", name);
        else
            st = mps_inputs_named(in, line, err);
    }
    if (!st && ferror(f))
        st = mps_fail(err, MPS_ERR_INPUT, "%s: cannot read: %s", name, strerror(errno));
    free(line);
    return st;
}

enum mps_status mps_inputs_add(struct mps_inputs *in, const char *arg, struct mps_error *err)
{
    if (!strcmp(arg, "-")) {
        in->listed = true;
        return mps_inputs_lines(in, stdin, "stdin", err);
    }
    if (arg[0] == '@') {
        FILE *f = fopen(arg + 1, "r");
        if (!f)
            return mps_fail(err, MPS_ERR_INPUT, "%s: cannot open the list: %s", arg + 1, strerror(errno));
        in->listed = true;
        enum mps_status st = mps_inputs_lines(in, f, arg + 1, err);
        fclose(f);
        return st;
    }
    return mps_inputs_named(in, arg, err);
}

void mps_inputs_shard(struct mps_inputs *in, int64_t k, int64_t n)
{
    int64_t total = in->n, lo = total * k / n, hi = total * (k + 1) / n;
    memmove(in->at, in->at + lo, sizeof *in->at * (size_t)(hi - lo));
    in->n = hi - lo;
    in->first = lo;
    in->total = total;
}

/* A whole number from 0 up in s, else -1. */
static int64_t mps_inputs_number(const char *s)
{
    char *end;
    if (!s || !*s)
        return -1;
    long long v = strtoll(s, &end, 10);
    return *end || v < 0 || s[0] == '-' || s[0] == '+' ? -1 : v;
}

enum mps_status mps_inputs_shard_parse(const char *value, int64_t *k, int64_t *n, const char **from,
                                       struct mps_error *err)
{
    const char *slash = strchr(value, '/');
    char head[32];
    snprintf(head, sizeof head, "%.*s", slash ? (int)(slash - value) : (int)strlen(value), value);
    int64_t count = slash ? mps_inputs_number(slash + 1) : -1;
    if (slash && count < 1)
        return mps_fail(err, MPS_ERR_USAGE, "--shard %s: N must be a whole number from 1", value);
    if (strcmp(head, "auto") != 0) {
        *k = mps_inputs_number(head);
        *n = count;
        *from = "--shard";
        if (!slash || *k < 0 || *k >= count)
            return mps_fail(err, MPS_ERR_USAGE, "--shard %s: give K/N with K from 0 to N-1, or auto", value);
        return MPS_OK;
    }
    const char *slurm = getenv("SLURM_ARRAY_TASK_ID"), *kube = getenv("JOB_COMPLETION_INDEX");
    if (slurm) {
        int64_t id = mps_inputs_number(slurm), min = mps_inputs_number(getenv("SLURM_ARRAY_TASK_MIN")),
                step = mps_inputs_number(getenv("SLURM_ARRAY_TASK_STEP")),
                tasks = mps_inputs_number(getenv("SLURM_ARRAY_TASK_COUNT"));
        min = min < 0 ? 0 : min;
        step = step < 1 ? 1 : step;
        *from = "Slurm array task";
        if (id < min || tasks < 1)
            return mps_fail(err, MPS_ERR_USAGE,
                            "--shard %s: SLURM_ARRAY_TASK_ID=%s with SLURM_ARRAY_TASK_COUNT=%s "
                            "is not a shard",
                            value, slurm,
                            getenv("SLURM_ARRAY_TASK_COUNT") ? getenv("SLURM_ARRAY_TASK_COUNT") : "(unset)");
        if (count > 0 && count != tasks)
            return mps_fail(err, MPS_ERR_USAGE, "--shard %s: the Slurm array has %lld tasks", value, (long long)tasks);
        *k = (id - min) / step;
        *n = tasks;
    } else if (kube) {
        *from = "Kubernetes job index";
        *k = mps_inputs_number(kube);
        *n = count;
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
    if (*k < 0 || *k >= *n)
        return mps_fail(err, MPS_ERR_USAGE, "--shard %s: index %lld from the %s is not below the count %lld", value,
                        (long long)*k, *from, (long long)*n);
    return MPS_OK;
}

void mps_inputs_free(struct mps_inputs *in)
{
    free(in->text);
    free(in->at);
    *in = (struct mps_inputs){0};
}
