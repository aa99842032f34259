#include "memplan.h"

#include <stdint.h>
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
    return mps_op_is_view(n->op) && n->n_in > 0 && n->in[0] >= 0;
}

/* The values placed so far, found by lifetime without looking at the others:
   a max tree over the values in order of their first node, whose leaves hold
   the last node of a placed value (-1 before it is placed). The values that
   meet [first, last] are those among the leaves with first <= last whose
   last >= first; the search enters only subtrees holding one, so placing n
   values costs O(n log n) plus the meetings themselves. */
struct mps_memplan_live {
    int size;                  /* leaves: a power of two */
    int *max;                  /* [2 * size]: the latest last node under each tree node */
    struct mps_memplan_leaf {
        int value, first;
    } *leaves;                 /* value and its first node at each leaf, by first node */
    int *leaf;                 /* per value: its leaf */
    size_t *bytes;             /* per value, once placed */
    struct mps_memplan_span {
        size_t off, end;
    } *meet;                   /* the spans found by a search */
};

static int mps_memplan_by_offset(const void *a, const void *b)
{
    const struct mps_memplan_span *x = a, *y = b;
    return x->off != y->off ? (x->off < y->off ? -1 : 1) : 0;
}

static int mps_memplan_by_first(const void *a, const void *b)
{
    const struct mps_memplan_leaf *x = a, *y = b;
    return x->first != y->first ? x->first - y->first : x->value - y->value;
}

static void mps_memplan_live_free(struct mps_memplan_live *t)
{
    free(t->max);
    free(t->leaves);
    free(t->leaf);
    free(t->bytes);
    free(t->meet);
}

static bool mps_memplan_live_new(struct mps_memplan_live *t, const struct mps_memplan *mp,
                                 const struct mps_memplan_item *items, int n_items)
{
    int nv = 1;
    for (int i = 0; i < n_items; i++)
        nv = items[i].value + 1 > nv ? items[i].value + 1 : nv;
    for (t->size = 1; t->size < n_items; t->size *= 2)
        ;
    t->max = malloc(sizeof *t->max * 2 * (size_t)t->size);
    t->leaves = malloc(sizeof *t->leaves * (size_t)t->size);
    t->leaf = malloc(sizeof *t->leaf * (size_t)nv);
    t->bytes = malloc(sizeof *t->bytes * (size_t)nv);
    t->meet = malloc(sizeof *t->meet * (size_t)(n_items + 1));
    if (!t->max || !t->leaves || !t->leaf || !t->bytes || !t->meet) {
        mps_memplan_live_free(t);
        return false;
    }
    for (int i = 0; i < 2 * t->size; i++)
        t->max[i] = -1;
    for (int i = 0; i < n_items; i++)
        t->leaves[i] = (struct mps_memplan_leaf){items[i].value, mp->first[items[i].value]};
    qsort(t->leaves, (size_t)n_items, sizeof *t->leaves, mps_memplan_by_first);
    for (int i = 0; i < n_items; i++)
        t->leaf[t->leaves[i].value] = i;
    for (int i = n_items; i < t->size; i++)
        t->leaves[i] = (struct mps_memplan_leaf){-1, INT32_MAX};
    return true;
}

static void mps_memplan_live_place(struct mps_memplan_live *t, int leaf, int last)
{
    for (int i = t->size + leaf; i >= 1 && t->max[i] < last; i /= 2)
        t->max[i] = last;
}

/* The count of leaves whose value's first node is at most last. */
static int mps_memplan_live_upto(const struct mps_memplan_live *t, int last)
{
    int lo = 0, hi = t->size;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t->leaves[mid].first <= last)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Adds to t->meet the spans of the placed values at leaves [lo, hi) of node,
   below upto, whose last node is at least first. */
static void mps_memplan_live_find(struct mps_memplan_live *t, const struct mps_memplan *mp, int node, int lo, int hi,
                                  int upto, int first, int *n)
{
    if (lo >= upto || t->max[node] < first)
        return;
    if (node >= t->size) {
        int u = t->leaves[lo].value;
        t->meet[(*n)++] = (struct mps_memplan_span){(size_t)mp->offset[u], (size_t)mp->offset[u] + t->bytes[u]};
        return;
    }
    int mid = (lo + hi) / 2;
    mps_memplan_live_find(t, mp, 2 * node, lo, mid, upto, first, n);
    mps_memplan_live_find(t, mp, 2 * node + 1, mid, hi, upto, first, n);
}

/* Greedy by size: each value, largest first, goes to the lowest offset where
   it overlaps no already placed value whose lifetime intersects its own. */
enum mps_status mps_memplan_build(const struct mps_graph *g, size_t align, const struct mps_memplan_opts *opts,
                                  struct mps_memplan *mp, struct mps_error *err)
{
    bool views = opts && opts->views;
    const int *writer = opts ? opts->writer : NULL;
    const bool *skip = opts ? opts->skip : NULL;
    memset(mp, 0, sizeof *mp);
    size_t nv = (size_t)g->n_values + 1;
    mp->offset = malloc(nv * sizeof *mp->offset);
    mp->first = malloc(nv * sizeof *mp->first);
    mp->last = malloc(nv * sizeof *mp->last);
    mp->alias = malloc(nv * sizeof *mp->alias);
    struct mps_memplan_item *items = malloc(nv * sizeof *items);
    if (!mp->offset || !mp->first || !mp->last || !mp->alias || !items) {
        free(items);
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
        if (mp->first[v] < 0 || mp->alias[v] >= 0 || (skip && skip[v]))
            continue;
        const struct mps_value *val = &g->values[v];
        size_t bytes = (size_t)mps_shape_numel(&val->shape) * mps_dtype_size(val->dtype);
        bytes = (bytes + align - 1) / align * align;
        items[n_items++] = (struct mps_memplan_item){v, bytes ? bytes : align};
        mp->total += bytes;
    }
    qsort(items, (size_t)n_items, sizeof *items, mps_memplan_by_size);
    struct mps_memplan_live live;
    if (!mps_memplan_live_new(&live, mp, items, n_items)) {
        free(items);
        mps_memplan_free(mp);
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory planning the arena");
    }
    for (int i = 0; i < n_items; i++) {
        /* the placed values whose lifetimes meet this one's, by offset; then
           the lowest offset that none of them overlaps */
        int v = items[i].value, n_meet = 0;
        mps_memplan_live_find(&live, mp, 1, 0, live.size, mps_memplan_live_upto(&live, mp->last[v]), mp->first[v],
                              &n_meet);
        qsort(live.meet, (size_t)n_meet, sizeof *live.meet, mps_memplan_by_offset);
        size_t off = 0;
        for (int j = 0; j < n_meet && live.meet[j].off < off + items[i].bytes; j++)
            if (live.meet[j].end > off)
                off = live.meet[j].end;
        mp->offset[v] = (int64_t)off;
        live.bytes[v] = items[i].bytes;
        mps_memplan_live_place(&live, live.leaf[v], mp->last[v]);
        if (off + items[i].bytes > mp->size)
            mp->size = off + items[i].bytes;
    }
    mps_memplan_live_free(&live);
    for (int v = 0; v < g->n_values; v++)
        if (mp->alias[v] >= 0)
            mp->offset[v] = mp->offset[mp->alias[v]];
    free(items);
    return MPS_OK;
}
