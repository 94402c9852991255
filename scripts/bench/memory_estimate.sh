#!/usr/bin/env bash
# The memory estimate (trainer/loop/memory_estimate.h) against the measured peak resident memory:
# `fastnn train` for a few steps on Fashion-MNIST's train shards (no held-out split, so no evaluation
# pipeline), under /usr/bin/time -v, at two batch sizes per model. Prints a Markdown table for
# docs/PERFORMANCE.md.
#   scripts/bench/memory_estimate.sh build/bin/fastnn /tmp/fmnist-train [steps]
# The data folder: the train-*.tfrecord shards of `fastnn convert mnist` without manifest.json.
set -euo pipefail
FASTNN=$1 DATA=$2 STEPS=${3:-3}
OUT=$(mktemp -d)
to_mib() {  # "27.2 GiB" / "213.4 MiB" -> MiB
  awk '{ v = $1; if ($2 == "GiB") v *= 1024; printf "%.1f", v }'
}
echo "| model | batch | input | estimate (MiB) | measured peak RSS (MiB) | estimate / measured |"
echo "|---|---|---|---|---|---|"
while read -r model batch; do
  files=$(ls "$DATA"/train-*.tfrecord | paste -sd, -)
  /usr/bin/time -v "$FASTNN" train --model_name="$model" --dataset_dir="$DATA" --train_files="$files" --num_classes=10 \
    --batch_size="$batch" --stop_at_step="$STEPS" --print_model_statistics --output_dir="$OUT/$model-$batch" \
    --save_checkpoints_steps=0 --hooks=StopAtStepHook,LoggingTensorHook --optimizer=momentum \
    > "$OUT/log" 2>&1 || { cat "$OUT/log" >&2; exit 1; }
  est=$(grep -E '^  total ' "$OUT/log" | head -1 | awk '{print $2, $3}' | to_mib)
  input=$(grep -oE 'input [0-9]+x[0-9]+x[0-9]+' "$OUT/log" | head -1 | cut -d' ' -f2)
  rss=$(grep 'Maximum resident set size' "$OUT/log" | awk '{printf "%.1f", $NF / 1024}')
  echo "| $model | $batch | $input | $est | $rss | $(awk -v a="$est" -v b="$rss" 'BEGIN { printf "%.2f", a / b }') |"
done <<'LIST'
lenet 32
lenet 512
resnet_v1_50 8
resnet_v1_50 32
inception_resnet_v2 4
inception_resnet_v2 16
LIST
rm -rf "$OUT"
