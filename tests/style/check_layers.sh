#!/usr/bin/env bash
# check_layers.sh SRC: each backend shares nothing but the core's headers.
# The core (src/tensor/*) includes nothing of a backend; the CPU backend
# (src/tensor/cpu) nothing of the GPU backends; a GPU backend (src/gpu/X)
# nothing of the CPU backend or of another GPU backend. CMake builds each as
# a library linking the core alone (mpsrun_core, mpsrun_cpu, mpsrun_cuda,
# mpsrun_metal_lower, mpsrun_metal); this catches the include that would
# tie two of them together before a link on another platform does.
set -uo pipefail
src=$1
passed=0 failed=0
check() { # what, the forbidden include pattern (an ERE from the opening quote), files...
  local what=$1 pattern=$2
  shift 2
  local hits
  hits=$(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($pattern)" "$@" 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "FAIL $what:"
    echo "$hits" | sed "s|^$src/|     |"
    failed=$((failed + 1))
  else
    echo "ok   $what"
    passed=$((passed + 1))
  fi
}
shopt -s nullglob
core=("$src"/src/tensor/*.[ch])
cpu=("$src"/src/tensor/cpu/*.[ch])
cuda=("$src"/src/gpu/cuda/*.c "$src"/src/gpu/cuda/*.h "$src"/src/gpu/cuda/*.cu "$src"/src/gpu/cuda/*.cuh)
metal=("$src"/src/gpu/metal/*.c "$src"/src/gpu/metal/*.h "$src"/src/gpu/metal/*.m)
check "the core (${#core[@]} files) includes no backend's header" '[^"]*(cpu|gpu)/|(kernels|pgemm|isa|thread_pool|ukernel[a-z0-9_]*|cuda_[a-z_]*|lower|bridge|nodes)\.h"' "${core[@]}"
check "the cpu backend (${#cpu[@]} files) includes no GPU backend's header" '[^"]*gpu/|(cuda_[a-z_]*|lower|bridge|nodes)\.h"' "${cpu[@]}"
check "cuda (${#cuda[@]} files) includes nothing of the cpu or Metal backends" '[^"]*(cpu|metal)/|(kernels|pgemm|isa|thread_pool|ukernel[a-z0-9_]*|lower|bridge)\.h"' "${cuda[@]}"
check "Metal (${#metal[@]} files) includes nothing of the cpu or cuda backends" '[^"]*(cpu|cuda)/|(kernels|pgemm|isa|thread_pool|ukernel[a-z0-9_]*|cuda_[a-z_]*|nodes)\.h"' "${metal[@]}"
echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
