#!/usr/bin/env bash
# fastnn convert cifar10 through the CLI: binary batches → RGB PNG shards `check --decode` accepts,
# class names from batches.meta.txt (or numbers without it, said either way); a file whose size is not a multiple of 3073 and a label out of
# range fail naming file and offset, leaving nothing.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

gen cifar10 in 12
"$FASTNN" convert cifar10 -i in -o out --num-gpus 2 --shards-per-gpu 1 --stratify -q > summary.txt
"$FASTNN" check out --decode -q > check.txt || { cat check.txt; fail "check"; }
grep -qx "9:truck" out/labels.txt || fail "class names from batches.meta.txt"
grep -q "^class names: the dataset's in/batches.meta.txt$" summary.txt || { cat summary.txt; fail "names source"; }
# Without its names file the classes are numbered, and the summary says so.
cp -r in bare; rm bare/batches.meta.txt
"$FASTNN" convert cifar10 -i bare -o bare.out --num-gpus 1 --shards-per-gpu 1 -q > bare.txt
grep -qx "9:9" bare.out/labels.txt || fail "numbered classes"
grep -q "^class names: label numbers: there is no bare/batches.meta.txt" bare.txt || { cat bare.txt; fail "numbers not said"; }
grep -q '"num_records": 60' out/manifest.json || fail "60 train records expected"

cp -r in size; printf 'x' >> size/data_batch_2.bin
expect_fail "size/data_batch_2.bin" "not a multiple of the 3073-byte" "offset 36876" -- "$FASTNN" convert cifar10 -i size -o size.out --num-gpus 1
no_output size.out
cp -r in label; printf '\x0a' | dd of=label/test_batch.bin bs=1 seek=$((3073 * 5)) conv=notrunc status=none
expect_fail "label/test_batch.bin" "record 5 at offset 15365" "label 10 is outside 0..9" -- "$FASTNN" convert cifar10 -i label -o label.out --num-gpus 1
no_output label.out
echo PASS
