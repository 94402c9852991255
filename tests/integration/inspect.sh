#!/usr/bin/env bash
# fastnn inspect end to end: shards written by `convert synthetic` (plain and GZIP) are printed with
# every key, type and value, images summarised; --json gives one parseable object per record; a
# truncated file is an error naming the file, record and offset.
FASTNN=$1 SRC=$2 SCRATCH=$3
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
source "$SRC/tests/integration/convert_helpers.bash"

"$FASTNN" convert synthetic --output "$SCRATCH/png" --num-gpus 1 --shards-per-gpu 1 --num-records 5 \
  --height 28 --width 20 --channels 1 --num-classes 3 --image-format png -q
"$FASTNN" convert synthetic --output "$SCRATCH/gz" --num-gpus 1 --shards-per-gpu 1 --num-records 4 \
  --height 16 --width 16 --channels 3 --num-classes 2 --image-format jpeg --compression gzip -q
shard="$SCRATCH/png/train-00000-of-00001.tfrecord"
[ -f "$shard" ] || fail "no shard at $shard"

out=$("$FASTNN" inspect "$shard" --limit 0)
head -12 <<< "$out"  # not echo | head: under pipefail, echo can die of SIGPIPE when head stops (it did in CI)
for key in image/encoded image/format image/class/label image/height image/width image/channels; do
  grep -q -- "$key" <<< "$out" || fail "inspect output lacks $key"
done
grep -q 'png 20x28x1' <<< "$out" || fail "image not summarised as png 20x28x1"
grep -q '^5 records' <<< "$out" || fail "record count line missing"
[ "$("$FASTNN" inspect "$shard" --limit 2 | grep -c '^record ')" = 2 ] || fail "--limit 2 did not stop at 2"

# --json: one object per record, parsed by an independent JSON parser; label and size agree.
"$FASTNN" inspect "$shard" --json --limit 0 > "$SCRATCH/records.jsonl"
"$PY" - "$SCRATCH/records.jsonl" <<'PYEOF' || fail "--json output did not check out"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 5, len(rows)
for r in rows:
    f = r["features"]
    assert f["image/format"]["values"] == ["png"], f["image/format"]
    assert f["image/height"]["values"] == [28] and f["image/width"]["values"] == [20]
    assert 0 <= f["image/class/label"]["values"][0] < 3
    img = f["image/encoded"]["values"][0]["image"]
    assert (img["format"], img["width"], img["height"], img["channels"]) == ("png", 20, 28, 1), img
PYEOF

# GZIP is detected from the file; forcing the wrong compression is an error, not garbage.
gz="$SCRATCH/gz/train-00000-of-00001.tfrecord"
# Output is captured before grep -q reads it: under pipefail, grep -q leaving a pipe early can kill
# the writer with SIGPIPE mid-output and fail the test at random (it did once in CI).
gzout=$("$FASTNN" inspect "$gz")
grep -q 'compression gzip' <<< "$gzout" || fail "gzip not detected"
grep -q 'jpeg 16x16x3' <<< "$gzout" || fail "jpeg not summarised"
expect_fail "$gz" -- "$FASTNN" inspect "$gz" --compression none

# A file cut inside its second record: error naming file, record index and offset; exit non-zero.
size=$(stat -c %s "$shard")
head -c $((size / 3)) "$shard" > "$SCRATCH/cut.tfrecord"
expect_fail "cut.tfrecord" "record 1" "offset" -- "$FASTNN" inspect "$SCRATCH/cut.tfrecord" --limit 0
echo "inspect: ok"
