#!/usr/bin/env bash
# check_docs.sh SRC BUILD: the documents agree with the code where a script can
# read both. README.md stays a manual (at most 600 lines); CONTRIBUTING.md's
# test table has a row for every CTest test of BUILD and none for a test that
# does not exist; docs/design.md's layout names every .c, .cu and .m file under
# src/; the counts the documents give (test_ops's and metal_lower's rows, the
# conformance tests expected to pass, the suite's size where its data is
# installed) are the counts in the code.
set -uo pipefail
src=$1 build=$2
passed=0 failed=0 skipped=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
skip() { echo "skip $*"; skipped=$((skipped + 1)); }

readme=$src/README.md contributing=$src/CONTRIBUTING.md design=$src/docs/design.md ops=$src/docs/ops.md
for f in "$readme" "$contributing" "$design" "$ops" "$src/docs/performance.md" "$src/docs/cli.md" \
  "$src/docs/json.md" "$src/src/tensor/cpu/README.md"; do
  [ -s "$f" ] || fail "${f#"$src"/} is missing or empty"
done

n=$(wc -l <"$readme")
if [ "$n" -le 600 ]; then ok "README.md: $n lines (at most 600)"; else fail "README.md: $n lines (at most 600)"; fi

# CTest tests against CONTRIBUTING.md's table (rows "| `name` | ...")
tests=$(ctest --test-dir "$build" -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: \([^ ]*\).*/\1/p' | sort -u)
rows=$(sed -n 's/^| `\([a-z0-9_]*\)` | .*/\1/p' "$contributing" | sort -u)
if [ -z "$tests" ]; then
  fail "ctest -N lists no tests in $build"
else
  missing=$(comm -23 <(echo "$tests") <(echo "$rows") | tr '\n' ' ')
  extra=$(comm -13 <(echo "$tests") <(echo "$rows") | tr '\n' ' ')
  [ -z "$missing" ] && ok "CONTRIBUTING.md has a row for each of the $(echo "$tests" | wc -l) CTest tests" ||
    fail "CONTRIBUTING.md's test table lacks: $missing"
  [ -z "$extra" ] && ok "CONTRIBUTING.md's test table names no test CTest lacks" ||
    fail "CONTRIBUTING.md's test table names tests CTest does not have: $extra"
fi

# every source file named in design.md's Layout
layout=$(sed -n '/^## Layout/,$p' "$design")
unnamed=""
nfiles=0
while IFS= read -r f; do
  nfiles=$((nfiles + 1))
  grep -qF "\`$(basename "$f")\`" <<<"$layout" || unnamed="$unnamed ${f#"$src"/}"
done < <(find "$src/src" -type f \( -name '*.c' -o -name '*.cu' -o -name '*.m' \) | sort)
[ -z "$unnamed" ] && ok "docs/design.md's layout names all $nfiles source files" ||
  fail "docs/design.md's layout does not name:$unnamed"

# a count "N rows" in a document against the rows of a test's table
rows_of() { grep -c '^    {"' "$src/tests/unit/$1"; }
check_rows() { # file, phrase before the count, test source
  local doc=$1 before=$2 code=$3 said have
  said=$(grep -oE "$before[0-9][0-9,]* rows" "$doc" | head -1 | grep -oE '[0-9][0-9,]* rows' | tr -dc '0-9')
  have=$(rows_of "$code")
  if [ -z "$said" ]; then
    fail "${doc#"$src"/}: no '$before<N> rows' found"
  elif [ "$said" = "$have" ]; then
    ok "${doc#"$src"/}: $code has $have rows, as it says"
  else
    fail "${doc#"$src"/} says $code has $said rows; it has $have"
  fi
}
check_rows "$contributing" "one or more rows each, " test_ops.c
check_rows "$design" "graph per row \\(" test_metal_lower.c

# the conformance counts: README and docs/ops.md against expected_pass.txt
expect=$(grep -cv '^#' "$src/tests/conformance/expected_pass.txt")
for doc in "$readme" "$ops"; do
  said=$(grep -o '[0-9,]* of \(its \|the \)\?1,[0-9]* tests pass' "$doc" | head -1 | cut -d' ' -f1 | tr -d ,)
  if [ -z "$said" ]; then fail "${doc#"$src"/}: no 'N of M tests pass' found"
  elif [ "$said" = "$expect" ]; then ok "${doc#"$src"/}: $said conformance tests pass, as expected_pass.txt lists"
  else fail "${doc#"$src"/} says $said conformance tests pass; expected_pass.txt lists $expect"; fi
done
sum=$(sed -n '/^| folder | passed | in scope | total |/,/^$/p' "$ops" | awk -F'|' 'NR > 2 && $3 + 0 > 0 { s += $3 } END { print s + 0 }')
[ "$sum" = "$expect" ] && ok "docs/ops.md's conformance table sums to $sum passed" ||
  fail "docs/ops.md's conformance table sums to $sum passed; expected_pass.txt lists $expect"

data=/usr/share/libonnx-testdata/data
if [ -d "$data/node" ]; then
  total=0
  for d in node pytorch-converted pytorch-operator simple; do
    total=$((total + $(find "$data/$d" -mindepth 1 -maxdepth 1 -type d | wc -l)))
  done
  said=$(grep -o 'of \(its \|the \)\?1,[0-9]* tests' "$readme" | head -1 | grep -o '1,[0-9]*' | tr -d ,)
  [ "$said" = "$total" ] && ok "README.md: the suite has $total tests, as it says" ||
    fail "README.md says the suite has ${said:-?} tests; $data has $total"
else
  skip "the suite's size: $data is not installed"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
