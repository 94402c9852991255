#!/usr/bin/env bash
# A torchvision-style tree root/{train,val}/<class> of real photographs (crops of
# /var/cache/fastnn/sample-images; exit 77 when absent) used to become two classes "train" and "val".
# Now it is one output with the splits train and validation and one class map from the class folders
# (a class only val has still gets its id; a missing one is warned about); a tree mixing split and
# class folders is refused naming both; --layout classes reads split-named folders as classes; the
# held-out split is what `fastnn train` evaluates on.
FASTNN=$1 SRC=$2 SCRATCH=$3
source "$SRC/tests/integration/convert_helpers.bash"
cd "$SCRATCH"

photos tree train/cats:6 train/dogs:6 val/cats:2 val/dogs:2 val/owls:1
"$FASTNN" convert image-folder -i tree -o data --num-gpus 1 --shards-per-gpu 2 -q > summary.txt || fail "convert"
cat summary.txt
[ "$(tr '\n' ' ' < data/labels.txt)" = "0:cats 1:dogs 2:owls " ] || fail "labels.txt: $(cat data/labels.txt)"
grep -q "^train  *2  *6  *12 " summary.txt || fail "train split"
grep -q "^validation  *2  *2-3  *5 " summary.txt || fail "validation split"
grep -q 'warning: split train has no record of 1 of the 3 classes: 2 "owls"' summary.txt || fail "missing class warning"
! grep -q "no held-out split" summary.txt || fail "a split tree has its held-out split"
python3 - data/manifest.json <<'PY' || fail "manifest"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["split_order"] == ["train", "validation"], m["split_order"]
assert m["splits"]["train"]["label_histogram"] == [6, 6, 0], m["splits"]["train"]["label_histogram"]
assert m["splits"]["validation"]["label_histogram"] == [2, 2, 1], m["splits"]["validation"]["label_histogram"]
PY
"$FASTNN" check data --decode -q > check.txt || { cat check.txt; fail "check"; }
"$FASTNN" train --model_name=cifarnet --dataset_dir=data --output_dir=run --batch_size=4 --stop_at_step=2 --device=cpu \
  --num_preprocessing_threads=1 > train.log 2>&1 || { tail train.log; fail "train"; }
grep -q '"split": *"validation"' run/metrics.jsonl || { tail -3 run/metrics.jsonl; fail "no evaluation on the validation split"; }
! grep -q "no held-out evaluation" train.log || fail "train said there is no held-out split"

# Split folders and class folders side by side: which is meant cannot be guessed.
photos mixed train/cats:2 val/cats:1 birds:2
expect_fail "mixed: holds split folders (train, val) and other folders (birds) side by side" "--layout classes" -- \
  "$FASTNN" convert image-folder -i mixed -o mixed.out --num-gpus 1
no_output mixed.out
"$FASTNN" convert image-folder -i mixed -o classes.out --layout classes --num-gpus 1 --shards-per-gpu 1 -q > /dev/null ||
  fail "--layout classes"
[ "$(tr '\n' ' ' < classes.out/labels.txt)" = "0:birds 1:train 2:val " ] || fail "--layout classes: $(cat classes.out/labels.txt)"
# Two roots must agree on their layout; --split cannot rename a split tree's splits.
expect_fail "tree holds split folders but mixed/train holds class folders" -- \
  "$FASTNN" convert image-folder -i tree -i mixed/train -o two.out --num-gpus 1
expect_fail "--split test names the split of a class-folder tree" -- \
  "$FASTNN" convert image-folder -i tree -o split.out --split test --num-gpus 1
echo PASS
