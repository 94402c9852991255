#!/usr/bin/env bash
# PyTorch on the same GPU in the same call (called by scripts/gpu/run.sh). Prints "name<TAB>value"
# lines for run.sh's table; full JSON results go to $FASTNN_GPU_OUT/peer_*.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${FASTNN_GPU_OUT:-/tmp}
bench() {  # name, then arguments of torch_gpu_train_bench.py
  local name=$1; shift
  if PYTHONUNBUFFERED=1 python3 scripts/peers/torch_gpu_train_bench.py "$@" >"$out/peer_$name.json" 2>"$out/peer_$name.log"; then
    printf 'pytorch %s\t%s img/s\n' "$name" "$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["images_per_sec"], 1))' "$out/peer_$name.json")"
  else
    printf 'pytorch %s\tfailed (see peer_%s.log)\n' "$name" "$name"
  fi
}
bench resnet50_fp32 --model resnet50 --batch-size 256 --precision fp32
bench resnet50_tf32 --model resnet50 --batch-size 256 --precision tf32
bench resnet50_amp_cl --model resnet50 --batch-size 256 --precision amp --channels-last
bench inception_v3_amp_cl --model inception_v3 --batch-size 128 --precision amp --channels-last
bench vgg16_amp_cl --model vgg16 --batch-size 128 --precision amp --channels-last
