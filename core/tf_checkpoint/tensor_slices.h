// Slices of partitioned variables in TensorFlow checkpoints: their geometry, their table keys, and the
// joining of slices into the whole tensor.
//
// A slice (tensorflow.TensorSliceProto, TensorFlow's TensorSlice) has one extent per dimension of the
// whole tensor: a start and a length, length -1 meaning the whole dimension. Both checkpoint formats
// store each slice under a key made of the tensor's name and the slice (TensorFlow's
// EncodeTensorNameSlice, util/saved_tensor_slice_util.cc) in TensorFlow's OrderedCode
// (lib/strings/ordered_code.cc):
//   number 0 (increasing unsigned: a length byte, then the value's big-endian bytes without leading
//   zeros), the name (bytes, with \x00 written \x00\xff and \xff written \xff\x00, ended by \x00\x01),
//   the rank, then per dimension the start and the length as increasing signed numbers (the sign bit,
//   as many more bits equal to it as the encoding has extra bytes, one opposite bit, then the value in
//   two's complement: n bytes hold [-2^(7n-1), 2^(7n-1))).
//
// fastnn reads a partitioned tensor whole: its slices must tile it exactly (inside it, no two
// overlapping, their elements summing to its own), checked before anything is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tensorflow {
class TensorSliceProto;
}

namespace fastnn::tf_checkpoint {

// More slices than any partitioned variable has (TF-slim's partitioners make a few to a few hundred).
inline constexpr size_t kMaxSlicesPerTensor = 4096;

struct Extent {
  int64_t start = 0;
  int64_t length = -1;  // -1: the whole dimension
};
using Slice = std::vector<Extent>;

// `proto` as a slice of a tensor of `shape`; FormatError "<where>: ..." unless it has one extent per
// dimension, each inside the dimension.
Slice slice_from_proto(const tensorflow::TensorSliceProto& proto, std::span<const int64_t> shape,
                       const std::string& where);
// The shape of the slice's own values.
std::vector<int64_t> slice_shape(const Slice& slice, std::span<const int64_t> shape);
// TensorFlow's notation, "0,2:-" (start,length per dimension, "-" for a whole one).
std::string slice_string(const Slice& slice);

// The table key of `slice` of tensor `name` (EncodeTensorNameSlice).
std::string slice_key(std::string_view name, const Slice& slice);
// OrderedCode's increasing encodings, exposed for tests.
void ordered_code_unsigned(std::string* out, uint64_t v);
void ordered_code_signed(std::string* out, int64_t v);
void ordered_code_string(std::string* out, std::string_view s);

// FormatError "<where>: ..." unless `slices` tile a tensor of `shape` exactly (at most
// kMaxSlicesPerTensor of them).
void check_tiling(std::span<const Slice> slices, std::span<const int64_t> shape, const std::string& where);

// Copies the values of `slice` (row-major, `src` holds exactly the slice's elements) to their place in
// `dst`, the whole tensor (row-major, every element `element_size` bytes).
void copy_slice(const Slice& slice, std::span<const int64_t> shape, size_t element_size, const std::byte* src,
                std::byte* dst);

}  // namespace fastnn::tf_checkpoint
