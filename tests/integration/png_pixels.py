#!/usr/bin/env python3
"""Decodes an 8-bit non-interlaced PNG (gray, gray+alpha, RGB, RGBA; what Chromium's screenshots and
fastnn's thumbnails are) with zlib alone: `decode(bytes) -> (width, height, channels, rows)`, rows a list
of bytes objects. `python3 png_pixels.py FILE` prints the size and the pixel standard deviation."""
import struct
import sys
import zlib


def decode(blob):
    assert blob[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, [], None
    while pos < len(blob):
        (n,) = struct.unpack(">I", blob[pos:pos + 4])
        kind = blob[pos + 4:pos + 8]
        body = blob[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + n
    w, h, depth, color, _, _, interlace = ihdr
    assert depth == 8 and interlace == 0, f"unsupported PNG: depth {depth}, interlace {interlace}"
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color]
    raw = zlib.decompress(b"".join(idat))
    stride = w * channels
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]
            c = prev[x - channels] if x >= channels else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, channels, rows


def stddev(rows):
    n = s = ss = 0
    for r in rows:
        n += len(r)
        s += sum(r)
        ss += sum(v * v for v in r)
    m = s / n
    return (ss / n - m * m) ** 0.5


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        w, h, c, rows = decode(f.read())
    print(f"{w}x{h}x{c} stddev {stddev(rows):.2f}")
