#!/usr/bin/python3
"""The comparison rule catches real bugs: `infer --check`'s default (every element
within 1e-5 of the output's largest magnitude, probabilities as logarithms;
src/tensor/compare.h) passes a correct result under any summation order
(test_shipped.py), and must fail each of these mutants of the shipped models
against PyTorch's saved outputs (models/refs/):

- a wrong weight: in each Conv and Gemm layer, one weight negated: the largest
  whose change reaches some sample's output (the very largest may sit on a path
  that ReLU cuts for every sample);
- a dropped bias: each layer's bias set to zero;
- a shifted image: every sample moved one pixel to the right;
- one pixel one grey level off: the brightest pixel of every sample.

A mutant must fail on every sample whose output it changes at all. A weight on a
path that ReLU cuts for one image leaves that image's output bit for bit as it
was (a dead unit is exactly zero); no rule can see it, so such samples are
counted, not failed.

usage: test_mutants.py MPSRUN SRC OUT      (OUT holds the mutants)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from PIL import Image

mpsrun, src, out = sys.argv[1:4]
MODELS = {"mnist_mlp": "mnist", "mnist_cnn": "mnist", "fashion_cnn": "fashion"}
QUIET = ["--quiet", "--repeat", "0", "--warmup", "0"]
passed = failed = 0


def check(ok, text):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + text, flush=True)
    passed, failed = passed + ok, failed + (not ok)


def outputs(model, pngs):
    """The model's outputs for every PNG, one batch."""
    npy = os.path.join(out, "outputs.npy")
    subprocess.run([mpsrun, "infer", model, *pngs, *QUIET, "--output", npy], check=True, capture_output=True)
    return np.load(npy)


def fails_check(model, png, ref):
    run = subprocess.run([mpsrun, "infer", model, png, "--check", ref, *QUIET], capture_output=True, text=True)
    if run.returncode not in (0, 5):
        raise RuntimeError(f"{model} {png}: exit {run.returncode}: {run.stderr.strip()}")
    return run.returncode == 5


def mutate(model, name, change):
    """A copy of the model with initializer `name` replaced by change(array)."""
    m = onnx.load(model)
    for t in m.graph.initializer:
        if t.name == name:
            t.CopyFrom(numpy_helper.from_array(change(numpy_helper.to_array(t).copy()).astype(np.float32), name))
    path = os.path.join(out, "mutant.onnx")
    onnx.save(m, path)
    return path


def negate(flat_index):
    def change(w):
        w.flat[flat_index] = -w.flat[flat_index]
        return w
    return change


def darken_brightest(a):
    a = a.copy()
    a[np.unravel_index(np.argmax(a), a.shape)] -= 1
    return a


def judge(what, mutant, pngs, refs, before):
    """mutant must fail --check on every sample whose output it changes."""
    changed = [not np.array_equal(a, b) for a, b in zip(outputs(mutant, pngs), before)]
    caught = [c and fails_check(mutant, p, r) for c, p, r in zip(changed, pngs, refs)]
    missed = sum(c and not k for c, k in zip(changed, caught))
    check(any(changed) and missed == 0,
          f"{what}: caught on {sum(caught)} of {sum(changed)} samples it changes "
          f"({len(pngs) - sum(changed)} of {len(pngs)} unchanged: a path ReLU cuts)")


os.makedirs(out, exist_ok=True)
for model, dataset in MODELS.items():
    onnx_path = os.path.join(src, "models", model + ".onnx")
    samples = os.path.join(src, "models", "samples", dataset)
    names = sorted(os.listdir(samples))
    pngs = [os.path.join(samples, n) for n in names]
    refs = [os.path.join(src, "models", "refs", model, n[:-4] + ".npy") for n in names]
    before = outputs(onnx_path, pngs)
    graph = onnx.load(onnx_path).graph
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in (n for n in graph.node if n.op_type in ("Conv", "Gemm")):
        w = inits[node.input[1]]
        for i in np.argsort(-np.abs(w), axis=None)[:64]:
            mutant = mutate(onnx_path, node.input[1], negate(i))
            if not np.array_equal(outputs(mutant, pngs), before):
                break
        judge(f"{model} {node.name} ({node.op_type}): weight {i} of {w.size} negated ({w.flat[i]:+.4f})", mutant,
              pngs, refs, before)
        if len(node.input) > 2:
            mutant = mutate(onnx_path, node.input[2], np.zeros_like)
            judge(f"{model} {node.name} ({node.op_type}): bias dropped", mutant, pngs, refs, before)
    for what, move in (("shifted one pixel right", lambda a: np.concatenate([a[:, :1], a[:, :-1]], axis=1)),
                       ("brightest pixel one grey level darker", darken_brightest)):
        caught = 0
        for png, ref in zip(pngs, refs):
            moved = os.path.join(out, "moved.png")
            Image.fromarray(move(np.array(Image.open(png))).astype(np.uint8)).save(moved)
            caught += fails_check(onnx_path, moved, ref)
        check(caught == len(pngs), f"{model}: each sample {what}: caught on {caught} of {len(pngs)}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
