#!/usr/bin/env bash
# check_waits.sh SRC: the CUDA kernels launch programmatically (common.cuh:
# mps_cu_launch lets a kernel start while the one before it still runs), which
# is safe only when every kernel waits for its predecessor before it touches
# memory. Checks, without a GPU, that every __global__ function's body begins
# with mps_cu_wait(), and that no kernel is launched with <<<>>> (which would
# skip the launch attribute, harmless, but also the review of the wait).
set -uo pipefail
src=$1
pass=0 fail=0
for f in "$src"/src/gpu/cuda/*.cu; do
  # each kernel: the line after the body's opening brace
  while IFS=: read -r line name; do
    first=$(awk -v n="$line" 'NR > n && /^\{$/ { getline; print; exit }' "$f")
    if [[ $first =~ ^[[:space:]]*mps_cu_wait\(\)\; ]]; then
      pass=$((pass + 1))
    else
      echo "FAIL $(basename "$f"):$line: kernel $name does not begin with mps_cu_wait(): '$first'"
      fail=$((fail + 1))
    fi
  done < <(grep -n '__global__' "$f" | sed -E 's/^([0-9]+):.*void ([a-z0-9_]+)\(.*/\1:\2/')
  if grep -n '<<<' "$f"; then
    echo "FAIL $(basename "$f"): launches a kernel with <<<>>>, not mps_cu_launch"
    fail=$((fail + 1))
  fi
done
[ $pass -gt 0 ] || { echo "FAIL no kernels found under $src/src/gpu/cuda"; fail=$((fail + 1)); }
echo "$pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
