/* cli.h: what the subcommands of the mpsrun command line share: exit codes,
   error printing, argtable2 helpers. Only src/cli calls exit(). */
#ifndef MPS_CLI_H
#define MPS_CLI_H

#include <argtable2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "tensor.h"

/* Exit codes; scripts depend on them (DESIGN.md, "Errors and exit codes"). */
enum mps_exit {
    MPS_EXIT_OK = 0,
    MPS_EXIT_RUNTIME = 1, /* runtime or device failure */
    MPS_EXIT_USAGE = 2,   /* bad flags */
    MPS_EXIT_MODEL = 3,   /* model invalid or unsupported */
    MPS_EXIT_INPUT = 4,   /* input file invalid */
    MPS_EXIT_CHECK = 5,   /* a check failed */
};

struct mps_cli_command {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv); /* argv[0] is the subcommand's name; returns an exit code */
};

/* The exit code for a library status. */
int mps_cli_exit_code(enum mps_status s);
/* Prints "mpsrun: error: <subject>: <message>" to stderr; subject may be NULL.
   Control characters in either are written as mps_cli_vis writes them. */
void mps_cli_error(const char *subject, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* s as a terminal should see it: each control character (C0 but tab, DEL,
   C1) written \x1b or \u009b, so that a label, a path, a node name or a
   message that came from a file cannot move the cursor, recolor or clear
   the terminal (JSON escapes them its own way). Text of up to 4 KB; the
   result lasts until 8 more calls (the text reports print from one thread). */
const char *mps_cli_vis(const char *s);
/* The length of the control character at s (1, or 2 for a C1 in UTF-8), or 0. */
int mps_cli_control(const char *s);

/* Parses argv with the argtable2 table argtable, whose --help flag is help
   and whose terminator is end. On --help prints the usage of `mpsrun <cmd>` with
   summary and returns 0 with *done set; on a parse error (an empty value
   given to an option is one, naming the option) prints the errors and
   returns MPS_EXIT_USAGE with *done set. Otherwise *done is false. */
int mps_cli_parse(int argc, char **argv, void **argtable, struct arg_lit *help, struct arg_end *end,
                  const char *summary, bool *done);

/* Milliseconds on a monotonic clock. */
double mps_cli_now_ms(void);

/* Numbers for people: 1806336 as "1,806,336"; 3.2e9 bytes as "3.0 GiB" (B, KiB,
   MiB... by 1024); 2258000 as "2.258 M" (k, M, G... by 1000). Return buf. */
const char *mps_cli_count(int64_t n, char *buf, size_t size);
const char *mps_cli_bytes(double bytes, char *buf, size_t size);
const char *mps_cli_si(double v, char *buf, size_t size);

/* An optional integer option: def when absent, else a usage error naming it
   ("--repeat must be 0 to 1000000, not -1") unless lo to hi. */
enum mps_status mps_cli_int(const struct arg_int *a, const char *name, int lo, int hi, int def, int *v,
                            struct mps_error *err);
/* --threads: 0 when absent (one per core), else 1 to mps_cli_max_threads()
   (4 per CPU, at least 64): a thread per core is the most that helps, and
   100,000 would start for seconds and gigabytes before anything failed. */
int mps_cli_max_threads(void);
enum mps_status mps_cli_threads(const struct arg_int *a, int *threads, struct mps_error *err);

/* Splits option name's comma list (copied into buf) into items[], at most
   max: an empty item, more than max, or one given twice is a usage error
   naming the option. *n gets the count. */
enum mps_status mps_cli_list(const char *name, const char *list, char *buf, size_t size, char **items, int max, int *n,
                             struct mps_error *err);

/* Whether option name's path can be written, found out before any work: a
   usage error naming the option when it is a folder or another file that
   is not a regular one, or its folder cannot be written (the file is
   written beside its name and renamed over it: outfile.h). */
enum mps_status mps_cli_writable(const char *name, const char *path, struct mps_error *err);
/* Option name's folder path, made with the folders on its way when
   missing: a usage error naming the option when it is a file, cannot be
   made or cannot be written. */
enum mps_status mps_cli_folder(const char *name, const char *path, struct mps_error *err);
/* --plot's file, when given: named .svg, writable. */
enum mps_status mps_cli_plot_path(const struct arg_file *plot, struct mps_error *err);

/* --shape NAME=AxBxC, given once for each input it sizes (NAME= may be
   left out when the model has one input): *n the model's runtime inputs,
   names[i] and shapes[i] each as the file declares it (a free dim -1, decl
   with its name), the shapes given in their places. A usage error names
   the option, the input and what the model declares of it. */
struct mps_onnx_file;
struct mps_model_input;
enum mps_status mps_cli_shapes(const struct arg_str *opt, const struct mps_onnx_file *f, int *n, const char **names,
                               struct mps_shape *shapes, struct mps_model_input *decl, struct mps_error *err);

/* s as one CSV field (RFC 4180): in double quotes, each '"' doubled, when it
   holds a comma, a quote or a line break; as it is otherwise. Returns buf. */
const char *mps_cli_csv_quote(const char *s, char *buf, size_t size);

/* Prints root as JSON on stdout, each string (a file name, a node name, a
   label) made well-formed UTF-8 first: a byte that is not part of it becomes
   U+FFFD, so the output always parses. False when out of memory. */
struct cJSON;
bool mps_cli_json_print(struct cJSON *root);
/* The length of the well-formed UTF-8 sequence at s (RFC 3629), or 0. */
int mps_cli_utf8_len(const unsigned char *s);
/* The same as text (cJSON_free it), formatted or on one line; NULL when out of memory. */
char *mps_cli_json_text(struct cJSON *root, bool formatted);

/* A progress line on stderr, redrawn in place, when stderr is a terminal
   (nothing otherwise: logs and pipes stay clean); _done erases it, and so
   does mps_cli_error before its line (the next progress line comes below). */
void mps_cli_progress(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void mps_cli_progress_done(void);

/* The subcommands (one file each). */
int mps_cli_info(int argc, char **argv);
int mps_cli_infer(int argc, char **argv);
int mps_cli_bench(int argc, char **argv);
int mps_cli_inspect(int argc, char **argv);
int mps_cli_eval(int argc, char **argv);
int mps_cli_quantize(int argc, char **argv);

#endif
