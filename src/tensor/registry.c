/* registry.c: the backends this build has (the only place where build
   options choose them, STYLE.md 8), and --backend's choice among them. The
   one file that links every backend; each backend links only the core. */
#include <stdio.h>
#include <string.h>

#include "backend.h"

static const struct mps_backend *const mps_backend_table[] = {
#ifdef MPSRUN_WITH_CUDA
    &mps_backend_cuda,
#endif
#ifdef MPSRUN_WITH_METAL
    &mps_backend_metal,
#endif
    &mps_backend_cpu,
};

const struct mps_backend *const *mps_backend_list(int *count)
{
    *count = (int)(sizeof mps_backend_table / sizeof mps_backend_table[0]);
    return mps_backend_table;
}

const struct mps_backend *mps_backend_find(const char *name)
{
    int n;
    const struct mps_backend *const *list = mps_backend_list(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(list[i]->name, name) == 0)
            return list[i];
    return NULL;
}

enum mps_status mps_backend_unknown(const char *name, struct mps_error *err)
{
    static const char *const known[] = {"cpu", "cuda", "mps"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(name, known[i]))
            return mps_fail(err, MPS_ERR_USAGE, "backend '%s' is not compiled into this mpsrun (see mpsrun info)",
                            name);
    return mps_fail(err, MPS_ERR_USAGE, "unknown backend '%s' (auto, cpu, cuda or mps)", name);
}

enum mps_status mps_backend_choose(const struct mps_graph *g, const char *name, const struct mps_backend **be,
                                   char *why, size_t why_size, struct mps_error *err)
{
    struct mps_backend_info info;
    struct mps_error probe_err = {{0}};
    char list[384];
    if (strcmp(name, "auto") != 0) {
        const struct mps_backend *b = mps_backend_find(name);
        if (!b)
            return mps_backend_unknown(name, err);
        enum mps_status st = b->probe(&info, &probe_err);
        if (st != MPS_OK) /* a usage error stays one (a bad MPSRUN_CPU_KERNELS); else the machine lacks it */
            return mps_fail(err, st == MPS_ERR_USAGE ? st : MPS_ERR_RUNTIME, "backend '%s' is not available: %s", name,
                            probe_err.msg);
        int bad = mps_backend_unsupported(b, g, list, sizeof list);
        if (bad)
            return mps_fail(err, MPS_ERR_MODEL, "backend '%s' cannot run %d node%s: %s", name, bad, bad == 1 ? "" : "s",
                            list);
        *be = b;
        snprintf(why, why_size, "requested");
        return MPS_OK;
    }
    int n;
    const struct mps_backend *const *all = mps_backend_list(&n);
    size_t used = (size_t)snprintf(why, why_size, "no GPU backend runs it here");
    for (int i = 0; i < n; i++) {
        const struct mps_backend *b = all[i];
        if (b == &mps_backend_cpu)
            continue;
        const char *reason = NULL;
        if (b->probe(&info, &probe_err) != MPS_OK)
            reason = probe_err.msg;
        else if (mps_backend_unsupported(b, g, list, sizeof list))
            reason = list;
        if (!reason) {
            *be = b;
            snprintf(why, why_size, "the first GPU backend available that runs every node");
            return MPS_OK;
        }
        if (used < why_size)
            used += (size_t)snprintf(why + used, why_size - used, "; %s: %s", b->name, reason);
    }
    if (n == 1)
        snprintf(why, why_size, "no GPU backend is compiled in");
    *be = &mps_backend_cpu;
    return MPS_OK;
}
