#!/usr/bin/env bash
# `fastnn bench train` end to end on the CPU: a tiny model's JSON line has the fields scripts/gpu reads
# and a positive images/s; job config flags pass through (batch_size, optimizer); --device=cuda fails
# with a clear message in a build without CUDA (skipped where a GPU is present).
set -euo pipefail
fastnn=$1
mkdir -p "$3"
json=$("$fastnn" bench train --model_name=lenet --batch_size=8 --optimizer=sgd --learning_rate=0.01 --steps 2 --warmup 1 --json)
python3 - "$json" <<'PY'
import json, sys
d = json.loads(sys.argv[1])
assert d["bench"] == "train" and d["model"] == "lenet" and d["device"] == "cpu" and d["dtype"] == "f32", d
assert d["batch_size"] == 8 and d["steps"] == 2 and d["warmup"] == 1, d
assert d["images_per_sec"] > 0 and d["milliseconds"] > 0, d
assert abs(d["images_per_sec"] - 1000 * 2 * 8 / d["milliseconds"]) < 1e-6 * d["images_per_sec"], d
PY
human=$("$fastnn" bench train --model_name=lenet --batch_size=4 --steps 1 --warmup 0)
grep -q "images/s" <<<"$human"
if "$fastnn" bench train --model_name=no_such_model --steps 1 2>"$3/err"; then echo "unknown model accepted"; exit 1; fi
grep -q "no_such_model" "$3/err"
if "$fastnn" bench train --model_name=lenet --device=cuda --steps 1 --warmup 0 2>"$3/err" >/dev/null; then
  grep -q . /dev/null  # a GPU build on a GPU machine: the CUDA path ran
else
  grep -q "device=cuda" "$3/err"
fi
echo "bench train: ok"
