// What `fastnn export` exports: the model of a checkpoint, or a zoo model freshly initialised.
//
//   checkpoint  load_checkpoint (a prefix, file, or a run directory's latest) and the predictor's
//               reading of its metadata (inference::describe_checkpoint: zoo model, classes, input
//               size, preprocessing preset, class names), weights from its safetensors file, each array
//               checked against the model's shape (FormatError naming it)
//   model_name  the zoo net at num_classes / image_size (0: the model's defaults), weights initialised
//               from `seed` as `fastnn train` would start: for checking a deployment tool chain, the
//               graph and the preprocessing before a model is trained (and for testing every zoo model
//               at a reduced size)
// The auxiliary head of the Inception nets is training-only and not built (its arrays stay unread).
// An embedding model (a classifier head: emb_dim, margin losses, the model-parallel head) is built as
// predict builds it: the net with emb_dim outputs and the embedding batch norm, plus head() (its class
// rows, a sharded head's re-assembled).
// Exactly one of the two (ConfigError otherwise). The preprocessing is the preset's evaluation variant,
// as predict and eval apply it: its mean / scale (input = (pixel - mean) * scale per channel, pixels
// 0..255) and geometry go into the ONNX metadata (metadata(), keys in docs/INFERENCE.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "schemas/net.pb.h"
#include "trainer/graph/graph.h"
#include "trainer/inference/head_logits.h"
#include "trainer/inference/predictor.h"

namespace fastnn::onnx_export {

struct SourceOptions {
  std::string checkpoint;
  std::string model_name;
  int num_classes = 0, image_size = 0;  // model_name only
  uint64_t seed = 0;                    // model_name only
};

class ModelSource {
 public:
  explicit ModelSource(const SourceOptions& options);
  ~ModelSource();

  // model_name, num_classes, height, width, channels, preset, class_names; checkpoint and step for a
  // checkpoint (checkpoint empty for a zoo model).
  const inference::ModelInfo& info() const;
  const NetDef& net() const;
  float mean(int c) const;   // pixel units
  float scale(int c) const;  // 1 / std
  // A variable's f32 values by full name (FormatError when absent or shaped otherwise).
  std::vector<float> value(const std::string& name, const Shape& shape) const;
  // A CPU f32 graph of the net at `batch` holding these values (for reference outputs).
  graph::Graph make_graph(int64_t batch) const;
  // An embedding model's classifier head; null for a plain classifier.
  const inference::HeadLogits* head() const;
  // The ONNX metadata_props for this model (float16: the weights' type).
  std::vector<std::pair<std::string, std::string>> metadata(bool float16) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::onnx_export
