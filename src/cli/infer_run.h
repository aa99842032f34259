/* infer_run.h: what `mpsrun infer` does with each chunk beside reporting it,
   shared by infer.c (the command), infer_png.c (--output-png) and
   infer_rows.c (--expect's tally, --output, --outputs, --check). Internal to
   the infer command. */
#ifndef MPS_CLI_INFER_RUN_H
#define MPS_CLI_INFER_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "infer.h"
#include "npy.h"

/* What infer does with each chunk beside reporting it: --expect's tally,
   --check's copy of the first output, --output's file, the pictures. */
struct mps_infer_run {
    struct mps_infer_report rep;
    bool keep_going;
    int64_t expect_items, expect_bad; /* items judged, and those whose top class is not --expect's */
    char expect_first[384];           /* the first of those, said */
    struct mps_tensor ref;            /* --check's reference, read before anything runs */
    bool checking;                    /* --check: the first output of every item is kept */
    struct mps_tensor kept;           /* [rows so far, item...]: a row per item, one of NaN per failed file */
    int64_t kept_cap;                 /* rows kept has room for */
    int64_t rows;                     /* rows of the first output so far (in --output and kept) */
    int64_t *failed_rows;             /* the rows that stand for a failed input */
    int64_t n_failed_rows, cap_failed_rows;
    struct mps_npy_stream *npy; /* --output's file, opened when the first chunk has run */
    bool row_known;             /* the first output's rows have a shape (a chunk ran) */
    struct mps_shape row_item;  /* that shape, without the batch */
    enum mps_dtype row_dtype;
    bool write_failed;                /* writing it or a picture failed (the message names the file) */
    const char *png;                  /* --output-png: a .png file (one item), else a folder */
    bool png_mask;                    /* the output is a class mask (else an image) */
    int64_t png_written, png_failed;  /* pictures written; items whose picture could not be made */
    uint8_t *pixels;                  /* one picture's bytes */
    int64_t cap_pixels;
    bool stop_named;          /* the chunk function stopped the stream: stop_subject is its error's subject */
    const char *stop_subject; /* the input a picture failed for; NULL: the message names the option */
};

/* infer_png.c */
/* --output-png: whether the first output o can be pictures, and which kind
   (*is_mask: a class mask, else an image); a usage error naming the shape
   when it cannot. */
enum mps_status mps_infer_png_kind(const struct mps_value *o, bool mask, bool *is_mask, struct mps_error *err);
/* The chunk's pictures, one a first-output item, each written whole. */
enum mps_status mps_infer_pictures(struct mps_infer_run *run, struct mps_infer_result *r, struct mps_error *err);

/* infer_rows.c */
/* --expect: the chunk's items whose top class is not CLASS, counted and the first said. */
enum mps_status mps_infer_tally(struct mps_infer_run *run, const struct mps_infer_result *r, struct mps_error *err);
/* --output and --check: the chunk's rows of the first output (NaN rows for failed inputs). */
enum mps_status mps_infer_rows(struct mps_infer_run *run, struct mps_infer_result *r, struct mps_error *err);
/* --outputs: every output of the one run, as the model declares its types. */
enum mps_status mps_infer_write_outputs(struct mps_infer_run *run, const struct mps_infer_result *r,
                                        struct mps_error *err);
/* --check: the rows kept against the reference (r->check, r->check_detail). */
enum mps_status mps_infer_check(struct mps_infer_result *r, struct mps_infer_run *run, struct mps_error *err);

#endif
