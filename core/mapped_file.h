// A whole file mapped read-only into memory (mmap, MAP_PRIVATE), for readers of large files that a
// user brings (checkpoints): the page cache serves the bytes without a second copy.
//
// Only regular files are mapped (core/input_file.h's open); an empty file maps to an empty view. If
// another process truncates the file while it is mapped, reads past the new end fault (SIGBUS): map
// only files that are replaced by rename, never modified in place (checkpoints are).
// Threading: immutable after construction; any number of threads may read the bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace fastnn {

class MappedFile {
 public:
  MappedFile() = default;
  // IoError naming `path` if it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return path_; }
  std::string_view bytes() const { return {static_cast<const char*>(map_), size_}; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
};

}  // namespace fastnn
