#!/usr/bin/python3
"""The shipped models, through `mpsrun infer` and the PNG path:

1. each sample in models/samples/ gives the output PyTorch saved for it at
   export time (models/refs/<model>/<sample>.npy), by `--check`'s default rule:
   every element within 1e-5 of the output's largest magnitude (compare.h);
2. every held-out image (2,004 MNIST digits, the 10,000 Fashion-MNIST test
   images), written as a PNG file, gets the class PyTorch predicted for it
   (models/refs/<model>/heldout.txt), unless the two classes are tied within
   that tolerance: each of mpsrun's outputs is within 1e-5 of the row's scale of
   PyTorch's, so an order can only flip where mpsrun's two values lie within
   2e-5 of the scale. Such ties are counted and printed; mpsrun's accuracy too;
3. the CNNs quantized by `mpsrun quantize` on 500 training images classify
   the held-out images within 0.5 points of the float model's accuracy.

usage: test_shipped.py MPSRUN SRC OUT      (OUT caches the held-out PNGs)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

mpsrun, src, out = sys.argv[1:4]
MODELS = {"mnist_mlp": "mnist", "mnist_cnn": "mnist", "fashion_cnn": "fashion"}
RTOL = 1e-5  # --check's default
passed = failed = 0


def check(ok, text):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + text, flush=True)
    passed, failed = passed + ok, failed + (not ok)


def infer(model, files, *flags):
    return subprocess.run([mpsrun, "infer", model, *files, *flags], capture_output=True, text=True)


def check_quantized(model, dataset, onnx, heldout, truth, float_acc):
    """Quantizes model on 500 training images (minmax) and classifies the held-out folder with it."""
    calib = os.path.join(out, dataset + "_train500")
    if not os.path.exists(os.path.join(calib, "truth.txt")):
        subprocess.run([sys.executable, os.path.join(src, "tests", "models", "heldout.py"), dataset, calib, "500",
                        "--train"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        q = os.path.join(tmp, model + ".int8.onnx")
        files = sorted(os.path.join(calib, f) for f in os.listdir(calib) if f.endswith(".png"))
        run = subprocess.run([mpsrun, "quantize", onnx, *files, "-o", q], capture_output=True, text=True)
        if run.returncode == 0:
            run = subprocess.run([mpsrun, "infer", q, heldout, "--quiet"], capture_output=True, text=True)
        if run.returncode != 0:
            check(False, f"{model} int8: {run.stderr.strip()}")
            return
        ours = [int(line.split("\t")[2]) for line in run.stdout.splitlines()]
        acc = sum(a == b for a, b in zip(ours, truth)) / len(truth)
        check(len(ours) == len(truth) and abs(acc - float_acc) <= 0.005,
              f"{model} int8 (mpsrun quantize, 500 training images): accuracy {acc:.4f} on the {len(truth)} "
              f"held-out images, float {float_acc:.4f} (within 0.5 points)")


for model, dataset in MODELS.items():
    onnx = os.path.join(src, "models", model + ".onnx")
    samples = os.path.join(src, "models", "samples", dataset)
    for png in sorted(os.listdir(samples)):
        ref = os.path.join(src, "models", "refs", model, png[:-4] + ".npy")
        run = infer(onnx, [os.path.join(samples, png)], "--check", ref, "--json", "--repeat", "0", "--warmup", "0")
        detail = json.loads(run.stdout)["checks"]["check"]["detail"] if run.stdout else run.stderr.strip()
        check(run.returncode == 0, f"{model} {png}: matches PyTorch's output to 1e-5 of its scale ({detail})")

    heldout = os.path.join(out, dataset)
    if not os.path.exists(os.path.join(heldout, "truth.txt")):
        subprocess.run([sys.executable, os.path.join(src, "tests", "models", "heldout.py"), dataset, heldout],
                       check=True)
    with open(os.path.join(heldout, "truth.txt")) as f:
        truth = [int(line) for line in f]
    with open(os.path.join(src, "models", "refs", model, "heldout.txt")) as f:
        torch_pred = [int(line) for line in f if not line.startswith("#")]
    # the whole folder in one stream: its files in name order, results as tab-separated lines
    ours, outputs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        npy = os.path.join(tmp, "out.npy")
        run = subprocess.run([mpsrun, "infer", onnx, heldout, "--quiet", "--output", npy], capture_output=True,
                             text=True)
        if run.returncode != 0:
            check(False, f"{model}: mpsrun failed on the held-out folder: {run.stderr.strip()}")
        else:
            rows = [line.split("\t") for line in run.stdout.splitlines()]
            check([r[0] for r in rows] == [os.path.join(heldout, f"{i:05d}.png") for i in range(len(truth))],
                  f"{model}: one line per held-out PNG, in the folder's name order")
            ours = [int(r[2]) for r in rows]
            outputs.append(np.load(npy))
    values = np.concatenate(outputs) if outputs else np.zeros((0, 10))
    agree = sum(a == b for a, b in zip(ours, torch_pred))
    # a disagreement is a tie when mpsrun's values of the two classes lie within 2 tolerances
    ties = [i for i, (a, b) in enumerate(zip(ours, torch_pred)) if a != b and
            values[i, a] - values[i, b] <= 2 * RTOL * np.abs(values[i]).max()]
    acc = sum(a == b for a, b in zip(ours, truth)) / len(truth)
    torch_acc = sum(a == b for a, b in zip(torch_pred, truth)) / len(truth)
    check(len(ours) == len(truth) == len(values) and agree + len(ties) == len(truth),
          f"{model}: mpsrun's class equals PyTorch's for {agree} of {len(truth)} held-out PNGs, "
          f"{len(ties)} more tied within 2e-5 of the scale{' (images ' + str(ties[:5]) + ')' if ties else ''}; "
          f"accuracy mpsrun {acc:.4f}, PyTorch {torch_acc:.4f}")
    if "cnn" in model:
        check_quantized(model, dataset, onnx, heldout, truth, acc)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
