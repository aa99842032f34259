#!/usr/bin/python3
"""Writes models of several and typed inputs into OUT, with inputs and what
PyTorch (or numpy, for the typed one) computes:

    two.onnx       image f32 [batch, 3, 16, 16], vec f32 [batch, 6] -> probs [batch, 4], feat [batch, 4]
                   (PyTorch, batch free); image.npy, vec.npy, vec64.npy (float64), both.npz,
                   both_compressed.npz, probs.npy, feat.npy; image2.npy, vec2.npy (a batch of 2), probs2.npy
    typed.onnx     tokens i64 [batch, seq], scale f32 [] (a scalar), flag bool [1] -> y f32 [batch, seq, 3]:
                   an embedding of the tokens, times scale, negated where flag; tokens.npy, scale.npy,
                   flag.npy, y.npy; tokens_long.npy (another seq), y_long.npy
    if_rate.onnx   x f32 [n], rate i64 [] -> y: an If on rate > 16000 (x / 2, else x * 2), as an
                   audio front-end chooses by its sample rate; x4.npy, rate44k.npy, rate8k.npy
    if_score.onnx  x f32 [4], idx i64 [80] -> y f32 [4], z f32 []: If on sum(x) > 0, decided at run time
                   (what the inputs hold, not their shapes): then an If on max(x) > 1 (x * 10 + 1, else
                   x * 100 + 1) and z the sum of x[idx]; else -x and z the sum of x. Both branches name
                   values alike (sibling scopes). score_*.npy inputs, idx_ok.npy, idx_bad.npy (an index out
                   of range: the then branch fails, the else branch never reads it)
    two_f16.onnx   two.onnx converted to float16 (tests/models/fp16.py), inputs and outputs f16 too;
                   image16.npy, vec16.npy; probs16.npy, feat16.npy: PyTorch in f32 on its f16 weights and
                   inputs, rounded to f16 (what mpsrun computes: model.h)
    two_f16_io32.onnx  the same with f32 inputs and outputs, a Cast at each edge; probs16_32.npy, feat16_32.npy

usage: make_typed_models.py OUT
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import fp16  # noqa: E402

out = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
os.makedirs(out, exist_ok=True)
p = lambda name: os.path.join(out, name)
torch.manual_seed(0)


class Two(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, image, vec):
        f = self.conv(image).mean(dim=(2, 3))
        return torch.softmax(f + self.fc(vec), dim=1), f * 2


two = Two().eval()
batch = {0: "batch"}
x, v = torch.randn(1, 3, 16, 16), torch.randn(1, 6)
torch.onnx.export(two, (x, v), p("two.onnx"), input_names=["image", "vec"], output_names=["probs", "feat"],
                  opset_version=13, dynamic_axes={"image": batch, "vec": batch, "probs": batch, "feat": batch})
with torch.no_grad():
    probs, feat = two(x, v)
    x2, v2 = torch.randn(2, 3, 16, 16), torch.randn(2, 6)
    probs2, _ = two(x2, v2)
np.save(p("image.npy"), x.numpy())
np.save(p("vec.npy"), v.numpy())
np.save(p("vec64.npy"), v.numpy().astype(np.float64))
np.save(p("probs.npy"), probs.numpy())
np.save(p("feat.npy"), feat.numpy())
np.save(p("image2.npy"), x2.numpy())
np.save(p("vec2.npy"), v2.numpy())
np.save(p("probs2.npy"), probs2.numpy())
np.savez(p("both.npz"), image=x.numpy(), vec=v.numpy())
np.savez_compressed(p("both_compressed.npz"), image=x.numpy(), vec=v.numpy())

for keep_io, name in ((False, "two_f16"), (True, "two_f16_io32")):
    onnx.save(fp16.convert(onnx.load(p("two.onnx")), keep_io=keep_io), p(name + ".onnx"))
with torch.no_grad():
    for t in two.parameters():
        t.copy_(torch.from_numpy(fp16.rounded(t.numpy())))
    x16, v16 = fp16.rounded(x.numpy()), fp16.rounded(v.numpy())
    probs16, feat16 = (a.numpy() for a in two(torch.from_numpy(x16), torch.from_numpy(v16)))
np.save(p("image16.npy"), x16.astype(np.float16))
np.save(p("vec16.npy"), v16.astype(np.float16))
np.save(p("probs16.npy"), probs16.astype(np.float16))
np.save(p("feat16.npy"), feat16.astype(np.float16))
np.save(p("probs16_32.npy"), probs16)
np.save(p("feat16_32.npy"), feat16)

rng = np.random.default_rng(3)
table = rng.standard_normal((10, 3)).astype(np.float32)
nodes = [helper.make_node("Gather", ["table", "tokens"], ["e"], axis=0),
         helper.make_node("Mul", ["e", "scale"], ["s"]),
         helper.make_node("Neg", ["s"], ["n"]),
         helper.make_node("Where", ["flag", "n", "s"], ["y"])]
graph = helper.make_graph(nodes, "typed", [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["batch", "seq"]),
                                           helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
                                           helper.make_tensor_value_info("flag", TensorProto.BOOL, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", 3])],
                          [numpy_helper.from_array(table, "table")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.save(model, p("typed.onnx"))
for name, seq in (("", 5), ("_long", 9)):
    tokens = rng.integers(0, 10, (2, seq)).astype(np.int64)
    np.save(p(f"tokens{name}.npy"), tokens)
    np.save(p(f"y{name}.npy"), -(table[tokens] * np.float32(0.5)))
np.save(p("scale.npy"), np.array(0.5, np.float32))
np.save(p("flag.npy"), np.array([True]))

half = helper.make_graph([helper.make_node("Mul", ["x", "h"], ["a"])], "half", [],
                         [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)],
                         [numpy_helper.from_array(np.array(0.5, np.float32), "h")])
double = helper.make_graph([helper.make_node("Add", ["x", "x"], ["b"])], "double", [],
                           [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
graph = helper.make_graph([helper.make_node("Greater", ["rate", "lim"], ["high"]),
                           helper.make_node("If", ["high"], ["y"], name="by_rate", then_branch=half, else_branch=double)],
                          "if_rate", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"]),
                                      helper.make_tensor_value_info("rate", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
                          [numpy_helper.from_array(np.array(16000, np.int64), "lim")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.save(model, p("if_rate.onnx"))
np.save(p("x4.npy"), np.arange(4, dtype=np.float32))
np.save(p("rate44k.npy"), np.array(44100, np.int64))
np.save(p("rate8k.npy"), np.array(8000, np.int64))

big = helper.make_graph([helper.make_node("Mul", ["x", "ten"], ["u"]), helper.make_node("Add", ["u", "one"], ["r"])],
                        "big", [], [helper.make_tensor_value_info("r", TensorProto.FLOAT, [4])],
                        [numpy_helper.from_array(np.array(10, np.float32), "ten")])
small = helper.make_graph([helper.make_node("Mul", ["x", "hundred"], ["u"]), helper.make_node("Add", ["u", "one"], ["r"])],
                          "small", [], [helper.make_tensor_value_info("r", TensorProto.FLOAT, [4])],
                          [numpy_helper.from_array(np.array(100, np.float32), "hundred")])
then = helper.make_graph([helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
                          helper.make_node("Greater", ["m", "one"], ["c2"]),
                          helper.make_node("If", ["c2"], ["t"], name="by_max", then_branch=big, else_branch=small),
                          helper.make_node("Gather", ["x", "idx"], ["g"], axis=0),
                          helper.make_node("ReduceSum", ["g"], ["s"], keepdims=0)],
                         "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4]),
                                      helper.make_tensor_value_info("s", TensorProto.FLOAT, [])])
other = helper.make_graph([helper.make_node("Neg", ["x"], ["t"]), helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)],
                          "else", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [4]),
                                       helper.make_tensor_value_info("s", TensorProto.FLOAT, [])])
graph = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
                           helper.make_node("Greater", ["sum", "zero"], ["c"]),
                           helper.make_node("If", ["c"], ["y", "z"], name="by_sum", then_branch=then, else_branch=other)],
                          "if_score", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                                       helper.make_tensor_value_info("idx", TensorProto.INT64, [80])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [])],
                          [numpy_helper.from_array(np.array(0, np.float32), "zero"),
                           numpy_helper.from_array(np.array(1, np.float32), "one")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.save(model, p("if_score.onnx"))
for name, x in (("big", [2, 0.5, -1, 0.25]), ("small", [0.5, 0.25, 0.75, -0.5]), ("neg", [-2, 0.5, -1, 0.25])):
    np.save(p(f"score_{name}.npy"), np.array(x, np.float32))
np.save(p("idx_ok.npy"), np.arange(80, dtype=np.int64) % 4)
np.save(p("idx_bad.npy"), np.full(80, 99, np.int64))
