#!/usr/bin/env python3
"""fastnn against TensorFlow itself on TF-slim's networks: checkpoints in, and back out.

    test_tf_checkpoint_crosscheck.py SOURCE_DIR BUILD_DIR        (ctest py_test_tf_checkpoint_crosscheck)

Needs TensorFlow with TF-slim, which the suite does not: it runs under the Python of a virtual
environment named by FASTNN_TF_VENV (docs/CHECKPOINTS.md, "Cross-checking with TensorFlow", says how to
make one) and exits 77 (skipped) without one. FASTNN_TF_NETS picks nets (comma-separated; default all
five), FASTNN_TF_KEEP=DIR keeps the files it writes there.

For each of inception_v3, inception_v1, resnet_v1_50, resnet_v2_50 and vgg_16, TensorFlow builds TF-slim's
network with its random initial weights, random batch-norm beta/gamma and biases, and moving statistics
set to the batch statistics of the photographs (one training-mode pass with decay 0, so they are neither
0/1 nor arbitrary), preprocesses the two photographs of /var/cache/fastnn/sample-images with TF-slim's
evaluation preprocessing (inception: central crop 87.5 %, bilinear resize, [-1, 1]; vgg: shorter side to
256, central crop, mean subtraction), computes eval-mode logits and saves the variables as V1 and as V2.
inception_v1 also holds Momentum slots, global_step and moving averages (set to half the variables),
as training checkpoints do. Then:
  1. fastnn (checkpoint_logits, which reads a start checkpoint as `fastnn train --checkpoint_path` does)
     reads each checkpoint and computes the logits on the same preprocessed images: the largest absolute
     difference must be at most 1e-4 of the range of TensorFlow's logits (inception_v1's moving
     averages too: TensorFlow's logits with the averages swapped in, against fastnn's with
     checkpoint_use_moving_averages);
  2. `fastnn train` fine-tunes one step from the V2 checkpoint on crops of the photographs (classifier
     excluded and the only thing trained), `fastnn export --format tf-checkpoint` writes the result, and
     TensorFlow, restoring it into the TF-slim network with 2 classes, computes the logits fastnn computes
     from its own checkpoint, within the same tolerance.
Prints one line per check and a table last.
"""
import os
import subprocess
import sys
import tempfile

SAMPLES = os.environ.get("FASTNN_SAMPLE_IMAGES", "/var/cache/fastnn/sample-images")
TOLERANCE = 1e-4

# name: (TF-slim module, function, eval arg scope kwargs, image size, classes, preprocessing, classifier scopes)
NETS = {
    "inception_v3": ("inception", "inception_v3", "inception_v3_arg_scope", 299, 1001, "inception",
                     "InceptionV3/Logits,InceptionV3/AuxLogits"),
    "inception_v1": ("inception", "inception_v1", "inception_v1_arg_scope", 224, 1001, "inception",
                     "InceptionV1/Logits"),
    "resnet_v1_50": ("resnet_v1", "resnet_v1_50", "resnet_arg_scope", 224, 1000, "vgg", "resnet_v1_50/logits"),
    "resnet_v2_50": ("resnet_v2", "resnet_v2_50", "resnet_arg_scope", 224, 1001, "inception", "resnet_v2_50/logits"),
    "vgg_16": ("vgg", "vgg_16", "vgg_arg_scope", 224, 1000, "vgg", "vgg_16/fc8"),
}


def reexec_in_venv():
    try:
        import tensorflow  # noqa: F401
        import tf_slim  # noqa: F401
        return
    except ImportError:
        pass
    venv = os.environ.get("FASTNN_TF_VENV", "")
    py = os.path.join(venv, "bin", "python") if venv else ""
    if not py or not os.path.exists(py) or os.environ.get("FASTNN_TF_REEXEC"):
        print("skipped: no TensorFlow (set FASTNN_TF_VENV to a virtual environment with tensorflow-cpu, tf-slim and "
              "tf_keras; docs/CHECKPOINTS.md)")
        sys.exit(77)
    os.environ["FASTNN_TF_REEXEC"] = "1"
    os.execv(py, [py, os.path.abspath(__file__)] + sys.argv[1:])


def import_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    import tensorflow as tf
    try:  # tf-slim's batch norm imports tf_keras.legacy_tf_layers, which tf_keras 2.21 keeps under src/
        import tf_keras.src.legacy_tf_layers as legacy
        sys.modules.setdefault("tf_keras.legacy_tf_layers", legacy)
    except ImportError:
        pass
    import tf_slim
    import tf_slim.nets
    tf.compat.v1.disable_v2_behavior()
    return tf, tf_slim


def preprocess(tf, kind, size):
    """TF-slim's evaluation preprocessing of the two photographs: [2, size, size, 3] float32 (a tensor)."""
    out = []
    for name in ("china.jpg", "flower.jpg"):
        image = tf.image.decode_jpeg(tf.io.read_file(os.path.join(SAMPLES, name)), channels=3)
        if kind == "inception":  # inception_preprocessing.preprocess_for_eval
            image = tf.image.convert_image_dtype(image, tf.float32)
            image = tf.image.central_crop(image, central_fraction=0.875)
            image = tf.compat.v1.image.resize_bilinear(image[None], [size, size], align_corners=False)[0]
            image = (image - 0.5) * 2.0
        else:  # vgg_preprocessing.preprocess_for_eval (resize_side 256)
            shape = tf.shape(image)
            h, w = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
            scale = 256.0 / tf.minimum(h, w)
            nh, nw = tf.cast(tf.math.rint(h * scale), tf.int32), tf.cast(tf.math.rint(w * scale), tf.int32)
            image = tf.compat.v1.image.resize_bilinear(image[None], [nh, nw], align_corners=False)[0]
            top, left = (nh - size) // 2, (nw - size) // 2
            image = tf.slice(image, [top, left, 0], [size, size, 3])
            image = tf.cast(image, tf.float32) - tf.constant([123.68, 116.78, 103.94])
        out.append(image)
    return tf.stack(out)


def build(tf, slim, name, classes, images, training, bn_decay=None):
    module, fn, scope_fn, size, _, _, _ = NETS[name]
    mod = getattr(slim.nets, module)
    kwargs = {}
    if bn_decay is not None and scope_fn != "inception_v1_arg_scope" and scope_fn != "vgg_arg_scope":
        kwargs["batch_norm_decay"] = bn_decay
    with slim.arg_scope(getattr(mod, scope_fn)(**kwargs)):
        if bn_decay is not None and scope_fn == "inception_v1_arg_scope":  # its scope takes no decay
            params = {"decay": bn_decay, "epsilon": 0.001, "updates_collections": tf.compat.v1.GraphKeys.UPDATE_OPS}
            with slim.arg_scope([slim.conv2d], normalizer_params=params):
                logits, _ = getattr(mod, fn)(images, num_classes=classes, is_training=training)
        else:
            logits, _ = getattr(mod, fn)(images, num_classes=classes, is_training=training)
    if len(logits.shape) == 4:  # tf-slim 1.1's ResNets keep the 1x1 map
        logits = tf.squeeze(logits, [1, 2])
    return logits


def make_tf_checkpoints(tf, slim, name, out):
    """Saves V1 and V2 checkpoints of a random network; returns (images NHWC, logits, EMA logits or None)."""
    import numpy as np
    _, _, _, size, classes, pre, _ = NETS[name]
    rng = np.random.RandomState(7)
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(11)
        images = preprocess(tf, pre, size)
        train_logits = build(tf, slim, name, classes, images, True, bn_decay=0.0)
        with tf.compat.v1.variable_scope(tf.compat.v1.get_variable_scope(), reuse=True):
            logits = build(tf, slim, name, classes, images, False)
        model_vars = slim.get_model_variables()
        extras = []
        ema = None
        if name == "inception_v1":  # what a training checkpoint also holds
            step = tf.compat.v1.train.get_or_create_global_step()
            opt = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
            opt.minimize(tf.reduce_sum(train_logits), global_step=step)
            ema = tf.compat.v1.train.ExponentialMovingAverage(0.99)
            ema.apply(tf.compat.v1.trainable_variables())
            extras = [v for v in tf.compat.v1.global_variables() if v not in model_vars]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for v in model_vars:  # beta, gamma and biases start at constants: make them random
                if v.name.split("/")[-1].split(":")[0] in ("beta", "gamma", "biases"):
                    base = 1.0 if "gamma" in v.name else 0.0
                    sess.run(v.assign(base + 0.1 * rng.standard_normal(v.shape.as_list()).astype(np.float32)))
            sess.run(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS))  # moving stats := batch stats
            pixels, tf_logits = sess.run([images, logits])
            ema_logits = None
            if ema is not None:
                for v in tf.compat.v1.trainable_variables():
                    sess.run(ema.average(v).assign(v * 0.5))
                originals = sess.run(tf.compat.v1.trainable_variables())
                for v in tf.compat.v1.trainable_variables():
                    sess.run(v.assign(ema.average(v)))
                ema_logits = sess.run(logits)
                for v, value in zip(tf.compat.v1.trainable_variables(), originals):
                    sess.run(v.assign(value))
            var_list = model_vars + extras
            for version, sub in ((tf.compat.v1.train.SaverDef.V1, "v1"), (tf.compat.v1.train.SaverDef.V2, "v2")):
                os.makedirs(os.path.join(out, sub), exist_ok=True)
                saver = tf.compat.v1.train.Saver(var_list, write_version=version)
                saver.save(sess, os.path.join(out, sub, name + ".ckpt"), write_meta_graph=False)
    return pixels, tf_logits, ema_logits


def tf_logits_from(tf, slim, name, classes, pixels, prefix):
    """TensorFlow's eval logits of the TF-slim network restored from `prefix` (model variables only)."""
    with tf.Graph().as_default():
        images = tf.compat.v1.placeholder(tf.float32, pixels.shape)
        logits = build(tf, slim, name, classes, images, False)
        saver = tf.compat.v1.train.Saver(slim.get_model_variables())
        with tf.compat.v1.Session() as sess:
            saver.restore(sess, prefix)
            return sess.run(logits, {images: pixels})


def fastnn_logits(build_dir, name, classes, size, checkpoint, pixels, work, ema=False):
    import numpy as np
    src = os.path.join(work, "images.f32")
    dst = os.path.join(work, "logits.f32")
    pixels.astype(np.float32).tofile(src)
    cmd = [os.path.join(build_dir, "bin", "checkpoint_logits"), name, str(classes), str(size), checkpoint, src,
           str(pixels.shape[0]), dst] + (["ema"] if ema else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("checkpoint_logits failed: %s\n%s" % (" ".join(cmd), r.stderr))
    return np.fromfile(dst, dtype=np.float32).reshape(pixels.shape[0], classes)


def compare(label, want, got, rows):
    import numpy as np
    span = float(want.max() - want.min())
    diff = float(np.abs(want - got).max())
    ok = diff <= TOLERANCE * span
    rows.append((label, diff, span, diff / span if span else float("inf"), ok))
    print("%-44s max |diff| %.3g, logits' range %.4g: %.2e of it %s" % (label, diff, span, diff / span if span else 0,
                                                                        "ok" if ok else "FAIL"))
    return ok


def crops_dataset(tf, fastnn, work):
    """Crops of the two photographs as a two-class image folder (JPEGs encoded by TensorFlow), converted."""
    folder = os.path.join(work, "photos")
    with tf.Graph().as_default(), tf.compat.v1.Session() as sess:
        for cls in ("china", "flower"):
            os.makedirs(os.path.join(folder, cls), exist_ok=True)
            image = tf.image.decode_jpeg(tf.io.read_file(os.path.join(SAMPLES, cls + ".jpg")), channels=3)
            for i, (x, y) in enumerate([(0, 0), (200, 50), (300, 100), (100, 120)]):
                jpeg = sess.run(tf.image.encode_jpeg(image[y:y + 300, x:x + 320], quality=92))
                with open(os.path.join(folder, cls, "%d.jpg" % i), "wb") as f:
                    f.write(jpeg)
    data = os.path.join(work, "data")
    subprocess.run([fastnn, "convert", "image-folder", "--input", folder, "--output", data, "--num-gpus", "1",
                    "--overwrite", "--quiet"], check=True, capture_output=True)
    return data


def main(src, build_dir):
    reexec_in_venv()
    tf, slim = import_tf()
    fastnn = os.path.join(build_dir, "bin", "fastnn")
    names = [n for n in os.environ.get("FASTNN_TF_NETS", ",".join(NETS)).split(",") if n]
    keep = os.environ.get("FASTNN_TF_KEEP")
    work = keep or tempfile.mkdtemp(prefix="tf_crosscheck_")
    os.makedirs(work, exist_ok=True)
    rows, ok = [], True
    data = crops_dataset(tf, fastnn, work)
    for name in names:
        _, _, _, size, classes, _, scopes = NETS[name]
        out = os.path.join(work, name)
        pixels, want, ema_want = make_tf_checkpoints(tf, slim, name, out)
        for sub in ("v1", "v2"):
            got = fastnn_logits(build_dir, name, classes, size, os.path.join(out, sub, name + ".ckpt"), pixels, out)
            ok &= compare("%s %s checkpoint -> fastnn" % (name, sub.upper()), want, got, rows)
        if ema_want is not None:
            got = fastnn_logits(build_dir, name, classes, size, os.path.join(out, "v2", name + ".ckpt"), pixels, out,
                                ema=True)
            ok &= compare("%s V2 moving averages -> fastnn" % name, ema_want, got, rows)
        # One fine-tuning step in fastnn, exported, restored by TensorFlow.
        run = os.path.join(out, "run")
        r = subprocess.run([fastnn, "train", "--model_name=" + name, "--dataset_dir=" + data, "--output_dir=" + run,
                            "--checkpoint_path=" + os.path.join(out, "v2", name + ".ckpt"),
                            "--checkpoint_exclude_scopes=" + scopes, "--trainable_scopes=" + scopes,
                            "--device=cpu", "--batch_size=2", "--stop_at_step=1", "--optimizer=sgd",
                            "--learning_rate=0.1", "--log_loss_every_n_iters=1"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("fastnn train failed:\n" + r.stderr[-4000:])
        exported = os.path.join(out, "exported", name + ".ckpt")
        subprocess.run([fastnn, "export", "--format", "tf-checkpoint", "--checkpoint", run, "-o", exported],
                       check=True, capture_output=True)
        got = fastnn_logits(build_dir, name, 2, size, run, pixels, out)
        want2 = tf_logits_from(tf, slim, name, 2, pixels, exported)
        ok &= compare("%s fastnn export -> TensorFlow" % name, want2, got, rows)
    print("\n| check | max abs diff | logits' range | ratio | |")
    print("|---|---|---|---|---|")
    for label, diff, span, ratio, good in rows:
        print("| %s | %.3g | %.4g | %.2e | %s |" % (label, diff, span, ratio, "ok" if good else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
