// Opening untrusted input files: only regular files are ever opened for reading.
//
// Every reader of a file fastnn did not just write itself (shards, manifests, labels.txt, class-name
// files, configs, images, IDX/CIFAR/base64-TSV sources, checkpoints) opens it through this header, so
// that a FIFO, a device, a socket or a folder standing where a file is expected is refused at once,
// naming the path and what it is, instead of blocking forever in open(2)/read(2) (a FIFO with no
// writer) or failing later with a confusing message (EISDIR). Order: stat(2) (follows symlinks) is
// checked before the open; the open uses O_NONBLOCK so that even a FIFO swapped in between cannot
// block it; fstat(2) of the opened descriptor is checked again (the thing actually opened); then
// O_NONBLOCK is cleared. Sizes come from that fstat, so callers bound them before reading.
//
// Errors: IoError "PATH: is a FIFO, not a regular file" (or a folder, a character device, ...) and
// IoError with strerror for a failed stat/open/read; FormatError "PATH: N bytes, more than the limit
// of M" from read_regular_file. Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>

namespace fastnn {

// "a FIFO", "a folder", "a character device", "a block device", "a socket", "a regular file", ...
const char* file_kind_name(unsigned mode);

// Opens `path` read-only (O_CLOEXEC) as a regular file; the caller owns the descriptor. `size`, when
// given, receives the file's size from the fstat of the opened descriptor.
int open_regular_file(const std::string& path, uint64_t* size = nullptr);

// Throws unless `path` (symlinks followed) is a regular file; returns its size. For libraries that
// open by name themselves; prefer open_regular_file, which also checks what it opened.
uint64_t require_regular_file(const std::string& path);

// The whole file, which must be a regular file of at most `max_bytes` bytes (checked before any
// byte is read or allocated).
std::string read_regular_file(const std::string& path, uint64_t max_bytes);

// An open regular file (RAII over open_regular_file).
class InputFile {
 public:
  InputFile() = default;
  explicit InputFile(const std::string& path) { fd_ = open_regular_file(path, &size_); }
  ~InputFile();
  InputFile(InputFile&& o) noexcept : fd_(o.fd_), size_(o.size_) { o.fd_ = -1; }
  InputFile& operator=(InputFile&& o) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // at open time
  // Gives up ownership (for APIs that take a descriptor and close it, like gzdopen).
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace fastnn
