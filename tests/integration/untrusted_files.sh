#!/usr/bin/env bash
# Untrusted files never hang or crash the CLI (issue 18): a FIFO, folder or device where a shard,
# manifest, class-name file or source file is expected is refused at once naming the path. Every
# command runs under `timeout`, so a regression fails (exit 124) instead of hanging ctest.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
T="timeout 20"

"$FASTNN" convert synthetic --output "$SCRATCH/ok" --num-gpus 1 --shards-per-gpu 2 --num-records 8 \
  --height 8 --width 8 --channels 1 --num-classes 2 --image-format png -q

# 1. A FIFO in place of a shard: check and inspect are refused, not blocked.
cp -r "$SCRATCH/ok" "$SCRATCH/fifo"
shard="$SCRATCH/fifo/train-00001-of-00002.tfrecord"
rm "$shard" && mkfifo "$shard"
expect_fail "$shard" "FIFO" -- $T "$FASTNN" check "$SCRATCH/fifo"
expect_fail "$shard" "FIFO" -- $T "$FASTNN" inspect "$shard"
expect_fail "$SCRATCH/ok" "directory" -- $T "$FASTNN" inspect "$SCRATCH/ok"
expect_fail "/dev/zero" "character device" -- $T "$FASTNN" inspect /dev/zero
# The manifest itself a FIFO.
mkdir -p "$SCRATCH/mfifo" && mkfifo "$SCRATCH/mfifo/manifest.json"
expect_fail "$SCRATCH/mfifo/manifest.json" "FIFO" -- $T "$FASTNN" check "$SCRATCH/mfifo"
# A --class-names FIFO.
mkfifo "$SCRATCH/names.fifo"
expect_fail "$SCRATCH/names.fifo" "FIFO" -- $T "$FASTNN" convert synthetic --output "$SCRATCH/o1" --num-gpus 1 \
  --num-records 4 --num-classes 2 --class-names "$SCRATCH/names.fifo" -q
# Source files: an IDX file, a CIFAR batch and a base64-TSV input that are FIFOs.
mkdir -p "$SCRATCH/mnist" && mkfifo "$SCRATCH/mnist/train-images-idx3-ubyte" "$SCRATCH/mnist/train-labels-idx1-ubyte"
expect_fail "FIFO" "$SCRATCH/mnist/train-" -- $T "$FASTNN" convert mnist -i "$SCRATCH/mnist" -o "$SCRATCH/o2" --num-gpus 1 -q
mkdir -p "$SCRATCH/cifar" && mkfifo "$SCRATCH/cifar/data_batch_1.bin"
expect_fail "$SCRATCH/cifar/data_batch_1.bin" "FIFO" -- $T "$FASTNN" convert cifar10 -i "$SCRATCH/cifar" -o "$SCRATCH/o3" --num-gpus 1 -q
mkfifo "$SCRATCH/data.tsv"
expect_fail "$SCRATCH/data.tsv" "FIFO" -- $T "$FASTNN" convert base64-tsv -i "$SCRATCH/data.tsv" -o "$SCRATCH/o4" --num-gpus 1 -q
echo "PASS"
