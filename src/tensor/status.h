/* status.h: how every fallible mpsrun function reports failure.

   A fallible function returns enum mps_status and, on failure, writes a
   one-line reason into a struct mps_error that the caller owns:

       struct mps_error err = {0};
       if (mps_graph_infer(g, &err) != MPS_OK)
           fprintf(stderr, "mpsrun: error: %s: %s\n", path, err.msg);

   Library code never exits or aborts on bad input; asserts guard programmer
   errors only. The CLI maps each status to an exit code (DESIGN.md). */
#ifndef MPS_STATUS_H
#define MPS_STATUS_H

#include <stdarg.h>

enum mps_status {
    MPS_OK = 0,
    MPS_ERR_RUNTIME, /* device or runtime failure, out of memory (exit 1) */
    MPS_ERR_USAGE,   /* bad arguments from the caller (exit 2) */
    MPS_ERR_MODEL,   /* model invalid or unsupported; the message names the node (exit 3) */
    MPS_ERR_INPUT,   /* input data invalid (exit 4) */
    MPS_ERR_CHECK,   /* a requested check failed (exit 5) */
};

struct mps_error {
    char msg[512]; /* NUL-terminated reason; empty when nothing failed */
};

/* Writes the printf-style reason into err (which may be NULL) and returns s,
   so that a failure is one statement: return mps_fail(err, MPS_ERR_MODEL, ...). */
enum mps_status mps_fail(struct mps_error *err, enum mps_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The same with "node '<name>' (<op>): " before the reason, for model errors. */
enum mps_status mps_vfail_node(struct mps_error *err, const char *name, const char *op, const char *fmt, va_list ap);

/* Short lowercase name of a status ("model", "input", ...). */
const char *mps_status_name(enum mps_status s);

#endif
