#!/usr/bin/python3
"""torch_stream.py FOLDER THREADS: PyTorch's usual pipeline over a folder of
PNGs (as scripts/bench-stream compares mpsrun with): a Dataset that opens
each file with PIL, ToTensor and Normalize (Fashion-MNIST's mean and std), a
DataLoader with 2 worker processes and batch 64, and the fashion_cnn
architecture (random weights) under inference_mode; the predicted classes
are kept, as a user's loop would. Prints {"images_per_s": ..., "seconds": ...}
for the whole pass, workers' start included."""
import json
import os
import sys
import time

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms

import peer_models


class PNGs(Dataset):
    def __init__(self, folder):
        self.paths = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".png"))
        self.tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.2860,), (0.3530,))])

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with Image.open(self.paths[i]) as img:
            return self.tf(img.convert("L"))


folder, threads = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(threads)
model = peer_models.module("fashion_cnn")
data = PNGs(folder)
t0 = time.perf_counter()
classes = []
with torch.inference_mode():
    for x in DataLoader(data, batch_size=64, num_workers=2):
        classes.append(model(x).argmax(1))
seconds = time.perf_counter() - t0
print(json.dumps({"images_per_s": len(data) / seconds, "seconds": seconds, "images": len(data)}))
