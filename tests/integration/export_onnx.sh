#!/usr/bin/env bash
# fastnn export --format onnx, checked by Debian's python3-onnx and an independent numpy evaluator
# (onnx_numpy_eval.py; check_onnx_export.py runs the checks):
#  - usage and errors: no source / two sources / an unknown format are usage errors (2); a missing
#    checkpoint is an error (1) that leaves no output file;
#  - every zoo model (names from the CLI's own error message, so a new model is covered by default),
#    at a reduced size with 10 classes and freshly initialised: float32 exports (and float16 ones of one
#    model per family) pass onnx.checker.check_model(full_check) (strict shape and type inference), and the numpy evaluator's
#    logits on fastnn's reference inputs (--test_data) are within 1e-4 of fastnn's (relative to the
#    largest logit; also onnxruntime's where it is importable) for every model but the deep members of a
#    family (resnet_*_101/152/200, vgg_16/19, the large NASNets), whose layers a shallower member covers;
#  - real checkpoints trained here on Fashion-MNIST: LeNet (float32, float16, external data) and
#    ResNet-20 (BN moving statistics no longer trivial): logits within 1e-4 (float16: 1e-2), and LeNet's
#    top-1 on the whole test set from the exported model (preprocessed from its metadata) equal to
#    `fastnn predict`'s (float16 within 0.2 points).
# Exit 77 (skipped) only where python3 cannot import onnx and numpy; without the Fashion-MNIST package
# the zoo part still runs and the checkpoint part is skipped (said on stdout).
FASTNN=$1 SRC=$2 SCRATCH=$3
DATA_SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
CHECK="$SRC/tests/integration/check_onnx_export.py"
fail() { echo "FAIL: $*" >&2; exit 1; }
set -u
# One BLAS thread for numpy's evaluator (and fastnn): ctest runs tests side by side, and OpenBLAS threads
# waiting for work spin (measured here: 214 s of CPU for this script with them, 177 s without, same wall).
export OPENBLAS_NUM_THREADS=1
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1

# Usage and errors (no Python needed).
"$FASTNN" export -o x.onnx 2>err.txt; [ $? -eq 2 ] || fail "no --checkpoint: want exit 2"
"$FASTNN" export --checkpoint a --model_name lenet -o x.onnx 2>err.txt; [ $? -eq 2 ] || fail "two sources: want exit 2"
"$FASTNN" export --model_name lenet --format tflite -o x.onnx 2>err.txt; [ $? -eq 2 ] || fail "format tflite: want exit 2"
"$FASTNN" export --checkpoint no_such_run -o x.onnx 2>err.txt; [ $? -eq 1 ] || fail "missing checkpoint: want exit 1"
[ ! -e x.onnx ] || fail "a failed export left x.onnx"
grep -q "no_such_run: no such run directory or checkpoint" err.txt || { cat err.txt; fail "the error does not name the checkpoint"; }

PY=""
for p in /usr/bin/python3 python3; do
  if "$p" -c "import onnx, numpy" 2>/dev/null; then PY=$p; break; fi
done
if [ -z "$PY" ]; then echo "SKIPPED: no python3 with onnx and numpy (Debian python3-onnx)"; exit 77; fi
"$PY" -c "import onnxruntime" 2>/dev/null && echo "onnxruntime found: its logits are compared too" ||
  echo "onnxruntime not importable: numpy evaluator only"

# Every zoo model, reduced.
models=$("$FASTNN" export --model_name '?' -o x.onnx 2>&1 | sed -n 's/.*the zoo has: //p' | tr -d ',')
[ "$(echo $models | wc -w)" -ge 20 ] || fail "zoo model list: '$models'"
for m in $models; do
  case $m in
    inception*) size=75 ;;
    lenet | mlp) size=28 ;;
    nasnet_large | pnasnet_large) size=8 ;;  # 4032 / 4320 channels: small maps keep numpy's evaluation short
    nasnet_cifar) size=16 ;;
    *) size=32 ;;
  esac
  # The deep members of a family repeat the layers of a shallower one, whose logits the evaluator
  # checks: they get the checker only (about 45 s of numpy saved).
  test_data=(--test_data zoo/$m --test_samples 2)
  case $m in resnet_v[12]_1[05][12] | resnet_v[12]_200 | vgg_16 | vgg_19 | nasnet_large | pnasnet_large) test_data=() ;; esac
  export_zoo() {
    "$FASTNN" export --model_name "$m" --num_classes 10 --image_size $size --seed 3 -q -o zoo/$m.onnx \
      "${test_data[@]}" 2>err.txt
  }
  if ! export_zoo; then  # a net with a larger smallest input (alexnet_v2, overfeat...) names it
    size=$(sed -n 's/.*is outside \[\([0-9]*\),.*/\1/p' err.txt)
    [ -n "$size" ] && export_zoo || { cat err.txt; fail "export $m"; }
  fi
  "$PY" "$CHECK" model zoo/$m.onnx ${test_data[@]:+--test_data zoo/$m} --name "$m" || fail "$m float32"
  rm -rf zoo/$m zoo/$m.onnx
done
# float16: one model of each family, so every layer type is covered (the deep variants only repeat them).
for m in mlp cifarnet resnet_cifar_20 resnet_v1_18 resnet_v2_50 mobilenet_v1_025 mobilenet_v2_035 vgg_a inception_v3 \
         inception_resnet_v2; do
  case $m in inception*) size=75 ;; mlp) size=28 ;; *) size=32 ;; esac
  "$FASTNN" export --model_name "$m" --num_classes 10 --image_size $size -q --dtype float16 -o zoo/$m.f16.onnx 2>err.txt ||
    { cat err.txt; fail "export $m float16"; }
  "$PY" "$CHECK" model zoo/$m.f16.onnx --name "$m float16" || fail "$m float16"
  rm -f zoo/$m.f16.onnx
done

# Embedding models (a classifier head, docs/LARGE_SCALE.md): the export outputs the head's logits (as
# predict computes them: scale x cosine for a margin head, the dot product for a plain one) and the
# embedding; both within 1e-4 of fastnn's, float16 within 1e-2.
"$FASTNN" convert synthetic --output synth --num-gpus 1 --shards-per-gpu 1 --num-records 64 --num-test-records 16 \
  --height 28 --width 28 --channels 1 --num-classes 10 --image-format png -q > /dev/null || fail "convert synthetic"
for loss in arcface softmax; do
  "$FASTNN" train --model_name=mlp --dataset_dir=synth --output_dir=head_$loss --optimizer=momentum --learning_rate=0.05 \
    --stop_at_step=8 --batch_size=8 --save_checkpoints_steps=0 --emb_dim=16 --scale=8 --loss_type=$loss --device=cpu \
    --eval_every_n_steps=0 > train_head_$loss.log 2>&1 || { tail train_head_$loss.log; fail "train head $loss"; }
  "$FASTNN" export --checkpoint head_$loss -o head_$loss.onnx --test_data head_${loss}_td -q 2>err.txt ||
    { cat err.txt; fail "export head $loss"; }
  "$PY" "$CHECK" model head_$loss.onnx --test_data head_${loss}_td --name "mlp $loss head" || fail "head $loss"
  "$FASTNN" export --checkpoint head_$loss -o head_$loss.f16.onnx --dtype float16 --test_data head_${loss}_td16 -q ||
    fail "export head $loss float16"
  "$PY" "$CHECK" model head_$loss.f16.onnx --test_data head_${loss}_td16 --rtol 1e-2 --name "mlp $loss head float16" ||
    fail "head $loss float16"
done

# A net of the user's own (the job file's `net`) with the layers no zoo model has (hard_swish), trained a
# few steps so that no weight is at its initial value: logits within 1e-4 of fastnn's; predict and the
# TensorFlow export build the same net from the checkpoint (not the default zoo model).
cat > own_net.pbtxt <<'NET'
net {
  name: "own"
  input { channels: 1 height: 28 width: 28 }
  layers { name: "conv1" inputs: "data" conv { filters: 8 kernel: 3 stride: 2 padding: "same" } }
  layers { name: "bn1" inputs: "conv1" batch_norm {} }
  layers { name: "hs1" inputs: "bn1" hard_swish {} }
  layers { name: "gap" inputs: "hs1" global_avg_pool {} }
  layers { name: "logits" inputs: "gap" fully_connected { units: 10 } }
  logits: "logits"
}
NET
"$FASTNN" train --config own_net.pbtxt --dataset_dir=synth --output_dir=own --optimizer=momentum --learning_rate=0.05 \
  --stop_at_step=8 --batch_size=8 --save_checkpoints_steps=0 --device=cpu --eval_every_n_steps=0 > train_own.log 2>&1 ||
  { tail train_own.log; fail "train own net"; }
"$FASTNN" export --checkpoint own -o own.onnx --test_data own_td -q 2>err.txt || { cat err.txt; fail "export own net"; }
"$PY" "$CHECK" model own.onnx --test_data own_td --name "own net (hard_swish)" || fail "own net"
"$FASTNN" predict --checkpoint own --input synth/test-00000-of-00001.tfrecord -q > own.jsonl || fail "predict own net"
[ "$(wc -l < own.jsonl)" -eq 16 ] || fail "predict own net: $(wc -l < own.jsonl) lines, want 16"
"$FASTNN" export --checkpoint own --format tf-checkpoint -o own_tf/own -q || fail "export own net as a TF checkpoint"

if [ ! -f "$DATA_SRC/t10k-images-idx3-ubyte.gz" ]; then
  echo "$DATA_SRC has no Fashion-MNIST: the trained-checkpoint part is skipped"
  exit 0
fi
"$FASTNN" convert mnist --input "$DATA_SRC" --output data --num-gpus 1 --shards-per-gpu 4 -q > /dev/null || fail "convert"
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=lenet --batch_size=32 --optimizer=momentum \
  --learning_rate=0.01 --stop_at_step=100 --device=cpu > train.log 2>&1 || { tail train.log; fail "train lenet"; }
"$FASTNN" train --model_name=resnet_cifar_20 --dataset_dir=data --output_dir=resnet --batch_size=16 \
  --optimizer=momentum --learning_rate=0.01 --stop_at_step=15 --device=cpu --eval_files=test-00000-of-00004.tfrecord \
  > train_resnet.log 2>&1 ||
  { tail train_resnet.log; fail "train resnet_cifar_20"; }

"$FASTNN" export --checkpoint lenet --format onnx -o lenet.onnx --test_data lenet_td --test_samples 16 2>export.log ||
  { cat export.log; fail "export lenet"; }
cat export.log
grep -q "lenet, 10 classes, 28x28x1 NCHW, lenet preprocessing, float32" export.log || fail "summary line"
"$PY" "$CHECK" model lenet.onnx --test_data lenet_td --name "lenet checkpoint" || fail "lenet checkpoint"
"$PY" - lenet.onnx data/labels.txt <<'PY' || fail "lenet metadata"
import json, sys, onnx
md = {p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}
names = [l.split(":", 1)[1].strip() for l in open(sys.argv[2])]
assert json.loads(md["fastnn.class_names"]) == names, md.get("fastnn.class_names")
assert md["fastnn.input_mean"] == "128" and md["fastnn.input_scale"] == "0.0078125", md
assert md["fastnn.step"] == "100" and md["fastnn.source"].endswith("ckpt-100"), md
PY
"$FASTNN" export --checkpoint lenet -o lenet16.onnx --dtype float16 --test_data lenet16_td -q || fail "export lenet float16"
"$PY" "$CHECK" model lenet16.onnx --test_data lenet16_td --rtol 1e-2 --name "lenet float16" || fail "lenet float16"
[ $(stat -c %s lenet16.onnx) -lt $(( $(stat -c %s lenet.onnx) * 6 / 10 )) ] || fail "float16 file is not about half"
"$FASTNN" export --checkpoint lenet -o ext/lenet.onnx --external_data always -q || fail "export external"
[ -s ext/lenet.onnx.data ] && [ $(stat -c %s ext/lenet.onnx) -lt 65536 ] || fail "external data layout"
"$PY" "$CHECK" model ext/lenet.onnx --test_data lenet_td --name "lenet external data" || fail "external data"

ckpt=$(ls resnet/ckpt-*.meta.pbtxt | sort -V | tail -1); ckpt=${ckpt%.meta.pbtxt}
"$FASTNN" export --checkpoint "$ckpt" -o resnet20.onnx --test_data resnet20_td --test_samples 8 -q || fail "export resnet"
"$PY" "$CHECK" model resnet20.onnx --test_data resnet20_td --name "resnet_cifar_20 checkpoint" || fail "resnet_cifar_20"

# predict of the ResNet-20 checkpoint on a quarter of the test split: on the fast CPU kernels (NHWC, each
# batch norm folded into its convolution, weights kept in oneDNN's format) and on the reference ones
# (NCHW, unfolded), the same top-1 for all but a few near-ties and probabilities within 1e-3.
"$FASTNN" predict --checkpoint resnet --input data/test-00000-of-00004.tfrecord --device=cpu --batch_size=100 -q \
  > fast.jsonl || fail "predict resnet"
FASTNN_CPU_KERNELS=reference "$FASTNN" predict --checkpoint resnet --input data/test-00000-of-00004.tfrecord \
  --device=cpu --batch_size=100 -q > reference.jsonl || fail "predict resnet, reference kernels"
"$PY" - fast.jsonl reference.jsonl <<'PY' || fail "folded predict differs from the reference"
import json, sys
fast = [json.loads(l) for l in open(sys.argv[1])]
ref = [json.loads(l) for l in open(sys.argv[2])]
assert len(fast) == len(ref) == 2500, (len(fast), len(ref))
same = sum(f["label"] == r["label"] for f, r in zip(fast, ref))
diff = max(abs(a[1] - b[1]) for f, r in zip(fast, ref) for a, b in zip(f["topk"], r["topk"]) if a[0] == b[0])
print(f"resnet_cifar_20 predict, fast vs reference kernels: {same}/2500 same top-1, max probability difference {diff:.2e}")
assert same >= 2495 and diff < 1e-3
PY
# --precision bf16 on the CPU: the folded convolutions in bfloat16 where the CPU has bf16 instructions
# (else refused, naming them); refused with oneDNN capped below them, and for a model with no batch norm.
has_bf16=false
"$FASTNN" --version | grep -q -E "CPU kernels: oneDNN .*(bf16|amx)" && has_bf16=true
if $has_bf16; then
  "$FASTNN" predict --checkpoint resnet --input data/test-00000-of-00004.tfrecord --device=cpu --batch_size=100 \
    --precision bf16 2>bf16.err > bf16.jsonl || { cat bf16.err; fail "predict resnet bf16"; }
  grep -q "cpu bf16 (19 convolutions)" bf16.err || { cat bf16.err; fail "bf16: the summary line"; }
  "$PY" - fast.jsonl bf16.jsonl <<'PY' || fail "bf16 predict differs from f32 beyond bf16's rounding"
import json, sys
f32 = [json.loads(l) for l in open(sys.argv[1])]
bf16 = [json.loads(l) for l in open(sys.argv[2])]
same = sum(a["label"] == b["label"] for a, b in zip(f32, bf16))
diff = max(abs(p[1] - q[1]) for a, b in zip(f32, bf16) for p, q in zip(a["topk"], b["topk"]) if p[0] == q[0])
print(f"resnet_cifar_20 predict, bf16 vs f32: {same}/{len(bf16)} same top-1, max probability difference {diff:.2e}")
assert len(bf16) == 2500 and same >= 2475 and diff < 0.05
PY
else
  echo "this CPU has no bf16 instructions: the bf16 predict check is skipped"
fi
DNNL_MAX_CPU_ISA=AVX2 "$FASTNN" predict --checkpoint resnet --input data/test-00000-of-00004.tfrecord --device=cpu \
  --precision bf16 -q > /dev/null 2>err.txt && fail "bf16 without bf16 instructions was not refused"
grep -q "needs oneDNN with bf16 instructions" err.txt || { cat err.txt; fail "bf16 refusal message"; }
"$FASTNN" predict --checkpoint lenet --input data/test-00000-of-00004.tfrecord --device=cpu --precision bf16 -q \
  > /dev/null 2>err.txt && fail "bf16 for LeNet (no batch norm) was not refused"
# Without bf16 instructions the CPU's refusal comes first (AMD Zen 3, Intel before Cooper Lake).
lenet_refusal="LeNet has none here"
$has_bf16 || lenet_refusal="needs oneDNN with bf16 instructions"
grep -q "$lenet_refusal" err.txt || { cat err.txt; fail "bf16 LeNet refusal message"; }
"$FASTNN" predict --checkpoint lenet --input data --device=cpu --batch_size=500 -q > pred.jsonl || fail "predict"
"$PY" "$CHECK" fashion lenet.onnx pred.jsonl "$DATA_SRC" || fail "lenet top-1 on the test set"
"$PY" "$CHECK" fashion lenet16.onnx pred.jsonl "$DATA_SRC" --max_top1_diff 20 || fail "lenet float16 top-1"
echo "export_onnx: ok"
