#!/usr/bin/env python3
"""Writes fixtures.json, which tests/unit/pipeline/mixup_test.cpp compares fastnn's mixup and CutMix
with: timm's own functions (timm/data/mixup.py) on small batches.

Run with an interpreter that has torch, numpy and timm (timm may be installed with --no-deps: only its
data/mixup.py file is loaded, by path, so torchvision is not needed):

    python3 -m venv V && V/bin/pip install torch numpy && V/bin/pip install --no-deps timm
    V/bin/python tests/data/mixup/make_fixtures.py

The input batches are an integer formula the C++ test repeats (batch_value), NCHW as timm takes them.
Each case records what timm drew (numpy's generator, seeded per case) and what it made:

  mixup   Mixup(mixup_alpha=1, cutmix_alpha=0)._mix_batch on a float32 batch: lambda, and the
          output's float32 bit patterns.
  cutmix  timm.data.mixup.cutmix_bbox_and_lam(shape, lam, correct_lam=True) with lam a Beta(1, 1) draw,
          then the paste timm's _mix_batch does (x[:, :, yl:yh, xl:xh] = x.flip(0)[...]): lam before and
          after, the centre (cy, cx) rand_bbox drew (read back by replaying the generator), the box, and
          the output's bit patterns.
  uint8   FastCollateMixup(mixup_alpha=1)._mix_batch_collate on uint8 samples: lambda and the output.
  pair, elem  Mixup(mixup_alpha=1, cutmix_alpha=1, prob=0.8, mode=...)._mix_pair / _mix_elem on an even
          float32 batch: each unit's draw (a pair's or a sample's: lambda as drawn, whether CutMix, and for
          CutMix the box and corrected lambda cutmix_bbox_and_lam returned, recorded by wrapping it), the
          per-sample lambdas timm returns for the loss, and the output's bit patterns.

Deterministic; about 40 KB.
"""
import importlib.metadata
import importlib.util
import json
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def timm_mixup_module():
    spec = importlib.util.find_spec("timm")  # found, not imported: its __init__ wants torchvision
    path = os.path.join(os.path.dirname(spec.origin), "data", "mixup.py")
    m = importlib.util.spec_from_file_location("timm_data_mixup", path)
    mod = importlib.util.module_from_spec(m)
    m.loader.exec_module(mod)
    return mod, path


def batch_value(n, c, y, x):
    # The C++ test's formula: distinct values per sample, channel and pixel, exactly representable.
    return float(((n * 37 + c * 11 + y * 5 + x * 3) % 251) - 125) / 8.0


def float_batch(n, c, h, w):
    a = np.zeros((n, c, h, w), dtype=np.float32)
    for i in range(n):
        for k in range(c):
            for y in range(h):
                for x in range(w):
                    a[i, k, y, x] = batch_value(i, k, y, x)
    return a


def u8_batch(n, c, h, w):
    return ((float_batch(n, c, h, w) * 8.0 + 125.0)).astype(np.uint8)


def bits(a):
    return [format(int(v), "08x") for v in np.asarray(a, dtype=np.float32).view(np.uint32).ravel()]


def main():
    mix, path = timm_mixup_module()
    cases = []
    shape = (5, 3, 6, 7)  # odd batch: the middle sample blends with itself

    for seed in (2, 9):
        np.random.seed(seed)
        m = mix.Mixup(mixup_alpha=1.0, cutmix_alpha=0.0, prob=1.0, num_classes=10)
        x = torch.from_numpy(float_batch(*shape))
        lam = m._mix_batch(x)
        cases.append({"kind": "mixup", "shape": list(shape), "lambda": float(lam), "output": bits(x.numpy())})

    for seed in (3, 4, 5, 6):
        np.random.seed(seed)
        lam = float(np.random.beta(1.0, 1.0))
        state = np.random.get_state()
        x = torch.from_numpy(float_batch(*shape))
        (yl, yh, xl, xh), lam2 = mix.cutmix_bbox_and_lam(x.shape, lam, ratio_minmax=None, correct_lam=True)
        x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
        np.random.set_state(state)  # rand_bbox's two draws, read back: centre row, then column
        cy = int(np.random.randint(0, shape[2]))
        cx = int(np.random.randint(0, shape[3]))
        cases.append({"kind": "cutmix", "shape": list(shape), "lambda_drawn": lam, "lambda": float(lam2),
                      "centre": [cy, cx], "box": [int(yl), int(yh), int(xl), int(xh)], "output": bits(x.numpy())})

    for seed in (7, 8):
        np.random.seed(seed)
        m = mix.FastCollateMixup(mixup_alpha=1.0, cutmix_alpha=0.0, prob=1.0, num_classes=10)
        u8 = u8_batch(*shape)
        batch = [(u8[i], i) for i in range(shape[0])]
        out = torch.zeros(shape, dtype=torch.uint8)
        lam = m._mix_batch_collate(out, batch)
        cases.append({"kind": "uint8", "shape": list(shape), "lambda": float(lam),
                      "output": [int(v) for v in out.numpy().ravel()]})

    for mode in ("pair", "elem"):
        for seed in (11, 12, 13):
            np.random.seed(seed)
            m = mix.Mixup(mixup_alpha=1.0, cutmix_alpha=1.0, prob=0.8, switch_prob=0.5, mode=mode, num_classes=10)
            even = (6, 3, 6, 7)
            units = even[0] // 2 if mode == "pair" else even[0]
            state = np.random.get_state()
            drawn, cut = m._params_per_elem(units)  # what the call below draws first, read back
            np.random.set_state(state)
            boxes = []
            original = mix.cutmix_bbox_and_lam

            def recording(*args, **kwargs):
                box, lam = original(*args, **kwargs)
                boxes.append({"box": [int(v) for v in box], "lambda": float(lam)})
                return box, lam

            mix.cutmix_bbox_and_lam = recording
            x = torch.from_numpy(float_batch(*even))
            lam_batch = m._mix_pair(x) if mode == "pair" else m._mix_elem(x)
            mix.cutmix_bbox_and_lam = original
            unit_draws, k = [], 0
            for u in range(units):
                d = {"lambda": float(drawn[u]), "cutmix": bool(cut[u]) and float(drawn[u]) != 1.0}
                if d["cutmix"]:
                    d.update(boxes[k])
                    k += 1
                unit_draws.append(d)
            cases.append({"kind": mode, "shape": list(even), "draws": unit_draws,
                          "weights": [float(v) for v in lam_batch.numpy().ravel()], "output": bits(x.numpy())})

    doc = {"versions": {"torch": torch.__version__, "numpy": np.__version__, "timm": importlib.metadata.version("timm")},
           "timm_file": "timm/data/mixup.py", "cases": cases}
    with open(os.path.join(HERE, "fixtures.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
