#!/usr/bin/env bash
# The picture pages' numbers, on the real Fashion-MNIST (Debian package dataset-fashion-mnist):
#   - `check --report`: the page's JSON block and tables equal `check --json` (records and label
#     histograms per shard), its sample images are PNG data URIs of the records' size, 8 per class, under
#     the class names of labels.txt (a hostile one escaped), the size table says 70000 × 28×28×1, and the
#     channel mean and standard deviation over all records (--decode) equal those computed here from the
#     IDX files; without --decode the page says the statistics are over a sample, with its count;
#   - a page fastnn wrote is refreshed on rerun, someone else's file kept without --overwrite (and no
#     temporary is left);
#   - `fastnn report RUN_DIR` after a few LeNet steps with evaluations: the curves' JSON and the loss
#     chart's polyline equal metrics.jsonl, the confusion matrix is the last eval line's (its trace over
#     the examples is top-1, per-class accuracy is diagonal / row sum) and equals `eval --json`'s.
# Exit 77 (skipped) when the dataset is not installed.
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
[ -f "$DATA_SRC/train-images-idx3-ubyte.gz" ] || { echo "skip: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
export PYTHONPATH="$SRC/tests/integration"

# Fashion-MNIST's class names, the last one hostile.
printf '%s\n' "T-shirt/top" Trouser Pullover Dress Coat Sandal Shirt Sneaker Bag \
  'Ankle boot <script>alert(1)</script> & "co"' > names.txt
"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 2 \
  --class-names names.txt -q > /dev/null || fail "convert"

"$FASTNN" check data -q --decode --json --report check.html > check.json || fail "check --decode --report"
"$FASTNN" check data -q --report sample.html --report-stats-records 1000 > sample.txt || fail "check --report"
grep -q "report written to sample.html" sample.txt || fail "no 'report written' line"
# Its own page is refreshed on rerun; someone else's file in the way is kept without --overwrite.
"$FASTNN" check data -q --report sample.html --report-stats-records 1000 > /dev/null || fail "check --report rerun"
echo "my notes" > notes.html
rc=0; "$FASTNN" check data -q --report notes.html > /dev/null 2> exists.err || rc=$?
[ "$rc" = 1 ] && grep -q -- "--overwrite" exists.err || { cat exists.err; fail "an existing file was not refused (exit $rc)"; }
[ "$(cat notes.html)" = "my notes" ] || fail "check --report replaced someone's file"
"$FASTNN" check data -q --report notes.html --overwrite --report-stats-records 1000 > /dev/null || fail "--overwrite"
ls -A | grep -q fastnn-tmp && fail "a temporary was left: $(ls -A)"

python3 - "$DATA_SRC" <<'PY' || fail "check page"
import base64, gzip, json, sys
import png_pixels, report_page_data as rp

page = rp.parse("check.html")
d, j = page.data, json.load(open("check.json"))
assert page.sections == ["summary", "classes", "samples", "balance", "sizes", "channels", "problems"], page.sections
assert d["kind"] == "fastnn-check-report" and d["ok"] and j["ok"]
assert d["records"] == j["records"] == 70000 and d["num_classes"] == j["num_classes"] == 10
for ps, js in zip(d["splits"], j["splits"], strict=True):
    assert ps["name"] == js["name"] and ps["histogram"] == js["histogram"], (ps["name"], js["name"])
    for a, b in zip(ps["shards"], js["shards"], strict=True):
        assert (a["file"], a["records"], a["histogram"], a["p_value"]) == (b["file"], b["records"], b["histogram"], b["p_value"]), a["file"]
# The count tables show the same histograms: one <td data-v> per shard and class, in order.
shown = [int(c["data-v"]) for c in page.cells]
assert shown == [v for s in j["splits"] for sh in s["shards"] for v in sh["histogram"]], "count table"

# Samples: 8 per class, PNG data URIs of 28x28 gray images, under the escaped names.
names = [l.rstrip("\n") for l in open("names.txt")]
assert d["class_names"] == names, d["class_names"]
assert [s["label"] for s in d["samples"]] == list(range(10)) and all(len(s["records"]) == 8 for s in d["samples"])
assert len(page.images) == 80, len(page.images)
for img in page.images:
    pre = "data:image/png;base64,"
    assert img["src"].startswith(pre)
    w, h, c, rows = png_pixels.decode(base64.b64decode(img["src"][len(pre):]))
    assert (w, h, c) == (28, 28, 1), (w, h, c)
assert names[9] in page.text() and "Ankle boot" in page.images[-1]["alt"], "hostile class name not shown as text"
assert [s for s in page.scripts if s.get("type") != "application/json"] == [], "a <script> element besides the data"

# Sizes and channel statistics over all 70000 records, against the IDX files.
assert d["sizes"] == [{"height": 28, "width": 28, "channels": 1, "count": 70000}], d["sizes"]
n = s = ss = 0
for f in ("train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"):
    px = gzip.open(f"{sys.argv[1]}/{f}").read()[16:]
    hist = [0] * 256
    for v in px: hist[v] += 1
    n += len(px); s += sum(v * c for v, c in enumerate(hist)); ss += sum(v * v * c for v, c in enumerate(hist))
mean, std = s / n, (ss / n - (s / n) ** 2) ** 0.5
cs = d["channel_stats"]
assert len(cs) == 1 and cs[0]["channels"] == 1 and cs[0]["images"] == 70000 and cs[0]["pixels"] == 70000 * 784, cs
assert abs(cs[0]["mean"][0] - mean) < 1e-9 * mean and abs(cs[0]["std"][0] - std) < 1e-7 * std, (cs, mean, std)
assert d["stats_scope"]["all_records"] and "over all 70000 decoded records" in page.text()
print(f"check page: 80 samples, histograms equal, mean {mean:.4f} std {std:.4f} (IDX) = page")

sp = rp.parse("sample.html")
scope = sp.data["stats_scope"]
assert not scope["all_records"] and scope["per_shard"] == 250 and scope["decoded"] == 1000, scope
assert "over a sample: the first 250 records of each shard, 1000 of 70000 records" in sp.text()
assert sp.data["channel_stats"][0]["images"] == 1000
PY

# A few LeNet steps with two evaluations.
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=64 --stop_at_step=40 \
  --log_loss_every_n_iters=10 --eval_every_n_steps=20 --learning_rate=0.01 --optimizer=momentum --momentum=0.9 \
  --device=cpu --seed=1 > train.log 2>&1 || { cat train.log; fail "train"; }
"$FASTNN" eval --dataset_dir=data --output_dir=run --batch_size=64 --device=cpu --json > eval.json 2> eval.err ||
  { cat eval.err; fail "eval"; }
"$FASTNN" report run > report.txt || fail "report"
grep -q "report written to run/report.html" report.txt || { cat report.txt; fail "report line"; }
"$FASTNN" report run > /dev/null || fail "report rerun did not refresh its own page"
echo "my notes" > mine.html
rc=0; "$FASTNN" report run -o mine.html > /dev/null 2> exists.err || rc=$?
[ "$rc" = 1 ] && grep -q -- "--overwrite" exists.err && [ "$(cat mine.html)" = "my notes" ] ||
  fail "report replaced someone's file"
"$FASTNN" report run -o other.html > /dev/null || fail "report -o"

python3 - <<'PY' || fail "run page"
import base64, json, math
import png_pixels, report_page_data as rp

page = rp.parse("run/report.html")
d = page.data
assert page.sections == ["curves", "confusion", "misclassified", "notes"], page.sections
lines = [json.loads(l) for l in open("run/metrics.jsonl")]
train = [l for l in lines if l["event"] == "train"]
evals = [l for l in lines if l["event"] == "eval"]
assert len(train) == 4 and len(evals) == 2, (len(train), len(evals))
for key in ("loss", "accuracy", "lr", "images_per_sec"):
    assert d["train"][key] == [l[key] for l in train], key
assert d["train"]["step"] == [l["step"] for l in train]
assert [(e["step"], e["top1"], e["top5"], e["loss"], e["num_examples"]) for e in d["evals"]] == \
       [(e["step"], e["top1"], e["top5"], e["loss"], e["num_examples"]) for e in evals]

# The loss chart's first polyline is the train loss: its points are the metrics' (step, loss).
svg, line = next((s, p) for s, p in page.polylines if p["data-name"] == "train loss")
pts, (tx, ty) = rp.points(svg, line)
assert len(pts) == len(train)
for (x, y), l in zip(pts, train):
    assert abs(x - l["step"]) <= tx and abs(y - l["loss"]) <= ty, ((x, y), l["step"], l["loss"])

last = evals[-1]
m = last["confusion_matrix"]
assert d["last_eval"]["step"] == last["step"] == 40 and d["last_eval"]["confusion_matrix"] == m
n = sum(map(sum, m))
assert n == last["num_examples"] == 10000
assert abs(sum(m[i][i] for i in range(10)) / n - last["top1"]) < 1e-12, "trace / examples is not top-1"
acc = d["last_eval"]["per_class_accuracy"]
assert all(abs(acc[i] - m[i][i] / sum(m[i])) < 1e-15 for i in range(10))
prec = d["last_eval"]["per_class_precision"]
assert all(prec[k] is None if not sum(r[k] for r in m) else abs(prec[k] - m[k][k] / sum(r[k] for r in m)) < 1e-15
           for k in range(10)), prec
assert d["last_eval"]["class_names"][1] == "Trouser"
# The heat map shows the matrix cell by cell.
cells = {(int(c["data-r"]), int(c["data-c"])): float(c["data-v"]) for c in page.cells if "data-r" in c}
assert cells == {(i, k): float(m[i][k]) for i in range(10) for k in range(10)}
e = json.load(open("eval.json"))
assert e["step"] == 40 and e["confusion_matrix"] == m, "eval --json's confusion matrix differs from the run's last"
# The gallery: the last evaluation's 16 most confident mistakes, each shard record's own 28x28 PNG.
mis = last["misclassified"]
assert len(mis) == 16 and all(x["label"] != x["predicted"] for x in mis), mis
assert [x["confidence"] for x in mis] == sorted((x["confidence"] for x in mis), reverse=True)
assert d["misclassified"] == mis and e["misclassified"] == mis, "the page's or eval --json's mistakes differ"
pre = "data:image/png;base64,"
gallery = [i for i in page.images if i.get("src", "").startswith(pre)]
assert len(gallery) == 16, len(gallery)
for img, x in zip(gallery, mis):
    w, h, c, rows = png_pixels.decode(base64.b64decode(img["src"][len(pre):]))
    assert (w, h, c) == (28, 28, 1) and img["title"] == f"{x['file']}: record {x['record']} at offset {x['offset']}"
print(f"run page: {len(train)} train lines, {len(evals)} evals, confusion matrix top-1 {last['top1']}, 16 mistakes")
PY

# Two runs compared: a second run with another learning rate; the page lists that field (and no path),
# overlays both runs' curves, and names its best evaluation; without -o it is a usage error.
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run2 --batch_size=64 --stop_at_step=40 \
  --log_loss_every_n_iters=10 --eval_every_n_steps=20 --learning_rate=0.05 --optimizer=momentum --momentum=0.9 \
  --device=cpu --seed=1 > train2.log 2>&1 || { cat train2.log; fail "train run2"; }
rc=0; "$FASTNN" report run run2 > /dev/null 2> noout.err || rc=$?
[ "$rc" = 2 ] && grep -q "name the page with -o" noout.err || fail "comparing without -o: exit $rc, $(cat noout.err)"
"$FASTNN" report run run2 -o compare.html --json > compare.json || fail "report run run2"
python3 - <<'PY' || fail "comparison page"
import json
import report_page_data as rp
j = json.load(open("compare.json"))
assert j["differing_fields"] == ["learning_rate"], j
page = rp.parse("compare.html")
d = page.data
assert d["kind"] == "fastnn-run-comparison" and [r["run_dir"] for r in d["runs"]] == ["run", "run2"], d
for r in d["runs"]:
    assert len(r["train_step"]) == 4 and len(r["evals"]) == 2 and r["config_recorded"], r
    assert r["best_top1"]["top1"] == max(e["top1"] for e in r["evals"])
assert d["runs"][1]["differing"] == {"learning_rate": "0.05"}, d["runs"][1]["differing"]
print("comparison: differing", d["differing_fields"], "best", [r["best_top1"] for r in d["runs"]])
PY
echo PASS
