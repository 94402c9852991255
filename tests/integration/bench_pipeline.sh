#!/usr/bin/env bash
# `fastnn bench pipeline` end to end on tiny synthetic shard sets: the JSON has the promised fields
# with sane values, the human output names the ceiling, and bad arguments fail with a message.
# Args: <fastnn> <source dir> <scratch dir>.
set -euo pipefail
fastnn=$1
scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"

"$fastnn" convert synthetic --output "$scratch/jpeg" --num-gpus 2 --num-records 96 --height 120 --width 160 \
  --num-classes 4 --image-format jpeg -q
"$fastnn" convert synthetic --output "$scratch/png" --num-gpus 1 --num-records 64 --height 28 --width 28 \
  --channels 1 --num-classes 10 --image-format png -q

check_json() {  # file, min steps images
  /usr/bin/python3 - "$1" <<'EOF'
import json, sys
j = json.loads(open(sys.argv[1]).read())
for k in ("images_per_sec", "ceiling_images_per_sec", "mb_per_sec", "stage_share", "peak_rss_mb", "cpu_cores",
          "images_per_cpu_sec", "ceiling_images_per_cpu_sec", "cpu_efficiency", "map_us_per_image",
          "ceiling_map_us_per_image"):
    assert k in j, k
# CPU accounting: a process cannot get more cores than the machine has, nor spend no CPU.
import os
assert 0 < j["cpu_cores"] <= os.cpu_count() + 0.1 and 0 < j["ceiling_cpu_cores"] <= 1.1, j
assert j["images_per_cpu_sec"] > 0 and j["map_us_per_image"] > 0 and j["ceiling_map_us_per_image"] > 0, j
assert j["images_per_sec"] > 0 and j["ceiling_images_per_sec"] > 0, j
assert j["images"] > 0 and j["seconds"] > 0, j
share = sum(j["stage_share"].values())
assert abs(share - 1) < 1e-6, share
assert j["buffers_allocated"] <= j["pool_capacity"], j
print("ok", j["preset"], round(j["images_per_sec"]), "images/s, ceiling", round(j["ceiling_images_per_sec"]))
EOF
}

"$fastnn" bench pipeline --data "$scratch/jpeg" --preset inception --image-size 64 --batch-size 8 --threads 2 \
  --steps 6 --parallel-ceiling --json > "$scratch/inception.json"
check_json "$scratch/inception.json"
/usr/bin/python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["parallel_ceiling_images_per_sec"] > 0, j' \
  "$scratch/inception.json"
grep -q '"sample":"64x64x3 float32 NHWC"' "$scratch/inception.json"

"$fastnn" bench pipeline --data "$scratch/png" --preset lenet --batch-size 16 --threads 1 --steps 5 --dtype float16 \
  --layout NCHW --shuffle-buffer 32 --cache --json > "$scratch/lenet.json"
check_json "$scratch/lenet.json"
grep -q '"sample":"28x28x1 float16 NCHW"' "$scratch/lenet.json"

"$fastnn" bench pipeline --data "$scratch/jpeg" --preset resnet --eval --image-size 48 --batch-size 4 --threads 2 \
  --steps 3 > "$scratch/human.txt"
grep -q "images/s" "$scratch/human.txt"
grep -q "ceiling" "$scratch/human.txt"
grep -q "CPU: the pipeline got" "$scratch/human.txt"

# --consume-ms: the caller holds each batch 50 ms, so beyond the few batches the pool holds (prefetch 0, one
# in flight, one held: 16 images) the pipeline cannot run faster than 8 images per 50 ms.
"$fastnn" bench pipeline --data "$scratch/jpeg" --preset inception --image-size 64 --batch-size 8 --threads 2 \
  --steps 6 --prefetch 0 --num-parallel-batches 1 --no-ceiling --consume-ms 50 --json > "$scratch/consume.json"
/usr/bin/python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert j["consume_ms"] == 50 and 0 < j["images_per_sec"] < 300, j' \
  "$scratch/consume.json"

# Errors: unknown preset, missing data; non-zero exit with a message on stderr.
if "$fastnn" bench pipeline --data "$scratch/jpeg" --preset alexnet 2> "$scratch/err.txt"; then
  echo "unknown preset accepted"; exit 1
fi
grep -q "alexnet" "$scratch/err.txt"
if "$fastnn" bench pipeline --data "$scratch/nothing-here" --preset lenet 2> "$scratch/err2.txt"; then
  echo "missing data accepted"; exit 1
fi
test -s "$scratch/err2.txt"
echo "bench pipeline: ok"
