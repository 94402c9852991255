#!/usr/bin/env python3
"""resnet_v1_5_50 is torchvision's resnet50: the same weights give the same logits.

Usage: test_resnet_v1_5_torchvision.py SOURCE_DIR BUILD_DIR
(exit 77 = skipped: PyTorch, torchvision or onnx missing, as in CI; run it with a virtual environment
that has them: venv/bin/python tests/python/test_resnet_v1_5_torchvision.py . build)

`fastnn export --model_name resnet_v1_5_50 --test_data` writes the freshly initialised model as ONNX with
two random 64x64 images and fastnn's logits for them. The ONNX file's weights (fastnn's TF-slim names)
are copied into torchvision.models.resnet50 by name, and torchvision's logits must equal fastnn's to
float32 rounding. The batch norms hold fastnn's initial values (gamma 1, beta 0, mean 0, variance 1),
so this checks the network's shape: convolutions, strides, paddings, the max pool, the shortcuts and
the classifier. The same copy from resnet_v1_50 (TF-slim's v1: the same variables, the stride in the
last unit, TF's SAME max pool) must NOT match: the check can tell the two apart.
"""
import os
import subprocess
import sys
import tempfile


def main():
    src, build = sys.argv[1], sys.argv[2]
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
        import torch
        import torchvision
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    fastnn = os.path.join(build, "bin", "fastnn")
    if not os.access(fastnn, os.X_OK):
        print(f"skipped: {fastnn} not built")
        return 77

    def fastnn_model(model, work):
        onnx_path = os.path.join(work, model + ".onnx")
        subprocess.run([fastnn, "export", "--model_name", model, "--image_size", "64", "--seed", "7", "-o", onnx_path,
                        "--test_data", os.path.join(work, model), "--test_samples", "2", "-q"], check=True)
        weights = {i.name: numpy_helper.to_array(i) for i in onnx.load(onnx_path).graph.initializer}
        case = os.path.join(work, model, "test_data_set_0")
        read = lambda f: numpy_helper.to_array(onnx.load_tensor(os.path.join(case, f)))
        return weights, read("input_0.pb"), read("output_0.pb")

    def torchvision_logits(weights, prefix, images):
        net = torchvision.models.resnet50(weights=None, num_classes=1000).eval()
        state = {}
        def conv_bn(tv_conv, tv_bn, slim):
            state[tv_conv + ".weight"] = weights[slim + "/weights"]
            for tv, sl in (("weight", "gamma"), ("bias", "beta"), ("running_mean", "moving_mean"),
                           ("running_var", "moving_variance")):
                state[f"{tv_bn}.{tv}"] = weights[f"{slim}/BatchNorm/{sl}"]
        conv_bn("conv1", "bn1", prefix + "/conv1")
        for b, units in enumerate([3, 4, 6, 3]):
            for u in range(units):
                slim = f"{prefix}/block{b + 1}/unit_{u + 1}/bottleneck_v1"
                tv = f"layer{b + 1}.{u}"
                for k in (1, 2, 3):
                    conv_bn(f"{tv}.conv{k}", f"{tv}.bn{k}", f"{slim}/conv{k}")
                if u == 0:
                    conv_bn(f"{tv}.downsample.0", f"{tv}.downsample.1", f"{slim}/shortcut")
        fc = weights[prefix + "/logits/weights"]
        state["fc.weight"] = fc if fc.shape == (1000, 2048) else fc.T
        state["fc.bias"] = weights[prefix + "/logits/biases"]
        own = net.state_dict()
        missing = [k for k in own if k not in state and not k.endswith("num_batches_tracked")]
        if missing:
            raise SystemExit(f"FAIL: no fastnn weight for torchvision's {missing[:5]}")
        net.load_state_dict({k: torch.from_numpy(np.array(v, copy=True)) for k, v in state.items()}, strict=False)
        with torch.no_grad():
            return net(torch.from_numpy(images)).numpy()

    with tempfile.TemporaryDirectory() as work:
        weights, images, logits = fastnn_model("resnet_v1_5_50", work)
        theirs = torchvision_logits(weights, "resnet_v1_5_50", images)
        scale = float(np.abs(logits).max())
        err = float(np.abs(theirs - logits).max())
        print(f"resnet_v1_5_50 against torchvision resnet50: max |diff| {err:.3g}, logits up to {scale:.3g}")
        if not err <= 1e-4 * max(scale, 1.0):
            print("FAIL: torchvision's resnet50 gives other logits with fastnn's weights")
            return 1
        v1_weights, v1_images, v1_logits = fastnn_model("resnet_v1_50", work)
        v1_err = float(np.abs(torchvision_logits(v1_weights, "resnet_v1_50", v1_images) - v1_logits).max())
        print(f"resnet_v1_50 (TF-slim v1) against torchvision resnet50: max |diff| {v1_err:.3g}")
        if v1_err <= 100 * err or v1_err <= 1e-3 * max(scale, 1.0):
            print("FAIL: v1 matched torchvision as well: the check cannot tell the layouts apart")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
