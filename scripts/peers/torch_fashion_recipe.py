#!/usr/bin/env python3
"""A training recipe on Fashion-MNIST with ResNet-20 in PyTorch on the CPU: the peer of the recipe table
in docs/TRAINING.md (scripts/bench/recipe_table.sh runs both sides).

The network, input, loss, optimiser and schedule are torch_fashion_resnet.py's (which lists what they
mirror in fastnn: resnet_cifar_20, the cifarnet preset's pad-4 crop and mirror, momentum 0.9 with L2
weight decay on conv and fc weights, cosine from 0.1 over all steps, batch 128, 468 steps an epoch). On
top, each of fastnn's recipe options with the library a PyTorch user would take it from:

  --auto-augment trivialaugmentwide|randaugment   torchvision's, on each uint8 image after crop and
                                                  mirror (interpolation NEAREST, fill 0), as fastnn's
                                                  auto_augment
  --reprob P [--remode pixel|rand|const]          timm's RandomErasing on the normalised batch, per
                                                  image, as fastnn's random_erase_prob / _mode
  --ema-decay D                                   an average of every parameter and batch-norm buffer
                                                  after each update, decay min(D, (1 + s) / (10 + s)) at
                                                  update s (TF's num_updates rule, fastnn's default
                                                  moving_average_warmup), evaluated beside the model
  --mixup A --cutmix A                            timm's Mixup (mode batch, switch prob 0.5, no label
                                                  smoothing) with its soft-target cross-entropy

Known differences: fastnn streams shuffled PNG shards through a 1024-sample shuffle buffer and decodes and
augments on pipeline threads beside the step; here the dataset is a uint8 tensor, each epoch a seeded
permutation, and the per-image auto-augment runs in the training thread (DataLoader workers would share
the same cores). Train seconds exclude evaluations on both sides.

  python3 scripts/peers/torch_fashion_recipe.py --data DIR [--threads N] [recipe flags]
prints one JSON line (progress per epoch on stderr); exit 77 when PyTorch, torchvision or timm is missing.
"""
import argparse
import copy
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_fashion_resnet import (FashionData, add_fashion_sgd_args, build_model, set_cosine_lr,  # noqa: E402
                                  sgd_with_weight_decay)


def ema_update(torch, ema, model, decay):
    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters()):
            e.mul_(decay).add_(p, alpha=1.0 - decay)
        for e, b in zip(ema.buffers(), model.buffers()):
            if e.dtype.is_floating_point:
                e.mul_(decay).add_(b, alpha=1.0 - decay)
            else:
                e.copy_(b)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_fashion_sgd_args(p, epochs=10, seed=1)
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    p.add_argument("--layout", default="cl", choices=["cl", "nchw"],
                   help="cl: channels_last, PyTorch's faster CPU layout here (docs/PERFORMANCE.md); nchw")
    p.add_argument("--auto-augment", default="", choices=["", "trivialaugmentwide", "randaugment"])
    p.add_argument("--reprob", type=float, default=0.0)
    p.add_argument("--remode", default="pixel", choices=["pixel", "rand", "const"])
    p.add_argument("--ema-decay", type=float, default=0.0)
    p.add_argument("--mixup", type=float, default=0.0)
    p.add_argument("--cutmix", type=float, default=0.0)
    a = p.parse_args()
    try:
        import torch
        import torch.nn.functional as F
        import torchvision.transforms as T
        from timm.data import Mixup
        from timm.data.random_erasing import RandomErasing
    except ImportError as e:
        print(f"skipped: {e}", file=sys.stderr)
        return 77
    run_start = time.perf_counter()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    fmt = torch.channels_last if a.layout == "cl" else torch.contiguous_format
    data = FashionData(torch, a.data, torch.device("cpu"), a.seed, a.eval_limit)
    train_y, test_y, n = data.train_y, data.test_y, data.n
    test_in = data.test_in.contiguous(memory_format=fmt)

    nearest = T.InterpolationMode.NEAREST
    augment = {"": None,
               "trivialaugmentwide": T.TrivialAugmentWide(interpolation=nearest, fill=0),
               "randaugment": T.RandAugment(interpolation=nearest, fill=0)}[a.auto_augment]
    erase = RandomErasing(probability=a.reprob, mode=a.remode, device="cpu") if a.reprob > 0 else None
    mix = (Mixup(mixup_alpha=a.mixup, cutmix_alpha=a.cutmix, prob=1.0, switch_prob=0.5, mode="batch",
                 label_smoothing=0.0, num_classes=10) if a.mixup > 0 or a.cutmix > 0 else None)

    def train_batch(idx):  # crop, mirror, [auto-augment], normalise, [erase], [mix]
        img = data.crop_mirror(idx)  # uint8 [b, 1, 32, 32]
        if augment is not None:  # one draw per image (a batch tensor would get one op for all)
            img = torch.stack([augment(im) for im in img])
        x = data.normalise(img)
        if erase is not None:
            x = erase(x)
        y = train_y[idx]
        if mix is not None:
            x, y = mix(x, y)
        return x.contiguous(memory_format=fmt), y

    model = build_model(torch).to(memory_format=fmt)
    ema = copy.deepcopy(model) if a.ema_decay > 0 else None
    opt = sgd_with_weight_decay(torch, model, a.lr, a.momentum, a.weight_decay)

    steps_per_epoch = min(n // a.batch_size, a.limit_steps or n)
    total = a.epochs * steps_per_epoch

    def evaluate(net):
        net.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, test_in.shape[0], 1000):
                correct += (net(test_in[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum().item()
        net.train()
        return correct / test_in.shape[0]

    train_seconds, evals, ema_evals, epoch_seconds, step = 0.0, [], [], [], 0
    model.train()
    for epoch in range(1, a.epochs + 1):
        t0 = time.perf_counter()
        perm = torch.randperm(n, generator=data.gen)
        for k in range(steps_per_epoch):
            x, y = train_batch(perm[k * a.batch_size:(k + 1) * a.batch_size])
            set_cosine_lr(opt, a.lr, step, total)
            opt.zero_grad(set_to_none=True)
            out = model(x)
            loss = (torch.sum(-y * F.log_softmax(out, dim=-1), dim=-1).mean() if mix is not None
                    else F.cross_entropy(out, y))
            loss.backward()
            opt.step()
            if ema is not None:
                ema_update(torch, ema, model, min(a.ema_decay, (1.0 + step) / (10.0 + step)))
            step += 1
        epoch_seconds.append(round(time.perf_counter() - t0, 3))
        train_seconds += epoch_seconds[-1]
        evals.append([epoch, round(evaluate(model), 4)])
        line = f"epoch {epoch}: loss {loss.item():.4f} top1 {evals[-1][1]:.4f}"
        if ema is not None:
            ema_evals.append([epoch, round(evaluate(ema), 4)])
            line += f" ema top1 {ema_evals[-1][1]:.4f}"
        print(f"{line} train {train_seconds:.1f} s", file=sys.stderr, flush=True)
    result = {
        "peer": "pytorch", "model": "resnet_cifar_20", "top1": evals[-1][1],
        "ema_top1": ema_evals[-1][1] if ema_evals else None, "evals": evals, "ema_evals": ema_evals,
        "train_seconds": round(train_seconds, 3), "epoch_seconds": epoch_seconds,
        "run_seconds": round(time.perf_counter() - run_start, 3), "steps_per_epoch": steps_per_epoch,
        "batch_size": a.batch_size, "layout": a.layout, "threads": torch.get_num_threads(), "torch": torch.__version__,
        "options": {"auto_augment": a.auto_augment, "reprob": a.reprob, "remode": a.remode,
                   "ema_decay": a.ema_decay, "mixup": a.mixup, "cutmix": a.cutmix},
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
