#!/usr/bin/env bash
# test_inputs.sh MPSRUN SRC: models of several inputs and of inputs that are
# not float32 images: fed by file in the model's order, by --input
# NAME=FILE, or as an .npz (stored and compressed); int64 tokens, a scalar,
# a bool flag, a free sequence length; float64 arrays for float32 inputs;
# f16 models (fed f16 or f32 arrays, written f16; against PyTorch and onnxruntime);
# an If whose branch an input's value chooses, at load or at run time; every output written
# (--outputs DIR or FILE.npz) and summarized in the
# report; and each kind of bad input refused with one line naming the
# input, what it takes and what was given. Against PyTorch (and numpy).
# Prints one line per check and "N passed, N failed, N skipped" last.
set -u
mpsrun=${1:?usage: test_inputs.sh path/to/mpsrun SRC}
src=${2:?usage: test_inputs.sh path/to/mpsrun SRC}
source "$(dirname "$0")/lib.sh"
py=${PYTHON:-/usr/bin/python3}
"$py" "$src/tests/cli/make_typed_models.py" "$tmp/m" 2>/dev/null >/dev/null
m=$tmp/m
two=$m/two.onnx typed=$m/typed.onnx

# ---- several inputs ------------------------------------------------------------------------
expect "two inputs, a file each in the model's order" 0 infer "$two" "$m/image.npy" "$m/vec.npy" --check "$m/probs.npy"
check "the report names each input's file, and each output" bash -c "grep -q '^inputs     image  .*image.npy  npy f32 \[1,3,16,16\]' $out &&
  grep -q '^           vec  .*vec.npy  npy f32 \[1,6\]' $out && grep -q \"^  output 1  'feat' f32 \[4\]\" $out"
expect "--input NAME=FILE, in any order" 0 infer "$two" --input vec=$m/vec.npy --input image=$m/image.npy --check "$m/probs.npy" -q
expect "--input for one, the other by order" 0 infer "$two" "$m/image.npy" --input vec=$m/vec.npy --check "$m/probs.npy" -q
expect "float64 for a float32 input" 0 infer "$two" "$m/image.npy" "$m/vec64.npy" --check "$m/probs.npy" --json
check "... converted, and said" jq -e '.results[0].inputs[1].source == "npy f64 [1,6] (to f32)"' "$out" >/dev/null
for z in both both_compressed; do
  expect "an .npz of both, by name ($z)" 0 infer "$two" "$m/$z.npz" --check "$m/probs.npy" --json
  check "... each input from it" jq -e '[.results[0].inputs[].source] == ["npz f32 [1,3,16,16]", "npz f32 [1,6]"]' "$out" >/dev/null
done
expect "a batch of 2 through both inputs" 0 infer "$two" "$m/image2.npy" "$m/vec2.npy" --check "$m/probs2.npy" --jsonl
check "... two results, each with its outputs summarized" jq -e -s 'length == 2 and all(.[]; (.outputs | length) == 2
  and .outputs[0].name == "probs" and (.outputs[0].max <= 1) and (.outputs[0].min >= 0))' "$out" >/dev/null

# ---- every output written ---------------------------------------------------------------------
expect "--outputs DIR: each output as NAME.npy" 0 infer "$two" "$m/both.npz" --outputs "$tmp/o/d" -q
check "probs.npy and feat.npy, PyTorch's" "$py" -c "
import numpy as np, sys
for n in ('probs', 'feat'):
    a, b = np.load(f'{sys.argv[1]}/{n}.npy'), np.load(f'{sys.argv[2]}/{n}.npy')
    assert a.shape == b.shape and np.abs(a - b).max() <= 1e-5 * np.abs(b).max(), n" "$tmp/o/d" "$m"
expect "--outputs FILE.npz: the outputs by name" 0 infer "$two" "$m/both.npz" --outputs "$tmp/o/all.npz" --json
check "... an .npz numpy reads, and the report says so" bash -c "jq -e '.written.outputs.file and .written.outputs.arrays == 2' $out >/dev/null &&
  \"\$1\" -c 'import numpy as np, sys; z = np.load(sys.argv[1]); assert sorted(z.files) == [\"feat\", \"probs\"] and z[\"probs\"].shape == (1, 4)' $tmp/o/all.npz" _ "$py"
expect "--outputs over one PNG of a model of one input" 0 infer "$src/models/mnist_cnn.onnx" "$src/models/samples/mnist/4_four_1.png" --outputs "$tmp/o/cnn" -q
check "... its one output" test -f "$tmp/o/cnn/logits.npy"
usage "--outputs over a stream" "--outputs $tmp/o/s writes the outputs of one run" \
  infer "$src/models/mnist_cnn.onnx" "$src/models/samples/mnist" --outputs "$tmp/o/s"

# ---- inputs that are not float32 images -------------------------------------------------------
expect "int64 tokens, a float scalar and a bool flag" 0 infer "$typed" "$m/tokens.npy" "$m/scale.npy" "$m/flag.npy" --check "$m/y.npy"
check "each input's type in the report" bash -c "grep -q 'tokens  .*  npy i64 \[2,5\]' $out && grep -q 'scale  .*  npy f32 \[\]' $out &&
  grep -q 'flag  .*  npy bool \[1\]' $out"
expect "... a longer sequence (the seq dim is free)" 0 infer "$typed" "$m/tokens_long.npy" "$m/scale.npy" "$m/flag.npy" --check "$m/y_long.npy" -q
expect "one input that is int64 is fed, not streamed" 0 infer "$typed" --input tokens=$m/tokens.npy --input scale=$m/scale.npy --input flag=$m/flag.npy -q

# ---- float16 models (computed in f32: src/models/model.h) -------------------------------------------
expect "an f16 model (f16 weights, inputs, outputs), fed f16 arrays" 0 infer "$m/two_f16.onnx" "$m/image16.npy" \
  "$m/vec16.npy" --outputs "$tmp/o/f16.npz" --check "$m/probs16.npy" --rtol 0.001
check "... the report says f16, computed in f32, and each output is f16" bash -c "grep -q '^model .*; f16, computed in f32)' $out &&
  grep -q \"^  output 1  'feat' f16 \[4\]\" $out"
check "... written as f16, within one f16 step of PyTorch in f32 on the same f16 weights and inputs" "$py" -c "
import numpy as np, sys
z = np.load(sys.argv[1])
for n in ('probs', 'feat'):
    a, b = z[n], np.load(f'{sys.argv[2]}/{n}16.npy')
    assert a.dtype == np.float16 and a.shape == b.shape, (n, a.dtype, a.shape)
    a, b = a.astype(np.float32), b.astype(np.float32)
    assert np.abs(a - b).max() <= 2 ** -10 * np.abs(b).max(), n" "$tmp/o/f16.npz" "$m"
expect "... fed f32 arrays: rounded to f16 as the model's inputs hold them" 0 infer "$m/two_f16.onnx" "$m/image.npy" \
  "$m/vec.npy" --outputs "$tmp/o/f16_from32.npz" --json
check "... said, and the same outputs to the bit" bash -c "jq -e '.results[0].inputs[0].source == \"npy f32 [1,3,16,16] (to f16)\"
  and .model.storage == \"f16\" and .model.compute == \"f32\" and .outputs[0].dtype == \"f16\"' $out >/dev/null &&
  \"\$1\" -c 'import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); assert all((a[n] == b[n]).all() for n in a.files)' \
  $tmp/o/f16.npz $tmp/o/f16_from32.npz" _ "$py"
check "... the report's summary is of the f16 values (an f16 output is rounded in the graph, not only when written)" \
  "$py" -c "
import json, numpy as np, sys
out = json.load(open(sys.argv[1]))['results'][0]['outputs']
z = np.load(sys.argv[2])
for o in out:
    a = z[o['name']].astype(np.float64)
    for k, v in (('min', a.min()), ('max', a.max())):
        assert abs(o[k] - v) <= 1e-6 * abs(v), (o['name'], k, o[k], v)" "$out" "$tmp/o/f16_from32.npz"
expect "an f16 model with f32 inputs and outputs (a Cast at each edge) matches PyTorch to 1e-5" 0 infer \
  "$m/two_f16_io32.onnx" "$m/image.npy" "$m/vec.npy" --check "$m/probs16_32.npy" -q
PYTHONPATH="$src/tests/models" "$py" -c "import fp16, onnx, sys; onnx.save(fp16.convert(onnx.load(sys.argv[1]), keep_io=False), sys.argv[2])" \
  "$src/models/mnist_cnn.onnx" "$tmp/mnist16.onnx"
expect "mnist_cnn converted to f16 (an f16 input): PNGs go in as for any model" 0 infer "$tmp/mnist16.onnx" \
  "$src/models/samples/mnist" --jsonl
cp "$out" "$tmp/f16.jsonl"
"$mpsrun" infer "$src/models/mnist_cnn.onnx" "$src/models/samples/mnist" --jsonl >"$tmp/f32.jsonl"
check "... every sample's class the f32 model's, its probability within 0.5% of it" "$py" -c "
import json, sys
a, b = ([json.loads(l) for l in open(f)] for f in sys.argv[1:3])
assert len(a) == len(b) == 20
for x, y in zip(a, b):
    assert x['top'][0]['index'] == y['top'][0]['index'], x['input']
    assert abs(x['top'][0]['probability'] - y['top'][0]['probability']) <= 0.005, x['input']" "$tmp/f16.jsonl" "$tmp/f32.jsonl"
expect "inspect shows the model's own types" 0 inspect "$m/two_f16.onnx" --json
check "... f16 inputs and outputs, f16 storage" jq -e '[.inputs[].dtype, .outputs[].dtype] == ["f16", "f16", "f16", "f16"]
  and .model.storage == "f16"' "$out" >/dev/null
if node -e "require('$src/.deps/node_modules/onnxruntime-node')" 2>/dev/null; then
  for f in two_f16 two_f16_io32; do
    case $f in two_f16) ins="image=$m/image16.npy vec=$m/vec16.npy" ;; *) ins="image=$m/image.npy vec=$m/vec.npy" ;; esac
    expect "$f: onnxruntime on the same model" 0 infer "$m/$f.onnx" $(for i in $ins; do printf -- '--input %s ' "$i"; done) \
      --outputs "$tmp/o/$f.npz" -q
    node "$src/tests/models/ort_run.js" "$m/$f.onnx" "$tmp/ort_$f" $ins >/dev/null
    # onnxruntime rounds each op's result to f16 (an f16 step is 2^-11 of a value): within 4 steps of the scale
    check "... within 4 f16 steps of onnxruntime's outputs" "$py" -c "
import numpy as np, sys
z = np.load(sys.argv[1])
for i, n in enumerate(('probs', 'feat')):
    a, b = z[n].astype(np.float32), np.load(f'{sys.argv[2]}/{i}.npy').astype(np.float32)
    assert np.abs(a - b).max() <= 4 * 2 ** -11 * np.abs(b).max(), (n, np.abs(a - b).max() / np.abs(b).max())" \
      "$tmp/o/$f.npz" "$tmp/ort_$f"
  done
else
  skip "f16 models against onnxruntime" "onnxruntime-node is not installed (./scripts/setup installs it)"
fi

# ---- an If steered by an input ---------------------------------------------------------------
expect "an If on a sample rate given as an input: 44.1 kHz takes the then branch" 0 infer "$m/if_rate.onnx" \
  "$m/x4.npy" "$m/rate44k.npy" -q
check "... x / 2" bash -c "[ \"\$(cut -f3- $out)\" = \"\$(printf '0\t0.5\t1\t1.5')\" ]"
expect "... 8 kHz the else branch" 0 infer "$m/if_rate.onnx" "$m/x4.npy" "$m/rate8k.npy" -q
check "... x * 2" bash -c "[ \"\$(cut -f3- $out)\" = \"\$(printf '0\t2\t4\t6')\" ]"
expect "inspect, without the rate, shows the If decided at run time" 0 inspect "$m/if_rate.onnx"
check "... which the cpu backend runs and cuda refuses by name" bash -c "grep -q '^   3  by_rate  *If ' $out &&
  grep -q '^backends   cpu   runs every node' $out && grep -q \"^           cuda  cannot run: node 'by_rate' (If)\" $out"

# ---- an If decided at run time, by what an input holds ------------------------------------------
# y: then an If on max(x) > 1 inside (x * 10 + 1, else x * 100 + 1), else -x; z: then sum(x[idx]), else sum(x)
for c in "big 21 6 -9 3.5 35" "small 51 26 76 -49 20" "neg 2 -0.5 1 -0.25 -2.25"; do
  set -- $c
  expect "if_score, $1: the branch the data chooses (nested Ifs, names alike in both branches)" 0 infer \
    "$m/if_score.onnx" "$m/score_$1.npy" "$m/idx_ok.npy" --json
  check "... y [$2 $3 $4 $5], z $6" jq -e --argjson y "[$2,$3,$4,$5]" --argjson z "$6" \
    '.results[0].outputs[0].min == ($y | min) and .results[0].outputs[0].max == ($y | max) and
     .results[0].outputs[1].mean == $z and .backend.name == "cpu"' "$out" >/dev/null
done
expect "the branch not taken never runs: an index out of range there is no error" 0 infer "$m/if_score.onnx" \
  "$m/score_neg.npy" "$m/idx_bad.npy" --outputs "$tmp/o/neg.npz" -q
check "... the else branch's outputs" "$py" -c "
import numpy as np, sys
z = np.load(sys.argv[1]); assert (z['y'] == [2, -0.5, 1, -0.25]).all() and z['z'] == -2.25, dict(z)" "$tmp/o/neg.npz"
expect "... and where it is taken, the error names the node: exit 4" 4 infer "$m/if_score.onnx" "$m/score_big.npy" "$m/idx_bad.npy"
check "... one line, naming the node and the branch it is in" bash -c "[ \$(wc -l < $err) = 1 ] && grep -q \"node 'by_sum/then/Gather_3' (Gather): index 99 is out of range\" $err"

# ---- bad inputs: one line each, naming the input ----------------------------------------------
usage "an input not given" "input 'vec' (f32 [?,6]) is not given: give --input vec=FILE" infer "$two" "$m/image.npy"
usage "an unknown input name" "--input picture=$m/image.npy: the model has no input 'picture' (its inputs: 'image', 'vec')" \
  infer "$two" --input picture=$m/image.npy "$m/vec.npy"
usage "two files for one input" "input 'vec' is given twice" infer "$two" "$m/image.npy" --input vec=$m/vec.npy --input vec=$m/vec64.npy
usage "more files than inputs" "the model takes 2 inputs ('image', 'vec'), and each has its file" \
  infer "$two" "$m/image.npy" "$m/vec.npy" "$m/vec.npy"
expect "a wrong dtype: exit 4" 4 infer "$typed" "$m/tokens.npy" "$m/tokens.npy" "$m/flag.npy"
check "... naming the file, the input, what it takes and what it got" bash -c "[ \$(wc -l < $err) = 1 ] &&
  grep -q 'tokens.npy: input .scale. takes f32, and the array is i64' $err"
expect "a tensor where a scalar goes: exit 4" 4 infer "$typed" "$m/tokens.npy" "$m/vec.npy" "$m/flag.npy"
check "... naming the shapes" grep -q "vec.npy: input 'scale' is \[\], and the array's shape \[1,6\] does not fit it" "$err"
expect "a fixed dim that does not fit: exit 4" 4 infer "$two" "$m/vec.npy" "$m/vec.npy"
check "... naming the input's shape, its free dims as ?" grep -q "input 'image' is \[?,3,16,16\], and the array's shape \[1,6\] does not fit it" "$err"
"$py" -c "import numpy as np, sys; np.savez(sys.argv[1], image=np.zeros((1, 3, 16, 16), np.float32))" "$tmp/half.npz"
usage "an .npz without an array the model needs" "input 'vec' (f32 [?,6]) is not given" infer "$two" "$tmp/half.npz"
"$py" -c "import numpy as np, sys; np.savez(sys.argv[1], image=np.zeros((1, 3, 16, 16), np.float32), vec=np.zeros((1, 6), np.float32), extra=np.zeros(1))" "$tmp/extra.npz"
usage "an .npz with an array that is no input" "array 'extra' is no input of the model" infer "$two" "$tmp/extra.npz"
# an array that says it inflates to 4 GiB from a few bytes (found by fuzz_npz: it was allocated first)
"$py" -c "
import io, numpy as np, struct, sys, zipfile
b = io.BytesIO(); np.save(b, np.zeros((1, 6), np.float32))
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z: z.writestr('vec.npy', b.getvalue())
d = bytearray(open(sys.argv[1], 'rb').read()); cd = d.rfind(b'PK\x01\x02')
d[cd + 24:cd + 28] = struct.pack('<I', 0xfffffff0); open(sys.argv[1], 'wb').write(d)" "$tmp/bomb.npz"
expect "an .npz array that says 4 GiB from a few bytes: exit 4, nothing allocated" 4 infer "$two" "$m/image.npy" "$tmp/bomb.npz"
check "... said" grep -q "array 'vec' says 4294967280 bytes from [0-9]* deflated, more than deflate can make of them" "$err"
printf 'PK\003\004 not a zip at all' >"$tmp/broken.npz"
expect "a broken .npz: exit 4" 4 infer "$two" "$tmp/broken.npz" "$m/vec.npy"
check "... said as the zip it is not (its first bytes say zip)" grep -q "broken.npz: .npz: .*no zip" "$err"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
