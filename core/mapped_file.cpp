#include "core/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <utility>

#include "core/check.h"
#include "core/input_file.h"

namespace fastnn {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  InputFile f(path);
  size_ = static_cast<size_t>(f.size());
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f.fd(), 0);
  if (p == MAP_FAILED) throw_io_error(path, "mmap");
  ::madvise(p, size_, MADV_SEQUENTIAL);  // a hint: checksums and copies read front to back
  map_ = p;
}

MappedFile::MappedFile(MappedFile&& o) noexcept { *this = std::move(o); }

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (map_) ::munmap(map_, size_);
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

}  // namespace fastnn
