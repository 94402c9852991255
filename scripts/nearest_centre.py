#!/usr/bin/python3
"""Nearest-class-centre evaluation of embeddings (docs/LARGE_SCALE.md, the dist_arcface recipe).

The class centres are the mean L2-normalised training embeddings of each class; a test embedding is
classified by the centre of highest cosine. Inputs are what `fastnn predict --embeddings` writes: a
float32 .npy of embeddings in input order, and the JSON lines beside it (their "target" field is the
record's label).

  scripts/nearest_centre.py TRAIN.npy TRAIN.jsonl TEST.npy TEST.jsonl

Prints the top-1 accuracy, and how often it agrees with predict's own top-1 (the head's cosine logits).
Needs numpy.
"""
import json
import sys

import numpy as np


def load(npy_path, jsonl_path):
    emb = np.load(npy_path).astype(np.float64)
    rows = [json.loads(line) for line in open(jsonl_path) if line.strip()]
    if len(rows) != emb.shape[0]:
        sys.exit(f"{npy_path}: {emb.shape[0]} embeddings, {jsonl_path}: {len(rows)} lines")
    targets = np.array([r["target"] for r in rows], dtype=np.int64)
    labels = np.array([r["label"] for r in rows], dtype=np.int64)
    norm = np.linalg.norm(emb, axis=1, keepdims=True)
    return emb / np.where(norm > 0, norm, 1), targets, labels


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    train, train_t, _ = load(sys.argv[1], sys.argv[2])
    test, test_t, test_label = load(sys.argv[3], sys.argv[4])
    classes = int(max(train_t.max(), test_t.max())) + 1
    centres = np.zeros((classes, train.shape[1]))
    for c in range(classes):
        members = train[train_t == c]
        if len(members):
            centres[c] = members.mean(axis=0)
    centres /= np.maximum(np.linalg.norm(centres, axis=1, keepdims=True), 1e-12)
    nearest = (test @ centres.T).argmax(axis=1)
    accuracy = float((nearest == test_t).mean())
    head = float((test_label == test_t).mean())
    agree = float((nearest == test_label).mean())
    print(json.dumps({"examples": int(len(test_t)), "nearest_centre_top1": accuracy, "head_top1": head,
                      "agreement": agree}))


if __name__ == "__main__":
    main()
