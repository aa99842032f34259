/* infer.h: what infer.c (options, the run), infer_input.c (input files into batches)
   and report.c (top-k, text and JSON) share. Internal to src/cli. */
#ifndef MPS_CLI_INFER_H
#define MPS_CLI_INFER_H

#include <stdbool.h>

#include <argtable2.h>

#include "backend.h"
#include "compare.h"
#include "model.h"

/* How images become the model's input: from flags, else the model's
   metadata_props (labels, mean, std, image_size), else defaults. */
struct mps_infer_prep {
    int channels;          /* 1 or 3 */
    int64_t height, width;
    float mean[3], std[3];
    const char *norm_from; /* "flags", "model metadata" or "none" */
};

/* One input file, decoded, or why it could not be. A .npy of several items
   is read a part at a time, as runs take them (mps_infer_read_items): a
   chunk may hold a part of one, the items [item0, item0 + items). */
struct mps_infer_file {
    const char *path;
    char source[96];      /* "PNG gray 8-bit 28x28", "npy f32 [1,1,28,28]" */
    int64_t items;        /* batch items of it in this chunk; 0 when it failed */
    int64_t item0;        /* the first of them: its index in the file */
    int64_t file_items;   /* items the file holds */
    struct mps_shape item; /* the shape of an item (without the batch), as the file gives it */
    int64_t data_at;      /* a .npy: where its data starts in the file */
    int64_t index;        /* its place in the whole input list */
    bool png;             /* decoded from a PNG */
    bool ends;            /* its last item is in this chunk (or it failed) */
    enum mps_status st;   /* MPS_OK, or why it failed */
    char error[sizeof((struct mps_error *)0)->msg]; /* the failure, without the path */
};

/* A batch run as one: the input tensors of the graph, built from the files r->files holds. */
struct mps_infer_group {
    struct mps_tensor in[8];          /* per graph input; owned unless borrowed */
    int n_in;
    struct mps_tensor *out;           /* per graph output; owned unless borrowed */
    int n_out;
    int64_t items;                    /* the items it runs: an output whose first dim is this many is theirs */
    bool borrowed;                    /* in and out belong to a stream (stream.c) */
};

/* An input of a run fed by file (mps_infer_feed): the file it came from. */
struct mps_infer_fed {
    const char *name, *path;
    char source[96]; /* "npy f32 [1,6]", "npz f64 [1,6] (to f32)": as stored, converted to */
};

struct mps_infer_result {
    struct mps_onnx_file *file; /* the model file, parsed once: a run of another input shape builds from it */
    struct mps_model *model;    /* built for the nominal shapes: a free batch 1, free sizes what --size or a
                                   probe gave (model->inputs says which dims are free) */
    const struct mps_backend *backend;
    struct mps_backend_info device;
    char why_backend[256];
    const char *precision;
    struct mps_infer_prep prep;
    struct mps_infer_file *files;
    int n_files;
    struct mps_infer_fed fed[8]; /* a run fed by file: each input's (the one file entry stands for them all) */
    int n_fed;
    char fed_label[512]; /* that entry's path: the files, joined by " + " */
    struct mps_infer_group *groups;
    int n_groups;
    const char **labels; /* n_labels entries or NULL */
    int n_labels;
    const char *output_kind; /* "probabilities", "log_probabilities", "logits", "scores" (an activation's
                                output, ranked as it is) or NULL: not a classifier */
    char kind_why[96];       /* "the model ends in Softmax", "the model's metadata says so", ... */
    int n_png;               /* inputs decoded from PNG (the report says how) */
    int top_k;
    /* timings, milliseconds */
    double t_load, t_compile, t_preprocess, t_first;
    double t_run, t_total; /* a stream's: every run, and the whole stream from start to end */
    double *t_runs;
    int n_runs;
    int64_t n_items, n_failed; /* a stream's counts so far: items run, files that failed */
    int64_t n_done;            /* files reported so far (with the ones that failed) */
    bool stopped;              /* the stream stopped at a file that failed (without keep_going) */
    int interrupted;           /* the stream ended early for this signal (SIGINT, SIGTERM) */
    /* checks: NULL when not asked */
    const char *expect, *check_path;
    int64_t expect_class;         /* --expect resolved to an index */
    bool expect_ok, check_ok;
    bool compared;                /* the shapes agreed and check holds the comparison */
    struct mps_tolerance tol;     /* --rtol, --atol */
    struct mps_comparison check;
    char check_detail[512];
};

/* infer_options.c: the options infer and eval share, as argtable2 entries. */
struct mps_infer_args {
    struct arg_str *backend, *precision;
    struct arg_int *threads, *batch;
    struct arg_file *labels;
    struct arg_str *mean, *std, *size;
};
void mps_infer_args_make(struct mps_infer_args *a);
/* Checks what needs no model (a usage error naming the option): precision
   and threads into co and r->precision, --batch into *batch. */
enum mps_status mps_infer_args_check(const struct mps_infer_args *a, struct mps_infer_result *r,
                                     struct mps_compile_opts *co, int *batch, struct mps_error *err);
/* Loads the model at path into r (timed) and checks the options against it:
   image size, channels and normalization (r->prep), labels, classes (and
   r->expect against them), a --batch the model fixes otherwise. *subject
   gets what a failure is about: the model, the labels file, or NULL for a
   usage error. */
enum mps_status mps_infer_setup(struct mps_infer_result *r, const char *path, const struct mps_infer_args *a,
                                const char **subject, struct mps_error *err);

/* infer_input.c */
/* Decodes file->path, a PNG or a .npy, for a model whose input items have
   shape item (a dim of -1 is free: the file's own size, a PNG's the image's
   own size unless prep sets it), by prep; each file's signature and size
   are checked before the rest of it is read. Sets file->item, the shape of
   the file's items. A PNG is one item, and so is a .npy of one: written to
   dst, or when dst is NULL (a free shape: the size is the file's) to *own,
   a new buffer (free() it). A .npy of several is only checked (its items
   are read by mps_infer_read_items). fixed_batch > 0: the model fixes its
   batch there and the file must give exactly that many items. Sets
   file->file_items, data_at, source and png; MPS_ERR_INPUT with the reason
   (no path) when the file is bad, MPS_ERR_RUNTIME when out of memory. Safe
   to call from any thread. */
enum mps_status mps_infer_decode(const struct mps_infer_prep *prep, const struct mps_shape *item, int64_t fixed_batch,
                                 struct mps_infer_file *file, float *dst, float **own, struct mps_error *err);
/* Reads items [first, first + count) of the .npy file decoded, per floats
   each, into dst; MPS_ERR_INPUT when the file changed since. */
enum mps_status mps_infer_read_items(const struct mps_infer_file *file, int64_t first, int64_t count, int64_t per,
                                     float *dst, struct mps_error *err);
/* The model's inputs for one run: the files of args in the model's order
   (an .npz gives the inputs its arrays name) and named, "NAME=FILE" each
   (--input; a .npy, or an .npz's array of that name). Each file read whole,
   its dtype the input's (a float64 array for a float32 input is converted,
   and said in its source), its shape the input's where the model fixes a
   dim; shapes[i] gets the shape given. As one group: r->fed (a file per
   input), r->files (one entry that stands for them: its items the first
   input's free first dim where it has two or more, else 1) and r->groups (owned: mps_infer_free_groups). A name
   unknown, an input given twice or not at all is MPS_ERR_USAGE; a file that does not fit is MPS_ERR_INPUT with
   *bad_file its path. */
enum mps_status mps_infer_feed(struct mps_infer_result *r, const char *const *args, int n_args,
                               const char *const *named, int n_named, struct mps_shape *shapes, struct mps_error *err,
                               const char **bad_file);
void mps_infer_free_groups(struct mps_infer_result *r);

/* report.c: what infer prints, chunk by chunk as a stream runs. */
enum mps_infer_form {
    MPS_INFER_TEXT,  /* for a person */
    MPS_INFER_QUIET, /* --quiet: one tab-separated line per item */
    MPS_INFER_JSON,  /* --json: one JSON object, its results written as they come */
    MPS_INFER_JSONL, /* --jsonl: one JSON object per item (or failed file), a line each */
};

/* An item of the chunk whose picture could not be made (--keep-going). */
struct mps_infer_pic_failure {
    int64_t row;
    char why[sizeof((struct mps_error *)0)->msg];
};

struct mps_infer_report {
    enum mps_infer_form form;
    bool stream;        /* several inputs: chunks, their count and speed; else one run and its timings */
    int64_t batch;      /* a stream's --batch */
    int64_t total;      /* inputs in this process's share; -1 while stdin is still being read */
    bool listed_all;    /* at the end: total is every input (stdin was read to its end) */
    bool keep_going;
    const char *shard;  /* "shard 1 of 4 (Slurm array task): inputs 2,500 to 4,999 of 10,000", or NULL */
    const char *png;    /* --output-png PATH, or NULL */
    bool png_folder;    /* PATH is a folder of NNNNNN.png */
    struct mps_infer_pic_failure *pic_failed; /* this chunk's items without a picture */
    int n_pic_failed, cap_pic_failed;
    /* what was written, for the end */
    const char *output_path;                    /* --output, or NULL */
    bool output_written;                        /* it was (every input ran) */
    int64_t output_rows, output_nan, first_nan; /* its rows; rows of NaN for failed inputs, the first */
    int64_t png_written;
    const char *outputs_path;   /* --outputs, or NULL */
    bool outputs_npz;           /* it is an .npz (else a folder) */
    int outputs_written;        /* files (or arrays) written */
    char outputs_file[64][256]; /* a folder's: each output's file name, without .npy */
    bool png_mask; /* the pictures are class masks (--mask, or the output's kind) */
    /* internal */
    bool classified, head;
    struct cJSON *held; /* --json: results of files that failed before the head */
    int64_t n_results;  /* --json: results written, for the commas */
    double *p;          /* scratch for one item's class values */
};

/* The picture --output-png writes for item `item` of file f: PATH itself
   for a .png PATH, else PATH/NNNNNN.png by f's place in the list
   (NNNNNN_K.png for item K of a .npy of several). */
void mps_infer_picture_path(const struct mps_infer_report *rep, const struct mps_infer_file *f, int64_t item, char *buf,
                            size_t size);
/* classes.c */
/* Classes per item of g's first output, or 0 when it is not [batch, K, 1...]. */
int64_t mps_infer_class_count(const struct mps_infer_group *g);
/* The top n classes of p[k] into idx, best first (ties: the lower index). */
void mps_infer_top(const double *p, int64_t k, int64_t n, int64_t *idx);
/* The NaNs among p[k]: an item with any has no top class. */
int64_t mps_infer_nan_count(const double *p, int64_t k);
/* Class c's label, or "" past the labels. */
const char *mps_infer_label(const struct mps_infer_result *r, int64_t c);
/* The classes of g's first output when it is [batch, K, 1...] f32 with K > 1, else 0. */
int64_t mps_infer_graph_classes(const struct mps_graph *g);
/* Decides r->output_kind from the model's metadata, its last op, else the values of g (NULL: none yet). */
void mps_infer_classify(struct mps_infer_result *r, const struct mps_infer_group *g);
/* Class values of item `item` of g's first output, converted by r->output_kind, into p[k]. */
void mps_infer_probabilities(const struct mps_infer_result *r, const struct mps_infer_group *g, int64_t item,
                             double *p, int64_t k);
/* The top class of p[k] (ties: the lower index), or -1 when a value is NaN. */
int64_t mps_infer_top1(const double *p, int64_t k);
/* The lines that open a text report, "model" and "backend" (eval's too). */
void mps_infer_text_head(const struct mps_infer_result *r);
/* A JSON object with schema_version, model{path,opset,ir_version,producer}
   and backend{name,device,reason,precision} (when one ran): what --json
   reports open with (eval's too). */
struct cJSON;
struct cJSON *mps_infer_json_head(const struct mps_infer_result *r);
/* Adds timings_ms (load, compile, decode, runs, total) of a streamed run (eval, quantize) to root. */
void mps_infer_json_stream_timings(struct cJSON *root, const struct mps_infer_result *r);
/* Reports r's current chunk (stream.h's mps_stream_fn, ctx a struct mps_infer_report). */
enum mps_status mps_infer_report_chunk(void *ctx, struct mps_infer_result *r, struct mps_error *err);
/* What comes after the last chunk: timings, counts, checks. False when out of memory. */
bool mps_infer_report_end(struct mps_infer_report *rep, struct mps_infer_result *r);
void mps_infer_report_free(struct mps_infer_report *rep);

#endif
