#!/usr/bin/python3
"""Kills `mpsrun infer` at random points, 20 times (SIGINT, SIGTERM, or a
reader that goes away: SIGPIPE), while it writes --output over a file that
was there before, pictures with --output-png and a report on stdout, and
checks what a killed run leaves: --output as it was (or, for a run whose
inputs had all run when the signal came, whole: such a run still ends by
the signal, which can come after the file was renamed into place), every picture a whole PNG, no temporary file, every
--jsonl line whole and a --json document whole (a signal ends the report
cleanly; one that comes before the run began, while the model loads, ends
the process before anything is printed), and the process ended by the
signal.

usage: test_kills.py MPSRUN SRC [RUNS]
"""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

mpsrun, src = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
tmp = tempfile.mkdtemp()
subprocess.run([sys.executable, os.path.join(src, "tests/cli/make_pictures.py"), tmp], check=True)
n_inputs = 5000
with open(os.path.join(tmp, "list.txt"), "w") as f:
    for i in range(n_inputs):
        f.write(os.path.join(tmp, "in", f"{i % 2}.npy") + "\n")
old = b"the file that was there before\n"
failures = 0


def check(what, ok, detail=""):
    global failures
    print(f"{'ok  ' if ok else 'FAIL'} {what}{'' if ok else ': ' + detail}")
    failures += not ok


def temporary_files(folder):
    return [n for n in os.listdir(folder) if ".mpsrun-" in n]


rng = random.Random(int(os.environ.get("MPSRUN_KILL_SEED", "1")))
for run in range(runs):
    sig = [signal.SIGINT, signal.SIGTERM, signal.SIGPIPE][run % 3]
    form = ["--jsonl", "--json", "-q"][(run // 3) % 3]
    delay = rng.uniform(0.0, 0.5)
    out_npy, pics = os.path.join(tmp, "out.npy"), os.path.join(tmp, f"pics{run}")
    with open(out_npy, "wb") as f:
        f.write(old)
    report = os.path.join(tmp, "report.txt")
    args = [mpsrun, "infer", os.path.join(tmp, "seg4.onnx"), "@" + os.path.join(tmp, "list.txt"), "--batch", "4",
            "--threads", "1", "--output", out_npy, "--output-png", pics, form]
    name = f"run {run}: {signal.Signals(sig).name} after {delay:.3f} s, {form}"
    if sig == signal.SIGPIPE:  # a reader that takes some of the report and goes
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        got = p.stdout.read(rng.randrange(1, 20000))
        p.stdout.close()
        rc = p.wait()
        text = None
    else:
        with open(report, "wb") as f:
            p = subprocess.Popen(args, stdout=f, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            p.send_signal(sig)
            rc = p.wait()
        text = open(report, "rb").read().decode()
    check(f"{name}: ended by the signal, or done before it (exit {rc})", rc in (0, -sig))
    data = open(out_npy, "rb").read()
    finished = rc == 0 or data != old  # killed after the last input ran and the file was committed
    if finished:
        try:
            shape = np.load(out_npy).shape
        except ValueError as e:
            shape = str(e)
        check(f"{name}: a run whose inputs all ran wrote --output whole", shape == (n_inputs, 4, 6, 5), str(shape))
    else:
        check(f"{name}: --output is the file that was there", data == old, repr(data[:40]))
    left = temporary_files(tmp) + (temporary_files(pics) if os.path.isdir(pics) else [])
    check(f"{name}: no temporary file left", not left, " ".join(left))
    bad = []
    for n in sorted(os.listdir(pics)) if os.path.isdir(pics) else []:
        try:
            with Image.open(os.path.join(pics, n)) as im:
                im.load()
                if im.size != (5, 6):
                    bad.append(n)
        except Exception as e:  # noqa: BLE001: any failure to read is a corrupt picture
            bad.append(f"{n} ({e})")
    check(f"{name}: every picture is a whole PNG", not bad, " ".join(bad[:5]))
    if text is None:
        continue
    if form == "--json":  # nothing at all where the signal came before the run began (the model still loading)
        try:
            doc = json.loads(text) if text else None
            if finished:  # every input ran: the document says so, and not that the run was interrupted
                whole = "interrupted" not in doc["inputs"] and doc["written"]["output"]["rows"] == n_inputs
            else:
                whole = not text or doc["inputs"]["interrupted"] == signal.Signals(sig).name
        except (ValueError, KeyError, TypeError) as e:
            whole = False
            text = f"{e}: {text[-200:]}"
        check(f"{name}: the --json document is whole and says how far the run got, or nothing is printed", whole,
              text[-200:])
    elif form == "--jsonl":
        lines = text.splitlines()
        cut = [l for l in lines if not l.endswith("}")]
        try:
            [json.loads(l) for l in lines]
        except ValueError:
            cut.append("(one does not parse)")
        check(f"{name}: every --jsonl line ({len(lines)}) is whole", not cut and text.endswith("\n") or not text,
              " ".join(cut[:3]))
    else:
        rows = text.splitlines()
        check(f"{name}: every -q line ({len(rows)}) is whole", all(len(r.split("\t")) == 3 for r in rows)
              and (not text or text.endswith("\n")))

print(f"{failures} failed")
sys.exit(1 if failures else 0)
