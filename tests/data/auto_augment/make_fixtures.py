#!/usr/bin/python3
"""Writes the fixtures that tests/unit/pipeline/auto_augment_test.cpp compares fastnn's RandAugment /
TrivialAugmentWide ops with: torchvision's own outputs.

Run from anywhere with the Debian interpreter (torchvision 0.14, torch 1.13, Pillow 9.4):

    /usr/bin/python3 tests/data/auto_augment/make_fixtures.py

It is deterministic (no random draws) and rewrites, next to itself:

  inputs:   rgb.png   a 20x16 crop of /var/cache/fastnn/sample-images/china.jpg (PIL 'RGB')
            gray.png  the same crop converted by PIL to 'L'
            fmnist.png  the first Fashion-MNIST test image, 28x28 'L' (square: Rotate by 90 takes
                        PIL's transpose fast path there)
  outputs:  <input>_out.png  every case's output stacked top to bottom, one tile per case, in the
                             order of fixtures.json's "cases"
  fixtures.json  per image, its cases: [op, magnitude as torchvision passes it to _apply_op, the
                 policy, bin (null for ops without a table) and sign that produced it]; and
                 torchvision's magnitude tables (_augmentation_space) for a few bin counts and image
                 sizes: float32 bit patterns in hex, Posterize's bits as integers; ops sharing a table
                 are listed together ("Brightness,Color,Contrast,Sharpness"); and "sweep": CRC-32s of
                 every op at every bin of both policies, both signs, on a procedural 57x43 RGB and
                 'L' image (sweep_image: an integer formula the C++ test repeats).

Each case is torchvision.transforms.autoaugment._apply_op(img, op, magnitude, NEAREST, fill=None), the
very function RandAugment.forward and TrivialAugmentWide.forward call, on a PIL image. The magnitudes
are the table entries of both policies at bin 0, RandAugment's default bin 9 and the last bin (30 of
31), plus Rotate's bin 20 (TrivialAugmentWide's 90 degrees), with both signs for the signed ops.
Committed size: about 105 KB.
"""
import gzip
import json
import os
import zlib

import numpy as np
import PIL
import torch
import torchvision
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import RandAugment, TrivialAugmentWide, _apply_op

HERE = os.path.dirname(os.path.abspath(__file__))
CHINA = "/var/cache/fastnn/sample-images/china.jpg"
FMNIST = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
BINS = 31
CASE_BINS = [0, 9, 30]
EXTRA_BINS = {"Rotate": [20]}  # TrivialAugmentWide: 90 degrees, PIL's transpose on a square image
TABLE_BINS = [2, 9, 10, 31, 33]
TABLE_SIZES = [(16, 20), (224, 224)]  # (height, width)


def inputs():
    rgb = Image.open(CHINA).convert("RGB").crop((84, 204, 104, 220))  # textured, values 9..230: AutoContrast has work
    with gzip.open(FMNIST, "rb") as f:
        raw = f.read()
    fm = Image.frombytes("L", (28, 28), raw[16 : 16 + 784])
    return {"rgb": rgb, "gray": rgb.convert("L"), "fmnist": fm}


def tables(space):
    """The distinct magnitude tables of a space: {"Op1,Op2": ["3f800000", ...]}, each value the float32's
    bit pattern in hex (exact and short; Posterize's int32 bins as plain integers)."""
    out = {}
    for op, (t, _) in space.items():
        if t.ndim == 0:
            continue
        if t.dtype == torch.float32:
            vals = ["%08x" % v for v in t.numpy().view(np.uint32).tolist()]
        else:
            vals = [int(v) for v in t.tolist()]
        for k, v in out.items():
            if v == vals:
                del out[k]
                out[k + "," + op] = vals
                break
        else:
            out[op] = vals
    return out


def cases_for(img):
    """(op, magnitude, where) for every op of both spaces at CASE_BINS, deduplicated by magnitude."""
    h, w = img.size[1], img.size[0]
    spaces = {
        "randaugment": RandAugment()._augmentation_space(BINS, (h, w)),
        "trivialaugmentwide": TrivialAugmentWide()._augmentation_space(BINS),
    }
    out, seen = [], set()
    for policy, space in spaces.items():
        for op, (mags, signed) in space.items():
            bins = CASE_BINS + EXTRA_BINS.get(op, []) if mags.ndim > 0 else [None]
            for b in bins:
                m = float(mags[b].item()) if b is not None else 0.0
                for sign in ([1, -1] if signed and m != 0.0 else [1]):
                    mag = m * sign if sign < 0 else m  # forward: magnitude *= -1.0
                    key = (op, mag)
                    if key in seen:
                        continue
                    seen.add(key)
                    out.append([op, mag, policy, b, sign])
    return out


SWEEP_W, SWEEP_H = 57, 43  # odd sides: the centre of Rotate / Translate falls between pixels


def sweep_image(channels):
    """A procedural image the C++ test rebuilds from the same integer formula (values 20..220)."""
    y, x = np.mgrid[0:SWEEP_H, 0:SWEEP_W]
    planes = [20 + ((x * x * 3 + y * 7 + c * 85 + ((x * y) % 13) * 11 + (x ^ y) * 5) % 256) * 200 // 255
              for c in range(channels)]
    a = np.stack(planes, axis=-1).astype(np.uint8)
    return Image.fromarray(a[:, :, 0], "L") if channels == 1 else Image.fromarray(a, "RGB")


def sweep(img):
    """For each policy, each op of its space in order, each bin (one entry for ops without a table):
    the CRC-32 (zlib) of the output at +magnitude followed, for signed ops with magnitude != 0, by the
    output at -magnitude. Covers every table entry at an odd image size; 8 hex digits each."""
    h, w = img.size[1], img.size[0]
    out = []
    for space in (RandAugment()._augmentation_space(BINS, (h, w)), TrivialAugmentWide()._augmentation_space(BINS)):
        for op, (mags, signed) in space.items():
            for b in range(BINS) if mags.ndim > 0 else [None]:
                m = float(mags[b].item()) if b is not None else 0.0
                data = b""
                for mag in [m, m * -1.0] if signed and m != 0.0 else [m]:
                    res = _apply_op(img, op, mag, interpolation=InterpolationMode.NEAREST, fill=None)
                    data += np.asarray(res).tobytes()
                out.append("%08x" % zlib.crc32(data))
    return out


def main():
    imgs = inputs()
    index = {
        "versions": {"torch": torch.__version__, "torchvision": torchvision.__version__, "pillow": PIL.__version__},
        "images": {},
        "tables": [],
    }
    for name, img in imgs.items():
        img.save(os.path.join(HERE, f"{name}.png"), optimize=True)
        cases = cases_for(img)
        tiles = []
        for c in cases:
            res = _apply_op(img, c[0], c[1], interpolation=InterpolationMode.NEAREST, fill=None)
            assert res.size == img.size and res.mode == img.mode
            tiles.append(np.asarray(res))
        Image.fromarray(np.concatenate(tiles, axis=0)).save(os.path.join(HERE, f"{name}_out.png"), optimize=True)
        index["images"][name] = {"width": img.size[0], "height": img.size[1], "mode": img.mode, "cases": cases}
    for bins in TABLE_BINS:
        wide = TrivialAugmentWide()._augmentation_space(bins)
        index["tables"].append({"policy": "trivialaugmentwide", "bins": bins,
                                "ops": tables(wide)})
        for (h, w) in TABLE_SIZES:
            rand = RandAugment()._augmentation_space(bins, (h, w))
            index["tables"].append({"policy": "randaugment", "bins": bins, "height": h, "width": w,
                                    "ops": tables(rand)})
    index["sweep"] = {"width": SWEEP_W, "height": SWEEP_H, "rgb": sweep(sweep_image(3)), "gray": sweep(sweep_image(1))}
    with open(os.path.join(HERE, "fixtures.json"), "w") as f:
        json.dump(index, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
