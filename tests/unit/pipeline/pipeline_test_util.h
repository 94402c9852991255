// Helpers for the pipeline tests: scratch directories and small shard files with known contents.
#pragma once

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/example.h"
#include "core/tfrecord.h"
#include "pipeline/resample.h"

namespace fastnn::pipeline::testing {

// A fresh directory under the build tree, removed at the end of the test.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name) {
    path_ = std::filesystem::path(FASTNN_BINARY_DIR) / "test-scratch" / str(name, "-", ::getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// "f<file>r<record>": every record says where it came from.
inline std::string record_name(int file, int record) { return str("f", file, "r", record); }

// Writes files with the given record counts; record contents are record_name(file, record).
inline std::vector<std::string> write_named_shards(const ScratchDir& dir, const std::vector<int>& counts,
                                                   Compression compression = Compression::kNone) {
  std::vector<std::string> paths;
  for (size_t f = 0; f < counts.size(); ++f) {
    std::string p = dir.file(str("shard-", f, ".tfrecord"));
    TFRecordWriter w(p, compression);
    for (int r = 0; r < counts[f]; ++r) w.write(record_name(static_cast<int>(f), r));
    w.close();
    paths.push_back(p);
  }
  return paths;
}

// Flips one byte inside the data of record `record` of a plain shard of write_named_shards' 4-byte
// records (frames of 20 bytes: 12 of header, 4 of data, 4 of CRC).
inline void corrupt_record(const std::string& path, int record) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(record * 20 + 12 + 1);
  f.put('#');
}

// A tf.train.Example as fastnn's converters write it.
inline std::string image_example(std::string_view encoded, const char* format, int64_t label, int height = 0,
                                 int width = 0, int channels = 0) {
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, encoded);
  b.add_bytes(keys::kImageFormat, format);
  b.add_int64(keys::kLabel, label);
  if (height > 0) b.add_int64(keys::kHeight, height);
  if (width > 0) b.add_int64(keys::kWidth, width);
  if (channels > 0) b.add_int64(keys::kChannels, channels);
  return b.serialize();
}

// A file's bytes (the fixtures under tests/data); FASTNN_CHECK when it cannot be opened.
inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  FASTNN_CHECK(f.good(), "cannot open ", path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A random crop's window: inside the width x height image, at a whole-pixel offset.
inline ::testing::AssertionResult crop_inside(const Window& w, int width, int height) {
  if (w.x0 < 0 || w.y0 < 0 || w.x0 + w.w > width || w.y0 + w.h > height || w.x0 != std::floor(w.x0))
    return ::testing::AssertionFailure() << "window (" << w.x0 << ", " << w.y0 << ") " << w.w << "x" << w.h
                                         << " is not a whole-pixel crop of " << width << "x" << height;
  return ::testing::AssertionSuccess();
}

}  // namespace fastnn::pipeline::testing
