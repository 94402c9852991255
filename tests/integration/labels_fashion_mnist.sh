#!/usr/bin/env bash
# Fashion-MNIST gets its real class names (T-shirt/top ... Ankle boot) end to end, told honestly from
# MNIST: on the real dataset (Debian dataset-fashion-mnist, converted whole once, then its first
# 1200/300 images to stay fast; exit 77 when absent) the input path names it and `convert` says so; a path that names no dataset
# gets numbers and a hint, --dataset names it; MNIST's digits are its names. The names reach the
# manifest, `check --report`, the checkpoint and predict's `name`; evaluating the checkpoint on the
# same images numbered "0".."9" is refused.
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -euo pipefail
[ -f "$DATA_SRC/train-images-idx3-ubyte.gz" ] || { echo "skip: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH"

# The first images of the real files, as IDX files under a folder named like the dataset.
python3 - "$DATA_SRC" fashion-mnist 1200 300 <<'PY'
import gzip, os, struct, sys
src, out, n_train, n_test = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
os.makedirs(out, exist_ok=True)
for stem, n in (("train", n_train), ("t10k", n_test)):
    for kind, header, item in (("images-idx3-ubyte", 16, 784), ("labels-idx1-ubyte", 8, 1)):
        data = gzip.open(os.path.join(src, f"{stem}-{kind}.gz")).read()
        head = bytearray(data[:header]); head[4:8] = struct.pack(">I", n)
        with gzip.open(os.path.join(out, f"{stem}-{kind}.gz"), "wb") as f:
            f.write(bytes(head) + data[header:header + n * item])
PY
names="0:T-shirt/top 1:Trouser 2:Pullover 3:Dress 4:Coat 5:Sandal 6:Shirt 7:Sneaker 8:Bag 9:Ankle boot "
# The dataset where Debian puts it, as a user converts it (4 s on 2 cores).
"$FASTNN" convert mnist -i "$DATA_SRC" -o full --num-gpus 1 -q > full.txt
grep -q "^class names: Fashion-MNIST's class names: the input path names the folder $(basename "$DATA_SRC")" full.txt ||
  { cat full.txt; fail "the real dataset's names"; }
[ "$(tr '\n' ' ' < full/labels.txt)" = "$names" ] || fail "labels.txt of the real dataset: $(cat full/labels.txt)"
rm -r full
"$FASTNN" convert mnist -i fashion-mnist -o fm --num-gpus 1 --shards-per-gpu 2 -q > fm.txt
grep -q "^class names: Fashion-MNIST's class names: the input path names the folder fashion-mnist" fm.txt ||
  { cat fm.txt; fail "which names were applied is not said"; }
[ "$(tr '\n' ' ' < fm/labels.txt)" = "$names" ] || fail "labels.txt: $(cat fm/labels.txt)"
grep -q '"class_names_source": "Fashion-MNIST' fm/manifest.json || fail "manifest class_names_source"

# A path that names no dataset: numbers, and how to name them; the flag names them.
mkdir plain && cp -r fashion-mnist plain/idx
"$FASTNN" convert mnist -i plain/idx -o numbers --num-gpus 1 --shards-per-gpu 2 -q > numbers.txt
grep -q "class names: label numbers: the input path plain/idx does not say which MNIST-format dataset" numbers.txt ||
  { cat numbers.txt; fail "numbers not explained"; }
grep -q -- "--dataset fashion-mnist" numbers.txt || fail "no hint"
[ "$(head -2 numbers/labels.txt | tr '\n' ' ')" = "0:0 1:1 " ] || fail "numbers labels.txt"
"$FASTNN" convert mnist -i plain/idx -o named --dataset fashion-mnist --num-gpus 1 --shards-per-gpu 2 -q > named.txt
grep -q "class names: Fashion-MNIST's class names (--dataset fashion-mnist)" named.txt || fail "flag source"
cmp fm/labels.txt named/labels.txt || fail "--dataset fashion-mnist names"
cp -r fashion-mnist mnist
"$FASTNN" convert mnist -i mnist -o digits --num-gpus 1 --shards-per-gpu 2 -q > digits.txt
grep -q "class names: MNIST's digits: the input path names the folder mnist" digits.txt || fail "digits source"

# The names everywhere downstream: check's page, the checkpoint, predict.
"$FASTNN" check fm --report fm.html -q > check.txt || { cat check.txt; fail "check"; }
grep -q "names: Fashion-MNIST's class names" check.txt || fail "check does not say where the names came from"
grep -q "Ankle boot" check.txt || fail "check's class table"
grep -q '<section id="classes"' fm.html && grep -q 'Ankle boot' fm.html || fail "report page classes"
"$FASTNN" train --model_name=lenet --dataset_dir=fm --output_dir=run --batch_size=32 --stop_at_step=30 --device=cpu \
  > train.log 2>&1 || { tail train.log; fail "train"; }
grep -q '^class_names: "Ankle boot"$' run/ckpt-30.meta.pbtxt || fail "checkpoint class names"
"$FASTNN" predict --checkpoint run --input fm --device=cpu --top_k 1 -q > pred.jsonl || fail "predict"
python3 - pred.jsonl fm/labels.txt <<'PY' || fail "predict names"
import json, sys
names = [l.rstrip("\n").split(":", 1)[1] for l in open(sys.argv[2])]
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 300, len(rows)
assert all(r["name"] == names[r["label"]] for r in rows), rows[0]
print("predicted names:", sorted({r["name"] for r in rows}))
PY
# The same images numbered "0".."9": refused, not scored.
out=$( "$FASTNN" eval --dataset_dir=numbers --output_dir=run --device=cpu 2>&1 ) && fail "eval on other names ran"
grep -qF 'class 0 is "T-shirt/top" in run/ckpt-30.meta.pbtxt but "0" in numbers/manifest.json' <<< "$out" ||
  { echo "$out"; fail "eval refusal"; }
echo PASS
