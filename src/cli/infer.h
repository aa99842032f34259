/* infer.h: what infer.c (options, the run), input.c (input files into batches)
   and report.c (top-k, text and JSON) share. Internal to src/cli. */
#ifndef MPS_CLI_INFER_H
#define MPS_CLI_INFER_H

#include <stdbool.h>

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

/* One INPUT file, decoded. */
struct mps_infer_file {
    const char *path;
    char source[96];      /* "PNG gray 8-bit 28x28", "npy [1,1,28,28]" */
    int64_t items;        /* batch items it contributes */
};

/* A batch run as one: the input tensors of the graph, built from files. */
struct mps_infer_group {
    int first_file, n_files;          /* files [first, first + n) */
    struct mps_tensor in[8];          /* per graph input, owned */
    int n_in;
    struct mps_tensor *out;           /* per graph output, owned */
    int n_out;
};

struct mps_infer_result {
    struct mps_model *model;
    struct mps_model *labels_owner; /* the first load, when the model was loaded again for the batch */
    const struct mps_backend *backend;
    struct mps_backend_info device;
    char why_backend[256];
    const char *precision;
    struct mps_infer_prep prep;
    struct mps_infer_file *files;
    int n_files;
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
    double *t_runs;
    int n_runs;
    /* checks: NULL when not asked */
    const char *expect, *check_path;
    int64_t expect_class;         /* --expect resolved to an index */
    bool expect_ok, check_ok;
    bool compared;                /* the shapes agreed and check holds the comparison */
    struct mps_tolerance tol;     /* --rtol, --atol */
    struct mps_comparison check;
    char check_detail[512];
};

/* input.c: decodes the files (PNG or .npy) into groups for the loaded model m;
   *shape gets the graph input shape the groups need (batch resolved). */
enum mps_status mps_infer_inputs(struct mps_infer_result *r, char **paths, int n_paths, struct mps_shape *shape,
                                 struct mps_error *err, const char **bad_file);
void mps_infer_free_groups(struct mps_infer_result *r);

/* report.c */
/* Class probabilities of item i of group g's first output, converted by the output kind. */
void mps_infer_probabilities(const struct mps_infer_result *r, const struct mps_infer_group *g, int64_t item,
                             double *p, int64_t k);
/* The classes of g's first output when it is [batch, K, 1...] f32 with K > 1, else 0. */
int64_t mps_infer_graph_classes(const struct mps_graph *g);
/* Decides r->output_kind from the model's metadata or the values. */
void mps_infer_classify(struct mps_infer_result *r);
/* Index of the top class of each file, in file order, into top1[n_files]. */
void mps_infer_top1(const struct mps_infer_result *r, int64_t *top1);
void mps_infer_print_text(const struct mps_infer_result *r, bool quiet);
int mps_infer_print_json(const struct mps_infer_result *r);

#endif
