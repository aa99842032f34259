# lib.sh: what the CLI test scripts share, sourced after $mpsrun is set:
# counters, temporary files, and the checks. Each check prints one line;
# the script prints "N passed, N failed, N skipped" last.
passed=0 failed=0 skipped=0
out=$(mktemp) err=$(mktemp) tmp=$(mktemp -d)
trap 'rm -rf "$out" "$err" "$tmp"' EXIT

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

# check NAME COMMAND...: runs a shell check on the last output. Its verdict goes
# to fd 3 (the script's stdout), so that `check ... jq ... >/dev/null` hides only jq's.
exec 3>&1
check() {
  local name=$1
  shift
  if "$@"; then
    echo "ok   $name" >&3; passed=$((passed + 1))
  else
    echo "FAIL $name" >&3; sed 's/^/     /' "$out" "$err" | head -20 >&3; failed=$((failed + 1))
  fi
}

# skip NAME WHY: a check that cannot run on this machine, said by name
skip() {
  echo "skip $1: $2"; skipped=$((skipped + 1))
}

# usage NAME TEXT ARGS...: exit 2 before any work (nothing on stdout), one error line containing TEXT
usage() {
  local name=$1 text=$2
  shift 2
  expect "$name" 2 "$@"
  check "$name: one message naming the option, before any output" \
    bash -c '[ ! -s "$1" ] && [ "$(wc -l < "$2")" = 1 ] && grep -qF -- "$3" "$2"' _ "$out" "$err" "$text"
}
