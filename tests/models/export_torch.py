#!/usr/bin/python3
"""Exports MLPs, CNNs, torchvision classification and segmentation models, a
small U-Net and an ESPCN-style super-resolution net with PyTorch and writes
each as an ONNX test case in the layout of the ONNX backend test suite:

    OUT/test_<name>/model.onnx
    OUT/test_<name>/test_data_set_0/input_0.pb    (serialized TensorProto)
    OUT/test_<name>/test_data_set_0/output_0.pb   (what PyTorch computed)

tests/conformance/runner.c then runs them through mpsrun and compares.
Weights are random (torchvision's initialization, seeded), models are in
eval mode. Each model is exported at its own opset so that 11 to 17 are all
covered (and 9, for Upsample). Two more cases are rewritten into the form PyTorch's newer
exporter writes (opset 18: Reduce axes as inputs, weights in external data
model.onnx.data), because only PyTorch 1.13 is in Debian; the real thing,
the MLP and the small CNN exported by PyTorch 2.11's default (dynamo)
exporter at opset 20, is committed in tests/models/recent_exporter/. resnet18
and LR-ASPP are also exported with batch, height and width free and checked
at three input sizes each (test_data_set_0..2) from the one model.onnx. A
model of two inputs and two outputs, a small ViT at opset 17, and resnet18
converted to float16 (FP16 below) complete the set.

usage: export_torch.py OUT [NAME...]     (Debian: python3-torch python3-torchvision python3-onnx)
"""
import os
import sys

import numpy as np
import onnx
import onnx.external_data_helper
import onnx.numpy_helper
import torch
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "peers"))
import peer_models  # noqa: E402  (Segmentation: a torchvision segmentation model's "out")

import fp16  # noqa: E402  (tests/models/fp16.py: float16 conversion)


class MLP(torch.nn.Module):
    """784-512-512-10, as in the issue's benchmarks."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Dropout(0.2),
            torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


class SmallCNN(torch.nn.Module):
    """Conv-BN-ReLU blocks, pooling both ways, a classifier: the shipped models' shape."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU6(),
            torch.nn.AvgPool2d(2), torch.nn.Conv2d(32, 32, 3, groups=4, padding=1), torch.nn.Hardswish())
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(32 * 7 * 7, 64),
                                        torch.nn.BatchNorm1d(64), torch.nn.LeakyReLU(0.1), torch.nn.Linear(64, 10))

    def forward(self, x):
        return torch.log_softmax(self.head(self.features(x)), dim=-1)


def vision(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


class SmallESPCN(torch.nn.Module):
    """ESPCN-style super-resolution: convolutions to 3 x r^2 channels, then
    PixelShuffle (DepthToSpace, CRD) to an image r times larger."""

    def __init__(self, r=3):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 5, padding=2), torch.nn.Tanh(),
                                        torch.nn.Conv2d(16, 8, 3, padding=1), torch.nn.Tanh(),
                                        torch.nn.Conv2d(8, 3 * r * r, 3, padding=1), torch.nn.PixelShuffle(r))

    def forward(self, x):
        return torch.sigmoid(self.body(x))


class SmallUNet(torch.nn.Module):
    """A U-Net-style decoder: a skip Concat after each upsampling, one
    bilinear with align_corners (Resize by scales) and one nearest, then a
    per-pixel class score. nearest: both nearest (opset 9's Upsample has no
    half-pixel or align_corners bilinear that matches PyTorch's)."""

    def __init__(self, nearest=False):
        super().__init__()
        self.first = dict(mode="nearest") if nearest else dict(mode="bilinear", align_corners=True)
        conv = lambda i, o: torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.ReLU())
        self.down1, self.down2, self.bottom = conv(3, 8), conv(8, 16), conv(16, 16)
        self.up2, self.up1, self.head = conv(32, 8), conv(16, 8), torch.nn.Conv2d(8, 5, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(torch.nn.functional.max_pool2d(d1, 2))
        b = self.bottom(torch.nn.functional.max_pool2d(d2, 2))
        u2 = torch.nn.functional.interpolate(b, scale_factor=2, **self.first)
        u2 = self.up2(torch.cat([u2, d2], 1))
        u1 = self.up1(torch.cat([torch.nn.functional.interpolate(u2, scale_factor=2, mode="nearest"), d1], 1))
        return self.head(u1)


class SmallStyle(torch.nn.Module):
    """Fast style transfer (Johnson et al.) in small: reflection padding,
    InstanceNorm with learned scale and bias, a strided conv, residual blocks,
    nearest upsampling and a 9x9 conv back to an image."""

    def __init__(self):
        super().__init__()

        def block(i, o, k, stride=1, relu=True):
            norm = torch.nn.InstanceNorm2d(o, affine=True)
            torch.nn.init.uniform_(norm.weight, 0.5, 1.5)
            torch.nn.init.uniform_(norm.bias, -0.5, 0.5)
            layers = [torch.nn.ReflectionPad2d(k // 2), torch.nn.Conv2d(i, o, k, stride), norm]
            return torch.nn.Sequential(*(layers + [torch.nn.ReLU()] if relu else layers))

        self.down = torch.nn.Sequential(block(3, 8, 9), block(8, 16, 3, stride=2))
        self.res = torch.nn.ModuleList([torch.nn.Sequential(block(16, 16, 3), block(16, 16, 3, relu=False))
                                        for _ in range(2)])
        self.up = block(16, 8, 3)
        self.out = torch.nn.Sequential(torch.nn.ReflectionPad2d(4), torch.nn.Conv2d(8, 3, 9))

    def forward(self, x):
        h = self.down(x)
        for r in self.res:
            h = h + r(h)
        h = self.up(torch.nn.functional.interpolate(h, scale_factor=2, mode="nearest"))
        return torch.sigmoid(self.out(h))


class TwoInTwoOut(torch.nn.Module):
    """An image and a vector of side data in, class scores and an embedding
    out: the form of a model that takes several inputs and gives several outputs."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                        torch.nn.Flatten())
        self.side = torch.nn.Linear(6, 8)
        self.head = torch.nn.Linear(8, 5)

    def forward(self, image, side):
        embedding = self.conv(image) + torch.tanh(self.side(side))
        return torch.log_softmax(self.head(embedding), dim=1), embedding


class LSTMClassifier(torch.nn.Module):
    """A keyword-spotter's shape: 40 features a frame, batch first, one LSTM
    layer, the last step's state to class scores."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(40, 64, batch_first=True)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        y, _ = self.lstm(x)
        return torch.log_softmax(self.head(y[:, -1]), dim=1)


class BiGRUTagger(torch.nn.Module):
    """A bidirectional GRU over a sequence (batch first), a tag per step."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(20, 32, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(64, 5)

    def forward(self, x):
        return self.head(self.gru(x)[0])


class LSTM2State(torch.nn.Module):
    """A 2-layer LSTM (sequence first) whose initial states are inputs and
    final states outputs: a streaming model's form."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(16, 24, num_layers=2)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


class LoopRNN(torch.nn.Module):
    """A recurrence written as a Python loop over the steps, scripted so that
    the exporter writes an ONNX Loop (its trip count from the input's shape)."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.zeros_like(x[0])
        for t in range(x.size(0)):
            h = torch.tanh(self.cell(x[t]) + h)
        return h


def vit_tiny():
    """torchvision's VisionTransformer in small (2 layers, 4 heads, width 64),
    its zero-initialized head drawn at random so that the output says something."""
    m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                                             mlp_dim=128, num_classes=10)
    with torch.no_grad():
        torch.nn.init.normal_(m.heads.head.weight, std=0.2)
        torch.nn.init.normal_(m.heads.head.bias, std=0.1)
    return m


# name: (constructor, input shape (a list of them for several inputs), opset, dynamic batch exported as a
# symbolic dim)
CASES = {
    "mlp_784_512_512_10": (MLP, (4, 1, 28, 28), 11, True),
    "small_cnn": (SmallCNN, (2, 1, 28, 28), 12, False),
    "resnet18": (vision("resnet18"), (1, 3, 224, 224), 13, False),
    "mobilenet_v2": (vision("mobilenet_v2"), (1, 3, 224, 224), 14, True),
    "squeezenet1_1": (vision("squeezenet1_1"), (1, 3, 224, 224), 15, False),
    "shufflenet_v2_x0_5": (vision("shufflenet_v2_x0_5"), (1, 3, 224, 224), 16, False),
    "efficientnet_b0": (vision("efficientnet_b0"), (1, 3, 224, 224), 17, False),
    "mnasnet0_5": (vision("mnasnet0_5"), (2, 3, 160, 160), 11, False),
    "googlenet": (vision("googlenet", aux_logits=False, init_weights=True), (1, 3, 224, 224), 12, False),
    "regnet_x_400mf": (vision("regnet_x_400mf"), (1, 3, 224, 224), 14, False),
    "densenet121": (vision("densenet121"), (1, 3, 224, 224), 13, False),
    "convnext_tiny": (vision("convnext_tiny"), (1, 3, 224, 224), 17, False),
    # outputs that are images: Resize (sizes from Shape, bilinear), Upsample (opset 9), skip Concats
    "lraspp_mobilenet_v3_large": (lambda: peer_models.Segmentation("lraspp_mobilenet_v3_large"), (1, 3, 224, 224),
                                  13, False),
    "deeplabv3_mobilenet_v3_large": (lambda: peer_models.Segmentation("deeplabv3_mobilenet_v3_large"),
                                     (1, 3, 160, 160), 11, False),
    "small_unet": (SmallUNet, (2, 3, 48, 40), 11, True),
    "small_unet_opset9": (lambda: SmallUNet(nearest=True), (1, 3, 32, 32), 9, False),
    "small_espcn": (SmallESPCN, (2, 3, 24, 20), 12, True),
    "small_style": (SmallStyle, (2, 3, 40, 32), 11, True),
    # two inputs and two outputs; a transformer (LayerNormalization at opset 17, attention as MatMul/Softmax)
    "two_in_two_out": (TwoInTwoOut, [(2, 3, 24, 24), (2, 6)], 14, True),
    "vit_tiny_opset17": (vit_tiny, (2, 3, 32, 32), 17, True),
    # recurrent nets: an LSTM classifier (batch free), a bidirectional GRU, two LSTM layers with states in and out
    "lstm_classifier": (LSTMClassifier, (2, 50, 40), 14, True),
    "bigru_tagger": (BiGRUTagger, (3, 30, 20), 13, False),
    "lstm2_state": (LSTM2State, [(25, 2, 16), (2, 2, 24), (2, 2, 24)], 15, False),
    # a Loop: a scripted Python loop over a recurrence's steps
    "loop_rnn": (lambda: torch.jit.script(LoopRNN()), (6, 3, 8), 13, False),
}

# Converted to float16 (weights, compute; f32 inputs and outputs with a Cast at
# each edge, tests/models/fp16.py) after an export that keeps BatchNormalization
# (PyTorch folds it into the Conv in eval mode), so that PyTorch computes the
# same thing from the same f16 numbers: the expected output is PyTorch in f32 on
# the model's parameters and input rounded to f16 -- what mpsrun computes for an
# f16 model (src/models/model.h). name: (constructor, input shape, opset)
FP16 = {"resnet18_fp16": (vision("resnet18"), (2, 3, 96, 96), 13)}

# Exported once with batch, height and width free (dynamic_axes), then checked
# at each input shape listed, from the same model.onnx: name: (constructor, shapes, opset)
FREE_SIZES = {
    "resnet18_free_size": (vision("resnet18"), [(1, 3, 224, 224), (2, 3, 160, 192), (1, 3, 97, 131)], 13),
    "lraspp_free_size": (lambda: peer_models.Segmentation("lraspp_mobilenet_v3_large"),
                         [(1, 3, 224, 224), (2, 3, 128, 160), (1, 3, 200, 120)], 13),
}

# Rewritten into the opset 18 form with external data (see the module doc).
OPSET18 = {"mlp_opset18_external": "mlp_784_512_512_10", "small_cnn_opset18_external": "small_cnn"}


def write_tensor(path, array, name):
    tensor = onnx.numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def made(make, name):
    """The model, seeded by its name, in eval mode, with BatchNorm statistics
    other than 0/1 (so that folding them is really tested)."""
    torch.manual_seed(len(name))
    model = make().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return model


def write_set(case, xs, ys):
    """test_data_set_0 of case: inputs xs, expected outputs ys (tuples of tensors)."""
    os.makedirs(os.path.join(case, "test_data_set_0"), exist_ok=True)
    for io, tensors in (("input", xs), ("output", ys)):
        for i, t in enumerate(tensors):
            write_tensor(os.path.join(case, "test_data_set_0", f"{io}_{i}.pb"), t.numpy(), f"{io}{i or ''}")


def export(out, name):
    make, shape, opset, dynamic = CASES[name]
    model = made(make, name)
    shapes = shape if isinstance(shape, list) else [shape]
    xs = tuple(torch.randn(*s) for s in shapes)
    with torch.no_grad():
        traced = model(*xs)
    n_out = len(traced) if isinstance(traced, tuple) else 1
    case = os.path.join(out, "test_" + name)
    os.makedirs(case, exist_ok=True)
    ins = ["input"] + [f"input{i}" for i in range(1, len(shapes))]
    outs = ["output"] + [f"output{i}" for i in range(1, n_out)]
    axes = {n: {0: "batch"} for n in ins + outs} if dynamic else None
    torch.onnx.export(model, xs, os.path.join(case, "model.onnx"), opset_version=opset, input_names=ins,
                      output_names=outs, dynamic_axes=axes)
    if dynamic:  # the data has another batch than the trace: the symbolic dim must be resolved
        xs = tuple(torch.randn(s[0] + 3, *s[1:]) for s in shapes)
    with torch.no_grad():
        ys = model(*xs)
    write_set(case, xs, ys if isinstance(ys, tuple) else (ys,))
    return case


def export_fp16(out, name):
    make, shape, opset = FP16[name]
    model = made(make, name)
    case = os.path.join(out, "test_" + name)
    os.makedirs(case, exist_ok=True)
    path = os.path.join(case, "model.onnx")
    torch.onnx.export(model, torch.randn(*shape), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    onnx.save(fp16.convert(onnx.load(path), keep_io=True), path)
    with torch.no_grad():
        for t in list(model.parameters()) + [b for b in model.buffers() if b.is_floating_point()]:
            t.copy_(torch.from_numpy(fp16.rounded(t.numpy())))
        x = torch.from_numpy(fp16.rounded(torch.randn(*shape).numpy()))
        write_set(case, (x,), (model(x),))


def export_free_size(out, name):
    make, shapes, opset = FREE_SIZES[name]
    torch.manual_seed(len(name))
    model = make().eval()
    case = os.path.join(out, "test_" + name)
    os.makedirs(case, exist_ok=True)
    free = {0: "batch", 2: "height", 3: "width"}
    with torch.no_grad():
        image = model(torch.randn(*shapes[0])).dim() == 4  # a segmentation's output follows the input's size
    torch.onnx.export(model, torch.randn(*shapes[0]), os.path.join(case, "model.onnx"), opset_version=opset,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": free, "output": free if image else {0: "batch"}})
    for k, shape in enumerate(shapes):
        x = torch.randn(*shape)
        with torch.no_grad():
            y = model(x)
        os.makedirs(os.path.join(case, f"test_data_set_{k}"), exist_ok=True)
        write_tensor(os.path.join(case, f"test_data_set_{k}", "input_0.pb"), x.numpy(), "input")
        write_tensor(os.path.join(case, f"test_data_set_{k}", "output_0.pb"), y.numpy(), "output")


# ONNX ops PyTorch does not export as one node, built with onnx.helper; the
# expected output from the spec in numpy (float64): name: (p, kernel, strides, pads, input shape)
LPPOOL = {"lppool_p2": (2, (3, 3), (2, 2), (1, 1, 1, 1), (2, 3, 9, 8)),
          "lppool_p3": (3, (2, 3), (1, 1), (0, 1, 0, 0), (1, 4, 6, 7))}


def lppool(out, name):
    p, k, s, pads, shape = LPPOOL[name]
    x = np.random.RandomState(len(name)).randn(*shape).astype(np.float32)
    a = np.pad(np.abs(x.astype(np.float64)) ** p, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh, ow = (a.shape[2] - k[0]) // s[0] + 1, (a.shape[3] - k[1]) // s[1] + 1
    y = np.zeros(shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = a[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].sum(axis=(2, 3)) ** (1.0 / p)
    node = onnx.helper.make_node("LpPool", ["input"], ["output"], p=p, kernel_shape=list(k), strides=list(s),
                                 pads=list(pads))
    vi = lambda n, sh: onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(sh))
    graph = onnx.helper.make_graph([node], name, [vi("input", shape)], [vi("output", y.shape)])
    case = os.path.join(out, "test_" + name)
    os.makedirs(os.path.join(case, "test_data_set_0"), exist_ok=True)
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 11)]),
              os.path.join(case, "model.onnx"))
    write_tensor(os.path.join(case, "test_data_set_0", "input_0.pb"), x, "input")
    write_tensor(os.path.join(case, "test_data_set_0", "output_0.pb"), y.astype(np.float32), "output")


def scan_reverse(out, name):
    """A Scan built with onnx.helper (PyTorch exports none): a running sum over
    axis 1 of x [2, 5, 3], from the end (scan_input_directions 1), its states
    out and each step's sum stacked along axis 1 in the order of the steps;
    the expected outputs from numpy."""
    x = np.random.RandomState(len(name)).randn(2, 5, 3).astype(np.float32)
    vi = lambda n, sh: onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(sh))
    body = onnx.helper.make_graph([onnx.helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                                   onnx.helper.make_node("Identity", ["s_out"], ["y_t"])], "body",
                                  [vi("s_in", [2, 3]), vi("x_t", [2, 3])], [vi("s_out", [2, 3]), vi("y_t", [2, 3])])
    node = onnx.helper.make_node("Scan", ["s0", "input"], ["s_final", "output"], body=body, num_scan_inputs=1,
                                 scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1])
    s0 = np.zeros((2, 3), np.float32)
    steps = np.cumsum(x[:, ::-1, :], axis=1, dtype=np.float64).astype(np.float32)  # the steps' sums, last first
    graph = onnx.helper.make_graph([node], name, [vi("input", x.shape)], [vi("s_final", (2, 3)), vi("output", (2, 5, 3))],
                                   [onnx.numpy_helper.from_array(s0, "s0")])
    case = os.path.join(out, "test_" + name)
    os.makedirs(os.path.join(case, "test_data_set_0"), exist_ok=True)
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 16)]),
              os.path.join(case, "model.onnx"))
    write_tensor(os.path.join(case, "test_data_set_0", "input_0.pb"), x, "input")
    write_tensor(os.path.join(case, "test_data_set_0", "output_0.pb"), steps[:, -1, :], "s_final")
    write_tensor(os.path.join(case, "test_data_set_0", "output_1.pb"), steps, "output")


def mel_reference(mels, n_fft, rate, lo, hi):
    """MelWeightMatrix as ONNX's reference writes it (a step of the mel range over mels + 2)."""
    bins = n_fft // 2 + 1
    mel = lambda f: 2595 * np.log10(1 + f / 700)
    pts = np.arange(mels + 2) * (mel(hi) - mel(lo)) / (mels + 2) + mel(lo)
    at = np.floor((n_fft + 1) * (700 * (10 ** (pts / 2595) - 1)) / rate).astype(int)
    w = np.zeros((bins, mels))
    for i in range(mels):
        left, center, right = at[i:i + 3]
        if center == left:
            w[center, i] = 1
        for j in range(left, center + 1 if center > left else left):
            w[j, i] = (j - left) / (center - left)
        for j in range(center, right):
            w[j, i] = (right - j) / (right - center)
    return w


def signal_ops(out, name):
    """The signal ops built with onnx.helper (PyTorch 1.13 exports no STFT),
    against numpy in double: a log-mel front end (STFT of a [2, 400] signal,
    frame 64, step 16, HannWindow, MelWeightMatrix of 8 mels); an inverse DFT
    of a complex [3, 20] along axis 1 zero-padded to 24; a onesided DFT of
    real [2, 5, 12] along axis 2 cut to 10; a signal times a symmetric
    BlackmanWindow of 10 joined to a periodic HammingWindow of 7."""
    rng = np.random.RandomState(len(name))
    sig, xc, xr, xw = (rng.randn(*s).astype(np.float32) for s in ((2, 400, 1), (3, 20, 2), (2, 5, 12, 1), (17,)))
    h = onnx.helper
    i64 = lambda n, v: onnx.numpy_helper.from_array(np.array(v, np.int64), n)
    f32 = lambda n, v: onnx.numpy_helper.from_array(np.array(v, np.float32), n)
    nodes = [h.make_node("HannWindow", ["n_fft"], ["hann"]),
             h.make_node("STFT", ["sig", "step", "hann"], ["spec"]),
             h.make_node("ReduceSumSquare", ["spec"], ["power"], axes=[-1], keepdims=0),
             h.make_node("MelWeightMatrix", ["mels", "n_fft", "rate", "lo", "hi"], ["melw"]),
             h.make_node("MatMul", ["power", "melw"], ["mel"]),
             h.make_node("Add", ["mel", "eps"], ["mel_eps"]),
             h.make_node("Log", ["mel_eps"], ["logmel"]),
             h.make_node("DFT", ["xc", "len24"], ["idft"], axis=1, inverse=1),
             h.make_node("DFT", ["xr", "len10"], ["rdft"], axis=2, onesided=1),
             h.make_node("BlackmanWindow", ["ten"], ["black"], periodic=0),
             h.make_node("HammingWindow", ["seven"], ["ham"]),
             h.make_node("Concat", ["black", "ham"], ["windows"], axis=0),
             h.make_node("Mul", ["xw", "windows"], ["windowed"])]
    inits = [i64("n_fft", 64), i64("step", 16), i64("mels", 8), i64("rate", 8000), f32("lo", 0), f32("hi", 4000),
             f32("eps", 1e-6), i64("len24", 24), i64("len10", 10), i64("ten", 10), i64("seven", 7)]
    t = np.arange(64)
    frames = np.stack([sig[:, 16 * f:16 * f + 64, 0] for f in range((400 - 64) // 16 + 1)], axis=1)
    spec = np.fft.rfft(frames.astype(np.float64) * (0.5 - 0.5 * np.cos(2 * np.pi * t / 64)), axis=-1)
    logmel = np.log(np.abs(spec) ** 2 @ mel_reference(8, 64, 8000, 0.0, 4000.0) + 1e-6)
    idft = np.fft.ifft(xc[..., 0] + 1j * xc[..., 1].astype(np.float64), n=24, axis=1)
    rdft = np.fft.rfft(xr[..., 0].astype(np.float64), n=10, axis=2)
    n10, n7 = np.arange(10), np.arange(7)
    black = 0.42 - 0.5 * np.cos(2 * np.pi * n10 / 9) + 0.08 * np.cos(4 * np.pi * n10 / 9)
    ham = 25 / 46 - 21 / 46 * np.cos(2 * np.pi * n7 / 7)
    ys = {"logmel": logmel, "idft": np.stack([idft.real, idft.imag], -1), "rdft": np.stack([rdft.real, rdft.imag], -1),
          "windowed": xw * np.concatenate([black, ham])}
    xs = {"sig": sig, "xc": xc, "xr": xr, "xw": xw}
    vi = lambda n, sh: h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(sh))
    graph = h.make_graph(nodes, name, [vi(k, v.shape) for k, v in xs.items()], [vi(k, v.shape) for k, v in ys.items()],
                         inits)
    case = os.path.join(out, "test_" + name)
    os.makedirs(os.path.join(case, "test_data_set_0"), exist_ok=True)
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), os.path.join(case, "model.onnx"))
    for io, d in (("input", xs), ("output", ys)):
        for i, (k, v) in enumerate(d.items()):
            write_tensor(os.path.join(case, "test_data_set_0", f"{io}_{i}.pb"), v.astype(np.float32), k)


def to_opset18(src_case, out, name):
    """ReduceMean/ReduceSum axes attribute -> input, opset 18, weights external."""
    model = onnx.load(os.path.join(src_case, "model.onnx"))
    for node in model.graph.node:
        if node.op_type in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"):
            axes = [a for a in node.attribute if a.name == "axes"]
            if axes:
                const = node.name + "_axes"
                model.graph.initializer.append(onnx.numpy_helper.from_array(
                    torch.tensor(list(axes[0].ints), dtype=torch.int64).numpy(), const))
                node.input.append(const)
                node.attribute.remove(axes[0])
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = 18
    model.ir_version = 8
    case = os.path.join(out, "test_" + name)
    os.makedirs(os.path.join(case, "test_data_set_0"), exist_ok=True)
    onnx.external_data_helper.convert_model_to_external_data(model, all_tensors_to_one_file=True,
                                                             location="model.onnx.data", size_threshold=0)
    onnx.save(model, os.path.join(case, "model.onnx"))
    for f in ("input_0.pb", "output_0.pb"):
        with open(os.path.join(src_case, "test_data_set_0", f), "rb") as a, \
                open(os.path.join(case, "test_data_set_0", f), "wb") as b:
            b.write(a.read())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out, names = sys.argv[1], sys.argv[2:] or (list(CASES) + list(OPSET18) + list(LPPOOL) + list(FREE_SIZES) +
                                                list(FP16) + ["scan_reverse", "signal_ops"])
    os.makedirs(out, exist_ok=True)
    for name in names:
        if name in LPPOOL:
            lppool(out, name)
        elif name == "scan_reverse":
            scan_reverse(out, name)
        elif name == "signal_ops":
            signal_ops(out, name)
        elif name in FP16:
            export_fp16(out, name)
        elif name in FREE_SIZES:
            export_free_size(out, name)
        elif name in OPSET18:
            src = os.path.join(out, "test_" + OPSET18[name])
            if not os.path.exists(os.path.join(src, "model.onnx")):
                export(out, OPSET18[name])
            to_opset18(src, out, name)
        else:
            export(out, name)
        print("exported", name, flush=True)


if __name__ == "__main__":
    main()
