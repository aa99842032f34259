#!/usr/bin/env bash
# test_shapes.sh MPSRUN SRC: models whose dims other than the batch are free
# (a fully convolutional net exported with height and width free): each
# PNG runs at its own size and .npy inputs at theirs, against PyTorch; a
# stream of mixed sizes gives each result at its size in input order, with
# plans cached (memory bounded, not one plan per image); --size; --output
# over one size and over several; inspect's free dims and --shape; bench
# model --shape. Prints one line per check and "N passed, N failed, N
# skipped" last.
set -u
mpsrun=${1:?usage: test_shapes.sh path/to/mpsrun SRC}
src=${2:?usage: test_shapes.sh path/to/mpsrun SRC}
source "$(dirname "$0")/lib.sh"
py=${PYTHON:-/usr/bin/python3}
"$py" "$src/tests/cli/make_free_models.py" "$tmp/m" 2>/dev/null >/dev/null
fcn=$tmp/m/fcn.onnx

# ---- each input at its own size ------------------------------------------------------------
for f in "$tmp"/m/png/*.png; do
  n=$(basename "$f" .png)
  expect "a PNG of $n at its own size matches PyTorch" 0 infer "$fcn" "$f" --check "$tmp/m/png_ref/$n.npy" -q
done
for f in "$tmp"/m/npy/*.npy; do
  n=$(basename "$f")
  expect ".npy $n at its own size matches PyTorch" 0 infer "$fcn" "$f" --check "$tmp/m/npy_ref/$n" -q
done

# ---- a stream of mixed sizes ------------------------------------------------------------------
expect "a folder of PNGs of four sizes, in batches of 4: each at its own size" 0 infer "$fcn" "$tmp/m/png" --jsonl --batch 4
check "each result's output is its image's size, its values PyTorch's (to 1e-5 of the scale), in input order" "$py" -c "
import json, sys, numpy as np, os
rows = [json.loads(l) for l in open(sys.argv[1])]
names = sorted(os.listdir(sys.argv[2]))
assert [os.path.basename(r['input']) for r in rows] == names, [r['input'] for r in rows]
for r, n in zip(rows, names):
    ref = np.load(os.path.join(sys.argv[3], n[:-4] + '.npy'))[0]
    got = np.array(r['outputs'][0]['values'], np.float32).reshape(r['outputs'][0]['shape'])
    assert got.shape == ref.shape, (n, got.shape, ref.shape)
    assert np.abs(got - ref).max() <= 1e-5 * np.abs(ref).max(), n" "$out" "$tmp/m/png" "$tmp/m/png_ref"
expect "PNGs and .npy files of several sizes, one stream" 0 infer "$fcn" "$tmp/m/png" "$tmp/m/npy" -q
check "one line each" bash -c "[ \$(wc -l < $out) = 9 ]"
expect "--size sets every PNG's size on a model that leaves it free" 0 infer "$fcn" "$tmp/m/png" --size 24x36 --jsonl
check "every output 24x36" jq -e -s 'length == 6 and all(.[]; .outputs[0].shape == [5, 24, 36])' "$out" >/dev/null
mkdir -p "$tmp/many"
for i in $(seq 0 199); do cp "$tmp/m/png/0$((i % 6))_"*.png "$tmp/many/$(printf %03d $i).png"; done
if command -v /usr/bin/time >/dev/null; then
  /usr/bin/time -f %M -o "$tmp/rss20" "$mpsrun" infer "$fcn" "$tmp/m/png" -q --batch 2 >/dev/null 2>&1
  /usr/bin/time -f %M -o "$tmp/rss200" "$mpsrun" infer "$fcn" "$tmp/many" -q --batch 2 >"$out" 2>"$err"
  check "200 images of four sizes interleaved take the memory 6 take (plans cached, not one per image)" bash -c "
    [ \$(wc -l < $out) = 200 ] && [ \$(tail -1 $tmp/rss200) -lt \$(( \$(tail -1 $tmp/rss20) * 3 / 2 )) ]"
else
  echo "skip the memory of a stream of mixed sizes: no /usr/bin/time"; skipped=$((skipped + 1))
fi
expect "--output over inputs of one size" 0 infer "$fcn" "$tmp/m/png/00_32x48.png" "$tmp/m/png/01_32x48.png" \
  --output "$tmp/two.npy" -q
check "... one array [2, 5, 32, 48]" "$py" -c "import numpy, sys; assert numpy.load(sys.argv[1]).shape == (2, 5, 32, 48)" "$tmp/two.npy"
expect "--output over inputs of several sizes: exit 2, the stream stops" 2 infer "$fcn" "$tmp/m/png" --output "$tmp/all.npy" --json
check "... naming the input, with the report whole, and no file" bash -c "jq -e . $out >/dev/null &&
  grep -q 'takes one array: the first output of .*02_20x30.png is f32 \[5,20,30\], of the items before it f32 \[5,32,48\]' $err &&
  [ ! -e $tmp/all.npy ]"
"$py" -c "import numpy, sys; numpy.save(sys.argv[1], numpy.zeros((1, 4, 8, 8), numpy.float32))" "$tmp/c4.npy"
expect "a .npy whose fixed dim does not fit: exit 4" 4 infer "$fcn" "$tmp/c4.npy"
check "it shows the free dims as ?" grep -q "does not fit the model's input \[1,3,?,?\] (any batch)" "$err"

# ---- inspect and bench model ---------------------------------------------------------------
expect "inspect a model of free sizes (it does not build at 1x1)" 0 inspect "$fcn"
check "its free dims by name, the outputs' dims following them" bash -c "
  grep -q '^inputs     image f32 \[batch=1,3,height=32,width=32\]' $out &&
  grep -q '^outputs    scores f32 \[batch,5,height,width\] (here \[1,5,32,32\])' $out && grep -q '^free dims' $out"
expect "inspect --json" 0 inspect "$fcn" --json
check "shapes with names, sizes as numbers" jq -e '.inputs[0].shape == ["batch", 3, "height", "width"] and
  .inputs[0].sizes == [1, 3, 32, 32] and .outputs[0].shape == ["batch", 5, "height", "width"]' "$out" >/dev/null
expect "inspect --shape image=2x3x64x96" 0 inspect "$fcn" --shape image=2x3x64x96
check "the graph at that shape" bash -c "grep -q 'image f32 \[batch=2,3,height=64,width=96\]' $out &&
  grep -Eq 'MaxPool +\[2,8,32,48\]' $out"
expect "inspect --shape without the name (one input)" 0 inspect "$fcn" --shape 1x3x40x40
usage "inspect --shape of a fixed dim" "--shape 1x4x40x40: input 'image' is [batch,3,height,width], and [1,4,40,40] does not fit it" \
  inspect "$fcn" --shape 1x4x40x40
usage "inspect --shape of an unknown input" "--shape picture=1x3x8x8: the model has no input 'picture'" \
  inspect "$fcn" --shape picture=1x3x8x8
usage "inspect --shape that is no shape" "--shape image=1x3xx8: give sizes from 1 joined by x" \
  inspect "$fcn" --shape image=1x3xx8
expect "bench model --shape" 0 bench model "$fcn" --shape image=1x3x48x48 --batch 1,2 --repeat 2 --backend cpu --json
check "two rows, one per batch" jq -e '.results | length == 2 and all(.[]; .median_ms > 0)' "$out" >/dev/null

# ---- sizes a run decides (NonMaxSuppression, NonZero of a run-time input) -------------------------
expect "NonMaxSuppression's selection, its size the run's" 0 infer "$tmp/m/nms.onnx" "$tmp/m/nms_in.npz" \
  --outputs "$tmp/nms_out"
check "... 3 boxes of the 10 allowed: 3 and 0 kept, 1, 2 and 4 overlapping them dropped, then 5" "$py" -c "
import numpy, sys
assert \"'sel' i64 [3,3]\" in open(sys.argv[1]).read()
assert numpy.load(sys.argv[2]).tolist() == [[0, 0, 3], [0, 0, 0], [0, 0, 5]]" "$out" "$tmp/nms_out/sel.npy"
expect "NonZero over a stream of inputs: each run its own count" 0 infer "$tmp/m/nonzero.onnx" "$tmp/m/nz" --jsonl
check "... [2,1] and [2,3]" jq -e -s '[.[].outputs[0].shape] == [[2, 1], [2, 3]]' "$out" >/dev/null
usage "--batch 2 over an output whose size a run decides" \
  "output 'idx' has a size each run decides, which cannot be split by input: run a batch of 1" \
  infer "$tmp/m/nonzero.onnx" "$tmp/m/nz" --batch 2

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
