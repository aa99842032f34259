#!/usr/bin/env bash
# check_waits.sh SRC: the CUDA kernels launch programmatically (common.cuh:
# mps_cu_launch lets a kernel start while the one before it still runs), which
# is safe only when every kernel waits for its predecessor before it touches
# memory. Checks, without a GPU, that every __global__ function's body begins
# with mps_cu_wait(), and that no kernel is launched with <<<>>> (which would
# skip the launch attribute, harmless, but also the review of the wait). A
# kernel may instead begin with a call to a mps_cu_*_then_wait function (its
# result maybe assigned to a variable), which reads only constants (weights: no
# kernel writes them) and must end with mps_cu_wait() (then maybe a return).
set -uo pipefail
src=$1
pass=0 fail=0
for f in "$src"/src/gpu/cuda/*.cu; do
  # each kernel: the line after the body's opening brace
  while IFS=: read -r line name; do
    first=$(awk -v n="$line" 'NR > n && /^\{$/ { getline; print; exit }' "$f")
    if [[ $first =~ ^[[:space:]]*mps_cu_wait\(\)\; ]]; then
      pass=$((pass + 1))
    elif [[ $first =~ ^[[:space:]]*([a-z0-9_]+\ [a-z0-9_]+\ =\ )?(mps_cu_[a-z0-9_]*_then_wait)(<[A-Za-z0-9_]*>)?\( ]]; then
      fn=${BASH_REMATCH[2]}
      # the function's last statement (the line before its closing brace), or the
      # one before a closing return of a variable
      last=$(awk -v fn="$fn" '$0 ~ "^__device__ .*" fn "\\(" { on = 1 }
                              on && /^\}$/ { print (prev ~ /^ *return [a-z0-9_]+;$/ ? prev2 : prev); exit }
                              { prev2 = prev; prev = $0 }' "$f")
      if [[ $last =~ ^[[:space:]]*mps_cu_wait\(\)\; ]]; then
        pass=$((pass + 1))
      else
        echo "FAIL $(basename "$f"):$line: kernel $name begins with $fn," \
             "which does not end with mps_cu_wait(): '$last'"
        fail=$((fail + 1))
      fi
    else
      echo "FAIL $(basename "$f"):$line: kernel $name does not begin with mps_cu_wait(): '$first'"
      fail=$((fail + 1))
    fi
  done < <(grep -n '__global__' "$f" |
           sed -E 's/^([0-9]+):.*void (__launch_bounds__\([^)]*\) )?([a-z0-9_]+)\(.*/\1:\3/')
  if grep -n '<<<' "$f"; then
    echo "FAIL $(basename "$f"): launches a kernel with <<<>>>, not mps_cu_launch"
    fail=$((fail + 1))
  fi
done
[ $pass -gt 0 ] || { echo "FAIL no kernels found under $src/src/gpu/cuda"; fail=$((fail + 1)); }
echo "$pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
