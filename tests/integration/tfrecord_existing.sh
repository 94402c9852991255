#!/usr/bin/env bash
# Existing TFRecords (issue 17): a TF-slim-style flowers layout built from the real Fashion-MNIST
# (five classes, flowers_{train,validation}_NNNNN-of-00005.tfrecord, TF-slim's keys with image/format
# "jpg" and "png", a labels.txt, no manifest.json) is used as it is:
#   - train and eval with --file_pattern and no other help (class count from labels.txt, record counts
#     counted once, validation split found by the pattern); globs in train_files / eval_files;
#   - `check` without a manifest passes it, says what it cannot check, and fails a copy with one
#     flipped byte naming the file and the record's byte offset;
#   - `convert tfrecord` re-shards it into balanced shards + manifest that `check` accepts and an
#     independent reader (tfslim_layout.py verify: its own framing, CRC-32C, Example parser, PIL)
#     reads back with every record and label; the corrupt set is refused naming file and offset, or
#     converted with --skip-bad listing what it left out.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"
raw=/usr/share/datasets/fashion-mnist
[ -f "$raw/train-images-idx3-ubyte.gz" ] || { echo "SKIP: dataset-fashion-mnist is not installed"; exit 77; }
LAYOUT="$SRC/tests/integration/tfslim_layout.py"
rc=0
"$PY" "$LAYOUT" make "$raw" flowers 100 20 || rc=$?
[ "$rc" = 77 ] && { echo "SKIP: python3 PIL is missing"; exit 77; }
[ "$rc" = 0 ] || fail "making the TF-slim layout"
[ ! -e flowers/manifest.json ] || fail "the layout must have no manifest"

# --- train and eval with --file_pattern only --------------------------------------------------------
common=(--model_name=lenet --batch_size=20 --num_preprocessing_threads=2 --log_loss_every_n_iters=10)
"$FASTNN" train "${common[@]}" --dataset_dir=flowers --file_pattern='flowers_%s_*.tfrecord' --stop_at_step=30 \
  --output_dir=run > train.log 2> train.err || { cat train.err; fail "train with --file_pattern"; }
grep -q "(5 classes" train.err || { cat train.err; fail "the class count should come from labels.txt"; }
grep -q "25 batches of 20 per epoch" train.err || { cat train.err; fail "the epoch should be the 500 train records"; }
grep -q "^eval at step 30 (validation, 100 examples" train.log || { cat train.log; fail "eval on the validation pattern"; }
top1=$(sed -n 's/^final eval: top1 \([0-9.]*\).*/\1/p' train.log)
awk -v t="$top1" 'BEGIN { exit !(t > 0.3) }' || { cat train.log; fail "30 steps should beat chance (0.2) on 5 classes, top1 $top1"; }
"$FASTNN" eval --dataset_dir=flowers --file_pattern='flowers_%s_*.tfrecord' --output_dir=run > eval.log 2> eval.err ||
  { cat eval.err; fail "eval with --file_pattern"; }
grep -q "(step 30): top1 .* on 100 examples" eval.log || { cat eval.log eval.err; fail "eval should read the 100 validation records"; }

# Globs in train_files / eval_files (sorted matches), the same 500 / 100 records.
"$FASTNN" train "${common[@]}" --dataset_dir=flowers --train_files='flowers_train_*.tfrecord' \
  --eval_files="$PWD/flowers/flowers_validation_0000[0-4]-of-00005.tfrecord" --stop_at_step=2 --output_dir=globs \
  > globs.log 2> globs.err || { cat globs.err; fail "train with globs"; }
grep -q "25 batches of 20 per epoch" globs.err || { cat globs.err; fail "train_files glob"; }
grep -q "(eval_files, 100 examples" globs.log || { cat globs.log; fail "eval_files glob"; }
expect_fail "exactly one %s" -- "$FASTNN" train "${common[@]}" --dataset_dir=flowers --file_pattern='flowers_*.tfrecord' \
  --output_dir=nopct
expect_fail "file_pattern: flowers_train_*.tfrec matches no file in flowers" -- \
  "$FASTNN" train "${common[@]}" --dataset_dir=flowers --file_pattern='flowers_%s_*.tfrec' --output_dir=nomatch

# --- check without a manifest -----------------------------------------------------------------------
"$FASTNN" check flowers --decode -q > check.txt || { cat check.txt; fail "check of the good layout"; }
grep -q "^no manifest.json: TFRecord shards checked on their own, 5 classes (flowers/labels.txt), every image decoded" \
  check.txt || { cat check.txt; fail "check header"; }
grep -q "^not checked without a manifest: per-shard record counts" check.txt || { cat check.txt; fail "not-checked list"; }
grep -q "600 records, .*: OK" check.txt || { cat check.txt; fail "check summary"; }

cp -r flowers corrupt
f=corrupt/flowers_train_00002-of-00005.tfrecord
# One bit of the middle byte flipped; the offset of the frame holding it, found by walking the frames.
offset=$("$PY" -c "
import struct
b = bytearray(open('$f', 'rb').read()); pos = len(b) // 2; b[pos] ^= 1
open('$f', 'wb').write(b); p = 0
while p + 16 + struct.unpack_from('<Q', b, p)[0] <= pos: p += 16 + struct.unpack_from('<Q', b, p)[0]
print(p)")
rc=0
"$FASTNN" check corrupt -q > corrupt.txt 2> corrupt.err || rc=$?
[ "$rc" = 1 ] || { cat corrupt.txt; fail "corrupt shard: exit $rc"; }
grep -q "flowers_train_00002-of-00005.tfrecord .* error" corrupt.txt || { cat corrupt.txt; fail "the shard is not flagged"; }
grep -q "corrupt/flowers_train_00002-of-00005.tfrecord: record [0-9]* at offset $offset: data CRC mismatch" corrupt.txt ||
  { cat corrupt.txt; fail "the error should name the file and offset $offset"; }
"$FASTNN" check 'corrupt/flowers_validation_*' -q > patterns.txt || { cat patterns.txt; fail "check by pattern"; }
grep -q "100 records, .*: OK" patterns.txt || { cat patterns.txt; fail "check by pattern: the 100 validation records"; }

# --- convert tfrecord ---------------------------------------------------------------------------------
"$FASTNN" convert tfrecord --input 'flowers/flowers_train_*.tfrecord,flowers/flowers_validation_*.tfrecord' \
  --output out --num-gpus 2 --shards-per-gpu 2 --seed 7 -q > convert.txt || fail "convert tfrecord"
[ -f out/manifest.json ] && [ "$(cat out/labels.txt)" = "$(cat flowers/labels.txt)" ] || fail "manifest and labels.txt"
"$FASTNN" check out --decode -q > out_check.txt || { cat out_check.txt; fail "check of the converted set"; }
grep -q "records per GPU (GPU g reads shards g, g+N, ...): 250 250" out_check.txt || { cat out_check.txt; fail "per-GPU"; }
"$PY" "$LAYOUT" verify out > verify.json || fail "independent reader rejected the converted shards"
want='{"train": {"records": 500, "histogram": [100, 100, 100, 100, 100], "formats": ["jpeg", "png"]}, "validation": {"records": 100, "histogram": [20, 20, 20, 20, 20], "formats": ["jpeg", "png"]}}'
[ "$(cat verify.json)" = "$want" ] || fail "independent reader: $(cat verify.json), want $want"
# Same inputs and seed give byte-identical shards, whatever the thread count.
"$FASTNN" convert tfrecord --input 'flowers/*.tfrecord' --output again --num-gpus 2 --shards-per-gpu 2 --seed 7 --threads 1 \
  -q > /dev/null || fail "convert again"
for s in train-00000-of-00004 validation-00003-of-00004; do
  cmp -s out/$s.tfrecord again/$s.tfrecord || fail "$s differs between runs with the same seed and inputs"
done

expect_fail "corrupt/flowers_train_00002-of-00005.tfrecord: record" "at offset $offset" -- \
  "$FASTNN" convert tfrecord --input 'corrupt/*.tfrecord' --output bad --num-gpus 1 -q
no_output bad
"$FASTNN" convert tfrecord --input 'corrupt/*.tfrecord' --output skipped --num-gpus 1 --skip-bad > skipped.txt 2>&1 ||
  { cat skipped.txt; fail "--skip-bad"; }
grep -q "skipped corrupt/flowers_train_00002-of-00005.tfrecord#$offset: rest of the file unreadable" skipped.txt ||
  { cat skipped.txt; fail "--skip-bad should list the record it left out"; }
"$FASTNN" check skipped -q > /dev/null || fail "check of the --skip-bad conversion"
echo PASS
