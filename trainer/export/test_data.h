// Reference inputs and outputs for an exported model, in ONNX's test-data layout (what ONNX's backend
// tests and onnxruntime's onnx_test_runner read):
//   <dir>/test_data_set_0/input_0.pb   TensorProto "images" float32 [n, C, H, W]
//   <dir>/test_data_set_0/output_0.pb  TensorProto "logits" float32 [n, classes]
//   <dir>/test_data_set_0/output_1.pb  TensorProto "embedding" float32 [n, emb_dim] (embedding models only)
// The inputs are random 8-bit pixels (a pure function of `seed`) normalised with the model's mean and
// scale, i.e. what the preprocessing could feed; the logits are fastnn's CPU graph in evaluation mode
// (the oracle `fastnn predict` and `fastnn eval` run on the CPU) on exactly those inputs.
// Errors: IoError naming the path.
#pragma once

#include <cstdint>
#include <string>

#include "trainer/export/model_source.h"

namespace fastnn::onnx_export {

void write_test_data(const ModelSource& source, const std::string& dir, int64_t samples, uint64_t seed);

}  // namespace fastnn::onnx_export
