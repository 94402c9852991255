#!/usr/bin/env python3
"""PyTorch training throughput on synthetic data: the peer of `fastnn` GPU training benchmarks.

One training step = forward, cross-entropy loss (Inception-v3: + 0.4 x the aux head's loss, as
FastNN), backward, SGD with momentum 0.9. Synthetic inputs: random normal images and random labels,
made on the GPU once (the input pipeline is not measured). Timed with CUDA events over --steps steps
after --warmup steps; prints one JSON object with images_per_sec.

  python3 scripts/peers/torch_gpu_train_bench.py --model resnet50 --batch-size 256 --precision amp \
      --channels-last

--precision fp32 (TF32 off, as fastnn's f32 default), tf32, amp (float16 autocast + GradScaler),
bf16 (bfloat16 autocast). Exit 77 when PyTorch or a GPU is missing.

--compile MODE runs the model through torch.compile (Inductor; the optimizer step stays eager, as timm's
--torchcompile does): default and max-autotune-no-cudagraphs launch every kernel from the host each step
(fastnn's eager policy); reduce-overhead and max-autotune replay CUDA graphs (fastnn's cuda_graph). The
compilation happens inside the warm-up steps; "first_step_seconds" says how long the first one took.
TORCHINDUCTOR_CACHE_DIR keeps compiled kernels between runs (scripts/gpu/compare.py sets it).

--device cpu runs the same step on the CPU (wall clock instead of CUDA events, bf16 autocast only): how
scripts/gpu/compare.py is tried without a GPU. The JSON's "environment" has the versions behind the
figure: PyTorch, CUDA, cuDNN, the GPU, and its driver and clocks from nvidia-smi when it is there.

Models: torchvision's resnet50 (v1.5: stride in the first unit's 3x3, 4.09 GMAC), inception_v3, vgg16;
and the same networks as fastnn's zoo, written out here (no torchvision):
  tfslim_resnet_v1_50  TF-slim's resnet_v1_50 (trainer/zoo/resnet_v1.cpp): conv1 7x7/2 pad 3 + BN + ReLU,
                       3x3/2 SAME max pool (TF pads bottom/right), bottleneck units [3, 4, 6, 3] with the
                       stride in the 3x3 conv of the LAST unit of blocks 1-3, shortcut 1x1 conv + BN where
                       the depth changes else identity (1x1 max-pool subsample when striding), BN eps
                       1e-5, global average pool, fully connected logits with bias: 25,557,032 parameters
                       at 1000 classes, 3.48 GMAC — `fastnn models` gives the same count (the JSON's
                       "parameters" lets a run check it).
  tfslim_mobilenet_v2  TF-slim's mobilenet_v2 as scripts/peers/torch_cpu_train_bench.py builds it.
  resnet_cifar_20      ResNet-20 as scripts/peers/torch_fashion_resnet.py builds it (10 classes; a small
                       net for trying the scripts on the CPU).
"""
import argparse
import json
import shutil
import subprocess
import sys
import time


def tfslim_resnet_v1(torch, units, classes):
    """TF-slim's resnet_v1 with bottleneck units (see the module docstring)."""
    nn, F = torch.nn, torch.nn.functional

    def conv_bn(cin, cout, k, stride=1, pad=0, relu=True):
        layers = [nn.Conv2d(cin, cout, k, stride, pad, bias=False), nn.BatchNorm2d(cout, eps=1e-5, momentum=0.003)]
        return nn.Sequential(*layers, nn.ReLU(inplace=True)) if relu else nn.Sequential(*layers)

    class Bottleneck(nn.Module):
        def __init__(self, cin, depth, bottleneck, stride):
            super().__init__()
            self.stride = stride
            self.shortcut = conv_bn(cin, depth, 1, stride, relu=False) if depth != cin else None
            self.residual = nn.Sequential(conv_bn(cin, bottleneck, 1), conv_bn(bottleneck, bottleneck, 3, stride, 1),
                                          conv_bn(bottleneck, depth, 1, relu=False))

        def forward(self, x):
            s = self.shortcut(x) if self.shortcut is not None else (x[:, :, ::self.stride, ::self.stride]
                                                                    if self.stride > 1 else x)
            return F.relu(s + self.residual(x))

    class ResNetV1(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = conv_bn(3, 64, 7, 2, 3)
            blocks, cin = [], 64
            for b, n in enumerate(units):
                base = 64 << b
                for u in range(n):
                    stride = 2 if b < 3 and u == n - 1 else 1
                    blocks.append(Bottleneck(cin, base * 4, base, stride))
                    cin = base * 4
            self.blocks = nn.Sequential(*blocks)
            self.logits = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.conv1(x)
            x = F.max_pool2d(F.pad(x, (0, 1, 0, 1), value=float("-inf")), 3, 2)  # TF SAME on an even map
            x = self.blocks(x)
            return self.logits(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return ResNetV1()


# torch.compile modes: whether each replays CUDA graphs (the graph-capture policy a fastnn row must match).
COMPILE_MODES = {"none": False, "default": False, "max-autotune-no-cudagraphs": False, "reduce-overhead": True,
                 "max-autotune": True}


# Kernel-name patterns of each kind, tried in order (cuDNN's and cuBLAS's convolution kernels carry
# no op name: xmma / implicit-GEMM / wgrad / dgrad names, and cuBLAS's gemm for the classifier).
KERNEL_KINDS = [
    ("batch_norm", r"batch_norm|batchnorm|bn_fw|bn_bw|welford|cudnn::bn"),
    ("convolution", r"conv|xmma|implicit_gemm|wgrad|dgrad|fprop|sm\d+_.*gemm|cutlass|nchwToNhwc|nhwcToNchw"),
    ("pooling", r"pool"),
    ("optimizer", r"multi_tensor|foreach|sgd|_amp_|unscale|non_finite"),
    ("elementwise", r"elementwise|vectorized|threshold|relu|add_kernel|fill|copy"),
]


def kernel_profile(torch, step, steps):
    """GPU kernel time per step (ms) by kind over `steps` profiled steps, and the 12 largest kernels."""
    import re
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
        kinds, kernels, conv_passes = {}, [], {}
        for item in prof.key_averages():
            us = getattr(item, "self_device_time_total", None)
            if us is None:
                us = getattr(item, "self_cuda_time_total", 0)
            if not us or "CUDA" not in str(getattr(item, "device_type", "CUDA")):
                continue
            name = item.key
            kind = next((k for k, pat in KERNEL_KINDS if re.search(pat, name, re.IGNORECASE)), "other")
            kinds[kind] = kinds.get(kind, 0.0) + us / 1000.0 / steps
            if kind == "convolution":  # by pass, from the kernel's name, beside fastnn's per-pass profile
                cpass = next((p for p in ("fprop", "dgrad", "wgrad") if p in name.lower()), "other")
                conv_passes[cpass] = conv_passes.get(cpass, 0.0) + us / 1000.0 / steps
            kernels.append((us / 1000.0 / steps, kind, name[:100]))
        kernels.sort(reverse=True)
        return {"steps": steps, "kernel_ms_per_step": round(sum(kinds.values()), 2),
                "kinds_ms_per_step": {k: round(v, 2) for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
                "convolution_passes_ms_per_step": {k: round(v, 2) for k, v in sorted(conv_passes.items())},
                "top_kernels": [{"ms": round(ms, 3), "kind": kind, "name": name} for ms, kind, name in kernels[:12]]}
    except Exception as e:  # the timed row above stands without its profile
        return {"error": f"{type(e).__name__}: {e}"}


def environment(torch, dev):
    """What the figure depends on: library versions, and the GPU's name, driver and clocks now."""
    env = {"torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None}
    if dev.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(0)
        if shutil.which("nvidia-smi"):
            fields = "driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit"
            try:
                line = subprocess.run(["nvidia-smi", "-i", "0", f"--query-gpu={fields}", "--format=csv,noheader"],
                                      capture_output=True, text=True, timeout=20).stdout.strip()
                env.update(zip(fields.split(","), (v.strip() for v in line.split(","))))
            except (OSError, subprocess.TimeoutExpired) as e:
                env["nvidia_smi_error"] = str(e)
    else:
        env["threads"] = torch.get_num_threads()
    return env


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50",
                   choices=["resnet50", "inception_v3", "vgg16", "tfslim_resnet_v1_50", "tfslim_mobilenet_v2",
                            "resnet_cifar_20"])
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "amp", "bf16"])
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", default="none", choices=list(COMPILE_MODES),
                   help="torch.compile mode of the model (none: eager)")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--image-size", type=int, default=0, help="input height and width (0: the model's own)")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--num-classes", type=int, default=1000)
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="after the timed steps, N steps under torch.profiler: GPU kernel time per step by "
                        "kind (convolution, batch norm, elementwise, pooling, optimizer, other), the peer "
                        "of fastnn bench train --profile")
    a = p.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"skipped: {e}", file=sys.stderr)
        return 77
    on_gpu = a.device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    if not on_gpu and a.precision in ("amp", "tf32"):
        print(f"--precision {a.precision} needs --device cuda", file=sys.stderr)
        return 2
    if a.steps < 1 or a.warmup < (2 if COMPILE_MODES[a.compile] else 0):
        print("--steps must be at least 1, --warmup at least 2 with a CUDA-graph compile mode "
              "(its graphs are recorded in the warm-up)", file=sys.stderr)
        return 2
    torch.manual_seed(1)
    torch.backends.cudnn.benchmark = True
    tf32 = a.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = torch.device(a.device)
    size = a.image_size or (299 if a.model == "inception_v3" else 28 if a.model == "resnet_cifar_20" else 224)
    if a.model == "inception_v3":
        model = torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False,
                                                num_classes=a.num_classes)
    elif a.model == "tfslim_resnet_v1_50":
        model = tfslim_resnet_v1(torch, [3, 4, 6, 3], a.num_classes)
    elif a.model in ("tfslim_mobilenet_v2", "resnet_cifar_20"):
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from torch_cpu_train_bench import build_net
        model = build_net(a.model.replace("tfslim_", ""), a.num_classes)
    else:
        model = getattr(torchvision.models, a.model)(weights=None, num_classes=a.num_classes)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(dev, memory_format=fmt).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    run = model if a.compile == "none" else torch.compile(model, mode=None if a.compile == "default" else a.compile)
    x = torch.randn(a.batch_size, 3, size, size, device=dev).to(memory_format=fmt)
    y = torch.randint(0, a.num_classes, (a.batch_size,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    autocast_dtype = {"amp": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.amp.GradScaler(a.device, enabled=a.precision == "amp")
    mark_step = COMPILE_MODES[a.compile] and getattr(torch.compiler, "cudagraph_mark_step_begin", None)

    def step():
        if mark_step:  # a new iteration: the CUDA-graph trees may reuse the last one's output memory
            mark_step()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None):
            out = run(x)
            if isinstance(out, tuple):  # inception_v3 in training mode: (logits, aux_logits)
                loss = loss_fn(out[0], y) + 0.4 * loss_fn(out[1], y)
            else:
                loss = loss_fn(out, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    t0 = time.perf_counter()
    first_step = None
    for i in range(a.warmup):
        step()
        if i == 0:
            sync()
            first_step = time.perf_counter() - t0
    sync()
    warmup_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    if on_gpu:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
    for _ in range(a.steps):
        loss = step()
    if on_gpu:
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end)
    else:
        loss.item()  # waits for the last step
        ms = (time.perf_counter() - t1) * 1000.0
    profile = kernel_profile(torch, step, a.profile) if a.profile > 0 and on_gpu else None
    print(json.dumps({
        "peer": "pytorch", "torch": torch.__version__, "model": a.model, "batch_size": a.batch_size,
        "image_size": size, "precision": a.precision, "channels_last": a.channels_last, "compile": a.compile,
        "cuda_graphs": COMPILE_MODES[a.compile], "device": a.device, "steps": a.steps, "warmup": a.warmup,
        "images_per_sec": a.batch_size * a.steps / (ms / 1000.0),
        "ms_per_step": ms / a.steps, "first_step_seconds": first_step, "warmup_seconds": warmup_seconds,
        "wall_seconds": time.perf_counter() - t0, "final_loss": loss.item(),
        "gpu": torch.cuda.get_device_name(0) if on_gpu else None,
        "parameters": sum(p.numel() for p in model.parameters()),
        "environment": environment(torch, dev),
        **({"profile": profile} if profile is not None else {}),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
