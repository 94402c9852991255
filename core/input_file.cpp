#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/check.h"

namespace fastnn {
namespace {

[[noreturn]] void refuse(const std::string& path, unsigned mode) {
  throw IoError(str(path, ": is ", file_kind_name(mode), ", not a regular file"));
}

}  // namespace

const char* file_kind_name(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

uint64_t require_regular_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw_io_error(path, "open");
  if (!S_ISREG(st.st_mode)) refuse(path, st.st_mode);
  return static_cast<uint64_t>(st.st_size);
}

int open_regular_file(const std::string& path, uint64_t* size) {
  require_regular_file(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw_io_error(path, "open");
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    throw_io_error(path, "stat");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    refuse(path, st.st_mode);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  if (size) *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string read_regular_file(const std::string& path, uint64_t max_bytes) {
  InputFile f(path);
  if (f.size() > max_bytes) throw FormatError(str(path, ": ", f.size(), " bytes, more than the limit of ", max_bytes));
  std::string out(static_cast<size_t>(f.size()), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t r = ::read(f.fd(), out.data() + done, out.size() - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw_io_error(path, "read");
    }
    if (r == 0) break;  // shrank since the fstat: return what is there
    done += static_cast<size_t>(r);
  }
  out.resize(done);
  return out;
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

InputFile& InputFile::operator=(InputFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    size_ = o.size_;
    o.fd_ = -1;
  }
  return *this;
}

}  // namespace fastnn
