// Writing an ONNX model file, with its weights as ONNX external data when it must or is asked to.
//
// Protobuf cannot serialise a message of 2 GiB or more, so a model whose serialised size reaches
// kInlineLimit (2 GiB - 64 MiB, leaving room for the graph) -- or any model with External::kAlways --
// keeps every initializer of at least kExternalMinBytes in "<output file name>.data" beside the model:
// TensorProto.data_location = EXTERNAL with external_data {location: that file name (relative, as the
// ONNX spec wants), offset, length}, offsets aligned to 4096 bytes so runtimes can mmap them. Smaller
// initializers stay inline. onnx.load / onnx.checker.check_model(path) / onnxruntime read both forms.
//
// The output's folder is created when missing. Files are written as core/output_file.h writes every
// output: under temporary names beside the output, renamed into place (the data file first, so a model
// file never names data that is not there); an existing regular file is replaced (a "<name>.data" left
// by an earlier external export is left alone: an inline model does not read it), a FIFO, device,
// folder or one of `inputs` (the checkpoint's files) in either place is refused before any work.
// Errors: IoError naming the path and errno's reason (a full disk), ConfigError for a refused target.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "onnx/onnx.pb.h"

namespace fastnn::onnx_export {

inline constexpr uint64_t kInlineLimit = (uint64_t{2} << 30) - (uint64_t{64} << 20);
inline constexpr uint64_t kExternalMinBytes = 1024;
inline constexpr uint64_t kExternalAlign = 4096;

enum class External { kAuto, kAlways, kNever };

struct WrittenModel {
  std::string model_path, data_path;  // data_path empty when inline
  uint64_t model_bytes = 0, data_bytes = 0;
  int external_tensors = 0;
};

// Moves initializers out of `model` (when external) and writes it to `path`. kAuto goes external when the
// serialised model reaches inline_limit (tests lower it); kNever with such a model is a ConfigError.
WrittenModel write_onnx_file(onnx::ModelProto& model, const std::string& path, External external = External::kAuto,
                             uint64_t inline_limit = kInlineLimit, std::span<const std::string> inputs = {});

}  // namespace fastnn::onnx_export
