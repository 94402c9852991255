#!/usr/bin/env bash
# A short fine-tune-sized run that collapses without a word no longer does (trainer/loop/sanity.h):
# mobilenet_v1_025 on 200 real photographs (crops of python3-sklearn's china.jpg and flower.jpg, two
# classes), 120 steps. With TF-slim's batch-norm decay 0.9997 the moving averages still hold 96% of
# their start, evaluation predicts one class, and the log says so with those numbers and the flag;
# following the printed advice (batch_norm_decay=0.9 for 120 steps) the same run evaluates well above the majority class.
FASTNN=$1 SRC=$2 SCRATCH=$3
SAMPLES=${FASTNN_SAMPLE_IMAGES:-/var/cache/fastnn/sample-images}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
[ -f "$SAMPLES/china.jpg" ] || { echo "SKIPPED: no sample photographs in $SAMPLES (scripts/setup.sh)"; exit 77; }
"$PY" -c "import PIL" 2>/dev/null || { echo "SKIPPED: no python3-pil"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$PY" - "$SAMPLES" <<'PY' || fail "crops"
import os, random, sys
from PIL import Image
random.seed(1)
for cls in ["china", "flower"]:
    im = Image.open(os.path.join(sys.argv[1], cls + ".jpg")).convert("RGB")
    os.makedirs("photos/" + cls)
    W, H = im.size
    for i in range(100):
        s = random.randint(120, 300)
        x, y = random.randint(0, W - s), random.randint(0, H - s)
        c = im.crop((x, y, x + s, y + s)).resize((128, 128))
        if random.random() < 0.5:
            c = c.transpose(Image.FLIP_LEFT_RIGHT)
        c.save("photos/%s/%03d.jpg" % (cls, i), quality=90)
PY
"$FASTNN" convert image-folder --input photos --output data --num-gpus 1 --validation-fraction 0.2 -q > /dev/null ||
  fail "convert"
# On the reference kernels (NCHW): the scenario is pinned to their arithmetic. Whether a 120-step run
# collapses is sensitive to rounding; on the fast NHWC kernels this one happened to end at top-1 0.55.
run=(train --model_name=mobilenet_v1_025 --dataset_dir=data --batch_size=16 --stop_at_step=120 --train_image_size=32
     --optimizer=momentum --learning_rate=0.05 --device=cpu --log_every_n_steps=60 --data_format=NCHW)
"$FASTNN" "${run[@]}" --output_dir=default > default.log 2>&1 || { tail default.log; fail "train (default decay)"; }
grep -q "the evaluation predicts class . for 9[0-9]%\|the evaluation predicts class . for 100%" default.log ||
  { tail default.log; fail "no collapse warning"; }
grep -q "120 updates at decay 0.9997 and still hold 96%" default.log || { tail default.log; fail "no numbers"; }
advice=$(sed -n 's/.* set batch_norm_decay=\([0-9.]*\) .*/\1/p' default.log | head -1)
[ -n "$advice" ] || { tail default.log; fail "no flag named"; }
"$FASTNN" "${run[@]}" --output_dir=advised --batch_norm_decay=$advice > advised.log 2>&1 ||
  { tail advised.log; fail "train ($advice)"; }
grep -q "the evaluation predicts class" advised.log && { tail advised.log; fail "still collapsed with the advice"; }
top1=$(sed -n 's/^final eval: top1 \([0-9.]*\).*/\1/p' advised.log)
"$PY" -c "import sys; sys.exit(0 if float('$top1') >= 0.85 else 1)" || { tail advised.log; fail "advised top1 $top1"; }
echo "collapse said, advice works (top1 $top1)"
