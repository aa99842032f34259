#!/usr/bin/python3
"""bench_check.py MPSRUN MODEL: bench on the CUDA backend (scripts/gpu-test.sh):
GPU rows are timed resident (rerun) with the run path beside them, products
are checked against the double reference, and bench model reports the
resident time. Prints one line per check and the closing count."""
import json
import subprocess
import sys

mpsrun, model = sys.argv[1], sys.argv[2]


def bench(*args):
    out = subprocess.run([mpsrun, "bench", *args, "--backend", "cuda", "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)["results"]


mm = bench("matmul", "--sizes", "256,100x70x30", "--repeat", "5")
md = bench("model", model, "--batch", "1,4", "--repeat", "5")
checks = [("matmul rows timed resident, the run path beside",
           len(mm) == 2 and all(r["resident"] and r["run_median_ms"] > 0 and r["median_ms"] > 0 for r in mm)),
          ("matmul results within 1e-5 of the double reference", all(r["max_rel_err"] < 1e-5 for r in mm)),
          ("model rows carry a resident time", len(md) == 2 and all(r["resident_median_ms"] > 0 for r in md))]
for name, ok in checks:
    print(("ok   " if ok else "FAIL ") + name)
failed = sum(not ok for _, ok in checks)
print(f"{len(checks) - failed} passed, {failed} failed, 0 skipped")
sys.exit(1 if failed else 0)
