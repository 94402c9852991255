#!/usr/bin/env bash
# fastnn convert base64-tsv through the CLI: lines of base64(image)<TAB>label → shards `check --decode`
# accepts; invalid base64 is an error naming file:line and column (skipped with --skip-bad); a label
# over --num-classes is an error; the input is left untouched.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

gen tsv a.tsv 30
gen tsv b.tsv 7
sum_before=$(md5sum a.tsv b.tsv)
"$FASTNN" convert base64-tsv -i a.tsv -i b.tsv -o out --num-gpus 2 --shards-per-gpu 1 --remainder pad -q > summary.txt
cat summary.txt
grep -q "^train  *2  *19  *38  *0  *1 " summary.txt || fail "37 samples over 2 shards, padded to 19 each"
"$FASTNN" check out --decode -q > /dev/null || fail "check"
[ "$(md5sum a.tsv b.tsv)" = "$sum_before" ] || fail "inputs changed"

# Line 5: one character outside the alphabet.
sed '5s/^\(.\{12\}\)./\1*/' a.tsv > bad.tsv
expect_fail "bad.tsv:5" "invalid base64 at column 13" -- "$FASTNN" convert base64-tsv -i bad.tsv -o bad.out --num-gpus 1
no_output bad.out
"$FASTNN" convert base64-tsv -i bad.tsv -o skip.out --num-gpus 1 --shards-per-gpu 1 --skip-bad -q > /dev/null
grep -q '"source": "bad.tsv:5"' skip.out/manifest.json || fail "skipped line not listed"
expect_fail "a.tsv:4" "label 3 is outside 0..2" -- "$FASTNN" convert base64-tsv -i a.tsv -o range.out --num-gpus 1 --num-classes 3
no_output range.out
echo PASS
