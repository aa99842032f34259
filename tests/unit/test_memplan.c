/* test_memplan.c: the arena plan. On random graphs no two values whose
   lifetimes meet share a byte (a view shares its root's on purpose, and its
   root lives as long as it), the arena is never larger than all values laid
   end to end, each value sits where the greedy rule puts it (checked by brute
   force), a chain reuses memory, and every backend running from its plan
   (cuda's with views) matches the reference. */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "memplan.h"

static int th_root(const struct mps_memplan *mp, int v)
{
    return mp->alias[v] >= 0 ? mp->alias[v] : v;
}

/* Every pair of placed values that are live at the same time must not overlap,
   unless one is a view of the other's root. */
static bool th_plan_valid(const struct mps_graph *g, const struct mps_memplan *mp, char *why, size_t size)
{
    for (int v = 0; v < g->n_values; v++) {
        int r = mp->alias[v];
        if (r >= 0 && (mp->alias[r] >= 0 || mp->offset[v] != mp->offset[r] ||
                       (mp->first[r] >= 0 && mp->last[r] < mp->last[v]))) {
            snprintf(why, size, "view '%s' of '%s': not a root, another offset or a shorter life", g->values[v].name,
                     g->values[r].name);
            return false;
        }
    }
    for (int u = 0; u < g->n_values; u++)
        for (int v = u + 1; v < g->n_values; v++) {
            if (mp->offset[u] < 0 || mp->offset[v] < 0 || th_root(mp, u) == th_root(mp, v))
                continue;
            if (mp->last[u] < mp->first[v] || mp->last[v] < mp->first[u])
                continue;
            int64_t bu = (int64_t)(mps_shape_numel(&g->values[u].shape) * 4);
            int64_t bv = (int64_t)(mps_shape_numel(&g->values[v].shape) * 4);
            if (mp->offset[u] < mp->offset[v] + bv && mp->offset[v] < mp->offset[u] + bu) {
                snprintf(why, size, "'%s' and '%s' overlap while both live", g->values[u].name, g->values[v].name);
                return false;
            }
            if (mp->offset[u] % 64 || (size_t)mp->offset[u] + (size_t)bu > mp->size) {
                snprintf(why, size, "'%s' is misaligned or outside the arena", g->values[u].name);
                return false;
            }
        }
    return true;
}

/* The plan's greedy rule, checked by brute force: values taken largest first
   (lower index first among equals), each at the lowest offset where it overlaps
   no value taken before it whose lifetime meets its own. */
static bool th_plan_greedy(const struct mps_graph *g, const struct mps_memplan *mp, char *why, size_t size)
{
    int n = 0, *order = malloc(sizeof *order * (size_t)(g->n_values + 1));
    int64_t *bytes = malloc(sizeof *bytes * (size_t)(g->n_values + 1));
    for (int v = 0; v < g->n_values; v++) {
        bytes[v] = (mps_shape_numel(&g->values[v].shape) * 4 + 63) / 64 * 64;
        bytes[v] = bytes[v] ? bytes[v] : 64;
        if (mp->offset[v] >= 0 && mp->alias[v] < 0)
            order[n++] = v;
    }
    for (int i = 1; i < n; i++) /* insertion sort: bytes descending, then index */
        for (int j = i; j > 0 && (bytes[order[j]] > bytes[order[j - 1]] ||
                                  (bytes[order[j]] == bytes[order[j - 1]] && order[j] < order[j - 1])); j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        int v = order[i];
        int64_t best = -1;
        for (int c = -1; c < i; c++) { /* candidates: 0 and the end of each earlier value it meets */
            int u = c < 0 ? -1 : order[c];
            bool meets = u >= 0 && !(mp->last[u] < mp->first[v] || mp->last[v] < mp->first[u]);
            if (u >= 0 && !meets)
                continue;
            int64_t at = u < 0 ? 0 : mp->offset[u] + bytes[u];
            bool free_here = best < 0 || at < best;
            for (int j = 0; j < i && free_here; j++) {
                int w = order[j];
                if (!(mp->last[w] < mp->first[v] || mp->last[v] < mp->first[w]))
                    free_here = !(at < mp->offset[w] + bytes[w] && mp->offset[w] < at + bytes[v]);
            }
            if (free_here)
                best = at;
        }
        ok = mp->offset[v] == best;
        if (!ok)
            snprintf(why, size, "'%s' at %lld, but the lowest free offset is %lld", g->values[v].name,
                     (long long)mp->offset[v], (long long)best);
    }
    free(order);
    free(bytes);
    return ok;
}

static bool th_bytes_meet(const struct mps_graph *g, const struct mps_memplan *mp, int u, int v)
{
    int64_t bu = mps_shape_numel(&g->values[u].shape) * 4, bv = mps_shape_numel(&g->values[v].shape) * 4;
    return mp->offset[u] < mp->offset[v] + bv && mp->offset[v] < mp->offset[u] + bu;
}

/* With writer (node k computed by node writer[k] <= k): k's outputs, written
   when writer[k] runs, share no byte with anything that nodes writer[k] to k
   read or write (but what shares their root on purpose). Computed from the
   graph, not from the plan's own lifetimes. */
static bool th_writer_valid(const struct mps_graph *g, const struct mps_memplan *mp, const int *writer, char *why,
                            size_t size)
{
    for (int k = 0; k < g->n_nodes; k++)
        for (int o = 0; o < g->nodes[k].n_out; o++) {
            int z = g->nodes[k].out[o];
            for (int j = writer[k]; mp->offset[z] >= 0 && j <= k; j++) {
                const struct mps_node *n = &g->nodes[j];
                for (int i = 0; i < n->n_in + n->n_out; i++) {
                    int u = i < n->n_in ? n->in[i] : n->out[i - n->n_in];
                    if (u < 0 || u == z || mp->offset[u] < 0 || th_root(mp, u) == th_root(mp, z) ||
                        !th_bytes_meet(g, mp, u, z))
                        continue;
                    snprintf(why, size, "'%s', written at node %d, overlaps '%s' of node %d", g->values[z].name,
                             writer[k], g->values[u].name, j);
                    return false;
                }
            }
        }
    return true;
}

/* A random DAG of 1-D f32 values: Relu, Concat of two earlier values, Slice, Identity (a view). */
static struct mps_graph *th_random_dag(int nodes, struct mps_error *err)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_shape s = {1, {(int64_t)th_uniform(8, 64)}};
    int x = mps_graph_add_value(g, "x", MPS_F32, &s);
    mps_graph_add_input(g, x, err);
    int vals[256] = {x}, n_vals = 1;
    int64_t len[256] = {s.dim[0]};
    for (int k = 0; k < nodes; k++) {
        char name[32];
        snprintf(name, sizeof name, "v%d", k);
        int y = mps_graph_add_value(g, name, MPS_F32, NULL);
        int a = (int)th_uniform(0, n_vals), b = (int)th_uniform(0, n_vals), kind = (int)th_uniform(0, 4);
        snprintf(name, sizeof name, "n%d", k);
        if (kind == 1 && len[a] + len[b] < 4096) {
            mps_graph_add_node(g, MPS_OP_CONCAT, name, (int[]){vals[a], vals[b]}, 2, &y, 1, NULL, err);
            len[n_vals] = len[a] + len[b];
        } else if (kind == 2 && len[a] > 2) {
            int64_t st[1] = {1}, en[1] = {len[a] - 1};
            struct mps_shape one = {1, {1}};
            snprintf(name, sizeof name, "s%d", k);
            int cs = mps_graph_add_const(g, name, MPS_I64, &one, st);
            snprintf(name, sizeof name, "e%d", k);
            int ce = mps_graph_add_const(g, name, MPS_I64, &one, en);
            snprintf(name, sizeof name, "n%d", k);
            mps_graph_add_node(g, MPS_OP_SLICE, name, (int[]){vals[a], cs, ce}, 3, &y, 1, NULL, err);
            len[n_vals] = len[a] - 2;
        } else if (kind == 3) {
            mps_graph_add_node(g, MPS_OP_IDENTITY, name, &vals[a], 1, &y, 1, NULL, err);
            len[n_vals] = len[a];
        } else {
            mps_graph_add_node(g, MPS_OP_RELU, name, &vals[a], 1, &y, 1, NULL, err);
            len[n_vals] = len[a];
        }
        vals[n_vals++] = y;
    }
    mps_graph_add_output(g, vals[n_vals - 1], err);
    mps_graph_add_output(g, vals[n_vals / 2], err);
    return g;
}

static void test_random_dags(void)
{
    char why[256];
    const struct mps_backend *bes[8];
    int nb = th_backends(bes, 8);
    for (int trial = 0; trial < 20; trial++) {
        char seed[32];
        snprintf(seed, sizeof seed, "dag %d", trial);
        th_seed(seed);
        struct mps_error err = {{0}};
        struct mps_graph *g = th_random_dag(60 + trial * 5, &err);
        if (mps_graph_sort(g, &err) || mps_graph_infer(g, &err)) {
            th_fail("%s builds: %s", seed, err.msg);
            mps_graph_free(g);
            continue;
        }
        for (int views = 0; views < 2; views++) {
            struct mps_memplan mp;
            if (mps_memplan_build(g, 64, &(struct mps_memplan_opts){.views = views}, &mp, &err)) {
                th_fail("%s plans: %s", seed, err.msg);
                continue;
            }
            bool ok = th_plan_valid(g, &mp, why, sizeof why);
            th_check(ok, "%s%s: no two live values overlap%s%s", seed, views ? " (views)" : "", ok ? "" : ": ",
                     ok ? "" : why);
            th_check(mp.size <= mp.total, "%s: arena %zu bytes <= %zu laid end to end", seed, mp.size, mp.total);
            ok = th_plan_greedy(g, &mp, why, sizeof why);
            th_check(ok, "%s%s: each value at the lowest free offset, largest first%s%s", seed, views ? " (views)" : "",
                     ok ? "" : ": ", ok ? "" : why);
            mps_memplan_free(&mp);
        }
        /* a backend computing some nodes in the kernel of the node before (cuda's Conv+MaxPool) */
        int *writer = calloc((size_t)g->n_nodes + 1, sizeof *writer);
        for (int k = 0; k < g->n_nodes; k++)
            writer[k] = k > 0 && th_uniform(0, 1) < 0.3 ? k - 1 : k;
        struct mps_memplan mp;
        if (mps_memplan_build(g, 64, &(struct mps_memplan_opts){.views = true, .writer = writer}, &mp, &err)) {
            th_fail("%s plans with writers: %s", seed, err.msg);
        } else {
            bool ok = th_plan_valid(g, &mp, why, sizeof why) && th_writer_valid(g, &mp, writer, why, sizeof why);
            th_check(ok, "%s (views, writers): nothing a fused node reads or writes overlaps its output%s%s", seed,
                     ok ? "" : ": ", ok ? "" : why);
            mps_memplan_free(&mp);
        }
        /* values a fused kernel never makes (the cpu's 1x1 Conv inside the depthwise): not placed */
        bool *skip = calloc((size_t)g->n_values + 1, sizeof *skip);
        for (int k = 0; k < g->n_nodes; k++)
            skip[g->nodes[k].out[0]] = writer[k] == k && !mps_graph_is_output(g, g->nodes[k].out[0]) &&
                                       th_uniform(0, 1) < 0.3;
        if (mps_memplan_build(g, 64, &(struct mps_memplan_opts){.views = true, .writer = writer, .skip = skip}, &mp,
                              &err)) {
            th_fail("%s plans with skipped values: %s", seed, err.msg);
        } else {
            int placed = 0;
            for (int v = 0; v < g->n_values; v++)
                placed += skip[v] && mp.alias[v] < 0 && mp.offset[v] >= 0; /* a view has its root's bytes */
            bool ok = th_plan_valid(g, &mp, why, sizeof why);
            th_check(ok && placed == 0, "%s (skips): no skipped value placed (%d are), the others apart%s%s", seed,
                     placed, ok ? "" : ": ", ok ? "" : why);
            mps_memplan_free(&mp);
        }
        free(skip);
        free(writer);

        /* each backend runs from its plan: its answer must be the reference's */
        int64_t n = mps_shape_numel(&g->values[g->inputs[0]].shape);
        float *x = th_alloc(MPS_F32, n);
        for (int64_t i = 0; i < n; i++)
            x[i] = (float)th_uniform(-1, 1);
        struct mps_tensor in = mps_tensor_make(MPS_F32, &g->values[g->inputs[0]].shape, x), out[2];
        struct ref_tensor want[2];
        th_ref_graph(g, &in, want);
        for (int b = 0; b < nb; b++) {
            if (bes[b] == &th_backend_mps_sim)
                continue; /* runs the lowering, not a plan */
            if (th_run(bes[b], g, &in, out, &err) == MPS_OK) {
                for (int o = 0; o < 2; o++) {
                    int64_t m = mps_shape_numel(&out[o].shape);
                    double *got = calloc((size_t)m + 1, sizeof *got);
                    th_to_double(MPS_F32, out[o].data, m, got);
                    th_check(th_nmse(got, want[o].d, m) == 0, "%s: %s output %d equals the reference", seed,
                             bes[b]->name, o);
                    free(got);
                }
                th_free_tensors(out, 2);
            } else {
                th_fail("%s: %s run: %s", seed, bes[b]->name, err.msg);
            }
        }
        free(want[0].d);
        free(want[1].d);
        free(x);
        mps_graph_free(g);
    }
}

/* x -> Relu -> Relu -> ... : two buffers suffice whatever the length. */
static void test_chain(void)
{
    struct mps_graph *g = mps_graph_new();
    struct mps_error err = {{0}};
    struct mps_shape s = {1, {1000}};
    int prev = mps_graph_add_value(g, "x", MPS_F32, &s);
    mps_graph_add_input(g, prev, &err);
    for (int k = 0; k < 10; k++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", k);
        int y = mps_graph_add_value(g, name, MPS_F32, NULL);
        mps_graph_add_node(g, MPS_OP_RELU, name, &prev, 1, &y, 1, NULL, &err);
        prev = y;
    }
    mps_graph_add_output(g, prev, &err);
    struct mps_memplan mp;
    if (mps_graph_sort(g, &err) || mps_graph_infer(g, &err) || mps_memplan_build(g, 64, NULL, &mp, &err)) {
        th_fail("chain plans: %s", err.msg);
    } else {
        size_t one = (4000 + 63) / 64 * 64;
        th_check(mp.size == 2 * one, "a chain of 10 Relus uses two buffers: %zu bytes (of %zu)", mp.size, mp.total);
        mps_memplan_free(&mp);
    }
    mps_graph_free(g);
}

int main(void)
{
    test_chain();
    test_random_dags();
    return th_summary();
}
