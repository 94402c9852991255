#!/usr/bin/env bash
# moving_average_decay on 2 ranks (mpirun), with batch norm in the net (resnet_cifar_20): each rank
# averages the batch-norm statistics of its own batches, and what is evaluated and saved is their mean
# over the ranks, as the model's own statistics are.
#   - with a decay of 1e-6 the averages follow the variables step by step, so RUN/ema/ckpt-2 must equal
#     the run's own ckpt-2 (whose statistics are the ranks' mean) within 1e-5: with rank 0's statistics
#     alone it would not;
#   - the averages are evaluated during training on both ranks (the "eval of the moving averages" line),
#     and `fastnn eval --checkpoint RUN/ema` in one process gives the same top-1 and loss.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

"$FASTNN" convert synthetic --output data --num-gpus 2 --shards-per-gpu 2 --num-records 128 --num-test-records 32 \
  --height 32 --width 32 --channels 3 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
args=(--model_name=resnet_cifar_20 --dataset_dir=data --optimizer=momentum --learning_rate=0.05
      --learning_rate_decay_type=fixed --stop_at_step=2 --shuffle_buffer_size=0 --preprocessing_name=lenet
      --save_checkpoints_steps=2 --eval_every_n_steps=2 --seed=5 --num_preprocessing_threads=1
      --num_parallel_batches=1 --prefetch_buffer_size=2 --batch_size=8 --moving_average_decay=0.000001)

run_np 240 ema 2 "$FASTNN" train "${args[@]}" --output_dir=run
[ "$RC" = 0 ] || fail "2 ranks with moving averages failed (rc $RC)"
$PY "$COMPARE" run/ckpt-2.weights.safetensors run/ema/ckpt-2.weights.safetensors --atol 1e-6 --rtol 1e-5 ||
  fail "the saved averages' batch-norm statistics are not the ranks' mean"
line=$(grep "eval of the moving averages at step 2" ema.log) || { cat ema.log; fail "no evaluation of the averages"; }
"$FASTNN" eval --dataset_dir=data --output_dir=run --checkpoint=run/ema --json > eval.json 2> eval.err ||
  { cat eval.err; fail "eval of run/ema"; }
$PY - "$line" eval.json <<'PY' || fail "training's evaluation of the averages and fastnn eval of run/ema differ"
import json, re, sys
m = re.search(r"top1 ([0-9.]+)  top5 [0-9.]+  loss ([0-9.]+)", sys.argv[1])
j = json.load(open(sys.argv[2]))
top1, loss = float(m.group(1)), float(m.group(2))
assert abs(top1 - j["top1"]) < 1e-4 and abs(loss - j["loss"]) < 1e-3, (sys.argv[1], j["top1"], j["loss"])
print("averages evaluated alike:", top1, loss)
PY
echo PASS
