#!/usr/bin/env bash
# docs/coming_from/*.md as written: every ```bash block after a `<!-- run -->` line runs, with `fastnn`
# the binary under test (first on PATH, so `mpirun ... fastnn` finds it too), in a scratch folder of its
# own, and stops at the first failing line. The TF-slim page runs on Debian's Fashion-MNIST; the PyTorch
# page on an ImageFolder tree of crops of the two sample photographs (skipped without them); the PLSC
# page on base64-TSV files of Fashion-MNIST images under mpirun (skipped without Open MPI). A page
# whose commands drift from the CLI fails here.
FASTNN=$1 SRC=$2 SCRATCH=$3
SAMPLES=${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}
FM=/usr/share/datasets/fashion-mnist
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" || exit 1
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
[ -d "$FM" ] || { echo "SKIPPED: no Fashion-MNIST in $FM"; exit 77; }

# The run blocks of one page, as one script.
blocks() {
  awk '/^<!-- run -->$/ { armed = 1; next }
       armed && /^```bash$/ { inside = 1; armed = 0; next }
       inside && /^```$/ { inside = 0; next }
       inside { print }' "$1"
}

run_page() {  # page, folder
  local page=$1 dir=$2 script
  script=$(blocks "$page")
  [ -n "$script" ] || fail "$page has no <!-- run --> block"
  mkdir -p "$dir"
  (cd "$dir" && PATH="$SCRATCH/bin:$PATH" bash -euo pipefail -c "$script" > page.log 2>&1) ||
    { tail -30 "$dir/page.log"; fail "$page: a line failed (log above)"; }
  echo "ran $(grep -c '^fastnn ' <<< "$script") fastnn lines of $page"
}

mkdir -p "$SCRATCH/bin" && ln -s "$(readlink -f "$FASTNN")" "$SCRATCH/bin/fastnn" || exit 1

run_page "$SRC/docs/coming_from/TF_SLIM.md" "$SCRATCH/tf_slim"
grep -q "runs/lenet/ckpt-300 (step 300): top1" "$SCRATCH/tf_slim/page.log" || fail "TF-slim page: no eval of step 300"
[ -f "$SCRATCH/tf_slim/tf/lenet.ckpt.index" ] || fail "TF-slim page: no exported TensorFlow checkpoint"

if [ -f "$SAMPLES/china.jpg" ]; then
  $PY "$SRC/tests/integration/photo_tree.py" "$SAMPLES" "$SCRATCH/pytorch/photos" \
    train/china:16 train/flower:16 val/china:4 val/flower:4 || fail "photo tree"
  run_page "$SRC/docs/coming_from/PYTORCH.md" "$SCRATCH/pytorch"
  [ "$(wc -l < "$SCRATCH/pytorch/predictions.csv")" = 9 ] || fail "PyTorch page: predictions.csv is not a header and 8 rows"
  [ -s "$SCRATCH/pytorch/model.onnx" ] || fail "PyTorch page: no model.onnx"
else
  echo "PyTorch page skipped: no sample photographs in $SAMPLES"
fi
if command -v mpirun > /dev/null && mpirun --version 2>&1 | grep -q "Open MPI"; then
  # What the page says a container needs, set as the environment (the page's lines stay as written).
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
  mkdir -p "$SCRATCH/plsc"
  $PY "$SRC/tests/integration/fashion_pngs.py" "$FM/t10k-images-idx3-ubyte.gz" "$SCRATCH/plsc/pngs" 600 || fail "pngs"
  $PY - "$SCRATCH/plsc" "$FM/t10k-labels-idx1-ubyte.gz" <<'PY' || fail "tsv"
import base64, gzip, os, sys
out = sys.argv[1]
names = sorted(os.listdir(os.path.join(out, "pngs")))
labels = gzip.open(sys.argv[2]).read()[8:]
with open(os.path.join(out, "train.tsv"), "wb") as train, open(os.path.join(out, "test.tsv"), "wb") as test:
    for i, n in enumerate(names):
        b64 = base64.b64encode(open(os.path.join(out, "pngs", n), "rb").read())
        (test if i >= 500 else train).write(b64 + b"\t" + str(labels[i]).encode() + b"\n")
PY
  run_page "$SRC/docs/coming_from/PLSC.md" "$SCRATCH/plsc"
  [ "$(wc -l < "$SCRATCH/plsc/predictions.jsonl")" = 100 ] || fail "PLSC page: predictions.jsonl is not 100 lines"
  [ -s "$SCRATCH/plsc/embeddings.npy" ] || fail "PLSC page: no embeddings.npy"
else
  echo "PLSC page skipped: no Open MPI mpirun"
fi
echo PASS
