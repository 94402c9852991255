#!/usr/bin/env bash
# Using an embedding model (docs/LARGE_SCALE.md, docs/INFERENCE.md): a dist_arcface run trained on 2
# ranks (its class rows in 2 shard files) and a replicated arcface run are read by `fastnn predict` in
# one process: the net is built as training built it (emb_dim outputs + Embedding/BatchNorm), the classes
# come from the head's rows (scale x cosine), so predict's top-1 on the test split equals `fastnn eval`'s;
# --embeddings writes the embedding (the net's output, emb_dim floats per image); `fastnn export` writes
# the same logits (and the embedding) into ONNX.
rm -rf "$3"
source "$2/tests/integration/mpi_helpers.bash"

"$FASTNN" convert synthetic --output data --num-gpus 2 --shards-per-gpu 1 --num-records 128 --num-test-records 40 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
base=(--model_name=mlp --dataset_dir=data --optimizer=momentum --learning_rate=0.05 --stop_at_step=16 --batch_size=8
      --save_checkpoints_steps=0 --seed=5 --num_preprocessing_threads=1 --emb_dim=16 --scale=8 --device=cpu
      --eval_every_n_steps=0)

for loss in dist_arcface arcface; do
  if [ $loss = dist_arcface ]; then
    run_np 90 train-$loss 2 "$FASTNN" train "${base[@]}" --loss_type=$loss --output_dir=$loss
    [ "$RC" = 0 ] || fail "$loss: training on 2 ranks (rc $RC)"
    ls $loss/ckpt-16.shard-1-of-2.safetensors > /dev/null || fail "$loss: no shard files"
  else
    "$FASTNN" train "${base[@]}" --loss_type=$loss --output_dir=$loss > train-$loss.log 2>&1 \
      || { cat train-$loss.log; fail "$loss: training"; }
  fi
  "$FASTNN" eval --dataset_dir=data --output_dir=$loss --json > eval-$loss.json 2> eval-$loss.err \
    || { cat eval-$loss.err; fail "$loss: eval"; }
  "$FASTNN" predict --checkpoint $loss --input data --device=cpu --top_k 3 --embeddings emb-$loss.npy -q \
    > pred-$loss.jsonl 2> pred-$loss.err || { cat pred-$loss.err; fail "$loss: predict"; }
  $PY - eval-$loss.json pred-$loss.jsonl emb-$loss.npy <<'PY' || fail "$loss: predict disagrees with eval"
import json, struct, sys
ev = json.load(open(sys.argv[1]))
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
assert len(rows) == 40, len(rows)
top1 = sum(r["label"] == r["target"] for r in rows) / len(rows)
assert abs(top1 - ev["top1"]) < 1e-9, (top1, ev["top1"])
for r in rows:
    assert len(r["topk"]) == 3 and abs(sum(p for _, p in r["topk"])) <= 1 + 1e-6, r
b = open(sys.argv[3], "rb").read()
assert b[:6] == b"\x93NUMPY", "not an .npy file"
n = struct.unpack("<H", b[8:10])[0]
header = b[10:10 + n].decode()
assert "(40, 16)" in header and "<f4" in header, header
print(f"predict top-1 {top1:.4f} = eval top-1 {ev['top1']:.4f}; embeddings {header.strip()}")
PY
  # The export takes the head too (a model-parallel one's rows re-assembled from its shard files).
  "$FASTNN" export --checkpoint $loss -o $loss.onnx --test_data ${loss}_td -q 2> export-$loss.err ||
    { cat export-$loss.err; fail "$loss: export"; }
  if $PY -c "import onnx, numpy" 2>/dev/null; then
    $PY "$2/tests/integration/check_onnx_export.py" model $loss.onnx --test_data ${loss}_td --name "$loss export" ||
      fail "$loss: the export's logits differ from fastnn's"
  fi
done
echo PASS
