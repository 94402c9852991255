#!/usr/bin/env bash
# fastnn's GPU benchmarks (called by scripts/gpu/run.sh with the bundle's bin/ on PATH). Prints
# "name<TAB>value" lines for run.sh's table; full JSON / logs go to $FASTNN_GPU_OUT (bench_*.json).
#
#   training images/s on synthetic data (fastnn bench train, CUDA events, after warm-up):
#     ResNet-50 224x224 batch 256 fp32 (TF32 off, and TF32 on) and fp16; Inception-v3 299x299 and
#     VGG-16 224x224 at batch 128 fp16 (the batch sizes of scripts/gpu/peers.sh, so rows compare)
#   Fashion-MNIST (data converted by run.sh in $FASTNN_GPU_DATA): resnet_cifar_20 trained with
#     fastnn train --device=cuda, evaluated every epoch; the time to the first evaluation >= 93% top-1,
#     interpolated from the run's wall time by step (evaluation time excluded by the loop's clock).
#   ResNet-50 fp16 profiled per layer (bench train --profile); real JPEG shards trained with uint8 and
#   with float32 input batches (data-wait share, host CPU time per step).
#   The classifier head at 1.25 M classes x 512 (dist_arcface, with and without PartialFC): peak GPU
#   memory and time per step.
set -uo pipefail
out=${FASTNN_GPU_OUT:-/tmp}
steps=${FASTNN_BENCH_STEPS:-30}
# FASTNN_BENCH_ONLY: an extended regular expression; only the rows whose name it matches run (a short
# device lease runs the rows that matter now: FASTNN_BENCH_ONLY='^resnet50_fp16($|_nhwc)').
only() { [[ -z ${FASTNN_BENCH_ONLY:-} || $1 =~ $FASTNN_BENCH_ONLY ]]; }

bench() {  # name, then fastnn bench train flags
  local name=$1; shift
  only "$name" || return 0
  if timeout 120 fastnn bench train --json --steps "$steps" --warmup 5 --seed=1 "$@" >"$out/bench_$name.json" 2>"$out/bench_$name.log"; then
    printf 'fastnn %s\t%s img/s\n' "$name" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(round(d["images_per_sec"],1), "(loss", round(d["first_loss"],3), "->", round(d["last_loss"],3), end=")")' "$out/bench_$name.json")"
  else
    printf 'fastnn %s\tfailed (see bench_%s.log)\n' "$name" "$name"
  fi
}

# Since 2026-11-27 a run on cuda defaults to data_format=NHWC with fuse_ops (measured faster): the rows
# below name their layout and fusion; resnet50_fp16_default is what a user's run gets without either.
bench resnet50_fp16_default --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale
# The same with the stem's 3 channels zero-padded to 8 (conv_pad_channels=true, the default until the H200 run of 2026-11-27 measured
# it 5% slower: 5927.7 against 6233.7 images/s on an H200).
bench resnet50_fp16_default_pad --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --conv_pad_channels=true
# The same with every cuDNN algorithm timed per layer shape (PyTorch's peer runs cudnn.benchmark, the same idea).
bench resnet50_fp16_default_exhaustive --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --conv_search=exhaustive
# The same at batch 128, the JPEG row's batch (jpeg_resnet50_fp16 below): the H200 JPEG run (2026-11-27) made 3066 img/s
# with no data wait, half of the batch-256 synthetic step; this says how much of that is the batch.
bench resnet50_fp16_default_b128 --model_name=resnet_v1_50 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale
# The same through cuDNN's graph API (conv_api=graph: its heuristics reach the sm90 engines PyTorch's
# convolutions ran on in the H200 profile of 2026-11-27), heuristic and timed.
bench resnet50_fp16_default_graphapi --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --conv_api=graph
# fuse_conv_bn: each convolution writes its batch norm's statistics in its epilogue (cuDNN's conv +
# statistics graph; the batch norm's statistics pass goes), alone and with conv_api=graph.
bench resnet50_fp16_default_fuse_conv_bn --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --fuse_conv_bn
bench resnet50_fp16_default_graphapi_fuse_conv_bn --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --conv_api=graph --fuse_conv_bn
bench resnet50_fp16_default_graphapi_exhaustive --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --conv_api=graph --conv_search=exhaustive
bench resnet50_fp32 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp32 --optimizer=momentum --data_format=NCHW --fuse_ops=false
# fp32 (TF32 off) under the cuda defaults (NHWC, fuse_ops): the issue's fp32 row against tfslim_resnet_v1_50_fp32.
bench resnet50_fp32_default --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp32 --optimizer=momentum
# The same with every convolution's algorithm timed (PyTorch's peer runs with cudnn.benchmark, which
# times them): without tensor cores, fp32 3x3 convolutions have Winograd and FFT algorithms that the
# heuristic's first pick may miss.
bench resnet50_fp32_default_exhaustive --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp32 --optimizer=momentum --conv_search=exhaustive
[[ ${FASTNN_BENCH_TF32:-0} == 1 ]] && FASTNN_ALLOW_TF32=1 bench resnet50_tf32 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp32 --optimizer=momentum --data_format=NCHW --fuse_ops=false
bench resnet50_fp16 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NCHW --fuse_ops=false
bench resnet50_bf16 --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=bf16 --optimizer=momentum --data_format=NCHW --fuse_ops=false
bench mobilenet_v2_fp16 --model_name=mobilenet_v2 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NCHW --fuse_ops=false
bench mobilenet_v2_fp16_nhwc_fused_graph --model_name=mobilenet_v2 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --cuda_graph
# The same with depthwise convolutions as cuDNN's grouped convolution (depthwise_conv=cudnn): which is faster.
bench mobilenet_v2_fp16_nhwc_fused_graph_cudnn_dw --model_name=mobilenet_v2 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --cuda_graph --depthwise_conv=cudnn
# The same with the fuse_ops rewrite: one-pass batch_norm+relu and add+relu kernels on the GPU.
bench resnet50_fp16_fused --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NCHW --fuse_ops
# The same step replayed from captured CUDA graphs (cuda_graph): what the host's launches cost a step.
bench resnet50_fp16_fused_graph --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NCHW --fuse_ops --cuda_graph
# A small net where launches dominate: ResNet-20 at Fashion-MNIST's 28x28, batch 128, eager and graphed.
bench resnet20_fp32 --model_name=resnet_cifar_20 --image-size 28 --batch_size=128 --device=cuda --precision=fp32 --optimizer=momentum --data_format=NCHW --fuse_ops=false
bench resnet20_fp32_graph --model_name=resnet_cifar_20 --image-size 28 --batch_size=128 --device=cuda --precision=fp32 --optimizer=momentum --cuda_graph --data_format=NCHW --fuse_ops=false
# The same step with its gradients averaged over NCCL (one process): the allreduce's cost per step.
bench resnet50_fp16_nccl --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --comm_backend=nccl --data_format=NCHW --fuse_ops=false
bench inception_v3_fp16 --model_name=inception_v3 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NCHW --fuse_ops=false
bench vgg16_fp16 --model_name=vgg_16 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NCHW --fuse_ops=false
# NHWC (data_format=NHWC: cuDNN's tensor-core layout, NHWC batch norm / pooling / concat kernels), plain and
# with every step-level change together (fused, graphed): the rows to hold against PyTorch AMP channels_last.
bench resnet50_fp16_nhwc --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops=false
bench resnet50_fp16_nhwc_nopad --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --conv_pad_channels=false --fuse_ops=false
bench resnet50_fp16_nhwc_fused_graph --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --cuda_graph
bench resnet50_bf16_nhwc_fused_graph --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=bf16 --optimizer=momentum --data_format=NHWC --fuse_ops --cuda_graph
bench inception_v3_fp16_nhwc --model_name=inception_v3 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --cuda_graph
bench inception_v3_fp16_nhwc_graphapi --model_name=inception_v3 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --cuda_graph --conv_api=graph
bench mobilenet_v2_fp16_nhwc_fused_graph_graphapi --model_name=mobilenet_v2 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --cuda_graph --conv_api=graph
bench vgg16_fp16_nhwc --model_name=vgg_16 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --cuda_graph
# Where ResNet-50 fp16's step goes (CUDA events per layer and phase, 5 profiled steps after the timed ones):
# bench_resnet50_fp16_profile.json has every layer; the table line gives the phases and the largest ops.
profile() {  # name, then fastnn bench train flags
  local name=$1; shift
  only "$name" || return 0
  bench "$name" "$@" --profile 5
  [[ -f $out/bench_$name.json ]] || return
  python3 - "$out/bench_$name.json" "$name" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])).get("profile", {})
step = p.get("step_ms", 0) or 1
phases = ", ".join(f"{k} {v:.1f}" for k, v in p.get("phases", {}).items())
ops = sorted(p.get("ops", {}).items(), key=lambda kv: -kv[1])[:6]
parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(p.get("parts", {}).items()))  # ms, as the peer's convolution passes
print(f"fastnn {sys.argv[2]}\t{p.get('step_ms', 0):.1f} ms/step: {phases}; ops " + ", ".join(f"{k} {100 * v / step:.0f}%" for k, v in ops)
      + (f"; parts (ms) {parts}" if parts else ""))
PY
}
profile resnet50_fp16_profile --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NCHW --fuse_ops=false
profile resnet50_fp16_nhwc_profile --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops
# The same through cuDNN's graph API: the convolutions' share against resnet50_fp16_nhwc_profile's.
profile resnet50_fp16_graphapi_profile --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --conv_api=graph
# The same with fuse_conv_bn: the conv2d+batch_norm* layers against the conv2d and batch_norm groups above.
profile resnet50_fp16_fuse_conv_bn_profile --model_name=resnet_v1_50 --batch_size=256 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops --fuse_conv_bn
# Inception-v3's step by op (0.89 of PyTorch on 2026-11-27: its average pools ran on the one-element kernels).
profile inception_v3_fp16_nhwc_profile --model_name=inception_v3 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops
# MobileNet v2's step by op (2026-11-27, H200: depthwise_conv2d 50.8 of 75.4 ms before the packed kernels).
profile mobilenet_v2_fp16_nhwc_profile --model_name=mobilenet_v2 --batch_size=128 --device=cuda --precision=fp16 --optimizer=momentum --loss_scale=1024 --dynamic_loss_scale --data_format=NHWC --fuse_ops

# NCCL allreduce of float32 buffers (one process: what a world of one costs; scripts/gpu/scaling.sh for N GPUs).
if ! only nccl_allreduce_1rank; then
  :
elif timeout 60 fastnn bench allreduce --device=cuda --sizes 1048576,16777216,104857600 --iters 20 --json >"$out/bench_allreduce.json" 2>"$out/bench_allreduce.log"; then
  python3 - "$out/bench_allreduce.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = ", ".join("%d MiB %.3f ms (%.0f GB/s)" % (r["bytes"] >> 20, r["median_ms"], r["algbw_gbps"]) for r in d["rows"])
print("fastnn nccl_allreduce_1rank\t" + rows)
PY
else
  printf 'fastnn nccl_allreduce_1rank\tfailed (see bench_allreduce.log)\n'
fi

# Real JPEG shards through the pipeline into the GPU step: 2000 photo-sized JPEGs (400-600 px, made from
# the two carried photographs), ResNet-50 fp16 batch 128, the inception preset at 224 on 16 pipeline
# threads: the share of the step loop's time spent waiting for data (the log's "data wait").
photos=${FASTNN_GPU_PHOTOS:-}
if [[ -n $photos && -f $photos/china.jpg ]] && only jpeg_resnet50_fp16; then
  jp=$out/jpeg_shards
  if python3 scripts/bench/make_photo_folder.py --out /tmp/fastnn-photos --count 2000 --classes 10 "$photos"/*.jpg >"$out/jpeg_make.log" 2>&1 &&
     fastnn convert image-folder --input /tmp/fastnn-photos --output "$jp" --num-gpus 1 --validation-count 500 -q --overwrite >>"$out/jpeg_make.log" 2>&1; then
    # uint8 NHWC in pinned memory normalised on the GPU (the default). The 2026-11-27 H200 run compared uint8 with float32
    # (3066 and 3166 img/s, both 0% data wait), half the batch-256 synthetic step's rate. Four runs tell
    # where the rest goes: `uint8` as that run; `uint8_cuda_graph`, the step replayed from CUDA graphs (if
    # the 16 decoding threads slow the thread that launches the step's ~1,000 kernels, this one is
    # faster); `uint8_raw`, the same loop on raw 224x224 pixel records (no JPEG decode: the loop's own
    # speed, to set beside resnet50_fp16_default_b128); `uint8_threads8`, 8 pipeline threads instead of 16
    # (at about 1 ms of CPU an image, 8 still make 8,000 images/s: if this one is faster, the idle
    # workers were taking the launching thread's core).
    raw=$out/raw_shards
    fastnn convert synthetic --output "$raw" --num-gpus 1 --num-records 2000 --height 224 --width 224 --channels 3 \
      --num-classes 10 --image-format raw -q --overwrite >>"$out/jpeg_make.log" 2>&1 || raw=""
    timer=(); [[ -x /usr/bin/time ]] && timer=(/usr/bin/time -f "%U %S" -o)
    for variant in uint8 uint8_cuda_graph uint8_raw uint8_threads8; do
      graph_flag=(); [[ $variant == *_cuda_graph ]] && graph_flag=(--cuda_graph)
      threads=16; [[ $variant == *_threads8 ]] && threads=8
      shards=$jp; [[ $variant == *_raw ]] && shards=$raw
      [[ -n $shards ]] || { printf 'fastnn jpeg_resnet50_fp16_%s_input\tfailed (see jpeg_make.log)\n' "$variant"; continue; }
      rm -rf "$out/jpeg_run_$variant"
      if "${timer[@]}" ${timer:+"$out/jpeg_cpu_$variant.txt"} timeout 150 fastnn train --model_name=resnet_v1_50 --dataset_dir="$shards" \
          --output_dir="$out/jpeg_run_$variant" --device=cuda --precision=fp16 --input_dtype=uint8 "${graph_flag[@]}" \
          --loss_scale=1024 --dynamic_loss_scale --batch_size=128 --optimizer=momentum --learning_rate=0.01 \
          --preprocessing_name=inception --num_preprocessing_threads=$threads --stop_at_step=200 --log_loss_every_n_iters=50 \
          --hooks=StopAtStepHook,LoggingTensorHook --eval_every_n_steps=0 >"$out/jpeg_train_$variant.log" 2>&1; then
        python3 - "$out/jpeg_run_$variant/metrics.jsonl" "$out/jpeg_cpu_$variant.txt" "$variant" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
train = [r for r in rows if r.get("event") == "train"][1:]  # the first window holds start-up
wait = sum(r["data_wait_fraction"] for r in train) / max(1, len(train))
ips = sum(r["images_per_sec"] for r in train) / max(1, len(train))
try:
    user, sys_s = (float(x) for x in open(sys.argv[2]).read().split()[-2:])
    cpu = f", host CPU {user + sys_s:.0f} s for 200 steps ({1000 * (user + sys_s) / 200:.0f} ms/step)"
except Exception:
    cpu = ""
# metrics.jsonl's CPU fields: the process and the step loop's thread, in cores; what the rest costs an image
# is the input pipeline's price (the question of how many threads each 1,000 images/s needs).
proc = sum(r.get("host_cpu_cores", 0) for r in train) / max(1, len(train))
loop = sum(r.get("loop_thread_cpu_cores", 0) for r in train) / max(1, len(train))
split = f", CPU {proc:.2f} cores of which the loop thread {loop:.2f}, the rest {1000 * (proc - loop) / max(ips, 1):.2f} ms an image" if proc else ""
print(f"fastnn jpeg_resnet50_fp16_{sys.argv[3]}_input\t{100 * wait:.1f}% of step time waiting, {ips:.0f} img/s (steps 51-200){cpu}{split}")
PY
      else
        printf 'fastnn jpeg_resnet50_fp16_%s_input\tfailed (see jpeg_train_%s.log)\n' "$variant" "$variant"
      fi
    done
  else
    printf 'fastnn jpeg_resnet50_fp16\tfailed (see jpeg_make.log)\n'
  fi
fi

# Fashion-MNIST time to 93%: ResNet-20 (CIFAR layout), momentum 0.9, batch 128, lr 0.1 cosine, wd 5e-4,
# 15 epochs, fp32 on the GPU. Same recipe as the PyTorch peer row (scripts/gpu/peers.sh) when it has one.
# Run eagerly and with the step replayed from CUDA graphs (cuda_graph).
data=${FASTNN_GPU_DATA:-}
time_to_93() {  # row name, extra flags
  local name=$1; shift
  only "$name" || return 0
  local run=$out/${name}_run
  rm -rf "$run"
  local start end
  start=$(date +%s.%N)
  if timeout 300 fastnn train --model_name=resnet_cifar_20 --dataset_dir="$data" --output_dir="$run" --device=cuda \
      --precision=fp32 --batch_size=128 --optimizer=momentum --momentum=0.9 --learning_rate=0.1 \
      --learning_rate_decay_type=cosine --weight_decay=5e-4 --num_epochs=15 --eval_every_n_steps=468 \
      --log_loss_every_n_iters=100 --hooks=LoggingTensorHook "$@" >"$out/${name}_train.log" 2>&1; then
    end=$(date +%s.%N)
    python3 - "$run/metrics.jsonl" "$start" "$end" "$name" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
evals = [r for r in rows if r.get("event") == "eval"]
wall = float(sys.argv[3]) - float(sys.argv[2])
name = sys.argv[4]
hit = next((r for r in evals if r["top1"] >= 0.93), None)
best = max((r["top1"] for r in evals), default=0)
train = evals[-1].get("train_seconds", 0) if evals else 0
if hit:  # train_seconds: the step loop's time up to that evaluation (evaluations excluded), as the peer's
    print(f"fastnn {name}\t{hit['train_seconds']:.1f} s (epoch {hit['epoch']:.0f}, top1 {hit['top1']:.4f}; train {train:.1f} s, run {wall:.1f} s)")
else:
    print(f"fastnn {name}\tnot reached (best top1 {best:.4f}; train {train:.1f} s, run {wall:.1f} s)")
PY
  else
    printf 'fastnn %s\tfailed (see %s_train.log)\n' "$name" "$name"
  fi
}
if [[ -n $data && -f $data/manifest.json ]]; then
  time_to_93 fashion_resnet20_time_to_93
  time_to_93 fashion_resnet20_graph_time_to_93 --cuda_graph
else
  printf 'fastnn fashion_resnet20_time_to_93\tskipped (no FASTNN_GPU_DATA)\n'
fi

# The model-parallel classifier head at one GPU's share of 10 M classes x 512 (1.25 M rows; issue 14,
# docs/LARGE_SCALE.md): LeNet's embedding (emb_dim 512) under dist_arcface on Fashion-MNIST (its labels
# 0..9 among 1,250,000 classes), fp16 backbone (the head computes in f32), batch 1024 = the global batch
# of 8 ranks x 128, 40 steps, with and without PartialFC at 0.1. Measured: peak GPU memory (nvidia-smi
# every 0.1 s, the whole process), the start-up line's estimate of the head, ms per step over the log
# windows after the first (metrics.jsonl), and the final evaluation's loss over every row. About 30 s.
head_scale() {  # row name, extra flags
  local name=$1; shift
  only "$name" || return 0
  local run=$out/${name}_run mem=$out/${name}_memory.txt smi=""
  rm -rf "$run"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$mem" 2>/dev/null &
    smi=$!
  fi
  if timeout 120 fastnn train --model_name=lenet --dataset_dir="$data" --output_dir="$run" --device=cuda \
      --precision=fp16 --loss_scale=1024 --dynamic_loss_scale --num_classes=1250000 --emb_dim=512 \
      --loss_type=dist_arcface --batch_size=1024 --optimizer=momentum --learning_rate=0.01 --stop_at_step=40 \
      --log_loss_every_n_iters=10 --hooks=StopAtStepHook,LoggingTensorHook --eval_every_n_steps=0 "$@" \
      >"$out/${name}_train.log" 2>&1; then
    [[ -n $smi ]] && kill "$smi" 2>/dev/null
    python3 - "$run/metrics.jsonl" "$mem" "$out/${name}_train.log" "$name" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
train = [r for r in rows if r.get("event") == "train"][1:] or [r for r in rows if r.get("event") == "train"][-1:]
ips = sum(r["images_per_sec"] for r in train) / max(1, len(train))
evals = [r for r in rows if r.get("event") == "eval"]
try:
    peak = "%.1f GiB" % (max(int(l) for l in open(sys.argv[2]) if l.strip().isdigit()) / 1024)
except Exception:
    peak = "n/a"
est = re.search(r"^classifier head, rank 0 of 1: .*= ([0-9.]+ [KMG]i?B)$", open(sys.argv[3]).read(), re.M)
ev = f", eval loss {evals[-1]['loss']:.3f} top1 {evals[-1]['top1']:.4f}" if evals else ""
print(f"fastnn {sys.argv[4]}\t{1000 * 1024 / ips:.1f} ms/step, peak GPU memory {peak} (head estimate {est.group(1) if est else 'n/a'}){ev}")
PY
  else
    [[ -n $smi ]] && kill "$smi" 2>/dev/null
    printf 'fastnn %s\tfailed (see %s_train.log)\n' "$name" "$name"
  fi
}
if [[ -n $data && -f $data/manifest.json ]]; then
  head_scale head_1p25m_x512_fp16
  head_scale head_1p25m_x512_fp16_partialfc_0.1 --sample_ratio=0.1
else
  printf 'fastnn head_1p25m_x512_fp16\tskipped (no FASTNN_GPU_DATA)\n'
fi
