#!/usr/bin/env bash
# `mpirun -np N fastnn convert` writes byte-for-byte what one process writes, for every converter and
# N = 2, 3 (Fashion-MNIST, crops of the real photographs as an image folder and as base64-TSV, the
# Fashion-MNIST shards as a TFRecord input, generated CIFAR-10 batches, synthetic images). A rank killed
# mid-way ends the job within 10 s with nothing final-named; ranks that do not share the output folder
# are refused with a message; a refusal, and a check that fails, are said once, by rank 0.
source "$2/tests/integration/mpi_helpers.bash"
source "$SRC/tests/integration/convert_helpers.bash"  # gen, photos, same_files (it recreates $SCRATCH)
set +e +o pipefail  # run_np reads the exit status itself
cd "$SCRATCH" || exit 1
FM=${FASTNN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
[ -f "$FM/train-images-idx3-ubyte.gz" ] || { echo "SKIP: no Fashion-MNIST in $FM"; exit 77; }

# same_bytes NAME FORMAT ARGS...: one process, then 2 and 3 ranks; every file of the three outputs equal.
same_bytes() {
  local name=$1; shift
  "$FASTNN" convert "$@" -o "$name.1" -q > "$name.1.txt" || fail "$name: one process"
  for np in 2 3; do
    run_np 120 "$name.$np" "$np" "$FASTNN" convert "$@" -o "$name.$np" -q
    [ "$RC" = 0 ] || fail "$name: $np ranks exited $RC"
    same_files "$name.1" "$name.$np"
  done
  echo "--- $name: 1, 2 and 3 ranks byte-identical ($(ls "$name.1" | wc -l) files)"
}

same_bytes fashion mnist -i "$FM" --num-gpus 2 --shards-per-gpu 2 --seed 5 --stratify
same_bytes tfrecord tfrecord -i "fashion.1/test-*.tfrecord" --split train --num-gpus 3 --seed 6 --remainder pad

photos photos daisy:21 roses:13
same_bytes folder image-folder -i photos --validation-fraction 0.25 --resize-shorter-side 24 --num-gpus 2 --seed 7
label=0
for class in daisy roses; do  # one file per class: the ranks index the files between them
  for f in photos/$class/*.jpg; do printf '%s\t%d\n' "$(base64 -w0 "$f")" "$label"; done > "$class.tsv"
  label=1
done
same_bytes tsv base64-tsv -i daisy.tsv -i roses.tsv --num-gpus 2 --shards-per-gpu 2 --seed 8

gen cifar10 cifar 12
same_bytes cifar cifar10 -i cifar --num-gpus 2 --shards-per-gpu 1 --seed 9
same_bytes synthetic synthetic --num-records 500 --num-test-records 50 --image-format jpeg --num-gpus 4 --seed 10

# check under mpirun: the shards split over the ranks, one report, the same as one process's.
without_seconds() { "$PY" -c 'import json,sys; j=json.load(sys.stdin); j.pop("seconds",None); print(json.dumps(j,sort_keys=True))'; }
"$FASTNN" check fashion.1 --json -q | without_seconds > check.1.json || fail "check in one process"
run_np 60 check3 3 "$FASTNN" check fashion.1 --json -q
[ "$RC" = 0 ] || fail "check under mpirun exited $RC"
grep '^{' check3.log | without_seconds | cmp -s - check.1.json || fail "check under mpirun reported otherwise"
[ "$(grep -c '^{' check3.log)" = 1 ] || fail "more than one rank printed the report"
# ... and its --report page: the same data block (sizes, channel statistics, sample thumbnails).
"$FASTNN" check fashion.1 -q --report page.1.html --report-stats-records 2000 > /dev/null || fail "check --report"
run_np 60 page3 3 "$FASTNN" check fashion.1 -q --report page.3.html --report-stats-records 2000
[ "$RC" = 0 ] || fail "check --report under mpirun exited $RC"
PYTHONPATH="$SRC/tests/integration" "$PY" - <<'PYEOF' || fail "check --report under mpirun drew another page"
import report_page_data as rp
a, b = rp.parse("page.1.html").data, rp.parse("page.3.html").data
for d in (a, b):
    d.pop("seconds", None)
assert a == b, [k for k in a if a[k] != b.get(k)]
assert a["samples"] and a["channel_stats"], "the page has no samples or statistics"
PYEOF
# ... and of shards without a manifest (TF-slim's layout: the shards and labels.txt).
mkdir -p plain && cp fashion.1/*.tfrecord fashion.1/labels.txt plain/
"$FASTNN" check plain --json -q | without_seconds > plain.1.json || fail "plain check in one process"
run_np 60 plain3 3 "$FASTNN" check plain --json -q
[ "$RC" = 0 ] || fail "plain check under mpirun exited $RC"
grep '^{' plain3.log | without_seconds | cmp -s - plain.1.json || fail "plain check under mpirun reported otherwise"
# ... and of a damaged shard set: the report and the failure said once, by rank 0, before any rank exits
# (mpirun ends the job when the first rank exits non-zero; the others wait until rank 0 has printed).
mkdir -p damaged && cp fashion.1/* damaged/
"$PY" - damaged/train-00001-of-00004.tfrecord <<'PYEOF' || fail "damaging a shard"
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0xFF  # one payload byte: its record's CRC no longer matches
open(sys.argv[1], "wb").write(b)
PYEOF
run_np 60 damaged3 3 "$FASTNN" check damaged --json -q
[ "$RC" != 0 ] || fail "check of a damaged shard set under mpirun exited 0"
[ "$(grep -c '^{' damaged3.log)" = 1 ] || { cat damaged3.log; fail "the damaged set's report: not printed once"; }
[ "$(grep -c 'check failed with' damaged3.log)" = 1 ] || { cat damaged3.log; fail "the failure: not said once"; }

# A refusal (the output exists) is said once, by rank 0, and the job fails.
run_np 60 refuse 3 "$FASTNN" convert mnist -i "$FM" -o fashion.2 -q
[ "$RC" != 0 ] || fail "an existing output was overwritten"
[ "$(grep -c 'already holds a finished output' refuse.log)" = 1 ] || fail "the refusal should be said once"

# Ranks that do not see one folder (each its own working directory, a relative --output) are refused.
mkdir -p here there
run_np 60 unshared 1 --wdir here "$FASTNN" convert mnist -i "$FM" -o out -q : -np 1 --wdir there "$FASTNN" \
  convert mnist -i "$FM" -o out -q
[ "$RC" != 0 ] || fail "ranks with different output folders were accepted"
grep -q "rank 1 of 2: on .* the output folder out that rank 0 (on .*) prepared is not there" unshared.log ||
  fail "no message naming the unshared folder"
[ ! -e here/out ] && [ -z "$(ls -A there)" ] || fail "something was left behind"

# kill -9 of rank 1 while it writes: mpirun ends the job; nothing final-named is left; a rerun finishes.
( timeout -k 5 60 mpirun --oversubscribe -np 2 "$FASTNN" convert synthetic --num-records 3000000 --height 48 \
    --width 48 --channels 3 -o killed -q > killed.log 2>&1; echo $? > killed.rc ) &
job=$!
victim=
for _ in $(seq 100); do
  sleep 0.1
  for p in $(pgrep -f "convert synthetic --num-records 3000000" || true); do
    if tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then victim=$p; fi
  done
  [ -n "$victim" ] && ls -A killed 2> /dev/null | grep -q 'tfrecord.fastnn-tmp' && break
done
[ -n "$victim" ] || fail "rank 1 never started writing"
kill -9 "$victim"
start=$SECONDS
wait "$job"
elapsed=$((SECONDS - start))
cat killed.log
echo "--- killed: the job ended ${elapsed}s after rank 1 was killed"
[ "$(cat killed.rc)" != 0 ] || fail "the job survived a killed rank"
[ "$elapsed" -le 10 ] || fail "the job took ${elapsed}s to end after rank 1 was killed"
[ -z "$(ls killed)" ] || fail "final-named files after the kill: $(ls killed)"
run_np 60 rerun 2 "$FASTNN" convert synthetic --num-records 300 -o killed
[ "$RC" = 0 ] || fail "the rerun into the killed job's folder failed"
[ -z "$(ls -A killed | grep fastnn-tmp)" ] || fail "the rerun left the killed job's temporaries"
echo PASS
