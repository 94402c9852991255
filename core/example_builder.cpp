// ExampleBuilder: tensorflow.Example wire format written directly (see core/example.h).
//
//   Example  { Features features = 1; }
//   Features { map<string, Feature> feature = 1; }   entry: key = 1, value = 2
//   Feature  { oneof { BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3; } }
//   *List    { repeated value = 1; }                  int64 and float packed
//
// This is what libprotobuf's deterministic serializer writes: map entries in key order, a present
// but empty list as a zero-length message, an empty packed field omitted.
#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/example.h"
#include "core/protowire.h"

namespace fastnn {
namespace {

namespace pw = protowire;

constexpr uint32_t kBytesListField = 1, kFloatListField = 2, kInt64ListField = 3;

void check_size(uint64_t n, std::string_view key) {
  FASTNN_CHECK(n <= pw::kMaxLength, "ExampleBuilder: feature '", key, "' of ", n,
               " bytes exceeds protobuf's 2 GiB limit");
}

// Writes the Feature holding a list whose serialized body is `body_size` bytes; `write_body`
// fills exactly that many bytes.
template <typename WriteBody>
void write_feature(std::string* out, std::string_view key, uint32_t kind_field, uint64_t body_size,
                   WriteBody&& write_body) {
  check_size(pw::len_field_size(kind_field, body_size), key);
  out->resize(pw::len_field_size(kind_field, body_size));
  char* p = pw::write_len_prefix(out->data(), kind_field, body_size);
  char* end = write_body(p);
  FASTNN_CHECK(end == out->data() + out->size(), "ExampleBuilder: size mismatch");
}

// A packed repeated field 1 (an empty one is omitted), as the body of an Int64List / FloatList.
template <typename WriteValues>
void write_packed_feature(std::string* out, std::string_view key, uint32_t kind_field,
                          uint64_t packed_size, WriteValues&& write_values) {
  uint64_t body_size = packed_size == 0 ? 0 : pw::len_field_size(1, packed_size);
  write_feature(out, key, kind_field, body_size, [&](char* p) {
    if (packed_size == 0) return p;
    return write_values(pw::write_len_prefix(p, 1, packed_size));
  });
}

}  // namespace

std::string* ExampleBuilder::spare_feature() {
  if (entries_.size() == size_) entries_.emplace_back();
  return &entries_[size_].feature;
}

void ExampleBuilder::commit(std::string key) {
  FASTNN_CHECK(pw::valid_utf8(key), "ExampleBuilder: feature key is not valid UTF-8");
  auto begin = entries_.begin();
  auto end = begin + static_cast<ptrdiff_t>(size_);
  auto pos = std::lower_bound(begin, end, key, [](const Entry& e, const std::string& k) { return e.key < k; });
  FASTNN_CHECK(pos == end || pos->key != key, "ExampleBuilder: feature '", key, "' added twice");
  end->key = std::move(key);
  // Rotating swaps strings, so every slot keeps a buffer for reuse after clear().
  std::rotate(pos, end, end + 1);
  ++size_;
}

ExampleBuilder& ExampleBuilder::add_bytes(std::string key, std::string_view value) {
  return add_bytes_list(std::move(key), std::span<const std::string_view>(&value, 1));
}

ExampleBuilder& ExampleBuilder::add_bytes_list(std::string key, std::span<const std::string_view> values) {
  uint64_t body_size = 0;
  for (std::string_view v : values) {
    check_size(v.size(), key);
    body_size += pw::len_field_size(1, v.size());
  }
  write_feature(spare_feature(), key, kBytesListField, body_size, [&](char* p) {
    for (std::string_view v : values) {
      p = pw::write_len_prefix(p, 1, v.size());
      if (!v.empty()) std::memcpy(p, v.data(), v.size());
      p += v.size();
    }
    return p;
  });
  commit(std::move(key));
  return *this;
}

ExampleBuilder& ExampleBuilder::add_int64(std::string key, int64_t value) {
  return add_int64_list(std::move(key), std::span<const int64_t>(&value, 1));
}

ExampleBuilder& ExampleBuilder::add_int64_list(std::string key, std::span<const int64_t> values) {
  uint64_t packed_size = 0;
  for (int64_t v : values) packed_size += pw::varint_size(static_cast<uint64_t>(v));
  write_packed_feature(spare_feature(), key, kInt64ListField, packed_size, [&](char* p) {
    for (int64_t v : values) p = pw::write_varint(p, static_cast<uint64_t>(v));  // two's complement
    return p;
  });
  commit(std::move(key));
  return *this;
}

ExampleBuilder& ExampleBuilder::add_float(std::string key, float value) {
  return add_float_list(std::move(key), std::span<const float>(&value, 1));
}

ExampleBuilder& ExampleBuilder::add_float_list(std::string key, std::span<const float> values) {
  uint64_t packed_size = uint64_t{4} * values.size();
  write_packed_feature(spare_feature(), key, kFloatListField, packed_size, [&](char* p) {
    if (!values.empty()) std::memcpy(p, values.data(), packed_size);  // little-endian IEEE, as on the wire
    return p + packed_size;
  });
  commit(std::move(key));
  return *this;
}

std::string ExampleBuilder::serialize() const {
  std::string out;
  serialize_to(&out);
  return out;
}

void ExampleBuilder::serialize_to(std::string* out) const {
  uint64_t features_size = 0;
  for (size_t i = 0; i < size_; ++i) {
    const Entry& e = entries_[i];
    features_size += pw::len_field_size(1, pw::len_field_size(1, e.key.size()) + pw::len_field_size(2, e.feature.size()));
  }
  uint64_t total = pw::len_field_size(1, features_size);
  FASTNN_CHECK(total <= pw::kMaxLength, "ExampleBuilder: Example of ", total, " bytes exceeds protobuf's 2 GiB limit");
  out->resize(total);
  char* p = pw::write_len_prefix(out->data(), 1, features_size);
  for (size_t i = 0; i < size_; ++i) {
    const Entry& e = entries_[i];
    p = pw::write_len_prefix(p, 1, pw::len_field_size(1, e.key.size()) + pw::len_field_size(2, e.feature.size()));
    p = pw::write_len_prefix(p, 1, e.key.size());
    std::memcpy(p, e.key.data(), e.key.size());
    p += e.key.size();
    p = pw::write_len_prefix(p, 2, e.feature.size());
    std::memcpy(p, e.feature.data(), e.feature.size());
    p += e.feature.size();
  }
  FASTNN_CHECK(p == out->data() + out->size(), "ExampleBuilder: size mismatch");
}

void ExampleBuilder::clear() { size_ = 0; }

}  // namespace fastnn
