#!/usr/bin/env bash
# Records per second on one core for every converter (docs/PERFORMANCE.md, "Conversion"): each
# converter with --threads 1 (one core does the encoding), page cache warm, --no-sync, three rounds;
# prints one JSON line per converter and round with records, seconds (the conversion's own, `--json`)
# and records/s. Inputs: Fashion-MNIST (70k, PNG-encoded), CIFAR-10 binaries of random pixels made by
# tests/integration/convert_data.py (6 x 5,000, PNG-encoded), 600 distinct photo-sized JPEGs from the
# two sample photographs (scripts/bench/make_photo_folder.py) as an image folder (passed through, and
# re-encoded at a shorter side of 256) and as base64-TSV (passed through), the Fashion-MNIST shards as
# a TFRecord input (re-sharded), and synthetic 32x32 PNGs (20k).
#   tests/bench/convert_per_core.sh [FASTNN] [WORK_DIR]    (default build/bin/fastnn, /tmp/fastnn_per_core)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
FASTNN=$(realpath "${1:-$here/build/bin/fastnn}")
WORK=${2:-/tmp/fastnn_per_core}
FM=${FASTNN_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
PHOTOS=${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}
PY=/usr/bin/python3  # Debian's, with PIL
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
trap 'rm -rf "$WORK"' EXIT

"$PY" "$here/tests/integration/convert_data.py" cifar10 cifar 5000 > /dev/null
"$PY" "$here/scripts/bench/make_photo_folder.py" --out photos --count 600 --classes 10 "$PHOTOS"/*.jpg > /dev/null
label=0
for d in photos/*/; do
  for f in "$d"*.jpg; do printf '%s\t%d\n' "$(base64 -w0 "$f")" "$label"; done
  label=$((label + 1))
done > photos.tsv
"$FASTNN" convert mnist -i "$FM" -o fashion --no-sync -q > /dev/null

cat "$FM"/* photos/*/* photos.tsv cifar/* fashion/* > /dev/null
echo "{\"machine\": \"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"date\": \"$(date -u +%F)\"}"
one() {  # NAME ARGS...
  local name=$1
  shift
  rm -rf out
  "$FASTNN" convert "$@" -o out --threads 1 --no-sync -q --json | "$PY" -c '
import json, sys
j = json.loads([l for l in sys.stdin if l.startswith("{")][-1])
n = sum(s["num_records"] for s in j["manifest"]["splits"].values())
print(json.dumps({"converter": sys.argv[1], "round": int(sys.argv[2]), "records": n,
                  "seconds": round(j["seconds"], 3), "records_per_s": round(n / j["seconds"])}))' "$name" "$round"
}
for round in 1 2 3; do
  one mnist mnist -i "$FM"
  one cifar10 cifar10 -i cifar
  one image-folder image-folder -i photos
  one image-folder-resize-256 image-folder -i photos --resize-shorter-side 256
  one base64-tsv base64-tsv -i photos.tsv
  one tfrecord tfrecord -i "fashion/train-*.tfrecord" --split train
  one synthetic synthetic --num-records 20000 --num-test-records 0 --height 32 --width 32 --channels 3 \
    --image-format png
done
