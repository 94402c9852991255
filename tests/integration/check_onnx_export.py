"""Checks of `fastnn export --format onnx` output for tests/integration/export_onnx.sh.

  check_onnx_export.py model MODEL.onnx [--test_data DIR] [--rtol 1e-4] [--name NAME]
      onnx.checker.check_model(path, full_check=True) (strict shape and type inference), IR 8 / opset 17,
      input "images" [batch, C, H, W] with a symbolic batch, output "logits" [batch, classes], the
      metadata keys; with --test_data: the numpy evaluator's logits (onnx_numpy_eval.py) on the
      reference inputs within rtol * max|logit| of fastnn's (and onnxruntime's, where importable).
  check_onnx_export.py fashion MODEL.onnx PREDICT.jsonl IDX_DIR [--max_top1_diff 0]
      top-1 of the model (numpy evaluator in float32; and onnxruntime where importable) on the raw Fashion-MNIST
      test set, preprocessed from the model's own metadata (mean, scale), against `fastnn predict`'s
      top-1 on the converted shards of the same images.
Exit status 1 with a message on the first failed check.
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_numpy_eval  # noqa: E402

REQUIRED_KEYS = ["fastnn.model_name", "fastnn.num_classes", "fastnn.input_layout", "fastnn.input_height",
                 "fastnn.input_width", "fastnn.input_channels", "fastnn.input_mean", "fastnn.input_scale",
                 "fastnn.preprocessing", "fastnn.resize", "fastnn.weights"]


def ort_session(path):
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])


def metadata(model):
    return {p.key: p.value for p in model.metadata_props}


def dims(value_info):
    return [d.dim_param if d.dim_param else d.dim_value for d in value_info.type.tensor_type.shape.dim]


def check_model(args):
    onnx.checker.check_model(args.model, full_check=True)
    m = onnx.load(args.model)
    assert m.ir_version == 8, m.ir_version
    assert [(o.domain, o.version) for o in m.opset_import] == [("", 17)], m.opset_import
    md = metadata(m)
    missing = [k for k in REQUIRED_KEYS if k not in md]
    assert not missing, f"metadata lacks {missing}"
    c, h, w = int(md["fastnn.input_channels"]), int(md["fastnn.input_height"]), int(md["fastnn.input_width"])
    classes = int(md["fastnn.num_classes"])
    assert [i.name for i in m.graph.input] == ["images"], m.graph.input
    # An embedding model (fastnn.head) also outputs its embedding, after the logits.
    head = "fastnn.head" in md
    assert [o.name for o in m.graph.output] == (["logits", "embedding"] if head else ["logits"]), m.graph.output
    assert dims(m.graph.input[0]) == ["batch", c, h, w], dims(m.graph.input[0])
    assert dims(m.graph.output[0]) == ["batch", classes], dims(m.graph.output[0])
    assert m.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert len(md["fastnn.input_mean"].split(",")) == c and len(md["fastnn.input_scale"].split(",")) == c
    f16 = md["fastnn.weights"] == "float16"
    want_type = onnx.TensorProto.FLOAT16 if f16 else onnx.TensorProto.FLOAT
    for t in m.graph.initializer:
        assert t.data_type in (want_type, onnx.TensorProto.INT64), (t.name, t.data_type)
    assert not any(n.op_type == "Dropout" for n in m.graph.node)
    line = f"{args.name}: checker ok, {len(m.graph.node)} nodes"
    if args.test_data:
        d = os.path.join(args.test_data, "test_data_set_0")
        x = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "input_0.pb")))
        want = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "output_0.pb"))).astype(np.float64)
        assert x.shape[1:] == (c, h, w) and want.shape == (x.shape[0], classes), (x.shape, want.shape)
        scale = max(np.abs(want).max(), 1e-30)
        outs = onnx_numpy_eval.run(m, {"images": x})
        got = outs["logits"]
        err = np.abs(got - want).max() / scale
        line += f", numpy evaluator max |diff| / max |logit| = {err:.2e}"
        assert err <= args.rtol, f"{args.name}: numpy logits differ from fastnn's by {err:.3g} (relative) > {args.rtol}"
        if head:
            emb = numpy_helper.to_array(onnx.load_tensor(os.path.join(d, "output_1.pb"))).astype(np.float64)
            e_err = np.abs(outs["embedding"] - emb).max() / max(np.abs(emb).max(), 1e-30)
            line += f", embedding {e_err:.2e}"
            assert e_err <= args.rtol, f"{args.name}: embeddings differ from fastnn's by {e_err:.3g} > {args.rtol}"
        if not f16:
            # A batch of one gives the same logits (the batch dim is free).
            one = onnx_numpy_eval.run(m, {"images": x[-1:]})["logits"]
            assert np.abs(one[0] - got[-1]).max() <= 1e-9 * scale + 1e-12
        sess = ort_session(args.model)
        if sess is not None:
            o = sess.run(["logits"], {"images": x.astype(np.float32)})[0].astype(np.float64)
            err = np.abs(o - want).max() / scale
            line += f", onnxruntime {err:.2e}"
            assert err <= args.rtol, f"{args.name}: onnxruntime logits differ from fastnn's by {err:.3g} > {args.rtol}"
            o1 = sess.run(["logits"], {"images": x[:1].astype(np.float32)})[0]
            assert o1.shape == (1, classes)
    print(line)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    nd = magic & 0xFF
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * nd).reshape(shape)


def check_fashion(args):
    m = onnx.load(args.model)
    md = metadata(m)
    assert md["fastnn.input_layout"] == "NCHW" and md["fastnn.input_channels"] == "1", md
    mean = np.array([float(v) for v in md["fastnn.input_mean"].split(",")])
    scale = np.array([float(v) for v in md["fastnn.input_scale"].split(",")])
    images = read_idx(os.path.join(args.idx_dir, "t10k-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(args.idx_dir, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    h, w = int(md["fastnn.input_height"]), int(md["fastnn.input_width"])
    assert images.shape[1:] == (h, w), (images.shape, h, w)  # 28x28: the lenet preset's crop/pad is the identity
    x = ((images.astype(np.float32)[:, None, :, :] - mean[0]) * scale[0]).astype(np.float32)
    rows = [json.loads(line) for line in open(args.predict)]
    assert len(rows) == len(labels) == 10000, (len(rows), len(labels))
    predict_correct = sum(r["label"] == r["target"] for r in rows)
    pred = np.concatenate([onnx_numpy_eval.run(m, {"images": x[i:i + 250]}, np.float32)["logits"].argmax(1)
                           for i in range(0, len(x), 250)])
    numpy_correct = int((pred == labels).sum())
    line = f"{md['fastnn.model_name']} {md['fastnn.weights']}: fastnn predict top-1 {predict_correct / 1e4:.4f}, " \
           f"ONNX (numpy evaluator) {numpy_correct / 1e4:.4f}"
    diff = abs(numpy_correct - predict_correct)
    assert diff <= args.max_top1_diff, f"{line}: {diff} more or fewer correct"
    sess = ort_session(args.model)
    if sess is not None:
        o = np.concatenate([sess.run(["logits"], {"images": x[i:i + 1000]})[0].argmax(1) for i in range(0, len(x), 1000)])
        ort_correct = int((o == labels).sum())
        line += f", onnxruntime {ort_correct / 1e4:.4f}"
        assert abs(ort_correct - predict_correct) <= args.max_top1_diff, line
    print(line)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("model")
    a.add_argument("model")
    a.add_argument("--test_data")
    a.add_argument("--rtol", type=float, default=1e-4)
    a.add_argument("--name", default="model")
    b = sub.add_parser("fashion")
    b.add_argument("model")
    b.add_argument("predict")
    b.add_argument("idx_dir")
    b.add_argument("--max_top1_diff", type=int, default=0)
    args = p.parse_args()
    try:
        check_model(args) if args.cmd == "model" else check_fashion(args)
    except (AssertionError, onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
