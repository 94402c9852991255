#!/usr/bin/env bash
# Checkpoints across world sizes: a 2-rank run (batch 8 per rank) writes ckpt-4; one process (batch
# 16, the same global batch) resumes it and trains on to step 8; 2 ranks resume that and train on to
# step 12 (across the epoch boundary at step 8). Each checkpoint must match an uninterrupted one-process run at batch 16 within float
# rounding: weights, momentum state and the data position carry over (the data position is the global
# step; docs/DISTRIBUTED.md). mlp, no shuffling: the exact case.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

"$FASTNN" convert synthetic --output data --num-gpus 2 --shards-per-gpu 2 --num-records 128 --num-test-records 0 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
args=(--model_name=mlp --dataset_dir=data --optimizer=momentum --momentum=0.9 --learning_rate=0.02
      --learning_rate_decay_type=fixed --shuffle_buffer_size=0 --log_loss_every_n_iters=4
      --save_checkpoints_steps=4 --seed=9 --num_preprocessing_threads=1 --num_parallel_batches=1
      --prefetch_buffer_size=2)
same() {  # same STEP: the resumed run's checkpoint STEP agrees with the uninterrupted one's
  $PY "$COMPARE" ref/ckpt-$1.weights.safetensors run/ckpt-$1.weights.safetensors --atol 2e-6 --rtol 1e-4 \
    || fail "weights at step $1 differ from the uninterrupted run"
  $PY "$COMPARE" ref/ckpt-$1.optimizer.safetensors run/ckpt-$1.optimizer.safetensors --atol 2e-6 --rtol 1e-3 \
    || fail "momentum at step $1 differs from the uninterrupted run"
}

"$FASTNN" train "${args[@]}" --batch_size=16 --stop_at_step=12 --output_dir=ref > ref.log 2>&1 \
  || { cat ref.log; fail "reference run"; }

run_np 60 two 2 "$FASTNN" train "${args[@]}" --batch_size=8 --stop_at_step=4 --output_dir=run
[ "$RC" = 0 ] || fail "2-rank run (rc $RC)"
grep -q "world_size: 2" run/ckpt-4.meta.pbtxt || fail "ckpt-4 should record world_size 2"
same 4

"$FASTNN" train "${args[@]}" --batch_size=16 --stop_at_step=8 --output_dir=run --resume > one.log 2>&1 \
  || { cat one.log; fail "resume on 1 process"; }
grep -q "resumed from run/ckpt-4 at step 4" one.log || { cat one.log; fail "1 process did not resume ckpt-4"; }
grep -q "^step 8/8 " one.log || fail "1 process did not train on to step 8"
grep -q "world_size: 1" run/ckpt-8.meta.pbtxt || fail "ckpt-8 should record world_size 1"
same 8
$PY "$COMPARE" run/ckpt-4.weights.safetensors run/ckpt-8.weights.safetensors --atol 2e-6 --rtol 1e-4 --differ \
  || fail "control: the weights did not change between steps 4 and 8"

run_np 60 back 2 "$FASTNN" train "${args[@]}" --batch_size=8 --stop_at_step=12 --output_dir=run --resume
[ "$RC" = 0 ] || fail "resume on 2 ranks (rc $RC)"
grep -q "resumed from run/ckpt-8 at step 8" back.log || fail "2 ranks did not resume ckpt-8"
same 12
echo PASS
