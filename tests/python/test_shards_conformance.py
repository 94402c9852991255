#!/usr/bin/env python3
"""tf.data compatibility of `fastnn convert` output, checked by independent implementations.

Runs build/bin/fastnn convert on small generated datasets of every format (plain, GZIP and ZLIB shard
compression), then reads every shard with what tf.data relies on, none of it fastnn's code:
  - TFRecord framing parsed here, both masked CRC32Cs recomputed with a CRC-32C written here
    (checked against the standard check value of "123456789");
  - GZIP/ZLIB whole-file compression undone with Python's gzip/zlib;
  - tf.train.Example parsed with python3-protobuf from classes protoc generates from schemas/;
  - images decoded with PIL; size and channels compared with the record's features;
  - every record traced back to its source sample (pixels or bytes) and label; every source sample
    found once (or listed as dropped / padded in manifest.json); counts and histograms match.
Usage: test_shards_conformance.py SOURCE_DIR BUILD_DIR. Exit 77 (skipped) without protobuf, PIL or protoc.
"""
import base64
import collections
import gzip
import importlib.util
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
REQUIRED = {"image/encoded": "bytes_list", "image/format": "bytes_list", "image/class/label": "int64_list",
            "image/height": "int64_list", "image/width": "int64_list", "image/channels": "int64_list"}
MODE_CHANNELS = {"L": 1, "RGB": 3, "RGBA": 4, "CMYK": 4}


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


def read_tfrecord(path, compression):
    raw = open(path, "rb").read()
    if compression == "gzip":
        raw = gzip.decompress(raw)
    elif compression == "zlib":
        raw = zlib.decompress(raw)
    pos, out = 0, []
    while pos < len(raw):
        assert pos + 12 <= len(raw), f"{path}: truncated header at {pos}"
        (length,) = struct.unpack_from("<Q", raw, pos)
        (lcrc,) = struct.unpack_from("<I", raw, pos + 8)
        assert lcrc == masked(crc32c(raw[pos:pos + 8])), f"{path}: length CRC at {pos}"
        data = raw[pos + 12:pos + 12 + length]
        assert len(data) == length, f"{path}: truncated record at {pos}"
        (dcrc,) = struct.unpack_from("<I", raw, pos + 12 + length)
        assert dcrc == masked(crc32c(data)), f"{path}: data CRC at {pos}"
        out.append(data)
        pos += 16 + length
    return out


class Checker:
    def __init__(self, fastnn, example_pb2, Image, work):
        self.fastnn, self.pb, self.Image, self.work = fastnn, example_pb2, Image, work

    def convert(self, fmt, out, *args):
        cmd = [self.fastnn, "convert", fmt, "-o", os.path.join(self.work, out), "-q"] + list(args)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return os.path.join(self.work, out)

    def records(self, out):
        """{split: [(shard index, parsed record dict)]} after all format checks; plus the manifest."""
        manifest = json.load(open(os.path.join(out, "manifest.json")))
        assert manifest["format"] == "fastnn-shards" and manifest["version"] == 1
        labels_txt = open(os.path.join(out, "labels.txt")).read().splitlines()
        assert labels_txt == [f"{i}:{n}" for i, n in enumerate(manifest["classes"])], "labels.txt"
        result = {}
        for split in manifest["split_order"]:
            info = manifest["splits"][split]
            assert len(info["shards"]) == manifest["num_gpus"] * manifest["shards_per_gpu"]
            recs = []
            for k, shard in enumerate(info["shards"]):
                assert shard["file"] == f"{split}-{k:05d}-of-{len(info['shards']):05d}.tfrecord"
                path = os.path.join(out, shard["file"])
                assert os.path.getsize(path) == shard["bytes"], path
                blobs = read_tfrecord(path, manifest["compression"])
                assert len(blobs) == shard["records"], f"{path}: {len(blobs)} records, manifest {shard['records']}"
                hist = [0] * manifest["num_classes"]
                for blob in blobs:
                    r = self.parse(blob, manifest)
                    hist[r["label"]] += 1
                    recs.append((k, r))
                assert hist == shard["label_histogram"], f"{path}: histogram"
            sizes = [s["records"] for s in info["shards"]]
            if info["equal_shards"]:
                assert len(set(sizes)) == 1, f"{split}: unequal train shards {sizes}"
            else:
                assert max(sizes) - min(sizes) <= 1, f"{split}: shard sizes {sizes}"
            result[split] = recs
        return result, manifest

    def parse(self, blob, manifest):
        ex = self.pb.Example.FromString(blob)
        assert ex.SerializeToString(deterministic=True) is not None
        f = ex.features.feature
        for key, kind in REQUIRED.items():
            assert key in f, f"missing {key}"
            assert f[key].WhichOneof("kind") == kind, f"{key} is {f[key].WhichOneof('kind')}"
            assert len(getattr(f[key], kind).value) == 1, f"{key} must hold one value"
        r = {k.split("/")[-1]: getattr(f[k], kind).value[0] for k, kind in REQUIRED.items()}
        r["format"] = r["format"].decode()
        if "image/class/coarse_label" in f:
            r["coarse"] = f["image/class/coarse_label"].int64_list.value[0]
        assert 0 <= r["label"] < manifest["num_classes"]
        if r["format"] == "raw":
            assert len(r["encoded"]) == r["height"] * r["width"] * r["channels"]
            r["pixels"] = r["encoded"]
            return r
        img = self.Image.open(io.BytesIO(r["encoded"]))
        assert img.format.lower() == r["format"], f"{img.format} vs {r['format']}"
        assert img.size == (r["width"], r["height"]), f"{img.size} vs {r['width']}x{r['height']}"
        assert MODE_CHANNELS[img.mode] == r["channels"], f"mode {img.mode} vs {r['channels']} channels"
        img.load()  # a full decode
        r["pixels"] = img.tobytes()
        return r


def check_accounted(name, written, source, manifest_split):
    """written: keys of records; source: {key: count}; dropped/padded from the manifest (by key)."""
    got = collections.Counter(written)
    want = collections.Counter(source)
    want.subtract(collections.Counter(manifest_split["dropped_keys"]))
    want.update(collections.Counter(manifest_split["padded_keys"]))
    want = +want
    assert got == want, f"{name}: records differ from the source (missing {list((want - got).items())[:3]}, " \
                        f"extra {list((got - want).items())[:3]})"


def main():
    src, build = sys.argv[1], sys.argv[2]
    try:
        import google.protobuf  # noqa: F401
        from PIL import Image
    except ImportError as e:
        print(f"SKIP: {e}")
        return SKIP
    protoc = shutil.which("protoc")
    if not protoc:
        print("SKIP: protoc not found")
        return SKIP
    fastnn = os.path.join(build, "bin", "fastnn")
    if not os.path.exists(fastnn):
        print(f"FAIL: {fastnn} is not built")
        return 1
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720 B.4)

    work = tempfile.mkdtemp(prefix="fastnn_conformance_")
    try:
        pb_dir = os.path.join(work, "pb")
        os.makedirs(pb_dir)
        subprocess.run([protoc, "-I", src, f"--python_out={pb_dir}", "schemas/feature.proto", "schemas/example.proto"],
                       check=True)
        sys.path.insert(0, pb_dir)
        from schemas import example_pb2
        spec = importlib.util.spec_from_file_location("convert_data", os.path.join(src, "tests/integration/convert_data.py"))
        data = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(data)
        c = Checker(fastnn, example_pb2, Image, work)

        # MNIST (gzip IDX in, GZIP shards out): pixels and labels against the IDX files.
        data.mnist(os.path.join(work, "mnist"), 123, 37, True)
        out = c.convert("mnist", "mnist_out", "-i", os.path.join(work, "mnist"), "--num-gpus", "2",
                        "--shards-per-gpu", "2", "--compression", "gzip", "--seed", "3")
        recs, m = c.records(out)
        for split, stem, n in (("train", "train", 123), ("test", "t10k", 37)):
            imgs = gzip.open(os.path.join(work, "mnist", f"{stem}-images-idx3-ubyte.gz")).read()[16:]
            labs = gzip.open(os.path.join(work, "mnist", f"{stem}-labels-idx1-ubyte.gz")).read()[8:]
            key = lambda i: (imgs[i * 784:(i + 1) * 784], labs[i])  # noqa: E731
            for k, r in recs[split]:
                assert (r["height"], r["width"], r["channels"], r["format"]) == (28, 28, 1, "png")
            info = m["splits"][split]
            info["dropped_keys"] = [key(int(d["source"].split("#")[1])) for d in info["dropped"]]
            info["padded_keys"] = [key(int(p["source"].split("#")[1])) for p in info["padded"]]
            check_accounted(f"mnist {split}", [(r["pixels"], r["label"]) for _, r in recs[split]],
                            [key(i) for i in range(n)], info)
        print(f"mnist: {sum(len(v) for v in recs.values())} records ok (gzip)")

        # CIFAR-10 (ZLIB shards): RGB pixels = the planes interleaved.
        data.cifar10(os.path.join(work, "cifar"), 8)
        out = c.convert("cifar10", "cifar_out", "-i", os.path.join(work, "cifar"), "--num-gpus", "1",
                        "--shards-per-gpu", "3", "--compression", "zlib", "--remainder", "pad")
        recs, m = c.records(out)
        source = {"train": [], "test": []}
        for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
            raw = open(os.path.join(work, "cifar", name), "rb").read()
            for i in range(len(raw) // 3073):
                rec = raw[i * 3073:(i + 1) * 3073]
                planes = rec[1:]
                hwc = bytes(planes[c_ * 1024 + p] for p in range(1024) for c_ in range(3))
                source["test" if name == "test_batch.bin" else "train"].append((hwc, rec[0]))
        for split in ("train", "test"):
            info = m["splits"][split]
            by_src = lambda s: source[split][  # noqa: E731
                (int(s.split("_")[-1].split(".")[0]) - 1) * 8 + int(s.split("#")[1]) if split == "train" else int(s.split("#")[1])]
            info["dropped_keys"] = [by_src(d["source"]) for d in info["dropped"]]
            info["padded_keys"] = [by_src(p["source"]) for p in info["padded"]]
            check_accounted(f"cifar {split}", [(r["pixels"], r["label"]) for _, r in recs[split]], source[split], info)
        print(f"cifar10: {sum(len(v) for v in recs.values())} records ok (zlib, padded)")

        # Image folder: the record bytes are the files' bytes.
        data.folder(os.path.join(work, "flowers"), 7)
        out = c.convert("image-folder", "folder_out", "-i", os.path.join(work, "flowers"), "--num-gpus", "2",
                        "--shards-per-gpu", "1", "--validation-count", "5")
        recs, m = c.records(out)
        files = {}
        for label, cls in enumerate(m["classes"]):
            d = os.path.join(work, "flowers", cls)
            for fn in sorted(os.listdir(d)):
                files[os.path.join(d, fn)] = (open(os.path.join(d, fn), "rb").read(), label)
        written = [(r["encoded"], r["label"]) for split in recs for _, r in recs[split]]
        info = {"dropped_keys": [files[d["source"]] for d in m["splits"]["train"]["dropped"]],
                "padded_keys": [files[p["source"]] for p in m["splits"]["train"]["padded"]]}
        check_accounted("image-folder", written, list(files.values()), info)
        assert len(recs["validation"]) == 5
        print(f"image-folder: {len(written)} records ok")

        # Existing TFRecords: TF-slim-style shards of the folder images written here with python3-protobuf
        # (image/format "jpg"/"png", no image/channels), re-sharded by `convert tfrecord`.
        slim = os.path.join(work, "slim")
        os.makedirs(slim)
        items = sorted(files.items())
        with open(os.path.join(slim, "labels.txt"), "w") as f:
            f.write("".join(f"{i}:{n}\n" for i, n in enumerate(m["classes"])))
        frame_at = {}  # "file#offset" → (bytes, label)
        for k in range(3):
            split = "validation" if k == 2 else "train"
            name = os.path.join(slim, f"flowers_{split}_{k:05d}-of-00003.tfrecord")
            with open(name, "wb") as f:
                for path, (blob, label) in items[k::3]:
                    ex = example_pb2.Example()
                    feat = ex.features.feature
                    feat["image/encoded"].bytes_list.value.append(blob)
                    feat["image/format"].bytes_list.value.append(b"png" if blob.startswith(b"\x89PNG") else b"jpg")
                    feat["image/class/label"].int64_list.value.append(label)
                    rec = ex.SerializeToString()
                    frame_at[f"{name}#{f.tell()}"] = (blob, label)
                    length = struct.pack("<Q", len(rec))
                    f.write(length + struct.pack("<I", masked(crc32c(length))) + rec + struct.pack("<I", masked(crc32c(rec))))
        out = c.convert("tfrecord", "tfrecord_out", "-i", os.path.join(slim, "flowers_*.tfrecord"), "--num-gpus", "2",
                        "--shards-per-gpu", "2", "--seed", "5")
        recs, m2 = c.records(out)
        assert m2["classes"] == m["classes"] and m2["dataset"] == "tfrecord"
        for split in ("train", "validation"):
            info = m2["splits"][split]
            info["dropped_keys"] = [frame_at[d["source"]] for d in info["dropped"]]
            info["padded_keys"] = [frame_at[p["source"]] for p in info["padded"]]
            source = [v for key, v in frame_at.items() if ("_validation_" in key) == (split == "validation")]
            check_accounted(f"tfrecord {split}", [(r["encoded"], r["label"]) for _, r in recs[split]], source, info)
        print(f"tfrecord: {sum(len(v) for v in recs.values())} records ok")

        # base64-TSV: the record bytes are the decoded lines.
        tsv = os.path.join(work, "data.tsv")
        data.tsv(tsv, 25)
        out = c.convert("base64-tsv", "tsv_out", "-i", tsv, "--num-gpus", "1", "--shards-per-gpu", "4")
        recs, m = c.records(out)
        lines = [l.split("\t") for l in open(tsv).read().splitlines()]
        source = [(base64.b64decode(b), int(l)) for b, l in lines]
        info = m["splits"]["train"]
        info["dropped_keys"] = [source[int(d["source"].rsplit(":", 1)[1]) - 1] for d in info["dropped"]]
        info["padded_keys"] = []
        check_accounted("base64-tsv", [(r["encoded"], r["label"]) for _, r in recs["train"]], source, info)
        print(f"base64-tsv: {len(recs['train'])} records ok")

        # Synthetic raw and JPEG records parse and decode.
        for fmt in ("raw", "jpeg"):
            out = c.convert("synthetic", f"syn_{fmt}", "--num-records", "20", "--height", "9", "--width", "11",
                            "--num-classes", "3", "--image-format", fmt, "--num-gpus", "2", "--shards-per-gpu", "1")
            recs, m = c.records(out)
            assert all(r["format"] == fmt and r["width"] == 11 for _, r in recs["train"])
        print("synthetic: raw and jpeg ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
