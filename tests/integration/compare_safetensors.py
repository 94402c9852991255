"""Compares the F32 arrays of two safetensors files (used by tests/integration/mpi_train_*.sh).

  compare_safetensors.py A B --atol X --rtol Y          exit 0 when every element of every array agrees:
                                                        |a - b| <= atol + rtol * |b|; exit 1 otherwise
  compare_safetensors.py A B --atol X --rtol Y --differ exit 0 when some element does NOT agree (the
                                                        control: the comparison can fail)
Both files must hold the same array names, dtypes and shapes. Prints the largest absolute difference
and the array it is in. Reads the format itself (8-byte little-endian header length, JSON header,
data); numpy when available, else the array module.
"""
import argparse
import array
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = (t["dtype"], tuple(t["shape"]), data[base + b : base + e])
    return out


def values(raw):
    try:
        import numpy as np

        return np.frombuffer(raw, dtype="<f4").astype(np.float64)
    except ImportError:
        a = array.array("f")
        a.frombytes(raw)
        if sys.byteorder != "little":
            a.byteswap()
        return a


def max_violation(a, b, atol, rtol):
    """(largest |a-b|, largest |a-b| - (atol + rtol|b|)) over the elements."""
    try:
        import numpy as np

        d = np.abs(a - b)
        return (float(d.max()) if d.size else 0.0), (float((d - (atol + rtol * np.abs(b))).max()) if d.size else -1.0)
    except ImportError:
        worst_d, worst_v = 0.0, -1.0
        for x, y in zip(a, b):
            d = abs(x - y)
            worst_d = max(worst_d, d)
            worst_v = max(worst_v, d - (atol + rtol * abs(y)))
        return worst_d, worst_v


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--atol", type=float, required=True)
    p.add_argument("--rtol", type=float, required=True)
    p.add_argument("--differ", action="store_true")
    args = p.parse_args()
    A, B = read(args.a), read(args.b)
    if sorted(A) != sorted(B):
        print("array names differ:", sorted(set(A) ^ set(B)))
        return 1
    worst = (0.0, "")
    agree = True
    for name in sorted(A):
        (ta, sa, ra), (tb, sb, rb) = A[name], B[name]
        if (ta, sa) != (tb, sb):
            print(f"{name}: {ta}{list(sa)} vs {tb}{list(sb)}")
            return 1
        if ta != "F32":
            agree = agree and ra == rb
            continue
        d, v = max_violation(values(ra), values(rb), args.atol, args.rtol)
        if d > worst[0]:
            worst = (d, name)
        agree = agree and v <= 0
    print(f"{len(A)} arrays, max |a-b| = {worst[0]:.3g} (in {worst[1] or '-'}), atol {args.atol} rtol {args.rtol}: "
          f"{'agree' if agree else 'differ'}")
    return 0 if agree != args.differ else 1


if __name__ == "__main__":
    sys.exit(main())
