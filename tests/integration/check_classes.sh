#!/usr/bin/env bash
# `fastnn check` reports classes, not just shards, on real photographs (crops of
# /var/cache/fastnn/sample-images; exit 77 when absent): a 94:2 class split and a validation split
# without a class used to pass as OK because the balance test compares shards with their split. Now
# both are warnings with the numbers and names (and `convert` says them too), --max-class-ratio sets
# the threshold, the --report page has a bar per class and marks what is missing, and the files a
# conversion ignored (.bmp, .webp, hidden) are named, the first few by default and all with --verbose.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

# 94 daisies, 2 roses; a validation split (stratified by class) of 10% has no rose.
photos flowers daisy:94 roses:2 daisy/scan.bmp=bmp roses/web.webp=webp
for i in 1 2 3 4 5 6; do echo "note $i" > "flowers/daisy/notes$i.txt"; done
touch flowers/.DS_Store
"$FASTNN" convert image-folder -i flowers -o data --num-gpus 1 --shards-per-gpu 2 --validation-fraction 0.1 -q \
  > convert.txt || fail "convert"
cat convert.txt
grep -q '^validation  *2  *5  *10 ' convert.txt || fail "10 held out"
grep -q 'warning: split train: class 0 "daisy" has 84 records, class 1 "roses" 2: 42.0 times as many' convert.txt ||
  fail "convert's imbalance warning"
grep -q 'warning: split validation has no record of 1 of the 2 classes: 1 "roses"' convert.txt || fail "convert: missing"
# Ignored files: counted and named (the first five), with why.
n_ignored=8  # six notes, scan.bmp, .DS_Store
[ -f flowers/roses/web.webp ] && n_ignored=9
grep -q "^ignored $n_ignored input file(s), the first 5 (--verbose names all)" convert.txt || fail "ignored count ($n_ignored)"
grep -q "^  flowers/.DS_Store: hidden" convert.txt || fail "hidden file not named"
grep -q "^  flowers/daisy/notes1.txt: not a JPEG or PNG image" convert.txt || fail "text file not named"
"$FASTNN" convert image-folder -i flowers -o data.v --num-gpus 1 --validation-fraction 0.1 --verbose -q > verbose.txt ||
  fail "convert --verbose"
grep -q "^  flowers/daisy/scan.bmp: a BMP image: only JPEG and PNG are converted" verbose.txt || fail "bmp not named"
if [ -f flowers/roses/web.webp ]; then
  grep -q "^  flowers/roses/web.webp: a WebP image: only JPEG and PNG are converted" verbose.txt || fail "webp not named"
fi
[ "$(grep -c '^  flowers/' verbose.txt)" = "$n_ignored" ] || fail "--verbose names all $n_ignored"
python3 - data/manifest.json "$n_ignored" <<'PY' || fail "manifest ignored list"
import json, sys
s = json.load(open(sys.argv[1]))["splits"]["train"]
assert s["ignored_files"] == int(sys.argv[2]) == len(s["ignored"]), s["ignored"]
assert {"source": "flowers/daisy/scan.bmp", "reason": "a BMP image: only JPEG and PNG are converted"} in s["ignored"]
PY

# check: the shards are sound, but the classes are said.
"$FASTNN" check data -q > check.txt || { cat check.txt; fail "check failed"; }
cat check.txt
grep -q "OK, with 2 warning(s) above" check.txt || fail "check's verdict"
grep -q 'warning: split train: class 0 "daisy" has 84 records, class 1 "roses" 2: 42.0 times as many' check.txt ||
  fail "check's imbalance warning"
grep -q 'warning: split validation has no record of 1 of the 2 classes: 1 "roses"' check.txt || fail "check: missing"
grep -Eq '^ +1  roses +2 +missing$' check.txt || fail "class table"
grep -q "train: 2 of 2 classes present, largest 84 (class 0), smallest 2 (class 1), ratio 42.0" check.txt || fail "ratio"
"$FASTNN" check data --max-class-ratio 50 -q > check50.txt || fail "check --max-class-ratio"
! grep -q "times as many" check50.txt || fail "--max-class-ratio 50 still warns"
"$FASTNN" check data --json -q > check.json || fail "check --json"
python3 - check.json <<'PY' || fail "check --json classes"
import json, sys
r = json.load(open(sys.argv[1]))
c = {s["name"]: s["classes"] for s in r["splits"]}
assert c["train"]["counts"] == [84, 2] and c["train"]["ratio"] == 42.0, c
assert c["validation"]["missing"] == [1], c
assert len(r["warnings"]) == 2, r["warnings"]
PY
# The page: a bar per class and split, the missing class marked.
"$FASTNN" check data --report page.html -q > /dev/null || fail "check --report"
python3 - page.html <<'PY' || fail "report page"
import re, sys
html = open(sys.argv[1]).read()
sec = html[html.index('<section id="classes"'):]
sec = sec[:sec.index("</section>")]
assert sec.count("<svg") == 2, "one chart per split"
bars = re.findall(r'<rect class="bar"[^>]*data-value="([0-9.]+)"', sec)
assert bars[:2] == ["84", "2"], bars
assert 'data-split="validation" data-ratio="1" data-missing="1"' in sec, sec[-800:]
assert '<td class="bad">missing</td>' in sec
PY
echo PASS
