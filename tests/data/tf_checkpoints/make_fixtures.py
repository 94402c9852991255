#!/usr/bin/env python3
"""Writes the TensorFlow checkpoint fixtures of tests/unit/core/tf_checkpoint_test.cpp with TensorFlow.

    python make_fixtures.py OUT_DIR     (the committed ones: tests/data/tf_checkpoints)

Needs TensorFlow (tensorflow-cpu 2.x, in a virtual environment; docs/CHECKPOINTS.md). The same
variables, with the values below (the test recomputes them), are saved four ways from one session:
  v2/model.ckpt                V2 (Saver write_version V2): model.ckpt.index + one data file
  v1/model.ckpt                V1 (write_version V1): one SavedTensorSlices table
  v2_sharded/model.ckpt        V2 from Saver(sharded=True) over two CPU devices: two data files
  v1_sharded/model.ckpt-?????-of-00002   V1 sharded the same way: two tables
Each folder also holds TensorFlow's `checkpoint` file (paths relative to the folder).
Variables (values row-major, i = 0, 1, ...):
  LeNet/conv1/weights                      float [5, 5, 1, 4]  (i - 50) / 8
  LeNet/conv1/weights/Momentum             float [5, 5, 1, 4]  i / 4
  LeNet/conv1/weights/ExponentialMovingAverage  float [5, 5, 1, 4]  (i - 50) / 16
  part/weights (fixed_size_partitioner(3)) float [10, 3]       i * 1.5, in slices of rows 0-3, 4-6, 7-9
  misc/half                                half [2, 3]         0.5, -1, 2, 3.25, 65504, -0.125
  misc/counts                              int32 [4]           -2, 0, 7, 2147483647
  misc/label                               string [2]          "fastnn", "tf"
  global_step                              int64 []            2^40 + 5
  misc/bf16 (V2 only: V1 cannot hold it)   bfloat16 [3]        1.5, -2, 0.0078125
On the second device (the sharded saves' second data file): part/weights and misc/counts.
"""
import os
import sys

import numpy as np
import tensorflow as tf


def build():
    v1 = tf.compat.v1
    values = {}

    def var(name, value, dtype, device="/cpu:0", partitioner=None):
        with tf.device(device):
            if partitioner is None:
                v = v1.get_variable(name, initializer=tf.constant(value, dtype=dtype), use_resource=False)
            else:
                v = v1.get_variable(name, shape=value.shape, dtype=dtype, initializer=v1.zeros_initializer(),
                                    partitioner=partitioner, use_resource=False)
        values[name] = (v, value)
        return v

    i100 = np.arange(100, dtype=np.float32).reshape(5, 5, 1, 4)
    var("LeNet/conv1/weights", (i100 - 50) / 8, tf.float32)
    var("LeNet/conv1/weights/Momentum", i100 / 4, tf.float32)
    var("LeNet/conv1/weights/ExponentialMovingAverage", (i100 - 50) / 16, tf.float32)
    part = var("part/weights", np.arange(30, dtype=np.float32).reshape(10, 3) * 1.5, tf.float32, "/cpu:1",
               v1.fixed_size_partitioner(3))
    var("misc/half", np.array([[0.5, -1, 2], [3.25, 65504, -0.125]], dtype=np.float16), tf.float16)
    var("misc/counts", np.array([-2, 0, 7, 2147483647], dtype=np.int32), tf.int32, "/cpu:1")
    var("misc/label", np.array([b"fastnn", b"tf"]), tf.string)
    var("global_step", np.int64(2**40 + 5), tf.int64)
    bf16 = var("misc/bf16", np.array([1.5, -2, 0.0078125], dtype=np.float32), tf.bfloat16)
    return values, part, bf16


def main(out):
    tf.compat.v1.disable_eager_execution()
    with tf.Graph().as_default():
        values, part, bf16 = build()
        config = tf.compat.v1.ConfigProto(device_count={"CPU": 2})
        with tf.compat.v1.Session(config=config) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            rows = values["part/weights"][1]
            for p in part:  # each partition gets its rows of the full value
                begin = p._save_slice_info.var_offset[0]
                sess.run(p.assign(rows[begin:begin + p.shape[0]]))
            everything = tf.compat.v1.global_variables()
            no_bf16 = [v for v in everything if v is not bf16]
            V1, V2 = tf.compat.v1.train.SaverDef.V1, tf.compat.v1.train.SaverDef.V2
            for folder, var_list, version, sharded in [("v2", everything, V2, False), ("v1", no_bf16, V1, False),
                                                       ("v2_sharded", everything, V2, True),
                                                       ("v1_sharded", no_bf16, V1, True)]:
                d = os.path.join(out, folder)
                os.makedirs(d, exist_ok=True)
                saver = tf.compat.v1.train.Saver(var_list, write_version=version, sharded=sharded)
                cwd = os.getcwd()
                os.chdir(d)  # the `checkpoint` file then names the prefix relative to the folder
                try:
                    saver.save(sess, "model.ckpt", write_meta_graph=False)
                finally:
                    os.chdir(cwd)
    for folder in sorted(os.listdir(out)):
        if os.path.isdir(os.path.join(out, folder)):
            print(folder, sorted(os.listdir(os.path.join(out, folder))))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
