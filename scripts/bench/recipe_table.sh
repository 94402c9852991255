#!/usr/bin/env bash
# The recipe table of docs/TRAINING.md: ResNet-20 on Fashion-MNIST (32x32, batch 128, 10 epochs, momentum
# 0.9, cosine from 0.1, L2 5e-4), trained by fastnn on the CPU and by PyTorch on the CPU
# (scripts/peers/torch_fashion_recipe.py, the same network and recipe), interleaved recipe by recipe.
# Each recipe adds to the one before:
#   baseline  crop and mirror (the cifarnet preset's pad 4 + random 32x32 crop)
#   augment   + TrivialAugmentWide + random erasing (p 0.25, timm's pixel mode)
#   ema       + weight EMA, decay 0.999 (TF's warm-up rule), evaluated beside the weights
#   mix       + mixup 0.2 / CutMix 1.0 (timm's batch mode, switch prob 0.5)
#
#   scripts/bench/recipe_table.sh PEER_PYTHON [RECIPE...]    (default: all four)
# PEER_PYTHON: a Python with torch, torchvision and timm (pip install torch torchvision numpy pillow;
# pip install --no-deps timm). FASTNN (build/bin/fastnn), FASHION (/usr/share/datasets/fashion-mnist)
# and WORK (/tmp/fastnn_recipe_table) from the environment. Prints one JSON line per run; each run takes
# 10-15 min on 2 cores, both sides on all of them (train seconds exclude evaluations on both sides).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
PEER_PYTHON=${1:?usage: recipe_table.sh PEER_PYTHON [RECIPE...]}
shift
recipes=("$@")
[[ ${#recipes[@]} -gt 0 ]] || recipes=(baseline augment ema mix)
FASTNN=${FASTNN:-$here/build/bin/fastnn}
FASHION=${FASHION:-/usr/share/datasets/fashion-mnist}
WORK=${WORK:-/tmp/fastnn_recipe_table}
export OMP_WAIT_POLICY=passive
mkdir -p "$WORK"
[[ -f $WORK/data/manifest.json ]] ||
  "$FASTNN" convert mnist --input "$FASHION" --output "$WORK/data" --num-gpus 1 -q > /dev/null

fastnn_flags() {  # the recipe's flags, cumulative
  case $1 in
    baseline) ;;
    augment) echo --auto_augment=trivialaugmentwide --random_erase_prob=0.25 ;;
    ema) echo "$(fastnn_flags augment) --moving_average_decay=0.999" ;;
    mix) echo "$(fastnn_flags ema) --mixup_alpha=0.2 --cutmix_alpha=1.0" ;;
    *) echo "unknown recipe $1" >&2; exit 2 ;;
  esac
}
peer_flags() {
  case $1 in
    baseline) ;;
    augment) echo --auto-augment trivialaugmentwide --reprob 0.25 ;;
    ema) echo "$(peer_flags augment) --ema-decay 0.999" ;;
    mix) echo "$(peer_flags ema) --mixup 0.2 --cutmix 1.0" ;;
  esac
}

echo "{\"machine\": \"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"date\": \"$(date -u +%F)\", \"commit\": \"$(git -C "$here" rev-parse --short HEAD)\"}"
for r in "${recipes[@]}"; do
  run=$WORK/run_$r
  flags=$(fastnn_flags "$r")
  rm -rf "$run"
  # shellcheck disable=SC2086
  "$FASTNN" train --model_name=resnet_cifar_20 --dataset_dir="$WORK/data" --output_dir="$run" --device=cpu \
    --batch_size=128 --optimizer=momentum --momentum=0.9 --learning_rate=0.1 --learning_rate_decay_type=cosine \
    --weight_decay=5e-4 --num_epochs=10 --eval_every_n_steps=468 --seed=1 $flags \
    > "$WORK/fastnn_$r.log" 2>&1
  python3 - "$run/metrics.jsonl" "$r" "$flags" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
evals = [r for r in rows if r.get("event") == "eval"]
ema = [r for r in rows if r.get("event") == "eval_moving_averages"]
print(json.dumps({"side": "fastnn", "recipe": sys.argv[2], "flags": sys.argv[3], "top1": evals[-1]["top1"],
                  "ema_top1": ema[-1]["top1"] if ema else None, "train_seconds": round(evals[-1]["train_seconds"], 3),
                  "evals": [[round(e["epoch"]), e["top1"]] for e in evals],
                  "ema_evals": [[round(e["epoch"]), e["top1"]] for e in ema]}))
PY
  # shellcheck disable=SC2046
  "$PEER_PYTHON" "$here/scripts/peers/torch_fashion_recipe.py" --data "$FASHION" --epochs 10 --seed 1 \
    $(peer_flags "$r") 2> "$WORK/torch_$r.log" | sed "s/^{/{\"side\": \"pytorch\", \"recipe\": \"$r\", /"
done
