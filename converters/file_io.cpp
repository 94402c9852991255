#include "converters/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/check.h"
#include "core/input_file.h"

namespace fastnn::converters {

uint64_t file_size(const std::string& path) {
  return require_regular_file(path);
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void read_exact(int fd, uint64_t offset, void* out, size_t n, const std::string& path) {
  size_t done = 0;
  auto* p = static_cast<char*>(out);
  while (done < n) {
    ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_io_error(path, str("read at offset ", offset + done));
    }
    if (r == 0)
      throw FormatError(str(path, ": offset ", offset, ": file ends after ", done, " of ", n,
                            " bytes (did it change since it was scanned?)"));
    done += static_cast<size_t>(r);
  }
}

Fd::Fd(const std::string& path) : fd_(open_regular_file(path)) {}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

std::string read_file_prefix(const std::string& path, size_t max_bytes) {
  Fd fd(path);
  std::string out(max_bytes, '\0');
  size_t done = 0;
  while (done < max_bytes) {
    ssize_t r = ::read(fd.get(), out.data() + done, max_bytes - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_io_error(path, "read");
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

std::string read_whole_file(const std::string& path, uint64_t max_bytes) {
  return read_regular_file(path, max_bytes);
}

FileHandles::~FileHandles() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

void FileHandles::read(uint32_t file, uint64_t offset, void* out, size_t n) {
  FASTNN_CHECK(file < paths_->size(), "file index ", file, " out of range");
  if (fds_.size() < paths_->size()) fds_.resize(paths_->size(), -1);
  if (fds_[file] < 0) {
    fds_[file] = open_regular_file((*paths_)[file]);
  }
  read_exact(fds_[file], offset, out, n, (*paths_)[file]);
}

}  // namespace fastnn::converters
