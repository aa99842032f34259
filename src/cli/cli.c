#include "cli.h"
#include "model.h"
#include "outfile.h"

#include <argtable2.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdint.h>
#include <errno.h>
#include <strings.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int mps_cli_exit_code(enum mps_status s)
{
    switch (s) {
    case MPS_OK: return MPS_EXIT_OK;
    case MPS_ERR_RUNTIME: return MPS_EXIT_RUNTIME;
    case MPS_ERR_USAGE: return MPS_EXIT_USAGE;
    case MPS_ERR_MODEL: return MPS_EXIT_MODEL;
    case MPS_ERR_INPUT: return MPS_EXIT_INPUT;
    case MPS_ERR_CHECK: return MPS_EXIT_CHECK;
    }
    return MPS_EXIT_RUNTIME;
}

static bool mps_cli_progress_shown; /* a progress line is on the terminal, not ended by a newline */

int mps_cli_control(const char *c)
{
    const unsigned char *s = (const unsigned char *)c;
    if ((s[0] < 0x20 && s[0] != '\t') || s[0] == 0x7f)
        return 1;
    return s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f ? 2 : 0;
}

static void mps_cli_write_visible(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = mps_cli_control((const char *)p);
        if (n)
            fprintf(f, n == 1 ? "\\x%02x" : "\\u%04x", n == 1 ? p[0] : p[1]);
        else
            fputc(*p, f);
        p += n ? n : 1;
    }
}

const char *mps_cli_vis(const char *s)
{
    static char ring[8][4400];
    static int next;
    char *buf = ring[next++ % 8];
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && n + 7 < sizeof ring[0];) {
        int c = mps_cli_control((const char *)p);
        if (c)
            n += (size_t)snprintf(buf + n, sizeof ring[0] - n, c == 1 ? "\\x%02x" : "\\u%04x", c == 1 ? p[0] : p[1]);
        else
            buf[n++] = (char)*p;
        p += c ? c : 1;
    }
    buf[n] = '\0';
    return buf;
}

void mps_cli_error(const char *subject, const char *fmt, ...)
{
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mps_cli_progress_done(); /* an error has a line of its own; the progress line comes back below it */
    fputs("mpsrun: error: ", stderr);
    if (subject) {
        mps_cli_write_visible(stderr, subject);
        fputs(": ", stderr);
    }
    mps_cli_write_visible(stderr, msg); /* a name from a file cannot move a terminal's cursor or clear it */
    fputc('\n', stderr);
}

/* The first long option of argtable that takes a value and is given an
   empty one ("--plot ''" or "--plot="), as "--plot"; NULL when none is. */
static const char *mps_cli_empty_value(int argc, char **argv, void **argtable)
{
    static char name[64];
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0 || !argv[i][2])
            continue;
        const char *eq = strchr(argv[i], '=');
        size_t len = eq ? (size_t)(eq - argv[i] - 2) : strlen(argv[i] + 2);
        bool empty = eq ? !eq[1] : i + 1 < argc && !argv[i + 1][0];
        for (int t = 0; empty && !(((struct arg_hdr *)argtable[t])->flag & ARG_TERMINATOR); t++) {
            const struct arg_hdr *h = argtable[t];
            if (!(h->flag & ARG_HASVALUE) || !h->longopts)
                continue;
            for (const char *p = h->longopts; *p;) { /* "output,o": names separated by commas */
                size_t n = strcspn(p, ",");
                if (n == len && !strncmp(p, argv[i] + 2, n)) {
                    snprintf(name, sizeof name, "--%.*s", (int)n, p);
                    return name;
                }
                p += n + (p[n] == ',');
            }
        }
    }
    return NULL;
}

int mps_cli_parse(int argc, char **argv, void **argtable, struct arg_lit *help, struct arg_end *end,
                  const char *summary, bool *done)
{
    *done = true;
    if (arg_nullcheck(argtable) != 0) {
        mps_cli_error(argv[0], "out of memory");
        return MPS_EXIT_RUNTIME;
    }
    const char *empty = mps_cli_empty_value(argc, argv, argtable);
    if (empty) { /* argtable2 would say `option "" requires an argument`, naming no option */
        mps_cli_error(NULL, "%s: an empty value (give one)", empty);
        return MPS_EXIT_USAGE;
    }
    int errors = arg_parse(argc, argv, argtable);
    if (help && help->count > 0) {
        printf("usage: mpsrun %s", argv[0]);
        arg_print_syntax(stdout, argtable, "\n");
        printf("%s\n\n", summary);
        arg_print_glossary(stdout, argtable, "  %-24s %s\n");
        return MPS_EXIT_OK;
    }
    if (errors > 0) {
        fputs("mpsrun: error: ", stderr);
        arg_print_errors(stderr, end, argv[0]);
        fprintf(stderr, "usage: mpsrun %s", argv[0]);
        arg_print_syntax(stderr, argtable, "\n");
        return MPS_EXIT_USAGE;
    }
    *done = false;
    return MPS_EXIT_OK;
}

double mps_cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *mps_cli_count(int64_t n, char *buf, size_t size)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%lld", (long long)(n < 0 ? -n : n)), at = 0;
    char tmp[48];
    if (n < 0)
        tmp[at++] = '-';
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            tmp[at++] = ',';
        tmp[at++] = digits[i];
    }
    snprintf(buf, size, "%.*s", at, tmp);
    return buf;
}

const char *mps_cli_bytes(double bytes, char *buf, size_t size)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    for (; bytes >= 1024 && u < 6; u++)
        bytes /= 1024;
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

const char *mps_cli_si(double v, char *buf, size_t size)
{
    static const char *const prefix[] = {"", " k", " M", " G", " T", " P", " E"};
    int p = 0;
    for (; v >= 1000 && p < 6; p++)
        v /= 1000;
    snprintf(buf, size, "%.4g%s", v, prefix[p]);
    return buf;
}

enum mps_status mps_cli_int(const struct arg_int *a, const char *name, int lo, int hi, int def, int *v,
                            struct mps_error *err)
{
    *v = a->count ? a->ival[0] : def;
    if (*v < lo || *v > hi)
        return mps_fail(err, MPS_ERR_USAGE, "%s must be %d to %d, not %d", name, lo, hi, *v);
    return MPS_OK;
}

int mps_cli_max_threads(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 16 ? 4 * (int)cpus : 64;
}

enum mps_status mps_cli_threads(const struct arg_int *a, int *threads, struct mps_error *err)
{
    *threads = 0;
    if (!a->count)
        return MPS_OK;
    int max = mps_cli_max_threads();
    if (a->ival[0] < 1 || a->ival[0] > max)
        return mps_fail(err, MPS_ERR_USAGE, "--threads must be 1 to %d here (4 per CPU, at least 64), not %d", max,
                        a->ival[0]);
    *threads = a->ival[0];
    return MPS_OK;
}

enum mps_status mps_cli_list(const char *name, const char *list, char *buf, size_t size, char **items, int max, int *n,
                             struct mps_error *err)
{
    *n = 0;
    if (strlen(list) >= size)
        return mps_fail(err, MPS_ERR_USAGE, "%s: the list is longer than %zu characters", name, size - 1);
    memcpy(buf, list, strlen(list) + 1);
    for (char *p = buf;; p++) {
        char *item = p;
        p += strcspn(p, ",");
        bool last = *p == '\0';
        *p = '\0';
        if (!*item)
            return mps_fail(err, MPS_ERR_USAGE, "%s %s: an empty item", name, list);
        if (*n == max)
            return mps_fail(err, MPS_ERR_USAGE, "%s %s: more than %d items", name, list, max);
        for (int i = 0; i < *n; i++)
            if (!strcmp(items[i], item))
                return mps_fail(err, MPS_ERR_USAGE, "%s %s: '%s' is given twice", name, list, item);
        items[(*n)++] = item;
        if (last)
            return MPS_OK;
    }
}

enum mps_status mps_cli_writable(const char *name, const char *given, struct mps_error *err)
{
    struct stat st;
    char dir[4096], resolved[4096];
    const char *path = mps_out_resolve(given, resolved, sizeof resolved), *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (slash == path ? 1 : (int)(slash - path)) : 1, slash ? path : ".");
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return mps_fail(err, MPS_ERR_USAGE, "%s %s: is a folder", name, path);
    if (exists && !S_ISREG(st.st_mode))
        return mps_fail(err, MPS_ERR_USAGE,
                        "%s %s: not a regular file (mpsrun writes a new file beside it and "
                        "renames it over)",
                        name, path);
    /* the new file is made in the folder, whatever the old one's own permissions */
    if (access(dir, W_OK | X_OK) != 0)
        return mps_fail(err, MPS_ERR_USAGE, "%s %s: cannot write in the folder %s: %s", name, path, dir,
                        strerror(errno));
    return MPS_OK;
}

enum mps_status mps_cli_folder(const char *name, const char *path, struct mps_error *err)
{
    struct stat sb;
    size_t len = strlen(path);
    char buf[4096];
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return mps_fail(err, MPS_ERR_USAGE, "%s %s: not a folder", name, path);
    if (len >= sizeof buf)
        return mps_fail(err, MPS_ERR_USAGE, "%s %s: the path is too long", name, path);
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1;; p++) /* each folder on the way, then the last */
        if (*p == '/' || !*p) {
            char c = *p;
            *p = '\0';
            if (stat(buf, &sb) != 0 && mkdir(buf, 0777) != 0 && errno != EEXIST)
                return mps_fail(err, MPS_ERR_USAGE, "%s %s: cannot make the folder %s: %s", name, path, buf,
                                strerror(errno));
            *p = c;
            if (!c)
                break;
        }
    if (access(path, W_OK | X_OK) != 0)
        return mps_fail(err, MPS_ERR_USAGE, "%s %s: cannot write in the folder: %s", name, path, strerror(errno));
    return MPS_OK;
}

enum mps_status mps_cli_plot_path(const struct arg_file *plot, struct mps_error *err)
{
    if (!plot->count)
        return MPS_OK;
    const char *p = plot->filename[0];
    size_t n = strlen(p);
    if (n < 4 || strcasecmp(p + n - 4, ".svg"))
        return mps_fail(err, MPS_ERR_USAGE, "--plot %s: mpsrun draws SVG; name the file .svg (rsvg-convert or a "
                        "browser turns it into a PNG)", p);
    return mps_cli_writable("--plot", p, err);
}

const char *mps_cli_csv_quote(const char *s, char *buf, size_t size)
{
    if (!strpbrk(s, ",\"\r\n")) {
        snprintf(buf, size, "%s", s);
        return buf;
    }
    size_t n = 0;
    buf[n++] = '"';
    for (const char *p = s; *p && n + 3 < size; p++) {
        if (*p == '"')
            buf[n++] = '"';
        buf[n++] = *p;
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}

/* The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
   forms, no surrogates, nothing past U+10FFFF), or 0. */
int mps_cli_utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    int n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    unsigned lo = s[0] == 0xe0 ? 0xa0 : s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xed ? 0x9f : s[0] == 0xf4 ? 0x8f : 0xbf;
    for (int i = 1; i < n; i++)
        if (s[i] < (i == 1 ? lo : 0x80) || s[i] > (i == 1 ? hi : 0xbf))
            return 0;
    return n;
}

/* s with each byte that is not part of well-formed UTF-8 replaced by U+FFFD,
   in a cJSON_malloc'd copy; NULL when s is well-formed already (or on OOM). */
static char *mps_cli_utf8_fix(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s), i = 0;
    while (i < len && mps_cli_utf8_len(p + i))
        i += (size_t)mps_cli_utf8_len(p + i);
    if (i >= len)
        return NULL;
    char *out = cJSON_malloc(3 * len + 1), *o = out;
    for (i = 0; out && i < len;) {
        int n = mps_cli_utf8_len(p + i);
        if (n) {
            memcpy(o, p + i, (size_t)n);
            o += n, i += (size_t)n;
        } else {
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3, i++;
        }
    }
    if (out)
        *o = '\0';
    return out;
}

static void mps_cli_json_fix(cJSON *item)
{
    for (; item; item = item->next) {
        char *fixed;
        if (item->string && (fixed = mps_cli_utf8_fix(item->string))) {
            cJSON_free(item->string);
            item->string = fixed;
        }
        if (cJSON_IsString(item) && item->valuestring && (fixed = mps_cli_utf8_fix(item->valuestring))) {
            cJSON_free(item->valuestring);
            item->valuestring = fixed;
        }
        mps_cli_json_fix(item->child);
    }
}

char *mps_cli_json_text(cJSON *root, bool formatted)
{
    mps_cli_json_fix(root);
    return formatted ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
}

bool mps_cli_json_print(cJSON *root)
{
    char *text = mps_cli_json_text(root, true);
    if (!text)
        return false;
    puts(text);
    cJSON_free(text);
    return true;
}

void mps_cli_progress(const char *fmt, ...)
{
    if (!isatty(2))
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("\r\033[K", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    mps_cli_progress_shown = true;
}

void mps_cli_progress_done(void)
{
    if (mps_cli_progress_shown)
        fputs("\r\033[K", stderr);
    mps_cli_progress_shown = false;
}

/* "1x3x320x320" into s: each dim a whole number from 1 to 2^31; false otherwise. */
static bool mps_cli_dims(const char *text, struct mps_shape *s)
{
    s->ndim = 0;
    for (const char *p = text;;) {
        char *end;
        if (*p < '0' || *p > '9' || s->ndim == MPS_MAX_DIMS)
            return false;
        errno = 0;
        long long d = strtoll(p, &end, 10);
        if (errno || d < 1 || d > (1ll << 31))
            return false;
        s->dim[s->ndim++] = d;
        if (!*end)
            return true;
        if (*end != 'x' && *end != 'X')
            return false;
        p = end + 1;
    }
}

enum mps_status mps_cli_shapes(const struct arg_str *opt, const struct mps_onnx_file *f, int *n, const char **names,
                               struct mps_shape *shapes, struct mps_model_input *decl, struct mps_error *err)
{
    *n = mps_onnx_inputs(f, names, shapes, decl, NULL, 8);
    if (*n < 0 && opt->count)
        return mps_fail(err, MPS_ERR_USAGE, "--shape: the model has more than 8 inputs, or one without a shape");
    bool given[8] = {false};
    for (int k = 0; k < opt->count; k++) {
        const char *v = opt->sval[k], *eq = strrchr(v, '=');
        int i = -1;
        struct mps_shape s;
        char a[160], b[160];
        for (int j = 0; eq && j < *n && i < 0; j++)
            if (strlen(names[j]) == (size_t)(eq - v) && !strncmp(names[j], v, (size_t)(eq - v)))
                i = j;
        if (!eq && *n == 1)
            i = 0;
        if (i < 0 && eq)
            return mps_fail(err, MPS_ERR_USAGE, "--shape %s: the model has no input '%.*s'", v, (int)(eq - v), v);
        if (i < 0)
            return mps_fail(err, MPS_ERR_USAGE, "--shape %s: the model has %d inputs: give NAME=AxBxC", v, *n);
        if (given[i])
            return mps_fail(err, MPS_ERR_USAGE, "--shape: input '%s' is given twice", names[i]);
        if (!mps_cli_dims(eq ? eq + 1 : v, &s))
            return mps_fail(err, MPS_ERR_USAGE, "--shape %s: give sizes from 1 joined by x, as 1x3x224x224", v);
        bool fits = s.ndim == shapes[i].ndim;
        for (int d = 0; fits && d < s.ndim; d++)
            fits = shapes[i].dim[d] < 0 || shapes[i].dim[d] == s.dim[d];
        if (!fits) {
            size_t len = (size_t)snprintf(a, sizeof a, "[");
            for (int d = 0; d < shapes[i].ndim && len < sizeof a; d++)
                len += (size_t)(shapes[i].dim[d] < 0 ? snprintf(a + len, sizeof a - len, "%s%s", d ? "," : "",
                                                                decl[i].dim_name[d] ? decl[i].dim_name[d] : "?")
                                                     : snprintf(a + len, sizeof a - len, "%s%lld", d ? "," : "",
                                                                (long long)shapes[i].dim[d]));
            if (len < sizeof a)
                snprintf(a + len, sizeof a - len, "]");
            return mps_fail(err, MPS_ERR_USAGE, "--shape %s: input '%s' is %s, and %s does not fit it", v, names[i], a,
                            mps_shape_str(&s, b, sizeof b));
        }
        shapes[i] = s;
        given[i] = true;
    }
    return MPS_OK;
}
