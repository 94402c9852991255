#!/usr/bin/env bash
# precision=bf16 on the CPU: convolutions and fully connected layers multiply in bfloat16 (f32
# accumulation, f32 master weights and everything else f32), where oneDNN has bf16 instructions
# (AVX512_BF16, AMX).
#   - Refused, naming the instructions, with oneDNN capped below them (DNNL_MAX_CPU_ISA=AVX2), and on a
#     CPU without them; refused in NCHW (data_format=NCHW), where no convolution would be bf16.
#   - Where the CPU has them: LeNet on the real Fashion-MNIST with the quickstart's recipe reaches the f32
#     bar (>= 88% test top-1, train_fashion_lenet.sh's), the log says what computes in bf16, and two runs of
#     the same seed write bitwise the same weights (a fixed thread count); `bench train --json` says cpu_bf16.
# Exit 77 (skipped) when the dataset is not installed. Takes ~1 min on 2 idle cores with bf16, seconds without.
FASTNN=$1 SRC=$2 SCRATCH=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/integration/train_helpers.bash"
set -u
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
. "$SRC/scripts/lenet_recipe.sh"

convert_fashion_mnist data
short=(--model_name=lenet --dataset_dir=data --batch_size=64 --stop_at_step=20 --device=cpu --precision=bf16
       --num_preprocessing_threads=1 --seed=3)

DNNL_MAX_CPU_ISA=AVX2 refused capped_isa "needs oneDNN with bf16 instructions (AVX512_BF16 or AMX)" -- "${short[@]}" --output_dir=runs/capped_isa
if ! "$FASTNN" --version | grep -q -E "CPU kernels: oneDNN .*(bf16|amx)"; then
  refused no_bf16 "needs oneDNN with bf16 instructions" -- "${short[@]}" --output_dir=runs/no_bf16
  echo "this CPU has no bf16 instructions: the bf16 training checks are skipped"
  exit 0
fi
refused nchw "computes the NHWC convolutions in bfloat16" -- "${short[@]}" --output_dir=runs/nchw --data_format=NCHW

# Bitwise reproducible: the same seed twice.
for run in a b; do
  "$FASTNN" train "${short[@]}" --output_dir="runs/same_$run" > "same_$run.log" 2>&1 || { cat "same_$run.log"; fail "short bf16 run $run"; }
done
grep -qF "on cpu (bf16 convolutions and fully connected layers, f32 otherwise)" same_a.log || { cat same_a.log; fail "the log does not say what runs in bf16"; }
cmp runs/same_a/ckpt-20.weights.safetensors runs/same_b/ckpt-20.weights.safetensors ||
  fail "two bf16 runs of one seed wrote different weights"
"$FASTNN" bench train --model_name=lenet --batch_size=16 --image-size 28 --num_classes=10 --steps 2 --warmup 1 \
  --precision=bf16 --json 2>/dev/null | grep -qF '"cpu_bf16":true' || fail "bench train --json does not say cpu_bf16"

start=$(date +%s)
"$FASTNN" train --model_name=lenet --dataset_dir=data --output_dir=run "${LENET_RECIPE[@]}" --device=cpu --precision=bf16 \
  > train.log 2>&1 || { cat train.log; fail "train bf16"; }
echo "train bf16: $(( $(date +%s) - start )) s"
"$FASTNN" eval --model_name=lenet --dataset_dir=data --output_dir=run --batch_size=500 --json > eval.json 2> eval.err ||
  { cat eval.err; fail "eval"; }
python3 - eval.json <<'PY' || fail "bf16 test accuracy below 88%"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["num_examples"] == 10000, j
print(f"Fashion-MNIST test top-1 after bf16 training {100 * j['top1']:.2f}%")
assert j["top1"] >= 0.88, j["top1"]
PY
echo "train_cpu_bf16: ok"
