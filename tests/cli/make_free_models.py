#!/usr/bin/python3
"""Writes a fully convolutional net whose batch, height and width are free
(PyTorch, dynamic_axes) into OUT as fcn.onnx, with PNG and .npy inputs of
several sizes and what PyTorch computes for each:

    OUT/fcn.onnx                 image [batch, 3, height, width] -> scores [batch, 5, height, width]
    OUT/png/NN_HxW.png           RGB images of six sizes, some sizes twice, in name order
    OUT/png_ref/NN_HxW.npy       PyTorch's scores for each ([1, 5, H, W]; the PNG scaled to [0, 1])
    OUT/npy/NN.npy               float32 inputs [1, 3, H, W] of three sizes
    OUT/npy_ref/NN.npy           PyTorch's scores for each
    OUT/nms.onnx, nms_in.npz     NonMaxSuppression of a free number of boxes (at most 10, IoU 0.5): selects 3, 0, 5
    OUT/nonzero.onnx, nz/NN.npy  NonZero of x [batch, 4]; inputs [1, 4] with 1 and 3 nonzeros

usage: make_free_models.py OUT
"""
import os
import sys

import numpy as np
import torch
from PIL import Image

out = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
for d in ("png", "png_ref", "npy", "npy_ref"):
    os.makedirs(os.path.join(out, d), exist_ok=True)
torch.manual_seed(0)


class FCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                        torch.nn.Conv2d(8, 5, 3, padding=1))

    def forward(self, x):
        y = self.body(x)
        return torch.nn.functional.interpolate(y, size=x.shape[2:], mode="bilinear", align_corners=False)


model = FCN().eval()
free = {0: "batch", 2: "height", 3: "width"}
torch.onnx.export(model, torch.randn(1, 3, 32, 48), os.path.join(out, "fcn.onnx"), input_names=["image"],
                  output_names=["scores"], dynamic_axes={"image": free, "scores": free}, opset_version=13)
rng = np.random.default_rng(1)
for i, (h, w) in enumerate([(32, 48), (32, 48), (20, 30), (64, 64), (20, 30), (33, 17)]):
    img = (rng.random((h, w, 3)) * 255).astype(np.uint8)
    Image.fromarray(img).save(os.path.join(out, "png", f"{i:02d}_{h}x{w}.png"))
    x = torch.from_numpy(img.astype(np.float32).transpose(2, 0, 1)[None] / 255)
    with torch.no_grad():
        np.save(os.path.join(out, "png_ref", f"{i:02d}_{h}x{w}.npy"), model(x).numpy())
for i, (h, w) in enumerate([(16, 16), (24, 40), (16, 16)]):
    x = rng.random((1, 3, h, w), dtype=np.float32)
    np.save(os.path.join(out, "npy", f"{i:02d}.npy"), x)
    with torch.no_grad():
        np.save(os.path.join(out, "npy_ref", f"{i:02d}.npy"), model(torch.from_numpy(x)).numpy())

# sizes a run decides: their outputs take the size the values give them
from onnx import TensorProto, helper, numpy_helper, save  # noqa: E402

vi = helper.make_tensor_value_info
nms = helper.make_graph([helper.make_node("NonMaxSuppression", ["boxes", "scores", "max", "iou"], ["sel"], name="nms")],
                        "nms", [vi("boxes", TensorProto.FLOAT, [1, "n", 4]), vi("scores", TensorProto.FLOAT, [1, 1, "n"])],
                        [vi("sel", TensorProto.INT64, None)],
                        [numpy_helper.from_array(np.array([10], np.int64), "max"),
                         numpy_helper.from_array(np.array([0.5], np.float32), "iou")])
save(helper.make_model(nms, opset_imports=[helper.make_opsetid("", 11)], ir_version=8), os.path.join(out, "nms.onnx"))
boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11], [0, 10.1, 1, 11.1],
                   [0, 100, 1, 101]]], np.float32)
np.savez(os.path.join(out, "nms_in.npz"), boxes=boxes, scores=np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], np.float32))
nz = helper.make_graph([helper.make_node("NonZero", ["x"], ["idx"], name="nz")], "nz",
                       [vi("x", TensorProto.FLOAT, ["batch", 4])], [vi("idx", TensorProto.INT64, None)])
save(helper.make_model(nz, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), os.path.join(out, "nonzero.onnx"))
os.makedirs(os.path.join(out, "nz"), exist_ok=True)
np.save(os.path.join(out, "nz", "00.npy"), np.array([[0, 2, 0, 0]], np.float32))
np.save(os.path.join(out, "nz", "01.npy"), np.array([[1, 0, 3, 4]], np.float32))
