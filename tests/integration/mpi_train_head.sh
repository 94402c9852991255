#!/usr/bin/env bash
# The classifier head under mpirun (docs/LARGE_SCALE.md): 2 ranks x batch 8 end with the same weights
# as 1 process x batch 16 after 10 steps, for the sharded heads dist_softmax and dist_arcface (class
# rows split over the ranks) and the replicated arcface head; the metrics (loss, accuracy, evaluation)
# agree. sync_batch_norm makes the embedding's batch norm see the global batch, as one process does.
# Tolerances: float32 sums in another order; the margin losses (scale 8, a margin) amplify that to
# ~0.5% in the embedding batch norm's moving statistics after 10 steps (agreement to 6e-8 after one step;
# the head alone equals one process to 1e-12 in double:
# tests/unit/head/classifier_test.cpp); a control run at 1 x 8 must differ beyond them.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

"$FASTNN" convert synthetic --output data --num-gpus 2 --shards-per-gpu 2 --num-records 128 --num-test-records 40 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
base=(--model_name=mlp --dataset_dir=data --optimizer=momentum --learning_rate=0.05 --learning_rate_decay_type=fixed
      --stop_at_step=10 --shuffle_buffer_size=0 --weight_decay=0.001 --max_gradient_norm=5.0
      --log_loss_every_n_iters=5 --save_checkpoints_steps=0 --seed=5 --num_preprocessing_threads=1
      --num_parallel_batches=1 --prefetch_buffer_size=2 --emb_dim=16 --sync_batch_norm=true --scale=8 --device=cpu)

for loss in dist_softmax dist_arcface arcface; do
  args=("${base[@]}" --loss_type=$loss)
  "$FASTNN" train "${args[@]}" --batch_size=16 --output_dir=one-$loss > one-$loss.log 2>&1 \
    || { cat one-$loss.log; fail "$loss: 1 x 16"; }
  run_np 90 two-$loss 2 "$FASTNN" train "${args[@]}" --batch_size=8 --output_dir=two-$loss
  [ "$RC" = 0 ] || fail "$loss: 2 ranks x 8 failed (rc $RC)"
  tol=(--atol 2e-5 --rtol 1e-4)
  [ $loss = dist_softmax ] || tol=(--atol 1e-3 --rtol 1e-2)
  $PY "$COMPARE" one-$loss/ckpt-10.weights.safetensors two-$loss/ckpt-10.weights.safetensors "${tol[@]}" \
    || fail "$loss: 2 ranks x 8 and 1 x 16 end with different weights"
  if [ $loss = dist_arcface ]; then
    "$FASTNN" train "${args[@]}" --batch_size=8 --output_dir=half > half.log 2>&1 || { cat half.log; fail "1 x 8"; }
    $PY "$COMPARE" one-$loss/ckpt-10.weights.safetensors half/ckpt-10.weights.safetensors "${tol[@]}" --differ \
      || fail "control: 1 x 8 should differ from 1 x 16 beyond the tolerance"
  fi
  $PY - one-$loss/metrics.jsonl two-$loss/metrics.jsonl $loss <<'PY' || fail "$loss: metrics of 2 ranks differ from 1 process"
import json, sys
a, b = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert [e["event"] for e in a] == [e["event"] for e in b] == ["train", "train", "eval"], (a, b)
for x, y in zip(a, b):
    assert abs(x["loss"] - y["loss"]) < 1e-4 * max(1.0, abs(x["loss"])) * (1 if "softmax" in sys.argv[3] else 10), ("loss", x, y)
    if x["event"] == "eval":
        assert x["num_examples"] == y["num_examples"] == 40, ("every test example once", x, y)
        assert abs(x["top1"] - y["top1"]) < 1e-9, ("eval", x, y)
print("metrics agree:", b[-1])
PY
done
grep -q "Head/weights" one-arcface/ckpt-10.meta.pbtxt one-arcface/ckpt-10.weights.safetensors \
  || fail "the replicated head's weights should be in the checkpoint"
echo PASS
