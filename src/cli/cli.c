#include "cli.h"

#include <argtable2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
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

void mps_cli_error(const char *subject, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mpsrun: error: ", stderr);
    if (subject)
        fprintf(stderr, "%s: ", subject);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int mps_cli_parse(int argc, char **argv, void **argtable, struct arg_lit *help, struct arg_end *end,
                  const char *summary, bool *done)
{
    *done = true;
    if (arg_nullcheck(argtable) != 0) {
        mps_cli_error(argv[0], "out of memory");
        return MPS_EXIT_RUNTIME;
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
