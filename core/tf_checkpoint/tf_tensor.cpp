#include "core/tf_checkpoint/tf_tensor.h"

#include <algorithm>

#include "core/check.h"
#include "core/tf_checkpoint/tf_dtype.h"
#include "schemas/tf_checkpoint.pb.h"

namespace fastnn::tf_checkpoint {

std::vector<int64_t> shape_from_proto(const tensorflow::TensorShapeProto& proto, const std::string& where) {
  if (proto.unknown_rank()) throw FormatError(str(where, ": shape of unknown rank"));
  if (proto.dim_size() > kMaxTfRank)
    throw FormatError(str(where, ": ", proto.dim_size(), " dimensions (at most ", kMaxTfRank, " supported)"));
  std::vector<int64_t> shape;
  for (const auto& d : proto.dim()) shape.push_back(d.size());
  try {
    checkpoint::element_count(shape);
  } catch (const FormatError& e) {
    throw FormatError(str(where, ": ", e.what()));
  }
  return shape;
}

bool parse_message(google::protobuf::MessageLite& message, std::string_view bytes) {
  return bytes.size() < (size_t{1} << 31) && message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

uint64_t fixed_size_bytes(int dtype, const std::vector<int64_t>& shape, const std::string& where) {
  const uint64_t n = checkpoint::element_count(shape), size = tf_dtype_size(dtype);
  if (size && n > (uint64_t{1} << 62) / size)
    throw FormatError(str(where, ": ", checkpoint::shape_string(shape), " of ", tf_dtype_name(dtype), " is more than 2^62 bytes"));
  return n * size;
}

const TfTensorInfo* TfTensorSource::find(const std::string& name) const {
  const std::vector<TfTensorInfo>& t = tensors();
  const auto it = std::lower_bound(t.begin(), t.end(), name,
                                   [](const TfTensorInfo& i, const std::string& n) { return i.name < n; });
  return it != t.end() && it->name == name ? &*it : nullptr;
}

}  // namespace fastnn::tf_checkpoint
