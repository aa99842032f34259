#include "status.h"

#include <stdarg.h>
#include <stdio.h>

enum mps_status mps_fail(struct mps_error *err, enum mps_status s, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return s;
}

enum mps_status mps_vfail_node(struct mps_error *err, const char *name, const char *op, const char *fmt, va_list ap)
{
    if (err) {
        int k = snprintf(err->msg, sizeof err->msg, "node '%s' (%s): ", name, op);
        if (k < 0 || (size_t)k >= sizeof err->msg)
            k = 0;
        vsnprintf(err->msg + k, sizeof err->msg - (size_t)k, fmt, ap);
    }
    return MPS_ERR_MODEL;
}

const char *mps_status_name(enum mps_status s)
{
    switch (s) {
    case MPS_OK: return "ok";
    case MPS_ERR_RUNTIME: return "runtime";
    case MPS_ERR_USAGE: return "usage";
    case MPS_ERR_MODEL: return "model";
    case MPS_ERR_INPUT: return "input";
    case MPS_ERR_CHECK: return "check";
    }
    return "unknown";
}
