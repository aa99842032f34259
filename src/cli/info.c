/* info.c: `mpsrun info [--json]`: version, the backends compiled in and whether
   each can run here (device, memory, or why not), the BLAS and its threads. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"
#include "cli.h"
#include "cpu/thread_pool.h"

/* Every backend mpsrun knows of, compiled in or not, and how to get it. */
static const struct {
    const char *name, *how;
} mps_info_known[] = {
    {"cpu", ""},
    {"cuda", "configure with a CUDA toolkit (-DMPSRUN_WITH_CUDA=ON)"},
    {"mps", "build on macOS (-DMPSRUN_WITH_METAL=ON)"},
};

#define MPS_INFO_N_KNOWN (int)(sizeof mps_info_known / sizeof mps_info_known[0])

struct mps_info_row {
    const char *name;
    const struct mps_backend *be;     /* NULL: not compiled in */
    enum mps_status status;           /* of its probe */
    struct mps_backend_info info;
    struct mps_error why;
    double core_trip_ns; /* cpu: mps_pool_round_trip_ns (0: one CPU) */
};

static void mps_info_probe(struct mps_info_row *rows)
{
    for (int i = 0; i < MPS_INFO_N_KNOWN; i++) {
        struct mps_info_row *r = &rows[i];
        *r = (struct mps_info_row){.name = mps_info_known[i].name};
        r->be = mps_backend_find(r->name);
        if (r->be)
            r->status = r->be->probe(&r->info, &r->why);
        else
            snprintf(r->why.msg, sizeof r->why.msg, "%s", mps_info_known[i].how);
        if (r->be == &mps_backend_cpu && r->status == MPS_OK)
            r->core_trip_ns = mps_pool_round_trip_ns();
    }
}

static int mps_info_json(const struct mps_info_row *rows)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "schema_version", 1);
    cJSON_AddStringToObject(root, "version", MPSRUN_VERSION);
    cJSON *backends = cJSON_AddArrayToObject(root, "backends");
    for (int i = 0; i < MPS_INFO_N_KNOWN; i++) {
        const struct mps_info_row *r = &rows[i];
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "name", r->name);
        cJSON_AddBoolToObject(b, "compiled", r->be != NULL);
        cJSON_AddBoolToObject(b, "available", r->be && r->status == MPS_OK);
        if (r->be && r->status == MPS_OK) {
            cJSON_AddStringToObject(b, "device", r->info.device);
            cJSON_AddNumberToObject(b, "memory_bytes", (double)r->info.memory_bytes);
            cJSON_AddNumberToObject(b, "threads", r->info.threads);
            cJSON_AddStringToObject(b, "detail", r->info.detail);
            if (r->be == &mps_backend_cpu && r->core_trip_ns > 0)
                cJSON_AddNumberToObject(b, "core_round_trip_ns", round(r->core_trip_ns));
        } else {
            cJSON_AddStringToObject(b, "reason", r->be ? r->why.msg : "not compiled in");
            if (!r->be)
                cJSON_AddStringToObject(b, "how", r->why.msg);
        }
        cJSON_AddItemToArray(backends, b);
    }
    bool printed = mps_cli_json_print(root);
    cJSON_Delete(root);
    if (!printed) {
        mps_cli_error("info", "out of memory");
        return MPS_EXIT_RUNTIME;
    }
    return MPS_EXIT_OK;
}

static int mps_info_text(const struct mps_info_row *rows)
{
    printf("mpsrun %s\n\nbackends:\n", MPSRUN_VERSION);
    for (int i = 0; i < MPS_INFO_N_KNOWN; i++) {
        const struct mps_info_row *r = &rows[i];
        if (r->be && r->status == MPS_OK) {
            printf("  %-5s %-16s %s, %.1f GiB\n", r->name, "available", r->info.device,
                   (double)r->info.memory_bytes / (1024.0 * 1024.0 * 1024.0));
            printf("  %-5s %-16s %s\n", "", "", r->info.detail);
            if (r->be == &mps_backend_cpu && r->core_trip_ns > 0)
                printf("  %-5s %-16s a cache line from one thread to another and back: %.0f ns\n", "", "",
                       r->core_trip_ns);
        } else {
            printf("  %-5s %-16s %s\n", r->name, r->be ? "unavailable" : "not compiled in", r->why.msg);
        }
    }
    return MPS_EXIT_OK;
}

int mps_cli_info(int argc, char **argv)
{
    struct arg_lit *json = arg_lit0(NULL, "json", "print one JSON object (schema_version 1)");
    struct arg_lit *help = arg_lit0("h", "help", "print this help");
    struct arg_end *end = arg_end(8);
    void *argtable[] = {json, help, end};
    bool done;
    int rc = mps_cli_parse(argc, argv, argtable, help, end,
                           "Shows the backends compiled into mpsrun, whether each can run on this machine\n"
                           "(device, memory, or the reason it cannot), and the CPU backend's BLAS.",
                           &done);
    if (!done) {
        struct mps_info_row rows[MPS_INFO_N_KNOWN];
        mps_info_probe(rows);
        rc = json->count ? mps_info_json(rows) : mps_info_text(rows);
    }
    arg_freetable(argtable, sizeof argtable / sizeof argtable[0]);
    return rc;
}
