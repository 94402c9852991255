#!/usr/bin/env bash
# "Never hang" in data-parallel training: while 2 ranks train, (1) rank 1 is killed with SIGKILL: the
# job must exit non-zero soon after (mpirun notices the dead process); (2) rank 1 is stopped with
# SIGSTOP (alive but stuck): rank 0's gradient allreduce must time out after
# collective_timeout_seconds (5 s here), name itself, and abort the job. Both well within the outer
# timeout; without the guard (2) would hang forever. (3) an error on one rank aborts the job at once.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

"$FASTNN" convert synthetic --output data --num-gpus 2 --shards-per-gpu 1 --num-records 64 --num-test-records 0 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
args=(--model_name=lenet --dataset_dir=data --batch_size=4 --optimizer=sgd --learning_rate=0.01
      --stop_at_step=1000000 --log_loss_every_n_iters=1 --save_checkpoints_steps=0 --hooks=LoggingTensorHook
      --collective_timeout_seconds=5 --num_preprocessing_threads=1 --num_parallel_batches=1)

# signal_rank_1 SIGNAL RUN_DIR: waits for rank 0's step-3 log line (both ranks are in the loop), then
# signals the rank-1 process of the job whose output_dir is RUN_DIR; sets KILLED_AT.
signal_rank_1() {
  local sig=$1 dir=$2 pid=""
  for _ in $(seq 1800); do grep -q '^step 3/' "$dir.log" 2> /dev/null && break; sleep 0.05; done
  grep -q '^step 3/' "$dir.log" || { cat "$dir.log"; fail "$dir: training did not start"; }
  for p in $(pgrep -f -- "--output_dir=$dir\$"); do
    tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && pid=$p
  done
  [ -n "$pid" ] || fail "$dir: rank 1 not found"
  kill "-$sig" "$pid"
  KILLED_AT=$SECONDS
}

for case in kill stop; do
  sig=KILL; [ $case = stop ] && sig=STOP
  timeout -k 5 150 mpirun --oversubscribe -np 2 "$FASTNN" train "${args[@]}" --output_dir=$case > $case.log 2>&1 &
  job=$!
  signal_rank_1 $sig $case
  wait $job
  RC=$?
  down=$((SECONDS - KILLED_AT))
  echo "--- $case: rc=$RC, job ended ${down}s after SIG$sig to rank 1"; tail -n 15 $case.log
  [ "$RC" != 0 ] || fail "$case: the job survived"
  # mpirun exits 137 itself when a rank died of SIGKILL, so the outer timeout shows as time, not code.
  [ "$RC" != 124 ] && [ "$down" -lt 25 ] || fail "$case: took ${down}s to go down (rc $RC)"
done
grep -q "rank 0/2: collective allreduce_sum #[0-9]* ([0-9]* x float32) has not completed after" stop.log \
  || fail "stop: no collective-timeout message from rank 0's gradient allreduce"

# The model-parallel head (docs/LARGE_SCALE.md) adds its own collectives before the gradient allreduce
# (all-gather of features and labels, the softmax's max and sum allreduces, the reduce-scatter): a
# stopped rank 1 must time out there the same way, and a killed one end the job.
head=(--loss_type=dist_arcface --emb_dim=16 --num_classes=10)
for case in kill stop; do
  sig=KILL; [ $case = stop ] && sig=STOP
  timeout -k 5 150 mpirun --oversubscribe -np 2 "$FASTNN" train "${args[@]}" "${head[@]}" --output_dir=head-$case \
    > head-$case.log 2>&1 &
  job=$!
  signal_rank_1 $sig head-$case
  wait $job
  RC=$?
  down=$((SECONDS - KILLED_AT))
  echo "--- head $case: rc=$RC, job ended ${down}s after SIG$sig to rank 1"; tail -n 15 head-$case.log
  [ "$RC" != 0 ] || fail "head $case: the job survived"
  [ "$RC" != 124 ] && [ "$down" -lt 25 ] || fail "head $case: took ${down}s to go down (rc $RC)"
done
grep -Eq "rank 0/2: collective (allgather|allreduce_max|allreduce_sum|reduce_scatter) #[0-9]* .* has not completed after" \
  head-stop.log || fail "head stop: no collective-timeout message from rank 0"

# (3) An error on one rank only: rank 1's shard has a corrupt record, so rank 1 throws while rank 0 waits
# in the gradient allreduce. The collective timeout is 300 s here: the job must end long before it (the
# bound leaves room for start-up on a loaded CI machine), because rank 1 logs its error and aborts the
# job (MPI_Abort) instead of finalizing alone.
cp -r data bad && $PY - bad/train-00001-of-00002.tfrecord <<'PY' || fail "corrupt"
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[20] ^= 0xFF  # inside the first record's data: its CRC no longer matches
open(sys.argv[1], "wb").write(bytes(b))
PY
run_np 150 error 2 "$FASTNN" train "${args[@]}" --dataset_dir=bad --collective_timeout_seconds=300 --output_dir=error
[ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$ELAPSED" -lt 90 ] || fail "error on rank 1: rc $RC after ${ELAPSED}s"
grep -q "rank 1/2: .*aborting the job so that the other ranks do not wait" error.log \
  || fail "rank 1 should log its error and abort the job"
grep -q "train-00001-of-00002" error.log || fail "the error should name the corrupt file"
echo PASS
