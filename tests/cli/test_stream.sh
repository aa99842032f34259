#!/usr/bin/env bash
# test_stream.sh MPSRUN SRC: many inputs through `mpsrun infer` and `mpsrun
# eval`: folders, @lists and stdin; chunks of --batch (a .npy larger than a
# chunk, a batch that leaves a short last chunk); the four report forms;
# --keep-going and the stop at a bad file; --output and --check over a
# stream; --shard by hand, from Slurm's and Kubernetes's variables, and a
# 4-way sharded run through GNU parallel merged and compared with one
# process's output; the progress line on a terminal only; eval against
# PyTorch's classes of the same images. Prints one line per check and
# "N passed, N failed, N skipped" last.
set -u
mpsrun=${1:?usage: test_stream.sh path/to/mpsrun SRC}
src=${2:?usage: test_stream.sh path/to/mpsrun SRC}
source "$(dirname "$0")/lib.sh"
py=${PYTHON:-/usr/bin/python3}
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_STEP SLURM_ARRAY_TASK_COUNT JOB_COMPLETION_INDEX
cnn=$src/models/fashion_cnn.onnx

# 200 Fashion-MNIST test images (the shipped model's held-out set), flat and by class
"$py" "$src/tests/models/heldout.py" fashion "$tmp/flat" 200 >/dev/null
"$py" "$src/tests/models/heldout.py" fashion "$tmp/classes" 200 --by-class >/dev/null
torch=$(grep -v '^#' "$src/models/refs/fashion_cnn/heldout.txt" | head -200) # PyTorch's class of each
n=200

# ---- what a folder, a list and stdin give -----------------------------------------
expect "a folder of 200 PNGs" 0 infer "$cnn" "$tmp/flat" -q
cp "$out" "$tmp/folder.tsv"
check "one tab-separated line per image, in name order, truth.txt skipped" \
  bash -c '[ "$(cut -f1 "$1")" = "$(for i in $(seq 0 199); do printf "%s/%05d.png\n" "$2" $i; done)" ]' _ "$out" "$tmp/flat"
check "every class is PyTorch's" bash -c '[ "$(cut -f3 "$1")" = "$2" ]' _ "$out" "$torch"
ls "$tmp"/flat/*.png >"$tmp/list.txt"
expect "@FILE: a list of paths" 0 infer "$cnn" "@$tmp/list.txt" -q
check "the list gives what the folder gives" cmp -s "$out" "$tmp/folder.tsv"
"$mpsrun" infer "$cnn" - -q <"$tmp/list.txt" >"$out" 2>"$err"
check "-: the list on stdin gives the same" cmp -s "$out" "$tmp/folder.tsv"
# one thread a core: decoding takes turns with the runs; one thread in all (cores to
# spare, on any machine of two or more): it overlaps them. Classes and probabilities agree.
expect "--threads 1 (decoding beside the runs)" 0 infer "$cnn" "$tmp/flat" -q --threads 1 --batch 7
check "the same classes and probabilities as one thread a core" bash -c '
  [ "$(awk -F"\t" "{ printf \"%s %s %.4f\n\", \$1, \$3, \$5 }" "$1")" = \
    "$(awk -F"\t" "{ printf \"%s %s %.4f\n\", \$1, \$3, \$5 }" "$2")" ]' _ "$out" "$tmp/folder.tsv"
mkdir -p "$tmp/tree/b/deeper" "$tmp/tree/a" "$tmp/tree/.hidden"
cp "$tmp/flat/00000.png" "$tmp/tree/z.png"
cp "$tmp/flat/00001.png" "$tmp/tree/a/y.PNG"
cp "$tmp/flat/00002.png" "$tmp/tree/b/deeper/x.png"
cp "$tmp/flat/00003.png" "$tmp/tree/.hidden/w.png"
cp "$tmp/flat/00004.png" "$tmp/tree/.v.png"
echo "not an input" >"$tmp/tree/b/notes.txt"
ln -s "$tmp/tree" "$tmp/tree/b/loop"
expect "a folder tree: walked in byte order, hidden names, other files and links to folders skipped" \
  0 infer "$cnn" "$tmp/tree" -q
check "three images: a/y.PNG, b/deeper/x.png, z.png" bash -c '[ "$(cut -f1 "$1" | sed "s|^$2/||")" = "$(printf "a/y.PNG\nb/deeper/x.png\nz.png")" ]' _ "$out" "$tmp/tree"
mkdir -p "$tmp/empty"
expect "a folder without inputs: exit 4" 4 infer "$cnn" "$tmp/empty"
check "it says so" grep -q "no inputs" "$err"
expect "an unreadable list: exit 4" 4 infer "$cnn" "@$tmp/none.txt"
check "the list is named" grep -q "none.txt: cannot open the list" "$err"

# ---- chunks ------------------------------------------------------------------------
expect "--batch 7: 200 images in chunks of 7, the last of 4" 0 infer "$cnn" "$tmp/flat" -q --batch 7
check "the same classes as in chunks of 32" bash -c '[ "$(cut -f1-4 "$1")" = "$(cut -f1-4 "$2")" ]' _ "$out" "$tmp/folder.tsv"
"$py" -c "
import numpy as np, sys
from PIL import Image
x = np.stack([np.array(Image.open(f'{sys.argv[1]}/{i:05d}.png'), np.float32) / 255 for i in range(5)])
np.save(sys.argv[2], ((x - 0.2860) / 0.3530)[:, None])" "$tmp/flat" "$tmp/five.npy"
expect "a .npy of 5 items between PNGs, chunks of 3 (it does not fit: a chunk of its own)" 0 \
  infer "$cnn" "$tmp/flat/00000.png" "$tmp/five.npy" "$tmp/flat/00001.png" -q --batch 3
check "7 lines: the PNG, the 5 items in order, the PNG" bash -c '[ "$(cut -f1,2 "$1" | sed "s|^.*/||")" = "$(printf "00000.png\t0\nfive.npy\t0\nfive.npy\t1\nfive.npy\t2\nfive.npy\t3\nfive.npy\t4\n00001.png\t0")" ]' _ "$out"
check "the .npy's items get the classes of their PNGs" bash -c '[ "$(sed -n 2,6p "$1" | cut -f3)" = "$(head -5 "$2" | cut -f3)" ]' _ "$out" "$tmp/folder.tsv"
usage "--repeat over many inputs" "--repeat times one input's run" infer "$cnn" "$tmp/flat" --repeat 5
usage "--batch 0" "--batch must be 1 to 65536, not 0" infer "$cnn" "$tmp/flat" --batch 0
expect "--repeat 0 --warmup 0 over many inputs (what they mean already) is fine" 0 \
  infer "$cnn" "$tmp/flat/00000.png" "$tmp/flat/00001.png" --repeat 0 --warmup 0 -q

# ---- report forms --------------------------------------------------------------------
expect "text over a stream" 0 infer "$cnn" "$tmp/flat" --top-k 1
check "one input block each, the batch and the speed" bash -c "[ \$(grep -c '^input ' $out) = $n ] &&
  grep -q '^batch      \[32,1,28,28\] a run, 200 inputs' $out && grep -Eq '^ +200 items in [0-9.]+ s: [0-9,]+ items/s' $out"
expect "--jsonl" 0 infer "$cnn" "$tmp/flat" --jsonl --top-k 2
check "one JSON object a line, in order, with the top classes" bash -c "[ \$(jq -c . $out | wc -l) = $n ] &&
  [ \"\$(jq -r '.top[0].index' $out)\" = \"\$1\" ] && jq -e -s 'all(.[]; (.top | length) == 2) and
  ([.[].index] == [range(200)])' $out >/dev/null" _ "$torch"
expect "--json over a stream" 0 infer "$cnn" "$tmp/flat" --json --top-k 1
check "one JSON object: every result, the counts and the speed" jq -e '(.results | length) == 200
  and .inputs.files == 200 and .inputs.items == 200 and .inputs.failed == 0 and .inputs.items_per_s > 0
  and .timings_ms.runs == 0 and .outputs[0].shape == [32, 10] and .output_kind == "logits"' "$out" >/dev/null
usage "--json and --jsonl" "--json and --jsonl are two report forms" infer "$cnn" "$tmp/flat" --json --jsonl
"$py" "$src/tests/models/make_bad_models.py" "$tmp/models" >/dev/null
"$py" -c "import numpy, sys; numpy.save(sys.argv[1], numpy.arange(4, dtype=numpy.float32).reshape(1, 4))" "$tmp/vec4.npy"
raw=$tmp/models/raw_output.onnx
expect "-q on a model that is not a classifier" 0 infer "$raw" "$tmp/vec4.npy" "$tmp/vec4.npy" -q
check "a line per input: path, item, then the output's values" bash -c '[ "$(cut -f2- "$1")" = "$(printf "0\t0\t1\t2\t3\n0\t0\t1\t2\t3")" ]' _ "$out"
expect "--jsonl on a model that is not a classifier" 0 infer "$raw" "$tmp/vec4.npy" "$tmp/vec4.npy" --jsonl
check "each line has the outputs' values" jq -e -s 'length == 2 and .[1].outputs[0].values == [0, 1, 2, 3]
  and .[1].outputs[0].shape == [2, 2] and .[0].top == []' "$out" >/dev/null

# ---- bad files -------------------------------------------------------------------------
mkdir -p "$tmp/bad"
cp "$tmp"/flat/0000[0-9].png "$tmp/bad/"
echo "not a png" >"$tmp/bad/00004.png"
head -c 100 "$tmp/flat/00005.png" >"$tmp/bad/00005.png"
expect "without --keep-going a bad file stops the stream: exit 4" 4 infer "$cnn" "$tmp/bad" -q --batch 3
check "the inputs before it are reported, none after" bash -c '[ "$(cut -f1 "$1" | sed "s|^.*/||" | tr "\n" " ")" = "00000.png 00001.png 00002.png 00003.png " ]' _ "$out"
check "the error names the file" grep -q "mpsrun: error: $tmp/bad/00004.png: not a PNG or .npy file" "$err"
expect "without --keep-going, --json stops at the bad file" 4 infer "$cnn" "$tmp/bad" --json --batch 3
check "the JSON is still one whole object: the 4 files before it, then its error; 5 inputs not run" jq -e \
  '(.results | length) == 5 and .results[4].error.exit_code == 4 and .inputs.not_run == 5 and .inputs.failed == 1' \
  "$out" >/dev/null
expect "without --keep-going, the text says where it stopped" 4 infer "$cnn" "$tmp/bad" --batch 3
check "stopped, and how many were not run" grep -q '^stopped    at an input that failed (named on stderr): 5 of 10 inputs not run' "$out"
expect "--keep-going: every good file reported, exit 4" 4 infer "$cnn" "$tmp/bad" -q --keep-going
check "8 results" bash -c '[ $(wc -l < "$1") = 8 ]' _ "$out"
check "each bad file named on stderr, and the count" bash -c "grep -q '00004.png: not a PNG' $err &&
  grep -q '00005.png: corrupt PNG' $err && grep -q '2 of 10 inputs failed' $err"
expect "--keep-going in chunks of 4: the files after a bad one move into its room" 4 infer "$cnn" "$tmp/bad" -q \
  --keep-going --batch 4
check "each good file has its own class and probability (those of its copy in a clean run)" bash -c '
  [ "$(sed "s|^.*/||" "$1" | awk -F"\t" "{ printf \"%s %s %.4f\n\", \$1, \$3, \$5 }")" = \
    "$(grep -E "/0000[0-36-9].png" "$2" | sed "s|^.*/||" | awk -F"\t" "{ printf \"%s %s %.4f\n\", \$1, \$3, \$5 }")" ]' \
  _ "$out" "$tmp/folder.tsv"
expect "--keep-going --jsonl: an error object for each bad file, in its place" 4 infer "$cnn" "$tmp/bad" --jsonl \
  --keep-going
check "10 lines, errors at 4 and 5 with exit_code 4" jq -e -s 'length == 10 and (.[4].error.exit_code == 4)
  and (.[5].error.message | test("corrupt PNG")) and ([.[] | select(.error)] | length == 2) and .[6].top[0].index >= 0' "$out" >/dev/null
expect "--keep-going --json" 4 infer "$cnn" "$tmp/bad" --json --keep-going
check "--json: valid, with the failures counted" jq -e '.inputs.failed == 2 and (.results | length) == 10' "$out" >/dev/null
mkdir -p "$tmp/allbad" && echo x >"$tmp/allbad/a.png" && echo y >"$tmp/allbad/b.png"
expect "--keep-going --json when no file decodes" 4 infer "$cnn" "$tmp/allbad" --json --keep-going
check "--json is still one valid object" jq -e '(.results | length) == 2 and .inputs.items == 0' "$out" >/dev/null

# ---- --output, --check, --expect over a stream -----------------------------------------
expect "--output over a stream in chunks of 7" 0 infer "$cnn" "$tmp/flat" --output "$tmp/all.npy" --batch 7 -q
check "--output holds every item: [200, 10]" "$py" -c "import numpy, sys; assert numpy.load(sys.argv[1]).shape == (200, 10)" "$tmp/all.npy"
expect "--check of a stream against it (chunks of 32)" 0 infer "$cnn" "$tmp/flat" --check "$tmp/all.npy" -q
"$py" -c "import numpy, sys; a = numpy.load(sys.argv[1]); a[150, 3] += 1; numpy.save(sys.argv[2], a)" "$tmp/all.npy" "$tmp/off.npy"
expect "--check finds one element off in the 151st item" 5 infer "$cnn" "$tmp/flat" --check "$tmp/off.npy" -q
check "it names the element" grep -q "at element 1503" "$err"
expect "--expect over a stream of many classes fails" 5 infer "$cnn" "$tmp/flat" --expect 9 -q
check "it counts the others and names the first" grep -Eq "expect 9: [0-9]+ of 200 items have another top class; the first: .*00001.png has top class 2 'Pullover'" "$err"
cut -f1,3 "$tmp/folder.tsv" | awk -F'\t' '$2 == 1 { print $1 }' >"$tmp/trousers.txt"
expect "--expect over the images PyTorch calls Trouser passes" 0 infer "$cnn" "@$tmp/trousers.txt" --expect trouser -q

# ---- shards ----------------------------------------------------------------------------
expect "--shard 1/4: the second quarter" 0 infer "$cnn" "$tmp/flat" -q --shard 1/4
check "images 50 to 99" bash -c '[ "$(cut -f1 "$1")" = "$(sed -n 51,100p "$2" | cut -f1)" ]' _ "$out" "$tmp/folder.tsv"
usage "--shard 4/4" "--shard 4/4: give K/N with K from 0 to N-1" infer "$cnn" "$tmp/flat" --shard 4/4
usage "--shard auto without a scheduler" "no scheduler's shard in the environment" \
  infer "$cnn" "$tmp/flat" --shard auto
SLURM_ARRAY_TASK_ID=6 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_STEP=2 SLURM_ARRAY_TASK_COUNT=4 \
  expect "--shard auto in a Slurm array (tasks 4,6,8,10)" 0 infer "$cnn" "$tmp/flat" -q --shard auto
check "task 6 is shard 1 of 4" bash -c '[ "$(cut -f1 "$1")" = "$(sed -n 51,100p "$2" | cut -f1)" ]' _ "$out" "$tmp/folder.tsv"
JOB_COMPLETION_INDEX=3 expect "--shard auto/4 in a Kubernetes indexed Job" 0 infer "$cnn" "$tmp/flat" -q --shard auto/4
check "index 3 is the last quarter" bash -c '[ "$(cut -f1 "$1")" = "$(sed -n 151,200p "$2" | cut -f1)" ]' _ "$out" "$tmp/folder.tsv"
JOB_COMPLETION_INDEX=3 usage "--shard auto in Kubernetes needs the count" "--shard auto/N" \
  infer "$cnn" "$tmp/flat" --shard auto
expect "more shards than inputs: an empty shard is no error" 0 infer "$cnn" "$tmp/flat/00000.png" \
  "$tmp/flat/00001.png" -q --shard 0/3
check "it prints nothing" test ! -s "$out"
if command -v parallel >/dev/null; then
  # --batch 10 keeps every item in the same chunk composition sharded or not: the bytes must agree
  parallel -k "$mpsrun" infer "$cnn" "$tmp/flat" --jsonl --batch 10 --shard {}/4 ::: 0 1 2 3 </dev/null >"$tmp/merged.jsonl"
  "$mpsrun" infer "$cnn" "$tmp/flat" --jsonl --batch 10 >"$tmp/one.jsonl"
  check "4 shards through GNU parallel, merged: byte for byte one process's --jsonl" cmp -s "$tmp/merged.jsonl" "$tmp/one.jsonl"
  # at the default batch the shards' chunks differ from one process's, and a probability's last digit may
  # round the other way (0.96176 beside 0.961761 under the avx2 kernels): the rest must be the same
  parallel -k "$mpsrun" infer "$cnn" "$tmp/flat" -q --shard {}/4 ::: 0 1 2 3 </dev/null >"$tmp/merged.tsv"
  check "4 shards through GNU parallel at the default batch, merged: one process's -q lines (probabilities to 1e-5)" \
    bash -c 'paste "$1" "$2" | awk -F"\t" "NF != 10 || \$1 != \$6 || \$2 != \$7 || \$3 != \$8 || \$4 != \$9 ||
      (\$5 - \$10 > 1e-5 || \$10 - \$5 > 1e-5) { bad++ } END { exit bad > 0 || NR != 200 }"' _ "$tmp/merged.tsv" "$tmp/folder.tsv"
else
  echo "skip GNU parallel sharding: parallel is not installed (scripts/setup installs it)"; skipped=$((skipped + 2))
fi

# ---- the progress line -----------------------------------------------------------------
if command -v script >/dev/null; then
  script -qec "'$mpsrun' infer '$cnn' '$tmp/flat' -q >/dev/null" "$tmp/typescript" </dev/null >/dev/null 2>&1
  check "on a terminal, a progress line: done/total, images/s, time left" \
    grep -aEq 'mpsrun: [0-9,]+/200 inputs, [0-9,]+/s, [0-9]+:[0-9]{2} left' "$tmp/typescript"
else
  echo "skip the progress line: no script(1) to give mpsrun a terminal"; skipped=$((skipped + 1))
fi
expect "piped, no progress line" 0 infer "$cnn" "$tmp/flat" -q
check "stderr is empty" test ! -s "$err"

# ---- eval ------------------------------------------------------------------------------
expect "eval --help" 0 eval --help
expect "eval a folder of class folders" 0 eval "$cnn" "$tmp/classes" --batch 16
check "the text: accuracy, per class, confusion" bash -c "grep -Eq '^top-1 +[0-9.]+%  \(([0-9,]+) of 200\)' $out &&
  grep -q '^per class' $out && grep -q '^confusion' $out && grep -Eq '^ +9 Ankle boot ' $out"
expect "eval --json" 0 eval "$cnn" "$tmp/classes" --json
cp "$out" "$tmp/eval.json"
"$py" - "$tmp/classes/truth.txt" "$tmp/eval.json" "$src/models/refs/fashion_cnn/heldout.txt" <<'PY' >"$tmp/eval_check.txt"
import json, sys
truth = [int(l) for l in open(sys.argv[1])]
torch = [int(l) for l in open(sys.argv[3]) if not l.startswith("#")][: len(truth)]
e = json.load(open(sys.argv[2]))
conf = [[0] * 10 for _ in range(10)]
for t, p in zip(truth, torch):
    conf[t][p] += 1
ok = e["confusion"] == conf and e["images"] == len(truth) and e["correct1"] == sum(t == p for t, p in zip(truth, torch))
for c, cl in enumerate(e["classes"]):
    col = sum(conf[t][c] for t in range(10))
    ok = ok and cl["images"] == sum(conf[c]) and cl["predicted"] == col
    ok = ok and (cl["recall"] is None if not sum(conf[c]) else abs(cl["recall"] - conf[c][c] / sum(conf[c])) < 1e-12)
    ok = ok and (cl["precision"] is None if not col else abs(cl["precision"] - conf[c][c] / col) < 1e-12)
print("ok" if ok else "differs")
PY
check "eval --json: the confusion matrix, recall and precision of PyTorch's classes" grep -qx ok "$tmp/eval_check.txt"
"$mpsrun" infer "$cnn" "$tmp/classes" --jsonl >"$tmp/classes.jsonl"
check "eval's top-5 is the share of images whose class is among infer's top 5" bash -c '
  hits=$(jq -r "[.input, (.top | map(.index) | join(\" \"))] | @tsv" "$1" |
    awk -F"\t" "{ n = split(\$1, p, \"/\"); if (index(\" \" \$2 \" \", \" \" p[n - 1] \" \")) h++ } END { print h + 0 }")
  [ "$(jq .correct5 "$2")" = "$hits" ] && [ "$(jq ".correct5 >= .correct1" "$2")" = true ]' _ "$tmp/classes.jsonl" "$tmp/eval.json"
mkdir -p "$tmp/named/Trouser" "$tmp/named/ankle boot"
cp "$tmp"/classes/1/*.png "$tmp/named/Trouser/"
cp "$tmp"/classes/9/*.png "$tmp/named/ankle boot/"
expect "eval: folders named by label, in any case" 0 eval "$cnn" "$tmp/named" --json
check "Trouser is class 1, ankle boot class 9" jq -e '.classes[1].folder == "Trouser" and .classes[9].folder == "ankle boot"
  and .classes[0].images == 0 and .classes[0].recall == null' "$out" >/dev/null
mkdir -p "$tmp/named/giraffe"
cp "$tmp/flat/00000.png" "$tmp/named/giraffe/"
expect "eval: a folder that names no class: exit 4" 4 eval "$cnn" "$tmp/named"
check "it names the folder" grep -q "giraffe: names no class" "$err"
cp "$tmp/flat/00000.png" "$tmp/classes/stray.png"
expect "eval: an image outside the class folders: exit 4" 4 eval "$cnn" "$tmp/classes"
expect "eval on a model that is not a classifier: exit 2" 2 eval "$raw" "$tmp/empty"
check "it says eval needs a classifier" grep -q "needs a classifier" "$err"
expect "eval on a folder without class folders: exit 4" 4 eval "$cnn" "$tmp/empty"

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
