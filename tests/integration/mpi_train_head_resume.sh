#!/usr/bin/env bash
# A dist_arcface run saved at 2 ranks resumes at 3 ranks and at 1 rank (the head's class rows copied
# from the 2 shard files by row range: no conversion step) and ends like the uninterrupted run: the same
# backbone weights and, re-assembled from the shard files, the same head rows. Global batch 24
# (2 x 12, 3 x 8, 1 x 24), no shuffling, 6 train shards (they divide over 1, 2 and 3 ranks).
# Fine-tuning (checkpoint_path) at 3 ranks from the 2-rank checkpoint starts from its head rows (one
# step at learning rate 0 keeps them: the saved rows equal the source's exactly); excluded by
# checkpoint_exclude_scopes=Head, or at another class count, they are initialised and the log says so.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

"$FASTNN" convert synthetic --output data --num-gpus 6 --shards-per-gpu 1 --num-records 144 --num-test-records 24 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
args=(--model_name=mlp --dataset_dir=data --optimizer=momentum --learning_rate=0.05 --learning_rate_decay_type=fixed
      --shuffle_buffer_size=0 --log_loss_every_n_iters=4 --save_checkpoints_steps=4 --seed=3 --num_preprocessing_threads=1
      --num_parallel_batches=1 --prefetch_buffer_size=2 --emb_dim=16 --sync_batch_norm=true --scale=8 --device=cpu
      --loss_type=dist_arcface --eval_every_n_steps=0)

run_np 90 whole 2 "$FASTNN" train "${args[@]}" --batch_size=12 --stop_at_step=8 --output_dir=whole
[ "$RC" = 0 ] || fail "uninterrupted 2 x 12 (rc $RC)"
ls whole/ckpt-8.shard-0-of-2.safetensors whole/ckpt-8.shard-1-of-2.safetensors > /dev/null || fail "no shard files"

# head_rows RUN_A RUN_B STEP_B TOL: RUN_A's ckpt-8 head rows (re-assembled from its shard files) against
# RUN_B's at STEP_B: within TOL (0: equal), or, with TOL < 0, clearly different.
head_rows() {
  $PY - "$@" <<'PY'
import glob, json, struct, sys, array
def rows(run, step):
    out = {}
    for path in sorted(glob.glob(run + "/ckpt-%s.shard-*.safetensors" % step)):
        b = open(path, "rb").read()
        n = struct.unpack("<Q", b[:8])[0]
        head = json.loads(b[8:8 + n])
        for name, v in head.items():
            if name != "Head/weights": continue
            a = array.array("f"); a.frombytes(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            out[path] = a
    flat = array.array("f")
    for path in sorted(out, key=lambda p: int(p.split("shard-")[1].split("-of")[0])): flat.extend(out[path])
    return flat
a, b = rows(sys.argv[1], 8), rows(sys.argv[2], sys.argv[3])
assert len(a) == len(b) == 10 * 16, (len(a), len(b))
worst = max(abs(x - y) for x, y in zip(a, b))
tol = float(sys.argv[4])
if tol < 0:  # must differ: initialised, not loaded
    assert worst > 1e-2, worst
    print("head rows initialised, max diff", worst)
else:
    assert worst <= tol + 10 * tol * max(abs(x) for x in a), worst
    print("head rows agree, max diff", worst)
PY
}
for np in 3 1; do
  batch=$((24 / np))
  run_np 90 first-$np 2 "$FASTNN" train "${args[@]}" --batch_size=12 --stop_at_step=4 --output_dir=r$np
  [ "$RC" = 0 ] || fail "first half at 2 ranks (rc $RC)"
  run_np 120 second-$np $np "$FASTNN" train "${args[@]}" --batch_size=$batch --stop_at_step=8 --output_dir=r$np --resume
  [ "$RC" = 0 ] || fail "resume at $np rank(s) (rc $RC)"
  grep -q "resumed from r$np/ckpt-4" second-$np.log || fail "$np: did not resume from ckpt-4"
  ls r$np/ckpt-8.shard-*-of-$np.safetensors > /dev/null || fail "$np: the resumed run should write $np shard files"
  $PY "$COMPARE" whole/ckpt-8.weights.safetensors r$np/ckpt-8.weights.safetensors --atol 1e-3 --rtol 1e-2 \
    || fail "resumed at $np: backbone differs from the uninterrupted run"
  head_rows whole r$np 8 1e-3 || fail "resumed at $np: head rows differ from the uninterrupted run"
done

tune=(--checkpoint_path=whole/ckpt-8 --learning_rate=0 --stop_at_step=1 --batch_size=8 --save_checkpoints_steps=1)
run_np 90 tune 3 "$FASTNN" train "${args[@]}" "${tune[@]}" --output_dir=tune
[ "$RC" = 0 ] || fail "fine-tune at 3 ranks (rc $RC)"
grep -q "fine-tuning: the classifier head's rows \[0, 4) of Head/weights from whole/ckpt-8" tune.log \
  || fail "fine-tune: no log line for the head rows"
head_rows whole tune 1 0 || fail "fine-tune at 3 ranks: head rows are not the 2-rank checkpoint's"
run_np 90 tune-excluded 3 "$FASTNN" train "${args[@]}" "${tune[@]}" --checkpoint_exclude_scopes=Head --output_dir=tune-x
[ "$RC" = 0 ] || fail "fine-tune excluding Head (rc $RC)"
grep -q "excluded by checkpoint_exclude_scopes: initialised" tune-excluded.log || fail "fine-tune: exclusion not logged"
head_rows whole tune-x 1 -1 || fail "fine-tune excluding Head: the rows should be initialised"
run_np 90 tune-classes 2 "$FASTNN" train "${args[@]}" "${tune[@]}" --num_classes=12 --output_dir=tune-12
[ "$RC" = 0 ] || fail "fine-tune to 12 classes (rc $RC)"
grep -q "are not in whole/ckpt-8 at that shape (it has \[10, 16\])" tune-classes.log \
  || fail "fine-tune to 12 classes: the shape mismatch should be logged"
echo PASS
