#!/usr/bin/env bash
# check_objc.sh SRC: type-checks the Apple GPU backend's sources on a machine
# without the macOS SDK: bridge.m under ARC with -Wall -Wextra -Werror against
# tests/metal/sdk (stand-ins declaring, as Apple's headers do, exactly the
# Foundation, Metal, MPS and MPSGraph API that bridge.m calls), and metal.c as
# C11 with the project's warnings. A selector, an argument type or an ARC
# rule that is wrong against those declarations fails here. The check against
# the real SDK is the macOS CI job (.github/workflows/macos.yml).
set -euo pipefail
src=$1
if ! command -v clang >/dev/null; then
  echo "skip: clang is not installed (./scripts/setup installs it)"
  exit 77
fi
inc=(-I"$src/tests/metal/sdk" -I"$src/src/tensor" -I"$src/src/gpu/metal")
clang -fsyntax-only -x objective-c -fobjc-arc -fblocks -fobjc-runtime=macosx-13.0 -Wall -Wextra -Werror \
  "${inc[@]}" "$src/src/gpu/metal/bridge.m"
echo "ok   bridge.m type-checks under ARC against the stand-in SDK headers"
clang -fsyntax-only -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror \
  "${inc[@]}" "$src/src/gpu/metal/metal.c"
echo "ok   metal.c compiles as C11 with the project's warnings"
echo "2 passed, 0 failed, 0 skipped"
