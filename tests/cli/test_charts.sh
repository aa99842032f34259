#!/usr/bin/env bash
# test_charts.sh MPSRUN SRC: each chart mpsrun draws (bench matmul --plot,
# bench model --plot with and without --profile, eval --plot), rendered by a
# real SVG renderer (librsvg's rsvg-convert): the picture is not blank, its
# axis titles are there, and it holds as many series, bars and cells as the
# run measured (counted against the same run's --json); and --plot's usage
# errors. Prints one line per check and "N passed, N failed, N skipped" last.
set -u
mpsrun=${1:?usage: test_charts.sh path/to/mpsrun SRC}
src=${2:?usage: test_charts.sh path/to/mpsrun SRC}
source "$(dirname "$0")/lib.sh"
py=${PYTHON:-/usr/bin/python3}
cnn=$src/models/fashion_cnn.onnx

# draws NAME SVG: rsvg-convert renders it to a PNG with a few thousand non-white pixels
draws() {
  if ! command -v rsvg-convert >/dev/null; then
    echo "skip $1 renders: rsvg-convert is not installed (scripts/setup installs librsvg2-bin)"
    skipped=$((skipped + 1))
    return
  fi
  rsvg-convert "$2" -o "$2.png" 2>"$err"
  check "$1 renders, and is not blank" "$py" -c "
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert('L')
ink = sum(1 for p in img.getdata() if p < 200)
print(f'{img.size[0]}x{img.size[1]}, {ink} dark pixels')
sys.exit(0 if img.size[0] >= 600 and ink > 2000 else 1)" "$2.png"
}
# count CLASS SVG: elements of that class
count() { grep -o "class=\"$1\"" "$2" | wc -l; }
# axis SVG TEXT: the axis titles that read TEXT
axis() { grep -c "class=\"axis-label\"[^>]*>$2</text>" "$1"; }

# ---- bench matmul ---------------------------------------------------------------------
expect "bench matmul --plot" 0 bench matmul --sizes 32,64,96 --repeat 3 --plot "$tmp/mm.svg" --backend cpu
draws "bench matmul's chart" "$tmp/mm.svg"
check "its axes: GFLOP/s against size" bash -c "grep -q 'class=\"axis-label\"[^>]*>GFLOP/s<' '$tmp/mm.svg' &&
  grep -q 'class=\"axis-label\"[^>]*>size n' '$tmp/mm.svg'"
check "two series: mpsrun's and cblas_sgemm's, each with its 3 sizes" bash -c "[ \$(grep -c 'class=\"series\"' '$tmp/mm.svg') = 2 ] &&
  grep -q 'data-series=\"cpu fp32 (mpsrun)\"' '$tmp/mm.svg' && grep -q 'data-series=\"cpu fp32 (cblas_sgemm direct)\"' '$tmp/mm.svg' &&
  [ \$(grep -c '<circle' '$tmp/mm.svg') = 6 ]"
expect "bench matmul --plot with --json: the plotted numbers are in the JSON" 0 bench matmul --sizes 32 --repeat 3 \
  --plot "$tmp/mm2.svg" --backend cpu --json
check "JSON: GFLOP/s and the direct GEMM's" jq -e '.results[0].gflops > 0 and .results[0].direct.gflops > 0' "$out" >/dev/null

# ---- bench model ----------------------------------------------------------------------
expect "bench model --plot" 0 bench model "$cnn" --batch 1,4,16 --repeat 3 --plot "$tmp/model.svg"
draws "bench model's chart" "$tmp/model.svg"
check "its axes: latency and throughput against batch" test "$(axis "$tmp/model.svg" 'ms per run') $(axis "$tmp/model.svg" \
  'inferences/s') $(axis "$tmp/model.svg" batch)" = "1 1 2"
check "one series a panel, three batches each, error bars on latency, no bars" test "$(count series "$tmp/model.svg") \
$(count errorbar "$tmp/model.svg") $(grep -c '<circle' "$tmp/model.svg") $(count bar "$tmp/model.svg")" = "2 3 6 0"
expect "bench model --profile --plot" 0 bench model "$cnn" --batch 1,4 --repeat 3 --profile --plot "$tmp/prof.svg"
draws "bench model's chart with the profile" "$tmp/prof.svg"
"$mpsrun" bench model "$cnn" --batch 1 --repeat 3 --profile --json >"$tmp/prof.json"
nodes=$(jq '.results[0].profile | length' "$tmp/prof.json")
check "a bar per node for each batch ($nodes nodes: the 12 largest then other), fused nodes labelled" \
  test "$(count bar "$tmp/prof.svg") $(grep -c '>Conv+Relu ' "$tmp/prof.svg")" = "$(( (nodes > 13 ? 13 : nodes) * 2 )) 4"
check "the profile is in --json too" jq -e '[.results[0].profile[] | .median_ms >= 0 and (.op | length) > 0] | all' \
  "$tmp/prof.json" >/dev/null

# ---- eval -----------------------------------------------------------------------------
"$py" "$src/tests/models/heldout.py" fashion "$tmp/classes" 100 --by-class >/dev/null
expect "eval --plot" 0 eval "$cnn" "$tmp/classes" --plot "$tmp/eval.svg"
draws "eval's chart" "$tmp/eval.svg"
check "its axes: true class against predicted class" bash -c "grep -q 'class=\"axis-label\"[^>]*>predicted class<' '$tmp/eval.svg' &&
  grep -q 'class=\"axis-label\"[^>]*>true class<' '$tmp/eval.svg'"
check "a 10x10 heat map with the labels, and 10 recall bars" test "$(count cell "$tmp/eval.svg") $(count bar "$tmp/eval.svg") \
$(grep -c '>9 Ankle boot<' "$tmp/eval.svg")" = "100 10 3"
"$mpsrun" eval "$cnn" "$tmp/classes" --json >"$tmp/eval.json"
check "the numbers written in the cells are the JSON's confusion matrix, in order" test \
  "$(grep -o '<text[^>]*>[0-9]*</text>' "$tmp/eval.svg" | sed 's/<[^>]*>//g' | paste -sd' ')" = \
  "$(jq -r '[.confusion[][] | select(. > 0)] | map(tostring) | join(" ")' "$tmp/eval.json")"

# ---- usage ----------------------------------------------------------------------------
usage "--plot FILE.png" "mpsrun draws SVG; name the file .svg" bench matmul --sizes 8 --plot "$tmp/x.png"
usage "--plot into a folder that does not exist" "--plot $tmp/none/x.svg: cannot write" eval "$cnn" "$tmp/classes" \
  --plot "$tmp/none/x.svg"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
