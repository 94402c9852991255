#!/usr/bin/env python3
"""Checkpoint conformance against an independent safetensors implementation (this file, stdlib only).

Usage: test_checkpoint_conformance.py SOURCE_DIR BUILD_DIR  (exit 77 = skipped: checkpoint_tool not built)

The reader and writer here follow the published safetensors format (8-byte little-endian header
length, JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then the byte buffer)
using only json and struct, with a bitwise CRC-32C, so nothing is shared with fastnn's C++ code.

1. `checkpoint_tool write DIR` (CheckpointManager) writes checkpoints 5 and 10; this script checks the
   directory layout, the index, the meta text (step, sizes, CRC32C of each file), parses every
   safetensors file by the spec and compares each value with expected_weights() /
   expected_optimizer() (the same formulas as tests/python/checkpoint_tool.cpp).
2. This script writes safetensors files its own way (random tensors of every dtype, buffer order
   unlike key order, spaced JSON, no alignment padding) and `checkpoint_tool dump` must print the
   values it wrote; a hand-made checkpoint directory must load with `checkpoint_tool load`.
3. Damaged files (overlapping or out-of-range offsets, unknown dtype, shape mismatch, huge header
   length, truncation) must be refused with exit status 1 and an error naming the file.
"""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

DTYPES = {"F32": (4, "f"), "F16": (2, "e"), "BF16": (2, None), "I32": (4, "i"), "I64": (8, "q"), "U8": (1, "B")}


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


# ---- safetensors by the spec ----


def parse_safetensors(data: bytes):
    """Returns (metadata, {name: (dtype, shape, raw bytes)}); asserts every rule of the format."""
    assert len(data) >= 8, "shorter than the length prefix"
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), "header runs past the end"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    assert isinstance(header, dict)
    buffer = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    tensors, spans = {}, []
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, (name, info)
        size, _ = DTYPES[info["dtype"]]
        count = 1
        for d in info["shape"]:
            assert isinstance(d, int) and d >= 0
            count *= d
        begin, end = info["data_offsets"]
        assert 0 <= begin <= end <= len(buffer), (name, begin, end)
        assert (end - begin) == count * size, (name, info)
        spans.append((begin, end))
        tensors[name] = (info["dtype"], list(info["shape"]), buffer[begin:end])
    pos = 0
    for begin, end in sorted(spans):
        assert begin == pos, "tensors do not tile the buffer"
        pos = end
    assert pos == len(buffer), "trailing bytes"
    return metadata, tensors


def write_safetensors(path, tensors, metadata=None, order=None, spaced=False):
    """tensors: {name: (dtype, shape, raw bytes)}; `order` = buffer order of the names."""
    order = order or list(tensors)
    header, buffer = {}, b""
    for name in order:
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(buffer), len(buffer) + len(raw)]}
        buffer += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    items = list(header.items())
    random.shuffle(items)
    text = json.dumps(dict(items), separators=(", ", ": ") if spaced else (",", ":")).encode("utf-8")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + buffer)


def values_of(dtype, raw):
    """The values the C++ tool prints: float bit patterns, integers as they are."""
    size, _ = DTYPES[dtype]
    fmt = {"F32": "I", "F16": "H", "BF16": "H", "I32": "i", "I64": "q", "U8": "B"}[dtype]
    return list(struct.unpack("<%d%s" % (len(raw) // size, fmt), raw))


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


# ---- the fixed checkpoint of checkpoint_tool.cpp ----


def expected_weights(step):
    def pack(fmt, values):
        return struct.pack("<%d%s" % (len(values), fmt), *values)
    return {
        "layer1/weights": ("F32", [3, 4], pack("f", [i * 0.5 - 2.75 + step for i in range(12)])),
        "layer1/bias": ("F16", [4], pack("e", [1.0, -2.0, 65504.0, 2.0 ** -24])),
        "bn/scale": ("BF16", [2, 2], pack("H", [0x3F80, 0xC0A0, 0x7F80, 0x0000])),
        "counts": ("I32", [5], pack("i", [-2 ** 31, -1, 0, 1, 2 ** 31 - 1])),
        "ids": ("I64", [2, 1], pack("q", [-2 ** 63, 2 ** 40])),
        "mask": ("U8", [6], bytes([0, 1, 127, 128, 254, 255])),
        "scalar": ("F32", [], pack("f", [3.5])),
        "empty": ("F32", [0, 3], b""),
    }


def expected_optimizer():
    return {
        "layer1/weights/adam_m": ("F32", [12], struct.pack("<12f", *[i * 0.125 for i in range(12)])),
        "adam/beta1_power": ("F32", [1], struct.pack("<f", 0.81)),
    }


def bf16_to_float(bits):
    return struct.unpack("<f", struct.pack("<I", bits << 16))[0]


def check_written_checkpoints(tool, work):
    out = os.path.join(work, "run")
    subprocess.run([tool, "write", out], check=True)
    names = sorted(n for n in os.listdir(out) if not n.startswith("."))
    want = sorted(["checkpoint"] + ["ckpt-%d.%s" % (s, k) for s in (5, 10)
                                    for k in ("weights.safetensors", "optimizer.safetensors", "meta.pbtxt")])
    assert names == want, names
    assert not [n for n in os.listdir(out) if n.endswith(".fastnn-tmp")]
    index = open(os.path.join(out, "checkpoint")).read()
    assert re.search(r'^model_checkpoint_path: "ckpt-10"$', index, re.M), index
    assert re.findall(r'^all_model_checkpoint_paths: "(ckpt-\d+)"$', index, re.M) == ["ckpt-5", "ckpt-10"], index
    for step in (5, 10):
        meta = open(os.path.join(out, "ckpt-%d.meta.pbtxt" % step)).read()
        assert re.search(r"^step: %d$" % step, meta, re.M), meta
        for kind, expected in (("weights", expected_weights(step)), ("optimizer", expected_optimizer())):
            name = "ckpt-%d.%s.safetensors" % (step, kind)
            data = open(os.path.join(out, name), "rb").read()
            block = re.search(r"%s_file \{([^}]*)\}" % kind, meta).group(1)
            assert 'name: "%s"' % name in block, block
            assert "size_bytes: %d" % len(data) in block, block
            assert "crc32c: %d" % crc32c(data) in block, (block, crc32c(data))
            (n,) = struct.unpack("<Q", data[:8])
            assert n % 8 == 0, "buffer not 8-aligned"
            metadata, tensors = parse_safetensors(data)
            assert metadata == {"fastnn_step": str(step)}, metadata
            assert tensors == expected, (name, sorted(tensors))
        # Decoded values, as a Python user of the checkpoint would read them.
        _, t = parse_safetensors(open(os.path.join(out, "ckpt-%d.weights.safetensors" % step), "rb").read())
        assert struct.unpack("<12f", t["layer1/weights"][2])[11] == 11 * 0.5 - 2.75 + step
        assert struct.unpack("<4e", t["layer1/bias"][2]) == (1.0, -2.0, 65504.0, 2.0 ** -24)
        scale = [bf16_to_float(b) for b in struct.unpack("<4H", t["bn/scale"][2])]
        assert scale[:2] == [1.0, -5.0] and scale[2] == float("inf") and scale[3] == 0.0, scale
    print("C++ checkpoints parse by the spec: ok")


def random_tensor(rng, dtype):
    shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
    count = 1
    for d in shape:
        count *= d
    if dtype == "F32":
        raw = struct.pack("<%df" % count, *[rng.uniform(-1e6, 1e6) for _ in range(count)])
    elif dtype in ("F16", "BF16"):
        raw = struct.pack("<%dH" % count, *[rng.randrange(0, 0x10000) for _ in range(count)])
    elif dtype == "I32":
        raw = struct.pack("<%di" % count, *[rng.randint(-2 ** 31, 2 ** 31 - 1) for _ in range(count)])
    elif dtype == "I64":
        raw = struct.pack("<%dq" % count, *[rng.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(count)])
    else:
        raw = bytes(rng.randrange(256) for _ in range(count))
    return dtype, shape, raw


def check_python_files_load(tool, work):
    rng = random.Random(11)
    for trial in range(6):
        tensors = {}
        for i in range(rng.randint(1, 12)):
            name = rng.choice(["w", "layer/%d/kernel" % i, "\u00e9t\u00e9/%d" % i, "a b \"q\" %d" % i])
            tensors[name] = random_tensor(rng, rng.choice(sorted(DTYPES)))
        order = list(tensors)
        rng.shuffle(order)
        metadata = {"format": "pt", "trial": str(trial)} if trial % 2 else None
        path = os.path.join(work, "py-%d.safetensors" % trial)
        write_safetensors(path, tensors, metadata, order, spaced=trial % 3 == 0)
        out = subprocess.run([tool, "dump", path], check=True, capture_output=True, text=True).stdout
        got = json.loads(out)
        assert got["metadata"] == (metadata or {}), got["metadata"]
        assert set(got["tensors"]) == set(tensors), (sorted(got["tensors"]), sorted(tensors))
        for name, (dtype, shape, raw) in tensors.items():
            g = got["tensors"][name]
            assert g["dtype"] == dtype and g["shape"] == shape, (name, g, dtype, shape)
            assert g["values"] == values_of(dtype, raw), name
    print("Python-written safetensors load in C++: ok")

    # A whole checkpoint directory made here loads with fastnn's loader (meta checked against CRCs).
    ck = os.path.join(work, "pyckpt")
    os.makedirs(ck)
    weights = expected_weights(42)
    opt = expected_optimizer()
    records = {}
    for kind, tensors in (("weights", weights), ("optimizer", opt)):
        name = "ckpt-42.%s.safetensors" % kind
        write_safetensors(os.path.join(ck, name), tensors, {"writer": "python"}, spaced=True)
        data = open(os.path.join(ck, name), "rb").read()
        records[kind] = '%s_file {\n  name: "%s"\n  size_bytes: %d\n  crc32c: %d\n  num_arrays: %d\n}\n' % (
            kind, name, len(data), crc32c(data), len(tensors))
    with open(os.path.join(ck, "ckpt-42.meta.pbtxt"), "w") as f:
        f.write("# written by Python\nstep: 42\nepoch: 7\nconfig { batch_size: 8 }\n" + records["weights"] + records["optimizer"])
    with open(os.path.join(ck, "checkpoint"), "w") as f:
        f.write('model_checkpoint_path: "ckpt-42"\nall_model_checkpoint_paths: "ckpt-42"\n')
    got = json.loads(subprocess.run([tool, "load", ck], check=True, capture_output=True, text=True).stdout)
    assert got["step"] == 42 and got["epoch"] == 7, got
    assert got["prefix"].endswith("ckpt-42"), got["prefix"]
    for name, (dtype, shape, raw) in weights.items():
        assert got["weights"]["tensors"][name]["values"] == values_of(dtype, raw), name
    assert got["optimizer"]["tensors"]["adam/beta1_power"]["values"] == [f32_bits(0.81)]
    # A data file that no longer matches its recorded CRC is refused.
    path = os.path.join(ck, "ckpt-42.weights.safetensors")
    data = bytearray(open(path, "rb").read())
    data[-5] ^= 0x10
    open(path, "wb").write(bytes(data))
    r = subprocess.run([tool, "load", ck + "/ckpt-42"], capture_output=True, text=True)
    assert r.returncode == 1 and "CRC32C" in r.stderr and path in r.stderr, (r.returncode, r.stderr)
    print("Python-written checkpoint loads in C++: ok")


def check_damaged_files_refused(tool, work):
    good = {"a": ("F32", [2], struct.pack("<2f", 1, 2)), "b": ("U8", [3], b"\x01\x02\x03")}

    def header_file(name, header, buffer):
        text = json.dumps(header).encode()
        path = os.path.join(work, name)
        open(path, "wb").write(struct.pack("<Q", len(text)) + text + buffer)
        return path

    cases = {
        "overlap": header_file("overlap.safetensors", {
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
            "b": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]}}, b"\0" * 8),
        "out_of_range": header_file("range.safetensors", {
            "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 7),
        "dtype": header_file("dtype.safetensors", {
            "a": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8),
        "shape": header_file("shape.safetensors", {
            "a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
        "gap": header_file("gap.safetensors", {
            "a": {"dtype": "U8", "shape": [2], "data_offsets": [2, 4]}}, b"\0" * 4),
    }
    huge = os.path.join(work, "huge.safetensors")
    open(huge, "wb").write(struct.pack("<Q", 1 << 62) + b"{}")
    cases["huge_header"] = huge
    base = os.path.join(work, "good.safetensors")
    write_safetensors(base, good)
    data = open(base, "rb").read()
    for cut in (4, 12, len(data) - 1):
        path = os.path.join(work, "cut-%d.safetensors" % cut)
        open(path, "wb").write(data[:cut])
        cases["truncated %d" % cut] = path
    bad_json = os.path.join(work, "json.safetensors")
    open(bad_json, "wb").write(struct.pack("<Q", 5) + b"{\"a\":")
    cases["json"] = bad_json
    for what, path in cases.items():
        r = subprocess.run([tool, "dump", path], capture_output=True, text=True)
        assert r.returncode == 1, (what, r.returncode, r.stdout, r.stderr)
        assert path in r.stderr, (what, r.stderr)
    r = subprocess.run([tool, "dump", base], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    print("damaged files refused (%d cases): ok" % len(cases))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    build = sys.argv[2]
    tool = os.path.join(build, "bin", "checkpoint_tool")
    if not os.access(tool, os.X_OK):
        print("%s is not built: skipped" % tool)
        return 77
    work = tempfile.mkdtemp(prefix="fastnn-ckpt-conf-")
    try:
        check_written_checkpoints(tool, work)
        check_python_files_load(tool, work)
        check_damaged_files_refused(tool, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
