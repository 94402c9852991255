#include "core/tf_checkpoint/bundle_writer.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/atomic_output.h"
#include "core/check.h"
#include "core/output_file.h"
#include "core/crc32c.h"
#include "core/tf_checkpoint/bundle_reader.h"
#include "core/tf_checkpoint/table.h"
#include "core/tf_checkpoint/tf_dtype.h"
#include "schemas/tf_checkpoint.pb.h"

namespace fastnn::tf_checkpoint {
namespace {

std::vector<const checkpoint::ArrayView*> sorted_checked(std::span<const checkpoint::ArrayView> arrays) {
  std::vector<const checkpoint::ArrayView*> out;
  for (const checkpoint::ArrayView& a : arrays) {
    FASTNN_CHECK(!a.name.empty() && a.name[0] != '\0', "TensorFlow checkpoint: an array without a name");
    FASTNN_CHECK(a.bytes.size() == a.num_elements() * dtype_size(a.dtype), "TensorFlow checkpoint: array ",
                 a.name, " holds ", a.bytes.size(), " bytes for ", checkpoint::shape_string(a.shape));
    out.push_back(&a);
  }
  std::sort(out.begin(), out.end(), [](const auto* x, const auto* y) { return x->name < y->name; });
  for (size_t i = 1; i < out.size(); ++i)
    FASTNN_CHECK(out[i - 1]->name != out[i]->name, "TensorFlow checkpoint: two arrays named ", out[i]->name);
  return out;
}

// The index for `arrays` (sorted) laid out one after another in the data file.
std::string encode_index(const std::vector<const checkpoint::ArrayView*>& arrays) {
  std::vector<std::pair<std::string, std::string>> entries;
  tensorflow::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(tensorflow::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(1);
  entries.push_back({"", header.SerializeAsString()});
  int64_t offset = 0;
  for (const checkpoint::ArrayView* a : arrays) {
    tensorflow::BundleEntryProto e;
    e.set_dtype(static_cast<tensorflow::DataType>(array_to_tf_dtype(a->dtype)));
    for (int64_t d : a->shape) e.mutable_shape()->add_dim()->set_size(d);
    e.set_shard_id(0);
    e.set_offset(offset);
    e.set_size(static_cast<int64_t>(a->bytes.size()));
    e.set_crc32c(crc32c_mask(crc32c(a->bytes.data(), a->bytes.size())));
    offset += static_cast<int64_t>(a->bytes.size());
    entries.push_back({a->name, e.SerializeAsString()});
  }
  return encode_table(entries);
}

}  // namespace

std::pair<std::string, std::string> encode_bundle(std::span<const checkpoint::ArrayView> arrays) {
  const auto sorted = sorted_checked(arrays);
  std::string data;
  for (const checkpoint::ArrayView* a : sorted) data.append(reinterpret_cast<const char*>(a->bytes.data()), a->bytes.size());
  return {encode_index(sorted), data};
}

uint64_t write_bundle(const std::string& prefix, std::span<const checkpoint::ArrayView> arrays) {
  const auto sorted = sorted_checked(arrays);
  const std::string parent = std::filesystem::path(prefix).parent_path().string();
  if (!parent.empty()) make_directories(parent);
  // The data file first, the index last: a reader finds a complete data file behind every index.
  uint64_t data_bytes = 0;
  OutputFile data(bundle_data_path(prefix, 0, 1));
  for (const checkpoint::ArrayView* a : sorted) {
    data.write({reinterpret_cast<const char*>(a->bytes.data()), a->bytes.size()});
    data_bytes += a->bytes.size();
  }
  data.commit();
  const std::string index = encode_index(sorted);
  OutputFile index_file(bundle_index_path(prefix));
  index_file.write(index);
  index_file.commit();
  return data_bytes + index.size();
}

}  // namespace fastnn::tf_checkpoint
