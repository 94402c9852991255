// Test helper: protobuf wire bytes written by hand, independent of core/protowire.h, so tests can
// spell out unusual encodings (unpacked lists, overlong varints, groups, fields out of order).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

namespace fastnn::wire {

enum : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

// A varint, padded with `extra` redundant continuation bytes (an overlong but valid encoding).
inline std::string varint(uint64_t v, int extra = 0) {
  std::string s;
  while (v >= 0x80 || extra > 0) {
    bool last_real = v < 0x80;
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
    if (last_real) --extra;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
inline std::string tag(uint32_t field, uint32_t type, int extra = 0) { return varint(uint64_t{field} << 3 | type, extra); }
inline std::string len_field(uint32_t field, std::string_view payload) {
  return tag(field, kLen) + varint(payload.size()) + std::string(payload);
}
inline std::string varint_field(uint32_t field, uint64_t v) { return tag(field, kVarint) + varint(v); }
inline std::string fixed32_field(uint32_t field, uint32_t v) {
  std::string s = tag(field, kFixed32);
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}
inline std::string fixed64_field(uint32_t field, uint64_t v) {
  std::string s = tag(field, kFixed64);
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}
inline std::string group_field(uint32_t field, std::string_view inner) {
  return tag(field, kStartGroup) + std::string(inner) + tag(field, kEndGroup);
}
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline std::string packed_floats(std::initializer_list<float> values) {
  std::string s;
  for (float f : values) {
    uint32_t u = float_bits(f);
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(u >> (8 * i)));
  }
  return s;
}
inline std::string packed_varints(std::initializer_list<int64_t> values) {
  std::string s;
  for (int64_t v : values) s += varint(static_cast<uint64_t>(v));
  return s;
}

// Messages of the schema. Feature bodies: bytes_list = 1, float_list = 2, int64_list = 3.
inline std::string bytes_feature(std::string_view list_body) { return len_field(1, list_body); }
inline std::string float_feature(std::string_view list_body) { return len_field(2, list_body); }
inline std::string int64_feature(std::string_view list_body) { return len_field(3, list_body); }
inline std::string entry(std::string_view key, std::string_view feature_body) {
  return len_field(1, key) + len_field(2, feature_body);
}
// An Example with one Features holding these map entry bodies.
inline std::string example(std::initializer_list<std::string> entries) {
  std::string features;
  for (const auto& e : entries) features += len_field(1, e);
  return len_field(1, features);
}

}  // namespace fastnn::wire
