#!/usr/bin/env python3
"""TF-slim-style shards from real data, and an independent reader of shards (standard library + PIL).

  tfslim_layout.py make FASHION_DIR OUT N_TRAIN_PER_CLASS N_VAL_PER_CLASS
      Five Fashion-MNIST classes as TF-slim's download_and_convert_flowers.py lays them out:
      flowers_{train,validation}_%05d-of-00005.tfrecord (samples shuffled with seed 0, then cut into 5
      consecutive shards, the last one shorter), records with TF-slim's image_to_tfexample keys only
      (image/encoded, image/format, image/class/label, image/height, image/width: no image/channels),
      two of three images JPEG with image/format b"jpg", the third PNG with b"png"; labels.txt in
      TF-slim's id:name form; no manifest.json.
  tfslim_layout.py verify DIR
      Reads every DIR/*.tfrecord with code written here (framing, both masked CRC-32Cs, the Example
      wire format) and PIL; prints "split records classes-histogram" per split as JSON. Exit 1 on any
      problem.
Exit status 77 when PIL is missing (the caller skips).
"""
import collections
import gzip
import io
import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pb_fields import fields, read_varint  # noqa: E402

CLASSES = ["tshirt", "trouser", "pullover", "dress", "coat"]


def crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


# --- protobuf wire format, just what tf.train.Example needs ---------------------------------------
def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(num, payload):  # length-delimited field
    return varint((num << 3) | 2) + varint(len(payload)) + payload


def example(features):
    """features: {key: bytes | int}; bytes → BytesList, int → Int64List (packed)."""
    entries = b""
    for key in sorted(features):
        v = features[key]
        if isinstance(v, bytes):
            feature = field(1, field(1, v))  # Feature.bytes_list { value }
        else:
            feature = field(3, field(1, varint(v & 0xFFFFFFFFFFFFFFFF)))  # Feature.int64_list { packed value }
        entries += field(1, field(1, key.encode()) + field(2, feature))
    return field(1, entries)


def frame(record):
    length = struct.pack("<Q", len(record))
    return length + struct.pack("<I", masked(crc32c(length))) + record + struct.pack("<I", masked(crc32c(record)))


def parse_example(blob):
    out = {}
    for num, _, features in fields(blob):
        assert num == 1
        for _, _, entry in fields(features):
            kv = dict((n, v) for n, _, v in fields(entry))
            key = kv[1].decode()
            (kind, _, lst), = list(fields(kv[2]))
            if kind == 1:
                out[key] = [v for _, _, v in fields(lst)]
            elif kind == 3:
                vals = []
                for _, wt, v in fields(lst):
                    if wt == 0:
                        vals.append(v)
                    else:
                        p = 0
                        while p < len(v):
                            x, p = read_varint(v, p)
                            vals.append(x)
                out[key] = vals
            else:
                raise ValueError(f"{key}: feature kind {kind}")
    return out


def read_tfrecord(path):
    raw = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(raw):
        assert pos + 12 <= len(raw), f"{path}: truncated header at {pos}"
        (length,) = struct.unpack_from("<Q", raw, pos)
        assert struct.unpack_from("<I", raw, pos + 8)[0] == masked(crc32c(raw[pos:pos + 8])), f"{path}: length CRC at {pos}"
        data = raw[pos + 12:pos + 12 + length]
        assert len(data) == length, f"{path}: truncated record at {pos}"
        assert struct.unpack_from("<I", raw, pos + 12 + length)[0] == masked(crc32c(data)), f"{path}: data CRC at {pos}"
        out.append(data)
        pos += 16 + length
    return out


def pil():
    try:
        from PIL import Image
    except ImportError:
        sys.exit(77)
    return Image


def fashion(raw, stem):
    images = gzip.open(os.path.join(raw, f"{stem}-images-idx3-ubyte.gz")).read()[16:]
    labels = gzip.open(os.path.join(raw, f"{stem}-labels-idx1-ubyte.gz")).read()[8:]
    return images, labels


def make(raw, out, n_train, n_val):
    Image = pil()
    os.makedirs(out, exist_ok=True)
    for split, stem, per_class in (("train", "train", n_train), ("validation", "t10k", n_val)):
        images, labels = fashion(raw, stem)
        picked = []
        for i, lab in enumerate(labels):
            if lab < len(CLASSES) and sum(1 for _, l in picked if l == lab) < per_class:
                picked.append((i, lab))
            if len(picked) == per_class * len(CLASSES):
                break
        random.Random(0).shuffle(picked)  # TF-slim: random.seed(0); random.shuffle(photo_filenames)
        per_shard = -(-len(picked) // 5)  # ceil, as TF-slim's _convert_dataset
        for shard in range(5):
            name = os.path.join(out, f"flowers_{split}_{shard:05d}-of-00005.tfrecord")
            with open(name, "wb") as f:
                for k, (i, lab) in enumerate(picked[shard * per_shard:(shard + 1) * per_shard]):
                    img = Image.frombytes("L", (28, 28), images[i * 784:(i + 1) * 784])
                    buf = io.BytesIO()
                    fmt = b"png" if (i % 3 == 2) else b"jpg"
                    img.save(buf, format="PNG" if fmt == b"png" else "JPEG", quality=95)
                    f.write(frame(example({"image/encoded": buf.getvalue(), "image/format": fmt,
                                           "image/class/label": lab, "image/height": 28, "image/width": 28})))
    with open(os.path.join(out, "labels.txt"), "w") as f:
        for i, n in enumerate(CLASSES):
            f.write(f"{i}:{n}\n")


def verify(d):
    Image = pil()
    report = collections.defaultdict(lambda: {"records": 0, "histogram": collections.Counter(), "formats": set()})
    for name in sorted(os.listdir(d)):
        if ".tfrecord" not in name:
            continue
        split = name.split("-")[0]
        for blob in read_tfrecord(os.path.join(d, name)):
            ex = parse_example(blob)
            (enc,), (fmt,), (lab,) = ex["image/encoded"], ex["image/format"], ex["image/class/label"]
            (h,), (w,), (c,) = ex["image/height"], ex["image/width"], ex["image/channels"]
            img = Image.open(io.BytesIO(enc))
            assert img.format.lower() == fmt.decode(), f"{name}: {img.format} vs {fmt}"
            assert img.size == (w, h) and {"L": 1, "RGB": 3}[img.mode] == c, f"{name}: {img.size} {img.mode} vs {w}x{h}x{c}"
            img.load()
            r = report[split]
            r["records"] += 1
            r["histogram"][lab] += 1
            r["formats"].add(fmt.decode())
    print(json.dumps({s: {"records": r["records"], "histogram": [r["histogram"][k] for k in sorted(r["histogram"])],
                          "formats": sorted(r["formats"])} for s, r in sorted(report.items())}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "verify":
        verify(sys.argv[2])
    else:
        sys.exit(__doc__)
