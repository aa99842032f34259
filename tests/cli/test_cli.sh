#!/usr/bin/env bash
# test_cli.sh MPSRUN: every subcommand, --help and --version, exit codes, and
# the JSON of `mpsrun info --json` (parsed by jq). Prints one line per check
# and "N passed, N failed" last.
set -u
mpsrun=${1:?usage: test_cli.sh path/to/mpsrun}
passed=0 failed=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

# expect NAME CODE ARGS...: runs mpsrun ARGS, checks the exit code
expect() {
  local name=$1 code=$2
  shift 2
  "$mpsrun" "$@" >"$out" 2>"$err"
  local rc=$?
  if [ "$rc" -eq "$code" ]; then
    echo "ok   $name (exit $rc)"; passed=$((passed + 1))
  else
    echo "FAIL $name: exit $rc, expected $code"; sed 's/^/     /' "$err"; failed=$((failed + 1))
  fi
}

# check NAME COMMAND...: runs a shell check on the last output
check() {
  local name=$1
  shift
  if "$@"; then
    echo "ok   $name"; passed=$((passed + 1))
  else
    echo "FAIL $name"; sed 's/^/     /' "$out" "$err" | head -20; failed=$((failed + 1))
  fi
}

expect "--version" 0 --version
check "--version prints the version" grep -Eq '^mpsrun [0-9]+\.[0-9]+\.[0-9]+$' "$out"
expect "--help" 0 --help
check "--help lists info" grep -q 'info' "$out"
check "--help lists the exit codes" grep -q 'exit codes' "$out"
expect "no arguments is a usage error" 2
expect "unknown command" 2 frobnicate
check "unknown command is named on stderr" grep -q "mpsrun: error: unknown command 'frobnicate'" "$err"
expect "help info" 0 help info
check "help info shows info's usage" grep -q 'usage: mpsrun info' "$out"
expect "help for an unknown command" 2 help frobnicate

expect "info" 0 info
check "info lists the cpu backend as available" grep -Eq '^  cpu +available' "$out"
check "info names the BLAS" grep -q 'BLAS' "$out"
check "info reports cuda and mps by name" grep -q 'cuda' "$out"
expect "info --help" 0 info --help
check "info --help documents --json" grep -q -- '--json' "$out"
expect "info with a bad flag" 2 info --bogus
check "a bad flag is named on stderr" grep -q 'bogus' "$err"
expect "info with a stray argument" 2 info extra

expect "info --json" 0 info --json
check "info --json is valid JSON" jq -e . "$out" >/dev/null
check "info --json has schema_version 1" jq -e '.schema_version == 1' "$out" >/dev/null
check "info --json: cpu compiled and available with threads" \
  jq -e '.backends[] | select(.name == "cpu") | .compiled and .available and .threads >= 1 and .memory_bytes > 0' "$out" >/dev/null
check "info --json: every known backend is listed" \
  jq -e '[.backends[].name] | contains(["cpu", "cuda", "mps"])' "$out" >/dev/null
check "info --json: an unavailable backend says why" \
  jq -e '[.backends[] | select(.available | not) | .reason | length > 0] | all' "$out" >/dev/null

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
