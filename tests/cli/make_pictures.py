#!/usr/bin/python3
"""Writes small models whose first output is a picture, and inputs for them,
into OUT, for --output-png's tests: seg4 (a 1x1 Conv to 4 class scores),
rgb (an image of 3 channels, some values past 1), ints (an int64 class
mask), ints_big (classes from 256 up: outside the palette), seg4nan (scores
with NaN); in/0.npy and in/1.npy (one item each), three.npy (3 items).
Every input is [N, 3, 6, 5].

usage: make_pictures.py OUT
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

d = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
os.makedirs(os.path.join(d, "in"), exist_ok=True)


def save(name, nodes, out_type, out_shape, inits=()):
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6, 5])],
                          [helper.make_tensor_value_info("y", out_type, out_shape)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.save(m, os.path.join(d, name + ".onnx"))


rng = np.random.default_rng(7)
w = numpy_helper.from_array(rng.standard_normal((4, 3, 1, 1)).astype(np.float32), "w")
save("seg4", [helper.make_node("Conv", ["x", "w"], ["y"])], TensorProto.FLOAT, ["N", 4, 6, 5], [w])
save("rgb", [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "k"], ["y"])],
     TensorProto.FLOAT, ["N", 3, 6, 5], [numpy_helper.from_array(np.array(1.2, np.float32), "k")])
save("ints", [helper.make_node("ReduceMax", ["x"], ["r"], axes=[1], keepdims=1), helper.make_node("Abs", ["r"], ["a"]),
              helper.make_node("Mul", ["a", "k"], ["m"]), helper.make_node("Cast", ["m"], ["y"], to=TensorProto.INT64)],
     TensorProto.INT64, ["N", 1, 6, 5], [numpy_helper.from_array(np.array(3.0, np.float32), "k")])
save("ints_big", [helper.make_node("ReduceMax", ["x"], ["r"], axes=[1], keepdims=1), helper.make_node("Abs", ["r"], ["a"]),
                  helper.make_node("Add", ["a", "k"], ["m"]), helper.make_node("Cast", ["m"], ["y"], to=TensorProto.INT64)],
     TensorProto.INT64, ["N", 1, 6, 5], [numpy_helper.from_array(np.array(256.0, np.float32), "k")])
# log of a 4-channel conv: NaN where a score is negative (every score of some pixels)
save("seg4nan", [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Log", ["c"], ["y"])],
     TensorProto.FLOAT, ["N", 4, 6, 5], [w])
for i in range(2):
    np.save(os.path.join(d, "in", f"{i}.npy"), rng.standard_normal((1, 3, 6, 5)).astype(np.float32))
np.save(os.path.join(d, "three.npy"), rng.standard_normal((3, 3, 6, 5)).astype(np.float32))
