/* main.c: `mpsrun <command> [options]`: finds the subcommand and hands it argv. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "outfile.h"

static const struct mps_cli_command mps_cli_commands[] = {
    {"infer", "run a model on PNG or .npy inputs: top classes, outputs, timings, checks", mps_cli_infer},
    {"bench", "time matmul or a model on each backend, beside the vendor library; --profile per node",
     mps_cli_bench},
    {"eval", "a classifier's accuracy on a folder of class folders: top-1, top-5, per class, confusion",
     mps_cli_eval},
    {"quantize", "write a model's int8 form (QDQ) from a float one and calibration inputs", mps_cli_quantize},
    {"inspect", "a model's inputs, outputs, layers, shapes, parameters, FLOPs, memory, backends", mps_cli_inspect},
    {"info", "backends compiled in and available, devices, memory, BLAS configuration", mps_cli_info},
};

#define MPS_CLI_N_COMMANDS (int)(sizeof mps_cli_commands / sizeof mps_cli_commands[0])

static void mps_cli_usage(FILE *f)
{
    fprintf(f, "usage: mpsrun <command> [options]\n"
               "       mpsrun <command> --help\n"
               "       mpsrun --version\n\n"
               "mpsrun runs small neural networks stored as ONNX files on the CPU or a GPU.\n\n"
               "commands:\n");
    for (int i = 0; i < MPS_CLI_N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", mps_cli_commands[i].name, mps_cli_commands[i].summary);
    fprintf(f, "\nexit codes: 0 ok, 1 runtime or device failure, 2 usage error, 3 model invalid or\n"
               "unsupported, 4 input file invalid, 5 a check failed\n");
}

static const struct mps_cli_command *mps_cli_find(const char *name)
{
    for (int i = 0; i < MPS_CLI_N_COMMANDS; i++)
        if (strcmp(mps_cli_commands[i].name, name) == 0)
            return &mps_cli_commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    mps_out_signals(); /* a signal removes the files being written before it ends the process */
    if (argc < 2) {
        mps_cli_usage(stderr);
        return MPS_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("mpsrun %s\n", MPSRUN_VERSION);
        return MPS_EXIT_OK;
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        mps_cli_usage(stdout);
        return MPS_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) { /* `mpsrun help info` is `mpsrun info --help` */
        const struct mps_cli_command *c = argc > 2 ? mps_cli_find(argv[2]) : NULL;
        if (!c) {
            mps_cli_usage(argc > 2 ? stderr : stdout);
            return argc > 2 ? MPS_EXIT_USAGE : MPS_EXIT_OK;
        }
        char *sub[] = {argv[2], "--help", NULL};
        return c->main(2, sub);
    }
    const struct mps_cli_command *c = mps_cli_find(cmd);
    if (!c) {
        mps_cli_error(NULL, "unknown command '%s' (see mpsrun --help)", cmd);
        return MPS_EXIT_USAGE;
    }
    return c->main(argc - 1, argv + 1);
}
