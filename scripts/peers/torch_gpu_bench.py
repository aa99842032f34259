#!/usr/bin/python3
"""torch_gpu_bench.py NAME SHAPE WARMUP REPEAT: PyTorch on the GPU in fp32 (TF32
off in cuDNN and cuBLAS, as mpsrun's default), eager and CUDA-graph replay,
for a shipped model's architecture, the 784-512-512-10 MLP or a torchvision
model (random weights). Prints medians, each run timed to completion:
eager_ms and graph_ms with input and output on the GPU (PyTorch's best case),
graph_host_ms with the input copied in from pinned host memory and the
output copied out, as `mpsrun bench model` times itself."""
import json
import statistics
import sys
import time

import torch

import peer_models

name, shape, warmup, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
module = peer_models.module(name).cuda()
x = torch.randn(*map(int, shape.split(",")), device="cuda")


def timed(fn):
    times = []
    for i in range(warmup + repeat):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


with torch.inference_mode():
    eager = timed(lambda: module(x))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            module(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = module(x)
    graph = timed(g.replay)
    xh, yh = torch.empty_like(x, device="cpu").pin_memory(), torch.empty_like(y, device="cpu").pin_memory()

    def with_copies():
        x.copy_(xh, non_blocking=True)
        g.replay()
        yh.copy_(y, non_blocking=True)

    graph_host = timed(with_copies)
print(json.dumps({"eager_ms": eager, "graph_ms": graph, "graph_host_ms": graph_host}))
