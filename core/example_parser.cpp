// ExampleParser, FeatureView and for_each_feature (see core/example.h).
//
// One pass validates the whole record as libprotobuf 3.21 would (core/protowire.h has the limits)
// and reports every map entry; parse() keeps the entries whose key was asked for.
//
// What libprotobuf makes of unusual but valid records, and so what we report:
//   - Example.features or a map entry repeated: entries accumulate; a key seen again replaces the
//     whole earlier Feature (map semantics, last wins);
//   - a map entry's key or value field repeated: the last key counts; values are merged, i.e. the
//     Feature is parsed as if its bodies were concatenated;
//   - within a Feature, a list field of another kind than the current one replaces it (oneof), while
//     a list field of the same kind merges into it (repeated values append). So the Feature's value is
//     the last run of list fields of one kind; usually a run of one (`first`), otherwise "split".
#include <bit>
#include <cstring>
#include <type_traits>

#include "core/check.h"
#include "core/example.h"
#include "core/protowire.h"

namespace fastnn {
namespace {

namespace pw = protowire;
using Kind = FeatureView::Kind;

// libprotobuf's recursion budget at each message level (Example is the top).
constexpr int kExampleBudget = pw::kRecursionLimit;
constexpr int kFeaturesBudget = kExampleBudget - 1;
constexpr int kEntryBudget = kExampleBudget - 2;
constexpr int kFeatureBudget = kExampleBudget - 3;
constexpr int kListBudget = kExampleBudget - 4;

constexpr uint32_t kField1Len = pw::make_tag(1, pw::kLen);
constexpr uint32_t kField2Len = pw::make_tag(2, pw::kLen);
constexpr uint32_t kBytesListTag = pw::make_tag(1, pw::kLen);
constexpr uint32_t kFloatListTag = pw::make_tag(2, pw::kLen);
constexpr uint32_t kInt64ListTag = pw::make_tag(3, pw::kLen);
constexpr uint32_t kUnpackedInt64Tag = pw::make_tag(1, pw::kVarint);
constexpr uint32_t kUnpackedFloatTag = pw::make_tag(1, pw::kFixed32);

uint32_t load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Calls on_segment(kind, list, reader) for each list field of a Feature body (other fields skipped);
// `reader` carries the record base for error offsets.
template <typename OnSegment>
void walk_feature(pw::Reader r, OnSegment&& on_segment) {
  while (!r.done()) {
    uint32_t tag = r.read_tag();
    Kind kind;
    switch (tag) {
      case kBytesListTag: kind = Kind::kBytes; break;
      case kFloatListTag: kind = Kind::kFloat; break;
      case kInt64ListTag: kind = Kind::kInt64; break;
      default: r.skip_field(tag, kFeatureBudget); continue;
    }
    on_segment(kind, r.read_len(), r);
  }
}

// Walks one serialized list message of `kind`, calling on_value with each value: string_view for
// bytes, int64_t, float. Malformed bytes throw (via r's record base).
template <typename OnValue>
void walk_list(Kind kind, const pw::Reader& parent, std::string_view list, OnValue&& on_value) {
  pw::Reader r = parent.sub(list);
  while (!r.done()) {
    uint32_t tag = r.read_tag();
    if (kind == Kind::kBytes && tag == kField1Len) {
      on_value(r.read_len());
    } else if (kind == Kind::kInt64 && tag == kField1Len) {
      pw::Reader packed = r.sub(r.read_len());
      while (!packed.done()) on_value(static_cast<int64_t>(packed.read_varint()));
    } else if (kind == Kind::kInt64 && tag == kUnpackedInt64Tag) {
      on_value(static_cast<int64_t>(r.read_varint()));
    } else if (kind == Kind::kFloat && tag == kField1Len) {
      std::string_view packed = r.read_len();
      if (packed.size() % 4 != 0) r.fail(packed.data(), str("packed float list of ", packed.size(), " bytes"));
      for (size_t i = 0; i < packed.size(); i += 4) on_value(std::bit_cast<float>(load32(packed.data() + i)));
    } else if (kind == Kind::kFloat && tag == kUnpackedFloatTag) {
      on_value(std::bit_cast<float>(r.read_fixed32()));
    } else {
      r.skip_field(tag, kListBudget);
    }
  }
}

struct Entry {
  std::string_view key;  // the last key field; "" when there is none
  Kind kind = Kind::kMissing;
  std::string_view first;  // the first list of the final run
  bool split = false;
  std::string_view body;  // the whole map entry
};

// Validates one map entry and summarizes it.
Entry scan_entry(const pw::Reader& parent, std::string_view body) {
  Entry e;
  e.body = body;
  pw::Reader r = parent.sub(body);
  while (!r.done()) {
    uint32_t tag = r.read_tag();
    if (tag == kField1Len) {
      e.key = r.read_len();
      if (!pw::valid_utf8(e.key)) [[unlikely]]
        r.fail(e.key.data(), "feature key is not valid UTF-8");
    } else if (tag == kField2Len) {
      walk_feature(r.sub(r.read_len()), [&](Kind kind, std::string_view list, const pw::Reader& fr) {
        walk_list(kind, fr, list, [](auto) {});  // validation only
        if (kind != e.kind) {
          e.kind = kind;
          e.first = list;
          e.split = false;
        } else {
          e.split = true;
        }
      });
    } else {
      r.skip_field(tag, kEntryBudget);
    }
  }
  return e;
}

FeatureView view_of(const Entry& e) {
  if (e.split) return FeatureView::make_split(e.kind, e.first, e.body);
  return FeatureView::make(e.kind, e.first);
}

// Validates the whole record, calling on_entry(Entry) for every map entry in wire order.
template <typename OnEntry>
void walk_example(std::string_view record, OnEntry&& on_entry) {
  if (record.size() > static_cast<size_t>(INT32_MAX)) [[unlikely]]
    throw FormatError(str("malformed tf.Example: record of ", record.size(), " bytes exceeds protobuf's 2 GiB limit"));
  pw::Reader r(record.data(), record);
  while (!r.done()) {
    uint32_t tag = r.read_tag();
    if (tag != kField1Len) {
      r.skip_field(tag, kExampleBudget);
      continue;
    }
    pw::Reader features = r.sub(r.read_len());
    while (!features.done()) {
      uint32_t ftag = features.read_tag();
      if (ftag == kField1Len) {
        on_entry(scan_entry(features, features.read_len()));
      } else {
        features.skip_field(ftag, kFeaturesBudget);
      }
    }
  }
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kBytes: return "bytes_list";
    case Kind::kFloat: return "float_list";
    case Kind::kInt64: return "int64_list";
    default: return "missing";
  }
}

}  // namespace

// ---- FeatureView ----

namespace {

// Calls on_value for every value of the view (all parts of a split list), whose kind must be `want`.
template <typename OnValue>
void walk_values(const FeatureView& v, Kind want, OnValue&& on_value) {
  if (v.kind() != want) [[unlikely]]
    throw FormatError(str("feature is ", kind_name(v.kind()), ", not ", kind_name(want)));
  if (!v.is_split()) {
    walk_list(want, pw::Reader(v.list_bytes().data(), v.list_bytes()), v.list_bytes(), on_value);
    return;
  }
  // Every list of the final kind from the first one on belongs to the run: a list of another kind
  // after it would have changed the Feature's kind.
  const char* run_start = v.list_bytes().data();
  pw::Reader entry(v.split_entry().data(), v.split_entry());
  while (!entry.done()) {
    uint32_t tag = entry.read_tag();
    if (tag != kField2Len) {
      entry.skip_field(tag, kEntryBudget);
      continue;
    }
    walk_feature(entry.sub(entry.read_len()), [&](Kind kind, std::string_view list, const pw::Reader& fr) {
      if (kind == want && list.data() >= run_start) walk_list(want, fr, list, on_value);
    });
  }
}

// The usual encoding of a one-value list: nothing but one field 1 (tag 0x0a, 1- or 2-byte length).
bool only_field1(std::string_view list, std::string_view* payload) {
  const auto* p = reinterpret_cast<const uint8_t*>(list.data());
  if (list.size() < 2 || p[0] != 0x0a) return false;
  size_t n = p[1], header = 2;
  if (n >= 0x80) {
    if (list.size() < 3 || p[2] >= 0x80) return false;
    n = (n & 0x7f) | size_t{p[2]} << 7;
    header = 3;
  }
  if (list.size() - header != n) return false;
  *payload = list.substr(header);
  return true;
}

template <typename T>
T single_value(const FeatureView& v, Kind want, std::string_view key) {
  if (v.kind() != want) [[unlikely]]
    throw FormatError(str("feature '", key, "' is ", kind_name(v.kind()), ", expected one value of ", kind_name(want)));
  std::string_view payload;
  if (!v.is_split() && only_field1(v.list_bytes(), &payload)) {
    if constexpr (std::is_same_v<T, std::string_view>) {
      return payload;
    } else if constexpr (std::is_same_v<T, float>) {
      if (payload.size() == 4) return std::bit_cast<float>(load32(payload.data()));
    } else {
      // One packed varint: it ends at the payload's last byte and nowhere before.
      uint64_t x = 0;
      for (size_t i = 0; i < payload.size() && i < 10; ++i) {
        uint64_t b = static_cast<uint8_t>(payload[i]);
        x |= (b & 0x7f) << (7 * i);
        if (b < 0x80) {
          if (i + 1 == payload.size()) return static_cast<int64_t>(x);
          break;
        }
      }
    }
  }
  T value{};
  size_t count = 0;
  walk_values(v, want, [&](auto x) {
    if constexpr (std::is_same_v<decltype(x), T>) value = x;
    ++count;
  });
  if (count != 1) [[unlikely]]
    throw FormatError(str("feature '", key, "' has ", count, " values, expected exactly one"));
  return value;
}

}  // namespace

size_t FeatureView::size() const {
  if (kind_ == Kind::kMissing) return 0;
  size_t n = 0;
  walk_values(*this, kind_, [&](auto) { ++n; });
  return n;
}

std::vector<std::string_view> FeatureView::bytes_values() const {
  std::vector<std::string_view> out;
  walk_values(*this, Kind::kBytes, [&](auto x) {
    if constexpr (std::is_same_v<decltype(x), std::string_view>) out.push_back(x);
  });
  return out;
}

std::vector<int64_t> FeatureView::int64_values() const {
  std::vector<int64_t> out;
  walk_values(*this, Kind::kInt64, [&](auto x) {
    if constexpr (std::is_same_v<decltype(x), int64_t>) out.push_back(x);
  });
  return out;
}

std::vector<float> FeatureView::float_values() const {
  std::vector<float> out;
  walk_values(*this, Kind::kFloat, [&](auto x) {
    if constexpr (std::is_same_v<decltype(x), float>) out.push_back(x);
  });
  return out;
}

std::string_view FeatureView::single_bytes(std::string_view key) const {
  return single_value<std::string_view>(*this, Kind::kBytes, key);
}
int64_t FeatureView::single_int64(std::string_view key) const { return single_value<int64_t>(*this, Kind::kInt64, key); }
float FeatureView::single_float(std::string_view key) const { return single_value<float>(*this, Kind::kFloat, key); }

// ---- ExampleParser ----

namespace {

// memcmp(a, b, n) == 0 for short keys, without a library call: eight bytes at a time, the last
// (overlapping) eight bytes for the tail.
bool same_bytes(const char* a, const char* b, size_t n) {
  if (n < 8) {
    for (size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  uint64_t x, y;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    std::memcpy(&x, a + i, 8);
    std::memcpy(&y, b + i, 8);
    if (x != y) return false;
  }
  std::memcpy(&x, a + n - 8, 8);
  std::memcpy(&y, b + n - 8, 8);
  return x == y;
}

}  // namespace

ExampleParser::ExampleParser(std::vector<std::string> keys) : keys_(std::move(keys)) {
  for (size_t i = 0; i < keys_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (keys_[i] == keys_[j]) distinct_keys_ = false;
}

void ExampleParser::parse(std::string_view record, std::span<FeatureView> out) const {
  FASTNN_CHECK(out.size() == keys_.size(), "ExampleParser::parse: ", out.size(), " outputs for ", keys_.size(), " keys");
  for (FeatureView& v : out) v = FeatureView();
  const std::string* keys = keys_.data();
  const size_t n = keys_.size();
  walk_example(record, [&](const Entry& e) {
    for (size_t i = 0; i < n; ++i) {
      if (keys[i].size() == e.key.size() && same_bytes(keys[i].data(), e.key.data(), e.key.size())) {
        out[i] = view_of(e);
        if (distinct_keys_) break;
      }
    }
  });
}

void for_each_feature(std::string_view record,
                      const std::function<void(std::string_view, const FeatureView&)>& fn) {
  walk_example(record, [](const Entry&) {});  // throw before reporting anything
  walk_example(record, [&](const Entry& e) { fn(e.key, view_of(e)); });
}

}  // namespace fastnn
