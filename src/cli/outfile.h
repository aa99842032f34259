/* outfile.h: the files mpsrun writes (--output, --output-png's pictures,
   --plot's charts) are written under a temporary name in the target's
   folder and renamed over the target once complete, so a run that fails or
   is killed leaves the file that was there before, or none: never a part
   of one.

       struct mps_out o;
       if (mps_out_open("out.npy", &o, &err)) return ...;   // writes .out.npy.mpsrun-PID-N
       fwrite(..., o.f);
       st = ok ? mps_out_commit(&o, &err) : (mps_out_abort(&o), st);

   Signals: mps_out_signals (main calls it) makes SIGINT, SIGTERM, SIGHUP and
   SIGPIPE remove the temporary files still open before the process ends by
   the signal, as it would have without a handler. A command that can end
   its work cleanly (infer: its report closed, its outputs given up) asks
   with mps_out_defer for the first SIGINT, SIGTERM or SIGHUP to be noted
   only: it polls mps_out_interrupted between pieces of work, and ends by
   mps_out_reraise once done; a second signal ends it at once. Only
   SIGKILL (and a crash) leaves a temporary file behind. */
#ifndef MPS_CLI_OUTFILE_H
#define MPS_CLI_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "status.h"

struct mps_out {
    FILE *f;          /* open for writing ("wb") */
    const char *path; /* the target; not owned */
    int slot;         /* where the temporary name is registered for the signal handler */
};

/* path, or where it leads when it is a symbolic link to a file (into buf):
   the file mpsrun replaces, writing through the link as fopen would. */
const char *mps_out_resolve(const char *path, char *buf, size_t size);
/* Creates the temporary file beside path (beside the file a link at path
   leads to), with its permissions when it exists (else 0666 less the
   umask). MPS_ERR_RUNTIME naming path when the folder cannot be written or
   path is there and not a regular file. */
enum mps_status mps_out_open(const char *path, struct mps_out *o, struct mps_error *err);
/* Flushes, closes and renames the file over path. On failure the
   temporary file is removed and MPS_ERR_RUNTIME names path. */
enum mps_status mps_out_commit(struct mps_out *o, struct mps_error *err);
/* Closes and removes the temporary file; path is left as it was. A no-op
   on a struct that is not open. */
void mps_out_abort(struct mps_out *o);

void mps_out_signals(void);
void mps_out_defer(bool on);
/* The signal noted while deferring (SIGINT, SIGTERM, SIGHUP), or 0. */
int mps_out_interrupted(void);
/* Its name: "SIGINT", "SIGTERM", "SIGHUP". */
const char *mps_out_signal_name(int sig);
/* Ends the process by the signal noted, as it would have ended without a
   handler (a shell sees 128 + the signal); returns when none was noted. */
void mps_out_reraise(void);

#endif
