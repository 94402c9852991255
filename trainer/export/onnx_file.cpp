#include "trainer/export/onnx_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/check.h"

namespace fastnn::onnx_export {
namespace fs = std::filesystem;
namespace {

std::string temp_beside(const fs::path& p) { return (p.parent_path() / str(".", p.filename().string(), ".fastnn-tmp")).string(); }

void rename_into_place(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw IoError(str(to, ": cannot rename ", from, " into place: ", std::strerror(errno)));
}

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
    if (!out) throw IoError(str(path, ": write failed: ", std::strerror(errno)));
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
                             uint64_t inline_limit) {
  TempFiles temps;
  const fs::path out_path(path);
  if (out_path.filename().empty()) throw ConfigError(str(path, ": the output names a directory, not a file"));
  const bool big = model.ByteSizeLong() >= std::min(inline_limit, kInlineLimit);
  if (big && external == External::kNever)
    throw ConfigError(str(path, ": the model is ", model.ByteSizeLong() >> 20,
                          " MiB, beyond protobuf's 2 GiB limit for one file; it needs external data"));
  if (!out_path.parent_path().empty()) {
    std::error_code ec;
    fs::create_directories(out_path.parent_path(), ec);
    if (ec) throw IoError(str(out_path.parent_path().string(), ": cannot create: ", ec.message()));
  }
  WrittenModel w;
  w.model_path = path;
  const std::string data_name = out_path.filename().string() + ".data";
  const fs::path data_path = out_path.parent_path() / data_name;
  std::string data_tmp;
  if (big || external == External::kAlways) {
    data_tmp = temp_beside(data_path);
    temps.paths.push_back(data_tmp);
    std::ofstream out(data_tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(str(data_tmp, ": cannot create: ", std::strerror(errno)));
    w.external_tensors = externalise(*model.mutable_graph(), data_name, out, data_tmp, w.data_bytes);
    out.close();
    if (!out) throw IoError(str(data_tmp, ": write failed: ", std::strerror(errno)));
    w.data_path = data_path.string();
  }
  if (model.ByteSizeLong() >= (uint64_t{2} << 30) - 1)
    throw ConfigError(str(path, ": the graph alone is beyond protobuf's 2 GiB limit"));
  const std::string model_tmp = temp_beside(out_path);
  temps.paths.push_back(model_tmp);
  {
    std::ofstream out(model_tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw IoError(str(model_tmp, ": cannot create: ", std::strerror(errno)));
    if (!model.SerializeToOstream(&out)) throw IoError(str(model_tmp, ": cannot serialise the model"));
    out.close();
    if (!out) throw IoError(str(model_tmp, ": write failed: ", std::strerror(errno)));
  }
  w.model_bytes = fs::file_size(model_tmp);
  if (!data_tmp.empty()) rename_into_place(data_tmp, w.data_path);
  rename_into_place(model_tmp, path);
  return w;
}

}  // namespace fastnn::onnx_export
