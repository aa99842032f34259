#!/usr/bin/env bash
# test_exports.sh CONFORMANCE SRC OUT: exports MLPs, CNNs and torchvision models
# with PyTorch into OUT (once; again when the export script changes), then runs
# them through mpsrun and compares with PyTorch by the rule of infer --check
# (src/tensor/compare.h: every element within 1e-5 of the output's largest magnitude).
set -euo pipefail
runner=$1 src=$2 out=$3
script=$src/tests/models/export_torch.py
if ! "${PYTHON:-/usr/bin/python3}" -c 'import torch, torchvision, onnx' 2>/dev/null; then
  echo "FAIL: PyTorch is missing (Debian: python3-torch python3-torchvision python3-onnx; ./scripts/setup installs them)"
  exit 1
fi
stamp=$out/.exported
if [ ! -f "$stamp" ] || [ "$script" -nt "$stamp" ]; then
  rm -rf "$out"
  echo "exporting with PyTorch into $out"
  "${PYTHON:-/usr/bin/python3}" "$script" "$out" 2> >(grep -v -i warning >&2)
  touch "$stamp"
fi
# plus the models exported by PyTorch 2.11's default (dynamo) exporter, committed
# (opset 20, IR 10, weights in model.onnx.data): tests/models/recent_exporter/
# The mps-sim backend (the Apple GPU lowering run in double) takes the smaller
# models only (in double, mobilenet_v2 alone takes 30 s here); squeezenet1_1
# brings ceil_mode pooling and Concat, shufflenet and mnasnet depthwise convolutions,
# small_unet Resize and Upsample (nearest, bilinear with align_corners) and skip Concats,
# small_espcn DepthToSpace (PixelShuffle), small_style InstanceNormalization and reflection Pad,
# lppool LpPool (built with onnx.helper, the expected output from the spec in numpy),
# two_in_two_out several inputs and outputs, vit_tiny LayerNormalization and attention,
# resnet18_fp16 the Casts of an f16 model computed in f32, lraspp_free_size a model of free
# height and width built for each of three sizes, lstm_classifier, bigru_tagger, lstm2_state and
# loop_rnn the recurrent nets unrolled into steps.
exec "$runner" --sim-only mlp,small_cnn,shufflenet,mnasnet,squeezenet,small_unet,small_espcn,small_style,lppool,two_in_two_out,vit_tiny,resnet18_fp16,lraspp_free,lstm_classifier,bigru_tagger,lstm2_state,loop_rnn \
  "$src/tests/models/expected_exports.txt" "$out" \
  "$src/tests/models/recent_exporter"
