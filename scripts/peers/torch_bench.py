#!/usr/bin/python3
"""torch_bench.py NAME SHAPE THREADS WARMUP REPEAT: times PyTorch (eager,
inference_mode) on a shipped model's architecture, the 784-512-512-10 MLP or a
torchvision model, random weights and input, in a process of its own; prints
{"median_ms": ...}."""
import json
import statistics
import sys
import time

import torch

import peer_models

name, shape, threads, warmup, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
torch.set_num_threads(threads)
torch.set_num_interop_threads(1)
module = peer_models.module(name)
x = torch.randn(*map(int, shape.split(",")))
times = []
with torch.inference_mode():
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        module(x)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({"median_ms": statistics.median(times)}))
