#!/usr/bin/env bash
# moving_average_decay end to end (docs/TRAINING.md), LeNet on a small synthetic shard set:
#  - the averages are saved in RUN/ema/ beside every checkpoint, and differ from the weights;
#  - eval, predict and export take them with --checkpoint RUN/ema (eval's loss differs from the weights'),
#    and train's own last evaluation of the averages gives eval's numbers;
#  - a run stopped at step 4 and continued to step 8 ends with the averages of an uninterrupted 8-step run,
#    bit for bit (they are read back from RUN/ema/ckpt-4);
#  - a decay outside (0, 1) is refused by name, and a missing RUN/ema checkpoint names itself on resume;
#  - --overwrite removes the old run's averages with its checkpoints.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
PY=$(command -v python3) || { echo "SKIP: no python3"; exit 77; }
COMPARE="$SRC/tests/integration/compare_safetensors.py"

"$FASTNN" convert synthetic --output data --num-gpus 1 --num-records 128 --num-test-records 32 --height 28 --width 28 \
  --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
args=(--model_name=lenet --dataset_dir=data --batch_size=16 --optimizer=momentum --learning_rate=0.05
      --learning_rate_decay_type=fixed --save_checkpoints_steps=4 --seed=3 --deterministic --device=cpu
      --num_preprocessing_threads=1 --moving_average_decay=0.9)

"$FASTNN" train "${args[@]}" --output_dir=full --stop_at_step=8 > full.log 2>&1 || { cat full.log; fail "train"; }
grep -q "moving averages (decay 0.9) saved in full/ema" full.log || { cat full.log; fail "the start line does not say so"; }
for s in 4 8; do
  [ -f full/ema/ckpt-$s.weights.safetensors ] || { ls -R full; fail "no averages saved with step $s"; }
done
"$PY" "$COMPARE" full/ema/ckpt-8.weights.safetensors full/ckpt-8.weights.safetensors --atol 0 --rtol 0 --differ ||
  fail "the averages equal the weights"

# The averaged model in eval, predict and export.
"$FASTNN" eval --checkpoint full/ema --dataset_dir=data --batch_size=16 --json > ema.json 2> ema.err ||
  { cat ema.err; fail "eval --checkpoint full/ema"; }
"$FASTNN" eval --checkpoint full --dataset_dir=data --batch_size=16 --json > raw.json 2> raw.err ||
  { cat raw.err; fail "eval --checkpoint full"; }
"$PY" - ema.json raw.json full.log <<'PY' || fail "eval of the averages"
import json, re, sys
ema, raw = (json.load(open(f)) for f in sys.argv[1:3])
assert ema["step"] == raw["step"] == 8 and ema["num_examples"] == 32, (ema, raw)
assert ema["loss"] != raw["loss"], ("the averaged model evaluates as the raw one", ema, raw)
# train's own evaluation of the averages at the end says what eval --checkpoint full/ema says
m = re.search(r"eval of the moving averages at step 8 \(test, 32 examples\): top1 ([0-9.]+)  top5 ([0-9.]+)  loss ([0-9.]+)",
              open(sys.argv[3]).read())
assert m, "train printed no evaluation of the moving averages"
assert abs(float(m.group(1)) - ema["top1"]) < 1e-4 and abs(float(m.group(3)) - ema["loss"]) < 1e-4, (m.groups(), ema)
# ... and metrics.jsonl has it beside the weights' evaluation
lines = [json.loads(l) for l in open("full/metrics.jsonl")]
avg = [l for l in lines if l["event"] == "eval_moving_averages"]
raw_line = [l for l in lines if l["event"] == "eval"]
assert len(avg) == 1 and avg[0]["step"] == 8 and abs(avg[0]["loss"] - ema["loss"]) < 1e-6, avg
assert len(raw_line) == 1 and abs(raw_line[0]["loss"] - raw["loss"]) < 1e-6, raw_line
PY
"$FASTNN" predict --checkpoint full/ema --input data --device=cpu -q -o pred.jsonl || fail "predict --checkpoint full/ema"
[ "$(wc -l < pred.jsonl)" -ge 32 ] || fail "predict wrote $(wc -l < pred.jsonl) lines"
"$FASTNN" export --checkpoint full/ema -o ema.onnx -q || fail "export --checkpoint full/ema"
[ -s ema.onnx ] || fail "no ema.onnx"

# Stopped at step 4, continued to 8: the same averages as the uninterrupted run.
"$FASTNN" train "${args[@]}" --output_dir=part --stop_at_step=4 > part1.log 2>&1 || { cat part1.log; fail "train to 4"; }
"$FASTNN" train "${args[@]}" --output_dir=part --stop_at_step=8 > part2.log 2>&1 || { cat part2.log; fail "continue to 8"; }
grep -q "resumed from part/ckpt-4" part2.log || { cat part2.log; fail "the second start did not resume"; }
"$PY" "$COMPARE" full/ema/ckpt-8.weights.safetensors part/ema/ckpt-8.weights.safetensors --atol 0 --rtol 0 ||
  fail "the resumed run's averages differ from the uninterrupted run's"

# Refusals.
"$FASTNN" train "${args[@]}" --output_dir=bad --stop_at_step=2 --moving_average_decay=1 > bad.log 2>&1 &&
  fail "moving_average_decay=1 accepted"
grep -q "moving_average_decay must be in (0, 1)" bad.log || { cat bad.log; fail "decay 1: message"; }
rm part/ema/ckpt-8.*
"$FASTNN" train "${args[@]}" --output_dir=part --stop_at_step=12 > lost.log 2>&1 && fail "resumed without its averages"
grep -q "part/ema/ckpt-8" lost.log || { cat lost.log; fail "the missing averages are not named"; }
# --overwrite starts over without the old run's averages.
"$FASTNN" train "${args[@]}" --output_dir=full --stop_at_step=4 --overwrite > over.log 2>&1 || { cat over.log; fail "overwrite"; }
[ ! -e full/ema/ckpt-8.weights.safetensors ] && [ -f full/ema/ckpt-4.weights.safetensors ] ||
  { ls full/ema; fail "--overwrite kept the old averages or saved none"; }
echo "train_moving_average: ok"
