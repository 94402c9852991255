#!/usr/bin/env bash
# timm's preprocessing values travel with the run: a model trained on real photographs with the
# torchvision preset and its own mean, std and crop_pct (not the defaults) says them at the start of
# training; `fastnn eval` and `fastnn predict` on the checkpoint say and use them; `fastnn export` writes
# them into the ONNX model's metadata (mean 0.5 -> 127.5, 1 / (0.25 * 255) the scale; the shorter side
# to floor(64 / 0.95) = 67). A mean in pixel units is refused before anything runs, naming the field.
FASTNN=$1 SRC=$2 SCRATCH=$3
PHOTOS=${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
[ -f "$PHOTOS/china.jpg" ] || { echo "skip: no photographs in $PHOTOS"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

$PY "$SRC/tests/integration/photo_tree.py" "$PHOTOS" photos train/china:8 train/flower:8 val/china:2 val/flower:2 ||
  fail "photo tree"
"$FASTNN" convert image-folder --input photos --output data -q > /dev/null || fail "convert"
common=(--model=mobilenet_v1_025 --train_image_size=64 --dataset_dir=data --batch_size=8 --device=cpu)

"$FASTNN" train "${common[@]}" --output_dir=bad --mean=123.68,116.78,103.94 --stop_at_step=1 > bad.log 2>&1 &&
  fail "a mean in pixel units was accepted"
grep -q "input_mean: 123.68 is above 1.*fractions of 255" bad.log || { cat bad.log; fail "no reason for the refused mean"; }
[ ! -e bad/checkpoint ] || fail "the refused run left a checkpoint"

"$FASTNN" train "${common[@]}" --output_dir=run --preprocessing_name=torchvision --random_crop_scale=0.35,1 \
  --ratio=0.5,2 --mean=0.5 --std=0.25 --crop_pct=0.95 --stop_at_step=2 > train.log 2>&1 || { tail train.log; fail "train"; }
grep -q "preprocessing torchvision: RandomResizedCrop (35-100% of the area) to 64x64, random mirror (eval: shorter side 67, centre crop 64x64); the job's mean 0.5, std 0.25, crop_pct 0.95" train.log ||
  { grep preprocessing train.log; fail "train's start line does not state the job's values"; }

"$FASTNN" eval --output_dir=run --device=cpu > eval.log 2>&1 || { tail eval.log; fail "eval"; }
grep -q "evaluation images: torchvision preprocessing, mean 0.5, std 0.25, crop_pct 0.95" eval.log ||
  { cat eval.log; fail "eval does not use the run's values"; }

"$FASTNN" predict --checkpoint run --input photos/val -o predictions.csv --device=cpu 2> predict.err ||
  { cat predict.err; fail "predict"; }
grep -q "torchvision preprocessing (mean 0.5, std 0.25, crop_pct 0.95)" predict.err ||
  { cat predict.err; fail "predict does not use the run's values"; }

"$FASTNN" export --checkpoint run -o model.onnx > export.log 2>&1 || { cat export.log; fail "export"; }
grep -a -q "fastnn.input_mean.*127.5,127.5,127.5" model.onnx || fail "model.onnx: the mean is not the run's 127.5"
grep -a -q "shorter side to 67" model.onnx || fail "model.onnx: the resize is not floor(64 / 0.95) = 67"
echo PASS
