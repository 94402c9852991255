// Internal: protobuf wire-format primitives for the Example codec (core/example_*.cpp and its tests).
//
// The reader accepts exactly what libprotobuf 3.21's parser accepts, because libprotobuf (and
// TensorFlow, which uses it) is the oracle our records must agree with:
//   - tags: at most 5 bytes, value truncated to 32 bits; field number 0 and wire types 6, 7 rejected;
//   - varints: at most 10 bytes, bits past 64 dropped;
//   - lengths: at most 5 bytes, below 2^31 - 16 (libprotobuf's INT_MAX - kSlopBytes), and inside the
//     enclosing message;
//   - groups (wire types 3/4) are valid unknown fields: skipped when the end tag matches the start
//     tag; each group level costs one unit of libprotobuf's recursion budget (100 at the top-level
//     message, one less per nested message), and an exhausted budget is an error.
// Every violation throws FormatError naming the byte offset from the start of the record.
// Header-only so the parser's hot loop inlines; nothing here allocates except error messages.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/check.h"

namespace fastnn::protowire {

static_assert(std::endian::native == std::endian::little, "the codec copies fixed32 values as-is");

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// libprotobuf's io::CodedInputStream::GetDefaultRecursionLimit().
inline constexpr int kRecursionLimit = 100;
// Largest length libprotobuf's ReadSize accepts.
inline constexpr uint64_t kMaxLength = 0x7fffffff - 16;

constexpr uint32_t make_tag(uint32_t field, WireType type) { return field << 3 | type; }

// ---- writing ----

constexpr size_t varint_size(uint64_t v) { return (static_cast<size_t>(std::bit_width(v | 1)) + 6) / 7; }

inline char* write_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

// Tag + length prefix of a length-delimited field; the caller writes the payload.
inline char* write_len_prefix(char* p, uint32_t field, uint64_t len) {
  p = write_varint(p, make_tag(field, kLen));
  return write_varint(p, len);
}
constexpr size_t len_field_size(uint32_t field, uint64_t len) {
  return varint_size(make_tag(field, kLen)) + varint_size(len) + len;
}

// ---- validation ----

// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), the check
// libprotobuf applies to proto3 `string` fields such as map keys. ASCII takes the fast path.
inline bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  if (end - p >= 8) {  // ASCII eight bytes at a time, the last eight overlapping
    uint64_t w, tail;
    std::memcpy(&tail, end - 8, 8);
    for (; end - p >= 8; p += 8) {
      std::memcpy(&w, p, 8);
      if (w & 0x8080808080808080u) break;
    }
    if (end - p < 8 && !(tail & 0x8080808080808080u)) return true;
  }
  while (p < end) {
    if (*p < 0x80) {
      ++p;
      continue;
    }
    unsigned c = *p;
    size_t n;
    unsigned lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) <= n) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (size_t i = 2; i <= n; ++i)
      if ((p[i] & 0xc0) != 0x80) return false;
    p += n + 1;
  }
  return true;
}

// ---- reading ----

// A cursor over one message's bytes. `base` is the start of the whole record, for error offsets.
class Reader {
 public:
  Reader(const char* base, std::string_view bytes)
      : base_(base), p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  bool done() const { return p_ == end_; }
  const char* pos() const { return p_; }
  // A reader over a sub-message (a view returned by read_len()), same record base.
  Reader sub(std::string_view bytes) const { return Reader(base_, bytes); }

  [[gnu::always_inline]] uint32_t read_tag() {
    uint32_t tag;
    const char* at = p_;
    if (p_ < end_ && static_cast<uint8_t>(*p_) < 0x80) {
      tag = static_cast<uint8_t>(*p_++);
    } else {
      tag = read_tag_slow();
    }
    if ((tag >> 3) == 0 || (tag & 7) > 5) [[unlikely]]
      bad_tag(tag, at);
    return tag;
  }

  [[gnu::always_inline]] uint64_t read_varint() {
    if (p_ < end_ && static_cast<uint8_t>(*p_) < 0x80) return static_cast<uint8_t>(*p_++);
    return read_varint_slow();
  }

  // The payload of a length-delimited field.
  [[gnu::always_inline]] std::string_view read_len() {
    uint64_t n;
    const char* at = p_;
    if (end_ - p_ >= 2 && static_cast<uint8_t>(p_[1]) < 0x80) {  // one or two bytes: most lengths
      uint32_t b0 = static_cast<uint8_t>(p_[0]);
      if (b0 < 0x80) {
        n = b0;
        p_ += 1;
      } else {
        n = (b0 & 0x7f) | uint32_t{static_cast<uint8_t>(p_[1])} << 7;
        p_ += 2;
      }
    } else if (p_ < end_ && static_cast<uint8_t>(*p_) < 0x80) {
      n = static_cast<uint8_t>(*p_++);
    } else {
      n = read_len_slow();
    }
    if (n > static_cast<uint64_t>(end_ - p_)) [[unlikely]]
      fail(at, str("length ", n, " runs past the end of its message (", end_ - p_, " bytes left)"));
    std::string_view v(p_, n);
    p_ += n;
    return v;
  }

  uint32_t read_fixed32() {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  }

  // Skips one unknown field whose tag was just read. `budget` is the recursion budget left at this
  // message level (see the file comment).
  void skip_field(uint32_t tag, int budget) {
    switch (tag & 7) {
      case kVarint: read_varint(); break;
      case kFixed64: take(8); break;
      case kLen: read_len(); break;
      case kStartGroup: skip_group(tag, budget); break;
      case kEndGroup: fail(p_ - varint_size(tag), "end-group tag without a matching start-group");
      default: take(4); break;  // kFixed32; 6 and 7 were rejected by read_tag
    }
  }

  [[noreturn]] void fail(const char* at, const std::string& what) const {
    throw FormatError(str("malformed tf.Example: ", what, " at byte ", at - base_));
  }

 private:
  const char* take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) [[unlikely]]
      fail(p_, str("fixed-size value of ", n, " bytes runs past the end of its message"));
    const char* at = p_;
    p_ += n;
    return at;
  }

  [[gnu::noinline]] uint32_t read_tag_slow() {
    const char* at = p_;
    uint32_t v = 0;
    for (int i = 0; i < 5; ++i) {
      if (p_ == end_) fail(at, "truncated tag");
      uint32_t b = static_cast<uint8_t>(*p_++);
      v |= (b & 0x7f) << (7 * i);  // bits past 32 fall off, as in libprotobuf's ReadTag
      if (b < 0x80) return v;
    }
    fail(at, "tag longer than 5 bytes");
  }

  [[gnu::noinline]] uint64_t read_varint_slow() {
    const char* at = p_;
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (p_ == end_) fail(at, "truncated varint");
      uint64_t b = static_cast<uint8_t>(*p_++);
      v |= (b & 0x7f) << (7 * i);  // the 10th byte contributes one bit; the rest fall off
      if (b < 0x80) return v;
    }
    fail(at, "varint longer than 10 bytes");
  }

  [[gnu::noinline]] uint64_t read_len_slow() {
    const char* at = p_;
    uint64_t v = 0;
    for (int i = 0; i < 5; ++i) {
      if (p_ == end_) fail(at, "truncated length");
      uint64_t b = static_cast<uint8_t>(*p_++);
      v |= (b & 0x7f) << (7 * i);
      if (b < 0x80) {
        if (v > kMaxLength) fail(at, str("length ", v, " exceeds protobuf's 2 GiB limit"));
        return v;
      }
    }
    fail(at, "length longer than 5 bytes");
  }

  [[gnu::noinline]] void skip_group(uint32_t start_tag, int budget) {
    const char* at = p_;
    if (budget - 1 < 0) fail(at, str("groups nested deeper than protobuf's recursion limit of ", kRecursionLimit));
    while (!done()) {
      uint32_t tag = read_tag();
      if ((tag & 7) == kEndGroup) {
        if (tag != start_tag + 1) fail(p_ - varint_size(tag), str("end-group tag for field ", tag >> 3, " inside group ", start_tag >> 3));
        return;
      }
      skip_field(tag, budget - 1);
    }
    fail(at, str("group ", start_tag >> 3, " has no end tag"));
  }

  [[noreturn]] void bad_tag(uint32_t tag, const char* at) const {
    if ((tag >> 3) == 0) fail(at, "field number 0");
    fail(at, str("invalid wire type ", tag & 7));
  }

  const char* base_;
  const char* p_;
  const char* end_;
};

}  // namespace fastnn::protowire
