// A NetPlan (graph/net_plan.h) and its variable values as an ONNX ModelProto: IR version 8, opset 17
// (default domain only), producer "fastnn".
//
//   input   "images"  float32 [batch, C, H, W] (NCHW, "batch" symbolic), already normalised as the net
//                     reads "data" (the preprocessing is described in metadata, model_source.h)
//   output  "logits"  float32 [batch, classes] (no softmax)
//   output  "embedding" float32 [batch, emb_dim], only for an embedding model (ModelOptions::head): the
//                     net's output; the logits are then the classifier head's over its class rows, as
//                     predict computes them (inference/head_logits.h): x . row for a plain head,
//                     s * clip(x/|x| . row/|row|, -1, 1) for a margin head (ArcFace, CosFace...)
// Only the layers the logits depend on are exported (an auxiliary head is training-only). Layers
// become nodes by op_mapping.h, named after the layer; params and state become initializers under
// their TF-slim names ("conv1/weights", "conv1/BatchNorm/moving_mean"); a fixed constant (BN gamma or
// beta switched off) is exported with its value (ones / zeros).
// float16: every initializer and every activation is float16; the graph casts "images" to float16 on
// entry and the logits back to float32, so callers feed and read float32 either way.
// Errors: ConfigError for an op with no mapping; Error when `values` returns the wrong element count.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnx/onnx.pb.h"
#include "trainer/graph/net_plan.h"

namespace fastnn::onnx_export {

inline constexpr int64_t kOnnxIrVersion = 8;
inline constexpr int64_t kOnnxOpset = 17;

// An embedding model's classifier head, as exported: `rows` [classes, emb_dim] already divided by their
// lengths when `normalized` (HeadLogits::effective_rows).
struct ExportedHead {
  std::vector<float> rows;
  int64_t classes = 0, emb_dim = 0;
  bool normalized = false;
  float scale = 1;
};

struct ModelOptions {
  bool float16 = false;
  std::optional<ExportedHead> head;
  std::string producer_version;  // "0.1.0"
  std::string doc;               // ModelProto.doc_string
  std::vector<std::pair<std::string, std::string>> metadata;  // metadata_props, in order
};

// The f32 values of a trainable param or a state tensor, row-major in its spec's shape.
using ValueSource = std::function<std::vector<float>(const graph::PlannedTensor& tensor)>;

onnx::ModelProto build_onnx_model(const graph::NetPlan& plan, const ValueSource& values, const ModelOptions& options);

}  // namespace fastnn::onnx_export
