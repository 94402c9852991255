#!/usr/bin/env python3
"""PyTorch peer for the CPU training-step benchmarks (docs/PERFORMANCE.md, "CPU training").

Training step on the same nets as fastnn's zoo, written out in PyTorch (no torchvision):
  lenet            scripts/peers/torch_lenet_epoch.py's LeNet (TF-slim's);
  resnet_cifar_20  scripts/peers/torch_fashion_resnet.py's ResNet-20 (option-A shortcuts);
  resnet_v1_50     scripts/peers/torch_gpu_train_bench.py's TF-slim resnet_v1_50;
  resnet_v1_5_50   torchvision's resnet50 (ResNet-50 v1.5);
  mobilenet_v1/v2  defined here: every conv without bias + batch norm (eps 0.001, with scale) + ReLU6,
                   depthwise 3x3 as groups=C convs, SAME padding (TF pads stride-2 convs (0, 1): F.pad
                   before them so the maps are TF's), global average pool, dropout (keep 0.999 / 0.8),
                   fully connected with bias.
Softmax cross-entropy; SGD momentum 0.9, lr 0.01, weight decay 4e-5; random data held in memory; fp32,
or with --precision bf16 mixed precision on both sides: PyTorch's CPU autocast (torch.autocast("cpu",
torch.bfloat16) around the forward and the loss: its convolutions and matrix products in bf16, the
parameters f32) against fastnn's precision=bf16 (its convolutions multiply in bf16, the rest f32).
In the same run and alternating with the PyTorch steps, it runs `fastnn bench train` on the same net,
batch, size, classes and optimizer (synthetic data there too, fastnn's default layout), so the ratio is
taken under the same load. PyTorch runs in each --torch-layouts (nchw: contiguous; cl: channels_last,
where PyTorch's CPU convolutions go to oneDNN's NHWC kernels; "+compile": torch.compile of the net, its
compilation inside the warm-up steps); the fastest is the peer.

  scripts/peers/torch_cpu_train_bench.py --fastnn build/bin/fastnn [--threads 2] [--rounds 3]
      [--configs resnet_cifar_20:32:64:10,resnet_v1_50:224:8:1000] [--steps 10] [--warmup 3]
      [--torch-layouts nchw,cl] [--precision fp32|bf16]
  scripts/peers/torch_cpu_train_bench.py --depthwise [--threads 2]   # PyTorch depthwise alone
A config is model:size:batch[:classes] (classes default --classes). Prints one JSON line per round and
config, then a summary line per config (medians of the rounds).

PyTorch runs with libgomp's default wait (its threads spin about 300,000 times, then sleep), as its
users get it: OMP_WAIT_POLICY is removed before torch loads unless set to something other than "unset".
On an idle machine that is PyTorch's faster setting (zen5, eager, medians of 3 rounds: ResNet-20 b64
1048 img/s against 856 PASSIVE, MobileNet v2 96x96 b16 257 against 147). On a loaded machine set PASSIVE: then
the default spinning made PyTorch's step ~13x slower (mobilenet_v2 96x96 batch 8: 12.2 s vs 0.95 s per
step), a measurement of the oversubscription, not of PyTorch. Not ACTIVE: its threads never sleep, so
they keep spinning in this process while fastnn's step is timed in a child process (fastnn fell from
14.9 to 8.5 img/s on ResNet-50). fastnn always runs with its own default (the variable removed from its
environment: it then sets PASSIVE with a short spin itself, as its oneTBB threads share the cores with
libgomp's).
"""
import argparse
import json
import os
import statistics
import subprocess
import time

if os.environ.get("OMP_WAIT_POLICY", "unset").lower() == "unset":  # before torch loads libgomp
    os.environ.pop("OMP_WAIT_POLICY", None)

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBN(nn.Module):
    """conv (no bias) + BN + optional ReLU6, TF SAME padding."""

    def __init__(self, cin, cout, k, stride=1, groups=1, relu=True):
        super().__init__()
        self.stride, self.k, self.relu = stride, k, relu
        # Stride 1: TF's SAME is the symmetric (k - 1) / 2 the convolution pads itself, no copy.
        self.conv = nn.Conv2d(cin, cout, k, stride, padding=(k - 1) // 2 if stride == 1 else 0, groups=groups,
                              bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3, momentum=0.003)

    def forward(self, x):
        if self.k > 1 and self.stride > 1:
            # TF SAME: total pad max(k - stride, 0) when the size divides the stride (all MobileNet maps),
            # the extra pixel at the bottom/right, which the convolution's own padding cannot express.
            total = max(self.k - self.stride, 0) if x.shape[-1] % self.stride == 0 else max(self.k - x.shape[-1] % self.stride, 0)
            lo = total // 2
            x = F.pad(x, (lo, total - lo, lo, total - lo))
        x = self.bn(self.conv(x))
        return F.relu6(x) if self.relu else x


class MobileNetV1(nn.Module):
    SEPS = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512), (1, 512), (1, 512), (1, 512), (1, 512),
            (1, 512), (2, 1024), (1, 1024)]

    def __init__(self, classes=1000):
        super().__init__()
        layers = [ConvBN(3, 32, 3, 2)]
        c = 32
        for s, d in self.SEPS:
            layers += [ConvBN(c, c, 3, s, groups=c), ConvBN(c, d, 1)]
            c = d
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(F.dropout(x, 0.001, self.training))


def make_divisible(v, divisor=8):
    nv = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return nv + divisor if nv < 0.9 * v else nv


class InvertedResidual(nn.Module):
    def __init__(self, cin, inner, cout, stride):
        super().__init__()
        layers = [ConvBN(cin, inner, 1)] if inner > cin else []
        layers += [ConvBN(inner, inner, 3, stride, groups=inner), ConvBN(inner, cout, 1, relu=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.body(x)
        return x + y if self.residual else y


class MobileNetV2(nn.Module):
    BLOCKS = [(1, 16, 1), (6, 24, 2), (6, 24, 1), (6, 32, 2), (6, 32, 1), (6, 32, 1), (6, 64, 2), (6, 64, 1),
              (6, 64, 1), (6, 64, 1), (6, 96, 1), (6, 96, 1), (6, 96, 1), (6, 160, 2), (6, 160, 1), (6, 160, 1),
              (6, 320, 1)]

    def __init__(self, classes=1000):
        super().__init__()
        layers = [ConvBN(3, 32, 3, 2)]
        c = 32
        for t, d, s in self.BLOCKS:
            inner = c if t == 1 else make_divisible(c * t)
            layers.append(InvertedResidual(c, inner, d, s))
            c = d
        layers.append(ConvBN(c, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(1280, classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(F.dropout(x, 0.2, self.training))


def build_net(model, classes):
    """The PyTorch twin of fastnn's zoo net `model` (see the module docstring)."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    if model in ("mobilenet_v1", "mobilenet_v2"):
        return {"mobilenet_v1": MobileNetV1, "mobilenet_v2": MobileNetV2}[model](classes)
    if model == "lenet":
        from torch_lenet_epoch import LeNet
        return LeNet(classes)
    if model == "resnet_cifar_20":
        from torch_fashion_resnet import build_model
        if classes != 10:
            raise SystemExit("resnet_cifar_20's twin has 10 classes")
        return build_model(torch)
    if model == "resnet_v1_50":
        from torch_gpu_train_bench import tfslim_resnet_v1
        return tfslim_resnet_v1(torch, [3, 4, 6, 3], classes)
    if model == "resnet_v1_5_50":  # the same network (tests/python/test_resnet_v1_5_torchvision.py)
        import torchvision
        return torchvision.models.resnet50(weights=None, num_classes=classes)
    raise SystemExit(f"no PyTorch twin of {model}")


def torch_step_rate(model, size, batch, steps, warmup, classes=1000, channels_last=False, compiled=False,
                    precision="fp32"):
    torch.manual_seed(1)
    net = build_net(model, classes)
    net.train()
    x = torch.randn(batch, 1 if model == "lenet" else 3, size, size)
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=4e-5)
    y = torch.randint(0, classes, (batch,))
    params = sum(p.numel() for p in net.parameters())
    run = torch.compile(net) if compiled else net  # compiled: the warm-up steps include the compilation

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = F.cross_entropy(run(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sec = time.perf_counter() - start
    return {"images_per_sec": batch * steps / sec, "ms_per_step": 1e3 * sec / steps, "parameters": params}


def fastnn_step_rate(binary, model, size, batch, steps, warmup, classes=1000, precision="fp32"):
    out = subprocess.run([binary, "bench", "train", f"--model_name={model}", f"--batch_size={batch}", f"--precision={precision}",
                          "--optimizer=momentum", "--momentum=0.9", "--learning_rate=0.01", "--weight_decay=0.00004",
                          f"--num_classes={classes}", "--image-size", str(size), "--steps", str(steps),
                          "--warmup", str(warmup), "--json"], check=True, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}).stdout
    r = json.loads(out.strip().splitlines()[-1])
    return {"images_per_sec": r["images_per_sec"], "ms_per_step": r["ms_per_step"], "parameters": r.get("parameters")}


def depthwise(args):
    for n, c, hw in [(8, 32, 112), (8, 128, 56), (8, 512, 14), (8, 1024, 7)]:
        x = torch.randn(n, c, hw, hw, requires_grad=True)
        w = torch.randn(c, 1, 3, 3, requires_grad=True)
        dy = torch.randn(n, c, hw, hw)
        flops = 2.0 * n * c * hw * hw * 9
        for name in ["forward", "forward+backward"]:
            def run():
                y = F.conv2d(x, w, None, 1, 1, 1, c)
                if name != "forward":
                    y.backward(dy)
            for _ in range(3):
                run()
            reps, start = 0, time.perf_counter()
            while time.perf_counter() - start < args.min_time:
                run()
                reps += 1
            sec = (time.perf_counter() - start) / reps
            f = flops if name == "forward" else 3 * flops
            print(json.dumps({"peer": "torch", "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset"), "depthwise": f"{n}x{c}x{hw}x{hw}", "pass": name,
                              "ms": round(1e3 * sec, 3), "gflops": round(f / sec * 1e-9, 2)}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fastnn", default="build/bin/fastnn")
    ap.add_argument("--configs", default="mobilenet_v1:224:8,mobilenet_v2:224:8,mobilenet_v1:128:8,mobilenet_v2:128:8")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--depthwise", action="store_true")
    ap.add_argument("--torch-layouts", default="nchw,cl",
                    help="comma-separated: nchw, cl (channels_last), and either with +compile (torch.compile)")
    ap.add_argument("--min-time", type=float, default=1.0)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: PyTorch's CPU autocast against fastnn's precision=bf16")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.depthwise:
        return depthwise(args)
    layouts = args.torch_layouts.split(",")
    rows = {}
    for rnd in range(args.rounds):
        for cfg in args.configs.split(","):
            parts = cfg.split(":")
            model, size, batch = parts[0], int(parts[1]), int(parts[2])
            classes = int(parts[3]) if len(parts) > 3 else args.classes
            # Alternate which goes first, so neither always meets the same load.
            order = ["fastnn"] + ["torch-" + l for l in layouts]
            if rnd % 2:
                order.reverse()
            res = {}
            for who in order:
                if who == "fastnn":
                    res[who] = fastnn_step_rate(args.fastnn, model, size, batch, args.steps, args.warmup, classes,
                                                args.precision)
                else:
                    res[who] = torch_step_rate(model, size, batch, args.steps, args.warmup, classes,
                                               who.startswith("torch-cl"), who.endswith("+compile"), args.precision)
            best = min((w for w in res if w != "fastnn"), key=lambda w: res[w]["ms_per_step"])
            row = {"round": rnd + 1, "torch": torch.__version__, "threads": args.threads, "precision": args.precision,
                   "torch_omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset"), "model": model,
                   "size": size, "batch": batch, "classes": classes,
                   **{f"{w}_img_s": round(r["images_per_sec"], 1) for w, r in res.items()},
                   "peer": best, "speedup_fastnn_over_peer": round(res[best]["ms_per_step"] / res["fastnn"]["ms_per_step"], 3),
                   "params_fastnn": res["fastnn"]["parameters"], "params_torch": res[best]["parameters"]}
            rows.setdefault(cfg, []).append(row)
            print(json.dumps(row), flush=True)
    for cfg, rs in rows.items():
        med = lambda k: round(statistics.median(r[k] for r in rs), 3)
        print(json.dumps({"summary": cfg, "rounds": len(rs), "fastnn_img_s": [r["fastnn_img_s"] for r in rs],
                          **{f"torch-{l}_img_s": [r[f"torch-{l}_img_s"] for r in rs] for l in layouts},
                          "median_speedup_fastnn_over_best_torch": med("speedup_fastnn_over_peer")}), flush=True)


if __name__ == "__main__":
    main()
