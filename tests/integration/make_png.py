#!/usr/bin/env python3
"""Writes tiny valid PNGs with nothing but the standard library (no PIL): make_png.py OUT.png [W H]."""
import os
import struct
import sys
import zlib


def png_bytes(w=4, h=4):
    raw = b"".join(b"\x00" + b"\x10\x20\x30" * w for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


if __name__ == "__main__":
    w, h = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (4, 4)
    with open(os.fsencode(sys.argv[1]), "wb") as f:
        f.write(png_bytes(w, h))
