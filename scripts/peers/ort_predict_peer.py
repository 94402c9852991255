#!/usr/bin/env python3
"""The peer of `fastnn predict` on a folder of JPEG photographs: onnxruntime (or PyTorch) on the same
network, decoding included, as a user would write it.

    VENV/bin/python scripts/peers/ort_predict_peer.py --model MODEL.onnx --input FOLDER --batch_size B
        [--threads 2] [--peer ort|torch-compile|torch-compile-bf16 --zoo_model resnet_v1_50] -o OUT.jsonl

Every *.jpg / *.jpeg / *.png under FOLDER, sorted by path, is decoded by PIL (RGB), resized to the model's
input (bilinear) and normalised with the mean and scale `fastnn export` wrote into the model's metadata
(scripts/bench/serve_bench.py's preprocessing); decoding runs --threads Python threads ahead of the model
(PIL releases the GIL while it decodes), batches of --batch_size go to onnxruntime with --threads
intra-op threads (or to PyTorch's twin of the zoo net under torch.compile with inductor's freezing, random
weights), and one JSON line with the path and the top-5 classes is written per image. As for fastnn's row in
docs/PERFORMANCE.md, images/s comes from two runs: (320 - 32) / (wall of 320 photos - wall of 32), so
that starting Python, loading the model and the first forwards cancel.
"""
import argparse
import concurrent.futures
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
from serve_bench import input_metadata, make_forward  # noqa: E402 - after the path it needs


def photos(folder):
    exts = (".jpg", ".jpeg", ".png")
    found = [os.path.join(d, f) for d, _, files in os.walk(folder) for f in files if f.lower().endswith(exts)]
    return sorted(found)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="the model `fastnn export` wrote (.onnx)")
    ap.add_argument("--input", required=True)
    ap.add_argument("--batch_size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer", default="ort", choices=["ort", "torch-eager", "torch-compile", "torch-compile-bf16"])
    ap.add_argument("--zoo_model", default="", help="the zoo net's name, for the PyTorch peers")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()

    import numpy as np
    from PIL import Image

    h, w, c, _, mean, scale = input_metadata(a.model)
    forward = make_forward(a.peer, a.zoo_model, a.model, a.threads)

    def load(path):
        with open(path, "rb") as f:
            img = Image.open(io.BytesIO(f.read())).convert("L" if c == 1 else "RGB")
        if img.size != (w, h):
            img = img.resize((w, h), Image.BILINEAR)
        x = np.asarray(img, np.float32).reshape(h, w, c).transpose(2, 0, 1)
        return (x - mean) * scale

    paths = photos(a.input)
    with open(a.output, "w") as out, concurrent.futures.ThreadPoolExecutor(a.threads) as pool:
        images = pool.map(load, paths)  # decodes ahead, in order
        for b in range(0, len(paths), a.batch_size):
            names = paths[b:b + a.batch_size]
            x = np.stack([next(images) for _ in names])
            logits = forward(x)
            for name, row in zip(names, logits):
                top = np.argsort(-row)[:5]
                e = np.exp(row - row.max())
                p = e / e.sum()
                out.write(json.dumps({"source": name, "topk": [[int(k), float(p[k])] for k in top]}) + "\n")


if __name__ == "__main__":
    main()
