#include "core/tf_checkpoint/tensor_slices.h"

#include <cstring>

#include "core/check.h"
#include "core/named_array.h"
#include "schemas/tf_checkpoint.pb.h"

namespace fastnn::tf_checkpoint {
namespace {

int64_t extent_length(const Extent& e, int64_t dim) { return e.length < 0 ? dim : e.length; }

}  // namespace

Slice slice_from_proto(const tensorflow::TensorSliceProto& proto, std::span<const int64_t> shape,
                       const std::string& where) {
  if (static_cast<size_t>(proto.extent_size()) != shape.size())
    throw FormatError(str(where, ": a slice with ", proto.extent_size(), " extents of a tensor of rank ", shape.size()));
  Slice s;
  for (size_t d = 0; d < shape.size(); ++d) {
    const auto& e = proto.extent(static_cast<int>(d));
    Extent x{e.start(), e.has_length() ? e.length() : -1};
    const bool full = x.length < 0 && x.start == 0;
    const bool inside = x.start >= 0 && x.length >= 0 && x.start <= shape[d] && x.length <= shape[d] - x.start;
    if (!full && !inside)
      throw FormatError(str(where, ": slice extent ", d, " (start ", e.start(), ", length ",
                            e.has_length() ? str(e.length()) : std::string("all"), ") is outside dimension ",
                            shape[d]));
    s.push_back(x);
  }
  return s;
}

std::vector<int64_t> slice_shape(const Slice& slice, std::span<const int64_t> shape) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < slice.size(); ++d) out.push_back(extent_length(slice[d], shape[d]));
  return out;
}

std::string slice_string(const Slice& slice) {
  std::string s;
  for (size_t d = 0; d < slice.size(); ++d) {
    if (d) s += ':';
    s += slice[d].length < 0 ? std::string("-") : str(slice[d].start, ",", slice[d].length);
  }
  return s;
}

void ordered_code_unsigned(std::string* out, uint64_t v) {
  char buf[8];
  int n = 0;
  for (; v; v >>= 8) buf[7 - n++] = static_cast<char>(v & 0xff);
  out->push_back(static_cast<char>(n));
  out->append(buf + 8 - n, static_cast<size_t>(n));
}

void ordered_code_signed(std::string* out, int64_t v) {
  const uint64_t magnitude = v < 0 ? ~static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int len = 1;  // len bytes hold [-2^(7 len - 1), 2^(7 len - 1))
  while (len < 10 && (magnitude >> (7 * len - 1)) != 0) ++len;
  unsigned char buf[10];
  const unsigned char sign = v < 0 ? 0xff : 0x00;
  buf[0] = buf[1] = sign;
  for (int i = 0; i < 8; ++i) buf[2 + i] = static_cast<unsigned char>(static_cast<uint64_t>(v) >> (56 - 8 * i));
  unsigned char* p = buf + 10 - len;
  const uint32_t header = (0xffff0000u >> len) & 0xffffu;  // `len` one bits from the top: sign + size bits
  p[0] ^= static_cast<unsigned char>(header >> 8);
  if (len > 1) p[1] ^= static_cast<unsigned char>(header & 0xff);
  out->append(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
}

void ordered_code_string(std::string* out, std::string_view s) {
  for (char c : s) {
    out->push_back(c);
    if (c == '\0') out->push_back('\xff');
    else if (c == '\xff') out->push_back('\0');
  }
  out->append("\0\x01", 2);
}

std::string slice_key(std::string_view name, const Slice& slice) {
  std::string key;
  ordered_code_unsigned(&key, 0);
  ordered_code_string(&key, name);
  ordered_code_unsigned(&key, slice.size());
  for (const Extent& e : slice) {
    ordered_code_signed(&key, e.start);
    ordered_code_signed(&key, e.length);
  }
  return key;
}

void check_tiling(std::span<const Slice> slices, std::span<const int64_t> shape, const std::string& where) {
  if (slices.empty() || slices.size() > kMaxSlicesPerTensor)
    throw FormatError(str(where, ": ", slices.size(), " slices (1 to ", kMaxSlicesPerTensor, " supported)"));
  const uint64_t total = checkpoint::element_count(shape);
  uint64_t covered = 0;
  for (const Slice& s : slices) {
    covered += checkpoint::element_count(slice_shape(s, shape));  // each at most total: no overflow before the check
    if (covered > total) break;
  }
  if (covered != total)
    throw FormatError(str(where, ": its ", slices.size(), " slices hold ", covered, " elements, the tensor ",
                          checkpoint::shape_string(shape), " has ", total));
  for (size_t i = 0; i < slices.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      bool overlap = true;
      for (size_t d = 0; d < shape.size() && overlap; ++d) {
        const int64_t a0 = slices[i][d].start, a1 = a0 + extent_length(slices[i][d], shape[d]);
        const int64_t b0 = slices[j][d].start, b1 = b0 + extent_length(slices[j][d], shape[d]);
        overlap = a0 < b1 && b0 < a1;
      }
      if (overlap && total > 0)
        throw FormatError(str(where, ": slices ", slice_string(slices[j]), " and ", slice_string(slices[i]), " overlap"));
    }
}

void copy_slice(const Slice& slice, std::span<const int64_t> shape, size_t element_size, const std::byte* src,
                std::byte* dst) {
  const size_t rank = shape.size();
  const std::vector<int64_t> len = slice_shape(slice, shape);
  if (checkpoint::element_count(len) == 0) return;
  // The copy runs over the trailing dimensions that are whole, plus the one before them.
  size_t k = rank;
  uint64_t run = element_size;
  while (k > 0) {
    --k;
    run *= static_cast<uint64_t>(len[k]);
    if (slice[k].length >= 0 && len[k] != shape[k]) break;
    if (k == 0) break;
  }
  // Strides (bytes) of the whole tensor.
  std::vector<uint64_t> stride(rank, element_size);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * static_cast<uint64_t>(shape[d]);
  std::vector<int64_t> idx(k, 0);
  while (true) {
    uint64_t off = rank ? static_cast<uint64_t>(slice[k].start) * stride[k] : 0;
    for (size_t d = 0; d < k; ++d) off += static_cast<uint64_t>(slice[d].start + idx[d]) * stride[d];
    std::memcpy(dst + off, src, run);
    src += run;
    size_t d = k;
    while (d > 0 && ++idx[d - 1] == len[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

}  // namespace fastnn::tf_checkpoint
