#!/usr/bin/env bash
# test_onnx_files.sh TEST SRC OUT: writes the malformed and rare ONNX files
# (make_bad_models.py) into OUT, then checks how mpsrun loads each.
set -euo pipefail
test=$1 src=$2 out=$3
"${PYTHON:-/usr/bin/python3}" "$src/tests/models/make_bad_models.py" "$out" >/dev/null
exec "$test" "$out"
