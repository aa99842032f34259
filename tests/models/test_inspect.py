#!/usr/bin/python3
"""`mpsrun inspect --json` counts against an independent count from the PyTorch
modules, for the shipped models and torchvision's resnet18:

- multiply-accumulates: forward hooks on every Conv2d (output elements x
  in_channels/groups x kernel taps) and Linear (output elements x in_features);
- parameters as the exported file holds them: PyTorch folds each BatchNorm into
  the convolution before it, so every Conv2d has weight + out_channels and
  every Linear weight + bias (true of these models: their convolutions all have
  a bias or a BatchNorm).

usage: test_inspect.py MPSRUN SRC OUT
"""
import json
import os
import subprocess
import sys

import torch
import torchvision

mpsrun, src, out = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "scripts"))
import train_models  # noqa: E402

passed = failed = 0


def count(module, shape):
    macs = [0]

    def hook(m, inp, outp):
        if isinstance(m, torch.nn.Conv2d):
            macs[0] += outp.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, torch.nn.Linear):
            macs[0] += outp.numel() * m.in_features

    params = 0
    for m in module.modules():
        m.register_forward_hook(hook)
        if isinstance(m, torch.nn.Conv2d):
            params += m.weight.numel() + m.out_channels
        elif isinstance(m, torch.nn.Linear):
            params += m.weight.numel() + m.bias.numel()
    with torch.no_grad():
        module.eval()(torch.randn(*shape))
    return params, macs[0]


cases = {
    "mnist_mlp": (train_models.MnistMLP(), os.path.join(src, "models", "mnist_mlp.onnx"), (1, 1, 28, 28)),
    "mnist_cnn": (train_models.SmallCNN(16, 32, 64), os.path.join(src, "models", "mnist_cnn.onnx"), (1, 1, 28, 28)),
    "fashion_cnn": (train_models.SmallCNN(32, 64, 128), os.path.join(src, "models", "fashion_cnn.onnx"),
                    (1, 1, 28, 28)),
}
resnet = torchvision.models.resnet18(weights=None).eval()
os.makedirs(out, exist_ok=True)
path = os.path.join(out, "resnet18.onnx")
if not os.path.exists(path):
    torch.onnx.export(resnet, torch.randn(1, 3, 224, 224), path, opset_version=13)
cases["resnet18"] = (resnet, path, (1, 3, 224, 224))

for name, (module, onnx_path, shape) in cases.items():
    params, macs = count(module, shape)
    got = json.loads(subprocess.run([mpsrun, "inspect", onnx_path, "--json"], check=True, capture_output=True,
                                    text=True).stdout)["totals"]
    ok = got["params"] == params and got["macs"] == macs
    print(f"{'ok  ' if ok else 'FAIL'} {name}: mpsrun {got['params']} parameters, {got['macs']} MACs; "
          f"PyTorch count {params} parameters, {macs} MACs", flush=True)
    passed, failed = passed + ok, failed + (not ok)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
