#!/usr/bin/python3
"""torch_bench.py NAME SHAPE THREADS WARMUP REPEAT: times PyTorch (eager,
inference_mode) on a shipped model's architecture, the 784-512-512-10 MLP or a
torchvision model, random weights and input, in a process of its own; prints
{"median_ms": ...}."""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models"))
import torch  # noqa: E402
import torchvision  # noqa: E402

import train_models  # noqa: E402

name, shape, threads, warmup, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
torch.set_num_interop_threads(1)
shipped = {"mnist_mlp": train_models.MnistMLP, "mnist_cnn": lambda: train_models.SmallCNN(16, 32, 64),
           "fashion_cnn": lambda: train_models.SmallCNN(32, 64, 128)}
if name in shipped:
    module = shipped[name]()
elif name == "mlp_784_512_512_10":
    import export_torch
    module = export_torch.MLP()
else:
    module = getattr(torchvision.models, name)(weights=None)
module = module.eval()
x = torch.randn(*map(int, shape.split(",")))
times = []
with torch.inference_mode():
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        module(x)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"median_ms": statistics.median(times)}))
