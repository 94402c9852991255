#!/usr/bin/env bash
# scripts/gpu/compare.py, the like-for-like GPU comparison driver, tried on the CPU: real `fastnn bench
# train` runs against a stand-in for the PyTorch peer whose rates are known, so the rotation of the
# order, the medians, spreads and per-round ratios, the failure and deadline records and the refusal to
# overwrite results are checked exactly. Usage: gpu_compare_driver.sh FASTNN SOURCE_DIR SCRATCH_DIR
set -euo pipefail
fastnn=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
command -v python3 >/dev/null || { echo "no python3"; exit 77; }

# The stand-in: torch_eager answers 100, 300, 200 images/s on its 1st, 2nd, 3rd run; --compile default
# fails as a compiler would; anything else (or a missing --device cpu) is an error the driver must show.
cat >"$scratch/peer.py" <<'PY'
import json, os, sys
args = sys.argv[1:]
mode = args[args.index("--compile") + 1] if "--compile" in args else "none"
if args[args.index("--device") + 1] != "cpu" or "--steps" not in args:
    sys.exit("stand-in: expected --device cpu and --steps")
if mode == "default":
    print("torch._dynamo.exc.BackendCompilerFailed: boom", file=sys.stderr)
    sys.exit(1)
steps = int(args[args.index("--steps") + 1])
records = os.environ.get("FASTNN_KERNEL_RECORDS")
if records:  # as the kernel recorder would: 2 ms of convolution and 1 of batch norm a step, and set-up once
    json.dump({"kernels": [{"name": "sm90_xmma_fprop_implicit_gemm_f16f16", "count": steps, "ns": steps * 2000000 + 7000000},
                           {"name": "cudnn::bn_fw_tr_1C11_kernel_NCHW", "count": steps, "ns": steps * 1000000},
                           {"name": "one_time_setup", "count": 1, "ns": 123456}], "dropped_records": 0},
              open(records, "w"))
counter = os.path.join(os.path.dirname(__file__), "count_" + mode)
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
print(json.dumps({"images_per_sec": [100.0, 300.0, 200.0][n % 3], "ms_per_step": 1.0, "first_step_seconds": 0.5}))
PY

drive() { python3 "$src/scripts/gpu/compare.py" --plan resnet20_cpu --steps 2 --warmup 1 --fastnn "$fastnn" \
            --python python3 --peer "$scratch/peer.py" "$@"; }

drive --rounds 3 --contenders fastnn,torch_eager,torch_compile,torch_graphs --out "$scratch/out" >"$scratch/run.log" 2>&1 ||
  { cat "$scratch/run.log"; echo "FAIL: compare.py exited $?"; exit 1; }

python3 - "$scratch/out" <<'PY'
import json, os, statistics, sys
out = sys.argv[1]
s = json.load(open(os.path.join(out, "summary.json")))
plan = s["plans"][0]
c = plan["contenders"]
def check(cond, what):
    if not cond:
        print("FAIL:", what); print(json.dumps(plan, indent=1)[:4000]); sys.exit(1)
check(list(c) == ["fastnn", "torch_eager", "torch_compile"], "the CPU keeps only the eager contenders, in order")
check(c["fastnn"]["runs"] == 3 and c["fastnn"]["median"] > 0, "three fastnn runs measured")
e = c["torch_eager"]
check((e["runs"], e["median"], e["min"], e["max"], e["spread"]) == (3, 200.0, 100.0, 300.0, 1.0),
      "torch_eager's median 200, min 100, max 300, spread 1.0")
check(c["torch_compile"]["runs"] == 0 and "boom" in " ".join(c["torch_compile"]["not_measured"]),
      "the failed compile is recorded with its error")
order = [(r["round"], r["contender"]) for r in plan["runs"]]
check(order == [(1, "fastnn"), (1, "torch_eager"), (1, "torch_compile"),
                (2, "torch_eager"), (2, "torch_compile"), (2, "fastnn"),
                (3, "torch_compile"), (3, "fastnn"), (3, "torch_eager")], f"the order rotates each round: {order}")
# The ratios, from the raw run files the driver kept.
rate = lambda rnd, name: json.loads(open(os.path.join(out, "runs", f"r{rnd}_{name}.json")).read())["images_per_sec"]
per_round = [rate(r, "fastnn") / rate(r, "torch_eager") for r in (1, 2, 3)]
check(len(plan["ratios"]) == 1, "one ratio: fastnn over torch_eager (the failed peer has none)")
r = plan["ratios"][0]
check((r["fastnn"], r["peer"], r["policy"], r["rounds"]) == ("fastnn", "torch_eager", "eager", 3), "the pair and policy")
check(abs(r["median_of_round_ratios"] - statistics.median(per_round)) < 1e-12, "the median of the round ratios")
check(abs(r["ratio_of_medians"] - c["fastnn"]["median"] / 200.0) < 1e-12, "the ratio of the medians")
t = open(os.path.join(out, "table.md")).read()
check("| torch_eager | eager | 3 | 200.0 | 100.0-300.0 | 100.0% |" in t and "Not measured: torch_compile" in t, "table.md")
env = json.load(open(os.path.join(out, "environment.json")))
check(any("fastnn" in line for line in env["fastnn_version"]) and env["commit"], "environment.json names fastnn and the commit")
print("driver: ok", per_round)
PY

# The kernel profile: two recorded runs a contender, their difference per step, classified by kind.
# fastnn on the CPU loads no recorder (no GPU), which is said; the stand-in writes what CUPTI would.
touch "$scratch/recorder.so"
drive --rounds 1 --contenders fastnn,torch_eager --kernel-profile 10,30 --kernel-records "$scratch/recorder.so" \
  --out "$scratch/kernels" >"$scratch/kernels.log" 2>&1 || { cat "$scratch/kernels.log"; echo "FAIL: kernel profile run"; exit 1; }
python3 - "$scratch/kernels/summary.json" <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["plans"][0]
k = plan["kernel_profile"]
t = k["torch_eager"]
ok = (t["status"] == "ok" and abs(t["kinds_ms_per_step"]["convolution"] - 2.0) < 1e-9
      and abs(t["kinds_ms_per_step"]["batch_norm"] - 1.0) < 1e-9 and abs(t["kernel_ms_per_step"] - 3.0) < 1e-9
      and k["fastnn"]["status"] == "no records" and plan["convolution_ratios"] == [])
if not ok:
    print("FAIL: kernel profile", json.dumps(k, indent=1)); sys.exit(1)
PY
if drive --kernel-profile 30,10 --out "$scratch/badk" >"$scratch/badk.log" 2>&1; then
  echo "FAIL: --kernel-profile 30,10 accepted"; exit 1
fi

# Results are never written over.
if drive --rounds 1 --contenders fastnn --out "$scratch/out" >"$scratch/again.log" 2>&1; then
  echo "FAIL: a second run into the same folder was accepted"; exit 1
fi
grep -q "already holds results" "$scratch/again.log" || { cat "$scratch/again.log"; echo "FAIL: no reason given"; exit 1; }

# A deadline too short for any run: every run is recorded as not started, and the summary still written.
drive --rounds 2 --contenders fastnn,torch_eager --deadline 5 --out "$scratch/late" >"$scratch/late.log" 2>&1 ||
  { cat "$scratch/late.log"; echo "FAIL: the deadline run failed"; exit 1; }
python3 - "$scratch/late/summary.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["plans"][0]["runs"]
if len(runs) != 4 or any(r["status"] != "deadline" for r in runs):
    print("FAIL: runs past the deadline were started:", runs); sys.exit(1)
PY

# Unknown names are refused before anything runs.
if drive --plan nonesuch --out "$scratch/bad" >"$scratch/bad.log" 2>&1 || [[ -e $scratch/bad ]]; then
  echo "FAIL: an unknown plan was accepted or left a folder"; exit 1
fi
echo "gpu_compare_driver: ok"
