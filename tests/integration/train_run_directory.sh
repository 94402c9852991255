#!/usr/bin/env bash
# A run directory belongs to one run (docs/TRAINING.md): a second `fastnn train` into a folder holding
# a run continues it when the configuration is the same and is refused (naming the field) otherwise;
# a concurrent second train is refused at once naming the pid, while eval reads; --overwrite starts
# over removing only fastnn's files; SIGTERM saves a checkpoint at the current step and exits 143, and
# --resume then ends bitwise where an uninterrupted run ends; kill -9 with a torn metrics line, then
# --resume, leaves metrics.jsonl valid with each step once; a damaged latest checkpoint is reported by
# eval and set aside (renamed) by --resume.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
CHECK="python3 $SRC/tests/integration/check_metrics.py"

"$FASTNN" convert synthetic --output data --num-gpus 1 --num-records 640 --num-test-records 100 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
args=(--model_name=lenet --dataset_dir=data --batch_size=16 --optimizer=momentum --learning_rate=0.01
      --learning_rate_decay_type=fixed --log_loss_every_n_iters=10 --save_checkpoints_steps=20 --seed=3
      --deterministic --num_preprocessing_threads=2 --eval_every_n_steps=40)

# The uninterrupted reference, 120 steps.
"$FASTNN" train "${args[@]}" --stop_at_step=120 --output_dir=full > full.log 2>&1 || { cat full.log; fail "reference"; }

# 1. Same configuration, a later stop: continued (and said so); another learning rate: refused.
"$FASTNN" train "${args[@]}" --stop_at_step=40 --output_dir=again > a1.log 2>&1 || { cat a1.log; fail "first run"; }
"$FASTNN" train "${args[@]}" --stop_at_step=60 --output_dir=again > a2.log 2>&1 || { cat a2.log; fail "continue"; }
grep -q "holds a run with the same configuration (checkpoint at step 40): continuing it" a2.log || { cat a2.log; fail "continue not logged"; }
grep -q "steps 40 -> 60" a2.log || fail "the continued run should start at 40"
$CHECK again/metrics.jsonl 60 || fail "metrics after continuing"
cp -r again again.before
"$FASTNN" train "${args[@]}" --stop_at_step=60 --learning_rate=0.02 --output_dir=again > a3.log 2>&1 && fail "another config accepted"
grep -q "learning_rate (saved 0.01, now 0.02)" a3.log || { cat a3.log; fail "refusal should name the field"; }
grep -q -- "--overwrite" a3.log || fail "refusal should offer --overwrite"
diff -r -x .fastnn-run.lock again again.before > /dev/null || fail "a refused run changed the folder"

# 2. --overwrite: only fastnn's files go.
echo "my notes" > again/notes.txt
"$FASTNN" train "${args[@]}" --stop_at_step=20 --learning_rate=0.02 --output_dir=again --overwrite > a4.log 2>&1 \
  || { cat a4.log; fail "--overwrite"; }
[ -f again/notes.txt ] || fail "--overwrite removed a file fastnn did not write"
[ ! -f again/ckpt-60.meta.pbtxt ] || fail "--overwrite kept the old checkpoints"
$CHECK again/metrics.jsonl 20 || fail "metrics after --overwrite"
"$FASTNN" train "${args[@]}" --output_dir=again --overwrite --resume > a5.log 2>&1 && fail "--resume --overwrite accepted"

# 3. Two concurrent trainings: the second is refused at once naming the pid; eval reads meanwhile.
"$FASTNN" train "${args[@]}" --stop_at_step=100000 --output_dir=busy > busy.log 2> busy.err &
pid=$!
for _ in $(seq 1200); do [ -f busy/ckpt-20.meta.pbtxt ] && break; sleep 0.05; done
[ -f busy/ckpt-20.meta.pbtxt ] || { kill -9 $pid; cat busy.err; fail "no checkpoint from the busy run"; }
start=$SECONDS
"$FASTNN" train "${args[@]}" --stop_at_step=100000 --output_dir=busy > second.log 2>&1 && fail "second train ran"
[ $((SECONDS - start)) -lt 20 ] || fail "the second train was not refused at once"
grep -q "in use by another fastnn train (pid $pid)" second.log || { cat second.log; fail "refusal should name the pid"; }
"$FASTNN" eval "${args[@]}" --output_dir=busy --json > busy.json || fail "eval of a locked run directory"

# 4. SIGTERM: a checkpoint at the current step, exit 143; --resume continues from it.
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" = 143 ] || { cat busy.err; fail "SIGTERM exit status $rc, expected 143"; }
step=$(sed -n 's/.*stopped by signal 15 after step \([0-9]*\) .*/\1/p' busy.err)
[ -n "$step" ] || { cat busy.err; fail "no 'stopped by signal' message"; }
[ -f "busy/ckpt-$step.meta.pbtxt" ] || fail "no checkpoint at the stopping step $step"
$CHECK busy/metrics.jsonl || fail "metrics after SIGTERM"

"$FASTNN" train "${args[@]}" --stop_at_step=40 --output_dir=term > t1.log 2>&1 &
pid=$!
for _ in $(seq 1200); do grep -q "^step 10/" t1.log 2>/dev/null && break; sleep 0.05; done
kill -TERM $pid
wait $pid
rc=$?
if [ "$rc" = 143 ]; then
  "$FASTNN" train "${args[@]}" --stop_at_step=120 --output_dir=term --resume > t2.log 2>&1 || { cat t2.log; fail "resume after SIGTERM"; }
  grep -q "resumed from term/ckpt-" t2.log || fail "no resume after SIGTERM"
  cmp full/ckpt-120.weights.safetensors term/ckpt-120.weights.safetensors || fail "SIGTERM + resume: weights differ"
  cmp full/ckpt-120.optimizer.safetensors term/ckpt-120.optimizer.safetensors || fail "SIGTERM + resume: optimizer differs"
  $CHECK term/metrics.jsonl 120 || fail "metrics after SIGTERM + resume"
else
  echo "note: the 40-step run ended (rc $rc) before SIGTERM arrived"
fi

# 5. kill -9, plus a torn metrics line (a failed write), then --resume.
"$FASTNN" train "${args[@]}" --stop_at_step=120 --output_dir=killed > k1.log 2>&1 &
pid=$!
for _ in $(seq 1200); do [ -f killed/ckpt-40.meta.pbtxt ] && break; sleep 0.05; done
kill -9 $pid 2> /dev/null
wait $pid 2> /dev/null
printf '{"event":"train","step":9' >> killed/metrics.jsonl
"$FASTNN" train "${args[@]}" --stop_at_step=120 --output_dir=killed --resume > k2.log 2>&1 || { cat k2.log; fail "resume after kill -9"; }
$CHECK killed/metrics.jsonl 120 || fail "metrics after kill -9 + resume"
cmp full/ckpt-120.weights.safetensors killed/ckpt-120.weights.safetensors || fail "kill -9 + resume: weights differ"

# 6. A damaged latest checkpoint: eval names it; --resume sets it aside and continues from the last good one.
cp -r full damaged
python3 - damaged/ckpt-120.weights.safetensors <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0x5A; open(p, "wb").write(b)
PY
"$FASTNN" eval "${args[@]}" --output_dir=damaged > d1.log 2>&1 && fail "eval of a damaged checkpoint succeeded"
grep -q "damaged/ckpt-120 is damaged: .*CRC32C.*last good checkpoint is damaged/ckpt-100" d1.log || { cat d1.log; fail "eval message"; }
"$FASTNN" train "${args[@]}" --stop_at_step=120 --output_dir=damaged --resume > d2.log 2>&1 || { cat d2.log; fail "resume past damage"; }
grep -q "checkpoint damaged/ckpt-120 is damaged: .*set aside as" d2.log || { cat d2.log; fail "no damage warning"; }
[ -f damaged/ckpt-120.weights.safetensors.damaged ] || fail "the damaged file should be kept under another name"
cmp full/ckpt-120.weights.safetensors damaged/ckpt-120.weights.safetensors || fail "resumed past damage: weights differ"
$CHECK damaged/metrics.jsonl 120 || fail "metrics after resuming past damage"
echo "run directory ok"
