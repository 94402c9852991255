#!/usr/bin/env bash
# class_balanced_sampling on a real imbalanced dataset (docs/TRAINING.md records what it prints):
# Fashion-MNIST's training split with classes 5-9 cut to a tenth (every 10th image of them kept; 33,000
# images), converted; LeNet trained the same steps with and without class-balanced sampling (and, for
# comparison, with class_weights=balanced); each evaluated on the untouched, balanced test split.
# Prints one JSON line per run: top-1 and the recall of every class.
#   tests/bench/class_balance.sh [FASTNN] [WORK_DIR] [STEPS]   (default build/bin/fastnn, /tmp/fastnn_balance, 1500)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
FASTNN=$(realpath "${1:-$here/build/bin/fastnn}")
WORK=${2:-/tmp/fastnn_balance}
STEPS=${3:-1500}
FM=${FASTNN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
PY=/usr/bin/python3  # Debian's, with numpy
rm -rf "$WORK" && mkdir -p "$WORK/idx" && cd "$WORK"
trap 'rm -rf "$WORK"' EXIT

"$PY" - "$FM" idx <<'EOF'
import gzip, os, shutil, sys
import numpy as np
src, out = sys.argv[1], sys.argv[2]
def read(name):
    with gzip.open(os.path.join(src, name + ".gz")) as f:
        return f.read()
images, labels = read("train-images-idx3-ubyte"), read("train-labels-idx1-ubyte")
lab = np.frombuffer(labels, np.uint8, offset=8)
img = np.frombuffer(images, np.uint8, offset=16).reshape(-1, 784)
seen = np.zeros(10, int)
keep = []
for i, c in enumerate(lab):
    if c < 5 or seen[c] % 10 == 0:
        keep.append(i)
    seen[c] += 1
keep = np.array(keep)
n = len(keep)
with gzip.open(os.path.join(out, "train-images-idx3-ubyte.gz"), "wb") as f:
    f.write(images[:4] + n.to_bytes(4, "big") + images[8:16] + img[keep].tobytes())
with gzip.open(os.path.join(out, "train-labels-idx1-ubyte.gz"), "wb") as f:
    f.write(labels[:4] + n.to_bytes(4, "big") + lab[keep].tobytes())
for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
    shutil.copy(os.path.join(src, name), out)
EOF
"$FASTNN" convert mnist -i idx -o data --dataset fashion-mnist --stratify --seed 1 -q > /dev/null

run() {  # NAME FLAGS...
  local name=$1
  shift
  "$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir="runs/$name" --batch_size=64 \
    --stop_at_step="$STEPS" --optimizer=momentum --learning_rate=0.01 --seed=1 "$@" > "$name.log" 2>&1 ||
    { cat "$name.log" >&2; exit 1; }
  "$FASTNN" eval --checkpoint "runs/$name" --dataset_dir=data --json 2> /dev/null | grep '^{' | tail -1 |
    "$PY" -c '
import json, sys
j = json.load(sys.stdin)
m = j["confusion_matrix"]
recall = [round(row[i] / max(1, sum(row)), 3) for i, row in enumerate(m)]
print(json.dumps({"run": sys.argv[1], "top1": j["top1"], "recall": recall}))' "$name"
}
run baseline
run class_balanced_sampling --class_balanced_sampling
run class_weights_balanced --class_weights=balanced
