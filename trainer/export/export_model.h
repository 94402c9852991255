// `fastnn export --format onnx`: a checkpoint's (or zoo) model to an ONNX file, in one call.
//
//   ModelSource (model_source.h) -> NetPlan (unfused, batch 1; the ONNX batch dim is symbolic)
//   -> build_onnx_model (onnx_model.h, op_mapping.h) -> write_onnx_file (onnx_file.h: external data
//   beyond 2 GiB or when asked) [-> write_test_data (test_data.h) when test_data_dir is set].
// Errors: ConfigError (bad request, an op without mapping), FormatError (a damaged or mismatched
// checkpoint), IoError (writing).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "trainer/export/model_source.h"
#include "trainer/export/onnx_file.h"

namespace fastnn::onnx_export {

struct ExportRequest {
  SourceOptions source;
  std::string output;  // model.onnx
  bool float16 = false;
  External external = External::kAuto;
  std::string test_data_dir;  // "": none
  int64_t test_samples = 8;
  uint64_t test_seed = 1;
  std::string producer_version;  // fastnn's version
  bool overwrite = true;          // false (the CLI without --overwrite): an existing output is refused
};

struct ExportReport {
  inference::ModelInfo model;
  WrittenModel files;
  int64_t nodes = 0, initializers = 0, parameters = 0;  // parameters: initializer elements
  std::map<std::string, int> op_types;                 // ONNX op type -> node count
};

ExportReport export_model(const ExportRequest& request);

}  // namespace fastnn::onnx_export
