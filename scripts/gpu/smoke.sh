#!/usr/bin/env bash
# End-to-end GPU smoke run (called by scripts/gpu/run.sh with the bundle's bin/ on PATH and the
# Fashion-MNIST shards in $FASTNN_GPU_DATA). Prints "name<TAB>value" lines for run.sh's table; logs go to
# $FASTNN_GPU_OUT.
#
# The LeNet recipe of the quickstart (scripts/lenet_recipe.sh: 88.76% on the CPU) trained with
# --device=cuda in fp32, fp16 (loss scaling) and bf16, each checkpoint then evaluated by the CPU backend:
# the GPU path is judged by the CPU oracle, not by itself. The same 300 steps on the CPU give the
# first/last loss beside the fp32 GPU run (the same init and data order: the curves must agree closely).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${FASTNN_GPU_OUT:-/tmp}
data=${FASTNN_GPU_DATA:-}
[[ -n $data && -f $data/manifest.json ]] || { printf 'smoke\tskipped (no FASTNN_GPU_DATA)\n'; exit 0; }
source scripts/lenet_recipe.sh

loss_at() {  # metrics.jsonl, step -> loss of the train row at that step
  python3 - "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
want = int(sys.argv[2])
train = [r for r in rows if "loss" in r and r.get("event", "train") == "train"]
row = min(train, key=lambda r: abs(r.get("step", 0) - want), default=None)
print("none" if row is None else f'{row["loss"]:.5f}@{row["step"]}')
PY
}

lenet() {  # name, then extra train flags; FASTNN_SMOKE (a regex) picks runs by name
  local name=$1; shift
  [[ $name =~ ${FASTNN_SMOKE:-.} ]] || return 0
  local run=$out/smoke_$name
  rm -rf "$run"
  local start end
  start=$(date +%s.%N)
  if ! timeout 240 fastnn train --model_name=lenet --dataset_dir="$data" --output_dir="$run" "${LENET_RECIPE[@]}" \
      --log_loss_every_n_iters=100 "$@" >"$out/smoke_$name.log" 2>&1; then
    printf 'smoke lenet %s\ttrain failed (rc %s, see smoke_%s.log)\n' "$name" "$?" "$name"; return
  fi
  end=$(date +%s.%N)
  local json
  if ! json=$(timeout 120 fastnn eval --model_name=lenet --dataset_dir="$data" --output_dir="$run" --batch_size=500 \
      --device=cpu --json 2>>"$out/smoke_$name.log"); then
    printf 'smoke lenet %s\teval failed (see smoke_%s.log)\n' "$name" "$name"; return
  fi
  printf 'smoke lenet %s\ttop1 %s (CPU eval), train %s s, loss %s -> %s\n' "$name" \
    "$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["top1"], 4))' "$json")" \
    "$(python3 -c 'import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))' "$start" "$end")" \
    "$(loss_at "$run/metrics.jsonl" 100)" "$(loss_at "$run/metrics.jsonl" 100000)"
}

lenet cuda_fp32 --device=cuda --precision=fp32
lenet cuda_fp16 --device=cuda --precision=fp16 --loss_scale=1024 --dynamic_loss_scale
lenet cuda_bf16 --device=cuda --precision=bf16
# The data-parallel path in one process: gradients averaged over NCCL every step (a world of one).
lenet cuda_fp32_nccl --device=cuda --precision=fp32 --comm_backend=nccl
# CPU beside it: the first 300 steps only (the whole recipe is ~2 minutes on 16 cores).
LENET_STEPS=300 source scripts/lenet_recipe.sh
lenet cpu_300 --device=cpu
lenet cuda_fp32_300 --device=cuda --precision=fp32

# The one loop on the GPU: kill -9 after the step-100 checkpoint of a --deterministic fp32 run, --resume,
# and the final weights are bitwise those of an uninterrupted run; the GPU's own eval of the same
# checkpoint beside the CPU's.
resume_smoke() {
  [[ resume =~ ${FASTNN_SMOKE:-.} ]] || return 0
  local args=(--model_name=lenet --dataset_dir="$data" --batch_size=64 --optimizer=momentum --learning_rate=0.01
              --learning_rate_decay_type=fixed --stop_at_step=300 --save_checkpoints_steps=100 --seed=1
              --deterministic --device=cuda --precision=fp32 --log_loss_every_n_iters=50)
  rm -rf "$out/smoke_resume_full" "$out/smoke_resume_killed"
  timeout 240 fastnn train "${args[@]}" --output_dir="$out/smoke_resume_full" >"$out/smoke_resume.log" 2>&1 ||
    { printf 'smoke gpu resume	uninterrupted run failed (see smoke_resume.log)\n'; return; }
  timeout 240 fastnn train "${args[@]}" --output_dir="$out/smoke_resume_killed" >>"$out/smoke_resume.log" 2>&1 &
  local pid=$!
  for _ in $(seq 2400); do [[ -f $out/smoke_resume_killed/ckpt-100.meta.pbtxt ]] && break; sleep 0.05; done
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  timeout 240 fastnn train "${args[@]}" --output_dir="$out/smoke_resume_killed" --resume >>"$out/smoke_resume.log" 2>&1 ||
    { printf 'smoke gpu resume	resume failed (see smoke_resume.log)\n'; return; }
  local same=no
  cmp -s "$out/smoke_resume_full/ckpt-300.weights.safetensors" "$out/smoke_resume_killed/ckpt-300.weights.safetensors" && same=yes
  local gpu cpu
  gpu=$(timeout 120 fastnn eval --dataset_dir="$data" --output_dir="$out/smoke_resume_full" --batch_size=500 --device=cuda --json 2>>"$out/smoke_resume.log")
  cpu=$(timeout 120 fastnn eval --dataset_dir="$data" --output_dir="$out/smoke_resume_full" --batch_size=500 --device=cpu --json 2>>"$out/smoke_resume.log")
  printf 'smoke gpu resume\tkill -9 at step >= 100 then --resume: final weights bitwise equal: %s; eval top1 gpu %s cpu %s\n' "$same" \
    "$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["top1"], 4))' "$gpu" 2>/dev/null)" \
    "$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])["top1"], 4))' "$cpu" 2>/dev/null)"
}
resume_smoke

# predict on the GPU (issue 15): the cuda_fp32 run's checkpoint classifies the test split with
# --device=cuda and with the CPU backend; the labels must agree on (nearly) every image and the
# probabilities closely, with each device's time beside the other's. FASTNN_SMOKE_PREDICT_DEVICE (default
# cuda) lets the script itself be tried without a GPU (cpu against cpu).
predict_smoke() {
  [[ predict =~ ${FASTNN_SMOKE:-.} ]] || return 0
  local run=$out/smoke_cuda_fp32 dev=${FASTNN_SMOKE_PREDICT_DEVICE:-cuda}
  [[ -f $run/checkpoint ]] || { printf 'smoke gpu predict\tskipped (no smoke_cuda_fp32 run)\n'; return; }
  local t0 t1 t2
  t0=$(date +%s.%N)
  timeout 180 fastnn predict --checkpoint "$run" --input "$data" --device="$dev" --batch_size=500 -q \
    >"$out/smoke_predict_$dev.jsonl" 2>>"$out/smoke_predict.log" ||
    { printf 'smoke gpu predict\tpredict on %s failed (see smoke_predict.log)\n' "$dev"; return; }
  t1=$(date +%s.%N)
  timeout 180 fastnn predict --checkpoint "$run" --input "$data" --device=cpu --batch_size=500 -q \
    >"$out/smoke_predict_cpu_ref.jsonl" 2>>"$out/smoke_predict.log" ||
    { printf 'smoke gpu predict\tpredict on the cpu failed (see smoke_predict.log)\n'; return; }
  t2=$(date +%s.%N)
  python3 - "$out/smoke_predict_$dev.jsonl" "$out/smoke_predict_cpu_ref.jsonl" "$dev" "$t0" "$t1" "$t2" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
same = sum(x["label"] == y["label"] for x, y in zip(a, b))
dp = max((abs(x["topk"][0][1] - y["topk"][0][1]) for x, y in zip(a, b)), default=float("nan"))
top1 = sum(x["label"] == x["target"] for x in a) / max(1, len(a))
t0, t1, t2 = map(float, sys.argv[4:7])
print(f"smoke gpu predict\t{len(a)} vs {len(b)} images: labels agree on {same}, max |p1 {sys.argv[3]} - p1 cpu| {dp:.2e}, "
      f"top1 {top1:.4f}; {t1 - t0:.1f} s on {sys.argv[3]}, {t2 - t1:.1f} s on the cpu (model load included)")
PY
}
predict_smoke
