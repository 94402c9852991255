// Helpers for the converter tests: temporary folders, reading a converted shard set back with the
// core reader and parser, IDX writing.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "converters/convert.h"
#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "core/manifest.h"
#include "core/tfrecord.h"

namespace fastnn::converters::testing {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fastnn_conv_XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

inline void write_file(const std::string& path, std::string_view bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Names in a folder that are not hidden (the names a finished conversion would have).
inline std::set<std::string> visible_names(const std::string& dir) {
  std::set<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n[0] != '.') out.insert(n);
  }
  return out;
}
// Everything except the lock file (temporaries included).
inline std::set<std::string> names_except_lock(const std::string& dir) {
  std::set<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string n = e.path().filename().string();
    if (n != ".fastnn.lock") out.insert(n);
  }
  return out;
}

struct Record {
  std::string shard;
  size_t shard_index = 0;
  std::string encoded;
  std::string format;
  int64_t label = -1, coarse = -1, height = 0, width = 0, channels = 0;
};

// Every record of a split, in shard order then file order.
inline std::vector<Record> read_split(const std::string& dir, const Manifest& m, const std::string& split) {
  std::vector<Record> out;
  const SplitInfo* s = m.find_split(split);
  EXPECT_NE(s, nullptr) << split;
  if (!s) return out;
  ExampleParser parser({keys::kImageEncoded, keys::kImageFormat, keys::kLabel, keys::kCoarseLabel, keys::kHeight,
                        keys::kWidth, keys::kChannels});
  TFRecordReaderOptions ro;
  ro.compression = parse_compression(m.compression);
  for (size_t k = 0; k < s->shards.size(); ++k) {
    TFRecordReader reader(dir + "/" + s->shards[k].file, ro);
    std::string_view rec;
    while (reader.next(&rec)) {
      FeatureView f[7];
      parser.parse(rec, f);
      Record r;
      r.shard = s->shards[k].file;
      r.shard_index = k;
      r.encoded = std::string(f[0].single_bytes(keys::kImageEncoded));
      r.format = std::string(f[1].single_bytes(keys::kImageFormat));
      r.label = f[2].single_int64(keys::kLabel);
      if (f[3].present()) r.coarse = f[3].single_int64(keys::kCoarseLabel);
      r.height = f[4].single_int64(keys::kHeight);
      r.width = f[5].single_int64(keys::kWidth);
      r.channels = f[6].single_int64(keys::kChannels);
      out.push_back(std::move(r));
    }
  }
  return out;
}

// Records per shard, as read.
inline std::vector<size_t> shard_sizes(const std::vector<Record>& records, size_t shards) {
  std::vector<size_t> n(shards, 0);
  for (const Record& r : records) ++n[r.shard_index];
  return n;
}

// The bytes of every file a conversion wrote (for byte-identity checks).
inline std::map<std::string, std::string> all_files(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const std::string& n : visible_names(dir)) out[n] = read_file(dir + "/" + n);
  return out;
}

inline ConvertOptions options_for(const std::string& out, int64_t gpus, int64_t shards_per_gpu, uint64_t seed = 1) {
  ConvertOptions o;
  o.output = out;
  o.num_gpus = gpus;
  o.shards_per_gpu = shards_per_gpu;
  o.seed = seed;
  o.quiet = true;
  o.threads = 2;
  return o;
}

// An IDX file of unsigned bytes: header + data.
inline std::string idx_bytes(const std::vector<uint32_t>& dims, std::string_view data) {
  std::string s = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int b = 3; b >= 0; --b) s += static_cast<char>((d >> (8 * b)) & 0xff);
  s.append(data);
  return s;
}

inline std::string random_string(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Expects `fn` to throw a fastnn::Error whose message contains every needle.
template <typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning " << *needles.begin();
  } catch (const Error& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

}  // namespace fastnn::converters::testing
