#!/usr/bin/env python3
"""PyTorch's DataLoader doing the work of `fastnn bench pipeline --preset inception` on the same JPEGs.

The peer for docs/PERFORMANCE.md: an image folder (class subfolders of JPEGs, the input of
`fastnn convert image-folder`) read with torchvision's ImageFolder, RandomResizedCrop(size),
RandomHorizontalFlip, ToTensor, Normalize, batched by a DataLoader with --workers worker processes.
Images/s are counted from the first timed batch to the last, after --warmup batches (the
DataLoader prefetches only prefetch_factor × workers batches, so its backlog is small). Prints one JSON object.

  /usr/bin/python3 scripts/peers/torch_dataloader_bench.py --folder /tmp/jpegset --batch-size 256 \
      --workers 2 --steps 20

Needs Debian's python3-torch and python3-torchvision (exit 77 when they are missing).
"""
import argparse
import json
import os
import sys
import time


def cpu_seconds(pids):
    """utime + stime of these processes (/proc/PID/stat), so that a loaded machine can be told apart
    from a slow loader: images per CPU second do not depend on what other processes take."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            pass
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--folder", required=True, help="image folder: one subfolder of JPEGs per class")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--steps", type=int, default=20, help="timed batches")
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    try:
        import torch
        import torchvision
        from torchvision import datasets, transforms
    except ImportError as e:
        print(f"torch/torchvision not installed: {e}", file=sys.stderr)
        return 77

    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.RandomResizedCrop(a.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    ds = datasets.ImageFolder(a.folder, transform=tf)

    def worker_init(_):
        torch.set_num_threads(1)

    needed = a.warmup + a.steps
    # One long random epoch (sampling with replacement), so a small folder does not put an epoch
    # restart (workers draining and refilling) between every few batches.
    sampler = torch.utils.data.RandomSampler(ds, replacement=True, num_samples=needed * a.batch_size)
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch_size, sampler=sampler, num_workers=a.workers,
                                         drop_last=True, worker_init_fn=worker_init, prefetch_factor=2)
    got = 0
    t0 = None
    it = iter(loader)
    pids = [os.getpid()] + [w.pid for w in getattr(it, "_workers", [])]
    for x, _ in it:
        got += 1
        if got == a.warmup + 1:
            t0 = time.perf_counter()
            c0 = cpu_seconds(pids)
        if got >= needed:
            break
    seconds = time.perf_counter() - t0
    cpu = cpu_seconds(pids) - c0
    images = (a.steps - 1) * a.batch_size
    print(json.dumps({
        "benchmark": "torch_dataloader",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "folder": a.folder,
        "images_in_folder": len(ds),
        "batch_size": a.batch_size,
        "workers": a.workers,
        "size": a.size,
        "steps": a.steps,
        "images": images,
        "seconds": seconds,
        "images_per_sec": images / seconds,
        "cpu_seconds": cpu,
        "cpu_cores": cpu / seconds,
        "images_per_cpu_sec": images / cpu if cpu > 0 else None,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
