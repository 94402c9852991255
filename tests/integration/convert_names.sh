#!/usr/bin/env bash
# Names are bytes (issue 18): class folders and files whose names are not UTF-8 or hold a newline
# convert, round-trip through manifest.json and labels.txt (escaped \xHH form) and pass check; a
# dangling symlink named like an image is a bad sample (fatal naming it, or skipped with --skip-bad);
# an output path under a regular file and an empty --class-names file are clear errors, never an
# "internal error".
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
MK="$SRC/tests/integration/make_png.py"

in="$SCRATCH/in"
for cls in $'cat\xff' $'dog\nx' 'back\slash' plain; do
  mkdir -p "$in/$cls"
  for i in 0 1 2; do "$PY" "$MK" "$in/$cls/img"$'\xfe'"$i.png"; done
done
"$FASTNN" convert image-folder -i "$in" -o "$SCRATCH/out" --num-gpus 1 -q 2>"$SCRATCH/err" || { cat "$SCRATCH/err"; fail "convert failed"; }
grep -q "internal error" "$SCRATCH/err" && fail "internal error"
[ "$(wc -l < "$SCRATCH/out/labels.txt")" = 4 ] || fail "labels.txt is not one line per class: $(cat -A "$SCRATCH/out/labels.txt")"
grep -qx '1:cat\\xFF' "$SCRATCH/out/labels.txt" || fail "escaped non-UTF-8 class name missing"
grep -qx '2:dog\\x0Ax' "$SCRATCH/out/labels.txt" || fail "escaped newline class name missing"
"$FASTNN" check "$SCRATCH/out" > /dev/null || fail "check of the converted names failed"
# The manifest is valid JSON and its escaped names decode to the folder names' bytes.
"$PY" - "$SCRATCH/out/manifest.json" "$in" <<'PYEOF' || fail "names did not round-trip"
import json, os, re, sys
m = json.load(open(sys.argv[1]))
unesc = lambda s: re.sub(rb"\\x([0-9A-Fa-f]{2})", lambda g: bytes([int(g.group(1), 16)]), s.encode())
names = [unesc(c) for c in m["classes"]]
assert names == sorted(os.listdir(os.fsencode(sys.argv[2]))), names
PYEOF

# A dangling symlink named like an image: fatal naming it, or a listed skip with --skip-bad.
ln -s "$SCRATCH/nonexistent" "$in/plain/zz.png"
expect_fail "$in/plain/zz.png" "dangling" -- "$FASTNN" convert image-folder -i "$in" -o "$SCRATCH/o2" --num-gpus 1 -q
"$FASTNN" convert image-folder -i "$in" -o "$SCRATCH/o3" --num-gpus 1 -q --skip-bad > /dev/null
grep -q '"source": ".*zz.png"' "$SCRATCH/o3/manifest.json" || fail "the dangling symlink is not listed as skipped"
# A FIFO named like an image is a bad sample too (never opened).
rm "$in/plain/zz.png" && mkfifo "$in/plain/zz.png"
expect_fail "$in/plain/zz.png" "FIFO" -- timeout 20 "$FASTNN" convert image-folder -i "$in" -o "$SCRATCH/o4" --num-gpus 1 -q

# Output under a regular file; an empty --class-names file.
touch "$SCRATCH/afile"
expect_fail "$SCRATCH/afile/sub" "not a directory" -- "$FASTNN" convert synthetic -o "$SCRATCH/afile/sub" --num-gpus 1 -q
grep -q "internal error" "$SCRATCH/stderr.txt" && fail "internal error for an output under a file"
: > "$SCRATCH/empty.txt"
expect_fail "$SCRATCH/empty.txt" "no class names" -- "$FASTNN" convert synthetic -o "$SCRATCH/o5" --num-gpus 1 -q \
  --class-names "$SCRATCH/empty.txt"
echo PASS
