#!/usr/bin/env python3
"""check_metrics.py METRICS.jsonl [LAST_STEP]: every line is a JSON object, each (event, step) appears
once, train steps increase, train lines say the CPU the process and its step-loop thread used (the thread's
share at most the process's); with LAST_STEP, the last train line is at that step. Exit 1 with a reason."""
import json
import sys

path = sys.argv[1]
seen, last_train = set(), -1
with open(path, "rb") as f:
    data = f.read()
if data and not data.endswith(b"\n"):
    sys.exit(f"{path}: the last line is not complete")
for n, line in enumerate(data.decode().splitlines(), 1):
    try:
        j = json.loads(line)
    except ValueError as e:
        sys.exit(f"{path}:{n}: not JSON ({e}): {line[:80]!r}")
    if not isinstance(j, dict) or "step" not in j or "event" not in j:
        sys.exit(f"{path}:{n}: not a metrics object: {line[:80]!r}")
    key = (j["event"], j["step"])
    if key in seen:
        sys.exit(f"{path}:{n}: {key} appears twice")
    seen.add(key)
    if j["event"] == "train":
        if j["step"] <= last_train:
            sys.exit(f"{path}:{n}: train step {j['step']} after {last_train}")
        last_train = j["step"]
        host, loop = j.get("host_cpu_cores"), j.get("loop_thread_cpu_cores")
        if not isinstance(host, (int, float)) or not isinstance(loop, (int, float)):
            sys.exit(f"{path}:{n}: a train line without host_cpu_cores / loop_thread_cpu_cores: {line[:160]!r}")
        if not (0 < host and 0 <= loop <= host + 0.05):
            sys.exit(f"{path}:{n}: CPU cores: process {host}, loop thread {loop}")
if len(sys.argv) > 2 and last_train != int(sys.argv[2]):
    sys.exit(f"{path}: last train step {last_train}, expected {sys.argv[2]}")
print(f"{path}: {len(seen)} lines, each step once")
