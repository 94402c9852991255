#!/usr/bin/env bash
# Data-parallel scaling on a machine with several GPUs (one process per GPU, OpenMPI's mpirun):
#
#   scripts/gpu/scaling.sh [FASTNN] [MAX_GPUS]      # default build/bin/fastnn, every GPU nvidia-smi lists
#
# For N = 1, 2, 4, ... up to MAX_GPUS: `fastnn bench allreduce` over N ranks (NCCL bus bandwidth at
# 1 MiB .. 256 MiB), then ResNet-50 fp16 training steps (synthetic data, batch 256 per GPU) with the
# gradients averaged over NCCL every step; prints images/s, images/s per GPU and the scaling efficiency
# against N = 1 (the same command with one rank, gradients still through NCCL, so the efficiency is the
# communication's cost alone). docs/DISTRIBUTED.md says what to expect from the bucket sizes.
# One GPU gives the N = 1 row only (what scripts/gpu/benchmarks.sh records). Env: STEPS (default 30).
set -euo pipefail
fastnn=${1:-build/bin/fastnn}
max=${2:-$(nvidia-smi -L | wc -l)}
steps=${STEPS:-30}
command -v mpirun >/dev/null || { echo "scaling.sh: mpirun not found (OpenMPI)" >&2; exit 1; }
[[ $(id -u) == 0 ]] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

base=""
printf '%-6s %14s %14s %12s %s\n' GPUs "img/s" "img/s/GPU" efficiency "NCCL busbw GB/s at 1/16/256 MiB"
for ((n = 1; n <= max; n *= 2)); do
  bw=$(mpirun -np "$n" "$fastnn" bench allreduce --device=cuda --comm_backend=nccl --sizes 1048576,16777216,268435456 \
         --iters 20 --json | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(" / ".join("%.1f" % r["busbw_gbps"] for r in d["rows"]))')
  # Every rank prints its own JSON line; each rank's images/s is its share, so the job's is the sum.
  ips=$(mpirun -np "$n" "$fastnn" bench train --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 \
          --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --comm_backend=nccl --steps "$steps" --warmup 5 \
          --json | python3 -c 'import json,sys; print(sum(json.loads(l)["images_per_sec"] for l in sys.stdin if l.startswith("{")))')
  [[ -z $base ]] && base=$ips
  python3 -c "import sys; n,ips,base=int(sys.argv[1]),float(sys.argv[2]),float(sys.argv[3]); print('%-6d %14.1f %14.1f %11.1f%% %s' % (n, ips, ips/n, 100*ips/(n*base), sys.argv[4]))" "$n" "$ips" "$base" "$bw"
done
