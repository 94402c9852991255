// tf_checkpoint_summary.h: a TensorFlow checkpoint described for inspect.
#include "trainer/checkpoint/tf_checkpoint_summary.h"

#include <filesystem>
#include <map>

#include "core/check.h"
#include "core/crc32c.h"
#include "core/tf_checkpoint/tf_dtype.h"

namespace fastnn::checkpoint {
namespace {

// In-memory bytes of a fixed-size tensor, the stored bytes of a string one.
uint64_t tensor_bytes(const tf_checkpoint::TfTensorInfo& t) {
  return tf_checkpoint::tf_dtype_size(t.dtype) ? element_count(t.shape) * tf_checkpoint::tf_dtype_size(t.dtype) : t.stored_bytes;
}

// Reads every numeric tensor (its stored checksums checked on the way); returns the CRC-32C of each one's
// bytes as read (slices joined, little-endian), by name: a fingerprint of its values whatever the file.
std::map<std::string, uint32_t> verify(const tf_checkpoint::TfCheckpoint& c) {
  std::map<std::string, uint32_t> crcs;
  for (const tf_checkpoint::TfTensorInfo& t : c.tensors->tensors())
    if (tf_checkpoint::tf_to_array_dtype(t.dtype)) {
      const Array a = c.tensors->read(t.name);
      crcs[t.name] = crc32c(a.bytes.data(), a.bytes.size());
    }
  return crcs;
}

uint64_t file_size(const std::string& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : n;
}

}  // namespace

nlohmann::json tf_checkpoint_summary_json(const tf_checkpoint::TfCheckpoint& c) {
  nlohmann::json files = nlohmann::json::array(), tensors = nlohmann::json::array();
  for (const std::string& f : c.path.files) files.push_back({{"name", f}, {"size_bytes", file_size(f)}});
  const std::map<std::string, uint32_t> crcs = verify(c);
  for (const tf_checkpoint::TfTensorInfo& t : c.tensors->tensors()) {
    nlohmann::json j = {{"name", t.name}, {"dtype", tf_checkpoint::tf_dtype_name(t.dtype)}, {"shape", t.shape},
                        {"bytes", tensor_bytes(t)}};
    if (const auto it = crcs.find(t.name); it != crcs.end()) j["crc32c"] = it->second;
    if (!t.slices.empty()) {
      j["slices"] = nlohmann::json::array();
      for (const tf_checkpoint::Slice& s : t.slices) j["slices"].push_back(tf_checkpoint::slice_string(s));
    }
    tensors.push_back(j);
  }
  return {{"format", c.path.format == tf_checkpoint::TfFormat::kV2 ? "tensorflow-v2" : "tensorflow-v1"},
          {"prefix", c.path.prefix},
          {"files", files},
          {"tensors", tensors},
          {"verified_tensors", crcs.size()}};
}

std::string tf_checkpoint_summary_text(const tf_checkpoint::TfCheckpoint& c) {
  std::string out = str(c.describe(), "\nfiles:\n");
  for (const std::string& f : c.path.files) out += str("  ", f, "  ", file_size(f), " bytes\n");
  uint64_t total = 0;
  out += str("tensors (", c.tensors->tensors().size(), "):\n");
  for (const tf_checkpoint::TfTensorInfo& t : c.tensors->tensors()) {
    total += tensor_bytes(t);
    out += str("  ", t.name, "  ", tf_checkpoint::tf_dtype_name(t.dtype), " ", shape_string(t.shape), "  ", tensor_bytes(t),
               " bytes", t.slices.empty() ? "" : str("  (", t.slices.size(), " slices)"), "\n");
  }
  out += str(total, " bytes in all; checksums of ", verify(c).size(), " numeric tensors verified\n");
  return out;
}

}  // namespace fastnn::checkpoint
