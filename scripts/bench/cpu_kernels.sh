#!/usr/bin/env bash
# CPU training steps on the fast kernels (data_format=auto: NHWC with oneDNN's convolutions where they
# cover the net) against the reference kernels (FASTNN_CPU_KERNELS=reference: NCHW), interleaved
# (reference, fast, reference, fast, ...) ROUNDS times per model on synthetic data (`fastnn bench train`).
# Prints one Markdown row per model: images/s of each run, the median ratio.
#   scripts/bench/cpu_kernels.sh [build/bin/fastnn] [rounds]
set -euo pipefail
FASTNN=${1:-build/bin/fastnn} ROUNDS=${2:-3}
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
echo "| model | input, batch | layout | reference img/s | fast img/s | fast / reference (median) |"
echo "|---|---|---|---|---|---|"
while read -r model size batch steps; do
  ref=() fast=() layout=
  for _ in $(seq "$ROUNDS"); do
    args=(bench train --model_name="$model" --image-size="$size" --batch_size="$batch" --optimizer=momentum
          --steps="$steps" --warmup=2 --json)
    ref+=("$(FASTNN_CPU_KERNELS=reference "$FASTNN" "${args[@]}" 2>/dev/null | "$PY" -c 'import json,sys; print("%.1f" % json.load(sys.stdin)["images_per_sec"])')")
    out=$("$FASTNN" "${args[@]}" 2>/dev/null)
    fast+=("$("$PY" -c 'import json,sys; print("%.1f" % json.loads(sys.argv[1])["images_per_sec"])' "$out")")
    layout=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["data_format"])' "$out")
  done
  ratio=$("$PY" -c 'import statistics,sys; r=[float(f)/float(b) for b,f in zip(sys.argv[1].split(),sys.argv[2].split())]; print("%.2f" % statistics.median(r))' "${ref[*]}" "${fast[*]}")
  echo "| $model | ${size}², $batch | $layout | ${ref[*]} | ${fast[*]} | $ratio |"
done <<'LIST'
lenet 28 64 20
resnet_cifar_20 32 64 10
mobilenet_v2 96 16 5
inception_v1 96 16 5
vgg_a 64 16 5
resnet_v1_50 224 8 3
LIST
