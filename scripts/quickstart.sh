#!/usr/bin/env bash
# The main job on the built-in default data set (Fashion-MNIST from the Debian package
# dataset-fashion-mnist): install and build the fastnn executable (only), then convert -> check ->
# train LeNet (on the GPU when the build has the CUDA backend and a GPU is present, else the CPU) ->
# evaluate, printing the test accuracy (>= 88%: the recipe in scripts/lenet_recipe.sh, the same as
# tests/integration/train_fashion_lenet.sh; on an H100 the GPU-trained checkpoint scored 89.06%). About
# 3 minutes on 2 idle cores, seconds of training on a GPU.
#   QUICKSTART_DEVICE  cpu, cuda or auto (default auto)
#   FASTNN_BUILD_DIR   build folder (default build); QUICKSTART_SKIP_SETUP=1 uses it as it is
#   QUICKSTART_DIR     where data and the run go (default build/quickstart)
#   QUICKSTART_STEPS   training steps (default: the recipe's 2342, 2.5 epochs of batch 64)
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the fastnn executable: a first run does not wait for every test, benchmark and fuzz target
# (scripts/test.sh builds everything).
[ "${QUICKSTART_SKIP_SETUP:-0}" = 1 ] || FASTNN_TARGETS=fastnn ./scripts/setup.sh
fastnn=${FASTNN_BUILD_DIR:-build}/bin/fastnn
dir=${QUICKSTART_DIR:-build/quickstart}
data=$dir/data
run=$dir/run
LENET_STEPS=${QUICKSTART_STEPS:-2342}
. scripts/lenet_recipe.sh
steps=$LENET_STEPS
start=$(date +%s)

echo "== convert Fashion-MNIST -> $data"
if [ ! -f "$data/manifest.json" ]; then
  "$fastnn" convert mnist --input /usr/share/datasets/fashion-mnist --output "$data" --num-gpus 1 -q
fi
echo "== check"
"$fastnn" check "$data" -q | tail -1

echo "== train lenet, $steps steps (${LENET_RECIPE[*]})"
rm -rf "$run"
"$fastnn" train --model_name=lenet --dataset_dir="$data" --output_dir="$run" "${LENET_RECIPE[@]}" \
  --log_loss_every_n_iters=100 --save_checkpoints_steps=500 --device="${QUICKSTART_DEVICE:-auto}" --precision=fp32

echo "== eval"
json=$("$fastnn" eval --model_name=lenet --dataset_dir="$data" --output_dir="$run" --batch_size=500 --json)
echo "$json"
top1=$(echo "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["top1"])')
echo "quickstart: Fashion-MNIST test accuracy $(python3 -c "print(f'{100*$top1:.2f}%')") after $steps steps," \
  "$(( $(date +%s) - start )) s (convert + check + train + eval)"
