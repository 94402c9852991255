#!/usr/bin/env bash
# The classifier head's memory up front (issue 14, docs/LARGE_SCALE.md): every head run prints rank 0's
# bytes before training; a head that cannot fit is refused before anything is allocated, with the
# head's numbers and the number of ranks that would hold it; num_classes beyond 2^31 - 1 goes through
# (int64) for a dist_ head and is refused for a replicated classifier.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/integration/train_helpers.bash"
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$FASTNN" convert synthetic --output data --num-gpus 1 --num-records 64 --num-test-records 0 --height 28 --width 28 \
  --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert"
base=(--model_name=mlp --dataset_dir=data --batch_size=8 --stop_at_step=2 --num_preprocessing_threads=1
      --save_checkpoints_steps=0 --device=cpu --optimizer=momentum)

# A head that fits: the start-up line with its rows and parts, before the first step.
"$FASTNN" train "${base[@]}" --loss_type=dist_arcface --num_classes=100000 --emb_dim=16 --output_dir=fits \
  > fits.log 2>&1 || { cat fits.log; fail "a 100000-class head should train"; }
line=$(grep -m1 '^classifier head, rank 0 of 1' fits.log) || { cat fits.log; fail "no head memory line"; }
echo "$line"
for part in "classes [0, 100000)" "100000 rows x 16" "weights 6.10 MiB" "optimizer state 6.10 MiB" "logits"; do
  [[ "$line" == *"$part"* ]] || fail "head line lacks \"$part\": $line"
done


# 2^31 classes x 64 dims: 2147483648 rows (int64 all the way) need ~1.5 TiB; refused with what fits.
refused two_to_the_31 "the classifier head does not fit: rank 0 of 1" "2147483648" "or more ranks (mpirun -np)" \
  "memory_limit_mb" -- "${base[@]}" --output_dir=runs/two_to_the_31 \
  --loss_type=dist_softmax --num_classes=2147483648 --emb_dim=64 --memory_limit_mb=4096
# A head that alone exceeds the limit, at a size that does fit on more ranks: the count is named.
refused too_big "the classifier head does not fit" "fits on" -- "${base[@]}" --output_dir=runs/too_big \
  --loss_type=dist_arcface --num_classes=2000000 --emb_dim=128 --memory_limit_mb=1200
# A replicated classifier cannot have more than 2^31 - 1 classes: named, with the way out.
refused replicated_limit "num_classes 3000000000 is above 2147483647" "dist_" -- "${base[@]}" --output_dir=runs/replicated_limit \
  --loss_type=softmax --num_classes=3000000000
echo PASS
