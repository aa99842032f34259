#!/usr/bin/python3
"""Quantized models, built here with onnx.helper (random weights, seeded),
run by mpsrun and by onnxruntime (onnxruntime-node, installed by setup; or
Python's onnxruntime) on the same inputs:

  qdq_mlp      the QDQ form onnxruntime's quantizer writes: QuantizeLinear and
               DequantizeLinear around MatMul, Add, Relu, int8 weights per
               output channel, a uint8 activation
  qop_depthwise  two depthwise QLinearConvs (3x3, stride 1 and 2), bytes in and out
  qop_cnn      the QOperator form: QLinearConv (per-channel int8 weights, an
               int32 bias), QLinearLeakyRelu, QLinearSigmoid, QLinearAdd,
               QLinearMul, QLinearConcat, QLinearGlobalAveragePool, QGemm
               (com.microsoft) to a float output and to QLinearSoftmax
  integer      MatMulInteger and ConvInteger (int32, exact), QLinearMatMul,
               DynamicQuantizeLinear
  quantized    the shipped mnist_cnn and fashion_cnn quantized by `mpsrun
               quantize` (minmax; percentile), which onnxruntime must run too,
               and float CNNs with a residual Add and a Concat, and with
               HardSwish and Sigmoid between Convs

A quantized output must be within one step of onnxruntime's everywhere and
equal on at least 99.9% of its elements (onnxruntime computes in integers,
mpsrun in f32: they part only at a rounding tie); a float output within one
step of the last quantization (its scale) everywhere; an int32 one exactly.

usage: quant_ort.py MPSRUN SRC OUT [--backend B]
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import third_party as tp  # noqa: E402  (its ort() and mpsrun(): the same argv)

OUT = tp.OUT
rng = np.random.default_rng(5)
T = lambda a, n: numpy_helper.from_array(a, n)
vi = lambda n, t, s: helper.make_tensor_value_info(n, t, s)


def qparams(lo, hi, name, dtype=np.uint8):
    """Scale and zero point covering [lo, hi] in dtype."""
    qmin, qmax = (0, 255) if dtype == np.uint8 else (-128, 127)
    scale = np.float32((hi - lo) / (qmax - qmin))
    return [T(np.array(scale, np.float32), name + "_s"),
            T(np.array(np.clip(round(qmin - lo / scale), qmin, qmax), dtype), name + "_z")]


def weights(shape, name, axis=0):
    """int8 weights, per-output-channel scales along axis, zero points 0."""
    w = rng.integers(-127, 128, shape).astype(np.int8)
    n = shape[axis]
    return [T(w, name), T((rng.random(n) * 0.02 + 0.005).astype(np.float32), name + "_s"),
            T(np.zeros(n, np.int8), name + "_z")]


def model(name, nodes, inputs, outputs, inits, ms=False, opset=13):
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms else [])
    m = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, inits), opset_imports=ops)
    m.ir_version = 8
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(m, path)
    return path


def qdq_mlp():
    n = helper.make_node
    nodes = [n("QuantizeLinear", ["x", "a0_s", "a0_z"], ["xq"]), n("DequantizeLinear", ["xq", "a0_s", "a0_z"], ["xd"]),
             n("DequantizeLinear", ["w1", "w1_s", "w1_z"], ["w1d"], axis=1), n("MatMul", ["xd", "w1d"], ["h"]),
             n("Add", ["h", "b1"], ["hb"]), n("Relu", ["hb"], ["r"]),
             n("QuantizeLinear", ["r", "a1_s", "a1_z"], ["rq"]), n("DequantizeLinear", ["rq", "a1_s", "a1_z"], ["rd"]),
             n("DequantizeLinear", ["w2", "w2_s", "w2_z"], ["w2d"], axis=1), n("MatMul", ["rd", "w2d"], ["o"]),
             n("QuantizeLinear", ["o", "a2_s", "a2_z"], ["oq"]), n("DequantizeLinear", ["oq", "a2_s", "a2_z"], ["y"])]
    inits = (qparams(-3, 3, "a0") + weights((64, 32), "w1", 1) + [T(rng.standard_normal(32).astype(np.float32), "b1")] +
             qparams(0, 12, "a1") + weights((32, 10), "w2", 1) + qparams(-6, 6, "a2"))
    path = model("qdq_mlp", nodes, [vi("x", TensorProto.FLOAT, [8, 64])], [vi("y", TensorProto.FLOAT, [8, 10])], inits)
    return path, {"x": rng.standard_normal((8, 64)).astype(np.float32)}, {"y": 12 / 255}


def cpu_plan(path):
    """The ops of the nodes of mpsrun's cpu plan of the model at path ([] where it does not run), each
    {"op", "node"} (bench model --profile)."""
    import subprocess
    r = subprocess.run([tp.MPSRUN, "bench", "model", path, "--backend", "cpu", "--profile", "--repeat", "1", "--warmup",
                        "0", "--json"], capture_output=True, text=True)
    return json.loads(r.stdout)["results"][0]["profile"] if r.returncode == 0 else []


def qop_cnn():
    n, ms = helper.make_node, "com.microsoft"
    nodes = [n("QuantizeLinear", ["x", "a0_s", "a0_z"], ["xq"]),
             n("QLinearConv", ["xq", "a0_s", "a0_z", "w", "w_s", "w_z", "a1_s", "a1_z", "b"], ["c"], pads=[1, 1, 1, 1]),
             n("QLinearLeakyRelu", ["c", "a1_s", "a1_z", "a2_s", "a2_z"], ["l"], domain=ms, alpha=0.1),
             n("QLinearSigmoid", ["c", "a1_s", "a1_z", "a3_s", "a3_z"], ["s"], domain=ms),
             n("QLinearAdd", ["l", "a2_s", "a2_z", "s", "a3_s", "a3_z", "a4_s", "a4_z"], ["ad"], domain=ms),
             n("QLinearMul", ["ad", "a4_s", "a4_z", "s", "a3_s", "a3_z", "a5_s", "a5_z"], ["mu"], domain=ms),
             n("QLinearConcat", ["a5_s", "a5_z", "mu", "a5_s", "a5_z", "l", "a2_s", "a2_z"], ["cat"], domain=ms, axis=1),
             n("QLinearGlobalAveragePool", ["cat", "a5_s", "a5_z", "a6_s", "a6_z"], ["gp"], domain=ms),
             n("Flatten", ["gp"], ["f"]),
             n("QGemm", ["f", "a6_s", "a6_z", "g", "g_s", "g_z", "gb"], ["y"], domain=ms, transB=1),
             n("QGemm", ["f", "a6_s", "a6_z", "g", "g_s", "g_z", "gb", "a7_s", "a7_z"], ["yq"], domain=ms, transB=1),
             n("QLinearSoftmax", ["yq", "a7_s", "a7_z", "a8_s", "a8_z"], ["p"], domain=ms, axis=-1, opset=13)]
    g = weights((5, 16), "g")
    inits = (qparams(-2, 2, "a0") + weights((8, 3, 3, 3), "w") + [T(rng.integers(-500, 500, 8).astype(np.int32), "b")] +
             qparams(-4, 4, "a1") + qparams(-0.5, 4, "a2") + qparams(0, 1, "a3") + qparams(-0.5, 5, "a4") +
             qparams(-0.5, 5, "a5") + qparams(-0.5, 5, "a6") + qparams(-8, 8, "a7") + qparams(0, 1, "a8") + g + [T(rng.integers(-2000, 2000, 5).astype(np.int32), "gb")])
    # one step of QGemm's quantized input through its largest weight: what a tie upstream can move y by
    step = 5.5 / 255 * float(np.abs(numpy_helper.to_array(g[0]) * numpy_helper.to_array(g[1])[:, None]).max())
    path = model("qop_cnn", nodes, [vi("x", TensorProto.FLOAT, [2, 3, 10, 10])], [vi("y", TensorProto.FLOAT, [2, 5]), vi("p", TensorProto.UINT8, [2, 5])], inits, ms=True)
    # the cpu plan adds and concatenates the bytes (each QLinear op's DequantizeLinears, the float op and its
    # QuantizeLinear as one node: qcast.c), where the composition took three passes over floats
    # and runs QLinearLeakyRelu and QLinearSigmoid by a table of the 256 bytes (QLinearUnary), QLinearMul and
    # QLinearGlobalAveragePool on the bytes too
    ops = [e["op"] for e in cpu_plan(path)]
    want = ("QLinearAdd", "QLinearConcat", "QLinearUnary+LeakyRelu", "QLinearUnary+Sigmoid", "QLinearMul",
            "QLinearGlobalAveragePool")
    if any(o not in ops for o in want):
        raise RuntimeError(f"{path}: not all of {want} in the cpu plan: {ops}")
    # p: onnxruntime's QLinearSoftmax takes exp from a table over the input's 256 steps and rounds its own
    # way: a probability of 0.99999 is 254 there, 255 (its nearest step) here; one step apart, never more
    return path, {"x": rng.standard_normal((2, 3, 10, 10)).astype(np.float32)}, {"y": step, "p": "one step"}


def integer():
    n = helper.make_node
    nodes = [n("MatMulInteger", ["a", "bw", "a_z", "bw_z"], ["mmi"]),
             n("ConvInteger", ["img", "cw", "img_z", "cw_z"], ["ci"], pads=[0, 1, 0, 1], strides=[1, 2]),
             n("QLinearMatMul", ["a", "a_s", "a_z", "bq", "bw_s", "bq_z", "y_s", "y_z"], ["qmm"]),
             n("DynamicQuantizeLinear", ["f"], ["dq", "dq_s", "dq_z"])]
    inits = [T(rng.integers(-100, 100, (16, 6)).astype(np.int8), "bw"), T(np.array(3, np.int8), "bw_z"),
             T(np.array(117, np.uint8), "a_z"), T(rng.integers(0, 255, (4, 2, 3, 3)).astype(np.uint8), "cw"),
             T(np.array(9, np.uint8), "img_z"), T(np.array(120, np.uint8), "cw_z"), T(np.array(0.02, np.float32), "a_s"),
             T(np.array(0.01, np.float32), "bw_s"), T(np.array(0.05, np.float32), "y_s"), T(np.array(131, np.uint8), "y_z"),
             T(rng.integers(0, 255, (16, 6)).astype(np.uint8), "bq"), T(np.array(128, np.uint8), "bq_z")]
    ins = [vi("a", TensorProto.UINT8, [5, 16]), vi("img", TensorProto.UINT8, [1, 2, 7, 9]), vi("f", TensorProto.FLOAT, [3, 7])]
    outs = [vi("mmi", TensorProto.INT32, None), vi("ci", TensorProto.INT32, None), vi("qmm", TensorProto.UINT8, None),
            vi("dq", TensorProto.UINT8, None), vi("dq_s", TensorProto.FLOAT, None), vi("dq_z", TensorProto.UINT8, None)]
    path = model("integer", nodes, ins, outs, inits)
    data = {"a": rng.integers(0, 255, (5, 16)).astype(np.uint8), "img": rng.integers(0, 255, (1, 2, 7, 9)).astype(np.uint8),
            "f": (rng.standard_normal((3, 7)) * 3).astype(np.float32)}
    return path, data, {}


def qop_depthwise():
    """mobilenet's depthwise layers in QLinearConv: 3x3 at stride 1 then 2, a channel a group, uint8 bytes
    in and out (on avx512 with VBMI the int8 plane kernel runs them; dwb or the plane kernels elsewhere)."""
    n = helper.make_node
    c = 12
    dw = lambda name: [T(rng.integers(-127, 128, (c, 1, 3, 3)).astype(np.int8), name),
                       T((rng.random(c) * 0.02 + 0.005).astype(np.float32), name + "_s"), T(np.zeros(c, np.int8), name + "_z")]
    nodes = [n("QLinearConv", ["x", "a0_s", "a0_z", "d1", "d1_s", "d1_z", "a1_s", "a1_z", "b1"], ["h"], group=c,
               pads=[1, 1, 1, 1]),
             n("QLinearConv", ["h", "a1_s", "a1_z", "d2", "d2_s", "d2_z", "a2_s", "a2_z"], ["y"], group=c,
               pads=[1, 1, 1, 1], strides=[2, 2])]
    inits = (qparams(-2, 2, "a0") + dw("d1") + [T(rng.integers(-300, 300, c).astype(np.int32), "b1")] +
             qparams(-4, 4, "a1") + dw("d2") + qparams(-6, 6, "a2"))
    path = model("qop_depthwise", nodes, [vi("x", TensorProto.UINT8, [2, c, 13, 37])],
                 [vi("y", TensorProto.UINT8, [2, c, 7, 19])], inits)
    return path, {"x": rng.integers(0, 256, (2, c, 13, 37)).astype(np.uint8)}, {}


def quantized(name):
    """A shipped float model quantized by `mpsrun quantize` on 24 calibration inputs (minmax, and percentile
    for fashion_cnn), then run by both on 8 others: the QDQ model onnxruntime's quantizer would write."""
    import subprocess
    work = os.path.join(OUT, name + "_calib")
    os.makedirs(work, exist_ok=True)
    calib = []
    for i in range(24):
        calib.append(os.path.join(work, f"{i}.npy"))
        np.save(calib[-1], rng.standard_normal((1, 1, 28, 28)).astype(np.float32))
    path = os.path.join(OUT, name + ".int8.onnx")
    method = ["--calibrate", "percentile"] if name == "fashion_cnn" else []
    r = subprocess.run([tp.MPSRUN, "quantize", os.path.join(tp.SRC, "models", name + ".onnx"), *calib, "-o", path,
                        *method], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"mpsrun quantize: {r.stderr.strip()}")
    m = onnx.load(path)
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    last = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
    w = init[last.input[1][:-3] + ":int8"].astype(np.float64) * init[last.input[1][:-3] + ":scale"][:, None]
    # one step of the last product's input through its largest weight: what a tie upstream can move a logit by
    step = float(init[last.input[0][:-3] + ":scale"]) * float(np.abs(w).max())
    if sum(n.op_type == "QuantizeLinear" for n in m.graph.node) < 3:
        raise RuntimeError(f"{path}: {len(m.graph.node)} nodes, too few QuantizeLinear")
    # a MaxPool's output shares its input's scale (as onnxruntime's quantizer writes it), and mpsrun's cpu plan
    # then runs that MaxPool on the bytes: the node that took the QuantizeLinear's place (named after it)
    pool = next(n for n in m.graph.node if n.op_type == "MaxPool")
    if float(init[pool.input[0][:-3] + ":scale"]) != float(init[pool.output[0] + ":scale"]):
        raise RuntimeError(f"{path}: MaxPool {pool.name}'s output has a scale of its own")
    prof = cpu_plan(path)
    if not any(e["op"] == "MaxPool" and e["node"].endswith(":q:q") for e in prof):
        raise RuntimeError(f"{path}: no MaxPool of bytes in the cpu plan: {[e['op'] for e in prof]}")
    # the second MaxPool's bytes go through the Flatten to the head's QLinearMatMul: no float step is left
    # between the input's QuantizeLinear and the float logits
    if any(e["op"] in ("DequantizeLinear", "QuantizeLinear") and not e["node"].startswith("image") for e in prof):
        raise RuntimeError(f"{path}: float steps left in the cpu plan: {[(e['op'], e['node']) for e in prof]}")
    return path, {"image": rng.standard_normal((8, 1, 28, 28)).astype(np.float32)}, {m.graph.output[0].name: step}


def quantized_float(name, nodes, inits, shape, opset, want):
    """Float model name (one input x of shape, N free) quantized by `mpsrun quantize` on 16 calibration inputs:
    its path, 3 inputs and the step of the last Conv's input through its largest weight (what a tie upstream can
    move y by; a Sigmoid after it moves y less); the ops in want must be in mpsrun's cpu plan of it."""
    import subprocess
    fp = model(name, nodes, [vi("x", TensorProto.FLOAT, ["N", *shape[1:]])], [vi("y", TensorProto.FLOAT, None)], inits,
               opset=opset)
    work = os.path.join(OUT, name + "_calib")
    os.makedirs(work, exist_ok=True)
    calib = [os.path.join(work, f"{i}.npy") for i in range(16)]
    for c in calib:
        np.save(c, rng.standard_normal(shape).astype(np.float32))
    path = os.path.join(OUT, name + ".int8.onnx")
    r = subprocess.run([tp.MPSRUN, "quantize", fp, *calib, "-o", path], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"mpsrun quantize: {r.stderr.strip()}")
    init = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    last = next(n for n in reversed(nodes) if n.op_type == "Conv")
    wq = init[last.input[1] + ":int8"].astype(np.float64) * init[last.input[1] + ":scale"].reshape(-1, 1, 1, 1)
    step = float(init[last.input[0] + ":scale"]) * float(np.abs(wq).max())
    ops = [e["op"] for e in cpu_plan(path)]
    if any(not any(o.startswith(w) for o in ops) for w in want):
        raise RuntimeError(f"{path}: not all of {want} in the cpu plan: {ops}")
    return path, {"x": rng.standard_normal((3, *shape[1:])).astype(np.float32)}, {"y": step}


def quantized_residual():
    """A float CNN with a residual Add and a Concat (resnet's and squeezenet's forms) quantized by `mpsrun
    quantize`: onnxruntime runs it, and mpsrun's cpu plan adds and concatenates the bytes (QLinearAdd,
    QLinearConcat) where the QDQ file has Add and Concat between DequantizeLinears and a QuantizeLinear."""
    n = helper.make_node
    w = lambda shape, name: T((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"]),
             n("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), n("Add", ["c2", "r1"], ["s"]),
             n("Relu", ["s"], ["r2"]), n("Conv", ["r2", "w3", "b3"], ["c3"]), n("Relu", ["c3"], ["r3"]),
             n("Concat", ["r2", "r3"], ["cat"], axis=1), n("Conv", ["cat", "w4", "b4"], ["y"])]
    inits = [w((8, 4, 3, 3), "w1"), w(8, "b1"), w((8, 8, 3, 3), "w2"), w(8, "b2"), w((6, 8, 1, 1), "w3"), w(6, "b3"),
             w((5, 14, 1, 1), "w4"), w(5, "b4")]
    return quantized_float("residual", nodes, inits, (1, 4, 9, 11), 13, ["QLinearAdd", "QLinearConcat"])


def quantized_activations():
    """A float CNN with HardSwish and Sigmoid between Convs and a squeeze-excite block (mobilenet_v3's forms)
    quantized by `mpsrun quantize`: onnxruntime runs it, and mpsrun's cpu plan runs each activation on the bytes
    (QLinearUnary, a table of the 256 bytes) where the QDQ file has it between a DequantizeLinear and a
    QuantizeLinear, the block's GlobalAveragePool and Mul, whose inputs and outputs the quantizer makes points, on
    the bytes too, and the last Sigmoid, whose floats are the output, by a table of 256 floats."""
    n = helper.make_node
    w = lambda shape, name: T((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
    # the first HardSwish as exporters wrote it before opset 14, x times HardSigmoid(x): one op on bytes, its Mul
    # no point of the quantizer's
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), n("HardSigmoid", ["c1"], ["g1"], alpha=1 / 6),
             n("Mul", ["c1", "g1"], ["h1"]),
             n("Conv", ["h1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8), n("Sigmoid", ["c2"], ["s2"]),
             n("Conv", ["s2", "w3", "b3"], ["c3"]), n("HardSwish", ["c3"], ["h3"]),
             n("GlobalAveragePool", ["h3"], ["gp"]), n("Conv", ["gp", "w4", "b4"], ["c4"]),
             n("HardSigmoid", ["c4"], ["hs"], alpha=1 / 6), n("Mul", ["h3", "hs"], ["se"]),
             n("Conv", ["se", "w5", "b5"], ["c5"]), n("Sigmoid", ["c5"], ["y"])]
    inits = [w((8, 3, 3, 3), "w1"), w(8, "b1"), w((8, 1, 3, 3), "w2"), w(8, "b2"), w((12, 8, 1, 1), "w3"), w(12, "b3"),
             w((12, 12, 1, 1), "w4"), w(12, "b4"), w((5, 12, 1, 1), "w5"), w(5, "b5")]
    path, data, steps = quantized_float("activations", nodes, inits, (1, 3, 12, 10), 14,
                                        ["QLinearUnary+HardSigmoid", "QLinearMul", "QLinearGlobalAveragePool"])
    ops = [e["op"] for e in cpu_plan(path)]
    left = [o for o in ops if o in ("HardSwish", "HardSigmoid", "Sigmoid", "Mul", "GlobalAveragePool")]
    if (ops.count("QLinearUnary+HardSwish") != 2 or ops.count("QLinearUnary+Sigmoid") != 2 or
            ops.count("QLinearMul") != 1 or left):
        raise RuntimeError(f"{path}: not every activation, Mul and pool of the cpu plan on bytes: {ops}")
    return path, data, steps


def close(name, got, want, step):
    """Why got and want differ beyond the rule of the module doc, or None."""
    if got.shape != want.shape:
        return f"{name}: shape {got.shape}, onnxruntime {want.shape}"
    d = np.abs(got.astype(np.float64) - want.astype(np.float64))
    if np.issubdtype(want.dtype, np.integer) and want.dtype.itemsize == 1:
        if d.max() > 1 or (np.mean(d == 0) < 0.999 and step != "one step"):
            return f"{name}: {d.max():g} steps at most, {100 * np.mean(d == 0):.2f}% equal"
    elif np.issubdtype(want.dtype, np.integer):
        if d.max() != 0:
            return f"{name}: int32 differs by {d.max():g}"
    else:
        tol = step if step else np.abs(want).max() * 1e-5
        print(f"   {name}: max diff {d.max():.3g}, tolerance {tol:.3g}, scale {np.abs(want).max():.3g}")
        if d.max() > tol * 1.0001:
            return f"{name}: max |diff| {d.max():.3g} > {tol:.3g}"
    return None


def main():
    if not os.path.isdir(os.path.join(tp.SRC, ".deps", "node_modules", "onnxruntime-node")):
        try:
            import onnxruntime  # noqa: F401
        except ImportError:
            print("skip: neither onnxruntime-node (./scripts/setup installs it) nor Python's onnxruntime is here")
            return 77
    os.makedirs(OUT, exist_ok=True)
    failures = 0
    makes = [qdq_mlp, qop_cnn, qop_depthwise, integer, lambda: quantized("mnist_cnn"),
             lambda: quantized("fashion_cnn"), quantized_residual, quantized_activations]
    names = ["qdq_mlp", "qop_cnn", "qop_depthwise", "integer", "quantized mnist_cnn", "quantized fashion_cnn",
             "quantized residual", "quantized activations"]
    for make, title in zip(makes, names):
        path, data, steps = make()
        work = os.path.join(OUT, title.replace(" ", "_"))
        os.makedirs(work, exist_ok=True)
        files = {}
        for k, a in data.items():
            files[k] = os.path.join(work, k + ".npy")
            np.save(files[k], a)
        want = tp.ort(path, files, "basic", os.path.join(work, "ort"))
        got, error = tp.mpsrun(path, files, work)
        outs = [o.name for o in onnx.load(path).graph.output]
        why = error or next((w for w in (close(n, g, e, steps.get(n)) for n, g, e in zip(outs, got, want)) if w), None)
        if got and len(got) != len(want):
            why = f"{len(got)} outputs, onnxruntime {len(want)}"
        print(f"{'FAIL' if why else 'ok  '} {title}: {why or 'matches onnxruntime'}")
        failures += bool(why)
    print(f"{len(makes) - failures} passed, {failures} failed, 0 skipped")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
