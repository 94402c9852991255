#!/usr/bin/env python3
"""PyTorch peer for the CPU LeNet epoch benchmark (docs/PERFORMANCE.md, "CPU training").

The same net as fastnn's zoo `lenet` (TF-slim LeNet): conv 32 5x5 SAME + ReLU, max pool 2, conv 64
5x5 SAME + ReLU, max pool 2, fc 1024 + ReLU, dropout 0.5, fc 10; SGD momentum 0.9, lr 0.01, batch 64,
softmax cross-entropy; one epoch = 60000 // 64 = 937 steps. The images are the real Fashion-MNIST
training set scaled to [0, 1] (or random tensors with --synthetic), held in memory as one tensor, so
the time is the step loop only (no data loading: this favours the peer, fastnn's number includes
its in-process pipeline). Prints one JSON line.

  /usr/bin/python3 scripts/peers/torch_lenet_epoch.py [--threads 2] [--steps 937] [--data DIR]
"""
import argparse
import gzip
import json
import os
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    t = torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8)
    return t.reshape(dims)


class LeNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc3 = nn.Linear(7 * 7 * 64, 1024)
        self.fc4 = nn.Linear(1024, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc3(torch.flatten(x, 1)))
        return self.fc4(F.dropout(x, 0.5, self.training))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=60000 // 64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--eval", action="store_true", help="also report test top-1 after training")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    img_file = os.path.join(args.data, "train-images-idx3-ubyte.gz")
    if args.synthetic or not os.path.exists(img_file):
        x = torch.rand(60000, 1, 28, 28)
        y = torch.randint(0, 10, (60000,))
        source = "synthetic"
    else:
        x = read_idx(img_file).float().div_(255).unsqueeze(1)
        y = read_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz")).long()
        source = "fashion-mnist"
    perm = torch.randperm(x.shape[0])
    x, y = x[perm].contiguous(), y[perm].contiguous()
    net = LeNet()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    net.train()
    n = x.shape[0] // args.batch
    start = time.perf_counter()
    for step in range(args.steps):
        i = step % n
        xb, yb = x[i * args.batch:(i + 1) * args.batch], y[i * args.batch:(i + 1) * args.batch]
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(net(xb), yb)
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - start
    out = {"peer": "pytorch", "torch": torch.__version__, "threads": args.threads, "data": source,
           "steps": args.steps, "batch": args.batch, "seconds": round(seconds, 3),
           "images_per_s": round(args.steps * args.batch / seconds, 1), "last_loss": round(loss.item(), 4)}
    if args.eval and source == "fashion-mnist":
        tx = read_idx(os.path.join(args.data, "t10k-images-idx3-ubyte.gz")).float().div_(255).unsqueeze(1)
        ty = read_idx(os.path.join(args.data, "t10k-labels-idx1-ubyte.gz")).long()
        net.eval()
        with torch.no_grad():
            out["test_top1"] = round((net(tx).argmax(1) == ty).float().mean().item(), 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
