/* metal.c: the Apple GPU backend's table. C on both sides: the lowering
   (lower.c) decides what MPSGraph builds, the bridge (bridge.m) builds and
   runs it. A compiled plan is the bridge's handle; the lowered program is
   only needed while the graph is built. */
#include <stdlib.h>

#include "backend.h"
#include "bridge.h"
#include "lower.h"

static bool mps_metal_supports(const struct mps_graph *g, const struct mps_node *n)
{
    char why[256];
    return mps_mtl_node_supported(g, n, why, sizeof why);
}

/* A compiled model: the bridge's plan, and the graph its host_io describes. */
struct mps_metal_state {
    const struct mps_graph *g;
    struct mps_mtl_plan *plan;
};

static void mps_metal_free(void *state)
{
    struct mps_metal_state *s = state;
    if (s)
        mps_mtl_plan_free(s->plan);
    free(s);
}

static enum mps_status mps_metal_compile(const struct mps_graph *g, const struct mps_compile_opts *opts, void **state,
                                         struct mps_error *err)
{
    struct mps_metal_state *s = calloc(1, sizeof *s);
    if (!s)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    s->g = g;
    struct mps_mtl_program *p;
    enum mps_status st = mps_mtl_lower(g, opts->precision, &p, err);
    if (!st) {
        st = mps_mtl_build(g, p, &s->plan, err);
        mps_mtl_program_free(p);
    }
    if (st) {
        mps_metal_free(s);
        return st;
    }
    *state = s;
    return MPS_OK;
}

static enum mps_status mps_metal_run(void *state, const struct mps_tensor *in, struct mps_tensor *out,
                                     struct mps_error *err)
{
    return mps_mtl_execute(((struct mps_metal_state *)state)->plan, in, out, err);
}

static enum mps_status mps_metal_host_io(void *state, int slot, struct mps_tensor *in, struct mps_tensor *out,
                                         struct mps_error *err)
{
    struct mps_metal_state *s = state;
    return mps_mtl_host_io(s->plan, s->g, slot, in, out, err);
}

static enum mps_status mps_metal_bench_baseline(int64_t m, int64_t n, int64_t k, enum mps_precision precision,
                                                int threads, int warmup, int repeat, double *times_ms,
                                                struct mps_error *err)
{
    (void)threads;
    return mps_mtl_matmul_baseline(m, n, k, precision, warmup, repeat, times_ms, err);
}

const struct mps_backend mps_backend_metal = {
    .name = "mps",
    .description = "Apple GPU: the whole model as one MPSGraph executable on unified memory",
    .precisions = MPS_PRECISION_BIT(MPS_PRECISION_FP32) | MPS_PRECISION_BIT(MPS_PRECISION_FP16),
    .probe = mps_mtl_probe,
    .supports = mps_metal_supports,
    .compile = mps_metal_compile,
    .run = mps_metal_run,
    .host_io = mps_metal_host_io,
    .free = mps_metal_free,
    .profile = NULL,
    .bench_baseline = mps_metal_bench_baseline,
};
