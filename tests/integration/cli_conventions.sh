#!/usr/bin/env bash
# CLI conventions (issue 17): every command takes both spellings of a flag (--batch-size and
# --batch_size, --num-gpus and --num_gpus); `convert` and `check` print one JSON object with --json,
# whose numbers are the manifest's and the check's.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }

# convert: the underscore spelling of its dash flags, and --json.
"$FASTNN" convert synthetic --output data --num_gpus 1 --num_records 64 --num_test_records 16 --height 28 --width 28 \
  --channels 1 --num_classes 4 --image_format png -q --json > convert.json || fail "convert with underscores"
"$PY" - <<'PYEOF' || fail "convert --json"
import json
j = json.load(open("convert.json"))
m = json.load(open("data/manifest.json"))
assert j["output"] == "data", j["output"]
assert j["manifest"] == m, "the JSON manifest differs from manifest.json"
assert j["manifest"]["splits"]["train"]["num_records"] == 64 and j["bytes_written"] > 0
PYEOF
echo "ok: convert --num_gpus ... --json"

# check --json: the same verdict and counts as the text report, and the exit status unchanged.
"$FASTNN" check data --json --num_gpus 1 -q > check.json || fail "check --json"
"$FASTNN" check data -q > check.txt || fail "check"
"$PY" - <<'PYEOF' || fail "check --json"
import json
j = json.load(open("check.json"))
txt = open("check.txt").read()
assert j["ok"] is True and j["error_count"] == 0
assert j["records"] == 80, j["records"]
assert sorted(s["name"] for s in j["splits"]) == ["test", "train"]
assert sum(sh["records"] for s in j["splits"] for sh in s["shards"]) == 80
assert "80 records" in txt and "OK" in txt
PYEOF
printf 'garbage' >> data/train-00000-of-00004.tfrecord
"$FASTNN" check data --json -q > bad.json && fail "check --json passed a damaged shard"
"$PY" -c "import json; j = json.load(open('bad.json')); assert j['ok'] is False and j['error_count'] > 0" \
  || fail "check --json on a damaged shard"
echo "ok: check --json"
rm -rf data && "$FASTNN" convert synthetic --output data --num-gpus 1 --num-records 64 --num-test-records 16 --height 28 \
  --width 28 --channels 1 --num-classes 4 --image-format png -q > /dev/null || fail "convert with dashes"

# bench pipeline with --batch_size, train and eval with --batch-size.
"$FASTNN" bench pipeline --data data --preset lenet --batch_size 4 --steps 2 --rounds 1 --warmup 0 --json > bench.json \
  || fail "bench pipeline --batch_size"
"$PY" -c "import json; json.load(open('bench.json'))" || fail "bench pipeline --json"
"$FASTNN" train --model_name=lenet --dataset_dir=data --batch-size=8 --stop-at-step=2 --output-dir=run \
  --num-preprocessing-threads=1 > train.log 2>&1 || { cat train.log; fail "train --batch-size"; }
grep -q "batches of 8 per epoch" train.log || { cat train.log; fail "train --batch-size=8 not used"; }
"$FASTNN" eval --model_name=lenet --dataset_dir=data --output-dir=run --batch-size=5 --json > eval.json \
  || fail "eval --batch-size"
"$PY" -c "import json; assert json.load(open('eval.json'))['num_examples'] == 16" || fail "eval --json"
echo "ok: --batch-size / --batch_size on bench pipeline, train, eval"
echo PASS
