"""A small ONNX evaluator in numpy for the ops `fastnn export` emits (docs/INFERENCE.md's table), so the
exported graphs can be checked numerically without onnxruntime (python3-onnx 1.12 has no
ReferenceEvaluator). Written from the ONNX operator specification, independently of fastnn's kernels;
computes in float64 by default (a Cast to float16 rounds the values to float16 and goes on in float64).

    import onnx_numpy_eval
    logits = onnx_numpy_eval.run(model, {"images": x})["logits"]
"""
import numpy as np
from onnx import numpy_helper


def _attrs(node):
    import onnx
    out = {}
    for a in node.attribute:
        out[a.name] = onnx.helper.get_attribute_value(a)
    return out


def _pad_nchw(x, pads, value):
    # pads: [top, left, bottom, right]
    t, l, b, r = pads
    return np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=value)


def _out_size(n, k, s, d, p0, p1):
    return (n + p0 + p1 - ((k - 1) * d + 1)) // s + 1


def _windows(x, kh, kw, sh, sw, dh, dw, p, q):
    """Yields (r, s, view) with view[n, c, i, j] = x[n, c, i*sh + r*dh, j*sw + s*dw] (x already padded)."""
    for r in range(kh):
        for s in range(kw):
            y0, x0 = r * dh, s * dw
            yield r, s, x[:, :, y0:y0 + sh * (p - 1) + 1:sh, x0:x0 + sw * (q - 1) + 1:sw]


def conv(x, w, b, a):
    n, c, h, wd = x.shape
    k, cg, kh, kw = w.shape
    g = a.get("group", 1)
    sh, sw = a.get("strides", [1, 1])
    dh, dw = a.get("dilations", [1, 1])
    pads = a.get("pads", [0, 0, 0, 0])
    p = _out_size(h, kh, sh, dh, pads[0], pads[2])
    q = _out_size(wd, kw, sw, dw, pads[1], pads[3])
    xp = _pad_nchw(x, pads, 0.0)
    # im2col as a strided view: cols[n, c, i, j, r, s] = xp[n, c, i*sh + r*dh, j*sw + s*dw].
    win = np.lib.stride_tricks.sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
    cols = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :p, :q]
    if g == 1:
        y = np.tensordot(cols, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)  # one GEMM
    else:
        cols = cols.reshape(n, g, cg, p, q, kh, kw)
        y = np.einsum("ngcpqrs,gkcrs->ngkpq", cols, w.reshape(g, k // g, cg, kh, kw)).reshape(n, k, p, q)
    if b is not None:
        y = y + b.reshape(1, k, 1, 1)
    return y


def pool(x, a, kind):
    n, c, h, wd = x.shape
    kh, kw = a["kernel_shape"]
    sh, sw = a.get("strides", [1, 1])
    pads = a.get("pads", [0, 0, 0, 0])
    assert a.get("ceil_mode", 0) == 0 and a.get("auto_pad", b"NOTSET") in (b"NOTSET", "NOTSET")
    p = _out_size(h, kh, sh, 1, pads[0], pads[2])
    q = _out_size(wd, kw, sw, 1, pads[1], pads[3])
    if kind == "max":
        xp = _pad_nchw(x, pads, -np.inf)
        y = np.full((n, c, p, q), -np.inf, dtype=x.dtype)  # x's precision (float64 made the next layers float64)
        for _, _, v in _windows(xp, kh, kw, sh, sw, 1, 1, p, q):
            y = np.maximum(y, v)
        return y
    xp = _pad_nchw(x, pads, 0.0)
    ones = _pad_nchw(np.ones((1, 1, h, wd), dtype=x.dtype), pads, 0.0)
    y = np.zeros((n, c, p, q), dtype=x.dtype)
    cnt = np.zeros((1, 1, p, q), dtype=x.dtype)
    for _, _, v in _windows(xp, kh, kw, sh, sw, 1, 1, p, q):
        y += v
    for _, _, v in _windows(ones, kh, kw, sh, sw, 1, 1, p, q):
        cnt += v
    return y / (kh * kw if a.get("count_include_pad", 0) else cnt)


def lrn(x, a):
    size, alpha, beta, bias = a["size"], a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0)
    c = x.shape[1]
    sq = x * x
    s = np.zeros_like(x)
    lo_off, hi_off = (size - 1) // 2, -(-(size - 1) // 2)
    for ch in range(c):
        lo, hi = max(0, ch - lo_off), min(c - 1, ch + hi_off)
        s[:, ch] = sq[:, lo:hi + 1].sum(axis=1)
    return x / (bias + alpha / size * s) ** beta


def _f16(x):
    return np.asarray(x, dtype=np.float16).astype(np.float64)


def run(model, feeds, dtype=np.float64):
    """Evaluates model.graph on feeds (name -> array); returns the graph outputs by name. Floats are
    computed in `dtype` (float32 halves the time of a large batch)."""
    env = {}
    for t in model.graph.initializer:
        env[t.name] = numpy_helper.to_array(t).astype(dtype) if t.data_type in (1, 10) else numpy_helper.to_array(t)
    for k, v in feeds.items():
        env[k] = np.asarray(v, dtype=dtype)
    for node in model.graph.node:
        a = _attrs(node)
        ins = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Conv":
            y = conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a)
        elif op == "MaxPool":
            y = pool(ins[0], a, "max")
        elif op == "AveragePool":
            y = pool(ins[0], a, "avg")
        elif op == "GlobalAveragePool":
            y = ins[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            ax = a.get("axis", 1)
            y = ins[0].reshape(int(np.prod(ins[0].shape[:ax])), -1)
        elif op == "Gemm":
            A = ins[0].T if a.get("transA", 0) else ins[0]
            B = ins[1].T if a.get("transB", 0) else ins[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2 and ins[2] is not None:
                y = y + a.get("beta", 1.0) * ins[2]
        elif op == "Relu":
            y = np.maximum(ins[0], 0)
        elif op == "Clip":
            y = np.clip(ins[0], ins[1], ins[2])
        elif op == "HardSwish":  # x * max(0, min(1, x / 6 + 1 / 2)), opset 14
            x = ins[0]
            y = x * np.clip(x / x.dtype.type(6) + x.dtype.type(0.5), 0, 1)
        elif op == "Tanh":
            y = np.tanh(ins[0])
        elif op == "Mul":
            y = ins[0] * ins[1]
        elif op == "Div":
            y = ins[0] / ins[1]
        elif op == "Max":
            y = ins[0]
            for t in ins[1:]:
                y = np.maximum(y, t)
        elif op == "ReduceL2":  # opset 17: axes is an attribute
            axes = tuple(a.get("axes", range(ins[0].ndim)))
            y = np.sqrt((ins[0] * ins[0]).sum(axis=axes, keepdims=bool(a.get("keepdims", 1))))
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Sum":
            y = ins[0]
            for t in ins[1:]:
                y = y + t
        elif op == "Concat":
            y = np.concatenate(ins, axis=a["axis"])
        elif op == "Pad":
            assert a.get("mode", b"constant") in (b"constant", "constant")
            pads = [int(v) for v in ins[1]]
            r = len(pads) // 2
            value = ins[2] if len(ins) > 2 and ins[2] is not None else 0.0
            # ONNX: a negative pad removes elements (fastnn's spatial_shift crops the top-left this way).
            y = np.pad(ins[0], [(max(pads[i], 0), max(pads[i + r], 0)) for i in range(r)], constant_values=value)
            y = y[tuple(slice(max(-pads[i], 0), y.shape[i] - max(-pads[i + r], 0)) for i in range(r))]
        elif op == "LRN":
            y = lrn(ins[0], a)
        elif op == "BatchNormalization":
            x, g, b, m, v = ins
            sh = (1, -1) + (1,) * (x.ndim - 2)
            y = (x - m.reshape(sh)) / np.sqrt(v.reshape(sh) + a.get("epsilon", 1e-5)) * g.reshape(sh) + b.reshape(sh)
        elif op == "Cast":
            y = _f16(ins[0]).astype(dtype) if a["to"] == 10 else ins[0]
        elif op == "Identity":
            y = ins[0]
        else:
            raise NotImplementedError(f"onnx_numpy_eval: op {op} (node {node.name})")
        env[node.output[0]] = y
    return {o.name: env[o.name] for o in model.graph.output}
