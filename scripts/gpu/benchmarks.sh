#!/usr/bin/env bash
# fastnn's GPU benchmarks (called by scripts/gpu/run.sh with the bundle's bin/ on PATH). Prints
# "name<TAB>value" lines for run.sh's table; full JSON / logs go to $FASTNN_GPU_OUT (bench_*.json).
#
#   training images/s on synthetic data (fastnn bench train, CUDA events, after warm-up):
#     ResNet-50 224x224 batch 256 fp32 (TF32 off, and TF32 on) and fp16; Inception-v3 299x299 and
#     VGG-16 224x224 at batch 128 fp16 (the batch sizes of scripts/gpu/peers.sh, so rows compare)
#   Fashion-MNIST (data converted by run.sh in $FASTNN_GPU_DATA): resnet_cifar_20 trained with
#     fastnn train --device=cuda, evaluated every epoch; the time to the first evaluation >= 93% top-1,
#     interpolated from the run's wall time by step (evaluation time excluded by the loop's clock).
set -uo pipefail
out=${FASTNN_GPU_OUT:-/tmp}
steps=${FASTNN_BENCH_STEPS:-30}

bench() {  # name, then fastnn bench train flags
  local name=$1; shift
  if fastnn bench train --json --steps "$steps" --warmup 5 --seed=1 "$@" >"$out/bench_$name.json" 2>"$out/bench_$name.log"; then
    printf 'fastnn %s\t%s img/s\n' "$name" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["images_per_sec"],1), "(loss", round(d["first_loss"],3), "->", round(d["last_loss"],3), end=")")' "$out/bench_$name.json")"
  else
    printf 'fastnn %s\tfailed (see bench_%s.log)\n' "$name" "$name"
  fi
}

bench resnet50_fp32 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp32 --optimizer=momentum
FASTNN_ALLOW_TF32=1 bench resnet50_tf32 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp32 --optimizer=momentum
bench resnet50_fp16 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale
bench resnet50_bf16 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=bf16 --optimizer=momentum
bench inception_v3_fp16 --model_name=inception_v3 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale
bench vgg16_fp16 --model_name=vgg_16 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale

# Fashion-MNIST time to 93%: ResNet-20 (CIFAR layout), momentum 0.9, batch 128, lr 0.1 cosine, wd 5e-4,
# 15 epochs, fp32 on the GPU. Same recipe as the PyTorch peer row (scripts/gpu/peers.sh) when it has one.
data=${FASTNN_GPU_DATA:-}
if [[ -n $data && -f $data/manifest.json ]]; then
  run=$out/fashion_run
  rm -rf "$run"
  start=$(date +%s.%N)
  if fastnn train --model_name=resnet_cifar_20 --dataset_dir="$data" --output_dir="$run" --device=cuda \
      --precision=fp32 --batch_size=128 --optimizer=momentum --momentum=0.9 --learning_rate=0.1 \
      --learning_rate_decay_type=cosine --weight_decay=5e-4 --num_epochs=15 --eval_every_n_steps=468 \
      --log_loss_every_n_iters=100 --hooks=LoggingTensorHook >"$out/fashion_train.log" 2>&1; then
    end=$(date +%s.%N)
    python3 - "$run/metrics.jsonl" "$start" "$end" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
evals = [r for r in rows if r.get("event") == "eval"]
wall = float(sys.argv[3]) - float(sys.argv[2])
last = max((r["step"] for r in rows if "step" in r), default=1)
hit = next((r for r in evals if r["top1"] >= 0.93), None)
best = max((r["top1"] for r in evals), default=0)
if hit:
    print(f"fastnn fashion_resnet20_time_to_93\t{wall * hit['step'] / last:.1f} s (step {hit['step']}, top1 {hit['top1']:.4f}; run {wall:.1f} s)")
else:
    print(f"fastnn fashion_resnet20_time_to_93\tnot reached (best top1 {best:.4f}, run {wall:.1f} s)")
PY
  else
    printf 'fastnn fashion_resnet20_time_to_93\tfailed (see fashion_train.log)\n'
  fi
else
  printf 'fastnn fashion_resnet20_time_to_93\tskipped (no FASTNN_GPU_DATA)\n'
fi
