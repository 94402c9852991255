// What both TensorFlow checkpoint readers (bundle_reader.h for V2, slices_reader.h for V1) say about
// a tensor, and how they hand its values over.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/named_array.h"
#include "core/tf_checkpoint/tensor_slices.h"

namespace google::protobuf {
class MessageLite;
}
namespace tensorflow {
class TensorShapeProto;
}

namespace fastnn::tf_checkpoint {

// More dimensions than any checkpointed variable has (TensorFlow allows 254).
inline constexpr int kMaxTfRank = 16;

// The dims of `proto`; FormatError "<where>: ..." for an unknown rank, more than kMaxTfRank dims, a
// negative dim or more than 2^62 elements.
std::vector<int64_t> shape_from_proto(const tensorflow::TensorShapeProto& proto, const std::string& where);
// Elements x the dtype's size (tf_dtype.h; 0 for variable-size dtypes); FormatError "<where>: ..." above
// 2^62 bytes.
uint64_t fixed_size_bytes(int dtype, const std::vector<int64_t>& shape, const std::string& where);
// Parses `bytes` into `message`; false when they are not one (or are 2 GiB or more, beyond protobuf).
bool parse_message(google::protobuf::MessageLite& message, std::string_view bytes);

struct TfTensorInfo {
  std::string name;
  int dtype = 0;  // tensorflow.DataType
  std::vector<int64_t> shape;
  uint64_t stored_bytes = 0;  // on disk, all slices together (V1: the values' protobuf encoding)
  std::vector<Slice> slices;  // empty: stored whole; else the partitions, which tile the tensor
};

// A checkpoint's tensors, sorted by name, with their values on request.
class TfTensorSource {
 public:
  virtual ~TfTensorSource() = default;
  virtual const std::vector<TfTensorInfo>& tensors() const = 0;
  // The whole tensor (slices joined), its stored checksums verified; FormatError naming the file, the
  // tensor and the byte offset when the bytes are damaged, or naming the tensor when its dtype is not
  // one of tf_to_array_dtype's; Error when there is no such tensor.
  virtual checkpoint::Array read(const std::string& name) const = 0;

  // nullptr when absent.
  const TfTensorInfo* find(const std::string& name) const;
};

}  // namespace fastnn::tf_checkpoint
