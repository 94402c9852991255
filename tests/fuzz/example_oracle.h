// Differential oracle for the Example codec: fastnn's parser and builder against libprotobuf 3.21
// (tensorflow::Example from schemas/). Used by the fuzz target and the differential unit test.
//
// check_against_libprotobuf(bytes, parser) returns "" when they agree, else the first disagreement:
//   - ExampleParser::parse, for_each_feature and Example::ParseFromArray all accept or all reject
//     (ours rejecting means FormatError; any other exception is a disagreement);
//   - when accepted: for_each_feature's features, last occurrence of a key winning, are exactly
//     libprotobuf's map (kind, values, floats bit for bit; a Feature with no list set is kMissing);
//     the parser's views equal those; size(), *_values() and single_*() agree with the values
//     (single_* throws FormatError naming the key unless there is exactly one value of that kind);
//   - rebuilding the features with ExampleBuilder gives byte for byte libprotobuf's deterministic
//     serialization of the parsed message (unknown fields and list-less features dropped).
#pragma once

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/example.h"
#include "schemas/example.pb.h"

namespace fastnn::oracle {

inline std::string deterministic_bytes(const google::protobuf::Message& m) {
  std::string s;
  {
    google::protobuf::io::StringOutputStream sos(&s);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&cos);
  }
  return s;
}

template <typename Fn>
bool throws_format_error_naming(Fn&& fn, std::string_view key) {
  try {
    fn();
  } catch (const FormatError& e) {
    // what() is a C string: a key with a NUL byte can only be found up to it.
    return std::string_view(e.what()).find(key.substr(0, key.find('\0'))) != std::string_view::npos;
  }
  return false;
}

// Compares one view with libprotobuf's Feature; "" when equal.
inline std::string compare_feature(std::string_view key, const FeatureView& v, const tensorflow::Feature& f) {
  using K = FeatureView::Kind;
  auto where = [&](const std::string& what) { return str("key '", key, "': ", what); };
  K want = K::kMissing;
  size_t count = 0;
  switch (f.kind_case()) {
    case tensorflow::Feature::kBytesList: want = K::kBytes; count = static_cast<size_t>(f.bytes_list().value_size()); break;
    case tensorflow::Feature::kFloatList: want = K::kFloat; count = static_cast<size_t>(f.float_list().value_size()); break;
    case tensorflow::Feature::kInt64List: want = K::kInt64; count = static_cast<size_t>(f.int64_list().value_size()); break;
    default: break;
  }
  if (v.kind() != want) return where(str("kind ", static_cast<int>(v.kind()), " vs libprotobuf ", static_cast<int>(want)));
  if (v.size() != count) return where(str("size ", v.size(), " vs libprotobuf ", count));
  if (want == K::kBytes) {
    auto values = v.bytes_values();
    for (size_t i = 0; i < count; ++i)
      if (values[i] != f.bytes_list().value(static_cast<int>(i))) return where(str("bytes value ", i, " differs"));
    if (count == 1 && v.single_bytes(key) != values[0]) return where("single_bytes differs");
  } else if (want == K::kInt64) {
    auto values = v.int64_values();
    for (size_t i = 0; i < count; ++i)
      if (values[i] != f.int64_list().value(static_cast<int>(i)))
        return where(str("int64 value ", i, ": ", values[i], " vs ", f.int64_list().value(static_cast<int>(i))));
    if (count == 1 && v.single_int64(key) != values[0]) return where("single_int64 differs");
  } else if (want == K::kFloat) {
    auto values = v.float_values();
    for (size_t i = 0; i < count; ++i)
      if (std::bit_cast<uint32_t>(values[i]) != std::bit_cast<uint32_t>(f.float_list().value(static_cast<int>(i))))
        return where(str("float value ", i, " differs"));
    if (count == 1 && std::bit_cast<uint32_t>(v.single_float(key)) != std::bit_cast<uint32_t>(values[0]))
      return where("single_float differs");
  }
  // The single-value accessors refuse, naming the key, unless there is exactly one value of their kind.
  if (!(want == K::kBytes && count == 1) && !throws_format_error_naming([&] { v.single_bytes(key); }, key))
    return where("single_bytes did not throw");
  if (!(want == K::kInt64 && count == 1) && !throws_format_error_naming([&] { v.single_int64(key); }, key))
    return where("single_int64 did not throw");
  if (!(want == K::kFloat && count == 1) && !throws_format_error_naming([&] { v.single_float(key); }, key))
    return where("single_float did not throw");
  if (want != K::kInt64 && !throws_format_error_naming([&] { v.int64_values(); }, "")) return where("int64_values did not throw");
  return "";
}

// ExampleBuilder input for a view (never kMissing).
inline void add_to_builder(ExampleBuilder& b, std::string key, const FeatureView& v) {
  switch (v.kind()) {
    case FeatureView::Kind::kBytes: {
      auto values = v.bytes_values();
      b.add_bytes_list(std::move(key), values);
      break;
    }
    case FeatureView::Kind::kInt64: b.add_int64_list(std::move(key), v.int64_values()); break;
    case FeatureView::Kind::kFloat: b.add_float_list(std::move(key), v.float_values()); break;
    default: break;
  }
}

inline std::string check_against_libprotobuf(std::string_view bytes, const ExampleParser& parser) {
  tensorflow::Example ex;
  const bool pb_ok = bytes.size() <= INT32_MAX && ex.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));

  std::vector<FeatureView> views(parser.keys().size());
  bool parse_ok = true;
  std::string parse_error;
  try {
    parser.parse(bytes, views);
  } catch (const FormatError& e) {
    parse_ok = false;
    parse_error = e.what();
  }
  std::map<std::string, FeatureView> last;  // for_each_feature, last occurrence wins
  bool each_ok = true;
  size_t calls = 0;
  try {
    for_each_feature(bytes, [&](std::string_view k, const FeatureView& v) {
      last[std::string(k)] = v;
      ++calls;
    });
  } catch (const FormatError&) {
    each_ok = false;
  }
  if (parse_ok != each_ok) return str("parse() ", parse_ok ? "accepts" : "rejects", " but for_each_feature ", each_ok ? "accepts" : "rejects");
  if (!each_ok && calls != 0) return "for_each_feature called fn before rejecting the record";
  if (parse_ok != pb_ok)
    return str("fastnn ", parse_ok ? "accepts" : str("rejects (", parse_error, ")"), " but libprotobuf ", pb_ok ? "accepts" : "rejects");
  if (!pb_ok) return "";

  const auto& map = ex.features().feature();
  if (map.size() != last.size()) return str(last.size(), " distinct keys vs libprotobuf's ", map.size());
  for (const auto& [key, view] : last) {
    auto it = map.find(key);
    if (it == map.end()) return str("key '", key, "' unknown to libprotobuf");
    if (std::string d = compare_feature(key, view, it->second); !d.empty()) return d;
  }
  for (size_t i = 0; i < views.size(); ++i) {
    const std::string& key = parser.keys()[i];
    auto it = map.find(key);
    std::string d = compare_feature(key, views[i], it == map.end() ? tensorflow::Feature() : it->second);
    if (!d.empty()) return "parse(): " + d;
  }

  // The builder writes what libprotobuf's deterministic serializer writes for the same features.
  tensorflow::Example clean = ex;
  clean.DiscardUnknownFields();
  auto* cmap = clean.mutable_features()->mutable_feature();
  ExampleBuilder builder;
  for (const auto& [key, view] : last) {
    if (view.kind() == FeatureView::Kind::kMissing) {
      cmap->erase(key);
    } else {
      add_to_builder(builder, key, view);
    }
  }
  if (builder.serialize() != deterministic_bytes(clean)) return "ExampleBuilder bytes differ from libprotobuf's deterministic serialization";
  return "";
}

}  // namespace fastnn::oracle
