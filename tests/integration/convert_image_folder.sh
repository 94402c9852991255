#!/usr/bin/env bash
# fastnn convert image-folder through the CLI: JPEG/PNG class folders → pass-through shards that
# `check --decode` accepts; a JPEG cut in half is an error naming it, or skipped and counted with
# --skip-bad; an empty class folder is an error; --validation-fraction adds a validation split;
# --resize-shorter-side re-encodes.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

gen folder flowers 9
"$FASTNN" convert image-folder -i flowers -o out --num-gpus 1 --shards-per-gpu 2 --validation-fraction 0.2 -q > summary.txt
cat summary.txt
grep -q "^validation " summary.txt || fail "no validation split"
"$FASTNN" check out --decode -q > /dev/null || fail "check"
[ "$(cat out/labels.txt | tr '\n' ' ')" = "0:daisy 1:roses 2:tulips " ] || fail "labels.txt"
grep -q '"ignored_files": 1' out/manifest.json || fail "LICENSE.txt should be ignored and counted"

# A JPEG cut in half.
gen jpeg whole.jpg 320 240
head -c $(( $(stat -c %s whole.jpg) / 2 )) whole.jpg > flowers/roses/cut.jpg
expect_fail "flowers/roses/cut.jpg" "truncated" -- "$FASTNN" convert image-folder -i flowers -o cut.out --num-gpus 1
no_output cut.out
"$FASTNN" convert image-folder -i flowers -o skip.out --num-gpus 1 --shards-per-gpu 1 --skip-bad -q > skip.txt
grep -q "skipped .*flowers/roses/cut.jpg" skip.txt || { cat skip.txt; fail "skip summary"; }
grep -q "^train  *1  *27  *27  *0  *0  *1 " skip.txt || { cat skip.txt; fail "27 records, 1 skipped expected"; }
rm flowers/roses/cut.jpg

# An empty class folder.
mkdir flowers/sunflowers
expect_fail "flowers/sunflowers" "empty class folder" -- "$FASTNN" convert image-folder -i flowers -o empty.out --num-gpus 1
no_output empty.out
rmdir flowers/sunflowers

# Re-encoding large images.
"$FASTNN" convert image-folder -i flowers -o small --num-gpus 1 --shards-per-gpu 1 --resize-shorter-side 20 --jpeg-quality 80 -q > /dev/null
"$FASTNN" check small --decode -q > /dev/null || fail "check after resize"
grep -q '"format": "jpeg"' small/manifest.json || fail "resized records should all be JPEG"
echo PASS
