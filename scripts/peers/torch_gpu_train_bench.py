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
"""
import argparse
import json
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="resnet50", choices=["resnet50", "inception_v3", "vgg16"])
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "amp", "bf16"])
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--num-classes", type=int, default=1000)
    a = p.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as e:
        print(f"skipped: {e}", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("skipped: no CUDA device", file=sys.stderr)
        return 77
    torch.backends.cudnn.benchmark = True
    tf32 = a.precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    dev = torch.device("cuda")
    size = 299 if a.model == "inception_v3" else 224
    if a.model == "inception_v3":
        model = torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False,
                                                num_classes=a.num_classes)
    else:
        model = getattr(torchvision.models, a.model)(weights=None, num_classes=a.num_classes)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(dev, memory_format=fmt).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(a.batch_size, 3, size, size, device=dev).to(memory_format=fmt)
    y = torch.randint(0, a.num_classes, (a.batch_size,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()
    autocast_dtype = {"amp": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.cuda.amp.GradScaler(enabled=a.precision == "amp")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=autocast_dtype or torch.float32, enabled=autocast_dtype is not None):
            out = model(x)
            if isinstance(out, tuple):  # inception_v3 in training mode: (logits, aux_logits)
                loss = loss_fn(out[0], y) + 0.4 * loss_fn(out[1], y)
            else:
                loss = loss_fn(out, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(a.steps):
        loss = step()
    end.record()
    torch.cuda.synchronize()
    ms = start.elapsed_time(end)
    print(json.dumps({
        "peer": "pytorch", "torch": torch.__version__, "model": a.model, "batch_size": a.batch_size,
        "precision": a.precision, "channels_last": a.channels_last, "steps": a.steps,
        "images_per_sec": a.batch_size * a.steps / (ms / 1000.0),
        "ms_per_step": ms / a.steps, "wall_seconds": time.perf_counter() - t0,
        "final_loss": float(loss), "gpu": torch.cuda.get_device_name(0),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
