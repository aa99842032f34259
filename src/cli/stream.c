/* stream.c: the chunked run over many inputs (stream.h): a decoder thread
   fills one chunk while the main thread runs the other. The decoder reads
   files a window at a time (a chunk's worth), decoding the window's files
   in parallel on a pool of its own straight into the chunk's room for
   them, then lays them into the chunk in order (a file that failed leaves
   a gap the files after it move down into).
   Where the runs take the cores the decoding would (the cpu backend with
   more than half the cores), the two take turns: a chunk is filled between
   runs, not beside one. A decoding thread beside a run takes a core from
   one of the run's threads and the others wait for that one at every
   node: beside the runs, 1,000 224x224 PNGs (0.66 s of decoding on one
   core) made mobilenet_v2's runs 0.59 s slower; between them the decoding
   takes both cores, 0.33 s. */
#include "stream.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cpu/thread_pool.h"
#include "memplan.h"

#define MPS_STREAM_PLANS 4     /* input shapes compiled at once; the least recently used one goes */
#define MPS_STREAM_PAUSE_MS 50 /* stdin: a chunk waits this long for the next line, then runs part-full */
#define MPS_STREAM_POLL_MS 100 /* stdin: how often a wait for a line looks whether the stream was stopped */

/* Files decoded into one batch. */
struct mps_stream_chunk {
    struct mps_infer_file *files;
    int n_files, cap_files;
    float *data;           /* [batch, item...]: the backend's staging (host_io), or memory of its own */
    size_t cap;            /* floats data has room for */
    struct mps_shape item; /* the shape of its items: a run takes one input shape */
    int64_t per;           /* floats an item */
    int64_t items;
    struct mps_tensor *staged_out; /* the outputs a run from the staging writes, per graph output */
    bool staged;                   /* data is the backend's */
    bool ready;                    /* decoded, not yet run and reported */
    bool last;                     /* no chunk after it */
    double decode_ms;
    enum mps_status fatal; /* the decoder could not go on (out of memory, an unreadable list) */
    struct mps_error fatal_err;
};

/* A plan for one input shape: a batch size, and where the model leaves them free, an item's. */
struct mps_stream_plan {
    struct mps_shape shape;
    struct mps_model *model;
    struct mps_plan *plan;
    struct mps_tensor *out; /* per graph output, owned */
    uint64_t used;          /* last use, for eviction */
    bool kept;              /* never evicted: the chunks are staged in it, or it is shared */
    bool shared;            /* model is the stream's own r->model (its shape), not built for the plan */
};

/* A file decoded ahead of its chunk. */
struct mps_stream_file {
    struct mps_infer_file f;
    float *data;           /* its one item: its slot, its place in window_data or its own buffer; NULL when it
                              failed or holds several (read a part at a time as chunks take them) */
    bool own;              /* data is a buffer of its own (a free item shape), freed once laid in */
    int64_t left;          /* items not yet laid into a chunk */
    const char *why;       /* the list says it failed already (a folder that cannot be read) */
    enum mps_status fatal; /* out of memory while decoding it */
    struct mps_error fatal_err;
};

struct mps_stream {
    struct mps_infer_result *r;
    struct mps_inputs *list; /* read on by the decoder as it goes (stdin) */
    const struct mps_stream_opts *o;
    struct mps_shape item; /* one item of the model's input; a free dim -1: each file gives its own size */
    bool fixed;            /* no dim of item is free: each file decodes straight into its slot of the chunk */
    int64_t per;           /* floats an item, when fixed */
    int64_t batch;         /* items a chunk holds: --batch, or the fixed batch */
    bool free_batch;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool take_turns; /* runs and decoding share the cores: each holds turn while it works */
    pthread_mutex_t turn;
    struct mps_stream_chunk chunk[2];
    bool stop;                      /* the main thread is done: the decoder ends */
    int64_t known;                  /* inputs listed so far (under mu: the progress line reads it) */
    bool known_all;                 /* and that is all of them */
    int64_t next;                   /* the next path to decode */
    struct mps_pool *pool;          /* the decoder's threads */
    struct mps_stream_file *window; /* files decoded, waiting for their chunk: [at, n_window) */
    float *slots;                   /* where window file i decodes: slots + i * per, the chunk's room for it */
    float *window_data;             /* the window's items moved out of the chunk (a .npy of several in it) */
    int64_t n_window, at, cap_window, cap_data;
    struct mps_stream_plan plans[MPS_STREAM_PLANS];
    int n_plans;
    uint64_t tick;
};

static bool mps_stream_stopped(struct mps_stream *s)
{
    pthread_mutex_lock(&s->mu);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop || (s->o->cancel && s->o->cancel());
}

static bool mps_stream_add_file(struct mps_stream_chunk *c, const struct mps_infer_file *f)
{
    if (c->n_files == c->cap_files) {
        int cap = c->cap_files ? c->cap_files * 2 : 64;
        struct mps_infer_file *files = realloc(c->files, sizeof *files * (size_t)cap);
        if (!files)
            return false;
        c->files = files;
        c->cap_files = cap;
    }
    c->files[c->n_files++] = *f;
    return true;
}

/* Decodes window files [b, e), each into its slot. */
static void mps_stream_decode(void *ctx, int64_t b, int64_t e)
{
    struct mps_stream *s = ctx;
    for (int64_t i = b; i < e; i++) {
        struct mps_stream_file *w = &s->window[i];
        struct mps_error err = {{0}};
        float *own = NULL;
        enum mps_status st = w->why ? mps_fail(&err, MPS_ERR_INPUT, "%s", w->why)
                                    : mps_infer_decode(&s->r->prep, &s->item, s->free_batch ? 0 : s->batch, &w->f,
                                                       s->fixed ? s->slots + i * s->per : NULL, &own, &err);
        w->left = w->f.file_items;
        w->own = own != NULL;
        w->data = own ? own : !st && w->left == 1 ? s->slots + i * s->per : NULL;
        if (st) {
            if (st == MPS_ERR_RUNTIME) {
                w->fatal = st;
                w->fatal_err = err;
            }
            w->f.st = st;
            snprintf(w->f.error, sizeof w->f.error, "%s", err.msg);
        }
    }
}

/* Lists what the inputs hold up to `want` paths, waiting up to wait_ms for
   stdin's next line; false when the list could not be read (*c's fatal). */
static bool mps_stream_list(struct mps_stream *s, struct mps_stream_chunk *c, int64_t want, int wait_ms)
{
    struct mps_inputs *in = s->list;
    enum mps_status st = in->done ? MPS_OK : mps_inputs_more(in, want, wait_ms, &c->fatal_err);
    pthread_mutex_lock(&s->mu);
    s->known = in->n;
    s->known_all = in->done;
    pthread_mutex_unlock(&s->mu);
    c->fatal = st;
    return !st;
}

/* Waits, without holding the cores, until an input is there to decode or
   there will be none (the list's end, or the stream stopped). */
static bool mps_stream_await(struct mps_stream *s, struct mps_stream_chunk *c)
{
    while (s->next == s->list->n && !s->list->done && !mps_stream_stopped(s))
        if (!mps_stream_list(s, c, s->next + 1, MPS_STREAM_POLL_MS))
            return false;
    return true;
}

/* The next window of files, as many as c has room for, decoded in parallel
   into that room: file i into item c->items + i (a 224x224 file is 0.6 MB:
   copied from a window of its own, 32 of them took a third of the time a
   GPU's stream spent filling a chunk). An empty window: none is listed yet. */
static bool mps_stream_window(struct mps_stream *s, struct mps_stream_chunk *c)
{
    int64_t room = s->batch - c->items;
    if (!mps_stream_list(s, c, s->next + room, c->items ? MPS_STREAM_PAUSE_MS : 0))
        return false;
    int64_t left = s->list->n - s->next, count = left < room ? left : room;
    if (count > s->cap_window) {
        struct mps_stream_file *w = realloc(s->window, sizeof *w * (size_t)count);
        if (!w)
            return false;
        s->window = w;
        s->cap_window = count;
    }
    for (int64_t i = 0; i < count; i++)
        s->window[i] = (struct mps_stream_file){
            .f = {.path = mps_inputs_path(s->list, s->next + i), .index = s->list->first + s->next + i},
            .why = mps_inputs_why(s->list, s->next + i)};
    s->next += count;
    s->n_window = count;
    s->at = 0;
    s->slots = s->fixed ? c->data + c->items * s->per : NULL;
    if (s->take_turns)
        pthread_mutex_lock(&s->turn);
    mps_pool_for(s->pool, count, MPS_POOL_GRAIN, mps_stream_decode, s); /* a file is work enough for a thread */
    mps_pool_rest(s->pool); /* the runs get the cores until the next window */
    if (s->take_turns)
        pthread_mutex_unlock(&s->turn);
    bool several = false; /* a .npy of several items: read into the chunk over the slots after its own */
    for (int64_t i = 0; i < count; i++)
        several = several || s->window[i].left > 1;
    if (!several || !s->fixed)
        return true;
    if (count > s->cap_data) {
        float *data = realloc(s->window_data, sizeof(float) * (size_t)(count * s->per + 1));
        if (!data)
            return false;
        s->window_data = data;
        s->cap_data = count;
    }
    for (int64_t i = 0; i < count; i++) { /* the others move out of the chunk first */
        struct mps_stream_file *w = &s->window[i];
        if (w->data && !w->own) {
            memcpy(s->window_data + i * s->per, w->data, sizeof(float) * (size_t)s->per);
            w->data = s->window_data + i * s->per;
        }
    }
    return true;
}

/* Room for n floats in c's data: a chunk of a free item shape grows to its
   largest batch; one of a fixed shape has its room from the start. */
static bool mps_stream_room(struct mps_stream_chunk *c, int64_t n)
{
    if ((size_t)n <= c->cap)
        return true;
    if (c->staged)
        return false;
    float *data = realloc(c->data, sizeof(float) * (size_t)(n + 1));
    if (!data)
        return false;
    c->data = data;
    c->cap = (size_t)n;
    return true;
}

/* Lays decoded files into c until it holds s->batch items, the files run
   out (or stdin pauses), a file's items have another shape than the
   chunk's, or (without keep_going) a file has failed. A .npy
   of more items than are left goes in part by part, a chunk at a time. */
static void mps_stream_fill(struct mps_stream *s, struct mps_stream_chunk *c)
{
    c->n_files = 0;
    c->items = 0;
    c->last = false;
    c->fatal = MPS_OK;
    c->fatal_err.msg[0] = '\0';
    bool oom = false;
    bool listed = mps_stream_await(s, c);
    double t0 = mps_cli_now_ms(); /* the decoding's time, not stdin's */
    if (!listed)
        goto out;
    while (c->items < s->batch && !mps_stream_stopped(s)) {
        if (s->at == s->n_window) {
            if (s->next == s->list->n && s->list->done)
                break;
            if ((oom = !mps_stream_window(s, c)) || c->fatal)
                break;
            if (!s->n_window)
                break; /* stdin paused: the chunk runs with what it has */
        }
        struct mps_stream_file *w = &s->window[s->at];
        if (w->fatal) {
            c->fatal = w->fatal;
            c->fatal_err = w->fatal_err;
            break;
        }
        if (!w->f.st && c->items && !mps_shape_eq(&w->f.item, &c->item))
            break; /* items of another shape: they start the next chunk */
        if (!w->f.st && !c->items) {
            c->item = w->f.item;
            c->per = mps_shape_numel(&c->item);
        }
        struct mps_infer_file part = w->f;
        part.items = w->f.st ? 0 : w->left < s->batch - c->items ? w->left : s->batch - c->items;
        part.item0 = w->f.file_items - w->left;
        if ((oom = !mps_stream_room(c, (c->items + part.items) * c->per)))
            break;
        float *to = c->data + c->items * c->per; /* at or before its slot: the files before it took an item or none */
        if (w->data && to != w->data)
            memmove(to, w->data, sizeof(float) * (size_t)c->per);
        else if (!w->data && part.items) {
            struct mps_error e = {{0}};
            if ((part.st = mps_infer_read_items(&w->f, part.item0, part.items, c->per, to, &e))) {
                snprintf(part.error, sizeof part.error, "%s", e.msg);
                part.items = 0;
                w->left = 0;
            }
        }
        if (w->own)
            free(w->data);
        w->data = NULL;
        w->own = false;
        w->left -= part.items;
        part.ends = part.st || !w->left;
        if ((oom = !mps_stream_add_file(c, &part)))
            break;
        c->items += part.items;
        if (part.ends)
            s->at++;
        if (part.st && !s->o->keep_going) {
            c->last = true;
            break;
        }
    }
out:
    if (oom) {
        c->fatal = MPS_ERR_RUNTIME;
        mps_fail(&c->fatal_err, MPS_ERR_RUNTIME, "out of memory decoding inputs");
    }
    c->last = c->last || c->fatal || (s->next == s->list->n && s->list->done && s->at == s->n_window) ||
              mps_stream_stopped(s);
    c->decode_ms = mps_cli_now_ms() - t0;
}

static void *mps_stream_decoder(void *arg)
{
    struct mps_stream *s = arg;
    for (int k = 0;; k ^= 1) {
        struct mps_stream_chunk *c = &s->chunk[k];
        pthread_mutex_lock(&s->mu);
        while (c->ready && !s->stop)
            pthread_cond_wait(&s->cv, &s->mu);
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            break;
        mps_stream_fill(s, c);
        pthread_mutex_lock(&s->mu);
        c->ready = true;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        if (c->last)
            break;
    }
    return NULL;
}

static void mps_stream_plan_free(struct mps_stream_plan *p)
{
    for (int o = 0; p->out && p->model && o < p->model->graph->n_outputs; o++)
        free(p->out[o].data);
    free(p->out);
    mps_plan_free(p->plan);
    if (!p->shared)
        mps_model_free(p->model);
    *p = (struct mps_stream_plan){0};
}

/* The plan for a run of input shape `shape`: cached, else built from the
   parsed model and compiled (the first one also chooses the backend). */
static enum mps_status mps_stream_plan(struct mps_stream *s, const struct mps_shape *shape,
                                       struct mps_stream_plan **out, struct mps_error *err)
{
    struct mps_infer_result *r = s->r;
    for (int i = 0; i < s->n_plans; i++)
        if (mps_shape_eq(&s->plans[i].shape, shape)) {
            s->plans[i].used = ++s->tick;
            *out = &s->plans[i];
            return MPS_OK;
        }
    int slot = s->n_plans;
    if (slot == MPS_STREAM_PLANS) { /* the least recently used goes */
        slot = -1;
        for (int i = 0; i < s->n_plans; i++)
            if (!s->plans[i].kept && (slot < 0 || s->plans[i].used < s->plans[slot].used))
                slot = i;
        mps_stream_plan_free(&s->plans[slot]);
    } else {
        s->n_plans++;
    }
    struct mps_stream_plan *p = &s->plans[slot];
    *p = (struct mps_stream_plan){.shape = *shape, .used = ++s->tick};
    double t0 = mps_cli_now_ms();
    enum mps_status st = MPS_OK;
    const struct mps_value *in = &r->model->graph->values[r->model->graph->inputs[0]];
    bool shared = false; /* the model as loaded fits this shape, and no other plan took it */
    for (int i = 0; i < s->n_plans; i++)
        shared = shared || s->plans[i].shared;
    if (!shared && mps_shape_eq(&in->shape, shape)) /* kept: fused for the backend once, it stays with the stream */
        p->model = r->model, p->shared = p->kept = true;
    else
        st = mps_onnx_model(r->file, &(struct mps_onnx_opts){.n_shapes = 1, .shapes = shape}, &p->model, err);
    r->t_load += mps_cli_now_ms() - t0;
    const struct mps_graph *g = p->model ? p->model->graph : NULL;
    if (!st && !r->backend &&
        !(st = mps_backend_choose(g, s->o->backend, &r->backend, r->why_backend, sizeof r->why_backend, err)))
        st = r->backend->probe(&r->device, err);
    if (!st)
        st = mps_passes_fuse(p->model->graph, r->backend, err);
    t0 = mps_cli_now_ms();
    if (!st)
        st = mps_plan_compile(r->backend, g, s->o->co, &p->plan, err);
    r->t_compile += mps_cli_now_ms() - t0;
    if (!st && !(p->out = calloc((size_t)g->n_outputs, sizeof *p->out)))
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    for (int o = 0; !st && o < g->n_outputs; o++) {
        const struct mps_value *v = &g->values[g->outputs[o]];
        p->out[o] = mps_tensor_make(v->dtype, &v->shape,
                                    malloc(mps_dtype_size(v->dtype) * (size_t)(mps_shape_numel(&v->shape) + 1)));
        if (!p->out[o].data)
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    }
    if (st) {
        mps_stream_plan_free(p);
        s->n_plans--;
        if (slot != s->n_plans)
            s->plans[slot] = s->plans[s->n_plans];
        return st;
    }
    *out = p;
    return MPS_OK;
}

/* Before the first chunk: the plan for a whole chunk, and each chunk's room:
   where the backend has staging of its own (a GPU's pinned memory), one of
   its two slots, so that a run copies nothing on the host and the decoder
   fills one slot while the other runs. */
static enum mps_status mps_stream_stage(struct mps_stream *s, struct mps_error *err)
{
    struct mps_stream_plan *p = NULL;
    enum mps_status st = MPS_OK;
    struct mps_shape whole = {s->item.ndim + 1, {s->batch}};
    memcpy(whole.dim + 1, s->item.dim, sizeof(int64_t) * (size_t)s->item.ndim);
    /* a whole chunk of a known shape will run: its plan is wanted anyway */
    if (s->fixed && (s->list->n >= s->batch || !s->list->done) && (st = mps_stream_plan(s, &whole, &p, err)))
        return st;
    s->take_turns = s->r->backend == &mps_backend_cpu && 2 * mps_pool_threads(s->pool) > mps_pool_cores();
    int n_out = p ? p->model->graph->n_outputs : 0;
    for (int k = 0; k < 2 && !st; k++) {
        struct mps_stream_chunk *c = &s->chunk[k];
        struct mps_tensor in[8];
        if (p && s->r->backend->host_io) {
            p->kept = true;
            if (p->model->graph->n_inputs > 8 || !(c->staged_out = calloc((size_t)n_out, sizeof *c->staged_out)))
                return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
            if ((st = mps_plan_host_io(p->plan, k, in, c->staged_out, err)))
                return st;
            c->data = in[0].data;
            c->cap = (size_t)(s->batch * s->per);
            c->staged = true;
        } else if (s->fixed && !mps_stream_room(c, s->batch * s->per)) {
            return mps_fail(err, MPS_ERR_RUNTIME, "out of memory for a batch of %lld inputs", (long long)s->batch);
        }
    }
    return MPS_OK;
}

/* Runs chunk c (when it holds items) and hands it to fn. */
static enum mps_status mps_stream_chunk_run(struct mps_stream *s, struct mps_stream_chunk *c, bool first,
                                            mps_stream_fn fn, void *ctx, struct mps_error *err)
{
    struct mps_infer_result *r = s->r;
    struct mps_infer_group grp = {.n_in = 1, .borrowed = true, .items = c->items};
    enum mps_status st = MPS_OK;
    r->t_preprocess += c->decode_ms;
    if (c->items > 0) {
        struct mps_stream_plan *p;
        struct mps_shape shape = {c->item.ndim + 1, {c->items}};
        memcpy(shape.dim + 1, c->item.dim, sizeof(int64_t) * (size_t)c->item.ndim);
        if ((st = mps_stream_plan(s, &shape, &p, err)))
            return st;
        grp.in[0] = mps_tensor_make(MPS_F32, &shape, c->data);
        grp.out = c->staged && c->items == s->batch ? c->staged_out : p->out;
        grp.n_out = p->model->graph->n_outputs;
        double t0 = mps_cli_now_ms();
        if (s->take_turns)
            pthread_mutex_lock(&s->turn);
        mps_stream_bounded_shapes(p->plan, grp.out, false);
        st = mps_plan_run(p->plan, grp.in, grp.out, err);
        if (s->take_turns)
            pthread_mutex_unlock(&s->turn);
        double ms = mps_cli_now_ms() - t0;
        r->t_run += ms;
        if (first)
            r->t_first = ms;
        for (int i = 0; first && !st && i < s->o->warmup && !mps_stream_stopped(s); i++)
            st = mps_plan_run(p->plan, grp.in, grp.out, err);
        if (first && !st && s->o->repeat > 0 && !(r->t_runs = calloc((size_t)s->o->repeat, sizeof *r->t_runs)))
            st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        for (int i = 0; first && !st && i < s->o->repeat && !mps_stream_stopped(s); i++) {
            t0 = mps_cli_now_ms();
            st = mps_plan_run(p->plan, grp.in, grp.out, err);
            r->t_runs[r->n_runs++] = mps_cli_now_ms() - t0;
        }
        mps_stream_bounded_shapes(p->plan, grp.out, !st);
        mps_plan_rest(p->plan); /* the decoder gets the cores until the next chunk */
        if (st)
            return st;
    }
    r->files = c->files;
    r->n_files = c->n_files;
    r->groups = c->items > 0 ? &grp : NULL;
    r->n_groups = c->items > 0;
    for (int f = 0; f < c->n_files; f++) {
        r->n_png += c->files[f].png && c->files[f].ends;
        r->n_items += c->files[f].items;
        r->n_failed += c->files[f].st != MPS_OK;
        r->n_done += c->files[f].ends;
    }
    st = fn(ctx, r, err);
    r->files = NULL;
    r->groups = NULL;
    r->n_files = r->n_groups = 0;
    return st;
}

/* The progress line: done of the inputs listed (all of them, or so far from stdin), speed, time left. */
static void mps_stream_progress(struct mps_stream *s, int64_t done, double t0)
{
    pthread_mutex_lock(&s->mu);
    int64_t known = s->known;
    bool all = s->known_all;
    pthread_mutex_unlock(&s->mu);
    double rate = (double)done * 1e3 / (mps_cli_now_ms() - t0 > 1 ? mps_cli_now_ms() - t0 : 1);
    int left = rate > 0 ? (int)((double)(known - done) / rate + 0.5) : 0;
    char a[32], b[32], x[32];
    if (all)
        mps_cli_progress("mpsrun: %s/%s inputs, %s/s, %d:%02d left", mps_cli_count(done, a, sizeof a),
                         mps_cli_count(known, b, sizeof b), mps_cli_count((int64_t)rate, x, sizeof x), left / 60,
                         left % 60);
    else
        mps_cli_progress("mpsrun: %s inputs (%s listed so far), %s/s", mps_cli_count(done, a, sizeof a),
                         mps_cli_count(known, b, sizeof b), mps_cli_count((int64_t)rate, x, sizeof x));
}

/* The first graph output whose size a run decides, or -1. */
static int mps_stream_first_bounded(const struct mps_graph *g)
{
    for (int o = 0; o < g->n_outputs; o++)
        if (g->values[g->outputs[o]].bounded)
            return o;
    return -1;
}

enum mps_status mps_stream_run(struct mps_infer_result *r, struct mps_inputs *list, const struct mps_stream_opts *o,
                               mps_stream_fn fn, void *ctx, struct mps_error *err, const char **subject)
{
    const struct mps_graph *g = r->model->graph;
    const struct mps_value *in = &g->values[g->inputs[0]];
    if (g->n_inputs != 1 || in->shape.ndim < 1 || in->dtype != MPS_F32)
        return mps_fail(err, MPS_ERR_MODEL, "the model's input '%s' is not a batch of f32 data", in->name);
    struct mps_stream *s = calloc(1, sizeof *s);
    if (!s)
        return mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
    *s = (struct mps_stream){.r = r, .list = list, .o = o, .item = {in->shape.ndim - 1, {0}}, .fixed = true};
    for (int i = 1; i < in->shape.ndim; i++) { /* a dim the model leaves free: each file's own */
        s->item.dim[i - 1] = r->model->inputs[0].symbolic[i] ? -1 : in->shape.dim[i];
        s->fixed = s->fixed && !r->model->inputs[0].symbolic[i];
    }
    s->per = s->fixed ? mps_shape_numel(&s->item) : 0;
    s->free_batch = r->model->inputs[0].symbolic[0];
    s->batch = s->free_batch ? o->batch : in->shape.dim[0];
    int bounded = mps_stream_first_bounded(g);
    if (bounded >= 0 && s->free_batch && s->batch > 1) {
        free(s);
        return mps_fail(err, MPS_ERR_USAGE,
                        "output '%s' has a size each run decides, which cannot be split by input: run a batch of 1 "
                        "(--batch 1)",
                        g->values[g->outputs[bounded]].name);
    }
    s->known = list->n;
    s->known_all = list->done;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_init(&s->turn, NULL);
    double t0 = mps_cli_now_ms();
    pthread_t thread;
    enum mps_status st = mps_pool_new(o->co->threads, &s->pool, err);
    if (st || (st = mps_stream_stage(s, err)))
        goto out;
    if (pthread_create(&thread, NULL, mps_stream_decoder, s) != 0) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "cannot start the decoding thread");
        goto out;
    }
    int64_t done = 0;    /* inputs run and reported */
    double drawn = -1e9; /* when the progress line was last drawn */
    for (int k = 0, n = 0;; k ^= 1, n++) {
        struct mps_stream_chunk *c = &s->chunk[k];
        pthread_mutex_lock(&s->mu);
        while (!c->ready)
            pthread_cond_wait(&s->cv, &s->mu);
        pthread_mutex_unlock(&s->mu);
        if (c->fatal) {
            *err = c->fatal_err;
            st = c->fatal;
            *subject = NULL; /* the message says what failed */
        } else {
            st = mps_stream_chunk_run(s, c, n == 0, fn, ctx, err);
        }
        for (int f = 0; f < c->n_files; f++)
            done += c->files[f].ends;
        if (!st && o->progress && mps_cli_now_ms() - drawn >= 100) { /* ten a second at most */
            drawn = mps_cli_now_ms();
            mps_stream_progress(s, done, t0);
        }
        for (int f = 0; !st && !o->keep_going && f < c->n_files; f++)
            if (c->files[f].st) { /* the first failure ends the stream, after what came before it */
                st = mps_fail(err, c->files[f].st, "%s", c->files[f].error);
                *subject = c->files[f].path;
                r->stopped = true;
            }
        bool last = c->last;
        if (!st && !last && o->cancel && (r->interrupted = o->cancel()))
            last = true; /* a signal: the report ends after this chunk */
        pthread_mutex_lock(&s->mu);
        c->ready = false;
        s->stop = st != MPS_OK || last;
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        if (st || last)
            break;
    }
    pthread_join(thread, NULL);
    if (!st && !r->interrupted && o->cancel)
        r->interrupted = o->cancel(); /* the last chunk ended early for it */
    if (o->progress)
        mps_cli_progress_done();
out:
    r->t_total = mps_cli_now_ms() - t0;
    for (int i = 0; i < s->n_plans; i++)
        mps_stream_plan_free(&s->plans[i]);
    for (int k = 0; k < 2; k++) {
        free(s->chunk[k].files);
        if (!s->chunk[k].staged)
            free(s->chunk[k].data);
        free(s->chunk[k].staged_out);
    }
    for (int64_t i = s->at; i < s->n_window; i++) /* decoded into buffers of their own, never laid in */
        if (s->window[i].own)
            free(s->window[i].data);
    free(s->window);
    free(s->window_data);
    mps_pool_free(s->pool);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->turn);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return st;
}

void mps_stream_bounded_shapes(const struct mps_plan *plan, struct mps_tensor *out, bool ran)
{
    const struct mps_graph *g = plan->graph;
    for (int o = 0; o < g->n_outputs; o++) {
        struct mps_shape s = g->values[g->outputs[o]].shape;
        if (!g->values[g->outputs[o]].bounded)
            continue;
        if (ran)
            mps_plan_output_shape(plan, o, &s);
        out[o] = mps_tensor_make(out[o].dtype, &s, out[o].data);
    }
}

int64_t mps_stream_default_batch(const struct mps_infer_result *r)
{
    const struct mps_graph *g = r->model->graph;
    if (mps_stream_first_bounded(g) >= 0)
        return 1;
    struct mps_memplan mp;
    struct mps_error err;
    size_t per = 0;
    if (mps_memplan_build(g, 64, NULL, &mp, &err) == MPS_OK) {
        per = mp.size;
        mps_memplan_free(&mp);
    }
    for (int i = 0; i < g->n_inputs; i++)
        per += mps_dtype_size(g->values[g->inputs[i]].dtype) * (size_t)mps_shape_numel(&g->values[g->inputs[i]].shape);
    int64_t batch = 32;
    while (batch > 1 && (size_t)batch * per > ((size_t)256 << 20))
        batch /= 2;
    return batch;
}
