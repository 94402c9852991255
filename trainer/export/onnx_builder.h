// OnnxBuilder: appends nodes, initializers and attributes to an onnx::GraphProto (the schema from
// libonnx-dev, trainer/export/onnx_schema.cmake), so the op mapping (op_mapping.h) reads as a table.
//
// Element type: every float tensor the builder creates (initializers, scalar constants) is stored as
// the builder's `elem` type: FLOAT (f32) or FLOAT16 (f16, rounded to nearest even by core/half.h).
// Integer tensors (Pad's pads) are INT64. Data goes into raw_data, little-endian, as ONNX wants.
// Names: every tensor name handed out is unique in the graph; fresh() makes "<base>", else "<base>_1"...
// (the checker requires single assignment). Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "onnx/onnx.pb.h"

namespace fastnn::onnx_export {

class OnnxBuilder {
 public:
  // elem: onnx::TensorProto::FLOAT or FLOAT16.
  OnnxBuilder(onnx::GraphProto* graph, int32_t elem);

  int32_t elem() const { return elem_; }
  onnx::GraphProto& graph() { return *graph_; }

  // A name not used yet (and now taken).
  std::string fresh(const std::string& base);
  // Takes `name` as it is; Error if it is taken already.
  void reserve(const std::string& name);

  // A float initializer of `shape` from f32 values (converted to elem()); returns its name.
  std::string initializer(const std::string& name, const std::vector<int64_t>& shape, std::span<const float> values);
  // A rank-0 float initializer (elem()) holding v.
  std::string scalar(const std::string& name, float v);
  // An INT64 initializer of shape [values.size()].
  std::string int64s(const std::string& name, const std::vector<int64_t>& values);

  // Appends a node; its name is made unique ("<name>", "<name>_1"...) among node names.
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name);

  static void attr(onnx::NodeProto& n, const std::string& key, int64_t v);
  static void attr(onnx::NodeProto& n, const std::string& key, float v);
  static void attr(onnx::NodeProto& n, const std::string& key, const std::vector<int64_t>& v);

  // Bytes of initializer data added so far (decides external data, onnx_file.h).
  uint64_t initializer_bytes() const { return init_bytes_; }

 private:
  onnx::GraphProto* graph_;
  int32_t elem_;
  std::unordered_set<std::string> names_, node_names_;
  uint64_t init_bytes_ = 0;
};

// A ValueInfo for a tensor of `elem` type whose first dim is the symbolic "batch" and the rest `dims`.
void set_batched_type(onnx::ValueInfoProto* info, const std::string& name, int32_t elem,
                      const std::vector<int64_t>& dims);

}  // namespace fastnn::onnx_export
