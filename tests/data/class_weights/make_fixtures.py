#!/usr/bin/env python3
"""Writes fixtures.json, which tests/unit/trainer/ops_softmax_xent_weights_test.cpp compares fastnn's
weighted softmax cross-entropy (trainer/ops/softmax_xent.h) with: PyTorch's
torch.nn.functional.cross_entropy(logits, labels, weight=w, label_smoothing=eps) (mean reduction), its
value and the gradient of the logits, in float64.

Run with an interpreter that has torch:

    python3 -m venv V && V/bin/pip install torch numpy
    V/bin/python tests/data/class_weights/make_fixtures.py

The logits are an integer formula the C++ test repeats (logit_value). Deterministic; about 10 KB.
"""
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def logit_value(n, k):
    # The C++ test's formula: exactly representable, distinct enough per row.
    return float(((n * 7 + k * 3) % 11) - 5) / 4.0


CASES = [
    {"name": "weighted", "k": 5, "labels": [0, 1, 2, 3, 4, 1], "weights": [0.5, 2, 1, 3, 0.25], "eps": 0.0},
    {"name": "weighted_smoothed", "k": 5, "labels": [0, 1, 2, 3, 4, 1], "weights": [0.5, 2, 1, 3, 0.25], "eps": 0.2},
    {"name": "ones_smoothed", "k": 3, "labels": [2, 0, 0, 1], "weights": [1, 1, 1], "eps": 0.1},
    {"name": "ten_classes", "k": 10, "labels": [9, 3, 3, 0, 7, 7, 7, 1],
     "weights": [1.0 / (c + 1) for c in range(10)], "eps": 0.05},
]


def main():
    out = {"torch": torch.__version__, "cases": []}
    for case in CASES:
        n, k = len(case["labels"]), case["k"]
        z = torch.tensor([[logit_value(i, j) for j in range(k)] for i in range(n)], dtype=torch.float64,
                         requires_grad=True)
        y = torch.tensor(case["labels"], dtype=torch.int64)
        w = torch.tensor(case["weights"], dtype=torch.float64)
        loss = torch.nn.functional.cross_entropy(z, y, weight=w, label_smoothing=case["eps"])
        loss.backward()
        out["cases"].append(dict(case, loss=loss.item(), grad=z.grad.reshape(-1).tolist()))
    with open(os.path.join(HERE, "fixtures.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
