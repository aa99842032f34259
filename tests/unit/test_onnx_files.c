/* test_onnx_files.c DIR: loads every file make_bad_models.py wrote into DIR
   and checks the status and message its manifest expects: malformed files
   fail with MPS_ERR_MODEL (exit code 3 in the CLI) and a clear reason, never
   a crash or a leak (the suite also runs under ASan+UBSan). Valid files with
   rare forms load, and those in the table below compute the right numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model.h"

/* Files whose result is known: y for x = {1, 2, ...}. */
static const struct {
    const char *file;
    int n;
    float y[6];
} th_known[] = {
    {"legacy_axis_broadcast.onnx", 6, {2, 3, 4, 6, 7, 8}}, /* b = {1, 2} aligned at axis 0 of [2,3] */
    {"constant_node.onnx", 2, {2, 3}},                     /* x + 1 */
    {"float16_typed.onnx", 2, {2, 0}},                     /* x + {1, -2} from FLOAT16 bit patterns */
    {"bfloat16_typed.onnx", 2, {2, 0}},                    /* x + {1, -2} from BFLOAT16 bit patterns */
    {"bfloat16_raw.onnx", 2, {2.5f, 5}},                   /* x + {1.5, 3} from BFLOAT16 raw_data */
    {"rnn_activations.onnx", 4, {1, 3.5f, 2, 6.5f}},       /* Y[t][dir]: Relu(x) forward, 3 x + 0.5 reverse */
    {"typed_fields.onnx", 6, {2.5f, 3.5f, 4.5f, 9.5f, 11.5f, 13.5f}}, /* x * a + 3 * 0.5 */
    {"chain_100000_reversed.onnx", 2, {1, 2}},                        /* x negated 100,000 times */
    {"if_const_cond.onnx", 2, {2, 3}},                                /* the then branch: x + 1 */
    {"if_shape_cond.onnx", 2, {-1, -2}},                              /* 2 > 1: the then branch, -x */
    {"if_outer_scope.onnx", 2, {3, 5}},                               /* x * 2, then + 1 in the branch */
    {"seq_edit.onnx", 3, {2, 1, 3}},                                  /* x split, x[0] erased, put back at 1 */
    {"scan8_batch2_reverse.onnx", 6, {3, 5, 6, 6, 11, 15}},           /* running sums from the end, per row */
    {"dq_const_weights.onnx", 6, {2, 2, 13, 4, 7, 4}}, /* x + (w - wz) * ws along axis 1, folded at load */
    {"unique_runtime.onnx", 4, {0, 1, 2, 3}}, /* floor(x / 2) = 0 1 1 2 2 3, its distinct values: a size the run's */
};

static void th_check_numbers(const char *file, struct mps_model *m)
{
    for (size_t k = 0; k < sizeof th_known / sizeof th_known[0]; k++) {
        if (strcmp(th_known[k].file, file) != 0)
            continue;
        const struct mps_value *xv = &m->graph->values[m->graph->inputs[0]];
        float x[6] = {1, 2, 3, 4, 5, 6};
        struct mps_tensor in = mps_tensor_make(MPS_F32, &xv->shape, x), out;
        struct mps_error err = {{0}};
        if (th_run(&mps_backend_cpu, m->graph, &in, &out, &err)) {
            th_fail("%s runs: %s", file, err.msg);
            return;
        }
        bool same = mps_shape_numel(&out.shape) == th_known[k].n;
        for (int i = 0; same && i < th_known[k].n; i++)
            same = ((float *)out.data)[i] == th_known[k].y[i];
        th_check(same, "%s computes the expected values", file);
        th_free_tensors(&out, 1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_onnx_files DIR\n");
        return 2;
    }
    char path[1024], line[1024];
    snprintf(path, sizeof path, "%s/manifest.txt", argv[1]);
    FILE *f = fopen(path, "r");
    if (!f) {
        th_fail("cannot read %s", path);
        return th_summary();
    }
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *file = strtok(line, "\t"), *status = strtok(NULL, "\t"), *text = strtok(NULL, "\t");
        if (!file || !status)
            continue;
        snprintf(path, sizeof path, "%s/%s", argv[1], file);
        struct mps_model *m = NULL;
        struct mps_error err = {{0}};
        enum mps_status st = mps_onnx_load(path, NULL, &m, &err);
        bool want_ok = strcmp(status, "ok") == 0;
        if (want_ok) {
            if (th_check(st == MPS_OK, "%s loads%s%s", file, st ? ": " : "", st ? err.msg : ""))
                th_check_numbers(file, m);
            if (st == MPS_OK && strcmp(file, "metadata.onnx") == 0) {
                const char *labels = mps_model_meta(m, "labels"), *mean = mps_model_meta(m, "mean");
                th_check(labels && mean && !strcmp(labels, "cat,dog") && !strcmp(mean, "0.5") &&
                             !mps_model_meta(m, "std") && !strcmp(m->producer, "mpsrun-tests") && m->opset == 13,
                         "metadata.onnx: metadata_props, producer and opset are read");
            }
        } else {
            th_check(st == MPS_ERR_MODEL && (!text || strstr(err.msg, text)), "%s is refused (%s): %s", file,
                     text ? text : "any reason", err.msg);
        }
        mps_model_free(m);
    }
    fclose(f);
    return th_summary();
}
