// Sequential TFRecord reader over a file or memory, plain or GZIP/ZLIB.
//
// Bytes arrive in large pieces (one read() or one inflate() fills the free part of a buffer) and
// records are returned as views into that buffer; the buffer grows only when a record does not fit.
// A record's length is trusted only after its CRC matches, and it is bounded by max_record_bytes
// and, where the size is known (plain files, memory), by the bytes that remain. For compressed
// streams the buffer grows geometrically as bytes really arrive, so a stream cut short never
// causes an allocation of the claimed length. Plain in-memory input is read in place (no copy).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/check.h"
#include "core/input_file.h"
#include "core/compression.h"
#include "core/crc32c.h"
#include "core/tfrecord.h"

namespace fastnn {
namespace {

constexpr size_t kHeader = 12, kFooter = 4;
constexpr uint64_t kUnknown = std::numeric_limits<uint64_t>::max();
constexpr size_t kMinBuffer = 64;
constexpr size_t kPage = 4096;

// A page-aligned buffer. read() copies from page-aligned page-cache pages; when the destination
// sits a few bytes past the same offset within a page (malloc's 16 bytes, say), `rep movsb` on some
// CPUs (AMD Zen 3 measured: 3x) runs several times slower. So destinations are kept at the same
// offset within a page as the file position.
struct PageBuffer {
  std::unique_ptr<char[]> raw;
  char* data = nullptr;
  size_t cap = 0;

  PageBuffer() = default;
  explicit PageBuffer(size_t n) : raw(std::make_unique_for_overwrite<char[]>(n + kPage)), cap(n) {
    const auto addr = reinterpret_cast<uintptr_t>(raw.get());
    data = raw.get() + (kPage - addr % kPage) % kPage;
  }
};

uint64_t load_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string hex32(uint32_t v) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", v);
  return s;
}

}  // namespace

struct TFRecordReader::Impl {
  std::string name;
  TFRecordReaderOptions opt;
  int fd = -1;
  uint64_t total = kUnknown;  // framed bytes in the whole stream, when known up front

  // Source window: the bytes not yet consumed from the file or memory (compressed or plain).
  const char* mem = nullptr;  // in-memory input, else null
  size_t mem_size = 0;
  PageBuffer zin;  // compressed bytes read from the file
  uint64_t fd_pos = 0;  // bytes read from the file so far
  const char* in = nullptr;
  size_t in_avail = 0;
  bool in_eof = false;
  std::unique_ptr<Inflater> inflater;
  bool stream_done = false;

  // Uncompressed stream: [pos, end) of `base` is buffered and not yet returned. `base` is `buf`, or
  // the caller's memory for plain in-memory input.
  PageBuffer buf;
  const char* base = nullptr;
  size_t pos = 0, end = 0;
  bool eof = false;
  uint64_t offset = 0;  // stream offset of base[pos]
  uint64_t index = 0;   // records returned so far = index of the record being read
  uint64_t last_index = 0, last_offset = 0;
  uint64_t source_bytes = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw FormatError(str(name, ": record ", index, " at offset ", offset, ": ", msg));
  }

  size_t read_fd(char* dst, size_t room) {
    for (;;) {
      const ssize_t r = ::read(fd, dst, std::min(room, size_t{1} << 30));
      if (r >= 0) {
        fd_pos += static_cast<size_t>(r);
        return static_cast<size_t>(r);
      }
      if (errno != EINTR) throw_io_error(name, "read");
    }
  }

  // Makes the source window non-empty unless the source is exhausted.
  void refill_input() {
    if (in_avail > 0 || in_eof) return;
    if (mem) {  // the whole input was the window from the start
      in_eof = true;
      return;
    }
    const size_t skip = fd_pos % kPage;  // keep the destination at the file position's page offset
    const size_t n = read_fd(zin.data + skip, zin.cap - skip);
    in = zin.data + skip;
    in_avail = n;
    if (n == 0) in_eof = true;
  }

  // Writes up to `room` more uncompressed bytes to dst; 0 means the stream has ended cleanly.
  size_t produce(char* dst, size_t room) {
    if (!inflater) {
      const size_t n = read_fd(dst, room);
      source_bytes += n;
      return n;
    }
    const char* cname = opt.compression == Compression::kGzip ? "GZIP" : "ZLIB";
    for (;;) {
      refill_input();
      if (stream_done) {
        if (in_avail == 0) return 0;
        // More bytes after a complete stream: another gzip member (as gzip -d reads them), or junk.
        if (opt.compression == Compression::kZlib) fail("trailing data after the end of the ZLIB stream");
        inflater->reset();
        stream_done = false;
      }
      if (in_avail == 0) {  // in_eof
        if (!inflater->started()) return 0;  // no compressed bytes at all: an empty file
        fail(str(cname, " stream cut short: the compressed data ends before the end of the stream"));
      }
      const Inflater::Result r = inflater->inflate(in, in_avail, dst, room);
      in += r.consumed;
      in_avail -= r.consumed;
      source_bytes += r.consumed;
      if (!r.error.empty()) fail(str("corrupt ", cname, " stream: ", r.error));
      if (r.stream_end) stream_done = true;
      if (r.produced > 0) return r.produced;
      if (r.consumed == 0 && !r.stream_end && in_avail > 0) fail(str(cname, " stream makes no progress"));
    }
  }

  // Moves the buffered bytes to `start` of a new buffer of `new_cap` bytes.
  void reallocate(size_t new_cap, size_t start) {
    PageBuffer nb(new_cap);
    std::memcpy(nb.data + start, buf.data + pos, end - pos);
    end = start + (end - pos);
    pos = start;
    buf = std::move(nb);
    base = buf.data;
  }

  // Ensures at least `need` bytes are buffered at `pos`; false if the stream ends first.
  bool fill(size_t need) {
    if (end - pos >= need) return true;
    if (eof || (mem && !inflater)) return false;
    const size_t chunk = std::max(opt.read_buffer_bytes, kMinBuffer);
    const size_t have = end - pos;
    // For read(), place the bytes so that the next one lands at the file position's page offset.
    const size_t start = inflater ? 0 : static_cast<size_t>((fd_pos - have) % kPage);
    const size_t want = start + need;
    if (want > buf.cap) {
      // A known size was checked against the record length: grow to fit. Otherwise grow in steps as
      // bytes arrive (below), starting from at least one chunk.
      reallocate(total != kUnknown ? want : std::min(want, std::max(2 * buf.cap, start + chunk)), start);
    } else if (buf.cap > 4 * chunk + kPage && want <= chunk + kPage && have <= chunk) {
      reallocate(chunk + kPage, start);  // after an unusually large record, give the memory back
    } else if (pos != start) {
      std::memmove(buf.data + start, buf.data + pos, have);
      pos = start;
      end = start + have;
    }
    while (end - pos < need && !eof) {
      if (end == buf.cap) reallocate(std::min(want, 2 * buf.cap), start);
      const size_t n = produce(buf.data + end, buf.cap - end);
      if (n == 0) eof = true;
      end += n;
    }
    return end - pos >= need;
  }

  bool next(std::string_view* record) {
    if (!fill(kHeader)) {
      if (end == pos) return false;  // clean end
      fail(str("truncated record header: ", end - pos, " of ", kHeader, " bytes before the end of the stream"));
    }
    const char* h = base + pos;
    const uint64_t len = load_le(h, 8);
    const uint32_t stored_len_crc = static_cast<uint32_t>(load_le(h + 8, 4));
    const uint32_t len_crc = crc32c_mask(crc32c(h, 8));
    if (stored_len_crc != len_crc)
      fail(str("length CRC mismatch (stored ", hex32(stored_len_crc), ", computed ", hex32(len_crc),
               "): the length field is corrupt"));
    if (len > opt.max_record_bytes)
      fail(str("record length ", len, " exceeds max_record_bytes ", opt.max_record_bytes));
    if (total != kUnknown && offset + kHeader > total) total = kUnknown;  // the file grew meanwhile
    if (total != kUnknown) {
      const uint64_t left = total - offset - kHeader;
      if (len > left || left - len < kFooter)
        fail(str("record length ", len, " needs ", len + kFooter, " more bytes but only ", left,
                 " are left in the file"));
    }
    if (len > std::numeric_limits<size_t>::max() - kHeader - kFooter) fail(str("record length ", len, " too large"));
    const size_t need = kHeader + static_cast<size_t>(len) + kFooter;
    if (!fill(need))
      fail(str("truncated record: length ", len, " needs ", need, " bytes but the stream ends after ", end - pos));
    h = base + pos;  // the buffer may have moved
    if (opt.verify_data_crc) {
      const uint32_t stored = static_cast<uint32_t>(load_le(h + kHeader + len, 4));
      const uint32_t computed = crc32c_mask(crc32c(h + kHeader, len));
      if (stored != computed)
        fail(str("data CRC mismatch (stored ", hex32(stored), ", computed ", hex32(computed), ")"));
    }
    *record = std::string_view(h + kHeader, len);
    last_index = index++;
    last_offset = offset;
    pos += need;
    offset += need;
    if (mem && !inflater) source_bytes = offset;
    return true;
  }
};

TFRecordReader::TFRecordReader(const std::string& path, const TFRecordReaderOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& r = *impl_;
  r.name = path;
  r.opt = options;
  uint64_t file_size = kUnknown;
  r.fd = open_regular_file(path, &file_size);  // a FIFO or folder is refused, never waited on
  ::posix_fadvise(r.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  const size_t chunk = std::max(options.read_buffer_bytes, kMinBuffer);
  // Small files get a buffer of their size (+1 so that end of file is seen without a regrow).
  const size_t first = file_size != kUnknown ? std::min<uint64_t>(chunk, file_size + 1) : chunk;
  if (options.compression == Compression::kNone) {
    r.total = file_size;
  } else {
    r.inflater = std::make_unique<Inflater>(options.compression);
    r.zin = PageBuffer(std::max(first, kMinBuffer) + kPage);
  }
  r.buf = PageBuffer(options.compression == Compression::kNone ? std::max(first, kMinBuffer) : chunk);
  r.base = r.buf.data;
}

TFRecordReader::TFRecordReader(std::string_view bytes, std::string name, const TFRecordReaderOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& r = *impl_;
  r.name = std::move(name);
  r.opt = options;
  r.mem = bytes.data();
  r.mem_size = bytes.size();
  if (options.compression == Compression::kNone) {
    r.base = bytes.data();
    r.end = bytes.size();
    r.eof = true;
    r.total = bytes.size();
  } else {
    r.inflater = std::make_unique<Inflater>(options.compression);
    r.in = bytes.data();
    r.in_avail = bytes.size();
    r.in_eof = true;
    r.buf = PageBuffer(std::max(options.read_buffer_bytes, kMinBuffer));
    r.base = r.buf.data;
  }
}

TFRecordReader::~TFRecordReader() {
  if (impl_->fd >= 0) ::close(impl_->fd);
}

bool TFRecordReader::next(std::string_view* record) { return impl_->next(record); }
uint64_t TFRecordReader::record_index() const { return impl_->last_index; }
uint64_t TFRecordReader::record_offset() const { return impl_->last_offset; }
const std::string& TFRecordReader::name() const { return impl_->name; }
uint64_t TFRecordReader::source_bytes_read() const { return impl_->source_bytes; }

}  // namespace fastnn
