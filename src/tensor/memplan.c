#include "memplan.h"

#include <stdlib.h>
#include <string.h>

struct mps_memplan_item {
    int value;
    size_t bytes;
};

static int mps_memplan_by_size(const void *a, const void *b)
{
    const struct mps_memplan_item *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1; /* largest first */
    return x->value - y->value;
}

void mps_memplan_free(struct mps_memplan *mp)
{
    if (!mp)
        return;
    free(mp->offset);
    free(mp->first);
    free(mp->last);
    free(mp->alias);
    memset(mp, 0, sizeof *mp);
}

static bool mps_memplan_is_view(const struct mps_node *n)
{
    switch (n->op) {
    case MPS_OP_RESHAPE:
    case MPS_OP_FLATTEN:
    case MPS_OP_SQUEEZE:
    case MPS_OP_UNSQUEEZE:
    case MPS_OP_IDENTITY:
    case MPS_OP_DROPOUT: return n->n_in > 0 && n->in[0] >= 0;
    default: return false;
    }
}

/* Greedy by size: each value, largest first, goes to the lowest offset where
   it overlaps no already placed value whose lifetime intersects its own. */
enum mps_status mps_memplan_build(const struct mps_graph *g, size_t align, const struct mps_memplan_opts *opts,
                                  struct mps_memplan *mp, struct mps_error *err)
{
    bool views = opts && opts->views;
    const int *writer = opts ? opts->writer : NULL;
    memset(mp, 0, sizeof *mp);
    size_t nv = (size_t)g->n_values + 1;
    mp->offset = malloc(nv * sizeof *mp->offset);
    mp->first = malloc(nv * sizeof *mp->first);
    mp->last = malloc(nv * sizeof *mp->last);
    mp->alias = malloc(nv * sizeof *mp->alias);
    struct mps_memplan_item *items = malloc(nv * sizeof *items);
    int *placed = malloc(nv * sizeof *placed);
    if (!mp->offset || !mp->first || !mp->last || !mp->alias || !items || !placed) {
        free(items);
        free(placed);
        mps_memplan_free(mp);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory planning the arena");
    }
    for (int v = 0; v < g->n_values; v++) {
        mp->offset[v] = -1;
        mp->first[v] = mp->last[v] = mp->alias[v] = -1;
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const struct mps_node *n = &g->nodes[k];
        for (int i = 0; i < n->n_out; i++) {
            mp->first[n->out[i]] = writer && writer[k] < k ? writer[k] : k;
            mp->last[n->out[i]] = k;
        }
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] >= 0 && mp->first[n->in[i]] >= 0)
                mp->last[n->in[i]] = k;
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (mp->first[g->outputs[i]] >= 0)
            mp->last[g->outputs[i]] = g->n_nodes;
    for (int k = 0; views && k < g->n_nodes; k++) { /* in order: a chain of views ends at one root */
        const struct mps_node *n = &g->nodes[k];
        if (!mps_memplan_is_view(n))
            continue;
        int v = n->out[0], r = mp->alias[n->in[0]] >= 0 ? mp->alias[n->in[0]] : n->in[0];
        mp->alias[v] = r;
        if (mp->first[r] >= 0 && mp->last[v] > mp->last[r])
            mp->last[r] = mp->last[v];
    }
    int n_items = 0;
    for (int v = 0; v < g->n_values; v++) {
        if (mp->first[v] < 0 || mp->alias[v] >= 0)
            continue;
        const struct mps_value *val = &g->values[v];
        size_t bytes = (size_t)mps_shape_numel(&val->shape) * mps_dtype_size(val->dtype);
        bytes = (bytes + align - 1) / align * align;
        items[n_items++] = (struct mps_memplan_item){v, bytes ? bytes : align};
        mp->total += bytes;
    }
    qsort(items, (size_t)n_items, sizeof *items, mps_memplan_by_size);
    for (int i = 0; i < n_items; i++) {
        int v = items[i].value;
        size_t off = 0;
        /* Move past every conflicting block until none overlaps; each move goes
           forward, so this ends after at most i moves. */
        for (bool moved = true; moved;) {
            moved = false;
            for (int j = 0; j < i; j++) {
                int u = placed[j];
                if (mp->last[u] < mp->first[v] || mp->last[v] < mp->first[u])
                    continue; /* lifetimes do not meet */
                size_t uoff = (size_t)mp->offset[u], uend = uoff + items[j].bytes;
                if (off < uend && uoff < off + items[i].bytes) {
                    off = uend;
                    moved = true;
                }
            }
        }
        mp->offset[v] = (int64_t)off;
        placed[i] = v;
        if (off + items[i].bytes > mp->size)
            mp->size = off + items[i].bytes;
    }
    for (int v = 0; v < g->n_values; v++)
        if (mp->alias[v] >= 0)
            mp->offset[v] = mp->offset[mp->alias[v]];
    free(items);
    free(placed);
    return MPS_OK;
}
