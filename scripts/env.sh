# env.sh: sourced by the scripts: the repository root, the build settings and
# the paths that keg-only Homebrew packages need.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$( (nproc || sysctl -n hw.ncpu) 2>/dev/null || echo 2)
if [ "$(uname -s)" = Darwin ] && command -v brew >/dev/null; then
  export PKG_CONFIG_PATH="$(brew --prefix openblas)/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
