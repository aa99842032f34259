#!/usr/bin/env bash
# check_sizes.sh SRC: no source file under src/ over 800 lines and no function
# over 150 (CONTRIBUTING.md: a file does one job, a function fits a screen or
# two). A function is what clang-format's Linux braces make of it: from a "{"
# in column 0 to the next "}" in column 0; its name is the line before.
# Lists every offender; fails if there is one.
set -uo pipefail
src=$1
max_file=800 max_fn=150
files=0 fns=0 failed=0
while IFS= read -r f; do
  files=$((files + 1))
  lines=$(wc -l <"$f")
  if [ "$lines" -gt "$max_file" ]; then
    echo "FAIL ${f#"$src"/}: $lines lines (at most $max_file)"
    failed=$((failed + 1))
  fi
  while IFS=$'\t' read -r n at name; do
    fns=$((fns + 1))
    if [ "$n" -gt "$max_fn" ]; then
      echo "FAIL ${f#"$src"/}:$at: $name: $n lines (at most $max_fn)"
      failed=$((failed + 1))
    fi
  done < <(awk '/^\{/ { start = NR; name = prev }
                /^\}/ && start { printf "%d\t%d\t%s\n", NR - start - 1, start, name; start = 0 }
                { prev = $0 }' "$f")
done < <(find "$src/src" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.m' \
                                    -o -name '*.def' \) | sort)
if [ "$files" -eq 0 ] || [ "$fns" -eq 0 ]; then
  echo "FAIL no source files or functions found under $src/src"
  failed=$((failed + 1))
fi
[ "$failed" -eq 0 ] && echo "ok   $files files of at most $max_file lines, $fns functions of at most $max_fn"
echo "$((failed == 0 ? 1 : 0)) passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
