#!/usr/bin/env bash
# fastnn convert mnist through the CLI: IDX (gzip and plain) → shards that `fastnn check` accepts;
# same seed → identical bytes for 1 and 3 threads; another seed → another order; every bad input a
# clear error naming file and offset, exit 1, nothing final-named left; --skip-bad; --overwrite.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

grep -q -- "--shards-per-gpu" <<< "$("$FASTNN" convert mnist --help)" || fail "convert mnist --help"
gen mnist in 203 50 --gz
"$FASTNN" convert mnist -i in -o out --num-gpus 2 --shards-per-gpu 2 --seed 7 --threads 1 -q > summary.txt
cat summary.txt
grep -q "^train *4 *50 *200 *3 " summary.txt || fail "summary: train should be 4 shards of 50, 3 dropped"
[ "$(ls out | grep -c '^train-0000[0-3]-of-00004.tfrecord$')" = 4 ] || fail "train shard names"
[ "$(ls out | grep -c '^test-0000[0-3]-of-00004.tfrecord$')" = 4 ] || fail "test shard names"
head -2 out/labels.txt | tr '\n' ' ' | grep -qx "0:0 1:1 " || fail "labels.txt"
"$FASTNN" check out --decode -q > check.txt || { cat check.txt; fail "check rejected a fresh conversion"; }
grep -q "OK" check.txt || fail "check report"

# Determinism and seeds.
"$FASTNN" convert mnist -i in -o out3 --num-gpus 2 --shards-per-gpu 2 --seed 7 --threads 3 -q > /dev/null
same_files out out3
"$FASTNN" convert mnist -i in -o seed8 --num-gpus 2 --shards-per-gpu 2 --seed 8 -q > /dev/null
cmp -s out/train-00000-of-00004.tfrecord seed8/train-00000-of-00004.tfrecord && fail "seed 8 gave the same order as seed 7"

# A finished output is not overwritten by accident.
expect_fail "already holds a finished output" -- "$FASTNN" convert mnist -i in -o out --num-gpus 1 -q
"$FASTNN" convert mnist -i in -o out --num-gpus 1 --shards-per-gpu 3 --overwrite -q > /dev/null
[ "$(ls out | grep -c tfrecord)" = 6 ] || fail "--overwrite should leave exactly the new 6 shards"
"$FASTNN" check out -q > /dev/null

# Bad inputs. Plain IDX copies to damage.
gen mnist plain 20 5
bad() { rm -rf "$1"; cp -r plain "$1"; }
bad trunc; head -c 700 plain/train-images-idx3-ubyte > trunc/train-images-idx3-ubyte
expect_fail "trunc/train-images-idx3-ubyte" "truncated" "offset 700" -- "$FASTNN" convert mnist -i trunc -o trunc.out --num-gpus 1
no_output trunc.out
bad magic; printf '\x00\x00\x08\x01' | dd of=magic/train-images-idx3-ubyte conv=notrunc status=none
expect_fail "magic/train-images-idx3-ubyte" "offset 0" "magic bytes 00 00 08 01" -- "$FASTNN" convert mnist -i magic -o magic.out --num-gpus 1
no_output magic.out
bad count; "$PY" -c "import struct,sys; open('count/t10k-labels-idx1-ubyte','wb').write(struct.pack('>BBBBI',0,0,8,1,4)+bytes(4))"
expect_fail "count mismatch" "t10k-images-idx3-ubyte holds 5 images" "holds 4 labels" -- "$FASTNN" convert mnist -i count -o count.out --num-gpus 1
no_output count.out
bad label; printf '\x0c' | dd of=label/train-labels-idx1-ubyte bs=1 seek=$((8 + 13)) conv=notrunc status=none
expect_fail "label/train-labels-idx1-ubyte" "offset 21" "label 12 is outside 0..9" -- "$FASTNN" convert mnist -i label -o label.out --num-gpus 1
no_output label.out
"$FASTNN" convert mnist -i label -o label.skip --num-gpus 1 --shards-per-gpu 1 --skip-bad -q > skip.txt
grep -q "skipped train-labels-idx1-ubyte#13: label 12" skip.txt || { cat skip.txt; fail "skip-bad summary"; }
grep -q '"source": "train-labels-idx1-ubyte#13"' label.skip/manifest.json || fail "skipped sample not in the manifest"

# Output path under a regular file.
echo x > afile
expect_fail "afile" "not a directory" -- "$FASTNN" convert mnist -i plain -o afile/out --num-gpus 1
# Usage errors.
# --num-gpus defaults to 1, and says so.
"$FASTNN" convert mnist -i plain -o one.out --shards-per-gpu 1 > one.txt 2>&1 || { cat one.txt; fail "convert without --num-gpus"; }
grep -q "balancing the shards for 1 GPU (the default" one.txt || { cat one.txt; fail "the default --num-gpus is not said"; }
grep -q '"num_gpus": 1' one.out/manifest.json || fail "default --num-gpus is not 1 in the manifest"
expect_fail "fewer than its 64 shards" -- "$FASTNN" convert mnist -i plain -o few.out --num-gpus 16 --shards-per-gpu 4
no_output few.out
echo PASS
