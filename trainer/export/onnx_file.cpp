#include "trainer/export/onnx_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/atomic_output.h"
#include "core/check.h"
#include "core/output_file.h"

namespace fastnn::onnx_export {
namespace fs = std::filesystem;
namespace {

// Moves the large initializers' bytes to `out` (offset-aligned); returns how many moved.
int externalise(onnx::GraphProto& g, const std::string& location, std::ofstream& out, const std::string& path,
                uint64_t& offset) {
  int moved = 0;
  static const char zeros[kExternalAlign] = {};
  for (onnx::TensorProto& t : *g.mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() < kExternalMinBytes) continue;
    const uint64_t pad = (kExternalAlign - offset % kExternalAlign) % kExternalAlign;
    out.write(zeros, static_cast<std::streamsize>(pad));
    offset += pad;
    const std::string& raw = t.raw_data();
    out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
    if (!out) throw_io_error(path, "write");
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&t](const char* k, const std::string& v) {
      onnx::StringStringEntryProto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add("location", location);
    add("offset", std::to_string(offset));
    add("length", std::to_string(raw.size()));
    offset += raw.size();
    t.clear_raw_data();
    ++moved;
  }
  return moved;
}

}  // namespace

// Removes the temporaries it was given unless released (an error on the way leaves nothing behind).
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    std::error_code ec;
    for (const std::string& p : paths) fs::remove(p, ec);
  }
};

WrittenModel write_onnx_file(onnx::ModelProto& model, const std::string& path, External external,
                             uint64_t inline_limit, std::span<const std::string> inputs) {
  TempFiles temps;
  const fs::path out_path(path);
  if (out_path.filename().empty()) throw ConfigError(str(path, ": the output names a directory, not a file"));
  const bool big = model.ByteSizeLong() >= std::min(inline_limit, kInlineLimit);
  if (big && external == External::kNever)
    throw ConfigError(str(path, ": the model is ", model.ByteSizeLong() >> 20,
                          " MiB, beyond protobuf's 2 GiB limit for one file; it needs external data"));
  const bool with_data = big || external == External::kAlways;
  const std::string data_name = out_path.filename().string() + ".data";
  const fs::path data_path = out_path.parent_path() / data_name;
  // Refused before any work: a target that is a FIFO, a device, a folder or one of the inputs.
  const std::string model_target = checked_output_target(path, inputs);
  const std::string data_target = with_data ? checked_output_target(data_path.string(), inputs) : std::string();
  if (!out_path.parent_path().empty()) make_directories(out_path.parent_path().string());
  WrittenModel w;
  w.model_path = path;
  std::string data_tmp;
  if (with_data) {
    data_tmp = output_temp_path(data_target);
    temps.paths.push_back(data_tmp);
    std::ofstream out(data_tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_io_error(data_path.string(), str("create ", data_tmp));
    w.external_tensors = externalise(*model.mutable_graph(), data_name, out, data_path.string(), w.data_bytes);
    out.close();
    if (!out) throw_io_error(data_path.string(), "write");
    w.data_path = data_path.string();
  }
  if (model.ByteSizeLong() >= (uint64_t{2} << 30) - 1)
    throw ConfigError(str(path, ": the graph alone is beyond protobuf's 2 GiB limit"));
  const std::string model_tmp = output_temp_path(model_target);
  temps.paths.push_back(model_tmp);
  {
    std::ofstream out(model_tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_io_error(path, str("create ", model_tmp));
    // A failed serialisation here is a failed write (a full disk): errno says which.
    if (!model.SerializeToOstream(&out)) throw_io_error(path, "write");
    out.close();
    if (!out) throw_io_error(path, "write");
  }
  w.model_bytes = fs::file_size(model_tmp);
  if (!data_tmp.empty()) rename_output_into_place(data_tmp, w.data_path, inputs);
  rename_output_into_place(model_tmp, path, inputs);
  return w;
}

}  // namespace fastnn::onnx_export
