#!/usr/bin/env bash
# PyTorch on the same GPU in the same call (called by scripts/gpu/run.sh). Prints "name<TAB>value"
# lines for run.sh's table; full JSON results go to $FASTNN_GPU_OUT/peer_*.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${FASTNN_GPU_OUT:-/tmp}
# FASTNN_BENCH_ONLY (as in benchmarks.sh): only the rows whose name matches run.
only() { [[ -z ${FASTNN_BENCH_ONLY:-} || $1 =~ $FASTNN_BENCH_ONLY ]]; }
bench() {  # name, then arguments of torch_gpu_train_bench.py
  local name=$1; shift
  only "$name" || return 0
  if PYTHONUNBUFFERED=1 timeout 120 python3 scripts/peers/torch_gpu_train_bench.py "$@" >"$out/peer_$name.json" 2>"$out/peer_$name.log"; then
    printf 'pytorch %s\t%s img/s\n' "$name" "$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["images_per_sec"], 1))' "$out/peer_$name.json")"
  else
    printf 'pytorch %s\tfailed (see peer_%s.log)\n' "$name" "$name"
  fi
}
bench resnet50_fp32 --model resnet50 --batch-size 256 --precision fp32
[[ ${FASTNN_BENCH_TF32:-0} == 1 ]] && bench resnet50_tf32 --model resnet50 --batch-size 256 --precision tf32
bench resnet50_amp_cl --model resnet50 --batch-size 256 --precision amp --channels-last
# The same network as fastnn's resnet_v1_50 (TF-slim's v1 layout, 3.48 GMAC): the ratio the issue asks for.
bench tfslim_resnet_v1_50_fp32 --model tfslim_resnet_v1_50 --batch-size 256 --precision fp32
bench tfslim_resnet_v1_50_amp_cl --model tfslim_resnet_v1_50 --batch-size 256 --precision amp --channels-last
# Where PyTorch's step goes, by kernel kind (the peer of fastnn's resnet50_fp16_nhwc_profile row).
if only tfslim_resnet_v1_50_amp_cl_profile; then
  if PYTHONUNBUFFERED=1 timeout 150 python3 scripts/peers/torch_gpu_train_bench.py --model tfslim_resnet_v1_50 --batch-size 256 \
      --precision amp --channels-last --profile 5 >"$out/peer_tfslim_resnet_v1_50_amp_cl_profile.json" 2>"$out/peer_tfslim_resnet_v1_50_amp_cl_profile.log"; then
    python3 - "$out/peer_tfslim_resnet_v1_50_amp_cl_profile.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); p = d.get("profile", {})
kinds = ", ".join(f"{k} {v:.1f}" for k, v in p.get("kinds_ms_per_step", {}).items()) or p.get("error", "no profile")
passes = ", ".join(f"{k} {v:.1f}" for k, v in p.get("convolution_passes_ms_per_step", {}).items())
kinds += f" (convolution by pass: {passes})" if passes else ""
print(f"pytorch tfslim_resnet_v1_50_amp_cl_profile\t{d['ms_per_step']:.1f} ms/step, kernels {p.get('kernel_ms_per_step', 0):.1f} ms: {kinds}")
PY
  else
    printf 'pytorch tfslim_resnet_v1_50_amp_cl_profile\tfailed (see peer_tfslim_resnet_v1_50_amp_cl_profile.log)\n'
  fi
fi
bench tfslim_resnet_v1_50_bf16_cl --model tfslim_resnet_v1_50 --batch-size 256 --precision bf16 --channels-last
bench tfslim_mobilenet_v2_amp_cl --model tfslim_mobilenet_v2 --batch-size 128 --precision amp --channels-last
bench inception_v3_amp_cl --model inception_v3 --batch-size 128 --precision amp --channels-last
bench vgg16_amp_cl --model vgg16 --batch-size 128 --precision amp --channels-last

# Fashion-MNIST time to 93% (peer of benchmarks.sh's fastnn fashion_resnet20_time_to_93): ResNet-20, the
# same recipe, from the raw IDX files in $FASTNN_GPU_RAW; its data pipeline lives on the GPU (see the script).
raw=${FASTNN_GPU_RAW:-}
if ! only fashion_resnet20_time_to_93; then
  :
elif [[ -n $raw && -f $raw/train-images-idx3-ubyte.gz ]]; then
  PYTHONUNBUFFERED=1 timeout 200 python3 scripts/peers/torch_fashion_resnet.py --data "$raw" >"$out/peer_fashion_resnet20.json" 2>"$out/peer_fashion_resnet20.log"
  rc=$?
  if [[ $rc == 0 ]]; then
    python3 - "$out/peer_fashion_resnet20.json" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
top1 = dict((e, t) for e, t in d["evals"]).get(d["target_epoch"])
run = f"train {d['train_seconds']:.1f} s, run {d['run_seconds']:.1f} s"
if d["time_to_target_s"] is not None:
    print(f"pytorch fashion_resnet20_time_to_93\t{d['time_to_target_s']:.1f} s (epoch {d['target_epoch']}, top1 {top1:.4f}; {run})")
else:
    print(f"pytorch fashion_resnet20_time_to_93\tnot reached (best top1 {d['best_top1']:.4f}; {run})")
PY
  elif [[ $rc == 77 ]]; then
    printf 'pytorch fashion_resnet20_time_to_93\tskipped (no PyTorch or GPU, see peer_fashion_resnet20.log)\n'
  else
    printf 'pytorch fashion_resnet20_time_to_93\tfailed (see peer_fashion_resnet20.log)\n'
  fi
else
  printf 'pytorch fashion_resnet20_time_to_93\tskipped (no FASTNN_GPU_RAW)\n'
fi
