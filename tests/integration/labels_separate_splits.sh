#!/usr/bin/env bash
# A validation split converted on its own numbers its classes on its own: with a class missing, its
# ids shift and a model trained on the train split scored top-1 0.0000 on it without a warning. On real
# photographs (crops of /var/cache/fastnn/sample-images; exit 77 when absent): the checkpoint records
# its class map; eval, predict, a train run reading that split as eval_files, and a resumed train on
# it are all refused naming the first difference; --labels-from the train output (or --labels-file
# its labels.txt) gives the split the train ids and everything runs; a labels.txt edited beside its manifest, or contradicting the
# checkpoint beside it, is refused too.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
source "$SRC/tests/integration/train_helpers.bash"
cd "$SCRATCH"

photos train daisy:8 roses:8 tulips:8
photos val daisy:3 tulips:3   # no roses: on its own, tulips become class 1
"$FASTNN" convert image-folder -i train -o data/train --num-gpus 1 --shards-per-gpu 1 -q > /dev/null || fail "convert train"
"$FASTNN" convert image-folder -i val -o data/val --split validation --num-gpus 1 --shards-per-gpu 1 -q > /dev/null ||
  fail "convert val"
[ "$(tr '\n' ' ' < data/val/labels.txt)" = "0:daisy 1:tulips " ] || fail "val on its own: $(cat data/val/labels.txt)"

train() { "$FASTNN" train --model_name=cifarnet --batch_size=4 --device=cpu --num_preprocessing_threads=1 "$@"; }
train --dataset_dir=data/train --output_dir=run --stop_at_step=2 > train.log 2>&1 || { tail train.log; fail "train"; }
grep -q '^class_names: "roses"$' run/ckpt-2.meta.pbtxt || { cat run/ckpt-2.meta.pbtxt; fail "checkpoint without class names"; }

diff_msg='class 1 is "roses" in run/ckpt-2.meta.pbtxt but "tulips" in data/val/manifest.json'
expect_fail "evaluated on data/val: the class maps differ" "$diff_msg" "--labels-from" -- \
  "$FASTNN" eval --dataset_dir=data/val --output_dir=run --device=cpu
expect_fail "predict --input data/val/validation-00000-of-00001.tfrecord: the class maps differ" "$diff_msg" -- \
  "$FASTNN" predict --checkpoint run --input data/val --device=cpu -q
refused eval_files "eval files in $PWD/data/val: the class maps differ" \
  "class 1 is \"roses\" in data/train/manifest.json but \"tulips\" in $PWD/data/val/manifest.json" -- \
  --model_name=cifarnet --dataset_dir=data/train --output_dir=run2 --batch_size=4 --device=cpu --stop_at_step=1 \
  --eval_files="$PWD/data/val/validation-00000-of-00001.tfrecord"
# The same split converted with the train output's class map keeps the train ids and evaluates.
"$FASTNN" convert image-folder -i val -o data/val2 --split validation --labels-from data/train --num-gpus 1 \
  --shards-per-gpu 1 -q > val2.txt || fail "convert --labels-from"
grep -q "class names: --labels-from data/train/manifest.json" val2.txt || { cat val2.txt; fail "names source"; }
grep -q 'warning: split validation has no record of 1 of the 3 classes: 1 "roses"' val2.txt || { cat val2.txt; fail "missing class"; }
[ "$(tr '\n' ' ' < data/val2/labels.txt)" = "0:daisy 1:roses 2:tulips " ] || fail "labels-from: $(cat data/val2/labels.txt)"
"$FASTNN" eval --dataset_dir=data/val2 --output_dir=run --device=cpu --json > eval.json 2> eval.err ||
  { cat eval.err; fail "eval on the same class map"; }
grep -q '"num_examples":6' eval.json || fail "eval: $(cat eval.json)"
"$FASTNN" predict --checkpoint run --input data/val2 --device=cpu -q > pred.jsonl || fail "predict on the same class map"
[ "$(wc -l < pred.jsonl)" = 6 ] || fail "predict lines"
# A class map file pins the ids the same way (--labels-file is --class-names).
"$FASTNN" convert image-folder -i val -o data/val4 --split validation --labels-file data/train/labels.txt \
  --num-gpus 1 --shards-per-gpu 1 -q > /dev/null || fail "convert --labels-file"
cmp data/val2/labels.txt data/val4/labels.txt || fail "--labels-file ids"
expect_fail "give --class-names or --labels-from, not both" -- \
  "$FASTNN" convert image-folder -i val -o data/val5 --labels-file data/train/labels.txt --labels-from data/train --num-gpus 1
# A folder the pinned map does not name is an error naming it.
photos val lilies:1
expect_fail 'val/lilies: class folder "lilies" is not in the class map of --labels-from data/train/manifest.json' -- \
  "$FASTNN" convert image-folder -i val -o data/val3 --labels-from data/train --num-gpus 1
no_output data/val3
rm -r val/lilies

# labels.txt replaced beside its manifest: the dataset contradicts itself.
printf '0:daisy\n1:tulips\n2:roses\n' > data/val2/labels.txt
expect_fail "data/val2: manifest.json and labels.txt disagree" -- \
  "$FASTNN" eval --dataset_dir=data/val2 --output_dir=run --device=cpu
# A labels.txt beside the checkpoint that renames its outputs: predict and serve load the model the same way.
printf 'daisy\ntulips\nroses\n' > run/labels.txt
expect_fail "the labels.txt beside the checkpoint: the class maps differ" -- \
  "$FASTNN" predict --checkpoint run --input val/daisy --device=cpu -q
expect_fail "the labels.txt beside the checkpoint: the class maps differ" -- \
  timeout 60 "$FASTNN" serve --checkpoint run --device=cpu --port 0
rm run/labels.txt

# The training data reconverted with other classes under the same folder: the run is not continued on it.
"$FASTNN" convert image-folder -i val -o data/train --overwrite --num-gpus 1 --shards-per-gpu 1 -q > /dev/null ||
  fail "reconvert"
refused resume "--resume: run/ckpt-2 and data/train: the class maps differ" \
  'class 1 is "roses" in run/ckpt-2.meta.pbtxt but "tulips" in data/train/manifest.json' -- \
  --model_name=cifarnet --dataset_dir=data/train --output_dir=run --batch_size=4 --device=cpu --stop_at_step=3 --resume
echo PASS
