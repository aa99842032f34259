#!/usr/bin/env bash
# test_cli.sh MPSRUN SRC: every subcommand, --help and --version, every exit
# code, every infer option, batches, malformed inputs and models, and the JSON
# of info and infer (parsed by jq). Prints one line per check and
# "N passed, N failed" last.
set -u
mpsrun=${1:?usage: test_cli.sh path/to/mpsrun SRC}
src=${2:?usage: test_cli.sh path/to/mpsrun SRC}
source "$(dirname "$0")/lib.sh"

expect "--version" 0 --version
check "--version prints the version" grep -Eq '^mpsrun [0-9]+\.[0-9]+\.[0-9]+$' "$out"
expect "--help" 0 --help
check "--help lists info and infer" grep -q 'infer' "$out"
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
check "info names the CPU kernel family" grep -Eq 'kernels (avx512|avx2|neon|c) \(' "$out"
MPSRUN_CPU_KERNELS=c expect "MPSRUN_CPU_KERNELS=c info" 0 info
check "MPSRUN_CPU_KERNELS=c: info names the portable C kernels" grep -q 'kernels c (portable C' "$out"
MPSRUN_CPU_KERNELS=mmx expect "MPSRUN_CPU_KERNELS=mmx infer is a usage error" 2 infer "$src/models/mnist_cnn.onnx" \
  "$src/models/samples/mnist/4_four_1.png" --backend cpu
check "MPSRUN_CPU_KERNELS=mmx: the message names the variable and the families" \
  grep -q "MPSRUN_CPU_KERNELS=mmx: unknown CPU kernel family 'mmx' (avx512, avx2, neon or c)" "$err"
if "$mpsrun" info | grep -Eq '^  (cuda|mps) +available'; then
  echo "skip MPSRUN_CPU_KERNELS=mmx bench matmul: a GPU backend is available, so bench has one to time"
  skipped=$((skipped + 1))
else
  MPSRUN_CPU_KERNELS=mmx expect "MPSRUN_CPU_KERNELS=mmx bench matmul: no backend left is an error" 2 bench matmul --sizes 16
  check "bench matmul with no backend says why" grep -q "no backend is available (.*cpu: MPSRUN_CPU_KERNELS=mmx: unknown" "$err"
fi
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
check "info --json: a compiled-in backend that cannot run gives its probe's reason, not how to build it" \
  jq -e '[.backends[] | select(.compiled and (.available | not)) | .reason | test("^(configure with|build on)") | not]
  | all' "$out" >/dev/null
# the round trip of a cache line between two threads: measured where the process has two CPUs, absent with one
if [ "$(nproc)" -ge 2 ]; then
  check "info --json: the cpu's core round trip is a number of ns (two CPUs)" \
    jq -e '.backends[] | select(.name == "cpu") | .core_round_trip_ns > 0 and .core_round_trip_ns < 100000' \
    "$out" >/dev/null
else
  echo "skip info --json core_round_trip_ns: this machine has one CPU"
  skipped=$((skipped + 1))
fi
if command -v taskset >/dev/null; then
  taskset -c 0 "$mpsrun" info --json >"$out" 2>"$err"
  check "info --json on one CPU (taskset): no core round trip" \
    jq -e '.backends[] | select(.name == "cpu") | has("core_round_trip_ns") | not' "$out" >/dev/null
  taskset -c 0 "$mpsrun" info >"$out" 2>"$err"
  check "info on one CPU (taskset): no round-trip line" sh -c "! grep -q 'cache line' '$out'"
else
  echo "skip info on one CPU: no taskset"
  skipped=$((skipped + 1))
fi

# ---- infer ---------------------------------------------------------------------
"${PYTHON:-/usr/bin/python3}" "$src/tests/cli/make_inputs.py" "$src/models/samples/mnist/7_seven_0.png" "$tmp/in" >/dev/null
"${PYTHON:-/usr/bin/python3}" "$src/tests/models/make_bad_models.py" "$tmp/bad" >/dev/null
cnn=$src/models/mnist_cnn.onnx mlp=$src/models/mnist_mlp.onnx in=$tmp/in ref=$src/models/refs/mnist_cnn/7_seven_0.npy
q=(--repeat 0 --warmup 0)

expect "infer --help" 0 infer --help
check "infer --help documents every option" bash -c "for o in backend precision threads top-k labels mean std size \
  repeat warmup json output expect check rtol atol quiet; do grep -q -- \"--\$o\" $out || exit 1; done"
expect "infer a PNG" 0 infer "$cnn" "$in/gray8.png"
check "infer names the class and its label" grep -Eq '^  top-k +7  seven' "$out"
check "infer says softmax was applied to logits" grep -q 'logits, softmax applied' "$out"
check "infer prints the timings" grep -Eq 'load .* ms, compile .* ms, preprocess .* ms, first run' "$out"
check "infer prints median, p10 and p90 of 10 runs" grep -Eq '10 runs: median .* p10 .* p90' "$out"
check "infer takes normalization from the model's metadata" grep -q 'mean 0.1307 std 0.3081 (model metadata)' "$out"
expect "a model whose output is a distribution" 0 infer "$mlp" "$in/gray8.png"
check "softmax is not applied to probabilities" grep -q "probabilities (the model's metadata says so)" "$out"
for f in gray8 gray16 gray_alpha rgb rgba palette interlaced big56; do
  expect "PNG $f reaches the model exactly (--check)" 0 infer "$cnn" "$in/$f.png" --check "$ref" "${q[@]}"
done
expect "a smaller PNG is resized (bilinear)" 0 infer "$cnn" "$in/small14.png" "${q[@]}"
check "the source size is reported, the batch once" bash -c "grep -q 'small14.png  PNG gray 8-bit 14x14$' $out &&
  grep -q '^batch      \[1,1,28,28\], one run$' $out"
expect "a color PNG on a gray model" 0 infer "$cnn" "$in/color.png" "${q[@]}"
# the pixels each of these reaches the model with, against a reference computed
# by make_inputs.py and run through the same model
for f in small14 big42 color half_alpha palette4_trns; do
  "$mpsrun" infer "$cnn" "$in/expect_$f.npy" --output "$tmp/expect_$f.out.npy" "${q[@]}" >/dev/null
  expect "PNG $f reaches the model as its reference says (--check)" 0 infer "$cnn" "$in/$f.png" \
    --check "$tmp/expect_$f.out.npy" "${q[@]}"
done
expect "a .npy input" 0 infer "$cnn" "$in/digit.npy" --check "$ref" "${q[@]}"
expect "a .npy without the batch dim" 0 infer "$cnn" "$in/digit_nobatch.npy" --check "$ref" "${q[@]}"
expect "--quiet prints the top class only" 0 infer "$cnn" "$in/gray8.png" --quiet
check "--quiet: one tab-separated line: path, item, class, label, probability" \
  awk -F'\t' -v p="$in/gray8.png" 'NR == 1 && NF == 5 && $1 == p && $2 == 0 && $3 == 7 && $4 == "seven" &&
    $5 > 0.9999 && $5 <= 1 { ok = 1 } END { exit !(ok && NR == 1) }' "$out"
expect "several PNGs run as one batch" 0 infer "$cnn" "$in/gray8.png" "$in/rgb.png" "$in/palette.png" --quiet
check "one line per input, each with its path" awk -F'\t' '$3 == 7 && $1 ~ /(gray8|rgb|palette)\.png$/ { n++ }
  END { exit !(n == 3 && NR == 3) }' "$out"
expect "a .npy batch of 3 and a PNG" 0 infer "$cnn" "$in/batch3.npy" "$in/gray8.png" --json "${q[@]}"
check "JSON has 4 results with items" jq -e '.results | length == 4 and .[2].item == 2 and .[3].item == 0' "$out" >/dev/null
expect "--json" 0 infer "$cnn" "$in/gray8.png" --json --top-k 3
check "infer --json is valid JSON" jq -e . "$out" >/dev/null
check "infer --json fields" jq -e '.schema_version == 1 and .backend.name == "cpu" and .output_kind == "logits"
  and (.results[0].top | length) == 3 and .results[0].top[0].index == 7 and .results[0].top[0].label == "seven"
  and .timings_ms.runs == 10 and .timings_ms.median > 0 and .outputs[0].shape == [1, 10]' "$out" >/dev/null
expect "--labels FILE" 0 infer "$cnn" "$in/gray8.png" --labels "$in/labels.txt" --quiet
check "labels come from the file" awk -F'\t' '$4 == "digit-7" { ok = 1 } END { exit !ok }' "$out"
expect "--mean and --std" 0 infer "$cnn" "$in/gray8.png" --mean 0.5 --std 0.5 "${q[@]}"
check "flags override the metadata" grep -q 'mean 0.5 std 0.5 (flags)' "$out"
expect "--size on a fixed-size model resizes nothing" 0 infer "$cnn" "$in/big56.png" --size 28x28 "${q[@]}"
expect "--threads 1 --backend cpu --precision fp32" 0 infer "$cnn" "$in/gray8.png" --threads 1 --backend cpu \
  --precision fp32 --check "$ref" "${q[@]}"
expect "--output writes the raw output" 0 infer "$cnn" "$in/gray8.png" --output "$tmp/out.npy" "${q[@]}"
check "--output is a .npy the reference equals" "$mpsrun" infer "$cnn" "$in/gray8.png" --check "$tmp/out.npy" \
  --rtol 0 --atol 0 --quiet "${q[@]}"
usage "--output that cannot be written (not a regular file)" \
  "--output /dev/null: not a regular file (mpsrun writes a new file beside it and renames it over)" \
  infer "$cnn" "$in/gray8.png" --output /dev/null
expect "--expect by index" 0 infer "$cnn" "$in/gray8.png" --expect 7 --quiet
expect "--expect by label" 0 infer "$cnn" "$in/gray8.png" --expect seven --quiet
expect "--expect a wrong class: exit 5" 5 infer "$cnn" "$in/gray8.png" --expect 3 --quiet
check "the failed expectation says what was seen" grep -q "expect 3: .*gray8.png has top class 7 'seven'" "$err"
expect "--check a wrong reference: exit 5" 5 infer "$cnn" "$in/gray8.png" --check "$in/wrong_ref.npy" "${q[@]}"
check "the failed check names the worst element, its error and the scale" \
  grep -Eq 'max error [0-9.e+-]+ = [0-9.e+-]+ of the scale 0, at element [0-9]+: got .*, expected 0; 10 of 10 elements beyond' "$err"
# --check's rule: |got - want| <= atol + rtol * max|want| (compare.h); references
# made from this output with one element moved, the smallest in magnitude
"${PYTHON:-/usr/bin/python3}" - "$tmp/out.npy" "$tmp" <<'PY'
import sys, numpy as np
y = np.load(sys.argv[1]).astype(np.float64)
scale, i = np.abs(y).max(), np.argmin(np.abs(y))
for name, d in (("near", 0.5e-5), ("far", 2e-5)):
    r = y.copy()
    r.flat[i] += d * scale
    np.save(f"{sys.argv[2]}/{name}.npy", r.astype(np.float32))
PY
expect "--check: an element 0.5e-5 of the scale off passes (even one near zero)" 0 infer "$cnn" "$in/gray8.png" \
  --check "$tmp/near.npy" --json "${q[@]}"
check "--check --json reports the rule and the worst element" jq -e '.checks.check | .passed and .rtol == 1e-5
  and .atol == 0 and .scale > 1 and .max_rel_err > 4e-6 and .max_rel_err < 6e-6 and .elements_outside == 0
  and (.logarithms | not) and (.worst_element | type) == "number"' "$out" >/dev/null
expect "--check: the same with --rtol 1e-6 fails" 5 infer "$cnn" "$in/gray8.png" --check "$tmp/near.npy" \
  --rtol 1e-6 "${q[@]}"
expect "--check: an element 2e-5 of the scale off fails" 5 infer "$cnn" "$in/gray8.png" --check "$tmp/far.npy" "${q[@]}"
check "the report says how many elements are beyond the bound" grep -q '1 of 10 elements beyond' "$err"
expect "--check: --atol widens the bound" 0 infer "$cnn" "$in/gray8.png" --check "$tmp/far.npy" --atol 1e-3 \
  "${q[@]}"
expect "--check: a NaN output against a finite reference fails" 5 infer "$cnn" "$in/nan.npy" --check "$ref" "${q[@]}"
check "the NaN mismatch is an infinite error" grep -q '10 of 10 output and 0 reference values are NaN.*max error inf' "$err"
expect "--output of a NaN output" 0 infer "$cnn" "$in/nan.npy" --output "$tmp/nan_out.npy" "${q[@]}"
expect "--check: NaN against NaN is no evidence and fails" 5 infer "$cnn" "$in/nan.npy" --check "$tmp/nan_out.npy" "${q[@]}"
check "--check names the NaN on both sides" grep -q '10 of 10 output and 10 reference values are NaN, and a check needs numbers' "$err"
expect "-q on a NaN output" 0 infer "$cnn" "$in/nan.npy" -q
check "-q prints nan, not a class" awk -F'\t' 'NF == 5 && $3 == "-" && $4 == "" && $5 == "nan" { ok = 1 } END { exit !ok }' "$out"
expect "text on a NaN output" 0 infer "$cnn" "$in/nan.npy" "${q[@]}"
check "the text says there is no top class" grep -q 'none: 10 of 10 class values are NaN' "$out"
expect "--json on a NaN output" 0 infer "$cnn" "$in/nan.npy" --json "${q[@]}"
check "--json: no top classes, an error, no null" \
  jq -e '.results[0].top == [] and (.results[0].error.message | test("NaN")) and ([.. | nulls] | length == 0)' "$out" >/dev/null
expect "--expect on a NaN output fails" 5 infer "$cnn" "$in/nan.npy" --expect 0 "${q[@]}"
check "--expect says the input has no top class" grep -q 'nan.npy has no top class: its output is NaN' "$err"
"${PYTHON:-/usr/bin/python3}" -c "import numpy, sys; numpy.save(sys.argv[1], numpy.zeros((0, 1, 28, 28), numpy.float32)); numpy.save(sys.argv[2], numpy.zeros((0, 10), numpy.float32))" "$tmp/empty_batch.npy" "$tmp/empty_ref.npy"
expect "a .npy of no items is refused, --expect does not pass" 4 infer "$cnn" "$tmp/empty_batch.npy" --expect 7 "${q[@]}"
check "the empty .npy is named with its shape" grep -q 'empty_batch.npy: .npy shape \[0,1,28,28\] holds no items' "$err"
expect "--check of probabilities (a Softmax output)" 0 infer "$mlp" "$in/gray8.png" \
  --check "$src/models/refs/mnist_mlp/7_seven_0.npy" --json "${q[@]}"
check "probabilities are compared as logarithms" jq -e '.checks.check | .passed and .logarithms' "$out" >/dev/null
expect "--rtol -1 is a usage error" 2 infer "$cnn" "$in/gray8.png" --check "$ref" --rtol -1
check "--rtol's message names it" grep -q -- '--rtol must be 0 to 1' "$err"
expect "--atol nan is a usage error" 2 infer "$cnn" "$in/gray8.png" --check "$ref" --atol nan
expect "a fixed-batch model runs each input on its own" 0 infer "$tmp/bad/external_ok.onnx" "$in/vec4.npy" \
  "$in/vec4.npy" --quiet
check "one result per input" bash -c "[ \$(grep -c 'vec4.npy	0	' $out) = 2 ]"
expect "a classifier ending in Relu" 0 infer "$tmp/bad/relu_head.onnx" "$in/vec4.npy" "${q[@]}"
check "its output is scores ranked as they are, not logits" bash -c "grep -q 'scores, ranked as they are (the model ends in Relu)' $out &&
  ! grep -q '%' $out && ! grep -q '^images ' $out && grep -q '^batch      \[1,4\], one run' $out"
expect "a classifier ending in Relu, --json" 0 infer "$tmp/bad/relu_head.onnx" "$in/vec4.npy" --json "${q[@]}"
check "--json: output_kind scores, each top entry a score" jq -e '.output_kind == "scores"
  and (.output_kind_reason | test("Relu")) and all(.results[0].top[]; has("score") and (has("probability") | not))' "$out" >/dev/null
expect "a model that is not a classifier" 0 infer "$tmp/bad/raw_output.onnx" "$in/vec4.npy"
check "its raw output is printed under its input" bash -c "grep -A1 '^input .*vec4.npy' $out |
  grep -q \"^  output 0  'y' f32 \\[2,2\\]: 0 1 2 3\$\""

# usage errors: exit 2
expect "--top-k 0" 2 infer "$cnn" "$in/gray8.png" --top-k 0
expect "--precision fp64" 2 infer "$cnn" "$in/gray8.png" --precision fp64
expect "--backend nope" 2 infer "$cnn" "$in/gray8.png" --backend nope
expect "--precision fp16 on cpu" 2 infer "$cnn" "$in/gray8.png" --backend cpu --precision fp16
check "the cpu backend says it is fp32 only" grep -q 'fp32 only' "$err"
expect "--size junk" 2 infer "$cnn" "$in/gray8.png" --size 28by28
expect "--expect an unknown label" 2 infer "$cnn" "$in/gray8.png" --expect giraffe
expect "no INPUT" 2 infer "$cnn"

printf 'a\nb\n' > "$tmp/two_labels.txt"
usage "--repeat -1" "--repeat must be 0 to 1000000, not -1" infer "$cnn" "$in/gray8.png" --repeat=-1
usage "--warmup -1" "--warmup must be 0 to 1000000, not -1" infer "$cnn" "$in/gray8.png" --warmup=-1
usage "--top-k 65" "--top-k must be 1 to 64, not 65" infer "$cnn" "$in/gray8.png" --top-k 65
usage "--threads 0" "--threads must be 1 to" infer "$cnn" "$in/gray8.png" --threads 0
usage "--threads 100000 (refused at once, no threads started)" "not 100000" infer "$cnn" "$in/gray8.png" --threads 100000
usage "--rtol without --check" "--rtol sets --check's tolerance: give --check too" infer "$cnn" "$in/gray8.png" --rtol 0.1
usage "--mean nan" "--mean nan: give 1 or 3 finite numbers" infer "$cnn" "$in/gray8.png" --mean nan
usage "--std inf" "--std inf: give 1 or 3 finite numbers, each above 0" infer "$cnn" "$in/gray8.png" --std inf
usage "--mean with 3 values on a 1-channel model" "--mean 0.1,0.2,0.3: 3 values, but the model's images have 1 channel" \
  infer "$cnn" "$in/gray8.png" --mean 0.1,0.2,0.3
usage "--size too large" "--size 100000x100000: give HxW or N, each side 1 to 65536" infer "$cnn" "$in/gray8.png" \
  --size 100000x100000
usage "--size that the model contradicts (not an input error)" "--size 14x14: the model fixes its images at 28x28" \
  infer "$cnn" "$in/gray8.png" --size 14x14
usage "--backend gpu" "unknown backend 'gpu' (auto, cpu, cuda or mps)" infer "$cnn" "$in/gray8.png" --backend gpu
usage "--labels with 2 lines for 10 classes" "two_labels.txt: 2 labels for the model's 10 classes" \
  infer "$cnn" "$in/gray8.png" --labels "$tmp/two_labels.txt"
usage "--expect past the classes (before the run, not exit 5)" "--expect 42: the model has 10 classes (0 to 9)" \
  infer "$cnn" "$in/gray8.png" --expect 42
usage "--expect an unknown label (before the results)" "--expect 'giraffe' is neither a class index (0 to 9) nor one of" \
  infer "$cnn" "$in/gray8.png" --expect giraffe
usage "--expect on a model that is not a classifier" "--expect needs a classifier" \
  infer "$tmp/bad/raw_output.onnx" "$in/vec4.npy" --expect 1
usage "--output in a missing folder (before the run, named once)" "--output $tmp/none/x.npy: cannot write" \
  infer "$cnn" "$in/gray8.png" --output "$tmp/none/x.npy"
usage "--output a folder" "--output $tmp: is a folder" infer "$cnn" "$in/gray8.png" --output "$tmp"
usage "--json with --quiet" "--json and --quiet are two report forms" infer "$cnn" "$in/gray8.png" --json --quiet
expect "--expect matches a label in any case" 0 infer "$cnn" "$in/gray8.png" --expect SEVEN --quiet

# bad models: exit 3, naming the file, the node and the reason
expect "missing model file" 3 infer "$tmp/none.onnx" "$in/gray8.png"
check "the missing model is named" grep -q "mpsrun: error: $tmp/none.onnx: cannot open" "$err"
for f in truncated_61 random_0 png_magic cycle huge_dims short_raw_data external_missing; do
  expect "bad model $f: exit 3" 3 infer "$tmp/bad/$f.onnx" "$in/vec4.npy"
done
expect "unsupported op: exit 3" 3 infer "$tmp/bad/unsupported_op.onnx" "$in/vec4.npy"
check "the unsupported op is named with its node" grep -q "node 'decode' (ImageDecoder): op ImageDecoder is not supported" "$err"
expect "a model whose output is strings: exit 3" 3 infer "$tmp/bad/cast_to_string.onnx" "$in/vec4.npy"
check "... saying the command line does not print strings" grep -q "output 'y' is a tensor of strings, which mpsrun does not print on the command line yet" "$err"
expect "a constant Gather index out of range: exit 3, not 4" 3 infer "$tmp/bad/gather_const_index_oob.onnx" "$in/vec4.npy"
expect "inspect refuses it too (no backend 'runs every node')" 3 inspect "$tmp/bad/gather_const_index_oob.onnx"
check "inspect names the node" grep -q "node 'gat' (Gather): index 7 is out of range" "$err"
expect "inspect on a 100,000-node chain" 0 inspect "$tmp/bad/chain_100000_reversed.onnx"
check "inspect counts its nodes" grep -q "100,000 nodes" "$out"
expect "unsupported attribute: exit 3" 3 infer "$tmp/bad/unsupported_attr.onnx" "$in/vec4.npy"
check "the attribute is named" grep -q "node 'relu' (Relu): attribute 'alpha' is not supported" "$err"

# bad inputs: exit 4, naming the file and the problem
for f in truncated.png bad_crc.png not_an_image.png empty.png f64.npy wrong_shape.npy fortran.npy truncated.npy \
  bad_palette.png; do
  expect "bad input $f: exit 4" 4 infer "$cnn" "$in/$f"
  check "$f is named in the error" grep -q "mpsrun: error: $in/$f: " "$err"
done
check "a palette index past the palette is refused, not read as black" grep -q "palette index is past the palette" "$err"
check "a float64 .npy says its dtype" bash -c "'$mpsrun' infer '$cnn' '$in/f64.npy' 2>&1 | grep -q \"dtype is '<f8'\""
expect "missing input file: exit 4" 4 infer "$cnn" "$tmp/none.png"

# ---- bench ---------------------------------------------------------------------
expect "bench without a target" 2 bench
expect "bench --help" 0 bench --help
expect "bench matmul --help" 0 bench matmul --help
check "bench matmul --help documents its options" bash -c "for o in sizes backend precision repeat warmup seed json csv; do \
  grep -q -- \"--\$o\" $out || exit 1; done"
expect "bench matmul" 0 bench matmul --sizes 32,48x16x8 --repeat 3
check "the header names the machine and the BLAS" grep -Eq '^machine .*BLAS .*[0-9]+ threads?$' "$out"
check "one row per size, with the direct GEMM beside it" bash -c "[ \$(grep -Ec '^cpu +fp32 +(32x32x32|48x16x8) .*%' $out) = 2 ]"
expect "bench matmul --json" 0 bench matmul --sizes 64 --repeat 3 --seed 7 --json
check "bench matmul --json fields" jq -e '.schema_version == 1 and (.machine.cpu | length) > 0 and .machine.threads >= 1
  and .results[0].m == 64 and .results[0].gflops > 0 and .results[0].max_rel_err < 1e-5
  and .results[0].direct.gflops > 0 and .results[0].p10_ms <= .results[0].p90_ms' "$out" >/dev/null
check "bench matmul --json: cpu is timed through its run path, not resident" jq -e '[.results[] | select(.backend == "cpu")]
  | length == 1 and all(.resident == false and (has("run_median_ms") | not))' "$out" >/dev/null
if [ "$(nproc)" -ge 2 ]; then
  check "bench matmul --json: the machine's core round trip" jq -e '.machine.core_round_trip_ns > 0' "$out" >/dev/null
fi
expect "bench matmul --csv" 0 bench matmul --sizes 16 --repeat 2 --csv
check "bench matmul --csv has a header and a row" bash -c "head -1 $out | grep -q '^backend,precision,m,n,k' && [ \$(wc -l <$out) = 2 ]"
expect "bench matmul --sizes 0" 2 bench matmul --sizes 0
expect "bench matmul --sizes 2x3" 2 bench matmul --sizes 2x3
expect "bench matmul --backend nope" 2 bench matmul --backend nope
expect "bench matmul --precision fp16 on cpu" 2 bench matmul --backend cpu --precision fp16 --sizes 8
usage "bench matmul --json --csv: one message" "bench matmul: --json and --csv are two report forms: give one" \
  bench matmul --json --csv
usage "bench matmul --threads 100000" "--threads must be 1 to" bench matmul --threads 100000 --sizes 8
usage "bench matmul --repeat 0" "--repeat must be 1 to 1000000, not 0" bench matmul --repeat 0 --sizes 8
usage "bench model --warmup -1" "--warmup must be 0 to 1000000, not -1" bench model "$mlp" --warmup=-1
usage "bench matmul --sizes 8,junk, before any size is timed" "--sizes: 'junk' is not n or MxNxK" \
  bench matmul --sizes 8,junk
usage "bench model --batch 1,0, before any batch is timed" "--batch: '0' is not a size from 1 to 65536" \
  bench model "$mlp" --batch 1,0
usage "bench matmul --sizes 64,,64: an empty item" "--sizes 64,,64: an empty item" bench matmul --sizes 64,,64
usage "bench matmul --sizes 64,: a trailing comma" "--sizes 64,: an empty item" bench matmul --sizes 64,
usage "bench model --backend cpu,cpu: a backend twice" "--backend cpu,cpu: 'cpu' is given twice" \
  bench model "$mlp" --backend cpu,cpu
usage "bench model --batch 4 on a model that fixes its batch, before any row" "--batch 4: the model fixes input" \
  bench model "$tmp/bad/chain_100000_reversed.onnx" --batch 1,4
for f in "" --json --csv; do
  expect "bench model on a file that is not a model $f: exit 3" 3 bench model /etc/hostname $f
  check "bench model on a file that is not a model $f: nothing on stdout" test ! -s "$out"
done
usage "bench model --precision fp16 on cpu: nothing runs, said before any work" \
  "--precision fp16: no backend asked computes in it (cpu fp16)" bench model "$mlp" --backend cpu --precision fp16
expect "bench model --precision fp32,fp16 on cpu: the pair cpu cannot compute is skipped" 0 \
  bench model "$mlp" --backend cpu --precision fp32,fp16 --repeat 2 --csv
check "the skipped pair is said, and only fp32 rows follow" bash -c "grep -q 'skipping cpu fp16' $err &&
  [ \$(grep -c ',cpu,fp32,' $out) = 1 ] && ! grep -q fp16 $out"
cp "$mlp" "$tmp/a,b\"c.onnx"
expect "bench model --profile --csv on a path with a comma and a quote" 0 bench model "$tmp/a,b\"c.onnx" --repeat 2 \
  --profile --csv
check "the CSV parses: the path quoted, a row for the model and one per node with shares summing to 1" \
  "${PYTHON:-/usr/bin/python3}" -c "
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert all(r['model'].endswith('a,b\"c.onnx') for r in rows), rows
nodes = [r for r in rows if r['node']]
assert len(rows) == 1 + len(nodes) and len(nodes) == 5 and abs(sum(float(r['share']) for r in nodes) - 1) < 1e-5, rows
" "$out"
expect "bench model --profile --json" 0 bench model "$cnn" --repeat 3 --profile --json
check "the JSON has each node's median and share" jq -e '.results[0].profile | any(.op == "Conv+Relu")
  and (map(.share) | add | . > 0.999 and . < 1.001) and all(.median_ms >= 0 and (.node | length) > 0)' "$out" >/dev/null
cp "$in/gray8.png" "$tmp/$(printf 'bad\xff\xfename.png')"
expect "infer --json on a file name that is not UTF-8" 0 infer "$cnn" "$tmp/$(printf 'bad\xff\xfename.png')" --json
check "the JSON parses, the bad bytes as U+FFFD" jq -e '.results[0].input | endswith("bad\ufffd\ufffdname.png")' "$out" >/dev/null
expect "bench model --help" 0 bench model --help
expect "bench model with batches" 0 bench model "$mlp" --batch 1,4 --repeat 3 --json
check "bench model --json has one result per batch" jq -e '.results | length == 2 and .[1].batch == 4
  and .[1].inferences_per_s > 0 and .[0].median_ms > 0' "$out" >/dev/null
check "bench model --json: no resident time for cpu" jq -e '[.results[] | select(.backend == "cpu")]
  | length == 2 and all(has("resident_median_ms") | not)' "$out" >/dev/null
expect "bench model --profile" 0 bench model "$cnn" --repeat 3 --profile
check "the profile lists every node with its share" bash -c "grep -q 'share' $out && grep -q 'Conv+Relu' $out && \
  grep -q '100.0%' $out"
expect "bench model --csv" 0 bench model "$cnn" --repeat 2 --csv
expect "bench model --batch 0" 2 bench model "$cnn" --batch 0
expect "bench model on a fixed-batch model with --batch 2" 2 bench model "$tmp/bad/external_ok.onnx" --batch 2
expect "bench model on a bad model" 3 bench model "$tmp/bad/cycle.onnx"

# ---- --output-png: class masks and images --------------------------------------
"${PYTHON:-/usr/bin/python3}" "$src/tests/cli/make_pictures.py" "$tmp/pics"
pics=$tmp/pics
expect "--output-png: a class mask" 0 infer "$pics/seg4.onnx" "$pics/in/0.npy" --output-png "$tmp/mask.png" --output "$tmp/seg.npy"
check "the report says what it wrote" grep -q "^pictures   1 PNG file as $tmp/mask.png: class masks (the largest of 4 scores" "$out"
pngcheck() { "${PYTHON:-/usr/bin/python3}" -c "$1" "${@:2}"; }
check "the mask is the argmax over the channels, in VOC's palette" pngcheck '
import sys, numpy as np
from PIL import Image
im = Image.open(sys.argv[1]); y = np.load(sys.argv[2])
assert im.mode == "P" and im.getpalette()[:9] == [0, 0, 0, 128, 0, 0, 0, 128, 0], (im.mode, im.getpalette()[:9])
assert (np.array(im) == y[0].argmax(0)).all()' "$tmp/mask.png" "$tmp/seg.npy"
expect "--output-png: an RGB image" 0 infer "$pics/rgb.onnx" "$pics/in/1.npy" --output-png "$tmp/rgb.png" --output "$tmp/rgb.npy"
check "an image is [0, 1] as 0 to 255, clamped and rounded" pngcheck '
import sys, numpy as np
from PIL import Image
im = Image.open(sys.argv[1]); y = np.load(sys.argv[2])[0]
want = np.rint(np.clip(y, 0, 1) * np.float32(255)).astype(np.uint8).transpose(1, 2, 0)
assert im.mode == "RGB" and (np.array(im) == want).all() and want.max() == 255' "$tmp/rgb.png" "$tmp/rgb.npy"
expect "--output-png --mask: a 3-channel output as classes" 0 infer "$pics/rgb.onnx" "$pics/in/1.npy" --output-png "$tmp/rgbmask.png" --mask
check "--mask makes it a palette mask" pngcheck '
import sys, numpy as np
from PIL import Image
im = Image.open(sys.argv[1]); assert im.mode == "P" and (np.array(im) == np.load(sys.argv[2])[0].argmax(0)).all()' "$tmp/rgbmask.png" "$tmp/rgb.npy"
expect "--output-png: an integer output is the mask" 0 infer "$pics/ints.onnx" "$pics/in/0.npy" --output-png "$tmp/ints.png" --output "$tmp/ints.npy"
check "its classes as they are" pngcheck '
import sys, numpy as np
from PIL import Image
assert (np.array(Image.open(sys.argv[1])) == np.load(sys.argv[2])[0, 0]).all()' "$tmp/ints.png" "$tmp/ints.npy"
expect "--output-png DIR over a folder and a 3-item .npy" 0 infer "$pics/seg4.onnx" "$pics/in" "$pics/three.npy" --output-png "$tmp/masks" -q
check "one PNG per item, named by input order" bash -c '[ "$(cd "$1" && ls | tr "\n" " ")" = "000000.png 000001.png 000002_0.png 000002_1.png 000002_2.png " ]' _ "$tmp/masks"
usage "--output-png FILE.png over several inputs" "name a folder" infer "$pics/seg4.onnx" "$pics/in" --output-png "$tmp/one.png"
expect "--output-png FILE.png over a 3-item .npy" 2 infer "$pics/seg4.onnx" "$pics/three.npy" --output-png "$tmp/one3.png"
check "says to name a folder, before anything runs, and writes no file" bash -c '[ ! -s "$3" ] &&
  grep -q "one3.png is one file, and .*three.npy holds 3 items: name a folder" "$1" && [ ! -e "$2" ]' _ "$err" "$tmp/one3.png" "$out"
expect "--output-png: an integer class beyond the palette: that input failed (exit 4)" 4 infer "$pics/ints_big.onnx" "$pics/in/0.npy" --output-png "$tmp/big.png"
check "says which class and pixel" grep -q "class 25[6-9] at pixel 0 is outside the palette's 0 to 255" "$err"
expect "--output-png: NaN scores" 0 infer "$pics/seg4nan.onnx" "$pics/three.npy" --output-png "$tmp/nanmasks" --output "$tmp/nan.npy" -q
check "NaN never wins; a pixel of NaN only is class 0" pngcheck '
import sys, numpy as np
from PIL import Image
y = np.load(sys.argv[2]); nan = np.isnan(y)
assert nan.any(axis=1).any() and nan.all(axis=1).any() and (~nan).all(axis=1).any(), "the case is not made"
for i in range(3):
    want = np.where(nan[i], -np.inf, y[i]).argmax(0)
    want[nan[i].all(0)] = 0
    got = np.array(Image.open(f"{sys.argv[1]}/000000_{i}.png"))
    assert (got == want).all(), (got, want)' "$tmp/nanmasks" "$tmp/nan.npy"
usage "--mask alone" "--mask says how --output-png writes" infer "$pics/seg4.onnx" "$pics/in/0.npy" --mask
expect "--output-png on a classifier" 2 infer "$cnn" "$in/gray8.png" --output-png "$tmp/x.png"
check "says the output is no picture" grep -q "first output must be \[batch, channels, height, width\]" "$err"

# ---- inspect -------------------------------------------------------------------
expect "inspect --help" 0 inspect --help
expect "inspect" 0 inspect "$cnn"
check "inspect shows inputs with their free dims" grep -q 'image f32 \[batch=1,1,28,28\]' "$out"
check "inspect shows the metadata" grep -q 'mean: 0.1307' "$out"
check "inspect shows the totals and the arena" \
  bash -c "grep -q '^totals .*105,866 parameters (413.5 KiB of weights), 2.258 MFLOPs (1.117 M multiply' $out &&
           grep -q '^memory .*98.0 KiB in one arena' $out"
check "inspect separates the thousands of a node's FLOPs" grep -Eq '^ +3 .* 4,640 +1,806,336$' "$out"
check "inspect says which backends run every node" grep -Eq '^backends +cpu +runs every node' "$out"
expect "inspect --json" 0 inspect "$cnn" --json
check "inspect --json fields" jq -e '.schema_version == 1 and .totals.params == 105866 and (.nodes | length) == 10
  and .nodes[0].op == "Conv" and .nodes[0].macs == 112896 and .inputs[0].shape == ["batch", 1, 28, 28]
  and .totals.arena_bytes > 0 and .totals.arena_bytes <= .totals.activation_bytes_without_reuse
  and (.backends[] | select(.name == "cpu") | .runs_every_node)' "$out" >/dev/null
expect "inspect a bad model" 3 inspect "$tmp/bad/unsupported_op.onnx"
check "inspect names the node" grep -q "node 'decode' (ImageDecoder)" "$err"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
