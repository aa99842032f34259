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
