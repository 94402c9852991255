// Small POSIX file helpers for sources: exact positional reads with errors naming file and offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fastnn::converters {

// Size of a regular file; IoError if it cannot be stat'ed or is not a regular file (a FIFO, a folder...).
// Every opener here goes through core/input_file.h: only regular files are opened.
uint64_t file_size(const std::string& path);
// Whether anything is at `path`: a FIFO or folder under that name is then refused by name when it is
// opened.
bool path_exists(const std::string& path);

// pread(2) until `n` bytes are read. A short read (the file shrank since it was scanned) throws
// FormatError "PATH: offset O: file ends after K of N bytes"; a failed read throws IoError.
void read_exact(int fd, uint64_t offset, void* out, size_t n, const std::string& path);
// Reads at most `max_bytes` from the start of the file (all of it if smaller).
std::string read_file_prefix(const std::string& path, size_t max_bytes);
// The whole file, which must be at most `max_bytes` (FormatError otherwise).
std::string read_whole_file(const std::string& path, uint64_t max_bytes);

// Open descriptors for a list of files, opened on first use, closed by the destructor. One per
// thread (encoders own one each).
class FileHandles {
 public:
  explicit FileHandles(const std::vector<std::string>* paths) : paths_(paths) {}
  ~FileHandles();
  FileHandles(const FileHandles&) = delete;
  FileHandles& operator=(const FileHandles&) = delete;

  void read(uint32_t file, uint64_t offset, void* out, size_t n);

 private:
  const std::vector<std::string>* paths_;
  std::vector<int> fds_;
};

// RAII file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(const std::string& path);  // open_regular_file (core/input_file.h); IoError on failure
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

}  // namespace fastnn::converters
