#!/usr/bin/env python3
"""The quickstart recipe's run, reduced to what must stay bitwise the same across refactors of the loop:
metrics.jsonl without its timing fields, and a SHA-256 of the final checkpoint's weights (names, dtypes,
shapes and bytes, in name order). The reference (tests/data/lenet_recipe_reference.json) was recorded
with the CPU loop before the CPU and GPU loops were merged into one (issue 12); the merged loop must
reproduce it exactly. The digits depend on OpenBLAS's kernels, which are picked per CPU, so the exact
comparison runs only where fastnn runs the reference's core (`fastnn --version`, "BLAS core:"; fastnn
may pick another core than OpenBLAS alone would, trainer/ops/blas_core.h); elsewhere it says so and
passes (the caller still checks the accuracy).

  lenet_reference.py record  RUN_DIR OUT.json       FASTNN
  lenet_reference.py compare RUN_DIR REFERENCE.json FASTNN
"""
import glob
import hashlib
import json
import os
import struct
import subprocess
import sys

TIMING = {"wall_time", "images_per_sec", "data_wait_fraction", "train_seconds", "host_cpu_cores", "loop_thread_cpu_cores"}
# Fields added to the eval lines after the reference was recorded (its metrics predate them).
LATER = {"confusion_matrix", "misclassified"}


def blas_core(fastnn):
    version = subprocess.run([fastnn, "--version"], capture_output=True, text=True, check=True).stdout
    for line in version.splitlines():
        if line.startswith("BLAS core: "):
            return line[len("BLAS core: "):].split(",")[0]
    raise SystemExit(f"{fastnn} --version names no BLAS core:\n{version}")


def metrics(run_dir):
    out = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            out.append({k: v for k, v in sorted(rec.items()) if k not in TIMING | LATER})
    return out


def final_weights(run_dir):
    files = [f for f in glob.glob(os.path.join(run_dir, "*.safetensors")) if "optimizer" not in os.path.basename(f)]
    if not files:
        raise SystemExit(f"no weights file in {run_dir}")
    def step(path):
        digits = "".join(c if c.isdigit() else " " for c in os.path.basename(path)).split()
        return int(digits[-1]) if digits else -1
    return max(files, key=step)


def weights_digest(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    h = hashlib.sha256()
    for name in sorted(k for k in header if k != "__metadata__"):
        t = header[name]
        b, e = t["data_offsets"]
        h.update(f"{name}|{t['dtype']}|{t['shape']}|".encode())
        h.update(data[b:e])
    return h.hexdigest()


def summary(run_dir, fastnn):
    w = final_weights(run_dir)
    return {"blas_core": blas_core(fastnn), "weights_file": os.path.basename(w), "weights_sha256": weights_digest(w),
            "metrics": metrics(run_dir)}


def main():
    mode, run_dir, ref, fastnn = sys.argv[1:5]
    got = summary(run_dir, fastnn)
    if mode == "record":
        with open(ref, "w") as f:
            json.dump(got, f, indent=1)
            f.write("\n")
        return
    want = json.load(open(ref))
    if got["blas_core"] != want["blas_core"]:
        print(f"bitwise comparison not applicable: OpenBLAS core {got['blas_core']}, reference {want['blas_core']}")
        return
    bad = False
    if got["metrics"] != want["metrics"]:
        bad = True
        for g, w in zip(got["metrics"], want["metrics"]):
            if g != w:
                print(f"metrics differ:\n  got  {g}\n  want {w}")
                break
        if len(got["metrics"]) != len(want["metrics"]):
            print(f"metrics: {len(got['metrics'])} lines, reference {len(want['metrics'])}")
    if got["weights_sha256"] != want["weights_sha256"]:
        bad = True
        print(f"final weights differ: {got['weights_file']} sha256 {got['weights_sha256']}, reference "
              f"{want['weights_file']} {want['weights_sha256']}")
    if bad:
        sys.exit(1)
    print(f"bitwise equal to the reference ({len(got['metrics'])} metrics lines, weights {got['weights_sha256'][:16]})")


if __name__ == "__main__":
    main()
