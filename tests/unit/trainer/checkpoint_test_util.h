// Helpers shared by the checkpoint_* tests: scratch directories, file bytes, row shard slices' metadata.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/row_shards.h"

namespace fastnn::testing_util {

// The names of the entries of `dir`.
inline std::set<std::string> files_in(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// Manager options for tests: no fsync (tmpfs/overlay in CI; RoundTrip covers the fsync path).
inline checkpoint::CheckpointManager::Options quick_manager_options(int keep_max = 5) {
  checkpoint::CheckpointManager::Options o;
  o.keep_max = keep_max;
  o.fsync = false;
  return o;
}

// `v` as 8 little-endian bytes (safetensors' header length).
inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

// A fresh directory under the temp dir, removed when the test ends.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    path_ = (std::filesystem::temp_directory_path() / ("fastnn-" + tag + "-" + std::to_string(::getpid()) + "-" +
                                                        std::to_string(counter()++)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Each slice's name, global shape, row range, count and optimizer flag: everything but the data (what a
// runner's sharded_row_layout() keeps of its sharded_rows()), comparable with EXPECT_EQ.
using SliceMetadata = std::tuple<std::string, std::vector<int64_t>, int64_t, int64_t, size_t, bool>;
inline std::vector<SliceMetadata> slice_metadata(const std::vector<checkpoint::RowShardSlice>& slices) {
  std::vector<SliceMetadata> out;
  for (const checkpoint::RowShardSlice& s : slices)
    out.emplace_back(s.name, s.global_shape, s.row_begin, s.row_end, s.count, s.optimizer);
  return out;
}

}  // namespace fastnn::testing_util
