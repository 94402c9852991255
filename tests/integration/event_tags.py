#!/usr/bin/env python3
"""Reads a TensorBoard event file (TFRecord framing of tensorflow.Event protos) without TensorFlow and
prints one JSON object: {tag: [[step, value], ...]} of its scalar summaries. Only the fields fastnn
writes are decoded (Event.step = 2, Event.summary = 5; Summary.value = 1; Value.tag = 1,
Value.simple_value = 2); anything else is skipped by wire type."""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pb_fields import fields  # noqa: E402


def records(path):
    data = open(path, "rb").read()
    i = 0
    while i < len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        yield data[i + 12:i + 12 + n]
        i += 12 + n + 4


out = {}
for rec in records(sys.argv[1]):
    step, values = 0, []
    for num, wire, v in fields(rec):
        if num == 2 and wire == 0:
            step = v
        elif num == 5 and wire == 2:
            for vn, vw, val in fields(v):
                if vn != 1 or vw != 2:
                    continue
                tag, simple = None, None
                for fn, fw, fv in fields(val):
                    if fn == 1 and fw == 2:
                        tag = fv.decode()
                    elif fn == 2 and fw == 5:
                        simple = struct.unpack("<f", fv)[0]
                if tag is not None and simple is not None:
                    values.append((tag, simple))
    for tag, simple in values:
        out.setdefault(tag, []).append([step, simple])
print(json.dumps(out))
