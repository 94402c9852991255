#!/usr/bin/env bash
# kill -9 (and SIGTERM) in the middle of a conversion: no final-named file exists afterwards (only
# temporaries), and a rerun into the same folder removes them and succeeds with output identical to an
# uninterrupted run.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

args=(convert synthetic --num-records 12000 --height 64 --width 64 --image-format jpeg --num-classes 10
      --num-gpus 2 --shards-per-gpu 2 --threads 2 -q)
"$FASTNN" "${args[@]}" -o out &
pid=$!
# Wait until shard temporaries hold data, then kill.
for _ in $(seq 1 400); do
  if [ -n "$(find out -name '.train-*.fastnn-tmp' -size +20k 2>/dev/null | head -1)" ]; then break; fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.02
done
kill -9 $pid 2>/dev/null || fail "the conversion ended before it could be killed (make it bigger)"
wait $pid 2>/dev/null || true
ls -A out
finals=$(ls out | grep -v '^\.' || true)
[ -z "$finals" ] || fail "final-named files after kill -9: $finals"
ls -A out | grep -q 'fastnn-tmp$' || fail "expected leftover temporaries"

"$FASTNN" "${args[@]}" -o out 2> rerun.err
grep -q "left by an interrupted run" rerun.err || { cat rerun.err; fail "rerun should report the cleanup"; }
! ls -A out | grep -q 'fastnn-tmp$' || fail "temporaries left after the rerun"
"$FASTNN" check out -q > /dev/null || fail "check after rerun"
"$FASTNN" "${args[@]}" -o fresh
same_files out fresh
# The rerun could prove authorship (.fastnn-incomplete, written before the first shard and removed
# after the manifest); files named like output that fastnn cannot prove it wrote are kept and named.
[ ! -e out/.fastnn-incomplete ] || fail "ownership file left after a finished conversion"
mkdir -p foreign && echo mine > foreign/train-00000-of-00004.tfrecord && echo mine > foreign/labels.txt
expect_fail "train-00000-of-00004.tfrecord" "labels.txt" "--overwrite" -- "$FASTNN" "${args[@]}" -o foreign
[ "$(cat foreign/train-00000-of-00004.tfrecord)" = mine ] || fail "a file fastnn did not write was changed"
[ "$(cat foreign/labels.txt)" = mine ] || fail "labels.txt fastnn did not write was changed"
"$FASTNN" "${args[@]}" -o foreign --overwrite
same_files foreign fresh
# SIGTERM (a scheduler's stop) ends a conversion the same way: non-zero, nothing final-named.
"$FASTNN" "${args[@]}" -o term &
pid=$!
for _ in $(seq 1 400); do
  if [ -n "$(find term -name '.train-*.fastnn-tmp' -size +20k 2>/dev/null | head -1)" ]; then break; fi
  kill -0 $pid 2>/dev/null || break
  sleep 0.02
done
kill -TERM $pid 2>/dev/null || fail "the conversion ended before SIGTERM (make it bigger)"
rc=0
wait $pid || rc=$?
[ "$rc" != 0 ] || fail "a conversion stopped by SIGTERM exited 0"
finals=$(ls term | grep -v '^\.' || true)
[ -z "$finals" ] || fail "final-named files after SIGTERM: $finals"
"$FASTNN" "${args[@]}" -o term 2> term.err || { cat term.err; fail "rerun after SIGTERM"; }
same_files term fresh
echo PASS
