#!/usr/bin/env bash
# gpu-test.sh [--prebuilt DIR] [--data DIR]: the op test, the model tests,
# bench's resident timing and the ONNX conformance suite with the CUDA
# backend, on a machine with an NVIDIA GPU. Builds with CUDA into build-cuda/
# (after ./scripts/setup), or uses the binaries in DIR (bin/, lib/) built
# elsewhere. Prints the same pass/fail/skip
# counts as CI does for the CPU; exits non-zero when a test fails or when the
# CUDA backend is not available (a GPU test that skips the GPU proves nothing).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prebuilt="" data=/usr/share/libonnx-testdata/data
while [ $# -gt 0 ]; do
  case $1 in
  --prebuilt) prebuilt=$2; shift 2 ;;
  --data) data=$2; shift 2 ;;
  *) echo "usage: gpu-test.sh [--prebuilt DIR] [--data DIR]" >&2; exit 2 ;;
  esac
done
if [ -n "$prebuilt" ]; then
  bin=$prebuilt/bin
  export LD_LIBRARY_PATH=$prebuilt/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
else
  "$root/scripts/setup"
  cmake -S "$root" -B "$root/build-cuda" -DCMAKE_BUILD_TYPE=Release -DMPSRUN_WITH_CUDA=ON >/dev/null || exit 1
  cmake --build "$root/build-cuda" -j "$(nproc)" || exit 1
  bin=$root/build-cuda
fi
"$bin/mpsrun" info
if ! "$bin/mpsrun" info --json | grep -A3 '"name":[[:space:]]*"cuda"' | grep -q '"available":[[:space:]]*true'; then
  echo "gpu-test: the CUDA backend is not available here" >&2
  exit 1
fi
status=0
run() { # run NAME COMMAND...: one test, its closing count line kept
  echo "== $1"
  "${@:2}" >"/tmp/mpsrun-gpu-$1.log" 2>&1
  local rc=$?
  grep -E '^(FAIL|skip backend)' "/tmp/mpsrun-gpu-$1.log" | head -40
  tail -1 "/tmp/mpsrun-gpu-$1.log"
  [ $rc -eq 0 ] || status=1
}
run ops "$bin/test_ops"
run conv "$bin/test_conv"
run models "$bin/test_models"
run memplan "$bin/test_memplan"
run bench python3 "$root/tests/gpu/bench_check.py" "$bin/mpsrun" "$root/models/mnist_cnn.onnx"
run conformance "$bin/conformance" "$root/tests/conformance/expected_pass.txt" "$data/node" "$data/pytorch-converted" \
  "$data/pytorch-operator" "$data/simple"
exit $status
