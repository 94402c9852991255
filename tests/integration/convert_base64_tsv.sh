#!/usr/bin/env bash
# fastnn convert base64-tsv through the CLI: lines of base64(image)<TAB>label → shards `check --decode`
# accepts; invalid base64 is an error naming file:line and column (skipped with --skip-bad); a label
# over --num-classes is an error; blank lines are passed over and counted; a byte-order mark is named;
# the input is left untouched.
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
# Blank lines are passed over and said so (not as "ignored input files"); a byte-order mark is named.
{ head -3 a.tsv; echo; echo; tail -n +4 a.tsv; } > blank.tsv
"$FASTNN" convert base64-tsv -i blank.tsv -o blank.out --num-gpus 1 --shards-per-gpu 1 -q > blank.txt
grep -q "^passed over 2 blank line(s)$" blank.txt || { cat blank.txt; fail "blank lines not reported"; }
! grep -q "input file" blank.txt || fail "blank lines reported as input files"
{ printf '\xEF\xBB\xBF'; cat a.tsv; } > bom.tsv
expect_fail "bom.tsv:1" "byte-order mark" -- "$FASTNN" convert base64-tsv -i bom.tsv -o bom.out --num-gpus 1
no_output bom.out
expect_fail "a.tsv:4" "label 3 is outside 0..2" -- "$FASTNN" convert base64-tsv -i a.tsv -o range.out --num-gpus 1 --num-classes 3
no_output range.out
echo PASS
