#!/usr/bin/env bash
# CLI conventions (README "Flags mean the same in every command"): every command takes both spellings
# of a flag (--batch-size and --batch_size, --num-gpus and --num_gpus); `convert`, `check`, `eval`,
# `report` print one JSON object with --json, whose numbers are the manifest's, the check's and the
# run's; `check -o` is `check --report`; `report -q` prints nothing; `serve --json` logs JSON lines.
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

# check -o: the page, as --report writes it; report -q and --json.
"$FASTNN" check data -q -o check.html > /dev/null || fail "check -o"
grep -q 'name="generator" content="fastnn"' check.html || fail "check -o wrote no page"
[ -z "$("$FASTNN" report run -q)" ] || fail "report -q printed something"
"$FASTNN" report run --json > report.json || fail "report --json"
"$PY" - <<'PYEOF' || fail "report --json"
import json
j = json.load(open("report.json"))
assert j["output"] == "run/report.html" and j["train_lines"] >= 1 and j["evaluations"] >= 1, j
PYEOF
echo "ok: check -o, report -q / --json"

# serve --json: one JSON object per answer on stderr, a hostile path kept on one line.
"$FASTNN" serve --checkpoint run --port 0 --json > serve.out 2> serve.err &
pid=$!
for _ in $(seq 100); do grep -q listening serve.out 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's|listening on http://127.0.0.1:\([0-9]*\).*|\1|p' serve.out)
[ -n "$port" ] || { kill $pid; cat serve.err; fail "serve did not start"; }
"$PY" - "$port" <<'PYEOF' || { kill $pid; fail "serve requests"; }
import sys, urllib.request, urllib.error
base = f"http://127.0.0.1:{sys.argv[1]}"
assert urllib.request.urlopen(base + "/healthz").status == 200
try:
    urllib.request.urlopen(urllib.request.Request(base + "/v1/classify", data=b"[1]", method="POST",
                                                  headers={"Content-Type": "application/json"}))
    raise SystemExit("a bad body was answered 200")
except urllib.error.HTTPError as e:
    assert e.code == 400, e.code
try:
    urllib.request.urlopen(base + "/x%0Ay%22")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
PYEOF
kill -TERM $pid; wait $pid || fail "serve exit $?"
"$PY" - <<'PYEOF' || { cat serve.err; fail "serve --json log"; }
import json
lines = [json.loads(l) for l in open("serve.err") if l.startswith("{")]
got = {(l["method"], l["path"], l["status"]) for l in lines}
assert ("GET", "/healthz", 200) in got and ("POST", "/v1/classify", 400) in got, got
assert ("GET", '/x\ny"', 404) in got, got
assert all(isinstance(l["bytes"], int) and l["peer"].startswith("127.0.0.1:") for l in lines)
PYEOF
echo "ok: serve --json"
echo PASS
