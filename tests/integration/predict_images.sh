#!/usr/bin/env bash
# fastnn predict on real photographs (/var/cache/fastnn/sample-images/*.jpg; exit 77 when absent):
# cifarnet trained briefly on shards `fastnn convert image-folder` made from a folder of those photos;
# predict on the folder (recursive, sorted) answers one valid JSON object per photo, in path order, with a
# class name from the run's labels.txt; a file that is not an image is fatal naming it, or skipped with
# --skip-bad and reported; an empty folder is an error; photographs far larger than the model's input
# are said to be, once; a batch forwarded in slices (--forward_batch) answers as batches of the slice do.
FASTNN=$1 SRC=$2 SCRATCH=$3
PHOTOS=${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
ls "$PHOTOS"/*.jpg > /dev/null 2>&1 || { echo "skip: no photographs in $PHOTOS"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

# Two classes, each photo (and a mirrored copy as a PNG) in its own class.
i=0
for p in "$PHOTOS"/*.jpg; do
  c=$(basename "$p" .jpg); mkdir -p "folder/$c"
  for k in 1 2 3 4; do cp "$p" "folder/$c/$k.jpg"; done
  i=$((i + 1))
done
[ "$i" -ge 2 ] || { echo "skip: fewer than two photographs"; exit 77; }
"$FASTNN" convert image-folder -i folder -o data --num-gpus 1 --validation-fraction 0.25 -q > /dev/null || fail "convert"
"$FASTNN" train --model_name=cifarnet --dataset_dir=data --output_dir=run --batch_size=4 --stop_at_step=3 \
  --device=cpu > train.log 2>&1 || { tail train.log; fail "train"; }
cp data/labels.txt run/labels.txt

mkdir -p photos/sub && cp "$PHOTOS"/*.jpg photos/sub/ && cp "$(ls "$PHOTOS"/*.jpg | head -1)" photos/a.jpg
"$FASTNN" predict --checkpoint run --input photos --device=cpu --top_k 5 -q > pred.jsonl 2> pred.err || fail "predict"
# 640x427 photographs into a 32x32 cifarnet (a preset that crops, not resizes): said once, even with -q.
[ "$(grep -c "but cifarnet was trained on 32x32x3 images.*central 32x32 crop" pred.err)" = 1 ] ||
  { cat pred.err; fail "no single warning about inputs far from the training images"; }
python3 - pred.jsonl photos data/labels.txt <<'PY' || fail "predictions"
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
want = sorted(os.path.join(d, f) for d, _, fs in os.walk(sys.argv[2]) for f in fs)
assert [r["source"] for r in rows] == want, ([r["source"] for r in rows], want)
names = [l.split(":", 1)[1].strip() for l in open(sys.argv[3])]
for r in rows:
    assert "record" not in r and set(r) == {"source", "label", "name", "topk"}, r
    assert len(r["topk"]) == len(names) and r["topk"][0][0] == r["label"] and r["name"] == names[r["label"]], r
    assert abs(sum(p for _, p in r["topk"]) - 1) < 1e-6, r
# The same photo twice gives the same answer.
a = next(r for r in rows if r["source"].endswith("/a.jpg"))
same = [r for r in rows if r["source"] != a["source"] and os.path.basename(r["source"]) and
        open(r["source"], "rb").read() == open(a["source"], "rb").read()]
assert same and all(s["topk"] == a["topk"] for s in same), (a, same)
print(len(rows), "photos classified")
PY

# Not an image: fatal, naming it; skipped and reported with --skip-bad.
echo "not a jpeg" > photos/sub/broken.jpg
if "$FASTNN" predict --checkpoint run --input photos --device=cpu -q > /dev/null 2> bad.err; then fail "bad image accepted"; fi
grep -q "photos/sub/broken.jpg" bad.err || { cat bad.err; fail "error does not name the bad image"; }
"$FASTNN" predict --checkpoint run --input photos --device=cpu --skip-bad > skip.jsonl 2> skip.err || { cat skip.err; fail "--skip-bad"; }
grep -q "skipping .*photos/sub/broken.jpg" skip.err || { cat skip.err; fail "skip not reported"; }
[ "$(wc -l < skip.jsonl)" = "$(wc -l < pred.jsonl)" ] || fail "--skip-bad should classify the others"
grep -q "1 skipped" skip.err || { cat skip.err; fail "skip count"; }

# --forward_batch: a batch of 4 forwarded 2 images at a time answers, embeddings included, exactly as
# batches of 2 do (the same forwards); said on the first line; above the batch it is refused.
"$FASTNN" predict --checkpoint run --input folder --device=cpu --batch_size 4 --forward_batch 2 --embeddings fwd2.npy \
  > fwd2.jsonl 2> fwd2.err || { cat fwd2.err; fail "predict --forward_batch 2"; }
grep -q "batch 4, forwarded 2 at a time" fwd2.err || { cat fwd2.err; fail "the first line does not say the forward batch"; }
"$FASTNN" predict --checkpoint run --input folder --device=cpu --batch_size 2 --embeddings b2.npy -q > b2.jsonl ||
  fail "predict --batch_size 2"
[ "$(wc -l < b2.jsonl)" -ge 8 ] || fail "predict of the folder: $(wc -l < b2.jsonl) lines"
cmp fwd2.jsonl b2.jsonl || fail "forwarding 2 at a time changed the predictions"
cmp fwd2.npy b2.npy || fail "forwarding 2 at a time changed the embeddings"
if "$FASTNN" predict --checkpoint run --input folder --device=cpu --batch_size 2 --forward_batch 3 -q > /dev/null 2> fwd3.err; then
  fail "--forward_batch above --batch_size accepted"
fi
grep -q "forward_batch 3 must be between 1 and the batch size 2" fwd3.err || { cat fwd3.err; fail "--forward_batch 3 message"; }

mkdir empty
if "$FASTNN" predict --checkpoint run --input empty --device=cpu -q > /dev/null 2> empty.err; then fail "empty folder accepted"; fi
grep -q "holds no image" empty.err || { cat empty.err; fail "empty folder message"; }
echo "ok"
