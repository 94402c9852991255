#!/usr/bin/env python3
"""fastnn against PyTorch training the same network, like for like, interleaved, with the raw files kept.

  scripts/gpu/compare.py --plan resnet50_fp16 [--rounds 3] [--steps 50] [--warmup 10]
      [--contenders fastnn,fastnn_graphs,torch_eager,torch_compile,torch_graphs] [--deadline SECONDS]
      [--fastnn PATH] [--python PATH] [--out DIR | --results-dir DIR]
  scripts/gpu/compare.py --list

A plan is one network, batch and precision (PLANS below). Its contenders run one after the other in
rounds, the order rotated each round (A B C, B C A, C A B, ...), so a slow minute of the machine or a
warm-up effect falls on every contender alike. Each run is a fresh process timing --steps steps after
--warmup steps on synthetic data: fastnn's `bench train` and scripts/peers/torch_gpu_train_bench.py.

Both sides train with the same recipe: softmax cross-entropy, SGD with momentum 0.9 at learning rate
0.01, no weight decay, no label smoothing; fp16 with a dynamic loss scale on both (fastnn starts at 1024,
GradScaler at 65536). Each contender has a graph-capture policy, and ratios are only taken between a
fastnn contender and a PyTorch one of the same policy:
  eager   fastnn (each kernel launched from the host every step); torch_eager; torch_compile
          (torch.compile default mode); torch_autotune (max-autotune-no-cudagraphs)
  graphs  fastnn_graphs (--cuda_graph: the step replayed from CUDA graphs); torch_graphs
          (torch.compile reduce-overhead); torch_autotune_graphs (max-autotune)
torch.compile's kernels are cached between runs (TORCHINDUCTOR_CACHE_DIR, a folder under the system's
temporary folder unless set), so only the first round pays the whole compilation; each PyTorch run's
first_step_seconds says what it paid.

--deadline bounds the whole comparison: a run is not started when the time left is below what that
contender took last round (or 30 s before its first run), and a run still going at the deadline is
stopped; what was measured is still summarised. Results in --out (default: under --results-dir,
docs/results/gpu/ in the repository, a folder DATE_COMMIT_CARD): runs/ with each run's JSON and log,
environment.json (nvidia-smi, `fastnn --version`, the commit), summary.json and table.md (per
contender: runs, median images/s, min-max, spread; per fastnn contender and peer of its policy: the
median of the per-round ratios and the ratio of the medians).

--kernel-profile SHORT,LONG measures where the GPU's time goes, the same way on both sides: after the
rounds, each contender runs SHORT and then LONG timed steps with the kernel recorder
(scripts/gpu/kernel_records.cpp, a CUDA injection library over CUPTI) loaded into it; the difference
of the two runs' kernel times over LONG - SHORT is the time a step spends in each kernel, summed by
kind (convolution, batch norm, elementwise, ...: the peer script's KERNEL_KINDS) into the summary and
the table, with fastnn's convolution time over each same-policy peer's. The plan resnet20_cpu runs on the CPU,
where only the eager policy exists: how the driver is tried on a machine without a GPU.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, "scripts", "peers", "torch_gpu_train_bench.py")
sys.path.insert(0, os.path.dirname(PEER))
from torch_gpu_train_bench import KERNEL_KINDS  # noqa: E402 (imports no torch)
# The kernel recorder: in run.sh's unpacked bundle, else a CUDA build's.
KERNEL_RECORDS = next((p for p in ("/tmp/fastnn-gpu/bundle/lib/libfastnn_kernel_records.so",
                                   os.path.join(ROOT, "build", "bin", "libfastnn_kernel_records.so"))
                       if os.path.isfile(p)), os.path.join(ROOT, "build", "bin", "libfastnn_kernel_records.so"))

# plan: (device, fastnn bench train flags, torch_gpu_train_bench.py flags, what differs)
FP16 = ["--precision=fp16", "--loss_scale=1024", "--dynamic_loss_scale"]
PLANS = {
    "resnet50_fp16": ("cuda", ["--model_name=resnet_v1_50", "--batch_size=256", *FP16],
                      ["--model", "tfslim_resnet_v1_50", "--batch-size", "256", "--precision", "amp", "--channels-last"],
                      "the same TF-slim network on both sides; fastnn NHWC (its cuda default), PyTorch channels_last"),
    "resnet50_v15_fp16": ("cuda", ["--model_name=resnet_v1_5_50", "--batch_size=256", *FP16],
                          ["--model", "resnet50", "--batch-size", "256", "--precision", "amp", "--channels-last"],
                          "ResNet-50 v1.5, MLPerf's network: torchvision's resnet50 against fastnn's resnet_v1_5_50 "
                          "(the same logits from the same weights, tests/python/test_resnet_v1_5_torchvision.py)"),
    "resnet50_bf16": ("cuda", ["--model_name=resnet_v1_50", "--batch_size=256", "--precision=bf16"],
                      ["--model", "tfslim_resnet_v1_50", "--batch-size", "256", "--precision", "bf16", "--channels-last"],
                      "bf16 autocast against fastnn's bf16 graph"),
    "resnet50_fp32": ("cuda", ["--model_name=resnet_v1_50", "--batch_size=256", "--precision=fp32"],
                      ["--model", "tfslim_resnet_v1_50", "--batch-size", "256", "--precision", "fp32", "--channels-last"],
                      "TF32 off on both sides"),
    "inception_v3_fp16": ("cuda", ["--model_name=inception_v3", "--batch_size=128", *FP16],
                          ["--model", "inception_v3", "--batch-size", "128", "--precision", "amp", "--channels-last"],
                          "torchvision's Inception-v3 (TF-slim's layer shapes; its auxiliary head may differ slightly)"),
    "mobilenet_v2_fp16": ("cuda", ["--model_name=mobilenet_v2", "--batch_size=128", *FP16],
                          ["--model", "tfslim_mobilenet_v2", "--batch-size", "128", "--precision", "amp",
                           "--channels-last"],
                          "the same TF-slim network; PyTorch pads only the stride-2 convolutions (TF's SAME)"),
    "resnet20_cpu": ("cpu", ["--model_name=resnet_cifar_20", "--image-size", "32", "--batch_size=32",
                             "--precision=fp32", "--num_classes=10"],
                     ["--model", "resnet_cifar_20", "--image-size", "32", "--batch-size", "32", "--precision", "fp32",
                      "--num-classes", "10"],
                     "the CPU, for trying the driver"),
}
RECIPE = ["--optimizer=momentum", "--momentum=0.9", "--learning_rate=0.01", "--weight_decay=0", "--label_smoothing=0"]

# contender: (side, policy, extra flags)
CONTENDERS = {
    "fastnn": ("fastnn", "eager", []),
    "fastnn_graphs": ("fastnn", "graphs", ["--cuda_graph"]),
    "torch_eager": ("torch", "eager", []),
    "torch_compile": ("torch", "eager", ["--compile", "default"]),
    "torch_autotune": ("torch", "eager", ["--compile", "max-autotune-no-cudagraphs"]),
    "torch_graphs": ("torch", "graphs", ["--compile", "reduce-overhead"]),
    "torch_autotune_graphs": ("torch", "graphs", ["--compile", "max-autotune"]),
}
DEFAULT_CONTENDERS = "fastnn,fastnn_graphs,torch_eager,torch_compile,torch_graphs"


def command_of(name, plan, a, steps):
    side, _, extra = CONTENDERS[name]
    device, fastnn_flags, torch_flags, _ = PLANS[plan]
    if side == "fastnn":
        return [a.fastnn, "bench", "train", "--json", "--steps", str(steps), "--warmup", str(a.warmup), "--seed=1",
                f"--device={device}", *RECIPE, *fastnn_flags, *extra]
    return [a.python, a.peer, "--device", device, "--steps", str(steps), "--warmup", str(a.warmup), *torch_flags,
            *extra]


def nvidia_smi(fields):
    if not shutil.which("nvidia-smi"):
        return None
    try:
        r = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={fields}", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        return dict(zip(fields.split(","), (v.strip() for v in r.stdout.strip().split(",")))) if r.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def run_once(name, plan, rnd, a, out, deadline, steps=None, stem=None, env_extra=None):
    cmd = command_of(name, plan, a, steps or a.steps)
    stem = stem or f"r{rnd}_{name}"
    record = {"contender": name, "round": rnd, "command": cmd}
    left = deadline - time.monotonic()
    record["clocks_before"] = nvidia_smi("clocks.sm,temperature.gpu,power.draw")
    env = dict(os.environ, **(env_extra or {}))
    env.pop("OMP_WAIT_POLICY", None)  # each side's own default (scripts/peers/torch_cpu_train_bench.py says why)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), "fastnn-compare-inductor"))
    start = time.monotonic()
    try:
        limit = a.autotune_timeout if "autotune" in name else a.timeout  # max-autotune: its own bound
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, min(limit, left)), env=env)
        rc, stdout, stderr = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
    record["seconds"] = round(time.monotonic() - start, 2)
    record["clocks_after"] = nvidia_smi("clocks.sm,temperature.gpu,power.draw")
    with open(os.path.join(out, "runs", stem + ".json"), "w") as f:
        f.write(stdout)
    with open(os.path.join(out, "runs", stem + ".log"), "w") as f:
        f.write(stderr)
    record["rc"] = rc
    result = None
    for line in reversed(stdout.strip().splitlines()):
        try:
            result = json.loads(line)
            break
        except ValueError:
            continue
    if rc == 0 and result and "images_per_sec" in result:
        record["status"] = "ok"
        record["images_per_sec"] = result["images_per_sec"]
        record["ms_per_step"] = result.get("ms_per_step")
        for key in ("first_step_seconds", "warmup_seconds", "parameters", "final_loss", "last_loss", "environment"):
            if key in result:
                record[key] = result[key]
    else:
        record["status"] = {77: "skipped", "timeout": "timeout"}.get(rc, "failed")
        tail = (stderr.strip().splitlines() or ["(no output)"])[-1]
        record["why"] = tail[:300]
    return record


def kind_of(kernel):
    """The peer's kernel kinds (torch_gpu_train_bench.KERNEL_KINDS), for both sides' kernels alike."""
    return next((k for k, pat in KERNEL_KINDS if re.search(pat, kernel, re.IGNORECASE)), "other")


def kernel_profile(name, plan, a, out, deadline):
    """GPU time per step by kernel kind, from the kernel recorder's files of two runs that differ only in
    their timed steps: the difference holds the steps alone (no warm-up, algorithm search or compilation)."""
    short, long_ = a.kernel_profile
    totals = {}
    for steps in (short, long_):
        path = os.path.join(out, "runs", f"kernels_{name}_{steps}.json")
        if deadline - time.monotonic() < 30:
            return {"status": "deadline"}
        r = run_once(name, plan, "kernels", a, out, deadline, steps=steps, stem=f"kernels_{name}_{steps}_run",
                     env_extra={"CUDA_INJECTION64_PATH": a.kernel_records, "FASTNN_KERNEL_RECORDS": path})
        if r["status"] != "ok":
            return {"status": r["status"], "why": r.get("why", "")}
        try:
            records = json.load(open(path))
        except (OSError, ValueError):
            return {"status": "no records", "why": f"{path} was not written (the recorder did not load: no GPU?)"}
        totals[steps] = {k["name"]: k["ns"] for k in records["kernels"]}
        if records.get("dropped_records"):
            return {"status": "dropped records", "why": f"CUPTI dropped {records['dropped_records']} records"}
    per_step = {n: (totals[long_].get(n, 0) - totals[short].get(n, 0)) / (long_ - short) / 1e6
                for n in set(totals[short]) | set(totals[long_])}
    kinds = {}
    for n, ms in per_step.items():
        kinds[kind_of(n)] = kinds.get(kind_of(n), 0.0) + ms
    top = sorted(per_step.items(), key=lambda kv: -kv[1])[:12]
    return {"status": "ok", "steps": [short, long_], "kernel_ms_per_step": sum(per_step.values()),
            "kinds_ms_per_step": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
            "top_kernels": [{"ms": ms, "kind": kind_of(n), "name": n[:160]} for n, ms in top]}


def spread(values):
    m = statistics.median(values)
    return {"runs": len(values), "median": m, "min": min(values), "max": max(values),
            "spread": (max(values) - min(values)) / m if m else None}


def summarise(plan, names, records):
    rates = {n: [r["images_per_sec"] for r in records if r["contender"] == n and r["status"] == "ok"] for n in names}
    rows = {}
    for n in names:
        rows[n] = {"policy": CONTENDERS[n][1], **(spread(rates[n]) if rates[n] else {"runs": 0})}
        bad = [r for r in records if r["contender"] == n and r["status"] != "ok"]
        if bad:
            rows[n]["not_measured"] = [f"round {r['round']}: {r['status']}" + (f" ({r['why']})" if r.get("why") else "")
                                       for r in bad]
    ratios = []
    by_round = {}
    for r in records:
        if r["status"] == "ok":
            by_round.setdefault(r["round"], {})[r["contender"]] = r["images_per_sec"]
    for f in (n for n in names if CONTENDERS[n][0] == "fastnn"):
        for t in (n for n in names if CONTENDERS[n][0] == "torch" and CONTENDERS[n][1] == CONTENDERS[f][1]):
            per_round = [v[f] / v[t] for v in by_round.values() if f in v and t in v]
            if not per_round:
                continue
            ratios.append({"fastnn": f, "peer": t, "policy": CONTENDERS[f][1], "rounds": len(per_round),
                           "median_of_round_ratios": statistics.median(per_round),
                           "min_round_ratio": min(per_round), "max_round_ratio": max(per_round),
                           "ratio_of_medians": statistics.median(rates[f]) / statistics.median(rates[t])})
    return {"plan": plan, "contenders": rows, "ratios": ratios}


def table(summary, a, plan):
    device, _, _, differs = PLANS[plan]
    lines = [f"## {plan}", "",
             f"{a.rounds} rounds of {a.steps} steps after {a.warmup} warm-up, interleaved, order rotated each round, "
             f"on {device}; {differs}.", "",
             "| contender | capture | runs | median images/s | min-max | spread |", "|---|---|---|---|---|---|"]
    for n, c in summary["contenders"].items():
        if c["runs"]:
            lines.append(f"| {n} | {c['policy']} | {c['runs']} | {c['median']:.1f} | {c['min']:.1f}-{c['max']:.1f} | "
                         f"{100 * c['spread']:.1f}% |")
        else:
            lines.append(f"| {n} | {c['policy']} | 0 | - | - | - |")
    lines += ["", "| fastnn | over | capture | rounds | median of round ratios (min-max) | ratio of medians |",
              "|---|---|---|---|---|---|"]
    for r in summary["ratios"]:
        lines.append(f"| {r['fastnn']} | {r['peer']} | {r['policy']} | {r['rounds']} | **{r['median_of_round_ratios']:.3f}** "
                     f"({r['min_round_ratio']:.3f}-{r['max_round_ratio']:.3f}) | {r['ratio_of_medians']:.3f} |")
    prof = summary.get("kernel_profile")
    if prof:
        kinds = sorted({k for p in prof.values() if p["status"] == "ok" for k in p["kinds_ms_per_step"]})
        lines += ["", f"GPU kernel time per step (ms), from kernel records: runs of {a.kernel_profile[1]} less runs of "
                  f"{a.kernel_profile[0]} steps.", "",
                  "| contender | all kernels | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
        for n, p in prof.items():
            if p["status"] == "ok":
                lines.append(f"| {n} | {p['kernel_ms_per_step']:.2f} | " +
                             " | ".join(f"{p['kinds_ms_per_step'].get(k, 0.0):.2f}" for k in kinds) + " |")
            else:
                lines.append(f"| {n} | {p['status']}: {p.get('why', '')} |" + " |" * len(kinds))
        for r in summary.get("convolution_ratios", []):
            lines.append(f"\nConvolution time, {r['fastnn']} over {r['peer']}: **{r['ratio']:.3f}** "
                         f"({r['fastnn_ms']:.2f} against {r['peer_ms']:.2f} ms a step)")
    missing = [f"{n}: {'; '.join(c['not_measured'])}" for n, c in summary["contenders"].items() if c.get("not_measured")]
    if missing:
        lines += ["", "Not measured: " + " | ".join(missing)]
    return "\n".join(lines) + "\n"


def commit_of():
    for path in (os.path.join(ROOT, ".carry", "gpu", "COMMIT"), "/tmp/fastnn-gpu/bundle/COMMIT"):
        if os.path.isfile(path):
            return open(path).read().strip()[:12]
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def environment(a, commit):
    env = {"commit": commit, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host_cpus": os.cpu_count(), "python": a.python, "argv": sys.argv[1:]}
    try:
        env["fastnn_version"] = subprocess.run([a.fastnn, "--version"], capture_output=True, text=True,
                                               timeout=60).stdout.strip().splitlines()
    except (OSError, subprocess.TimeoutExpired) as e:
        env["fastnn_version"] = f"not run: {e}"
    env["gpu"] = nvidia_smi("name,pci.bus_id,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,"
                            "clocks.max.mem,power.limit,temperature.gpu,persistence_mode,compute_mode")
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--plan", default="resnet50_fp16", help="comma-separated plan names (--list)")
    ap.add_argument("--contenders", default=DEFAULT_CONTENDERS, help="comma-separated, or 'all'")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=480, help="seconds one run may take")
    ap.add_argument("--autotune-timeout", type=float, default=360,
                    help="seconds a max-autotune run may take, compilation included (one that does not compile in "
                         "time is recorded as a timeout, not waited for)")
    ap.add_argument("--deadline", type=float, default=0, help="seconds the whole comparison may take (0: no bound)")
    ap.add_argument("--fastnn", default=os.path.join(ROOT, "build", "bin", "fastnn"))
    ap.add_argument("--python", default=sys.executable, help="the Python with PyTorch")
    ap.add_argument("--peer", default=PEER, help=argparse.SUPPRESS)  # tests put a stand-in here
    ap.add_argument("--out", default="", help="the results folder (default: --results-dir/DATE_COMMIT_CARD)")
    ap.add_argument("--results-dir", default=os.path.join(ROOT, "docs", "results", "gpu"))
    ap.add_argument("--kernel-profile", default="", metavar="SHORT,LONG",
                    help="after the rounds, each contender twice more under the kernel recorder, SHORT and LONG "
                         "timed steps (e.g. 10,30): GPU time per step by kernel kind from their difference")
    ap.add_argument("--kernel-records", default=KERNEL_RECORDS,
                    help="the recorder library (scripts/gpu/kernel_records.cpp)")
    ap.add_argument("--list", action="store_true", help="print the plans and contenders, run nothing")
    a = ap.parse_args()
    if a.list:
        for name, (device, ff, tf, differs) in PLANS.items():
            print(f"{name} ({device}): fastnn {' '.join(ff)} | torch {' '.join(tf)}; {differs}")
        for name, (side, policy, extra) in CONTENDERS.items():
            print(f"  {name}: {side}, {policy}{' ' + ' '.join(extra) if extra else ''}")
        return 0
    plans = a.plan.split(",")
    names = list(CONTENDERS) if a.contenders == "all" else a.contenders.split(",")
    unknown = [p for p in plans if p not in PLANS] + [n for n in names if n not in CONTENDERS]
    if unknown or a.rounds < 1 or a.steps < 1:
        print(f"compare.py: unknown plan or contender {', '.join(unknown)} (--list), or --rounds/--steps below 1"
              if unknown else "compare.py: --rounds and --steps must be at least 1", file=sys.stderr)
        return 2
    if a.kernel_profile:
        try:
            a.kernel_profile = [int(x) for x in a.kernel_profile.split(",")]
            assert len(a.kernel_profile) == 2 and 0 < a.kernel_profile[0] < a.kernel_profile[1]
        except (ValueError, AssertionError):
            print("compare.py: --kernel-profile is SHORT,LONG with 0 < SHORT < LONG", file=sys.stderr)
            return 2
        if not os.path.isfile(a.kernel_records):
            print(f"compare.py: no kernel recorder at {a.kernel_records} (a CUDA build's "
                  "bin/libfastnn_kernel_records.so; --kernel-records)", file=sys.stderr)
            return 2
    commit = commit_of()
    env = environment(a, commit)
    card = re.sub(r"[^A-Za-z0-9]+", "-", (env["gpu"] or {}).get("name", "cpu")).strip("-").lower()
    out = a.out or os.path.join(a.results_dir, f"{datetime.date.today():%Y-%m-%d}_{commit}_{card}")
    if os.path.exists(os.path.join(out, "summary.json")):
        print(f"compare.py: {out} already holds results; give another --out", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    with open(os.path.join(out, "environment.json"), "w") as f:
        json.dump(env, f, indent=1)
    deadline = time.monotonic() + (a.deadline if a.deadline > 0 else 1e9)
    summaries, text = [], []
    for plan in plans:
        device = PLANS[plan][0]
        # The CPU has no CUDA graphs to replay: only the eager policy there.
        plan_names = [n for n in names if device == "cuda" or CONTENDERS[n][1] == "eager"]
        records, last = [], {}
        for rnd in range(1, a.rounds + 1):
            k = (rnd - 1) % len(plan_names)
            for name in plan_names[k:] + plan_names[:k]:
                left = deadline - time.monotonic()
                if left < max(30.0, last.get(name, 0.0)):
                    records.append({"contender": name, "round": rnd, "status": "deadline",
                                    "why": f"{left:.0f} s left of --deadline"})
                    continue
                r = run_once(name, plan, rnd, a, out, deadline)
                last[name] = r["seconds"]
                records.append(r)
                shown = f"{r['images_per_sec']:.1f} images/s" if r["status"] == "ok" else f"{r['status']}: {r.get('why', '')}"
                print(f"compare {plan} round {rnd} {name}: {shown} ({r['seconds']:.0f} s)", flush=True)
        s = summarise(plan, plan_names, records)
        s["runs"] = records
        if a.kernel_profile:
            s["kernel_profile"] = {n: kernel_profile(n, plan, a, out, deadline) for n in plan_names}
            conv = {n: p["kinds_ms_per_step"].get("convolution") for n, p in s["kernel_profile"].items()
                    if p["status"] == "ok"}
            s["convolution_ratios"] = [
                {"fastnn": f, "peer": t, "fastnn_ms": conv[f], "peer_ms": conv[t], "ratio": conv[f] / conv[t]}
                for f in conv for t in conv
                if CONTENDERS[f][0] == "fastnn" and CONTENDERS[t][0] == "torch" and CONTENDERS[f][1] == CONTENDERS[t][1]
                and conv[f] is not None and conv[t]]
        summaries.append(s)
        text.append(table(s, a, plan))
        with open(os.path.join(out, "summary.json"), "w") as f:  # after each plan: a stopped call keeps the rest
            json.dump({"environment": env, "rounds": a.rounds, "steps": a.steps, "warmup": a.warmup,
                       "plans": summaries}, f, indent=1)
        with open(os.path.join(out, "table.md"), "w") as f:
            f.write(f"# fastnn against PyTorch, commit {commit}, {(env['gpu'] or {}).get('name', 'CPU')}\n\n" +
                    "\n".join(text))
    print(open(os.path.join(out, "table.md")).read())
    print(f"compare.py: results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
