#include "core/compression.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <vector>

#include "core/check.h"
#include "core/input_file.h"
#include "core/crc32c.h"

namespace fastnn {
namespace {

// zlib counts in uInt; feed it pieces of at most this.
constexpr size_t kMaxPiece = size_t{1} << 30;

uInt piece(size_t n) { return static_cast<uInt>(std::min(n, kMaxPiece)); }

}  // namespace

Compression parse_compression(std::string_view name) {
  if (name.empty() || name == "none" || name == "NONE") return Compression::kNone;
  if (name == "gzip" || name == "GZIP") return Compression::kGzip;
  if (name == "zlib" || name == "ZLIB") return Compression::kZlib;
  throw ConfigError(str("unknown compression '", name, "' (choices: none, gzip, zlib)"));
}

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kZlib: return "zlib";
  }
  return "?";
}

int zlib_window_bits(Compression c) {
  FASTNN_CHECK(c != Compression::kNone, "zlib_window_bits needs gzip or zlib");
  return c == Compression::kGzip ? 16 + MAX_WBITS : MAX_WBITS;
}

// ---- Deflater ----

struct Deflater::Impl {
  z_stream zs{};
  bool finished = false;

  void run(const void* data, size_t size, int flush, std::string* out) {
    FASTNN_CHECK(!finished, "Deflater used after finish()");
    const auto* p = static_cast<const Bytef*>(data);
    for (;;) {
      const uInt in = piece(size);
      zs.next_in = const_cast<Bytef*>(p);
      zs.avail_in = in;
      const int f = (size > in) ? Z_NO_FLUSH : flush;  // finish only with the last piece
      int rc;
      do {
        const size_t old = out->size(), room = std::max<size_t>(64 << 10, in / 2);
        out->resize(old + room);
        zs.next_out = reinterpret_cast<Bytef*>(out->data() + old);
        zs.avail_out = static_cast<uInt>(room);
        rc = deflate(&zs, f);
        out->resize(old + room - zs.avail_out);
        FASTNN_CHECK(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR, "deflate failed: ", rc);
      } while (zs.avail_out == 0 || zs.avail_in > 0 || (f == Z_FINISH && rc != Z_STREAM_END));
      p += in;
      size -= in;
      if (size == 0) break;
    }
    if (flush == Z_FINISH) finished = true;
  }
};

Deflater::Deflater(Compression c, int level) : impl_(std::make_unique<Impl>()) {
  if (level < -1 || level > 9)
    throw ConfigError(str("compression level ", level, " out of range (0..9, or -1 for the default)"));
  const int rc = deflateInit2(&impl_->zs, level, Z_DEFLATED, zlib_window_bits(c), 8, Z_DEFAULT_STRATEGY);
  if (rc == Z_MEM_ERROR) throw std::bad_alloc();
  FASTNN_CHECK(rc == Z_OK, "deflateInit2 failed: ", rc);
}

Deflater::~Deflater() { deflateEnd(&impl_->zs); }

void Deflater::compress(const void* data, size_t size, std::string* out) {
  if (size > 0) impl_->run(data, size, Z_NO_FLUSH, out);
}

void Deflater::finish(std::string* out) { impl_->run(nullptr, 0, Z_FINISH, out); }

// ---- Inflater ----

struct Inflater::Impl {
  z_stream zs{};
  bool started = false;
};

Inflater::Inflater(Compression c) : impl_(std::make_unique<Impl>()) {
  const int rc = inflateInit2(&impl_->zs, zlib_window_bits(c));
  if (rc == Z_MEM_ERROR) throw std::bad_alloc();
  FASTNN_CHECK(rc == Z_OK, "inflateInit2 failed: ", rc);
}

Inflater::~Inflater() { inflateEnd(&impl_->zs); }

Inflater::Result Inflater::inflate(const void* in, size_t in_size, void* out, size_t out_size) {
  z_stream& zs = impl_->zs;
  if (in_size > 0) impl_->started = true;
  zs.next_in = const_cast<Bytef*>(static_cast<const Bytef*>(in));
  zs.avail_in = piece(in_size);
  zs.next_out = static_cast<Bytef*>(out);
  zs.avail_out = piece(out_size);
  const uInt avail_in = zs.avail_in, avail_out = zs.avail_out;
  const int rc = ::inflate(&zs, Z_NO_FLUSH);
  Result r;
  r.consumed = avail_in - zs.avail_in;
  r.produced = avail_out - zs.avail_out;
  switch (rc) {
    case Z_OK:
    case Z_BUF_ERROR:  // no progress possible: the caller supplies more input or room
      break;
    case Z_STREAM_END: r.stream_end = true; break;
    case Z_NEED_DICT: r.error = "stream needs a preset dictionary (not supported)"; break;
    case Z_DATA_ERROR: r.error = zs.msg ? zs.msg : "corrupt compressed data"; break;
    case Z_MEM_ERROR: throw std::bad_alloc();
    default: FASTNN_CHECK(false, "inflate failed: ", rc);
  }
  return r;
}

void Inflater::reset() {
  FASTNN_CHECK(inflateReset(&impl_->zs) == Z_OK, "inflateReset failed");
  impl_->started = false;
}

bool Inflater::started() const { return impl_->started; }

// ---- detect_compression ----

Compression detect_compression(const std::string& path) {
  const int fd = open_regular_file(path);
  std::vector<unsigned char> head(64 << 10);
  size_t n = 0;
  while (n < head.size()) {
    const ssize_t r = ::read(fd, head.data() + n, head.size() - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      throw_io_error(path, "read");
    }
    if (r == 0) break;
    n += static_cast<size_t>(r);
  }
  ::close(fd);
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::kGzip;
  // ZLIB header (RFC 1950): method 8 (deflate), window <= 32K, no preset dictionary, check bits.
  const bool zlib_header = n >= 2 && (head[0] & 0x0f) == 8 && (head[0] >> 4) <= 7 && !(head[1] & 0x20) &&
                           ((head[0] << 8) | head[1]) % 31 == 0;
  if (!zlib_header) return Compression::kNone;
  // A plain file whose first length happens to look like a ZLIB header still has a valid length CRC.
  if (n >= 12) {
    const uint32_t stored = head[8] | (head[9] << 8) | (head[10] << 16) | (uint32_t{head[11]} << 24);
    if (crc32c_mask(crc32c(head.data(), 8)) == stored) return Compression::kNone;
  }
  Inflater inflater(Compression::kZlib);
  std::vector<unsigned char> out(64 << 10);
  const Inflater::Result r = inflater.inflate(head.data(), n, out.data(), out.size());
  return r.error.empty() && (r.produced > 0 || r.stream_end) ? Compression::kZlib : Compression::kNone;
}

}  // namespace fastnn
