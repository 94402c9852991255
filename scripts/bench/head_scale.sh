#!/usr/bin/env bash
# The classifier head at scale (docs/LARGE_SCALE.md, issue 14): 1,000,000 classes x 128 dims on the
# CPU, the same run as
#   1 process, replicated head (loss_type=arcface: the head is one more parameter of the model)
#   1 process, dist_arcface (the sharded head's code path holding every row)
#   2 ranks,   dist_arcface (500,000 rows each)
#   2 ranks,   dist_arcface with sample_ratio=0.1 (PartialFC)
# Each run trains LeNet's embedding (emb_dim 128) on Fashion-MNIST's train shards for STEPS steps at
# batch B per rank, momentum; the class labels are Fashion-MNIST's (0..9), which PartialFC always
# keeps as positives, so the sampled rows are the 10 positives plus 10% of the rest. Measured: peak
# resident memory per rank (/usr/bin/time -v around each rank), the memory estimate's head line, and
# the mean step time of the steps after the first LOG (metrics.jsonl images_per_sec, per rank).
# Prints a Markdown table for docs/PERFORMANCE.md.
#   scripts/bench/head_scale.sh build/bin/fastnn DATA_DIR [steps] [batch]
# DATA_DIR: a folder of train-*.tfrecord shards of `fastnn convert mnist` without manifest.json (no
# held-out split, so no evaluation of 1 M classes at the end to distort the peak memory).
# (mpirun reads from /dev/null: it would forward the list below to rank 0's stdin.)
set -euo pipefail
FASTNN=$1 DATA=$2 STEPS=${3:-40} BATCH=${4:-64}
LOG=10
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
files=$(ls "$DATA"/train-*.tfrecord | paste -sd, -)
common=(--model_name=lenet --dataset_dir="$DATA" --train_files="$files" --num_classes=1000000 --emb_dim=128 --batch_size="$BATCH"
        --optimizer=momentum --learning_rate=0.01 --stop_at_step="$STEPS" --log_loss_every_n_iters="$LOG"
        --save_checkpoints_steps=0 --eval_every_n_steps=0 --device=cpu --num_preprocessing_threads=1)

echo "| head | ranks | sample_ratio | rows per rank | estimated head (rank 0) | peak RSS per rank (MiB) | step time (ms) |"
echo "|---|---|---|---|---|---|---|"
while read -r name loss ranks ratio; do
  dir="$OUT/$name-$ranks-$ratio"
  mkdir -p "$dir"
  args=("${common[@]}" --loss_type="$loss" --output_dir="$dir/run")
  [ "$ratio" = 1.0 ] || args+=(--sample_ratio="$ratio")
  # One /usr/bin/time per rank, its report into a file named after the rank.
  cmd=(bash -c '/usr/bin/time -v -o "$0/time-${OMPI_COMM_WORLD_RANK:-0}.txt" "$@"' "$dir" "$FASTNN" train "${args[@]}")
  if [ "$ranks" = 1 ]; then "${cmd[@]}" > "$dir/log" 2>&1 || { cat "$dir/log" >&2; exit 1; }
  else mpirun --oversubscribe -np "$ranks" "${cmd[@]}" < /dev/null > "$dir/log" 2>&1 || { cat "$dir/log" >&2; exit 1; }; fi
  head_line=$(grep -m1 '^classifier head, rank 0' "$dir/log" | sed -E 's/.*= ([0-9.]+ [KMG]i?B)$/\1/')
  rows=$(grep -m1 -oE '\(([0-9]+) rows x' "$dir/log" | grep -oE '[0-9]+' | head -1)
  rss=$(for f in "$dir"/time-*.txt; do grep 'Maximum resident set size' "$f" | awk '{printf "%.0f ", $NF / 1024}'; done)
  step_ms=$(python3 - "$dir/run/metrics.jsonl" "$BATCH" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l]
rates = [r["images_per_sec"] for r in rows[1:]] or [rows[-1]["images_per_sec"]]
print("%.1f" % (1000.0 * int(sys.argv[2]) / (sum(rates) / len(rates))))
PY
)
  echo "| $name | $ranks | $ratio | $rows | $head_line | ${rss% } | $step_ms |"
done <<'LIST'
replicated arcface 1 1.0
sharded dist_arcface 1 1.0
sharded dist_arcface 2 1.0
sharded dist_arcface 2 0.1
LIST
