#!/usr/bin/env python3
"""fashion_pngs.py IDX_IMAGES_GZ OUT_DIR N: the first N images of a (Fashion-)MNIST IDX file as 8-bit
grayscale PNGs OUT_DIR/00000.png ..., with nothing but the standard library."""
import gzip
import os
import struct
import sys
import zlib


def png_gray(w, h, pixels):
    raw = b"".join(b"\x00" + pixels[r * w:(r + 1) * w] for r in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = gzip.open(src).read()
magic, count, rows, cols = struct.unpack(">IIII", data[:16])
assert magic == 2051 and n <= count, (magic, count)
os.makedirs(out, exist_ok=True)
size = rows * cols
for i in range(n):
    with open(os.path.join(out, "%05d.png" % i), "wb") as f:
        f.write(png_gray(cols, rows, data[16 + i * size:16 + (i + 1) * size]))
