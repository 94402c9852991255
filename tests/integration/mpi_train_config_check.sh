#!/usr/bin/env bash
# One configuration per job (docs/DISTRIBUTED.md): 2 ranks started with different learning rates are
# refused at start on every rank, naming the field and each rank's value (an agreed error, not an
# abort); 2 ranks whose datasets give different class counts (dataset_dir is rank-local) are refused
# naming the first differing variable instead of dying in the broadcast with MPI_ERR_TRUNCATE.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

for n in 10 12; do
  "$FASTNN" convert synthetic --output data$n --num-gpus 2 --num-records 128 --num-test-records 0 \
    --height 28 --width 28 --channels 1 --num-classes $n --image-format png -q > /dev/null || fail "convert"
done
args=(train --model_name=mlp --optimizer=momentum --learning_rate_decay_type=fixed --batch_size=8 --stop_at_step=4
      --seed=9 --num_preprocessing_threads=1 --output_dir=run)

start=$SECONDS
timeout -k 5 120 mpirun --oversubscribe -np 1 "$FASTNN" "${args[@]}" --dataset_dir=data10 --learning_rate=0.01 \
  : -np 1 "$FASTNN" "${args[@]}" --dataset_dir=data10 --learning_rate=0.02 > lr.log 2>&1
rc=$?
echo "--- lr: rc=$rc after $((SECONDS - start))s"; tail -n 20 lr.log
[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "different learning rates: rc $rc"
grep -q "different configurations: learning_rate (rank 0: 0.01, rank 1: 0.02)" lr.log || fail "the field and ranks should be named"
grep -q "aborting the job" lr.log && fail "an agreed refusal should not abort the job"
[ ! -f run/ckpt-4.meta.pbtxt ] || fail "the refused job trained"

timeout -k 5 120 mpirun --oversubscribe -np 1 "$FASTNN" "${args[@]}" --dataset_dir=data10 --learning_rate=0.01 \
  : -np 1 "$FASTNN" "${args[@]}" --dataset_dir=data12 --learning_rate=0.01 --output_dir=run12 > model.log 2>&1
rc=$?
echo "--- model: rc=$rc"; tail -n 20 model.log
[ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "different models: rc $rc"
grep -q "build different models.*first difference at #[0-9]*: rank 0 [^ ]* \[10" model.log || fail "the variable should be named"
grep -q "MPI_ERR_TRUNCATE" model.log && fail "a raw MPI error instead of a message"
echo "config check ok"
