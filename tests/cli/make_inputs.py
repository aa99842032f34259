#!/usr/bin/python3
"""Writes the CLI tests' inputs into OUT from one shipped sample digit (a 7):
the same picture as every PNG kind libpng reads, resized copies, corrupt
files, and good and bad .npy arrays.

usage: make_inputs.py SAMPLE.png OUT
"""
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image, PngImagePlugin

sample, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
gray = np.array(Image.open(sample).convert("L"))
p = lambda name: os.path.join(out, name)

# the same pixels in every PNG form: each must reach the model unchanged
Image.fromarray(gray, "L").save(p("gray8.png"))
Image.fromarray(gray.astype(np.uint16) * 257, "I;16").save(p("gray16.png"))
Image.fromarray(np.stack([gray, np.full_like(gray, 255)], -1), "LA").save(p("gray_alpha.png"))
Image.fromarray(np.stack([gray] * 3, -1), "RGB").save(p("rgb.png"))
Image.fromarray(np.stack([gray] * 3 + [np.full_like(gray, 255)], -1), "RGBA").save(p("rgba.png"))
Image.fromarray(gray, "L").convert("P").save(p("palette.png"))


def write_adam7(path, img):
    """An 8-bit gray, Adam7-interlaced PNG (PIL writes none): seven passes, filter 0."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = b""
    for x0, y0, dx, dy in passes:
        sub_img = img[y0::dy, x0::dx]
        if sub_img.size:
            raw += b"".join(b"\0" + row.tobytes() for row in sub_img)
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    h, w = img.shape
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 1)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


write_adam7(p("interlaced.png"), gray)


def write_palette(path, indices, palette, alpha, depth):
    """A palette PNG of depth 1, 2, 4 or 8 bits with a tRNS chunk of alpha values (PIL writes 8-bit only)."""
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    h, w = indices.shape
    per = 8 // depth
    rows = b""
    for row in indices:
        packed = bytearray((w + per - 1) // per)
        for x, i in enumerate(row):
            packed[x // per] |= int(i) << (8 - depth * (x % per + 1))
        rows += b"\0" + bytes(packed)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, 3, 0, 0, 0)) +
                chunk(b"PLTE", bytes(v for c in palette for v in c)) + chunk(b"tRNS", bytes(alpha)) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


# 4-bit palette of 16 grays, translucent entries: composited over black, each pixel gray * alpha
levels, alphas = np.arange(16) * 17, [255 - 8 * i for i in range(16)]
quant = (gray.astype(np.int32) + 8) // 17
write_palette(p("palette4_trns.png"), quant, [(v, v, v) for v in levels], alphas, 4)
# an index (5) past a palette of 2 entries: refused, not read as black
write_palette(p("bad_palette.png"), np.where(gray > 128, 5, 1), [(0, 0, 0), (255, 255, 255)], [255, 255], 8)
# 2x nearest: area averaging back to 28x28 gives the original pixels exactly
Image.fromarray(np.repeat(np.repeat(gray, 2, 0), 2, 1), "L").save(p("big56.png"))
Image.fromarray(gray, "L").resize((14, 14), Image.BILINEAR).save(p("small14.png"))
# an RGB photo-like image: color becomes luma
rgb = np.stack([gray, gray // 2, 255 - gray], -1).astype(np.uint8)
Image.fromarray(rgb, "RGB").save(p("color.png"))

good = open(p("gray8.png"), "rb").read()
open(p("truncated.png"), "wb").write(good[: len(good) // 2])
bad_crc = bytearray(good)
bad_crc[40] ^= 0xFF  # inside IHDR or the first IDAT: the CRC no longer matches
open(p("bad_crc.png"), "wb").write(bytes(bad_crc))
open(p("not_an_image.png"), "w").write("hello\n")
open(p("empty.png"), "wb").close()


def model_input(pixels):
    """What the PNG path must give the shipped MNIST models: 0..255 scaled to [0, 1], normalized."""
    return ((np.asarray(pixels, np.float32) / 255 - 0.1307) / 0.3081).reshape(1, 1, 28, 28).astype(np.float32)


# the pixels the PNG path must compute, from independent references: PyTorch's
# bilinear interpolation (half-pixel centers) for enlarging, exact area averaging
# for shrinking (1.5:1 = every pixel repeated twice, then the mean of 3x3 blocks),
# ITU-R 601 luma for color, alpha composited over black
import torch  # noqa: E402 (slow to import: only here)

small = np.array(Image.open(p("small14.png")), np.float32)
up = torch.nn.functional.interpolate(torch.from_numpy(small)[None, None], size=(28, 28), mode="bilinear",
                                     align_corners=False)
np.save(p("expect_small14.npy"), model_input(up.numpy()))
big42 = np.array(Image.fromarray(gray, "L").resize((42, 42), Image.BICUBIC))
Image.fromarray(big42, "L").save(p("big42.png"))
np.save(p("expect_big42.npy"), model_input(np.repeat(np.repeat(big42.astype(np.float64), 2, 0), 2, 1)
                                           .reshape(28, 3, 28, 3).mean(axis=(1, 3))))
np.save(p("expect_color.npy"), model_input(rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114])))
Image.fromarray(np.stack([gray, np.full_like(gray, 128)], -1), "LA").save(p("half_alpha.png"))
np.save(p("expect_half_alpha.npy"), model_input(gray * (128 / 255)))
np.save(p("expect_palette4_trns.npy"), model_input(levels[quant] * (np.array(alphas)[quant] / 255)))

x = model_input(gray)
np.save(p("digit.npy"), x)
np.save(p("digit_nobatch.npy"), x[0])
np.save(p("batch3.npy"), np.concatenate([x, x, x]))
np.save(p("f64.npy"), x.astype(np.float64))
np.save(p("wrong_shape.npy"), x.reshape(1, 784))
np.save(p("fortran.npy"), np.asfortranarray(x.reshape(28, 28)).reshape(28, 28))
np.save(p("vec4.npy"), np.arange(4, dtype=np.float32).reshape(1, 4))
raw = open(p("digit.npy"), "rb").read()
open(p("truncated.npy"), "wb").write(raw[:-10])
np.save(p("wrong_ref.npy"), np.zeros((1, 10), np.float32))
nan = x.copy()
nan[0, 0, 14, 14] = np.nan  # spreads through the convolutions to every output
np.save(p("nan.npy"), nan)
with open(p("labels.txt"), "w") as f:
    f.write("\n".join(f"digit-{i}" for i in range(10)) + "\n")
print("inputs in", out)
