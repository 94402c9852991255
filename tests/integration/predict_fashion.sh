#!/usr/bin/env bash
# fastnn predict against fastnn eval on the real Fashion-MNIST test split (Debian dataset-fashion-mnist):
# LeNet trained 200 steps on the CPU; predict on the test shard folder must give one line per record in
# the manifest's order, targets whose per-shard histograms are the manifest's, and a top-1 computed from
# its labels equal to eval's top1 exactly. Also: --format csv, --output, a run directory or a ckpt prefix,
# a damaged record is fatal (naming the shard, record and offset) once the batches before it are written.
# Exit 77 when the dataset is absent.
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
[ -f "$DATA_SRC/t10k-images-idx3-ubyte.gz" ] || { echo "skip: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 2 -q > /dev/null || fail "convert"
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=64 --optimizer=momentum \
  --learning_rate=0.01 --stop_at_step=200 --device=cpu > train.log 2>&1 || { tail train.log; fail "train"; }
"$FASTNN" eval --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=250 --device=cpu --json \
  > eval.json 2> eval.err || { cat eval.err; fail "eval"; }
cat eval.json
# The model, classes and preprocessing come from the checkpoint: no --model_name here.
"$FASTNN" predict --checkpoint run --input data --device=cpu --batch_size=250 --top_k 3 > pred.jsonl 2> pred.err ||
  { cat pred.err; fail "predict"; }
grep -q "lenet, 10 classes, 28x28x1 lenet preprocessing" pred.err || { cat pred.err; fail "model line on stderr"; }
python3 - eval.json pred.jsonl data/manifest.json <<'PY' || fail "predict disagrees with eval"
import json, math, sys, collections
ev = json.load(open(sys.argv[1]))
rows = [json.loads(l) for l in open(sys.argv[2])]
man = json.load(open(sys.argv[3]))
test = man["splits"]["test"]
assert len(rows) == ev["num_examples"] == 10000, (len(rows), ev)
# Input order: the manifest's shards, records 0.. in each.
i = 0
for shard in test["shards"]:
    hist = collections.Counter()
    for r in range(shard["records"]):
        row = rows[i]; i += 1
        assert row["source"].endswith(shard["file"]) and row["record"] == r, (row, shard["file"], r)
        hist[row["target"]] += 1
    want = shard["label_histogram"]
    assert [hist.get(c, 0) for c in range(len(want))] == want, (shard["file"], hist, want)
names = [l.split(":", 1)[1].strip() for l in open("data/labels.txt")]
for row in rows:
    tk = row["topk"]
    assert len(tk) == 3 and row["label"] == tk[0][0], row
    assert all(tk[j][1] >= tk[j + 1][1] for j in range(2)) and 0 < tk[0][1] <= 1, row
    assert row["name"] == names[row["label"]], row
top1 = sum(r["label"] == r["target"] for r in rows) / len(rows)
print(f"predict top-1 {top1:.4f}  eval top1 {ev['top1']:.4f}")
assert top1 == ev["top1"], (top1, ev["top1"])
assert top1 > 0.5, top1
PY

# csv to a file, from a checkpoint prefix and one shard file.
ckpt=$(ls run/ckpt-*.meta.pbtxt | sort -V | tail -1); ckpt=${ckpt%.meta.pbtxt}
shard=$(ls data/test-*.tfrecord | head -1)
"$FASTNN" predict --checkpoint "$ckpt" --input "$shard" --device=cpu --format csv --top_k 2 -q -o pred.csv ||
  fail "predict csv"
python3 - pred.csv pred.jsonl <<'PY' || fail "csv"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
js = [json.loads(l) for l in open(sys.argv[2])][:len(rows)]
assert len(rows) == 5000, len(rows)
for c, j in zip(rows, js):
    assert int(c["record"]) == j["record"] and int(c["label"]) == j["label"] and int(c["target"]) == j["target"], (c, j)
    assert len(c["topk"].split(" ")) == 2 and c["name"] == j["name"], c
PY
[ -z "$(ls -A . | grep fastnn-tmp)" ] || fail "temporary output left behind"
# The output's format follows its extension; a name that says another format, or none known, is refused.
"$FASTNN" predict --checkpoint "$ckpt" --input "$shard" --device=cpu --top_k 2 -q -o ext.CSV || fail "predict -o ext.CSV"
cmp -s ext.CSV pred.csv || fail "-o ext.CSV without --format did not write the csv --format csv wrote"
for bad in "-o p.txt" "-o p.csv --format jsonl"; do
  # shellcheck disable=SC2086
  "$FASTNN" predict --checkpoint "$ckpt" --input "$shard" --device=cpu -q $bad > refused.txt 2>&1
  rc=$?
  [ "$rc" = 2 ] && grep -q "name the file" refused.txt || { cat refused.txt; fail "predict $bad: exit $rc, not a usage error"; }
done
[ ! -e p.txt ] && [ ! -e p.csv ] || fail "a refused predict wrote its output"

# A record damaged in place is fatal, naming the shard.
cp "$shard" bad.tfrecord
printf '\xff\xff\xff\xff' | dd of=bad.tfrecord bs=1 seek=2000 conv=notrunc status=none
if "$FASTNN" predict --checkpoint run --input bad.tfrecord --device=cpu -q > /dev/null 2> bad.err; then
  fail "a damaged record was accepted"
fi
grep -q "bad.tfrecord" bad.err || { cat bad.err; fail "error does not name the file"; }
# Damaged three quarters in, read in batches of 250 to stdout: every batch before the damaged record's is
# written, in order, and nothing of its own batch or after.
cp "$shard" late.tfrecord
printf '\xff\xff\xff\xff' | dd of=late.tfrecord bs=1 seek=$(( $(stat -c %s late.tfrecord) * 3 / 4 )) conv=notrunc status=none
"$FASTNN" predict --checkpoint run --input late.tfrecord --device=cpu --batch_size=250 -q > late.jsonl 2> late.err &&
  fail "a damaged record late in the file was accepted"
bad_record=$(sed -n 's/.*late\.tfrecord: record \([0-9]*\) at offset.*/\1/p' late.err)
[ -n "$bad_record" ] || { cat late.err; fail "the error does not name the record"; }
python3 - late.jsonl "$bad_record" <<'PY' || fail "the lines before the damaged record's batch"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = int(sys.argv[2])
assert bad >= 500, bad
assert [r["record"] for r in rows] == list(range(bad - bad % 250)), (len(rows), bad)
PY
echo "ok"
