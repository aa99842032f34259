#!/usr/bin/env bash
# check_objc.sh SRC [BUILD]: type-checks the Apple GPU backend's sources on a
# machine without a Mac. Where ../shared/macsdk/sysroot.tar.xz (beside SRC) is
# there, it is extracted into BUILD/macsdk and bridge.m is type-checked under
# ARC against Apple's real Foundation, Metal, MPS and MPSGraph headers, for
# arm64 macOS 13, with -Wall -Wextra -Werror -Wunguarded-availability (a call
# newer than macOS 13 must be guarded). Always, bridge.m is also checked
# against tests/metal/sdk (stand-ins declaring, as Apple's headers do,
# exactly the API bridge.m calls: what a machine without the SDK has), and,
# with the SDK there, check_selectors.py compares every method bridge.m
# calls as the stand-in declares it with Apple's declaration, so that the
# stand-in cannot drift. metal.c compiles as C11 with the project's warnings.
# The macOS CI job (.github/workflows/macos.yml) builds and runs it for real.
set -euo pipefail
src=$1
if ! command -v clang >/dev/null; then
  echo "skip: clang is not installed (./scripts/setup installs it)"
  exit 77
fi
build=${2:-$src/build}
sdk_tar=$src/../shared/macsdk/sysroot.tar.xz
inc=(-I"$src/src/tensor" -I"$src/src/gpu/metal")
passed=0 skipped=0
if [ -f "$sdk_tar" ]; then
  sysroot=$build/macsdk
  if [ ! -f "$sysroot/.extracted" ] || [ "$sdk_tar" -nt "$sysroot/.extracted" ]; then
    rm -rf "$sysroot" && mkdir -p "$sysroot" && tar -xJf "$sdk_tar" -C "$sysroot" && touch "$sysroot/.extracted"
  fi
  mac=(-x objective-c -fobjc-arc -fblocks -target arm64-apple-macos13 -isysroot "$sysroot")
  clang -fsyntax-only "${mac[@]}" -Wall -Wextra -Werror -Wunguarded-availability "${inc[@]}" "$src/src/gpu/metal/bridge.m"
  echo "ok   bridge.m type-checks under ARC against Apple's SDK headers ($sdk_tar, arm64 macOS 13)"
  passed=$((passed + 1))
  if [ -x /usr/bin/python3 ]; then
    ast=$(mktemp -d)
    trap 'rm -rf "$ast"' EXIT
    clang -fsyntax-only "${mac[@]}" "${inc[@]}" -Xclang -ast-dump "$src/src/gpu/metal/bridge.m" >"$ast/real.txt"
    clang -fsyntax-only "${mac[@]}" -I"$src/tests/metal/sdk" "${inc[@]}" -Xclang -ast-dump \
      "$src/src/gpu/metal/bridge.m" >"$ast/stand.txt"
    /usr/bin/python3 "$src/tests/metal/check_selectors.py" "$ast/stand.txt" "$ast/real.txt"
    passed=$((passed + 1))
  else
    echo "skip the stand-in's declarations against Apple's: no /usr/bin/python3"; skipped=$((skipped + 1))
  fi
else
  echo "skip bridge.m against Apple's SDK headers: $sdk_tar is not there (the stand-in only)"
  skipped=$((skipped + 2))
fi
clang -fsyntax-only -x objective-c -fobjc-arc -fblocks -fobjc-runtime=macosx-13.0 -Wall -Wextra -Werror \
  -I"$src/tests/metal/sdk" "${inc[@]}" "$src/src/gpu/metal/bridge.m"
echo "ok   bridge.m type-checks under ARC against the stand-in SDK headers (tests/metal/sdk)"
clang -fsyntax-only -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror \
  "${inc[@]}" -I"$src/tests/metal/sdk" "$src/src/gpu/metal/metal.c"
echo "ok   metal.c compiles as C11 with the project's warnings"
echo "$((passed + 2)) passed, 0 failed, $skipped skipped"
