// Helper for tests/python/test_example_conformance.py (an independent reader/writer in Python).
//
//   example_tool write FILE   writes the fixed records below (ExampleBuilder, TFRecordWriter)
//   example_tool dump FILE    prints one JSON line per record of a plain TFRecord file:
//                             {"features": {key: {"kind": "bytes"|"int64"|"float"|"missing",
//                                                  "values": [hex string | integer | float bits]}}}
//                             (a key repeated in a record: the last one, as protobuf maps do)
//
// The fixed records are defined by the same formulas in the Python test (expected_records()).
// Exit status: 0 ok, 1 a fastnn::Error (message on stderr), 2 usage or internal disagreement.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/example.h"
#include "core/tfrecord.h"

namespace {

using namespace fastnn;

constexpr int kRecords = 5;

std::vector<int64_t> int64_pool() {
  return {0, -1, 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), int64_t{1} << 31,
          -(int64_t{1} << 31), 300, -300, 1234567890123};
}

std::vector<float> float_pool() {
  return {0.0f, -0.0f, 1.5f, -2.25f, std::numeric_limits<float>::max(), std::numeric_limits<float>::min(),
          std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
}

std::string record(int i) {
  ExampleBuilder b;
  std::string image(static_cast<size_t>(100 * i + 1), '\0');
  for (size_t j = 0; j < image.size(); ++j) image[j] = static_cast<char>((i * 37 + static_cast<int>(j)) & 0xff);
  b.add_bytes(keys::kImageEncoded, image);
  b.add_bytes(keys::kImageFormat, "png");
  b.add_int64(keys::kLabel, i);
  auto ints = int64_pool();
  auto floats = float_pool();
  b.add_int64_list("ints", std::span<const int64_t>(ints.data(), static_cast<size_t>(2 + 2 * i)));
  b.add_float_list("floats", std::span<const float>(floats.data(), static_cast<size_t>(2 + 2 * i)));
  b.add_int64_list("empty_int64", {});
  b.add_bytes_list("empty_bytes", {});
  std::vector<std::string_view> strings = {"", "a", std::string_view("\0\xff", 2), "\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87"};
  b.add_bytes_list("strings", strings);
  b.add_int64("\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87/\xc3\xa9", i);
  if (i == kRecords - 1) {  // many features, and a value needing a 3-byte length
    for (int k = 0; k < 50; ++k) b.add_float(str("f/", k / 10, k % 10), static_cast<float>(k) * 0.5f);
    std::string big(100000, '\0');
    for (size_t j = 0; j < big.size(); ++j) big[j] = static_cast<char>((j * 7) & 0xff);
    b.add_bytes("big", big);
  }
  return b.serialize();
}

std::string hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

nlohmann::json feature_json(const FeatureView& v) {
  nlohmann::json values = nlohmann::json::array();
  const char* kind = "missing";
  switch (v.kind()) {
    case FeatureView::Kind::kBytes:
      kind = "bytes";
      for (auto s : v.bytes_values()) values.push_back(hex(s));
      break;
    case FeatureView::Kind::kInt64:
      kind = "int64";
      for (int64_t x : v.int64_values()) values.push_back(x);
      break;
    case FeatureView::Kind::kFloat:
      kind = "float";
      for (float f : v.float_values()) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        values.push_back(bits);
      }
      break;
    default: break;
  }
  return {{"kind", kind}, {"values", values}};
}

int write(const std::string& path) {
  TFRecordWriter w(path);
  for (int i = 0; i < kRecords; ++i) w.write(record(i));
  w.close();
  return 0;
}

int dump(const std::string& path) {
  TFRecordReader reader(path);
  std::string_view rec;
  while (reader.next(&rec)) {
    std::map<std::string, FeatureView> last;
    for_each_feature(rec, [&](std::string_view key, const FeatureView& v) { last[std::string(key)] = v; });
    nlohmann::json features = nlohmann::json::object();
    std::vector<std::string> keys;
    for (const auto& [key, v] : last) {
      features[key] = feature_json(v);
      keys.push_back(key);
    }
    // The parser, asked for every key, must see what for_each_feature saw.
    ExampleParser parser(keys);
    std::vector<FeatureView> views(keys.size());
    parser.parse(rec, views);
    for (size_t k = 0; k < keys.size(); ++k) {
      if (feature_json(views[k]) != features[keys[k]]) {
        std::cerr << "example_tool: record " << reader.record_index() << ": ExampleParser and for_each_feature disagree on '"
                  << keys[k] << "'\n";
        return 2;
      }
    }
    std::cout << nlohmann::json{{"features", features}}.dump() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "write") != 0 && std::strcmp(argv[1], "dump") != 0)) {
    std::cerr << "usage: example_tool write|dump FILE\n";
    return 2;
  }
  try {
    return std::strcmp(argv[1], "write") == 0 ? write(argv[2]) : dump(argv[2]);
  } catch (const fastnn::Error& e) {
    std::cerr << "example_tool: " << e.what() << "\n";
    return 1;
  }
}
