/* eval.c: `mpsrun eval MODEL DIR`: a classifier's accuracy on a folder of
   class subfolders (each named by a class index or label): top-1 and top-5
   accuracy, per-class precision and recall, the confusion matrix; text or
   JSON. The images stream through as in infer (stream.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "cli.h"
#include "infer.h"
#include "inputs.h"
#include "svg.h"
#include "stream.h"

struct mps_eval {
    int64_t k;          /* classes */
    bool keep_going;    /* a failed image is named as it is met (else the stream's stop names it) */
    int64_t *truth;     /* per input of the list: its folder's class */
    int64_t *confusion; /* [k][k]: true class row, predicted column */
    int64_t *images;    /* per class: images of it run */
    int64_t top1, top5; /* items whose class is first, among the first five */
    int64_t no_class;   /* items whose output held NaN: counted wrong, in no column */
    int64_t failed;
    int n_folders;
    char **folder; /* per class: its folder's name, or NULL */
    double *p;
};

/* The class a folder name stands for: an index, the exact label, else the
   one label equal to it ignoring case; -1 if none. */
static int64_t mps_eval_class(const struct mps_infer_result *r, int64_t k, const char *name)
{
    char *end;
    long long v = strtoll(name, &end, 10);
    if (end != name && !*end)
        return v >= 0 && v < k ? v : -1;
    int64_t folded = -1, n_folded = 0;
    for (int64_t c = 0; c < r->n_labels && c < k; c++) {
        if (!strcmp(r->labels[c], name))
            return c;
        if (!strcasecmp(r->labels[c], name) && n_folded++ == 0)
            folded = c;
    }
    return n_folded == 1 ? folded : -1;
}

/* The class folders of dir, in name order, walked into list with e->truth. */
static enum mps_status mps_eval_folders(struct mps_eval *e, const struct mps_infer_result *r, const char *dir,
                                        struct mps_inputs *list, struct mps_error *err)
{
    char **names;
    size_t n;
    enum mps_status st = mps_inputs_names(dir, &names, &n, err);
    char path[4096];
    size_t cap_truth = 0;
    for (size_t i = 0; !st && i < n; i++) {
        struct stat s;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (stat(path, &s) != 0 || !S_ISDIR(s.st_mode)) {
            size_t len = strlen(names[i]);
            if (len > 4 && (!strcasecmp(names[i] + len - 4, ".png") || !strcasecmp(names[i] + len - 4, ".npy")))
                st = mps_fail(err, MPS_ERR_INPUT, "%s: an image outside the class folders (DIR/CLASS/image)", path);
            continue; /* other files (a README, a labels list) are not inputs */
        }
        int64_t c = mps_eval_class(r, e->k, names[i]);
        if (c < 0) {
            st = mps_fail(err, MPS_ERR_INPUT, "%s: names no class: give class folders named by index (0 to %lld)%s",
                          path, (long long)e->k - 1, r->n_labels ? " or by label" : "");
            break;
        }
        if (e->folder[c]) {
            st = mps_fail(err, MPS_ERR_INPUT, "%s: class %lld already has the folder '%s'", path, (long long)c,
                          e->folder[c]);
            break;
        }
        e->folder[c] = strdup(names[i]);
        e->n_folders++;
        int64_t before = list->n;
        if ((st = mps_inputs_add(list, path, err)))
            break;
        if ((size_t)list->n > cap_truth) {
            cap_truth = (size_t)list->n * 2;
            int64_t *grown = realloc(e->truth, sizeof *grown * cap_truth);
            if (!grown) {
                st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
                break;
            }
            e->truth = grown;
        }
        for (int64_t j = before; j < list->n; j++)
            e->truth[j] = c;
    }
    mps_inputs_names_free(names, n);
    list->done = true;
    if (!st && !e->n_folders)
        st = mps_fail(err, MPS_ERR_INPUT, "%s: no class folders in it (DIR/CLASS/image)", dir);
    else if (!st && !list->n)
        st = mps_fail(err, MPS_ERR_INPUT, "%s: its class folders hold no .png or .npy file", dir);
    return st;
}

static enum mps_status mps_eval_chunk(void *ctx, struct mps_infer_result *r, struct mps_error *err)
{
    struct mps_eval *e = ctx;
    (void)err;
    if (!r->output_kind && r->n_groups)
        mps_infer_classify(r, &r->groups[0]);
    int64_t row = 0, k = e->k;
    for (int f = 0; f < r->n_files; f++) {
        const struct mps_infer_file *file = &r->files[f];
        if (file->st) {
            if (e->keep_going)
                mps_cli_error(file->path, "%s", file->error);
            e->failed++;
            continue;
        }
        int64_t truth = e->truth[file->index];
        for (int64_t it = 0; it < file->items; it++, row++) {
            mps_infer_probabilities(r, &r->groups[0], row, e->p, k);
            int64_t top = mps_infer_top1(e->p, k), above = 0;
            e->images[truth]++;
            if (top < 0) {
                e->no_class++;
                continue;
            }
            e->confusion[truth * k + top]++;
            e->top1 += top == truth;
            for (int64_t c = 0; c < k; c++) /* classes ranked above the true one (ties: the lower index first) */
                above += e->p[c] > e->p[truth] || (e->p[c] == e->p[truth] && c < truth);
            e->top5 += above < 5;
        }
    }
    return MPS_OK;
}

/* precision of class c: the share of items predicted c that are c; NaN when none is */
static double mps_eval_precision(const struct mps_eval *e, int64_t c, int64_t *predicted)
{
    *predicted = 0;
    for (int64_t t = 0; t < e->k; t++)
        *predicted += e->confusion[t * e->k + c];
    return *predicted ? (double)e->confusion[c * e->k + c] / (double)*predicted : NAN;
}

static void mps_eval_text(const struct mps_eval *e, const struct mps_infer_result *r, const char *dir)
{
    char a[32], b[32], c[32];
    int64_t n = r->n_items, k = e->k;
    mps_infer_text_head(r);
    printf("data       %s: %d class folders, %s images%s\n", mps_cli_vis(dir), e->n_folders,
           mps_cli_count(n, a, sizeof a), e->failed ? " run" : "");
    printf("top-1      %7.3f%%  (%s of %s)\n", n ? 100.0 * (double)e->top1 / (double)n : 0.0,
           mps_cli_count(e->top1, b, sizeof b), mps_cli_count(n, c, sizeof c));
    if (k > 5)
        printf("top-5      %7.3f%%  (%s of %s)\n", n ? 100.0 * (double)e->top5 / (double)n : 0.0,
               mps_cli_count(e->top5, b, sizeof b), mps_cli_count(n, c, sizeof c));
    if (e->no_class)
        printf("no class   %s images: their outputs hold NaN (counted wrong)\n",
               mps_cli_count(e->no_class, a, sizeof a));
    printf("per class  %-18s %9s %9s %8s\n", "", "precision", "recall", "images");
    for (int64_t cl = 0; cl < k; cl++) {
        int64_t predicted;
        double prec = mps_eval_precision(e, cl, &predicted);
        char label[64];
        snprintf(label, sizeof label, "%lld %s", (long long)cl, mps_cli_vis(cl < r->n_labels ? r->labels[cl] : ""));
        printf("           %-18.18s ", label);
        if (predicted)
            printf("%8.2f%% ", 100.0 * prec);
        else
            printf("%9s ", "-");
        if (e->images[cl])
            printf("%8.2f%% ", 100.0 * (double)e->confusion[cl * k + cl] / (double)e->images[cl]);
        else
            printf("%9s ", "-");
        printf("%8s\n", mps_cli_count(e->images[cl], a, sizeof a));
    }
    printf("confusion  rows: true class, columns: predicted class\n      ");
    for (int64_t cl = 0; cl < k; cl++)
        printf(" %6lld", (long long)cl);
    printf("\n");
    for (int64_t t = 0; t < k; t++) {
        printf("%6lld", (long long)t);
        for (int64_t p = 0; p < k; p++)
            printf(" %6lld", (long long)e->confusion[t * k + p]);
        printf("\n");
    }
    double rate = r->t_total > 0 ? (double)n * 1e3 / r->t_total : 0;
    printf("timings    load %.2f ms, compile %.2f ms, decode %.2f ms (beside the runs), runs %.2f ms\n", r->t_load,
           r->t_compile, r->t_preprocess, r->t_run);
    printf("           %s images in %.3f s: %s images/s\n", mps_cli_count(n, a, sizeof a), r->t_total / 1e3,
           mps_cli_count((int64_t)(rate + 0.5), b, sizeof b));
    if (e->failed)
        printf("failed     %s images (each named on stderr)\n", mps_cli_count(e->failed, a, sizeof a));
}

static bool mps_eval_json(const struct mps_eval *e, const struct mps_infer_result *r, const char *dir)
{
    int64_t n = r->n_items, k = e->k;
    cJSON *root = mps_infer_json_head(r);
    cJSON_AddStringToObject(root, "folder", dir);
    cJSON_AddNumberToObject(root, "images", (double)n);
    cJSON_AddNumberToObject(root, "failed", (double)e->failed);
    cJSON_AddNumberToObject(root, "no_class", (double)e->no_class);
    cJSON_AddNumberToObject(root, "top1", n ? (double)e->top1 / (double)n : 0);
    cJSON_AddNumberToObject(root, "top5", n ? (double)e->top5 / (double)n : 0);
    cJSON_AddNumberToObject(root, "correct1", (double)e->top1);
    cJSON_AddNumberToObject(root, "correct5", (double)e->top5);
    cJSON *classes = cJSON_AddArrayToObject(root, "classes"), *conf = cJSON_AddArrayToObject(root, "confusion");
    for (int64_t c = 0; c < k; c++) {
        int64_t predicted;
        double prec = mps_eval_precision(e, c, &predicted);
        cJSON *o = cJSON_CreateObject(), *row = cJSON_CreateArray();
        cJSON_AddNumberToObject(o, "index", (double)c);
        cJSON_AddStringToObject(o, "label", c < r->n_labels ? r->labels[c] : "");
        if (e->folder[c])
            cJSON_AddStringToObject(o, "folder", e->folder[c]);
        cJSON_AddNumberToObject(o, "images", (double)e->images[c]);
        cJSON_AddNumberToObject(o, "predicted", (double)predicted);
        if (predicted)
            cJSON_AddNumberToObject(o, "precision", prec);
        else
            cJSON_AddNullToObject(o, "precision");
        if (e->images[c])
            cJSON_AddNumberToObject(o, "recall", (double)e->confusion[c * k + c] / (double)e->images[c]);
        else
            cJSON_AddNullToObject(o, "recall");
        cJSON_AddItemToArray(classes, o);
        for (int64_t p = 0; p < k; p++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber((double)e->confusion[c * k + p]));
        cJSON_AddItemToArray(conf, row);
    }
    mps_infer_json_stream_timings(root, r);
    cJSON_AddNumberToObject(root, "images_per_s", r->t_total > 0 ? (double)n * 1e3 / r->t_total : 0);
    bool ok = mps_cli_json_print(root);
    cJSON_Delete(root);
    return ok;
}

/* --plot: the confusion matrix as a heat map beside each class's recall
   (with more than 40 classes, the 40 of lowest recall). */
static enum mps_status mps_eval_plot(const struct mps_eval *e, const struct mps_infer_result *r, const char *path,
                                     const char *dir, struct mps_error *err)
{
    int k = (int)e->k, shown = k > 40 ? 40 : k;
    char **names = calloc((size_t)k, sizeof *names);
    const char **bar_labels = calloc((size_t)k, sizeof *bar_labels);
    double *recall = calloc((size_t)k, sizeof *recall), *bar_values = calloc((size_t)k, sizeof *bar_values);
    int *order = calloc((size_t)k, sizeof *order);
    enum mps_status st = MPS_OK;
    for (int c = 0; names && c < k; c++) {
        char buf[96];
        snprintf(buf, sizeof buf, "%d %s", c, c < r->n_labels ? r->labels[c] : "");
        if (!(names[c] = strdup(buf)))
            break;
    }
    if (!names || !bar_labels || !recall || !bar_values || !order || !names[k - 1]) {
        st = mps_fail(err, MPS_ERR_RUNTIME, "out of memory");
        goto out;
    }
    for (int c = 0; c < k; c++) {
        recall[c] =
            e->images[c] ? 100.0 * (double)e->confusion[(size_t)c * (size_t)k + (size_t)c] / (double)e->images[c] : NAN;
        order[c] = c;
    }
    if (k > shown) /* the classes of lowest recall first (insertion sort: a few thousand at most) */
        for (int i = 1; i < k; i++)
            for (int j = i; j > 0 && !(recall[order[j - 1]] <= recall[order[j]]); j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
    for (int i = 0; i < shown; i++) {
        bar_labels[i] = names[order[i]];
        bar_values[i] = recall[order[i]];
    }
    char title[600], sub[96], count[32];
    snprintf(title, sizeof title, "eval %s on %s: top-1 %.2f%% of %s images", r->model->path, dir,
             r->n_items ? 100.0 * (double)e->top1 / (double)r->n_items : 0.0,
             mps_cli_count(r->n_items, count, sizeof count));
    snprintf(sub, sizeof sub, k > shown ? "recall: the %d classes of lowest" : "recall of each class", shown);
    double heat_h = fmax(560, 14.0 * k + 200), bars_h = 100 + 22.0 * shown;
    struct mps_svg *svg;
    if ((st = mps_svg_open(path, 1240, 40 + fmax(heat_h, bars_h), title, &svg, err)))
        goto out;
    mps_svg_heat(svg, &(struct mps_plot_box){0, 36, 660, heat_h},
                 &(struct mps_plot_heat){.title = "confusion matrix (each row shaded by its share of the row)",
                                         .xlabel = "predicted class",
                                         .ylabel = "true class",
                                         .labels = (const char *const *)names,
                                         .counts = e->confusion,
                                         .n = k});
    mps_svg_bars(svg, &(struct mps_plot_box){680, 36, 560, bars_h},
                 &(struct mps_plot_bars){.title = sub,
                                         .xlabel = "recall: the share of the class's images given it",
                                         .labels = bar_labels,
                                         .values = bar_values,
                                         .n = shown,
                                         .unit = "%",
                                         .max = 100});
    st = mps_svg_close(svg, err);
out:
    for (int c = 0; names && c < k; c++)
        free(names[c]);
    free(names);
    free(bar_labels);
    free(recall);
    free(bar_values);
    free(order);
    return st;
}

int mps_cli_eval(int argc, char **argv)
{
    struct arg_file *model = arg_file1(NULL, NULL, "MODEL", "an ONNX classifier");
    struct arg_file *dir = arg_file1(NULL, NULL, "DIR",
                                     "a folder of class folders (DIR/CLASS/images), each named "
                                     "by class index or label");
    struct mps_infer_args a;
    mps_infer_args_make(&a);
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *keep_going = arg_lit0(NULL, "keep-going",
                                          "an image that fails is said and skipped; exit 4 at the "
                                          "end if any did");
    struct arg_file *plot = arg_file0(NULL, "plot", "FILE.svg", "draw the confusion matrix and each class's recall");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(20);
    void *argtable[] = {model, dir,    a.backend, a.precision, a.threads, a.batch, a.labels, a.mean,
                        a.std, a.size, json,      keep_going,  plot,      help,    end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Runs the classifier MODEL over every image in DIR's class folders and prints\n"
                           "its top-1 and top-5 accuracy, each class's precision and recall, and the\n"
                           "confusion matrix. The images stream through in batches, as with infer.",
                           &done);
    struct mps_infer_result r = {.top_k = 5};
    struct mps_eval e = {0};
    struct mps_inputs list = {0};
    struct mps_error err = {{0}};
    struct mps_compile_opts co = {0};
    const char *subject = NULL;
    int n_batch;
    enum mps_status st = MPS_OK;
    if (done)
        goto out;
    if ((st = mps_infer_args_check(&a, &r, &co, &n_batch, &err)) || (st = mps_cli_plot_path(plot, &err)) ||
        (st = mps_infer_setup(&r, model->filename[0], &a, &subject, &err)))
        goto out;
    e.k = mps_infer_graph_classes(r.model->graph);
    if (!e.k || r.model->graph->n_inputs != 1) {
        st = mps_fail(&err, MPS_ERR_USAGE, "eval needs a classifier: one input, and an output of [batch, classes]");
        goto out;
    }
    e.confusion = calloc((size_t)(e.k * e.k), sizeof *e.confusion);
    e.images = calloc((size_t)e.k, sizeof *e.images);
    e.folder = calloc((size_t)e.k, sizeof *e.folder);
    e.p = malloc(sizeof *e.p * (size_t)e.k);
    if (!e.confusion || !e.images || !e.folder || !e.p) {
        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
        goto out;
    }
    subject = NULL;
    if ((st = mps_eval_folders(&e, &r, dir->filename[0], &list, &err)))
        goto out;
    subject = model->filename[0];
    e.keep_going = keep_going->count > 0;
    struct mps_stream_opts so = {.batch = a.batch->count ? n_batch : mps_stream_default_batch(&r),
                                 .keep_going = keep_going->count > 0,
                                 .co = &co,
                                 .backend = a.backend->count ? a.backend->sval[0] : "auto",
                                 .progress = true};
    st = mps_stream_run(&r, &list, &so, mps_eval_chunk, &e, &err, &subject);
    if (st)
        goto out;
    if (!(json->count ? mps_eval_json(&e, &r, dir->filename[0]) : (mps_eval_text(&e, &r, dir->filename[0]), true))) {
        st = mps_fail(&err, MPS_ERR_RUNTIME, "out of memory");
    } else if (plot->count && (st = mps_eval_plot(&e, &r, plot->filename[0], dir->filename[0], &err))) {
        subject = NULL; /* the message names the file */
    } else if (e.failed) {
        char x[32], y[32];
        st = mps_fail(&err, MPS_ERR_INPUT, "%s of %s images failed (each named above)",
                      mps_cli_count(e.failed, x, sizeof x), mps_cli_count(list.n, y, sizeof y));
        subject = NULL;
    }
out:
    if (st) {
        mps_cli_error(subject, "%s", err.msg);
        rc = mps_cli_exit_code(st);
    }
    for (int64_t c = 0; e.folder && c < e.k; c++)
        free(e.folder[c]);
    free(e.folder);
    free(e.confusion);
    free(e.images);
    free(e.truth);
    free(e.p);
    mps_inputs_free(&list);
    free(r.t_runs);
    mps_model_free(r.model);
    mps_onnx_close(r.file);
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
