#!/usr/bin/python3
"""torch_matmul.py N PRECISION REPEAT: PyTorch's a @ b on the GPU (cuBLAS), fp32 (TF32
off), tf32 or fp16 (half inputs); prints {"median_ms": ..., "gflops": ...}."""
import json
import statistics
import sys

import torch

n, prec, repeat = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
dtype = torch.float16 if prec == "fp16" else torch.float32
a, b = torch.randn(n, n, device="cuda", dtype=dtype), torch.randn(n, n, device="cuda", dtype=dtype)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
times = []
for i in range(5 + repeat):
    start.record()
    a @ b
    end.record()
    end.synchronize()
    if i >= 5:
        times.append(start.elapsed_time(end))
med = statistics.median(times)
print(json.dumps({"median_ms": med, "gflops": 2 * n ** 3 / (med * 1e6)}))
