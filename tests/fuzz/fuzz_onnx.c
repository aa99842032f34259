/* fuzz_onnx.c: libFuzzer target for the ONNX loader: decoding, tensor and
   external-data reading, op mapping, constant folding and shape inference
   on arbitrary bytes. Any crash, leak, hang or sanitizer report is a bug;
   a refusal with a message is the expected outcome for almost every input.
   Each input is also walked as mps_onnx_load walks a file before reading
   it (from a memfd): a walk that refuses bytes the loader takes aborts.
   Built with -DMPSRUN_FUZZ=ON (clang); scripts/fuzz runs it. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mps_model *m = NULL;
    struct mps_error err = {{0}};
    int fd = memfd_create("fuzz_onnx", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    enum mps_status walked = mps_onnx_walk(fd, (int64_t)size, &err);
    close(fd);
    /* external data resolves inside a folder that does not exist: no file is read */
    enum mps_status loaded = mps_onnx_load_buffer(data, size, "/nonexistent/mpsrun-fuzz", NULL, &m, &err);
    if (loaded == MPS_OK)
        mps_model_free(m);
    if (walked != MPS_OK && loaded == MPS_OK)
        abort(); /* the walk refused a file the loader reads */
    return 0;
}
