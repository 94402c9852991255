#!/usr/bin/env bash
# keep_best_checkpoint and early stopping on the real Fashion-MNIST (Debian dataset-fashion-mnist; exit 77
# when absent), LeNet on the CPU:
#  - learning: best/ holds one checkpoint, the step whose evaluation had the best top1 in metrics.jsonl,
#    and `fastnn eval --checkpoint run/best` gives that top1 again; train --json names it;
#  - a plateau (learning_rate 0: every evaluation equal): patience 2 stops at the third evaluation with
#    a checkpoint there; a rerun trains nothing and says so; --overwrite removes best/'s files too;
#  - keep_best_checkpoint without eval_every_n_steps is refused before any work;
#  - TensorBoard: RUN/ holds training's scalars, RUN/eval/ the evaluation's, under the same tags (loss,
#    accuracy), read back by event_tags.py and equal to metrics.jsonl's evaluations.
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
[ -f "$DATA_SRC/t10k-images-idx3-ubyte.gz" ] || { echo "skip: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 2 -q > /dev/null 2>&1 ||
  fail "convert"
common=(--model_name=lenet --dataset_dir=data --batch_size=64 --device=cpu --num_preprocessing_threads=2)

# Learning: the best of three evaluations is kept in best/.
"$FASTNN" train "${common[@]}" --output_dir=learn --optimizer=momentum --learning_rate=0.01 --stop_at_step=150 \
  --eval_every_n_steps=50 --keep_best_checkpoint=true --json > learn.json 2> learn.err || { cat learn.err; fail "train"; }
python3 - learn.json learn/metrics.jsonl <<'PY' || fail "best checkpoint of the learning run"
import json, os, sys
s = json.load(open(sys.argv[1]))
evals = [j for j in map(json.loads, open(sys.argv[2])) if j.get("event") == "eval"]
best = max(evals, key=lambda e: (e["top1"], -e["step"]))  # the first of equals stays the best
assert [e["step"] for e in evals] == [50, 100, 150], evals
assert s["best"]["metric"] == "top1" and s["best"]["step"] == best["step"], (s, best)
assert s["best"]["checkpoint"] == f"learn/best/ckpt-{best['step']}", s
kept = sorted(f for f in os.listdir("learn/best") if f.endswith(".meta.pbtxt"))
assert kept == [f"ckpt-{best['step']}.meta.pbtxt"], kept
open("best_top1.txt", "w").write(repr(best["top1"]))
PY
"$FASTNN" eval --output_dir=learn --checkpoint learn/best --json > best_eval.json 2> best_eval.err ||
  { cat best_eval.err; fail "eval of best/"; }
python3 -c "
import json; j = json.load(open('best_eval.json')); want = float(open('best_top1.txt').read())
assert abs(j['top1'] - want) < 1e-12, (j['top1'], want)" || fail "eval of best/ differs from its recorded evaluation"
echo "ok: best/ holds the best evaluation's checkpoint"

# TensorBoard: training's scalars in RUN/, evaluation's in RUN/eval/ under the same tags (one chart each).
python3 "$SRC/tests/integration/event_tags.py" learn/events.out.tfevents.* > train_tags.json || fail "read train events"
python3 "$SRC/tests/integration/event_tags.py" learn/eval/events.out.tfevents.* > eval_tags.json || fail "read eval events"
python3 - train_tags.json eval_tags.json learn/metrics.jsonl <<'PY' || fail "TensorBoard tags"
import json, sys
train, ev = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
evals = [j for j in map(json.loads, open(sys.argv[3])) if j.get("event") == "eval"]
assert {"loss", "accuracy", "lr", "images_per_sec"} <= set(train), sorted(train)
assert set(ev) == {"loss", "accuracy", "top5"}, sorted(ev)
assert [s for s, _ in ev["accuracy"]] == [e["step"] for e in evals], (ev["accuracy"], evals)
for (s, v), e in zip(ev["accuracy"], evals):
    assert abs(v - e["top1"]) < 1e-6 and abs(dict(ev["loss"])[s] - e["loss"]) < 1e-5 * max(1, e["loss"]), (v, e)
PY
echo "ok: train and eval scalars share their tags"

# A plateau: patience 2 ends the run at the third evaluation.
plateau=(--output_dir=flat --optimizer=sgd --learning_rate=0 --stop_at_step=400 --eval_every_n_steps=20
         --keep_best_checkpoint=true --early_stopping_patience=2)
"$FASTNN" train "${common[@]}" "${plateau[@]}" > flat.out 2> flat.err || { cat flat.err; fail "train plateau"; }
grep -q "early stopping at step 60: top1 has not improved on top1 .* at step 20 for 2 evaluations" flat.err ||
  { cat flat.err; fail "no early-stopping line"; }
grep -q "^stopped early at step 60 after 60 steps" flat.out || { cat flat.out; fail "summary"; }
grep -q "^best eval: top1 .* at step 20, checkpoint flat/best/ckpt-20" flat.out || { cat flat.out; fail "best line"; }
[ -f flat/ckpt-60.meta.pbtxt ] && [ ! -e flat/ckpt-80.meta.pbtxt ] || fail "no checkpoint at the stop, or one after"
[ "$(grep -c '"event":"eval"' flat/metrics.jsonl)" = 3 ] || fail "evaluations after the stop"
"$FASTNN" train "${common[@]}" "${plateau[@]}" > again.out 2> again.err || { cat again.err; fail "rerun"; }
grep -q "was stopped early at step 60: nothing to train" again.out || { cat again.out again.err; fail "rerun trained"; }
"$FASTNN" train "${common[@]}" "${plateau[@]}" --stop_at_step=40 --overwrite > over.out 2> over.err ||
  { cat over.err; fail "--overwrite"; }
grep -q "best/ckpt-20" over.err || { cat over.err; fail "--overwrite did not list best/'s files"; }
echo "ok: early stopping, its rerun, --overwrite"

if "$FASTNN" train "${common[@]}" --output_dir=bad --keep_best_checkpoint=true > bad.out 2> bad.err; then
  fail "keep_best_checkpoint without evaluations accepted"
fi
grep -q "set eval_every_n_steps" bad.err || { cat bad.err; fail "refusal does not say what to set"; }
[ ! -e bad/metrics.jsonl ] || fail "a refused run wrote files"
echo PASS
