// TFRecord framing and the buffered writer (plain, GZIP, ZLIB).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/check.h"
#include "core/compression.h"
#include "core/crc32c.h"
#include "core/tfrecord.h"

namespace fastnn {
namespace {

void put_le64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void put_le32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

void frame_header(char (&h)[12], uint64_t size) {
  put_le64(h, size);
  put_le32(h + 8, crc32c_mask(crc32c(h, 8)));
}

void frame_footer(char (&f)[4], std::string_view record) { put_le32(f, crc32c_mask(crc32c(record))); }

// Frames are gathered into chunks of this size before they are written or compressed; records at
// least this large go out directly, without a copy. Small enough that a converter holding hundreds
// of shard writers open stays modest in memory, large enough that write() calls are few.
constexpr size_t kWriteChunk = size_t{256} << 10;

}  // namespace

void append_tfrecord_frame(std::string* out, std::string_view record) {
  char h[12], f[4];
  frame_header(h, record.size());
  frame_footer(f, record);
  out->append(h, sizeof h);
  out->append(record);
  out->append(f, sizeof f);
}

struct TFRecordWriter::Impl {
  std::string path;
  int fd = -1;
  std::unique_ptr<Deflater> deflater;
  std::string pending;  // framed, uncompressed, not yet written
  std::string zout;     // compressed, not yet written
  uint64_t records = 0, bytes = 0;
  bool closed = false, failed = false;

  void write_fd(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd, p, std::min(n, size_t{1} << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        if (w == 0) errno = EIO;
        failed = true;
        throw_io_error(path, "write");
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }

  // Uncompressed bytes on their way to the file.
  void emit(const char* p, size_t n) {
    if (!deflater) return write_fd(p, n);
    while (n > 0) {
      const size_t k = std::min(n, kWriteChunk);
      deflater->compress(p, k, &zout);
      p += k;
      n -= k;
      if (zout.size() >= kWriteChunk) {
        write_fd(zout.data(), zout.size());
        zout.clear();
      }
    }
  }

  void flush_pending() {
    if (pending.empty()) return;
    emit(pending.data(), pending.size());
    pending.clear();
  }
};

TFRecordWriter::TFRecordWriter(const std::string& path, Compression compression, int compression_level)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  if (compression != Compression::kNone) impl_->deflater = std::make_unique<Deflater>(compression, compression_level);
  impl_->fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (impl_->fd < 0) throw_io_error(path, "create");
}

TFRecordWriter::~TFRecordWriter() {
  try {
    close();
  } catch (...) {  // documented: call close() to see errors
  }
}

void TFRecordWriter::write(std::string_view record) {
  Impl& w = *impl_;
  FASTNN_CHECK(!w.closed, w.path, ": TFRecordWriter::write after close()");
  if (w.failed) throw IoError(str(w.path, ": cannot write: an earlier write failed"));
  if (record.size() < kWriteChunk) {
    append_tfrecord_frame(&w.pending, record);
    if (w.pending.size() >= kWriteChunk) w.flush_pending();
  } else {
    w.flush_pending();
    char h[12], f[4];
    frame_header(h, record.size());
    frame_footer(f, record);
    w.emit(h, sizeof h);
    w.emit(record.data(), record.size());
    w.emit(f, sizeof f);
  }
  ++w.records;
  w.bytes += tfrecord_frame_size(record.size());
}

void TFRecordWriter::flush() {
  Impl& w = *impl_;
  FASTNN_CHECK(!w.closed, w.path, ": TFRecordWriter::flush after close()");
  if (w.failed) throw IoError(str(w.path, ": cannot write: an earlier write failed"));
  w.flush_pending();
  if (!w.zout.empty()) {
    w.write_fd(w.zout.data(), w.zout.size());
    w.zout.clear();
  }
}

void TFRecordWriter::close() {
  Impl& w = *impl_;
  if (w.closed) return;
  w.closed = true;
  try {
    if (!w.failed) {
      w.flush_pending();
      if (w.deflater) {
        w.deflater->finish(&w.zout);
        w.write_fd(w.zout.data(), w.zout.size());
        w.zout.clear();
      }
    }
  } catch (...) {
    ::close(w.fd);
    w.fd = -1;
    throw;
  }
  const int rc = ::close(w.fd);
  w.fd = -1;
  if (rc != 0) throw_io_error(w.path, "close");
  if (w.failed) throw IoError(str(w.path, ": not all records were written (an earlier write failed)"));
}

uint64_t TFRecordWriter::records_written() const { return impl_->records; }
uint64_t TFRecordWriter::bytes_written() const { return impl_->bytes; }

}  // namespace fastnn
