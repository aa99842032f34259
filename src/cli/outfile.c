/* outfile.c: files written whole or not at all, and the signals that would
   leave a part of one (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MPS_OUT_SLOTS 8 /* files open at once: --output, a picture, a chart */

/* The temporary names the signal handler removes: written before `used` is
   set and read only where it is, so the handler never sees half a name. */
static char mps_out_tmp[MPS_OUT_SLOTS][4200];
static char mps_out_target[MPS_OUT_SLOTS][4200]; /* what the file is renamed over */
static volatile sig_atomic_t mps_out_used[MPS_OUT_SLOTS];
static volatile sig_atomic_t mps_out_deferring, mps_out_noted;
static unsigned mps_out_count;

static void mps_out_remove_all(void)
{
    for (int i = 0; i < MPS_OUT_SLOTS; i++)
        if (mps_out_used[i])
            unlink(mps_out_tmp[i]); /* async-signal-safe */
}

static void mps_out_handler(int sig)
{
    if (mps_out_deferring && sig != SIGPIPE && !mps_out_noted) {
        mps_out_noted = sig;
        return;
    }
    mps_out_remove_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

void mps_out_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* ignored by whoever started us (nohup, a background job): stays ignored */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = mps_out_handler;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

void mps_out_defer(bool on)
{
    mps_out_deferring = on;
}

int mps_out_interrupted(void)
{
    return mps_out_noted;
}

const char *mps_out_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

void mps_out_reraise(void)
{
    int sig = mps_out_noted;
    if (!sig)
        return;
    fflush(stdout);
    mps_out_remove_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

const char *mps_out_resolve(const char *path, char *buf, size_t size)
{
    struct stat ls;
    char real[PATH_MAX];
    if (lstat(path, &ls) != 0 || !S_ISLNK(ls.st_mode) || !realpath(path, real) || strlen(real) >= size)
        return path;
    memcpy(buf, real, strlen(real) + 1);
    return buf;
}

enum mps_status mps_out_open(const char *path, struct mps_out *o, struct mps_error *err)
{
    *o = (struct mps_out){.path = path, .slot = -1};
    int slot = 0;
    while (slot < MPS_OUT_SLOTS && mps_out_used[slot])
        slot++;
    if (slot == MPS_OUT_SLOTS)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: more than %d files open for writing", path, MPS_OUT_SLOTS);
    const char *target = mps_out_resolve(path, mps_out_target[slot], sizeof mps_out_target[slot]);
    if (target == path && snprintf(mps_out_target[slot], sizeof mps_out_target[slot], "%s", path) < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: the path is too long", path);
    target = mps_out_target[slot];
    struct stat st;
    bool exists = stat(target, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return mps_fail(err, MPS_ERR_RUNTIME,
                        "%s: cannot write: not a regular file (mpsrun writes a new file and renames it over the old "
                        "one)",
                        path);
    const char *slash = strrchr(target, '/'), *base = slash ? slash + 1 : target;
    int dir = slash ? (int)(slash - target) + 1 : 0;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        int n = snprintf(mps_out_tmp[slot], sizeof mps_out_tmp[slot], "%.*s.%s.mpsrun-%ld-%u", dir, target, base,
                         (long)getpid(), mps_out_count++);
        if (n < 0 || (size_t)n >= sizeof mps_out_tmp[slot])
            return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: the path is too long", path);
        mps_out_used[slot] = 1; /* before the file exists: a signal in between finds nothing to remove */
        fd = open(mps_out_tmp[slot], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        int e = errno;
        if (fd < 0)
            mps_out_used[slot] = 0;
        if (fd < 0 && e != EEXIST)
            return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write in its folder: %s", path, strerror(e));
    }
    if (fd < 0)
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot make a temporary file beside it", path);
    o->slot = slot;
    if (exists)
        fchmod(fd, st.st_mode & 07777); /* best effort: the file keeps its permissions */
    if (!(o->f = fdopen(fd, "wb"))) {
        close(fd);
        mps_out_abort(o);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    return MPS_OK;
}

enum mps_status mps_out_commit(struct mps_out *o, struct mps_error *err)
{
    bool ok = fflush(o->f) == 0 && !ferror(o->f);
    int e = errno;
    ok = fclose(o->f) == 0 && ok;
    e = ok ? 0 : e ? e : errno;
    o->f = NULL;
    if (ok && rename(mps_out_tmp[o->slot], mps_out_target[o->slot]) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        mps_out_abort(o);
        return mps_fail(err, MPS_ERR_RUNTIME, "%s: cannot write: %s", o->path, strerror(e));
    }
    mps_out_used[o->slot] = 0;
    o->slot = -1;
    return MPS_OK;
}

void mps_out_abort(struct mps_out *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->slot >= 0) {
        unlink(mps_out_tmp[o->slot]);
        mps_out_used[o->slot] = 0;
    }
    o->slot = -1;
}
