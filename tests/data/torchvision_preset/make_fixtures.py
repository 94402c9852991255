#!/usr/bin/env python3
"""Writes the fixtures that tests/unit/pipeline/preset_torchvision_test.cpp compares fastnn's
torchvision preset with: torchvision's own transforms on a real photograph.

Run with a Python that has torch and torchvision (made with torch 2.15, torchvision 0.29, Pillow 13):

    python3 tests/data/torchvision_preset/make_fixtures.py

It is deterministic and rewrites, next to itself:

  crop.png       a 160x107 crop of /var/cache/fastnn/sample-images/china.jpg (PIL 'RGB'), the input:
                 PNG, so that both sides start from the same pixels
  eval.f32       Resize(73) + CenterCrop(64) + Normalize(ImageNet) of crop.png: 3x64x64 float32,
                 little-endian, CHW (timm's eval at image size 64 with crop_pct 0.875: floor(64 / 0.875)
                 = 73; the resized image is 109x73, so both crop offsets, 22.5 and 4.5, round half to even)
  train.f32      RandomResizedCrop(64, scale=(0.9, 1)) + Normalize of crop.png, unflipped: 3x64x64. On
                 this 160x107 image every try of that scale fails, so torchvision takes its fallback
                 (the centred 143x107 crop) whatever its random draws
  fixtures.json  torchvision's geometry: RandomResizedCrop.get_params on images where every try fails
                 (the fallback), and Resize + CenterCrop's sizes and offsets on a few image sizes

The resize is bilinear without antialiasing (antialias=False on a float tensor), the resampling fastnn
uses; with PIL's antialiased filter the outputs differ where the image is shrunk (docs/PIPELINE.md).
"""
import json
import math
import os

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision.transforms import InterpolationMode, RandomResizedCrop
from torchvision.transforms import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
CHINA = "/var/cache/fastnn/sample-images/china.jpg"
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def as_float_chw(img):
    return torch.from_numpy(np.asarray(img, dtype=np.float32).copy()).permute(2, 0, 1)  # pixel units


def normalise(x):
    return F.normalize(x / 255.0, MEAN, STD)


def write_f32(name, x):
    x.contiguous().numpy().astype("<f4").tofile(os.path.join(HERE, name))


def eval_geometry(width, height, size, crop_pct):
    side = math.floor(size / crop_pct)
    img = torch.zeros(1, height, width)
    resized = F.resize(img, side, InterpolationMode.BILINEAR, antialias=False)
    nh, nw = resized.shape[-2:]
    top = int(round((nh - size) / 2.0))
    left = int(round((nw - size) / 2.0))
    return {"width": width, "height": height, "size": size, "crop_pct": crop_pct, "resized_width": nw,
            "resized_height": nh, "top": top, "left": left}


def fallback(width, height, scale):
    torch.manual_seed(0)
    img = torch.zeros(1, height, width)
    top, left, h, w = RandomResizedCrop.get_params(img, list(scale), [3.0 / 4.0, 4.0 / 3.0])
    return {"width": width, "height": height, "scale": list(scale), "top": top, "left": left, "h": h, "w": w}


def main():
    crop = Image.open(CHINA).convert("RGB").crop((300, 200, 460, 307))  # 160x107: roofs, trees and sky
    crop.save(os.path.join(HERE, "crop.png"), optimize=True)
    x = as_float_chw(Image.open(os.path.join(HERE, "crop.png")).convert("RGB"))

    side = math.floor(64 / 0.875)
    ev = F.center_crop(F.resize(x, side, InterpolationMode.BILINEAR, antialias=False), [64, 64])
    write_f32("eval.f32", normalise(ev))

    geo = fallback(160, 107, (0.9, 1.0))
    tr = F.resized_crop(x, geo["top"], geo["left"], geo["h"], geo["w"], [64, 64], InterpolationMode.BILINEAR,
                        antialias=False)
    write_f32("train.f32", normalise(tr))

    fixtures = {
        "made_with": {"torch": torch.__version__, "torchvision": torchvision.__version__},
        "train_crop": geo,
        "fallbacks": [fallback(w, h, s) for (w, h, s) in
                      [(1000, 10, (0.08, 1.0)), (10, 1000, (0.08, 1.0)), (300, 7, (0.08, 1.0)),
                       (100, 50, (0.9, 1.0)), (50, 100, (0.9, 1.0)), (160, 107, (0.9, 1.0))]],
        "eval": [eval_geometry(w, h, s, p) for (w, h, s, p) in
                 [(640, 427, 224, 0.875), (427, 640, 224, 0.875), (160, 107, 64, 0.875), (500, 375, 224, 0.9),
                  (256, 256, 224, 0.875), (1000, 333, 256, 0.95), (300, 299, 224, 1.0)]],
    }
    with open(os.path.join(HERE, "fixtures.json"), "w") as f:
        json.dump(fixtures, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
