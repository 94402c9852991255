#!/usr/bin/env bash
# End-to-end converter benchmarks, each beside its peer or ceiling measured in the same run; prints
# JSON lines (docs/PERFORMANCE.md records them).
#   tests/bench/convert_e2e.sh [FASTNN] [WORK_DIR]      (default build/bin/fastnn, /tmp/fastnn_convert_bench)
# 1. Fashion-MNIST (70k images, /usr/share/datasets/fashion-mnist) → PNG shards with --threads 2, beside
#    scripts/peers/mnist_to_tfrecord_pil.py (Python + PIL + python3-protobuf) doing the same work.
# 2. A base64-TSV of >= 2 GB (FASTNN_TSV_GB, default 2.1; generated in WORK_DIR, deleted after):
#    conversion wall time and peak RSS (/usr/bin/time -v) — the budget is 256 MB.
# 3. Image-folder pass-through throughput beside `cat FILES > /dev/null` of the same files (warm
#    page cache for both) and beside `cat FILES > file && sync` (the durable-write ceiling; fastnn
#    fsyncs its shards before the manifest appears, --no-sync skips that): FASTNN_FOLDER_FILES copies
#    (default 6000) of real photographs (sklearn's china.jpg / flower.jpg under /tmp/sk when present,
#    else PIL-made JPEGs).
# Pin to 2 cores with e.g. `taskset -c 0,1 tests/bench/convert_e2e.sh`.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
FASTNN=${1:-$here/build/bin/fastnn}
WORK=${2:-/tmp/fastnn_convert_bench}
PY=/usr/bin/python3
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

# wall seconds and peak RSS (KB) of a command: "WALL RSS"
measure() {
  /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" > "$WORK/cmd.out" 2> "$WORK/cmd.err" || { cat "$WORK/cmd.err" >&2; exit 1; }
  cat "$WORK/time.txt"
}

echo "{\"machine\": \"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"date\": \"$(date -u +%F)\", \"load\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

# 1. Fashion-MNIST vs Python + PIL.
FM=/usr/share/datasets/fashion-mnist
if [ -d "$FM" ]; then
  cat "$FM"/* > /dev/null  # warm cache for both
  for run in 1 2 3; do
    rm -rf "$WORK/fm"
    read -r wall rss < <(measure "$FASTNN" convert mnist -i "$FM" -o "$WORK/fm" --num-gpus 2 --shards-per-gpu 4 --threads 2 -q)
    echo "{\"bench\": \"fashion_mnist_to_png_shards\", \"tool\": \"fastnn --threads 2\", \"run\": $run, \"records\": 70000, \"seconds\": $wall, \"peak_rss_kb\": $rss}"
  done
  rm -rf "$WORK/peer"
  read -r wall rss < <(measure "$PY" "$here/scripts/peers/mnist_to_tfrecord_pil.py" --input "$FM" --output "$WORK/peer" --num-shards 8)
  echo "{\"bench\": \"fashion_mnist_to_png_shards\", \"tool\": \"python+PIL+protobuf (scripts/peers/mnist_to_tfrecord_pil.py)\", \"records\": 70000, \"seconds\": $wall, \"peak_rss_kb\": $rss}"
  rm -rf "$WORK/fm" "$WORK/peer"
fi

# Source photographs for 2 and 3.
mkdir -p "$WORK/photos"
photos=$(ls /tmp/sk/usr/lib/python3/dist-packages/sklearn/datasets/images/*.jpg 2>/dev/null || true)
if [ -n "$photos" ]; then
  cp $photos "$WORK/photos/"
else
  "$PY" -c "
from PIL import Image
import random
for i in range(2):
    r = random.Random(i); img = Image.new('RGB', (640, 427))
    img.putdata([(r.randrange(256), (x * 3) % 256, (x // 640) % 256) for x in range(640 * 427)])
    img.save('$WORK/photos/p%d.jpg' % i, quality=90)"
fi

# 2. base64-TSV >= 2 GB, peak RSS.
"$PY" - "$WORK/photos" "$WORK/big.tsv" "${FASTNN_TSV_GB:-2.1}" <<'EOF'
import base64, os, sys
src, out, gb = sys.argv[1], sys.argv[2], float(sys.argv[3])
lines = [base64.b64encode(open(os.path.join(src, f), "rb").read()) for f in sorted(os.listdir(src))]
target, written, i = int(gb * 1e9), 0, 0
with open(out, "wb", buffering=1 << 24) as f:
    while written < target:
        line = lines[i % len(lines)] + b"\t" + str(i % 1000).encode() + b"\n"
        f.write(line)
        written += len(line)
        i += 1
EOF
tsv_bytes=$(stat -c %s "$WORK/big.tsv")
tsv_lines=$(wc -l < "$WORK/big.tsv")
read -r wall rss < <(measure "$FASTNN" convert base64-tsv -i "$WORK/big.tsv" -o "$WORK/tsv_out" --num-gpus 2 --shards-per-gpu 4 --num-classes 1000 --threads 2 -q)
echo "{\"bench\": \"base64_tsv_convert\", \"tool\": \"fastnn --threads 2\", \"input_bytes\": $tsv_bytes, \"lines\": $tsv_lines, \"seconds\": $wall, \"input_mb_per_s\": $(echo "$tsv_bytes / $wall / 1000000" | bc -l | xargs printf %.1f), \"peak_rss_kb\": $rss, \"rss_budget_kb\": 262144}"
rm -rf "$WORK/big.tsv" "$WORK/tsv_out"

# 3. Image-folder pass-through vs cat.
n=${FASTNN_FOLDER_FILES:-6000}
"$PY" - "$WORK/photos" "$WORK/folder" "$n" <<'EOF'
import os, shutil, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
photos = sorted(os.listdir(src))
for c in range(10):
    os.makedirs(os.path.join(out, f"class{c}"))
for i in range(n):
    shutil.copyfile(os.path.join(src, photos[i % len(photos)]), os.path.join(out, f"class{i % 10}", f"img{i:06d}.jpg"))
EOF
folder_bytes=$(du -sb "$WORK/folder" | cut -f1)
find "$WORK/folder" -type f -print0 | xargs -0 cat > /dev/null  # warm the page cache
mbs() { echo "$1 / $2 / 1000000" | bc -l | xargs printf %.1f; }
read -r cat_wall cat_rss < <(measure bash -c "find '$WORK/folder' -type f -print0 | xargs -0 cat > /dev/null")
echo "{\"bench\": \"image_folder_read\", \"tool\": \"cat > /dev/null (read ceiling)\", \"files\": $n, \"bytes\": $folder_bytes, \"seconds\": $cat_wall, \"mb_per_s\": $(mbs $folder_bytes $cat_wall)}"
read -r cp_wall cp_rss < <(measure bash -c "find '$WORK/folder' -type f -print0 | xargs -0 cat > '$WORK/copy' && sync -f '$WORK/copy'")
echo "{\"bench\": \"image_folder_read\", \"tool\": \"cat > file && sync (durable copy ceiling)\", \"files\": $n, \"bytes\": $folder_bytes, \"seconds\": $cp_wall, \"mb_per_s\": $(mbs $folder_bytes $cp_wall)}"
rm -f "$WORK/copy"
for sync in "" "--no-sync"; do
  for run in 1 2; do
    rm -rf "$WORK/folder_out"
    sync
    read -r wall rss < <(measure "$FASTNN" convert image-folder -i "$WORK/folder" -o "$WORK/folder_out" --num-gpus 2 --shards-per-gpu 4 --threads 2 -q $sync)
    echo "{\"bench\": \"image_folder_passthrough\", \"tool\": \"fastnn --threads 2 $sync\", \"run\": $run, \"files\": $n, \"bytes\": $folder_bytes, \"seconds\": $wall, \"mb_per_s\": $(mbs $folder_bytes $wall), \"files_per_s\": $(echo "$n / $wall" | bc -l | xargs printf %.0f), \"peak_rss_kb\": $rss}"
  done
done
