#!/usr/bin/env bash
# Resource flags are bounded against the machine (issue 18): --threads 200000 on convert, check and
# bench pipeline, and absurd num_parallel_batches / prefetch / shuffle buffer values are refused at
# once with the numbers, not after minutes or gigabytes, and never as an "internal error".
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
T="timeout 60"

"$FASTNN" convert synthetic --output "$SCRATCH/ok" --num-gpus 1 --num-records 16 --height 8 --width 8 \
  --channels 1 --num-classes 2 --image-format png -q > /dev/null
expect_fail "--threads 200000" "threads allowed" "cores" -- $T "$FASTNN" convert synthetic --output "$SCRATCH/o" \
  --num-gpus 1 --num-records 16 --threads 200000 -q
[ ! -e "$SCRATCH/o" ] || fail "a refused conversion created its output folder"
expect_fail "--threads 200000" "threads allowed" -- $T "$FASTNN" check "$SCRATCH/ok" --threads 200000
b=(bench pipeline --data "$SCRATCH/ok" --preset lenet --batch-size 4 --steps 2 --rounds 1 --warmup 0)
expect_fail "--threads 1000" "threads allowed" -- $T "$FASTNN" "${b[@]}" --threads 1000
expect_fail "prefetch_buffer_size 2000000000" -- $T "$FASTNN" "${b[@]}" --prefetch 2000000000
expect_fail "shuffle_buffer_size 4000000000" -- $T "$FASTNN" "${b[@]}" --shuffle-buffer 4000000000
for f in "$SCRATCH"/stderr.txt; do grep -q "internal error" "$f" && fail "internal error"; done
echo PASS
