#!/usr/bin/env bash
# fastnn train / eval end to end on a small synthetic shard set: convert -> train a few dozen steps
# (log lines, metrics.jsonl, TensorBoard events, checkpoints) -> eval --json; then kill -9 a second,
# identical deterministic run after its step-20 checkpoint, --resume it, and require the same final
# evaluation as the uninterrupted run. Also: unknown flags, a NaN loss, and task_type=finetune into another class count.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$FASTNN" convert synthetic --output data --num-gpus 1 --num-records 640 --num-test-records 100 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
"$FASTNN" train --help | grep -q -- "--learning_rate" || fail "train --help should list the config fields"

args=(--model_name=lenet --dataset_dir=data --batch_size=16 --optimizer=momentum --learning_rate=0.01
      --learning_rate_decay_type=fixed --stop_at_step=60 --log_loss_every_n_iters=10
      --save_checkpoints_steps=20 --seed=3 --deterministic --num_preprocessing_threads=2)
"$FASTNN" train "${args[@]}" --output_dir=full > full.log 2> full.err || { cat full.err; fail "train"; }
grep -q "^step 60/60 " full.log || { cat full.log; fail "no log line for step 60"; }
grep -q '"event":"eval"' full/metrics.jsonl || fail "metrics.jsonl has no eval line"
[ "$(grep -c '"event":"train"' full/metrics.jsonl)" = 6 ] || fail "metrics.jsonl should have 6 train lines"
ls full/events.out.tfevents.* > /dev/null || fail "no TensorBoard event file"
ls full/ckpt-60.weights.safetensors full/ckpt-60.meta.pbtxt > /dev/null || fail "no final checkpoint"

"$FASTNN" eval "${args[@]}" --output_dir=full --json > full.json || fail "eval"
python3 - full.json <<'PY' || fail "eval --json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["num_examples"] == 100 and j["step"] == 60, j
assert 0 <= j["top1"] <= j["top5"] <= 1 and j["loss"] > 0, j
PY
# No model flags: eval takes the model from the checkpoint's metadata and gives the same numbers.
"$FASTNN" eval --dataset_dir=data --output_dir=full --batch_size=16 --json > bare.json 2> bare.err ||
  { cat bare.err; fail "eval without model_name"; }
grep -q "evaluating lenet, the model the checkpoint holds" bare.err || { cat bare.err; fail "eval should say whose model"; }
python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); assert a["top1"]==b["top1"] and a["loss"]==b["loss"], (a,b)' full.json bare.json ||
  fail "eval without model_name differs"
"$FASTNN" train "${args[@]}" --output_dir=bad --bogus_flag=1 2> bad.err && fail "unknown flag accepted"
grep -q "bogus_flag" bad.err || fail "unknown flag error should name it"

# A diverging run stops with a clear error instead of training on NaN.
"$FASTNN" train "${args[@]}" --learning_rate=1e30 --output_dir=nan > nan.log 2> nan.err && fail "NaN run succeeded"
grep -q "training diverged: loss is NaN at step" nan.err || { cat nan.err; fail "NaN message"; }

# Fine-tuning from that run into 12 classes: everything but the classifier is loaded.
"$FASTNN" train "${args[@]}" --stop_at_step=5 --task_type=finetune --model_dir=full --num_classes=12 \
  --output_dir=ft > ft.log 2> ft.err || { cat ft.err; fail "finetune"; }
grep -q "fine-tuning from full/ckpt-60" ft.err || { cat ft.err; fail "finetune should name the checkpoint"; }
grep -q "fc4/weights" ft.err || { cat ft.err; fail "finetune should list the skipped classifier"; }

# kill -9 after the step-20 checkpoint, then resume.
"$FASTNN" train "${args[@]}" --output_dir=killed > killed.log 2>&1 &
pid=$!
for _ in $(seq 600); do [ -f killed/ckpt-20.meta.pbtxt ] && break; sleep 0.05; done
kill -9 $pid 2> /dev/null
wait $pid 2> /dev/null
[ -f killed/ckpt-60.meta.pbtxt ] && echo "note: the run finished before the kill; resume has nothing left to do"
"$FASTNN" train "${args[@]}" --output_dir=killed --resume > resumed.log 2> resumed.err || { cat resumed.err; fail "resume"; }
"$FASTNN" eval "${args[@]}" --output_dir=killed --json > resumed.json || fail "eval after resume"
python3 - full.json resumed.json <<'PY' || fail "resumed run differs from the uninterrupted one"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ("top1", "top5", "loss", "num_examples", "step"):
    assert a[k] == b[k], (k, a[k], b[k])
print("resume ok:", a)
PY
