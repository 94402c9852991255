#!/usr/bin/env bash
# FastNN's train_files / eval_files / labels_offset end to end on the real Fashion-MNIST: shards copied
# into a folder without manifest.json, named by train_files (2 of the 4 train shards: the epoch is
# their 30,000 records) and eval_files (one test shard, by absolute path: evaluation counts exactly its
# 2,500 records); num_classes is then required. labels_offset=1 on these 0-based labels stops with
# the offending label named; a missing file is named before anything runs.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
raw=/usr/share/datasets/fashion-mnist
[ -f "$raw/train-images-idx3-ubyte.gz" ] || { echo "SKIP: dataset-fashion-mnist is not installed"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$FASTNN" convert mnist --input "$raw" --output fm --num-gpus 1 -q > /dev/null || fail "convert"
mkdir plain && cp fm/train-00000-of-00004.tfrecord fm/train-00001-of-00004.tfrecord fm/test-00002-of-00004.tfrecord plain/ ||
  fail "copy"
args=(--model_name=lenet --dataset_dir=plain --train_files=train-00000-of-00004.tfrecord,train-00001-of-00004.tfrecord
      --eval_files="$PWD/plain/test-00002-of-00004.tfrecord" --batch_size=32 --stop_at_step=40
      --log_loss_every_n_iters=20 --num_preprocessing_threads=2 --hooks=StopAtStepHook,LoggingTensorHook)

"$FASTNN" train "${args[@]}" --output_dir=noclasses > /dev/null 2> noclasses.err && fail "no num_classes accepted"
grep -q "num_classes is not set" noclasses.err || { cat noclasses.err; fail "num_classes message"; }

"$FASTNN" train "${args[@]}" --num_classes=10 --output_dir=run > run.log 2> run.err || { cat run.err; fail "train"; }
grep -q "937 batches of 32 per epoch" run.err run.log || { cat run.err; fail "epoch should be the two files' 30000 records"; }
grep -q "^eval at step 40 (eval_files, 2500 examples" run.log || { cat run.log; fail "eval should read the one named test shard"; }

"$FASTNN" train "${args[@]}" --num_classes=10 --labels_offset=1 --output_dir=offset > /dev/null 2> offset.err &&
  fail "labels_offset=1 on 0-based labels accepted"
grep -q "minus labels_offset 1" offset.err || { cat offset.err; fail "labels_offset message"; }

"$FASTNN" train "${args[@]}" --num_classes=10 --train_files=nope.tfrecord --output_dir=missing > /dev/null 2> missing.err &&
  fail "a missing train file accepted"
grep -q "train_files: .*nope.tfrecord is not a file" missing.err || { cat missing.err; fail "missing file message"; }
echo PASS
