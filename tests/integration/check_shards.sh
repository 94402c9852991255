#!/usr/bin/env bash
# fastnn check through the CLI: passes a fresh set; exits 1 naming the shard and the record for a
# flipped byte; rejects a GPU count that does not divide the shards; --split; a folder without a
# manifest.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

grep -q -- "--decode" <<< "$("$FASTNN" check --help)" || fail "check --help"
"$FASTNN" convert synthetic --num-records 300 --num-test-records 40 --height 8 --width 8 --num-classes 5 \
  --image-format png --num-gpus 2 --shards-per-gpu 2 -o set -q > /dev/null
"$FASTNN" check set -q > ok.txt || { cat ok.txt; fail "fresh set rejected"; }
grep -q "records per GPU (GPU g reads shards g, g+N, ...): 150 150" ok.txt || { cat ok.txt; fail "per-GPU counts"; }
"$FASTNN" check set --split test --num-gpus 4 -q > /dev/null || fail "--split test --num-gpus 4"
expect_fail "3 does not divide 4" -- "$FASTNN" check set --num-gpus 3 -q
expect_fail "no split \"nope\"" -- "$FASTNN" check set --split nope

cp -r set damaged
f=damaged/train-00001-of-00004.tfrecord
printf '\xff' | dd of=$f bs=1 seek=$(( $(stat -c %s $f) / 2 )) conv=notrunc status=none
rc=0
"$FASTNN" check damaged -q > report.txt 2> err.txt || rc=$?
[ "$rc" = 1 ] || fail "damaged set: exit $rc"
grep -q "train-00001-of-00004.tfrecord .* error" report.txt || { cat report.txt; fail "report should flag the shard"; }
grep -q "CRC" report.txt || { cat report.txt; fail "report should name the CRC"; }
grep -q "check failed" err.txt || fail "stderr summary"

mkdir empty
expect_fail "empty/manifest.json" -- "$FASTNN" check empty
echo PASS
