#!/usr/bin/env bash
# The habits users bring (docs/CONFIG.md "Other names"), through the real CLI on a small synthetic set:
#  - TF-slim's train_image_classifier.py flags: --train_dir, --max_number_of_steps, --log_every_n_steps,
#    --save_interval_secs (a checkpoint by the clock, besides the step ones), --save_summaries_secs,
#    --dataset_split_name; eval_image_classifier's --dataset_split_name picks the split evaluated;
#  - timm's --lr, --epochs, --bn_momentum; a flat YAML config (args.yaml habit) and a JSON one;
#  - usage errors exit 2 in train (an unknown flag, a bad value) with did-you-mean; `fastnn trian` and
#    --model_name=resnet50 suggest the right names; aux_logits is a field;
#  - eval without --dataset_dir evaluates on the run's data; a finished run rerun says so with its final eval;
#    train -q and --json.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

expect() {  # code, pattern in stdout+stderr, then the command
  local want=$1 pattern=$2; shift 2
  timeout 120 "$@" > out.txt 2>&1 < /dev/null
  local rc=$?
  [ "$rc" = "$want" ] || { tail -20 out.txt; fail "$*: exit $rc, expected $want"; }
  [ -z "$pattern" ] || grep -Eq -- "$pattern" out.txt || { tail -20 out.txt; fail "$*: output lacks /$pattern/"; }
}

"$FASTNN" convert synthetic --output data --num-gpus 1 --shards-per-gpu 1 --num-records 96 --num-test-records 16 \
  --height 28 --width 28 --channels 1 --num-classes 4 --image-format png -q > /dev/null || fail "convert"

# TF-slim's names. A tiny save_interval_secs saves by the clock at every step whose start is that long
# after the last save: at least every other step (a step right after a save may start within it), where
# save_checkpoints_steps (1000) alone saves only the last.
expect 0 "" "$FASTNN" train --model_name=mlp --dataset_dir=data --train_dir=slim --max_number_of_steps=6 \
  --log_every_n_steps=3 --save_interval_secs=0.001 --save_summaries_secs=3600 --dataset_split_name=train \
  --batch_size=8 --device=cpu --keep_checkpoint_max=0
grep -q "^step 3/6" out.txt && grep -q "^step 6/6" out.txt || fail "log_every_n_steps=3 did not log steps 3 and 6"
n=$(ls slim/ckpt-*.meta.pbtxt | wc -l)
[ "$n" -ge 3 ] || { ls slim; fail "save_interval_secs saved $n checkpoints in 6 steps"; }
# One TensorBoard write of the training scalars (the first log step), not two, within the hour.
n=$(grep -c '"event": *"train"' slim/metrics.jsonl)
[ "$n" = 2 ] || fail "metrics.jsonl has $n train lines, not 2"
expect 0 "evaluation \(train\) is not held out" "$FASTNN" eval --dataset_dir=data --output_dir=slim --dataset_split_name=train
expect 1 "no validation split" "$FASTNN" eval --dataset_dir=data --output_dir=slim --dataset_split_name=validation
# eval takes the run's data when none is named, and says so.
expect 0 "evaluating on data, the run's data" "$FASTNN" eval --output_dir=slim --json
grep -q '"num_examples":16' out.txt || { cat out.txt; fail "eval without dataset_dir did not evaluate the run's 16 test records"; }
# A finished run rerun unchanged trains nothing, says so, and prints the final eval it recorded.
expect 0 "slim already reached step 6: nothing to train" "$FASTNN" train --model_name=mlp --dataset_dir=data \
  --train_dir=slim --max_number_of_steps=6 --log_every_n_steps=3 --save_interval_secs=0.001 \
  --save_summaries_secs=3600 --dataset_split_name=train --batch_size=8 --device=cpu --keep_checkpoint_max=0
grep -q "^final eval: top1" out.txt || { cat out.txt; fail "the finished run's rerun printed no final eval"; }
# train -q: warnings and the summary only; --json: one JSON object on stdout, no step lines.
"$FASTNN" train --model_name=mlp --dataset_dir=data --output_dir=quiet --stop_at_step=4 --log_every_n_steps=1 \
  --batch_size=8 --device=cpu -q > q.out 2> q.err || { cat q.out q.err; fail "train -q"; }
! grep -q "^step " q.out && ! grep -q "^I " q.err || { cat q.out q.err; fail "train -q printed step or info lines"; }
grep -q "^trained 4 steps" q.out || { cat q.out; fail "train -q printed no summary"; }
"$FASTNN" train --model_name=mlp --dataset_dir=data --output_dir=json_run --stop_at_step=4 --log_every_n_steps=1 \
  --batch_size=8 --device=cpu --json > j.out 2> /dev/null || fail "train --json"
python3 -c 'import json,sys; l=open(sys.argv[1]).read().splitlines(); assert len(l)==1, l; j=json.loads(l[0]); assert j["step"]==4 and j["eval"]["num_examples"]==16, j' j.out ||
  { cat j.out; fail "train --json is not one summary object"; }

# timm's names, and configs in YAML and JSON.
cat > args.yaml <<'Y'
model: mlp
lr: 0.05
epochs: 1
batch_size: 8
bn_momentum: 0.1
stop_at_step: 2
device: cpu
Y
expect 0 "" "$FASTNN" train --config args.yaml --dataset_dir=data --output_dir=timm
grep -q 'batch_norm_decay: 0.9' timm/ckpt-2.meta.pbtxt || fail "bn_momentum 0.1 is not batch_norm_decay 0.9"
printf '{"model_name": "mlp", "stop_at_step": 2, "batch_size": 8, "device": "cpu"}' > job.json
expect 0 "" "$FASTNN" train --config job.json --dataset_dir=data --output_dir=json
printf 'model: mlp\naa: rand-m9-mstd0.5\njsd_loss: true\n' > other.yaml
expect 2 "2 key\(s\) that are not job config fields: aa, jsd_loss" "$FASTNN" train --config other.yaml --dataset_dir=data

# Usage errors exit 2 with suggestions; names that were refused now work or say what they mean.
expect 2 "did you mean --learning_rate" "$FASTNN" train --learnig_rate=0.1 --dataset_dir=data
expect 2 "batch_size is an int" "$FASTNN" train --batch_size=lots --dataset_dir=data
expect 2 "did you mean train" "$FASTNN" trian --model_name=mlp
expect 1 "did you mean resnet_v1_5_50 \(torchvision's and timm's resnet50\), resnet_v1_50" "$FASTNN" train --model_name=resnet50 --dataset_dir=data --device=cpu
expect 0 "aux_logits" "$FASTNN" train --help
echo "habits accepted"
