#!/usr/bin/env bash
# test_exits.sh MPSRUN SRC: what a CI script relies on. The exit code of
# every report form (text, --json, --jsonl, -q) with and without
# --output-png, for each kind of failure (a failed --check, inputs that
# failed under --keep-going or stopped the stream, an unreadable --check
# reference, a picture that cannot be made, a failed --expect), with the
# report still whole; then what is checked before any input is read, stdin
# read as it comes, unreadable sub-folders, --output's rows under
# --keep-going, files refused by their first bytes, --shard's arithmetic,
# control characters, errors beside the progress line, and quantize's exit
# codes and the model it writes. Prints one line
# per check and "N passed, N failed, N skipped" last.
set -u
mpsrun=${1:?usage: test_exits.sh path/to/mpsrun SRC}
src=${2:?usage: test_exits.sh path/to/mpsrun SRC}
source "$(dirname "$0")/lib.sh"
py=${PYTHON:-/usr/bin/python3}
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_STEP SLURM_ARRAY_TASK_COUNT JOB_COMPLETION_INDEX
cnn=$src/models/fashion_cnn.onnx
"$py" "$src/tests/cli/make_pictures.py" "$tmp/pics" >/dev/null
"$py" "$src/tests/models/heldout.py" fashion "$tmp/flat" 20 >/dev/null
pics=$tmp/pics
mkdir -p "$tmp/good" "$tmp/withbad"
cp "$pics/in/0.npy" "$pics/in/1.npy" "$tmp/good/"
cp "$pics/in/0.npy" "$pics/in/1.npy" "$tmp/withbad/"
echo "not an array" >"$tmp/withbad/0b.npy" # between the two: 0.npy, 0b.npy, 1.npy
"$mpsrun" infer "$pics/seg4.onnx" "$tmp/good" --output "$tmp/ref_ok.npy" -q >/dev/null
"$py" -c "import numpy, sys; a = numpy.load(sys.argv[1]); a[1, 2, 3, 4] += 1; numpy.save(sys.argv[2], a)" \
  "$tmp/ref_ok.npy" "$tmp/ref_off.npy"
"$py" -c "import numpy, sys; numpy.save(sys.argv[1], numpy.zeros((2, 4, 6, 5), numpy.int64))" "$tmp/ref_i64.npy"

# ---- the exit code: report form x --output-png x failure ------------------------------
# wellformed FORM: stdout is what the form promises (one JSON document, a JSON object a line, ...)
wellformed() {
  case $1 in
  json) jq -e . "$out" >/dev/null ;;
  jsonl) [ -s "$out" ] && jq -e -s 'length > 0' "$out" >/dev/null ;;
  *) [ -s "$out" ] ;;
  esac
}
form_args() {
  case $1 in json) echo --json ;; jsonl) echo --jsonl ;; quiet) echo -q ;; *) ;; esac
}
for form in text json jsonl quiet; do
  for png in none folder; do
    args=($(form_args $form))
    [ $png = folder ] && args+=(--output-png "$tmp/masks_${form}")
    tag="$form, --output-png $png"
    expect "[$tag] every input passes --check: exit 0" 0 infer "$pics/seg4.onnx" "$tmp/good" --check "$tmp/ref_ok.npy" "${args[@]}"
    check "[$tag] ... and the report is whole" wellformed $form
    expect "[$tag] a failed --check: exit 5" 5 infer "$pics/seg4.onnx" "$tmp/good" --check "$tmp/ref_off.npy" "${args[@]}"
    check "[$tag] ... the report is whole, stderr names the element" bash -c "$(declare -f wellformed); out=$out; wellformed $form && grep -q 'at element 199' $err"
    expect "[$tag] an input fails under --keep-going: exit 4" 4 infer "$pics/seg4.onnx" "$tmp/withbad" --keep-going "${args[@]}"
    check "[$tag] ... the report is whole, and stderr counts it" bash -c "$(declare -f wellformed); out=$out; wellformed $form &&
      grep -q '0b.npy: not a PNG or .npy file' $err && grep -q '1 of 3 inputs failed' $err"
    expect "[$tag] an input fails under --keep-going and --check fails too: exit 4 (outranks 5)" 4 \
      infer "$pics/seg4.onnx" "$tmp/withbad" --keep-going --check "$tmp/ref_off.npy" "${args[@]}"
    expect "[$tag] without --keep-going a bad input stops the stream: exit 4" 4 infer "$pics/seg4.onnx" "$tmp/withbad" "${args[@]}"
    check "[$tag] ... after the input before it, the report whole" wellformed $form
    expect "[$tag] an unreadable --check reference: exit 4" 4 infer "$pics/seg4.onnx" "$tmp/good" --check "$tmp/none.npy" "${args[@]}"
    check "[$tag] ... before any input runs: nothing on stdout, the file named" \
      bash -c "[ ! -s $out ] && grep -q \"none.npy: --check's reference: cannot open\" $err"
    expect "[$tag] an int64 --check reference: exit 4, before anything runs" 4 infer "$pics/seg4.onnx" "$tmp/good" \
      --check "$tmp/ref_i64.npy" "${args[@]}"
    check "[$tag] ... its dtype named" bash -c "[ ! -s $out ] && grep -q \"dtype is '<i8'\" $err"
    if [ $png = folder ]; then
      expect "[$tag] a class outside the palette, --keep-going: exit 4" 4 infer "$pics/ints_big.onnx" "$tmp/good" \
        --keep-going "${args[@]}"
      check "[$tag] ... each item named, the report whole" bash -c "$(declare -f wellformed); out=$out; wellformed $form &&
        [ \$(grep -c 'outside the palette' $err) = 2 ] && grep -q '2 of 2 inputs failed (each named above; 2 with no picture)' $err"
      expect "[$tag] a class outside the palette: the stream stops, exit 4" 4 infer "$pics/ints_big.onnx" "$tmp/good" "${args[@]}"
      check "[$tag] ... naming the input, the report whole" bash -c "$(declare -f wellformed); out=$out; wellformed $form &&
        grep -q 'good/0.npy: --output-png: class 25[6-9] at pixel 0 is outside' $err"
    fi
  done
  args=($(form_args $form))
  expect "[$form] a failed --expect: exit 5" 5 infer "$cnn" "$tmp/flat" --expect 3 "${args[@]}"
  check "[$form] ... the report is whole" wellformed $form
  cp -r "$tmp/flat" "$tmp/flatbad" && echo x >"$tmp/flatbad/00003.png"
  expect "[$form] --expect fails and an input failed under --keep-going: exit 4" 4 infer "$cnn" "$tmp/flatbad" \
    --expect 3 --keep-going "${args[@]}"
  rm -rf "$tmp/flatbad"
done
expect "--json: a check not judged when the stream stopped" 4 infer "$pics/seg4.onnx" "$tmp/withbad" --json \
  --check "$tmp/ref_ok.npy" --output-png "$tmp/m"
check "checks.check.judged is false, written.output absent, pictures counted" jq -e '.checks.check.judged == false
  and .checks.check.passed == false and .written.pictures.files == 1' "$out" >/dev/null

# ---- checked before any input is read ---------------------------------------------------
expect "--output-png FILE.png over a 3-item .npy: exit 2 before anything runs" 2 infer "$pics/seg4.onnx" \
  "$pics/three.npy" --output-png "$tmp/one.png" --json
check "nothing on stdout, the count said" bash -c "[ ! -s $out ] && grep -q 'three.npy holds 3 items: name a folder' $err"
echo "a file" >"$tmp/afile"
usage "--output-png in a folder that cannot be made" "--output-png $tmp/afile/masks: cannot make the folder" \
  infer "$pics/seg4.onnx" "$tmp/good" --output-png "$tmp/afile/masks"
usage "--output-png FILE.png where no file can be written" "--output-png $tmp/afile/x.png: cannot write in the folder" \
  infer "$pics/seg4.onnx" "$pics/in/0.npy" --output-png "$tmp/afile/x.png"
usage "--output in a folder that does not exist" "--output $tmp/nowhere/o.npy: cannot write in the folder" \
  infer "$pics/seg4.onnx" "$tmp/good" --output "$tmp/nowhere/o.npy"
expect "--output-png makes the folders on its way" 0 infer "$pics/seg4.onnx" "$tmp/good" --output-png "$tmp/new/a/b" -q
check "two pictures in new/a/b" bash -c "ls '$tmp/new/a/b' | tr '\n' ' ' | grep -qx '000000.png 000001.png '"
check "-q with --output-png: the picture's path, not its values" bash -c "[ \"\$(cut -f3 $out)\" = \"$(printf '%s\n' "$tmp/new/a/b/000000.png" "$tmp/new/a/b/000001.png")\" ]"
usage "--output-png ''" "--output-png: an empty value" infer "$pics/seg4.onnx" "$tmp/good" --output-png ''
usage "--output-png=" "--output-png: an empty value" infer "$pics/seg4.onnx" "$tmp/good" --output-png=
usage "--plot ''" "--plot: an empty value" bench matmul --sizes 16 --plot ''

# ---- stdin is read as it comes --------------------------------------------------------
# the producer writes the second path only once it has read the first result: were stdin read
# whole before anything runs, neither would come (the read times out after 60 s and fails)
coproc MPS { "$mpsrun" infer "$cnn" - -q --batch 32 2>"$err"; }
echo "$tmp/flat/00000.png" >&"${MPS[1]}"
first= second=
IFS= read -r -t 60 first <&"${MPS[0]}"
[ -n "$first" ] && echo "$tmp/flat/00001.png" >&"${MPS[1]}"
exec {MPS[1]}>&-
IFS= read -r -t 60 second <&"${MPS[0]}"
wait "$MPS_PID" 2>/dev/null
check "stdin: the first result comes before the second path is written (--batch 32)" \
  bash -c '[[ "$1" == */00000.png$'"'\t'"'0* ]] && [[ "$2" == */00001.png$'"'\t'"'0* ]]' _ "$first" "$second"
ls "$tmp"/flat/*.png | head -5 >"$tmp/five.txt"
"$mpsrun" infer "$cnn" - --json <"$tmp/five.txt" >"$out" 2>"$err"
check "stdin: --json counts what it read" jq -e '.inputs.files == 5 and .inputs.not_run == 0 and (.results | length) == 5' "$out" >/dev/null
"$mpsrun" infer "$cnn" - "$tmp/flat/00009.png" -q <"$tmp/five.txt" >"$out" 2>"$err"
check "stdin, then a file named after it: in that order" bash -c '[ "$(cut -f1 "$1" | sed "s|.*/||" | tr "\n" " ")" = "00000.png 00001.png 00002.png 00003.png 00004.png 00009.png " ]' _ "$out"

# ---- a sub-folder that cannot be read -----------------------------------------------------
mkdir -p "$tmp/tree/a" "$tmp/tree/b" "$tmp/tree/c"
cp "$tmp/flat/00000.png" "$tmp/tree/a/" && cp "$tmp/flat/00001.png" "$tmp/tree/b/" && cp "$tmp/flat/00002.png" "$tmp/tree/c/"
cp "$cnn" "$tmp/cnn.onnx"
chmod 755 "$tmp" "$tmp/tree" && chmod 644 "$tmp/cnn.onnx" "$tmp"/tree/*/*.png && chmod 000 "$tmp/tree/b"
as_user=()
if [ "$(id -u)" -eq 0 ]; then # root reads any folder: run as nobody, who cannot
  command -v setpriv >/dev/null && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
if [ "$(id -u)" -ne 0 ] || [ ${#as_user[@]} -gt 0 ]; then
  cp "$mpsrun" "$tmp/mpsrun" && chmod 755 "$tmp/mpsrun"
  "${as_user[@]}" "$tmp/mpsrun" infer "$tmp/cnn.onnx" "$tmp/tree" -q --keep-going >"$out" 2>"$err"
  check "--keep-going goes on past a folder it cannot read: exit 4, the others run" bash -c "[ \$? = 0 ] &&
    [ \"\$(cut -f1 $out | sed 's|.*/tree/||' | tr '\n' ' ')\" = 'a/00000.png c/00002.png ' ] &&
    grep -q 'tree/b: cannot read the folder: Permission denied' $err && grep -q '1 of 3 inputs failed' $err"
  "${as_user[@]}" "$tmp/mpsrun" infer "$tmp/cnn.onnx" "$tmp/tree" --jsonl --keep-going >"$out" 2>"$err"; rc=$?
  check "... exit 4, and in --jsonl an error in its place" bash -c "[ $rc = 4 ] && jq -e -s 'length == 3 and
    (.[1].error.message | test(\"cannot read the folder\")) and .[2].top[0].index >= 0' $out >/dev/null"
  "${as_user[@]}" "$tmp/mpsrun" infer "$tmp/cnn.onnx" "$tmp/tree" -q >"$out" 2>"$err"; rc=$?
  check "without --keep-going it stops there: exit 4, after a/" bash -c "[ $rc = 4 ] && [ \$(wc -l < $out) = 1 ]"
else
  echo "skip an unreadable sub-folder: running as root without setpriv, every folder reads"; skipped=$((skipped + 3))
fi
chmod 755 "$tmp/tree/b"

# ---- --output's rows under --keep-going ------------------------------------------------------
expect "--output under --keep-going: exit 4" 4 infer "$pics/seg4.onnx" "$tmp/withbad" --keep-going --output "$tmp/kg.npy"
check "row i is input i's: 3 rows, the failed input's of NaN, the others those of a clean run" "$py" -c "
import numpy as np, sys
a, ok = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == (3, 4, 6, 5), a.shape
assert np.isnan(a[1]).all() and (a[0] == ok[0]).all() and (a[2] == ok[1]).all()" "$tmp/kg.npy" "$tmp/ref_ok.npy"
check "the text report says so" grep -q "^output     $tmp/kg.npy: 3 rows, 1 of NaN for inputs that failed (the first: row 1)" "$out"
expect "--check under --keep-going judges the rows that ran" 4 infer "$pics/seg4.onnx" "$tmp/withbad" --keep-going \
  --check "$tmp/ref_ok.npy" --json
check "... against the reference's rows of the inputs that ran" jq -e '.checks.check.passed == false' "$out" >/dev/null
"$py" -c "import numpy as np, sys; a = np.load(sys.argv[1]); np.save(sys.argv[2], np.stack([a[0], a[0], a[1]]))" \
  "$tmp/ref_ok.npy" "$tmp/ref3.npy"
expect "--check under --keep-going, a reference of a row per input" 4 infer "$pics/seg4.onnx" "$tmp/withbad" \
  --keep-going --check "$tmp/ref3.npy" --json
check "... passes on the rows that ran" jq -e '.checks.check.passed == true and .written == null' "$out" >/dev/null
echo "old" >"$tmp/keep.npy"
expect "--output when the stream stops at a bad input: exit 4" 4 infer "$pics/seg4.onnx" "$tmp/withbad" --output "$tmp/keep.npy"
check "the file there is left as it was, and the report says so" bash -c "[ \"\$(cat $tmp/keep.npy)\" = old ] &&
  grep -q 'keep.npy: not written' $out && ! ls -a $tmp | grep -q mpsrun-"

mkdir -p "$tmp/real" && echo "old" >"$tmp/real/o.npy" && ln -s real/o.npy "$tmp/link.npy"
expect "--output through a symbolic link" 0 infer "$pics/seg4.onnx" "$tmp/good" --output "$tmp/link.npy" -q
check "writes the file it leads to, and leaves the link a link" bash -c "[ -L $tmp/link.npy ] &&
  \"\$1\" -c 'import numpy, sys; assert numpy.load(sys.argv[1]).shape == (2, 4, 6, 5)' $tmp/real/o.npy" _ "$py"

# ---- a .npy of more items than a batch runs in batches ------------------------------------
"$py" -c "
import numpy as np, sys
np.save(sys.argv[1], np.random.default_rng(1).standard_normal((3000, 1, 28, 28)).astype(np.float32))" "$tmp/many.npy"
"$mpsrun" infer "$cnn" "$tmp/many.npy" --output "$tmp/many_whole.npy" -q >/dev/null
if command -v /usr/bin/time >/dev/null; then
  /usr/bin/time -f "%M" -o "$tmp/rss" "$mpsrun" infer "$cnn" "$tmp/many.npy" "$tmp/flat/00000.png" --batch 8 \
    --output "$tmp/many8.npy" --json >"$out" 2>"$err"
  check "a 3,000-item .npy in a stream at --batch 8: runs of 8, under 150 MB (one run of 3,000 took 400)" bash -c "
    jq -e '.outputs[0].shape == [8, 10] and .inputs.items == 3001 and (.results | length) == 3001 and
    .results[2999].item == 2999 and .results[3000].item == 0' $out >/dev/null && [ \$(tail -1 $tmp/rss) -lt 150000 ]"
else
  echo "skip the memory of a large .npy: no /usr/bin/time"; skipped=$((skipped + 1))
fi
check "... its rows are those of one run of all of it (to 1e-5 of the scale)" "$py" -c "
import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == (3001, 10) and b.shape == (3000, 10)
assert np.abs(a[:3000] - b).max() <= 1e-5 * np.abs(b).max()" "$tmp/many8.npy" "$tmp/many_whole.npy"
expect "one .npy given alone is one run, however many items" 0 infer "$pics/seg4.onnx" "$pics/three.npy" --json --repeat 0
check "... of 3" jq -e '.outputs[0].shape == [3, 4, 6, 5]' "$out" >/dev/null
expect "... and in runs of --batch when it is given" 0 infer "$pics/seg4.onnx" "$pics/three.npy" --json --repeat 0 --batch 2
check "... of 2" jq -e '.outputs[0].shape == [2, 4, 6, 5] and .inputs.items == 3' "$out" >/dev/null

# ---- files refused by their first bytes, before the rest is read --------------------------
truncate -s 1900M "$tmp/zeros.png" && truncate -s 2G "$tmp/zeros.onnx"
if command -v /usr/bin/time >/dev/null; then
  /usr/bin/time -f "%M" -o "$tmp/rss" "$mpsrun" infer "$cnn" "$tmp/zeros.png" >"$out" 2>"$err"; rc=$?
  check "a 1.9 GB file of zeros named .png: exit 4, under 100 MB" bash -c "[ $rc = 4 ] &&
    grep -q 'zeros.png: not a PNG or .npy file' $err && [ \$(tail -1 $tmp/rss) -lt 100000 ]"
  /usr/bin/time -f "%M" -o "$tmp/rss" "$mpsrun" infer "$tmp/zeros.onnx" "$tmp/flat/00000.png" >"$out" 2>"$err"; rc=$?
  check "a 2 GiB model of zeros: exit 3, under 100 MB" bash -c "[ $rc = 3 ] &&
    grep -q 'zeros.onnx: not an ONNX model: byte 0 is no protobuf field' $err && [ \$(tail -1 $tmp/rss) -lt 100000 ]"
else
  echo "skip the memory of files refused by their first bytes: no /usr/bin/time"; skipped=$((skipped + 2))
fi
rm -f "$tmp/zeros.png" "$tmp/zeros.onnx"
"$py" -c "
import struct, zlib, sys
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
open(sys.argv[1], 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 60000, 60000, 8, 0, 0, 0, 0)))
" "$tmp/huge.png"
expect "a PNG whose header says 60000x60000: exit 4" 4 infer "$cnn" "$tmp/huge.png"
check "said from its header" grep -q "a PNG of 60000x60000 pixels is larger than mpsrun decodes" "$err"

# ---- --shard's arithmetic -----------------------------------------------------------------
usage "--shard N past 2^63" "--shard 0/99999999999999999999: N must be a whole number from 1" \
  infer "$cnn" "$tmp/flat" --shard 0/99999999999999999999
expect "--shard K = N - 1 with N near 2^63: the last input" 0 infer "$cnn" "$tmp/flat" -q --shard 9223372036854775806/9223372036854775807
check "... is in that shard" bash -c "[ \$(wc -l < $out) = 1 ] && grep -q '00019.png' $out"
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_MIN=junk SLURM_ARRAY_TASK_COUNT=2 \
  usage "SLURM_ARRAY_TASK_MIN=junk" "SLURM_ARRAY_TASK_MIN=junk is not a whole number" infer "$cnn" "$tmp/flat" --shard auto
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_STEP=0 SLURM_ARRAY_TASK_COUNT=2 \
  usage "SLURM_ARRAY_TASK_STEP=0" "SLURM_ARRAY_TASK_STEP=0 is not a whole number from 1" infer "$cnn" "$tmp/flat" --shard auto
SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=99999999999999999999 \
  usage "SLURM_ARRAY_TASK_COUNT past 2^63" "SLURM_ARRAY_TASK_COUNT=99999999999999999999 is not" infer "$cnn" "$tmp/flat" --shard auto
JOB_COMPLETION_INDEX=junk usage "JOB_COMPLETION_INDEX=junk" "JOB_COMPLETION_INDEX=junk is not a whole number" \
  infer "$cnn" "$tmp/flat" --shard auto/4

# ---- control characters, deep folders, errors beside the progress line -----------------------
printf 'T-shirt\001top\nTrouser\033[31mred\nPullover\nDress\nCoat\nSandal\nShirt\nSneaker\nBag\nAnkle boot\n' >"$tmp/labels.txt"
mkdir -p "$tmp/byclass/0" "$tmp/byclass/1"
cp "$tmp"/flat/0000[0-4].png "$tmp/byclass/0/" && cp "$tmp"/flat/0000[5-9].png "$tmp/byclass/1/"
expect "eval --plot with labels that hold control characters" 0 eval "$cnn" "$tmp/byclass" --labels "$tmp/labels.txt" \
  --plot "$tmp/ctl.svg"
check "the chart is well-formed XML" "$py" -c "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])" "$tmp/ctl.svg"
check "no control character reaches the terminal from the text report" bash -c "! grep -qP '[\x01\x1b]' $out"
d=$tmp/deep
for i in $(seq 300); do d=$d/dd; done
mkdir -p "$d" && cp "$tmp/flat/00000.png" "$tmp/deep/"
expect "a folder nested 300 deep under --keep-going: exit 4" 4 infer "$cnn" "$tmp/deep" -q --keep-going
check "the image above it runs; the deep folder is named whole" bash -c "[ \$(wc -l < $out) = 1 ] &&
  grep -q '/dd/dd: folders nested more than 256 deep: not walked' $err && [ \$(head -1 $err | wc -c) -gt 800 ]"
echo "not a png" >"$tmp/byclass/1/00007.png"
expect "eval stops at a bad image: its error once" 4 eval "$cnn" "$tmp/byclass"
check "... once" bash -c "[ \$(grep -c '00007.png' $err) = 1 ]"
if command -v script >/dev/null; then
  mkdir -p "$tmp/slow" && for i in $(seq 0 299); do cp "$tmp/flat/0000$((i % 10)).png" "$tmp/slow/$(printf %04d $i).png"; done
  echo "bad" >"$tmp/slow/0150.png"
  script -qec "'$mpsrun' infer '$cnn' '$tmp/slow' -q --keep-going --batch 1 >/dev/null" "$tmp/typescript" </dev/null >/dev/null 2>&1
  check "on a terminal, a --keep-going error erases the progress line first" bash -c "grep -aq 'inputs, .*/s' $tmp/typescript &&
    grep -aq \$'\r\033\\[Kmpsrun: error: .*0150.png: not a PNG' $tmp/typescript"
else
  echo "skip the progress line and errors: no script(1)"; skipped=$((skipped + 1))
fi

# ---- quantize: its errors and what it writes ----------------------------------------------------
expect "quantize --calibrate bogus: a usage error" 2 quantize "$cnn" "$tmp/good" -o "$tmp/q.onnx" --calibrate bogus
expect "quantize --exclude of a node the model has not: a usage error" 2 quantize "$cnn" "$tmp/flat" -o "$tmp/q.onnx" \
  --exclude no_such_node
check "... naming the option, not the model" grep -q "^mpsrun: error: --exclude no_such_node: the model has no node" "$err"
"$py" -c "import onnx, sys; from onnx import helper as h, TensorProto as T
v = lambda n: h.make_tensor_value_info(n, T.FLOAT, [1, 4, 6, 5])
onnx.save(h.make_model(h.make_graph([h.make_node('Relu', ['x'], ['y'])], 'r', [v('x')], [v('y')]),
                       opset_imports=[h.make_opsetid('', 13)]), sys.argv[1])" "$tmp/relu.onnx"
expect "quantize a model with no Conv, MatMul or Gemm: the model is refused" 3 quantize "$tmp/relu.onnx" "$tmp/good" \
  -o "$tmp/q.onnx"
expect "quantize over a bad calibration image: exit 4" 4 quantize "$cnn" "$tmp/byclass" -o "$tmp/q.onnx"
check "... and nothing written" test ! -e "$tmp/q.onnx"
expect "quantize fashion_cnn on 20 images" 0 quantize "$cnn" "$tmp/flat" -o "$tmp/q.onnx"
check "its report says what it quantized and wrote" grep -q "^quantized  4 of the model's products" "$out"
expect "the quantized model classifies the 20 images" 0 infer "$tmp/q.onnx" "$tmp/flat" -q
check "... as the float model does on 19 or more" bash -c "'$mpsrun' infer '$cnn' '$tmp/flat' -q | cut -f4 >$tmp/f.txt &&
  cut -f4 $out >$tmp/i8.txt && [ \$(paste $tmp/f.txt $tmp/i8.txt | awk '\$1 == \$2' | wc -l) -ge 19 ]"
one=$(ls "$tmp/flat"/*.png | head -1)
expect "the quantized model on one image, on the cpu" 0 infer "$tmp/q.onnx" "$one" --backend cpu
check "... its head says the 4 products run on int8 kernels" grep -q "^model .*; int8, 4 products on int8 kernels)$" "$out"
expect "... and with --json" 0 infer "$tmp/q.onnx" "$one" --backend cpu --json
check "... the model object says int8 and counts the products" "$py" -c "import json, sys
m = json.load(open(sys.argv[1]))['model']
assert m['quantized'] == 'int8' and m['int8_products'] == 4 and 'compute' not in m, m" "$out"
expect "quantize --json" 0 quantize "$cnn" "$tmp/flat" -o "$tmp/q2.onnx" --json --exclude /head/head.4/Gemm
check "... one JSON object: 3 products, the exclusion, 20 inputs, the bytes written" "$py" -c "import json, os, sys
d = json.load(open(sys.argv[1]))
assert d['schema_version'] == 1 and d['products'] == 3 and d['inputs'] == 20 and d['calibrate'] == 'minmax', d
assert d['excluded'] == ['/head/head.4/Gemm'] and d['bytes'] == os.path.getsize(sys.argv[2]) > 0, d" \
  "$out" "$tmp/q2.onnx"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
