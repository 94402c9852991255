// `fastnn export --format tf-checkpoint`: a model as a TensorFlow V2 checkpoint that TF-slim's network
// of the same name restores (tf.compat.v1.train.Saver over its variables, or
// slim.assign_from_checkpoint_fn), for going back to TensorFlow after training in fastnn.
//
// The model is a checkpoint's (its job config names the zoo model, classes and input size, as for
// ONNX: export/model_source.h) or a zoo model freshly initialised. Every variable of the net as
// training builds it (the auxiliary head included) is written under its TF-slim name in TensorFlow's
// layout (checkpoint/tf_layout.h: HWIO convolutions, [in, out] fully connected weights), float32, plus
// `global_step` (int64, the checkpoint's step). Variables a checkpoint lacks are an error naming them.
// A model-parallel classifier head (rows in shard files) is not exported (ConfigError).
#pragma once

#include <cstdint>
#include <string>

#include "trainer/export/model_source.h"

namespace fastnn::tf_export {

struct TfExportReport {
  std::string prefix;      // P: P.index and P.data-00000-of-00001 were written
  std::string model_name;
  std::string source;      // the checkpoint prefix, or "initialised (seed N)"
  int64_t step = 0;
  int num_classes = 0, image_size = 0;
  size_t tensors = 0;      // global_step included
  uint64_t bytes = 0;      // both files
};

TfExportReport export_tf_checkpoint(const onnx_export::SourceOptions& source, const std::string& prefix);

}  // namespace fastnn::tf_export
