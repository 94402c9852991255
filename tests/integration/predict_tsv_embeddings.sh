#!/usr/bin/env bash
# fastnn predict on base64-TSV files and --embeddings, with real Fashion-MNIST test images (Debian
# dataset-fashion-mnist; exit 77 when absent) and LeNet trained 60 steps:
#   - a TSV of 300 images (PNG, base64, the true label; some lines label-first, "\r\n" ends, blank lines)
#     gives the same predictions as the same images as PNG files, `line` = the 1-based line number,
#     `target` = the line's label; a bad line is fatal naming file:line, or skipped with --skip-bad;
#   - --embeddings writes a float32 [N, 1024] .npy (LeNet's fc3 features) in output order, the same for
#     both inputs, and the checkpoint's logits layer applied to them (fc4: W e + b, softmax) gives back
#     predict's probabilities: the embedding is exactly what feeds the classifier.
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
[ -f "$DATA_SRC/t10k-images-idx3-ubyte.gz" ] || { echo "skip: $DATA_SRC has no Fashion-MNIST"; exit 77; }
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 2 -q > /dev/null || fail "convert"
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=64 --optimizer=momentum \
  --learning_rate=0.01 --stop_at_step=60 --device=cpu > train.log 2>&1 || { tail train.log; fail "train"; }
N=300
python3 "$SRC/tests/integration/fashion_pngs.py" "$DATA_SRC/t10k-images-idx3-ubyte.gz" images $N || fail "pngs"
python3 - images "$DATA_SRC/t10k-labels-idx1-ubyte.gz" <<'PY' || fail "tsv"
import base64, gzip, os, sys
names = sorted(os.listdir(sys.argv[1]))
labels = gzip.open(sys.argv[2]).read()[8:]
with open("a.tsv", "wb") as f, open("lines.txt", "w") as want:
    line = 0
    for i, n in enumerate(names):
        if i % 50 == 10:  # blank lines count in the numbering, give no prediction
            f.write(b"\n"); line += 1
        b64 = base64.b64encode(open(os.path.join(sys.argv[1], n), "rb").read())
        lab = str(labels[i]).encode()
        f.write((lab + b"\t" + b64 if i % 3 == 1 else b64 + b"\t" + lab) + (b"\r\n" if i % 7 == 0 else b"\n"))
        line += 1
        want.write(f"{line} {labels[i]}\n")
PY
"$FASTNN" predict --checkpoint run --input images --device=cpu --batch_size=32 --embeddings img.npy -q > img.jsonl ||
  fail "predict images"
"$FASTNN" predict --checkpoint run --input a.tsv --device=cpu --batch_size=32 --embeddings tsv.npy -q > tsv.jsonl ||
  fail "predict tsv"
python3 - run <<'PY' || fail "tsv predictions / embeddings"
import glob, json, math, struct, sys

def npy(path):
    f = open(path, "rb")
    assert f.read(6) == b"\x93NUMPY" and f.read(2) == b"\x01\x00"
    h = eval(f.read(struct.unpack("<H", f.read(2))[0]).decode("latin1"))
    assert h["descr"] == "<f4" and h["fortran_order"] is False, h
    n, d = h["shape"]
    flat = struct.unpack("<%df" % (n * d), f.read())
    assert not f.read()
    return [flat[i * d:(i + 1) * d] for i in range(n)]

def safetensors(path):
    f = open(path, "rb")
    h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    base = f.tell()
    out = {}
    for k, v in h.items():
        if k == "__metadata__": continue
        assert v["dtype"] == "F32", v
        a, b = v["data_offsets"]
        f.seek(base + a)
        out[k] = (v["shape"], struct.unpack("<%df" % ((b - a) // 4), f.read(b - a)))
    return out

img = [json.loads(l) for l in open("img.jsonl")]
tsv = [json.loads(l) for l in open("tsv.jsonl")]
want = [tuple(map(int, l.split())) for l in open("lines.txt")]
assert len(img) == len(tsv) == len(want) == 300, (len(img), len(tsv), len(want))
for a, b, (line, label) in zip(img, tsv, want):
    assert b["source"] == "a.tsv" and b["line"] == line and b["target"] == label, (b, line, label)
    assert a["label"] == b["label"] and a["topk"] == b["topk"], (a, b)
ei, et = npy("img.npy"), npy("tsv.npy")
assert len(ei) == len(et) == 300 and len(ei[0]) == 1024, (len(ei), len(ei[0]))
assert ei == et, "embeddings of the same images differ between the inputs"
ckpt = sorted(glob.glob(sys.argv[1] + "/ckpt-*.weights.safetensors"))[-1]
w = safetensors(ckpt)
(ws, W), (bs, B) = w["LeNet/fc4/weights"], w["LeNet/fc4/biases"]
assert ws == [10, 1024], ws
worst = 0.0
for e, p in zip(ei, img):
    z = [B[c] + math.fsum(W[c * 1024 + k] * e[k] for k in range(1024)) for c in range(10)]
    m = max(z); s = sum(math.exp(v - m) for v in z)
    for c, prob in p["topk"]:
        worst = max(worst, abs(math.exp(z[c] - m) / s - prob))
    assert max(range(10), key=lambda c: z[c]) == p["label"], (z, p)
print(f"300 TSV lines = 300 PNGs; fc4(embedding) reproduces predict's probabilities within {worst:.2e}")
assert worst < 1e-5, worst
PY
[ -z "$(ls -A . | grep fastnn-tmp)" ] || fail "temporary output left behind"

# A bad line: fatal naming file:line, or skipped (and then absent from the .npy too).
cp a.tsv bad.tsv && printf 'QUJD@\t3\n' >> bad.tsv
if "$FASTNN" predict --checkpoint run --input bad.tsv --device=cpu -q > /dev/null 2> bad.err; then fail "bad line accepted"; fi
line=$(($(wc -l < a.tsv) + 1))
grep -q "bad.tsv:$line:" bad.err || { cat bad.err; fail "the error does not name bad.tsv:$line"; }
"$FASTNN" predict --checkpoint run --input bad.tsv --device=cpu -q --skip-bad --embeddings bad.npy > bad.jsonl 2> skip.err ||
  fail "--skip-bad"
grep -q "skipping bad.tsv:$line:" skip.err || { cat skip.err; fail "skip not reported"; }
[ "$(wc -l < bad.jsonl)" -eq 300 ] || fail "skipped line produced output"
python3 -c "
import struct; f = open('bad.npy', 'rb'); f.read(8); h = eval(f.read(struct.unpack('<H', f.read(2))[0]).decode())
assert h['shape'] == (300, 1024), h" || fail "npy rows with a skipped line"
# --embeddings must name a .npy or .safetensors file, refused before any work (nothing written).
if "$FASTNN" predict --checkpoint run --input a.tsv --device=cpu -q --embeddings e.bin > e.out 2> e.err; then
  fail "--embeddings accepted a .bin name"
fi
grep -q "e.bin: name it \*.npy or \*.safetensors" e.err || { cat e.err; fail "--embeddings e.bin: message"; }
[ ! -s e.out ] && [ ! -e e.bin ] || fail "--embeddings e.bin: something was written"
echo "ok"
