#!/usr/bin/python3
"""Writes malformed and unsupported ONNX files, and a few valid ones that use
rare legal forms, into OUT, with OUT/manifest.txt listing for each file:

    file <TAB> expected status (ok | model) <TAB> text the error must contain

tests/unit/test_onnx_files.c loads each and checks. The files also seed the
loader's fuzz corpus (tests/fuzz). Built with the onnx package (Debian
python3-onnx), mostly by hand so that the files can be as wrong as needed.

usage: make_bad_models.py OUT
"""
import os
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
os.makedirs(OUT, exist_ok=True)
manifest = []


def save(name, model_or_bytes, status, text=""):
    path = os.path.join(OUT, name)
    data = model_or_bytes if isinstance(model_or_bytes, bytes) else model_or_bytes.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    manifest.append(f"{name}\t{status}\t{text}")


def model(nodes, inputs, outputs, inits=(), opset=13, ir=8):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="mpsrun-tests")
    m.ir_version = ir
    return m


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


rng = np.random.default_rng(7)
w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
good = model([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"], name="relu")],
             [vi("x", ["batch", 4])], [vi("y", ["batch", 3])], [w])
save("good_mlp.onnx", good, "ok")

raw = good.SerializeToString()
for cut in (1, 7, len(raw) // 3, len(raw) // 2, len(raw) - 5):
    save(f"truncated_{cut}.onnx", raw[:cut], "model", "")
random.seed(3)
for i in range(3):
    save(f"random_{i}.onnx", bytes(random.randrange(256) for _ in range(200 + 100 * i)), "model", "")
save("png_magic.onnx", b"\x89PNG\r\n\x1a\n" + bytes(64), "model", "")
save("empty.onnx", b"", "model", "no graph")
save("text.onnx", b"this is not a model\n", "model", "")

# dims: huge, negative, shorter data than shape
huge = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40])
save("huge_dims.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [1, 4])],
                             [vi("y", [1, 3])], [huge]), "model", "2^40")
neg = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, -3])
save("negative_dims.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [1, 4])],
                                 [vi("y", [1, 3])], [neg]), "model", "negative")
short = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3], raw_data=bytes(20))
save("short_raw_data.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [1, 4])],
                                  [vi("y", [1, 3])], [short]), "model", "raw_data holds 20 bytes")
few = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3], float_data=[1.0] * 5)
save("short_float_data.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [1, 4])],
                                    [vi("y", [1, 3])], [few]), "model", "holds 5 values")
save("huge_input.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1 << 30, 1 << 30])],
                              [vi("y", [1 << 30, 1 << 30])]), "model", "too large")

# graph structure
save("cycle.onnx", model([helper.make_node("Add", ["x", "c"], ["b"], name="add"),
                          helper.make_node("Relu", ["b"], ["c"], name="relu")], [vi("x", [2])], [vi("c", [2])]),
     "model", "cycle")
save("undefined_input.onnx", model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [vi("x", [2])],
                                   [vi("y", [2])]), "model", "'ghost'")
save("twice_defined.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="a"),
                                  helper.make_node("Relu", ["x"], ["y"], name="b")], [vi("x", [2])], [vi("y", [2])]),
     "model", "already defined")
save("no_outputs.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2])], []),
     "model", "no outputs")
save("shape_mismatch.onnx", model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [2, 5])],
                                  [vi("y", [2, 3])], [w]), "model", "node 'mm' (MatMul): inner dims")

# unsupported things are named
save("unsupported_op.onnx", model([helper.make_node("ImageDecoder", ["x"], ["y"], name="decode")],
                                  [vi("x", [3, 2, 2])], [vi("y", [3])]), "model",
     "node 'decode' (ImageDecoder): op ImageDecoder is not supported")
save("cast_to_string.onnx", model([helper.make_node("Cast", ["x"], ["y"], name="words", to=TensorProto.STRING)],
                                  [vi("x", [1, 4])], [vi("y", [1, 4], TensorProto.STRING)]), "ok")
save("unsupported_attr.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=2.0)], [vi("x", [2])],
                                    [vi("y", [2])]), "model", "node 'relu' (Relu): attribute 'alpha' is not supported")
save("unsupported_dtype.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                     [vi("x", [2], TensorProto.COMPLEX64)], [vi("y", [2])]), "model", "COMPLEX64")
nameless = helper.make_node("Relu", ["x"], ["y"], name="relu")
nameless.attribute.add().name = "\0hidden"  # found by fuzz_onnx: an empty name once hung the loader
save("nameless_attr.onnx", model([nameless], [vi("x", [2])], [vi("y", [2])]), "model", "attribute '' is not supported")
save("unsupported_domain.onnx", model([helper.make_node("FusedConv", ["x"], ["y"], name="f", domain="com.microsoft")],
                                      [vi("x", [2])], [vi("y", [2])]), "model", "domain 'com.microsoft'")
save("unsupported_pad_mode.onnx", model([helper.make_node("Pad", ["x", "p"], ["y"], name="pad", mode="wrap")],
                                        [vi("x", [2])], [vi("y", [4])],
                                        [numpy_helper.from_array(np.array([1, 1], np.int64), "p")]),
     "model", "mode 'wrap'")
# an LpPool window past the padding (ceil_mode) would average over fewer cells: refused, not miscounted
save("lppool_ceil_mode.onnx", model([helper.make_node("LpPool", ["x"], ["y"], name="lp", kernel_shape=[2, 2],
                                                      strides=[2, 2], ceil_mode=1)],
                                    [vi("x", [1, 1, 5, 5])], [vi("y", [1, 1, 3, 3])], opset=18),
     "model", "node 'lp' (LpPool): ceil_mode is not supported for LpPool")
save("scatter_bad_reduction.onnx", model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="sc",
                                                           reduction="mean")],
                                         [vi("x", [4]), vi("u", [2])], [vi("y", [4])],
                                         [numpy_helper.from_array(np.array([0, 1], np.int64), "i")], opset=18),
     "model", "node 'sc' (ScatterElements): reduction 'mean' is not none, add, mul, max or min")
save("opset_too_new.onnx", model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2])],
                                 [vi("y", [2])], opset=99), "model", "opset 99")

# external data: missing file, offset past the end, a location outside the folder
def external(name, location, offset, length, extra=None):
    t = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3],
                         data_location=TensorProto.EXTERNAL)
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [vi("x", [1, 4])], [vi("y", [1, 3])], [t])
    if extra is not None:
        with open(os.path.join(OUT, location), "wb") as f:
            f.write(extra)
    return m


weights = rng.standard_normal((4, 3)).astype(np.float32).tobytes()
save("external_ok.onnx", external("w", "external_ok.onnx.data", 16, 48, bytes(16) + weights), "ok")
save("external_missing.onnx", external("w", "nowhere.data", 0, 48), "model", "'nowhere.data': cannot open: No such file")
save("external_past_end.onnx", external("w", "external_short.data", 40, 48, weights), "model", "fewer than offset")
save("external_escape.onnx", external("w", "../outside.data", 0, 48), "model", "leaves the folder")
save("external_absolute.onnx", external("w", "/etc/passwd", 0, 48), "model", "is not a relative path")


# links are refused wherever they point, a FIFO without waiting for a writer, a folder as a folder
def link(name, target):
    path = os.path.join(OUT, name)
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


link("external_link.data", "/etc/passwd")
save("external_link.onnx", external("w", "external_link.data", 0, 48), "model", "'external_link.data' is a symbolic link")
link("external_inside_link.data", "external_ok.onnx.data")
save("external_inside_link.onnx", external("w", "external_inside_link.data", 16, 48), "model",
     "'external_inside_link.data' is a symbolic link")
link("etc", "/etc")
save("external_folder_link.onnx", external("w", "./etc/passwd", 0, 48), "model", "'./etc' is a symbolic link")
fifo = os.path.join(OUT, "external.fifo")
if not os.path.exists(fifo):
    os.mkfifo(fifo)
save("external_fifo.onnx", external("w", "external.fifo", 0, 48), "model", "'external.fifo' is not a regular file")
os.makedirs(os.path.join(OUT, "external_dir"), exist_ok=True)
save("external_dir.onnx", external("w", "external_dir", 0, 48), "model", "'external_dir' is not a regular file")
save("external_trailing_slash.onnx", external("w", "external_dir/", 0, 48), "model", "names a folder")
save("external_length.onnx", external("w", "external_ok.onnx.data", 0, 44), "model", "length 44")

# constant Gather indices out of range are the model's fault, found at load (not exit 4 at run)
idx7 = numpy_helper.from_array(np.array([7], np.int64), "i")
save("gather_const_index_oob.onnx", model([helper.make_node("Gather", ["x", "i"], ["y"], name="gat", axis=1)],
                                          [vi("x", [1, 4])], [vi("y", [1, 1])], [idx7]),
     "model", "node 'gat' (Gather): index 7 is out of range for an axis of 4")
save("gather_folded_oob.onnx", model([helper.make_node("Gather", ["c", "i"], ["t"], name="gatc", axis=0),
                                      helper.make_node("Add", ["x", "t"], ["y"], name="add")], [vi("x", [1])],
                                     [vi("y", [1])], [idx7, numpy_helper.from_array(np.array([1, 2], np.float32), "c")]),
     "model", "node 'gatc' (Gather): index 7 is out of range for an axis of 2")

# legal but rare forms must load and run (test_onnx_files runs the "ok" ones)
save("legacy_axis_broadcast.onnx", model([helper.make_node("Add", ["x", "b"], ["y"], name="add", broadcast=1, axis=0)],
                                         [vi("x", [2, 3])], [vi("y", [2, 3])],
                                         [numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "b")], opset=6, ir=3),
     "ok")
save("constant_node.onnx", model([helper.make_node("Constant", [], ["c"], name="c",
                                                   value=numpy_helper.from_array(np.ones((2,), np.float32))),
                                  helper.make_node("Add", ["x", "c"], ["y"], name="add")], [vi("x", [2])],
                                 [vi("y", [2])]), "ok")
f16 = onnx.TensorProto(name="h", data_type=TensorProto.FLOAT16, dims=[2], int32_data=[0x3c00, 0xc000])
save("float16_typed.onnx", model([helper.make_node("Cast", ["h"], ["hf"], name="cast", to=TensorProto.FLOAT),
                                  helper.make_node("Add", ["x", "hf"], ["y"], name="add")], [vi("x", [2])],
                                 [vi("y", [2])], [f16]), "ok")
# bfloat16 weights, widened at load (model.h): bit patterns in int32_data, and little-endian raw_data
for name, bf16 in (("bfloat16_typed.onnx", onnx.TensorProto(name="h", data_type=TensorProto.BFLOAT16, dims=[2],
                                                           int32_data=[0x3f80, 0xc000])),
                   ("bfloat16_raw.onnx", onnx.TensorProto(name="h", data_type=TensorProto.BFLOAT16, dims=[2],
                                                         raw_data=np.array([0x3fc0, 0x4040], "<u2").tobytes()))):
    save(name, model([helper.make_node("Cast", ["h"], ["hf"], name="cast", to=TensorProto.FLOAT),
                      helper.make_node("Add", ["x", "hf"], ["y"], name="add")], [vi("x", [2])], [vi("y", [2])], [bf16]),
         "ok")

# RNN activations from attributes, alpha and beta taken in order by the functions that use them (as
# onnxruntime does): bidirectional, Relu forward and Affine (3 x + 0.5) in reverse, W 1, R 0, only Y asked
ones, zeros = (numpy_helper.from_array(np.full((2, 1, 1), v, np.float32), n) for v, n in ((1, "w"), (0, "r")))
save("rnn_activations.onnx", model([helper.make_node("RNN", ["x", "w", "r"], ["y"], name="rnn", hidden_size=1,
                                                     direction="bidirectional", activations=["Relu", "Affine"],
                                                     activation_alpha=[3.0], activation_beta=[0.5])],
                                   [vi("x", [2, 1, 1])], [vi("y", [2, 2, 1, 1])], [ones, zeros]), "ok")
save("rnn_bad_activation.onnx", model([helper.make_node("RNN", ["x", "w", "r"], ["y"], name="rnn", hidden_size=1,
                                                        direction="bidirectional", activations=["Relu", "Cosine"])],
                                      [vi("x", [2, 1, 1])], [vi("y", None)], [ones, zeros]),
     "model", "node 'rnn' (RNN): activation 'Cosine' is not one ONNX defines for it")

# typed fields instead of raw_data: float_data, int64_data (a Reshape shape), int32_data, double_data
typed = [onnx.TensorProto(name="a", data_type=TensorProto.FLOAT, dims=[2, 3], float_data=[1, 1, 1, 2, 2, 2]),
         onnx.TensorProto(name="shape", data_type=TensorProto.INT64, dims=[1], int64_data=[6]),
         onnx.TensorProto(name="k", data_type=TensorProto.INT32, dims=[1], int32_data=[3]),
         onnx.TensorProto(name="d", data_type=TensorProto.DOUBLE, dims=[1], double_data=[0.5])]
save("typed_fields.onnx", model([helper.make_node("Reshape", ["a", "shape"], ["a6"], name="reshape"),
                                 helper.make_node("Cast", ["k"], ["kf"], name="castk", to=TensorProto.FLOAT),
                                 helper.make_node("Cast", ["d"], ["df"], name="castd", to=TensorProto.FLOAT),
                                 helper.make_node("Mul", ["x", "a6"], ["xa"], name="mul"),
                                 helper.make_node("Mul", ["kf", "df"], ["kd"], name="kd"),
                                 helper.make_node("Add", ["xa", "kd"], ["y"], name="add")],
                                [vi("x", [6])], [vi("y", [6])], typed), "ok")
# before opset 13, Hardmax (like Softmax) works on the input flattened at axis
save("legacy_hardmax.onnx", model([helper.make_node("Hardmax", ["x"], ["y"], name="hardmax", axis=1)],
                                  [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], opset=11), "ok")
# a classifier head ending in Relu gives scores, which infer ranks as they are (no softmax)
save("relu_head.onnx", model([helper.make_node("MatMul", ["x", "w"], ["z"], name="mm"),
                              helper.make_node("Relu", ["z"], ["y"], name="relu")], [vi("x", [1, 4])], [vi("y", [1, 3])],
                             [numpy_helper.from_array(np.array([[1, 0, -1]] * 4, np.float32), "w")]), "ok")
# 100,000 Negs listed last first: the topological sort must reorder them all, in time linear in the graph
chain = [helper.make_node("Neg", [f"v{i}" if i else "x"], [f"v{i + 1}" if i + 1 < 100000 else "y"], name=f"neg{i}")
         for i in range(100000)]
save("chain_100000_reversed.onnx", model(chain[::-1], [vi("x", [2])], [vi("y", [2])]), "ok")
save("raw_output.onnx", model([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")], [vi("x", [1, 4])],
                               [vi("y", [1, 2, 2])], [numpy_helper.from_array(np.array([1, 2, 2], np.int64), "s")]),
     "ok")
meta = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2])], [vi("y", [2])])
for k, v in (("labels", "cat,dog"), ("mean", "0.5")):
    e = meta.metadata_props.add()
    e.key, e.value = k, v
save("metadata.onnx", meta, "ok")

# If with a condition that is a constant once the model is loaded: the branch it takes is mapped in its place
def branch(name, nodes, out, inits=()):
    return helper.make_graph(nodes, name, [], [vi(out, None)], list(inits))


one = numpy_helper.from_array(np.array([1], np.float32), "one")
plus = branch("plus", [helper.make_node("Add", ["x", "one"], ["p"], name="plus_one")], "p", [one])
minus = branch("minus", [helper.make_node("Sub", ["x", "one_m"], ["m"], name="minus_one")], "m",
               [numpy_helper.from_array(np.array([1], np.float32), "one_m")])
save("if_const_cond.onnx", model([helper.make_node("If", ["cond"], ["y"], name="if", then_branch=plus, else_branch=minus)],
                                 [vi("x", [2])], [vi("y", [2])],
                                 [numpy_helper.from_array(np.array(True), "cond")]), "ok")
# the condition from the input's shape (an exporter's size test): 2 > 1, so the then branch, which negates
save("if_shape_cond.onnx", model([helper.make_node("Shape", ["x"], ["s"], name="shape"),
                                  helper.make_node("Greater", ["s", "lim"], ["g"], name="gt"),
                                  helper.make_node("Squeeze", ["g"], ["cond"], name="sq"),
                                  helper.make_node("If", ["cond"], ["y"], name="if",
                                                   then_branch=branch("neg", [helper.make_node("Neg", ["x"], ["n"],
                                                                                               name="neg")], "n"),
                                                   else_branch=minus)],
                                 [vi("x", [2])], [vi("y", [2])], [numpy_helper.from_array(np.array([1], np.int64), "lim")]),
     "ok")
# the branch reads a value of the outer graph computed before the If: (x * 2) + 1
save("if_outer_scope.onnx", model([helper.make_node("Mul", ["x", "two"], ["t"], name="mul"),
                                   helper.make_node("If", ["cond"], ["y"], name="if",
                                                    then_branch=branch("tplus", [helper.make_node(
                                                        "Add", ["t", "one"], ["q"], name="tplus_one")], "q", [one]),
                                                    else_branch=minus)],
                                  [vi("x", [2])], [vi("y", [2])], [numpy_helper.from_array(np.array(True), "cond"),
                                                                   numpy_helper.from_array(np.array([2], np.float32),
                                                                                           "two")]), "ok")
# a condition that depends on what an input holds: both branches mapped, the taken one run each time
save("if_runtime_cond.onnx", model([helper.make_node("If", ["c"], ["y"], name="if_rt", then_branch=plus,
                                                     else_branch=minus)],
                                   [vi("x", [2]), vi("c", [], TensorProto.BOOL)], [vi("y", [2])]), "ok")
# ... whose branches give outputs of other shapes: refused by name (a plan has one shape a value)
twice = branch("twice", [helper.make_node("Concat", ["x", "x"], ["xx"], name="cat", axis=0)], "xx")
save("if_runtime_shapes.onnx", model([helper.make_node("If", ["c"], ["y"], name="if_rt", then_branch=plus,
                                                       else_branch=twice)],
                                     [vi("x", [2]), vi("c", [], TensorProto.BOOL)], [vi("y", None)]),
     "model", "node 'if_rt' (If): its branches give output 0 as f32 [2] and f32 [4]")
# Ifs inside Ifs, 40 deep: refused past 32 (the loader's stack is its own, whatever the file nests)
inner = plus
for k in range(40):
    inner = branch(f"b{k}", [helper.make_node("If", ["cond"], [f"o{k}"], name=f"if{k}", then_branch=inner,
                                              else_branch=minus)], f"o{k}")
save("if_nested_40.onnx", model([helper.make_node("If", ["cond"], ["y"], name="if_top", then_branch=inner,
                                                  else_branch=minus)], [vi("x", [2])], [vi("y", [2])],
                                [numpy_helper.from_array(np.array(True), "cond")]),
     "model", "Ifs nested more than 32 deep")

# Loop: unrolled where its trip count and condition are known at load; refused by name where they are not
acc_body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
                              helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="acc")], "acc",
                             [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL), vi("acc_in", [2])],
                             [vi("c_out", [], TensorProto.BOOL), vi("acc_out", [2])])
save("loop_const_trips.onnx", model([helper.make_node("Loop", ["m", "", "zero"], ["y"], name="loop", body=acc_body)],
                                    [vi("x", [2])], [vi("y", [2])],
                                    [numpy_helper.from_array(np.array(3, np.int64), "m"),
                                     numpy_helper.from_array(np.zeros(2, np.float32), "zero")]), "ok")
save("loop_runtime_trips.onnx", model([helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop_rt", body=acc_body)],
                                      [vi("x", [2]), vi("m", [], TensorProto.INT64)], [vi("y", [2])]),
     "model", "node 'loop_rt' (Loop): its trip count or condition is computed at run time")
# a float trip count (NaN): refused as not an integer, never converted (the fuzzer's find: UB past int64)
save("loop_float_trips.onnx", model([helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop_f", body=acc_body)],
                                    [vi("x", [2])], [vi("y", [2])],
                                    [numpy_helper.from_array(np.array(np.nan, np.float32), "m")]),
     "model", "node 'loop_f' (Loop): its trip count or condition is computed at run time or not an integer")
stop_body = helper.make_graph([helper.make_node("ReduceSum", ["acc_in"], ["s"], name="sum", keepdims=0),
                               helper.make_node("Less", ["s", "ten"], ["c_out"], name="less"),
                               helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="acc")], "stop",
                              [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL), vi("acc_in", [2])],
                              [vi("c_out", [], TensorProto.BOOL), vi("acc_out", [2])],
                              [numpy_helper.from_array(np.array(10, np.float32), "ten")])
save("loop_runtime_cond.onnx", model([helper.make_node("Loop", ["m", "", "x"], ["y"], name="loop_c", body=stop_body)],
                                     [vi("x", [2])], [vi("y", [2])], [numpy_helper.from_array(np.array(3, np.int64), "m")]),
     "model", "node 'loop_c' (Loop): its body computes its condition at run time")

# Scan of opset 8: a batch axis first, unrolled per element and step; sequence_lens other than the full length refused
sum8_body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"], name="add8"),
                               helper.make_node("Identity", ["s_out"], ["y_t"], name="out8")], "sum8",
                              [vi("s_in", [1]), vi("x_t", [1])], [vi("s_out", [1]), vi("y_t", [1])])
save("scan8_batch2_reverse.onnx", model([helper.make_node("Scan", ["", "s0", "x"], ["s_end", "y"], name="scan8",
                                                          body=sum8_body, num_scan_inputs=1, directions=[1])],
                                        [vi("x", [2, 3, 1])], [vi("y", [2, 3, 1])],
                                        [numpy_helper.from_array(np.zeros((2, 1), np.float32), "s0")], opset=8, ir=3), "ok")
save("scan8_partial_lens.onnx", model([helper.make_node("Scan", ["lens", "s0", "x"], ["s_end", "y"], name="scan8p",
                                                        body=sum8_body, num_scan_inputs=1)],
                                      [vi("x", [2, 3, 1])], [vi("y", [2, 3, 1])],
                                      [numpy_helper.from_array(np.zeros((2, 1), np.float32), "s0"),
                                       numpy_helper.from_array(np.array([3, 2], np.int32), "lens")], opset=8, ir=3),
     "model", "node 'scan8p' (Scan): sequence_lens other than the full length")

# a size that depends on what a run feeds: a graph output may have one; a value another node reads may not
save("compress_runtime_cond.onnx", model([helper.make_node("Compress", ["x", "c"], ["y"], name="comp", axis=0)],
                                         [vi("x", [4]), vi("c", [4], TensorProto.BOOL)], [vi("y", None)]), "ok")
save("compress_runtime_relu.onnx", model([helper.make_node("Compress", ["x", "c"], ["k"], name="comp", axis=0),
                                          helper.make_node("Relu", ["k"], ["y"], name="act")],
                                         [vi("x", [4]), vi("c", [4], TensorProto.BOOL)], [vi("y", None)]),
     "model", "node 'act' (Relu): input 'k' is the output of node 'comp' (Compress), whose size depends on the values")

# sequences: resolved at load, every position known then; refused by name where one is not
seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
save("seq_edit.onnx", model([helper.make_node("SplitToSequence", ["x"], ["s"], name="split", keepdims=0),
                             helper.make_node("SequenceErase", ["s", "zero"], ["s1"], name="erase"),
                             helper.make_node("SequenceAt", ["s", "zero"], ["first"], name="at"),
                             helper.make_node("SequenceInsert", ["s1", "first", "one_i"], ["s2"], name="insert"),
                             helper.make_node("ConcatFromSequence", ["s2"], ["y"], name="cat", axis=0, new_axis=1)],
                            [vi("x", [3])], [vi("y", [3])], [i64("zero", 0), i64("one_i", 1)]), "ok")
save("seq_runtime_pos.onnx", model([helper.make_node("SequenceConstruct", ["x", "x"], ["s"], name="make"),
                                    helper.make_node("SequenceAt", ["s", "p"], ["y"], name="at_rt")],
                                   [vi("x", [2]), vi("p", [], TensorProto.INT64)], [vi("y", [2])]),
     "model", "node 'at_rt' (SequenceAt): its position is computed at run time")
save("seq_into_add.onnx", model([helper.make_node("SequenceConstruct", ["x"], ["s"], name="make"),
                                 helper.make_node("Add", ["s", "x"], ["y"], name="add_seq")],
                                [vi("x", [2])], [vi("y", [2])]),
     "model", "node 'add_seq' (Add): input 0 ('s') is a sequence or optional")
seq_branch = lambda name, src: helper.make_graph([helper.make_node("SequenceConstruct", [src], [name + "_s"])],
                                                 name, [], [helper.make_value_info(name + "_s", seq_t)])
save("seq_runtime_if.onnx", model([helper.make_node("If", ["c"], ["s"], name="if_seq", then_branch=seq_branch("t", "x"),
                                                    else_branch=seq_branch("e", "x")),
                                   helper.make_node("ConcatFromSequence", ["s"], ["y"], name="cat", axis=0)],
                                  [vi("x", [2]), vi("c", [], TensorProto.BOOL)], [vi("y", [2])]),
     "model", "node 'if_seq' (If): output 0 is a sequence or optional and its condition is computed at run time")

# quantization: computed in f32 where that is exact; refused by name where it might not be
save("matmulinteger_k300.onnx", model([helper.make_node("MatMulInteger", ["a", "b"], ["y"], name="mmi")],
                                      [vi("a", [2, 300], TensorProto.UINT8), vi("b", [300, 2], TensorProto.UINT8)],
                                      [vi("y", [2, 2], TensorProto.INT32)], opset=10),
     "model", "node 'mmi' (MatMulInteger): a sum of 300 products of its types could pass 2^24")
save("quantize_blocked.onnx", model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="qb", axis=0,
                                                      block_size=2)],
                                    [vi("x", [4])], [vi("y", [4], TensorProto.UINT8)],
                                    [numpy_helper.from_array(np.ones(2, np.float32), "s"),
                                     numpy_helper.from_array(np.zeros(2, np.uint8), "z")], opset=21, ir=10),
     "model", "node 'qb' (QuantizeLinear): blocked quantization (block_size 2) is not supported")

# bad quantization parameters: load errors naming the node (a zero scale would divide by zero; onnxruntime
# refuses mismatched types and axes)
f32 = lambda name, v: numpy_helper.from_array(np.array(v, np.float32), name)
u8 = lambda name, v: numpy_helper.from_array(np.array(v, np.uint8), name)
dq = lambda name, inits, x=vi("x", [2, 3], TensorProto.UINT8), **kw: model(
    [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name=name, **kw)], [x], [vi("y", [2, 3])], inits)
save("dq_zero_scale.onnx", dq("dq0", [f32("s", 0.0), u8("z", 128)]),
     "model", "node 'dq0' (DequantizeLinear): its scale (input 1, 's') holds 0 at 0: a scale must be positive and finite")
save("q_nan_scale.onnx", model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q_nan", axis=1)],
                               [vi("x", [2, 3])], [vi("y", [2, 3], TensorProto.UINT8)],
                               [f32("s", [0.1, float("nan"), 0.1]), u8("z", [0, 0, 0])]),
     "model", "node 'q_nan' (QuantizeLinear): its scale (input 1, 's') holds nan at 1")
save("dq_zp_type.onnx", dq("dq_i8", [f32("s", 0.5), numpy_helper.from_array(np.array(3, np.int8), "z")]),
     "model", "node 'dq_i8' (DequantizeLinear): its zero point (input 2) is i8 and the tensor it belongs to u8")
save("dq_axis_len.onnx", dq("dq_ax", [f32("s", [0.5, 0.25]), u8("z", [1, 2])], axis=1),
     "model", "node 'dq_ax' (DequantizeLinear): input 2 has 2 values, axis 1 of the tensor it quantizes 3")
save("dq_scale_zp_shapes.onnx", dq("dq_sz", [f32("s", [0.5, 0.25, 1.0]), u8("z", [1])], axis=1),
     "model", "node 'dq_sz' (DequantizeLinear): its scale has 3 values and its zero point 1")
# constant weights dequantized at load (one pass, the composition's rounding): along axis 1, zero points of both signs
save("dq_const_weights.onnx", model([helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="dqw", axis=1),
                                     helper.make_node("Add", ["x", "wf"], ["y"], name="add")],
                                    [vi("x", [2, 3])], [vi("y", [2, 3])],
                                    [numpy_helper.from_array(np.array([[3, -2, 5], [1, 6, -1]], np.int8), "w"),
                                     f32("ws", [0.5, 0.25, 2.0]), numpy_helper.from_array(np.array([1, -2, 0], np.int8), "wz")]),
     "ok")
zp300 = helper.make_tensor("z", TensorProto.UINT8, [], [300])  # int32_data holds 8-bit values widened
save("zero_point_300.onnx", dq("dq_300", [f32("s", 0.5), zp300]), "model", "tensor 'z': value 300 at 0 is outside u8's range")
qconv_w = numpy_helper.from_array(np.ones((2, 1, 1, 1), np.int8), "w")
save("qlinearconv_w_scales.onnx",
     model([helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qc_ws")],
           [vi("x", [1, 1, 2, 2], TensorProto.UINT8)], [vi("y", [1, 2, 2, 2], TensorProto.UINT8)],
           [f32("xs", 0.1), u8("xz", 0), qconv_w, f32("ws", [0.1, 0.2, 0.3]),
            numpy_helper.from_array(np.zeros(3, np.int8), "wz"), f32("ys", 0.1), u8("yz", 0)], opset=10),
     "model", "node 'qc_ws' (QLinearConv): input 5 has 3 values, axis 0 of the tensor it quantizes 2")

# sizes a run decides (NonMaxSuppression, Unique, NonZero of a run-time input): graph outputs only
save("unique_runtime.onnx", model([helper.make_node("Div", ["x", "two"], ["h"]), helper.make_node("Floor", ["h"], ["f"]),
                                   helper.make_node("Unique", ["f"], ["y"], name="uniq")],
                                  [vi("x", [6])], [vi("y", None)], [numpy_helper.from_array(np.array(2, np.float32), "two")],
                                  opset=11), "ok")
save("nms_into_gather.onnx", model([helper.make_node("NonMaxSuppression", ["boxes", "scores", "max"], ["sel"], name="nms"),
                                    helper.make_node("Gather", ["sel", "zero"], ["y"], name="pick", axis=1)],
                                   [vi("boxes", [1, 4, 4]), vi("scores", [1, 1, 4])], [vi("y", None, TensorProto.INT64)],
                                   [numpy_helper.from_array(np.array([2], np.int64), "max"),
                                    numpy_helper.from_array(np.array(0, np.int64), "zero")], opset=11),
     "model", "node 'pick' (Gather): input 'sel' is the output of node 'nms' (NonMaxSuppression), whose size depends "
     "on the values of a run")

# com.microsoft: the QLinear ops onnxruntime's quantizer writes load; another op of that domain is refused saying so
ms_model = model([helper.make_node("FusedGemm", ["x", "x"], ["y"], name="fused", domain="com.microsoft")],
                 [vi("x", [2, 2])], [vi("y", [2, 2])])
ms_model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
save("ms_unknown_op.onnx", ms_model, "model",
     "node 'fused' (FusedGemm): op FusedGemm of domain 'com.microsoft' is not supported (of that domain mpsrun takes")

# compositions whose inputs are omitted: refused naming the node (the fuzzer found an STFT read before the values)
save("stft_no_signal.onnx", model([helper.make_node("STFT", ["", "step"], ["y"], name="stft_empty")],
                                  [vi("x", [1, 16, 1])], [vi("y", None)], [numpy_helper.from_array(np.array(4, np.int64), "step")],
                                  opset=17),
     "model", "node 'stft_empty' (STFT): an input it needs is omitted")
save("quantize_no_scale.onnx", model([helper.make_node("QuantizeLinear", ["x"], ["y"], name="q_alone")],
                                     [vi("x", [4])], [vi("y", [4], TensorProto.UINT8)]),
     "model", "node 'q_alone' (QuantizeLinear): an input it needs is omitted")
save("quantize_no_x.onnx", model([helper.make_node("QuantizeLinear", ["", "s"], ["y"], name="q_no_x")],
                                 [vi("x", [4])], [vi("y", [4], TensorProto.UINT8)], [f32("s", 0.5)]),
     "model", "node 'q_no_x' (QuantizeLinear): an input it needs is omitted")  # read values[-1] (the fuzzer's find)
save("bernoulli_no_input.onnx", model([helper.make_node("Bernoulli", [""], ["y"], name="coin")],
                                      [vi("x", [4])], [vi("y", [4])], opset=15),
     "model", "node 'coin' (Bernoulli): an input it needs is omitted")
save("conv_integer_no_x.onnx", model([helper.make_node("ConvInteger", ["", "w"], ["y"], name="convint")],
                                     [vi("x", [1, 1, 4, 4])], [vi("y", None, TensorProto.INT32)],
                                     [numpy_helper.from_array(np.ones((2, 1, 3, 3), np.int8), "w")], opset=13),
     "model", "node 'convint' (ConvInteger): an input it needs is omitted")

with open(os.path.join(OUT, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
print(f"wrote {len(manifest)} files to {OUT}")
