"""float16 conversion of an ONNX model, as onnxconverter-common's
convert_float_to_float16 writes it (that package is not in Debian): every
float32 weight, Constant and Cast target becomes float16, and so does every
float32 value the graph declares. keep_io=True keeps the graph's inputs and
outputs float32 with a Cast at each edge (the converter's keep_io_types, the
usual way fp16 models are shipped); keep_io=False makes them float16 too.

    import fp16; fp16.convert(onnx.load("m.onnx"), keep_io=True)

float16 of the model's own weights, the reference a test computes in float32:
    fp16.rounded(array) = array.astype(np.float16).astype(np.float32)
"""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def rounded(a):
    return np.asarray(a, np.float32).astype(np.float16).astype(np.float32)


def _half(t):
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name) if t.data_type == F32 else t


def _retype(vi):
    if vi.type.tensor_type.elem_type == F32:
        vi.type.tensor_type.elem_type = F16


def convert(model, keep_io=True):
    g = model.graph
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(_half(t))
    for n in g.node:
        for a in n.attribute:
            if a.name == "value" and a.type == a.TENSOR:
                a.t.CopyFrom(_half(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == F32:
                a.i = F16
    for vi in g.value_info:
        _retype(vi)
    edges = []
    for vi, io in [(vi, "in") for vi in g.input] + [(vi, "out") for vi in g.output]:
        if vi.type.tensor_type.elem_type != F32:
            continue
        if not keep_io:
            _retype(vi)
            continue
        inner = vi.name + "_fp16"  # the graph's float16 side of the edge
        for n in g.node:  # every reader, and an output's writer
            for names in (n.input, n.output) if io == "out" else (n.input,):
                for k, name in enumerate(names):
                    if name == vi.name:
                        names[k] = inner
        edges.append(helper.make_node("Cast", [vi.name], [inner], to=F16, name=vi.name + "_to_fp16") if io == "in"
                     else helper.make_node("Cast", [inner], [vi.name], to=F32, name=vi.name + "_to_fp32"))
    nodes = [e for e in edges if e.output[0].endswith("_fp16")] + list(g.node) + \
            [e for e in edges if not e.output[0].endswith("_fp16")]
    del g.node[:]
    g.node.extend(nodes)
    return model
