#!/usr/bin/env bash
# No held-out split is said, not discovered: on real photographs (crops of
# /var/cache/fastnn/sample-images; exit 77 when absent) `convert image-folder` of a class tree without
# --validation-fraction ends with a warning that says how to hold some out (also in --json), and
# `fastnn train` on it says once at start that there is no held-out evaluation; with a hold-out
# (a quarter of each class), neither is said and the run evaluates.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

photos flowers daisy:8 roses:4
"$FASTNN" convert image-folder -i flowers -o data --num-gpus 1 --shards-per-gpu 1 -q > convert.txt || fail "convert"
grep -q "^warning: no held-out split: every sample is in train, so training will report no held-out accuracy; hold some out with --validation-fraction F, or put the class folders in split folders (train/, val/)$" convert.txt ||
  { cat convert.txt; fail "convert does not say there is no held-out split"; }
"$FASTNN" convert image-folder -i flowers -o data.json --num-gpus 1 --shards-per-gpu 1 --json -q > convert.json ||
  fail "convert --json"
python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["warnings"]; assert len(w)==1 and w[0].startswith("no held-out split"), w' \
  convert.json || fail "--json warnings"
train() { "$FASTNN" train --model_name=cifarnet --batch_size=4 --stop_at_step=2 --device=cpu --num_preprocessing_threads=1 "$@"; }
train --dataset_dir=data --output_dir=run > train.log 2>&1 || { tail train.log; fail "train"; }
[ "$(grep -c "no held-out evaluation: data has no validation or test split" train.log)" = 1 ] ||
  { cat train.log; fail "train does not say once that nothing is held out"; }

"$FASTNN" convert image-folder -i flowers -o held --num-gpus 1 --shards-per-gpu 1 --validation-fraction 0.25 -q \
  > held.txt || fail "convert with a hold-out"
! grep -q "no held-out" held.txt || fail "said with a hold-out"
# Held out per class: a quarter of each.
python3 -c 'import json,sys; h=json.load(open(sys.argv[1]))["splits"]["validation"]["label_histogram"]; assert h==[2,1], h' \
  held/manifest.json || fail "the hold-out is not stratified"
train --dataset_dir=held --output_dir=run2 > train2.log 2>&1 || { tail train2.log; fail "train with a hold-out"; }
! grep -q "no held-out" train2.log || fail "train said it with a hold-out"
grep -q '"event":"eval"' run2/metrics.jsonl || fail "no evaluation"
echo PASS
