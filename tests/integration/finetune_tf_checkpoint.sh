#!/usr/bin/env bash
# TF-slim's flowers recipe, stage 1, from a TensorFlow checkpoint, on real photographs
# (examples/flowers_finetune_inception_v3.pbtxt as written, with a small run's overrides):
#  - data: crops of the two sample photographs (china, flower) as a two-class image folder, converted;
#  - the start: a TensorFlow V2 checkpoint of inception_v3 with 1001 classes, as TF-slim's ImageNet
#    ones have (written by `fastnn export --format tf-checkpoint`, whose output TensorFlow restores into
#    TF-slim's network with the same logits: tests/python/test_tf_checkpoint_crosscheck.py);
#  - `fastnn train` restores every variable but the excluded classifier heads (the log says so) and
#    trains only the heads on the CPU for a step;
#  - the result, exported back as a TensorFlow checkpoint, holds every frozen parameter bitwise equal
#    to the start (`fastnn inspect --json` gives each tensor's CRC-32C over its values), the heads
#    trained for 2 classes, and the frozen layers' batch-norm moving statistics updated, as TF-slim
#    updates them (its update ops run for every layer);
#  - a classifier left in place (no checkpoint_exclude_scopes) is refused naming both shapes, and
#    `fastnn inspect` of the start lists it as a TensorFlow checkpoint.
# Exit 77 (skipped) without the sample photographs or python3's PIL.
FASTNN=$1 SRC=$2 SCRATCH=$3
SAMPLES=${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
[ -f "$SAMPLES/china.jpg" ] && [ -f "$SAMPLES/flower.jpg" ] || { echo "skipped: no sample photographs in $SAMPLES"; exit 77; }
PY=
for p in /usr/bin/python3 python3; do "$p" -c "import PIL" 2>/dev/null && { PY=$p; break; }; done
[ -n "$PY" ] || { echo "skipped: no python3 with PIL"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$PY" - "$SAMPLES" <<'EOF' || fail "making the crops"
import os, sys
from PIL import Image
for cls in ("china", "flower"):
    os.makedirs(os.path.join("photos", cls))
    image = Image.open(os.path.join(sys.argv[1], cls + ".jpg")).convert("RGB")
    for i, (x, y) in enumerate([(0, 0), (200, 50), (300, 100), (100, 120)]):
        image.crop((x, y, x + 320, y + 300)).save(os.path.join("photos", cls, "%d.jpg" % i), quality=92)
EOF
"$FASTNN" convert image-folder --input photos --output data/flowers --num-gpus 1 --quiet >convert.txt 2>&1 ||
  { cat convert.txt; fail "convert"; }

"$FASTNN" export --format tf-checkpoint --model_name inception_v3 --num_classes 1001 --seed 5 \
  -o checkpoints/inception_v3.ckpt 2>export.txt || { cat export.txt; fail "writing the start checkpoint"; }
START=checkpoints/inception_v3.ckpt  # the folder holds no TensorFlow `checkpoint` file: the prefix names it
"$FASTNN" inspect $START >inspect.txt 2>&1 || { cat inspect.txt; fail "inspect of the start"; }
grep -q "TensorFlow V2 checkpoint $START" inspect.txt || { head inspect.txt; fail "inspect: not TensorFlow's"; }
grep -q "InceptionV3/Logits/Conv2d_1c_1x1/weights  float \[1, 1, 2048, 1001\]" inspect.txt ||
  fail "inspect does not list the 1001-class logits in TensorFlow's layout"

common=(--config "$SRC/examples/flowers_finetune_inception_v3.pbtxt" --dataset_dir=data/flowers --checkpoint_path=$START
        --device=cpu --batch_size=2 --stop_at_step=1 --save_checkpoints_steps=1 --log_loss_every_n_iters=1 --num_preprocessing_threads=2)
"$FASTNN" train "${common[@]}" --output_dir=runs/stage1 >train.txt 2>&1 || { tail -30 train.txt; fail "stage 1"; }
grep -q "restored 376 variables from TensorFlow V2 checkpoint $START" train.txt ||
  { grep -A3 "fine-tuning" train.txt; fail "the log does not say what was restored"; }
grep -q "excluded by scope 'InceptionV3/Logits', initialised: 2 variables" train.txt || fail "the log does not name the excluded heads"
grep -q "excluded by scope 'InceptionV3/AuxLogits'" train.txt || fail "the log does not name the excluded aux head"

"$FASTNN" export --format tf-checkpoint --checkpoint runs/stage1 -o back/model.ckpt 2>export2.txt ||
  { cat export2.txt; fail "export of stage 1"; }
"$FASTNN" inspect --json $START >start.json || fail "inspect --json of the start"
"$FASTNN" inspect --json back/model.ckpt >back.json || fail "inspect --json of the export"
"$PY" - <<'EOF' || fail "frozen weights"
import json
start = {t["name"]: t for t in json.load(open("start.json"))["tensors"]}
back = {t["name"]: t for t in json.load(open("back.json"))["tensors"]}
heads = ("InceptionV3/Logits/", "InceptionV3/AuxLogits/")
stats = ("moving_mean", "moving_variance")
frozen = [n for n in start if not n.startswith(heads) and not n.endswith(stats) and n != "global_step"]
moved = [n for n in frozen if start[n]["crc32c"] != back[n]["crc32c"]]
assert not moved, "frozen parameters changed: %s" % moved[:5]
assert len(frozen) == 188, len(frozen)  # the 94 convolutions outside the heads: weights and beta (no gamma)
for n in ("InceptionV3/Logits/Conv2d_1c_1x1/weights", "InceptionV3/AuxLogits/Conv2d_2b_1x1/weights"):
    assert back[n]["shape"] == [1, 1, 2048 if "/Logits/" in n else 768, 2], (n, back[n]["shape"])
updated = [n for n in start if n.endswith(stats) and not n.startswith(heads) and start[n]["crc32c"] != back[n]["crc32c"]]
assert updated, "no batch-norm moving statistics were updated"
print("frozen parameters bitwise equal: %d; moving statistics updated: %d" % (len(frozen), len(updated)))
EOF

# TF-slim's rule: a classifier for other classes must be excluded; the error names both shapes.
"$FASTNN" train "${common[@]}" --output_dir=runs/refused --checkpoint_exclude_scopes=InceptionV3/AuxLogits \
  >refused.txt 2>&1 && fail "a 1001-class classifier was loaded into a 2-class model"
grep -q "InceptionV3/Logits/Conv2d_1c_1x1/weights: \[1, 1, 2048, 1001\] in the checkpoint, the model's is \[1, 1, 2048, 2\]" refused.txt ||
  { tail -5 refused.txt; fail "the refusal does not name both shapes"; }
echo "ok"
