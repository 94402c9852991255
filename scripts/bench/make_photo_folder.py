#!/usr/bin/env python3
"""Builds an image folder of distinct photo-sized JPEGs from a few real photographs.

The input of issue 4's benchmark (b): class subfolders of JPEGs about 400-600 px on a side, made from
real photographs (e.g. Debian python3-sklearn's sklearn/datasets/images/china.jpg and flower.jpg,
640x427) by a random crop (60-100% of each side, so that scaling rarely enlarges), a random scale so that the longer side is
400-600 px, a random mirror, re-encoded at quality ~90. Each output is a distinct image with a
photograph's statistics (what a JPEG decoder's entropy stage sees), not synthetic noise.

  /usr/bin/python3 scripts/bench/make_photo_folder.py --out /tmp/photos --count 3000 --classes 10 \
      china.jpg flower.jpg
"""
import argparse
import os
import random
import sys

from PIL import Image


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sources", nargs="+", help="source photographs")
    p.add_argument("--out", required=True)
    p.add_argument("--count", type=int, default=3000)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--min-side", type=int, default=400, help="longer side at least")
    p.add_argument("--max-side", type=int, default=600, help="longer side at most")
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    photos = [Image.open(s).convert("RGB") for s in a.sources]
    for c in range(a.classes):
        os.makedirs(os.path.join(a.out, f"class{c:03d}"), exist_ok=True)
    total = 0
    for i in range(a.count):
        src = photos[i % len(photos)]
        w, h = src.size
        cw = int(w * rng.uniform(0.6, 1.0))
        ch = int(h * rng.uniform(0.6, 1.0))
        x = rng.randint(0, w - cw)
        y = rng.randint(0, h - ch)
        img = src.crop((x, y, x + cw, y + ch))
        longer = rng.randint(a.min_side, a.max_side)
        s = longer / max(cw, ch)
        img = img.resize((max(1, round(cw * s)), max(1, round(ch * s))), Image.BILINEAR)
        if rng.random() < 0.5:
            img = img.transpose(Image.FLIP_LEFT_RIGHT)
        path = os.path.join(a.out, f"class{i % a.classes:03d}", f"img{i:06d}.jpg")
        img.save(path, "JPEG", quality=a.quality)
        total += os.path.getsize(path)
    print(f"{a.count} JPEGs, {total / 1e6:.1f} MB, in {a.classes} class folders under {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
