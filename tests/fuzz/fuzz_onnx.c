/* fuzz_onnx.c: libFuzzer target for the ONNX loader: decoding, tensor and
   external-data reading, op mapping, constant folding and shape inference
   on arbitrary bytes. Any crash, leak, hang or sanitizer report is a bug;
   a refusal with a message is the expected outcome for almost every input.
   Built with -DMPSRUN_FUZZ=ON (clang); scripts/fuzz runs it. */
#include <stddef.h>
#include <stdint.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mps_model *m = NULL;
    struct mps_error err = {{0}};
    /* external data resolves inside a folder that does not exist: no file is read */
    if (mps_onnx_load_buffer(data, size, "/nonexistent/mpsrun-fuzz", NULL, &m, &err) == MPS_OK)
        mps_model_free(m);
    return 0;
}
