#!/usr/bin/env python3
"""Writes small datasets for the converter integration tests (standard library; PIL for JPEG).

  convert_data.py mnist DIR N_TRAIN N_TEST [--gz]      IDX files, random 28x28 images, labels i % 10
  convert_data.py cifar10 DIR N_PER_FILE               data_batch_1..5.bin + test_batch.bin
  convert_data.py folder DIR N_PER_CLASS               daisy/ roses/ tulips/ with JPEG and PNG files
  convert_data.py tsv FILE N                           base64(image)<TAB>label lines
  convert_data.py jpeg FILE W H                        one JPEG
Exit status 77 when PIL is needed and missing (the caller skips).
"""
import base64
import gzip
import io
import os
import random
import struct
import sys


def idx(dims, data):
    return struct.pack(">BBBB", 0, 0, 8, len(dims)) + b"".join(struct.pack(">I", d) for d in dims) + data


def mnist(out, n_train, n_test, gz):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(1)
    for stem, n in (("train", n_train), ("t10k", n_test)):
        images = bytes(rng.getrandbits(8) for _ in range(n * 28 * 28))
        labels = bytes(i % 10 for i in range(n))
        for kind, blob in (("images-idx3-ubyte", idx([n, 28, 28], images)), ("labels-idx1-ubyte", idx([n], labels))):
            path = os.path.join(out, f"{stem}-{kind}")
            if gz:
                with gzip.open(path + ".gz", "wb") as f:
                    f.write(blob)
            else:
                with open(path, "wb") as f:
                    f.write(blob)


def cifar10(out, per_file):
    os.makedirs(out, exist_ok=True)
    rng = random.Random(2)
    k = 0
    for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
        with open(os.path.join(out, name), "wb") as f:
            for _ in range(per_file):
                f.write(bytes([k % 10]) + bytes(rng.getrandbits(8) for _ in range(3072)))
                k += 1
    with open(os.path.join(out, "batches.meta.txt"), "w") as f:
        f.write("\n".join(["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]) + "\n\n")


def pil():
    try:
        from PIL import Image  # noqa: F401
    except ImportError:
        sys.exit(77)
    from PIL import Image
    return Image


def picture(w, h, seed, mode="RGB"):
    Image = pil()
    rng = random.Random(seed)
    img = Image.new(mode, (w, h))
    base = rng.randrange(128)
    px = img.load()
    for y in range(h):
        for x in range(w):
            v = [(base + (x * 3 + y * 2 + c * 40) % 100 + rng.randrange(8)) for c in range(3)]
            px[x, y] = tuple(v) if mode == "RGB" else v[0]
    return img


def encoded(img, fmt, **kw):
    b = io.BytesIO()
    img.save(b, format=fmt, **kw)
    return b.getvalue()


def folder(out, n):
    for ci, cls in enumerate(["daisy", "roses", "tulips"]):
        d = os.path.join(out, cls)
        os.makedirs(d, exist_ok=True)
        for i in range(n):
            seed = ci * 1000 + i
            if i % 3 == 0:
                data, name = encoded(picture(30 + i, 24, seed, "L"), "PNG"), f"{cls}_{i}.png"
            else:
                data, name = encoded(picture(40 + i, 32, seed), "JPEG", quality=85), f"{cls}_{i}.jpg"
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    with open(os.path.join(out, "LICENSE.txt"), "w") as f:
        f.write("not a class folder\n")


def tsv(path, n):
    with open(path, "w") as f:
        for i in range(n):
            data = encoded(picture(20 + i % 7, 16, i), "JPEG" if i % 2 else "PNG")
            f.write(base64.b64encode(data).decode() + "\t" + str(i % 4) + "\n")


def main():
    cmd = sys.argv[1]
    if cmd == "mnist":
        mnist(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), "--gz" in sys.argv)
    elif cmd == "cifar10":
        cifar10(sys.argv[2], int(sys.argv[3]))
    elif cmd == "folder":
        folder(sys.argv[2], int(sys.argv[3]))
    elif cmd == "tsv":
        tsv(sys.argv[2], int(sys.argv[3]))
    elif cmd == "jpeg":
        with open(sys.argv[2], "wb") as f:
            f.write(encoded(picture(int(sys.argv[3]), int(sys.argv[4]), 5), "JPEG", quality=90))
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
