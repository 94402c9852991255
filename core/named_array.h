// Named arrays: what checkpoints store (a name, a dtype, a shape, raw bytes), independent of the
// trainer's tensor type so that any owner of memory (model weights, optimizer slots, a test) can save
// and load without conversion layers.
//
// Layout: row-major (C order), contiguous, little-endian (the host order; fastnn builds only on
// little-endian machines, see the static_assert in array.cpp). F16 is IEEE 754 binary16, BF16 the top
// half of an IEEE binary32.
//
// ArrayView borrows its bytes (valid while the owner lives); Array owns them. Neither aligns its
// bytes: views into a mapped safetensors file may start at any offset, so read them with memcpy
// (copy_to, to_f32), never by casting the pointer.
//
// These arrays and core/safetensors.h live in fastnn::ckpt with trainer/checkpoint/; they sit in core so
// that the safetensors parser is fuzzed with the other parsers of untrusted bytes. Their dtype is
// core/dtype.h's; an array holds one of the six safetensors types below (not f64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"

namespace fastnn::checkpoint {

// safetensors spelling: "F32", "F16", "BF16", "I32", "I64", "U8"; Error for f64, which no array holds.
const char* safetensors_dtype_name(DType dtype);
// Inverse of safetensors_dtype_name; nullopt for anything else (case-sensitive, as the format is).
std::optional<DType> parse_safetensors_dtype(std::string_view name);

// Product of the dims; throws FormatError if a dim is negative or the product exceeds 2^62.
uint64_t element_count(std::span<const int64_t> shape);
// "[3, 3, 64]" for messages.
std::string shape_string(std::span<const int64_t> shape);

struct ArrayView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;

  uint64_t num_elements() const { return element_count(shape); }
};

struct Array {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  ArrayView view() const { return {name, dtype, shape, bytes}; }
};

// Views over typed memory the caller keeps alive. `count` must equal the shape's element count
// (checked, fastnn::Error otherwise).
ArrayView f32_view(std::string name, std::vector<int64_t> shape, const float* data, size_t count);
ArrayView typed_view(std::string name, DType dtype, std::vector<int64_t> shape, const void* data, size_t bytes);

// An owned copy of a view.
Array to_array(const ArrayView& view);
std::vector<Array> to_arrays(std::span<const ArrayView> views);
std::vector<ArrayView> views_of(std::span<const Array> arrays);

// Copies the bytes of `view` to `dst`, which must hold exactly `dst_bytes` == view.bytes.size()
// (FormatError naming the array otherwise).
void copy_to(const ArrayView& view, void* dst, size_t dst_bytes);

// Converts F32, F16 or BF16 data to floats (exactly: every F16 and BF16 value is a float; the 16-bit
// conversions are core/half.h's, shared with tensors and the pipeline); FormatError
// naming the array for integer dtypes or a size mismatch.
void to_f32(const ArrayView& view, float* dst, size_t count);
std::vector<float> to_f32(const ArrayView& view);

}  // namespace fastnn::checkpoint
