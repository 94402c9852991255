#!/usr/bin/env bash
# Outputs never destroy what they replace, and inputs never hang (core/output_file.h, core/input_file.h,
# core/line_reader.h, docs/INFERENCE.md "Output files"):
#  - `predict -o` / `--embeddings`, `export -o`, `report -o` refuse a FIFO (no reader waits forever), a
#    device (/dev/null stays a device even as root), a folder, one of the command's own inputs (the input
#    image, a hard link to it, the checkpoint's weights) and leave it untouched, exit 1;
#  - an existing output is replaced only with --overwrite (predict -o / --embeddings, export -o);
#  - `-o` through a symbolic link replaces the file it names and keeps the link;
#  - a failed write on stdout (/dev/full: a full disk) is exit 1 naming stdout, for predict, eval --json,
#    inspect, check, models;
#  - a FIFO named *.tsv given to predict, and metrics.jsonl replaced by a FIFO under report, are refused at
#    once; predict's folder walk follows a linked folder and reports an image-named FIFO as a bad input;
#  - `train` with output_dir under a regular file says what is wrong (no "internal error"), an emb_dim out
#    of range is named as emb_dim (not as the num_classes it becomes); train_files
#    that include the evaluation's files is said not to be held out.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3  # Debian's, with python3-pil
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

# expect CODE PATTERN CMD...: the exit code, and PATTERN (grep -E) in stderr; 20 s at most (124: it hung).
expect() {
  local want=$1 pattern=$2; shift 2
  timeout 20 "$@" > out.txt 2> err.txt < /dev/null
  local rc=$?
  [ "$rc" = "$want" ] || { cat err.txt; fail "$*: exit $rc, expected $want"; }
  [ -z "$pattern" ] || grep -Eq "$pattern" err.txt || { cat err.txt; fail "$*: stderr lacks /$pattern/"; }
}

"$FASTNN" convert synthetic --output data --num-gpus 1 --shards-per-gpu 2 --num-records 64 --num-test-records 16 \
  --height 28 --width 28 --channels 1 --num-classes 4 --image-format png -q > /dev/null || fail "convert"
"$FASTNN" train --model_name=mlp --dataset_dir=data --output_dir=run --batch_size=8 --stop_at_step=4 --device=cpu \
  > train.log 2>&1 || { cat train.log; fail "train"; }
mkdir -p images/sub && $PY - <<'PY' || fail "pngs"
from PIL import Image
for i, p in enumerate(["images/a.png", "images/sub/b.png"]):
    Image.new("L", (28, 28), 40 * i).save(p)
PY
weights=$(ls run/ckpt-4.weights.safetensors) || fail "no checkpoint"
sum_before=$(md5sum images/a.png "$weights" | md5sum)

# Targets that are not regular files, or are inputs.
mkfifo out.fifo emb.npy
expect 1 "FIFO" "$FASTNN" predict --checkpoint run -i images -o out.fifo --format jsonl -q
[ -p out.fifo ] || fail "predict replaced the FIFO"
expect 1 "FIFO" "$FASTNN" predict --checkpoint run -i images --embeddings emb.npy -q
expect 1 "FIFO" "$FASTNN" export --checkpoint run -o out.fifo -q
[ -p out.fifo ] || fail "export replaced the FIFO"
expect 1 "character device" "$FASTNN" predict --checkpoint run -i images -o /dev/null -q
[ -c /dev/null ] || fail "/dev/null is no longer a device"
expect 1 "folder" "$FASTNN" export --checkpoint run -o images -q
expect 1 "inputs" "$FASTNN" predict --checkpoint run -i images -o images/a.png --format jsonl -q
ln images/a.png hard_link.png
expect 1 "inputs" "$FASTNN" predict --checkpoint run -i images/a.png -o hard_link.png --format jsonl -q
expect 1 "inputs" "$FASTNN" predict --checkpoint run -i images -o "$weights" --format jsonl -q
expect 1 "inputs" "$FASTNN" export --checkpoint run -o "$weights" -q
[ "$(md5sum images/a.png "$weights" | md5sum)" = "$sum_before" ] || fail "an input changed"
ls -A | grep -q fastnn-tmp && fail "a temporary was left behind"
expect 1 "FIFO" "$FASTNN" report run -o out.fifo
[ -p out.fifo ] || fail "report replaced the FIFO"

# An existing output is replaced only with --overwrite (every command: predict, export, convert, report).
echo mine > keep.jsonl && echo mine > keep.npy && echo mine > keep.onnx && echo mine > keep_tf.index
expect 1 "keep.jsonl exists; pass --overwrite" "$FASTNN" predict --checkpoint run -i images -o keep.jsonl -q
expect 1 "keep.npy exists; pass --overwrite" "$FASTNN" predict --checkpoint run -i images --embeddings keep.npy -q
expect 1 "keep.onnx exists; pass --overwrite" "$FASTNN" export --checkpoint run -o keep.onnx -q
expect 1 "keep_tf.index exists; pass --overwrite" "$FASTNN" export --checkpoint run --format tf-checkpoint -o keep_tf -q
[ "$(cat keep.jsonl keep.npy keep.onnx keep_tf.index | sort -u)" = mine ] || fail "an output was replaced without --overwrite"
expect 0 "" "$FASTNN" predict --checkpoint run -i images -o keep.jsonl --embeddings keep.npy --overwrite -q
[ "$(wc -l < keep.jsonl)" = 2 ] || fail "predict --overwrite did not replace keep.jsonl"
expect 0 "" "$FASTNN" export --checkpoint run -o keep.onnx --overwrite --json
grep -q '"model_path":"keep.onnx"' out.txt || { cat out.txt; fail "export --json lacks model_path"; }

# Through a symbolic link: the file it names is replaced, the link kept.
echo old > real.jsonl && ln -s real.jsonl link.jsonl
expect 0 "" "$FASTNN" predict --checkpoint run -i images -o link.jsonl --overwrite -q
[ -L link.jsonl ] && [ "$(wc -l < real.jsonl)" = 2 ] || fail "-o through a link"

# A failed write on stdout is an error, not a silent 0.
if [ -w /dev/full ]; then
  for cmd in "predict --checkpoint run -i images -q" "eval --dataset_dir=data --output_dir=run --json" \
             "inspect data/train-00000-of-00002.tfrecord --limit 2" "check data" "models"; do
    timeout 60 "$FASTNN" $cmd > /dev/full 2> err.txt
    rc=$?
    [ "$rc" = 1 ] || { cat err.txt; fail "$cmd > /dev/full: exit $rc"; }
    grep -q "cannot write to stdout: No space left on device" err.txt || { cat err.txt; fail "$cmd: no stdout error"; }
  done
fi

# Inputs that are not regular files are refused at once.
mkfifo list.tsv
expect 1 "list.tsv.*FIFO" "$FASTNN" predict --checkpoint run -i list.tsv -q
cp -r run run_fifo && rm run_fifo/metrics.jsonl && mkfifo run_fifo/metrics.jsonl
expect 1 "metrics.jsonl.*FIFO" "$FASTNN" report run_fifo -o page.html

# predict's folder walk: a linked folder is followed, an image-named FIFO is a bad input, not left out.
mkdir linked && $PY -c "from PIL import Image; Image.new('L', (28, 28), 99).save('linked/c.png')"
ln -s ../linked images/link_to_linked
expect 0 "" "$FASTNN" predict --checkpoint run -i images -q
[ "$(wc -l < out.txt)" = 3 ] || { cat out.txt; fail "the linked folder's image was not predicted"; }
mkfifo images/sub/z.png
expect 1 "z.png.*FIFO" "$FASTNN" predict --checkpoint run -i images -q
expect 0 "3 inputs classified, 1 skipped" "$FASTNN" predict --checkpoint run -i images --skip-bad

# train: a folder under a regular file is a plain error; train files that include eval files are said.
echo x > afile
expect 1 "afile.*not a directory" "$FASTNN" train --model_name=mlp --dataset_dir=data --output_dir=afile/run --device=cpu
grep -q "internal error" err.txt && fail "internal error for output_dir under a file"
expect 1 "emb_dim must be in \[1, 2\^24\], got 100000000" "$FASTNN" train --model_name=mlp --dataset_dir=data \
  --output_dir=run_emb --emb_dim=100000000 --device=cpu
expect 0 "not held out" "$FASTNN" train --model_name=mlp --dataset_dir=data --output_dir=run_all --batch_size=8 \
  --stop_at_step=2 --eval_every_n_steps=2 --device=cpu '--train_files=*.tfrecord'
grep -q "NOT held out" out.txt || { cat out.txt; fail "the eval line does not say it is not held out"; }
echo "outputs and inputs safe"
