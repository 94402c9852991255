#include "core/line_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace fastnn {
namespace {
constexpr size_t kChunk = size_t{1} << 16;
}  // namespace

LineReader::LineReader(const std::string& path, size_t max_line_bytes)
    : path_(path), file_(path), max_line_bytes_(max_line_bytes) {}

// Appends up to kChunk bytes to buf_ (dropping what was consumed); false at the end of the file.
bool LineReader::fill() {
  if (eof_) return false;
  buf_.erase(0, pos_);
  pos_ = 0;
  const size_t old = buf_.size();
  buf_.resize(old + kChunk);
  ssize_t r;
  do {
    r = ::read(file_.fd(), buf_.data() + old, kChunk);
  } while (r < 0 && errno == EINTR);
  if (r < 0) throw_io_error(path_, "read");
  buf_.resize(old + static_cast<size_t>(r));
  if (r == 0) eof_ = true;
  return r > 0;
}

bool LineReader::next(std::string* line) {
  size_t scanned = pos_;  // buf_[pos_, scanned) holds no '\n'
  for (;;) {
    const void* nl = std::memchr(buf_.data() + scanned, '\n', buf_.size() - scanned);
    size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - buf_.data()) : buf_.size();
    if (end - pos_ > max_line_bytes_)
      throw FormatError(str(path_, ":", line_ + 1, ": line longer than ", max_line_bytes_, " bytes"));
    if (!nl) {
      const size_t unconsumed = buf_.size() - pos_;
      if (fill()) {  // fill() moved the unconsumed bytes to the front
        scanned = unconsumed;
        continue;
      }
      if (pos_ == buf_.size()) return false;
      end = buf_.size();  // the last line, without '\n'
    }
    line->assign(buf_, pos_, end - pos_);
    ended_ = nl != nullptr;
    pos_ = nl ? end + 1 : end;
    if (!line->empty() && line->back() == '\r') line->pop_back();
    ++line_;
    return true;
  }
}

}  // namespace fastnn
