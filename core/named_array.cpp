// Named arrays: dtype table, shape arithmetic, conversions.
#include "core/named_array.h"

#include <bit>
#include <cstring>

#include "core/check.h"
#include "core/half.h"

namespace fastnn::checkpoint {

static_assert(std::endian::native == std::endian::little,
              "checkpoint files are little-endian and arrays are copied without byte swapping");

namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
};
constexpr DTypeInfo kDTypes[] = {{DType::kF32, "F32"}, {DType::kF16, "F16"}, {DType::kBF16, "BF16"},
                                 {DType::kI32, "I32"}, {DType::kI64, "I64"}, {DType::kU8, "U8"}};

const DTypeInfo& info(DType d) {
  for (const auto& i : kDTypes)
    if (i.dtype == d) return i;
  throw Error(str("unknown DType value ", static_cast<int>(d)));
}

// Beyond any real array, and small enough that count * 8 bytes cannot overflow uint64.
constexpr uint64_t kMaxElements = uint64_t{1} << 62;

}  // namespace

const char* safetensors_dtype_name(DType dtype) { return info(dtype).name; }

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  for (const auto& i : kDTypes)
    if (name == i.name) return i.dtype;
  return std::nullopt;
}

uint64_t element_count(std::span<const int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw FormatError(str("negative dimension in shape ", shape_string(shape)));
    if (d != 0 && n > kMaxElements / static_cast<uint64_t>(d))
      throw FormatError(str("shape ", shape_string(shape), " has more than 2^62 elements"));
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

ArrayView typed_view(std::string name, DType dtype, std::vector<int64_t> shape, const void* data, size_t bytes) {
  const uint64_t n = element_count(shape);
  FASTNN_CHECK(n * dtype_size(dtype) == bytes, "array '", name, "': shape ", shape_string(shape), " of ",
               safetensors_dtype_name(dtype), " needs ", n * dtype_size(dtype), " bytes, got ", bytes);
  FASTNN_CHECK(data != nullptr || bytes == 0, "array '", name, "': null data");
  return {std::move(name), dtype, std::move(shape), {static_cast<const std::byte*>(data), bytes}};
}

ArrayView f32_view(std::string name, std::vector<int64_t> shape, const float* data, size_t count) {
  return typed_view(std::move(name), DType::kF32, std::move(shape), data, count * sizeof(float));
}

Array to_array(const ArrayView& v) { return {v.name, v.dtype, v.shape, {v.bytes.begin(), v.bytes.end()}}; }

std::vector<Array> to_arrays(std::span<const ArrayView> views) {
  std::vector<Array> out;
  out.reserve(views.size());
  for (const auto& v : views) out.push_back(to_array(v));
  return out;
}

std::vector<ArrayView> views_of(std::span<const Array> arrays) {
  std::vector<ArrayView> out;
  out.reserve(arrays.size());
  for (const auto& a : arrays) out.push_back(a.view());
  return out;
}

void copy_to(const ArrayView& v, void* dst, size_t dst_bytes) {
  if (dst_bytes != v.bytes.size())
    throw FormatError(str("array '", v.name, "': holds ", v.bytes.size(), " bytes (", safetensors_dtype_name(v.dtype), " ",
                          shape_string(v.shape), "), destination has ", dst_bytes));
  if (dst_bytes) std::memcpy(dst, v.bytes.data(), dst_bytes);
}

void to_f32(const ArrayView& v, float* dst, size_t count) {
  const uint64_t n = v.bytes.size() / dtype_size(v.dtype);
  if (n != count || n * dtype_size(v.dtype) != v.bytes.size())
    throw FormatError(str("array '", v.name, "': has ", n, " elements (", safetensors_dtype_name(v.dtype), " ",
                          shape_string(v.shape), "), expected ", count));
  const std::byte* p = v.bytes.data();
  switch (v.dtype) {
    case DType::kF32:
      if (count) std::memcpy(dst, p, count * 4);
      return;
    case DType::kF16:
    case DType::kBF16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        dst[i] = v.dtype == DType::kF16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h);
      }
      return;
    default:
      throw FormatError(str("array '", v.name, "': dtype ", safetensors_dtype_name(v.dtype), " is not a floating-point type"));
  }
}

std::vector<float> to_f32(const ArrayView& v) {
  std::vector<float> out(v.bytes.size() / dtype_size(v.dtype));
  to_f32(v, out.data(), out.size());
  return out;
}

}  // namespace fastnn::checkpoint
