#!/usr/bin/env bash
# fastnn predict under mpirun (docs/INFERENCE.md, "Many processes"): batch b is classified by rank
# b % world and rank 0 writes every line in input order, so the output is byte-for-byte the single
# process's at any rank count. Real inputs: the Fashion-MNIST test shards (Debian dataset-fashion-mnist;
# exit 77 when absent) and a folder of 301 PNG files, one of them not an image, with LeNet trained 30
# steps. Checked at 2 and 3 ranks with a batch size that leaves the last round part-empty:
#   - JSON lines (--output) and CSV (stdout) equal the single process's, the skipped image reported on
#     stderr once, by rank 0;
#   - --embeddings as .npy equals the single process's bytes; as .safetensors it holds the same rows;
#   - without --skip-bad the bad image ends every rank promptly (exit 1, its path named once), and no
#     output or embedding file is left behind;
#   - a setup error on every rank (a missing input) or on rank 0 alone (an output it cannot create) is
#     reported once with exit 1, without MPI_Abort.
source "$2/tests/integration/mpi_helpers.bash"
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
[ -f "$DATA_SRC/t10k-images-idx3-ubyte.gz" ] || { echo "SKIP: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf ./*

"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 2 -q > /dev/null || fail "convert"
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=64 --optimizer=momentum \
  --learning_rate=0.01 --stop_at_step=30 --device=cpu > train.log 2>&1 || { tail train.log; fail "train"; }
$PY "$SRC/tests/integration/fashion_pngs.py" "$DATA_SRC/t10k-images-idx3-ubyte.gz" images 300 || fail "pngs"
# Sorted after 00040.png: in batch 271 of the shards + images (rank 1 of 2 and of 3), batch 1 of the images alone.
printf 'not a png at all' > images/00040_bad.png

args=(--checkpoint run --input data --input images --device=cpu --batch_size=37 --top_k 3 --skip-bad)
"$FASTNN" predict "${args[@]}" --output ref.jsonl --embeddings ref.npy 2> ref.err || { cat ref.err; fail "predict, 1 process"; }
"$FASTNN" predict "${args[@]}" --format csv -q > ref.csv 2> /dev/null || fail "predict csv, 1 process"
[ "$(wc -l < ref.jsonl)" = 10300 ] || fail "1 process: $(wc -l < ref.jsonl) lines, want 10300"
grep -q "10300 inputs classified, 1 skipped" ref.err || { cat ref.err; fail "1 process summary"; }

for np in 2 3; do
  run_np 120 split-$np $np "$FASTNN" predict "${args[@]}" --output out-$np.jsonl --embeddings out-$np.npy
  [ "$RC" = 0 ] || fail "$np ranks: rc $RC"
  cmp ref.jsonl out-$np.jsonl || fail "$np ranks: JSON lines differ from 1 process"
  cmp ref.npy out-$np.npy || fail "$np ranks: embeddings differ from 1 process"
  [ "$(grep -c "skipping images/00040_bad.png" split-$np.log)" = 1 ] || fail "$np ranks: the bad image reported $(grep -c 00040_bad split-$np.log) times"
  grep -q "$np ranks, batch b on rank b % $np" split-$np.log || fail "$np ranks: no split line"
  grep -q "10300 inputs classified, 1 skipped" split-$np.log || fail "$np ranks: summary"
  timeout -k 5 120 mpirun --oversubscribe -np $np "$FASTNN" predict "${args[@]}" --format csv -q \
    --embeddings out-$np.safetensors > out-$np.csv 2> csv-$np.err || { cat csv-$np.err; fail "$np ranks: csv"; }
  cmp ref.csv out-$np.csv || fail "$np ranks: CSV differs from 1 process"
  $PY - ref.npy out-$np.safetensors <<'PY' || fail "$np ranks: safetensors embeddings differ from the .npy"
import json, struct, sys
npy = open(sys.argv[1], "rb").read()
hl = struct.unpack("<H", npy[8:10])[0]
st = open(sys.argv[2], "rb").read()
n = struct.unpack("<Q", st[:8])[0]
head = json.loads(st[8:8 + n])
e = head["embeddings"]
assert e["dtype"] == "F32" and e["shape"] == [10300, 1024], e
assert head["__metadata__"]["format"] == "fastnn-embeddings", head
b, end = e["data_offsets"]
assert st[8 + n + b:8 + n + end] == npy[10 + hl:] and 8 + n + end == len(st), "data differ"
print("safetensors", e["shape"], "= npy rows")
PY
done

# Fatal bad input: every rank ends (no collective left waiting), exit 1, the path named once.
fatal=(--checkpoint run --input images --device=cpu --batch_size=37 -q --output fatal.jsonl --embeddings fatal.safetensors)
run_np 60 fatal 2 "$FASTNN" predict "${fatal[@]}"
[ "$RC" != 0 ] && [ "$RC" != 124 ] && [ "$RC" != 137 ] || fail "fatal: rc $RC (want an error, not a timeout)"
[ "$ELAPSED" -le 30 ] || fail "fatal: took ${ELAPSED}s"
[ "$(grep -c "00040_bad.png" fatal.log)" = 1 ] || fail "fatal: the bad image named $(grep -c 00040_bad.png fatal.log) times"
ls fatal.* 2> /dev/null | grep -v log && fail "fatal: output left behind"
# A usage error (an input that does not exist) is the same on every rank: exit 1, said once, no abort.
run_np 60 usage 2 "$FASTNN" predict --checkpoint run --input no-such-folder --device=cpu -q
[ "$RC" = 1 ] || fail "usage error: rc $RC"
[ "$(grep -c "no-such-folder" usage.log)" = 1 ] || fail "usage error named $(grep -c no-such-folder usage.log) times"
grep -q "MPI_ABORT" usage.log && fail "usage error: the job was aborted"
# An output only rank 0 creates, and cannot (its folder does not exist): reported once, exit 1, no abort.
run_np 60 no-output 2 "$FASTNN" predict --checkpoint run --input images --device=cpu -q --skip-bad -o no/such/dir/p.jsonl
[ "$RC" = 1 ] || fail "uncreatable output: rc $RC"
[ "$(grep -c "no/such/dir" no-output.log)" = 1 ] || fail "uncreatable output named $(grep -c no/such/dir no-output.log) times"
grep -q "MPI_ABORT" no-output.log && fail "uncreatable output: the job was aborted"
echo PASS
