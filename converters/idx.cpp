#include "converters/idx.h"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "core/check.h"
#include "core/input_file.h"

namespace fastnn::converters {
namespace {

// Reads up to n bytes into out; returns the count (0 at end). Throws on a read error.
using ReadFn = std::function<size_t(char* out, size_t n)>;

size_t read_full(const ReadFn& read, char* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t r = read(out + done, n - done);
    if (r == 0) break;
    done += r;
  }
  return done;
}

uint32_t be32(const char* p) {
  auto b = reinterpret_cast<const uint8_t*>(p);
  return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3];
}

std::string hex4(const char* p) {
  char buf[16];
  auto b = reinterpret_cast<const uint8_t*>(p);
  std::snprintf(buf, sizeof buf, "%02x %02x %02x %02x", b[0], b[1], b[2], b[3]);
  return buf;
}

IdxArray parse_stream(const ReadFn& read, const std::string& name, int expected_dims, const IdxLimits& lim,
                      bool header_only = false) {
  auto fail = [&](uint64_t offset, const std::string& msg) -> void {
    throw FormatError(str(name, ": offset ", offset, ": ", msg));
  };
  IdxArray a;
  a.name = name;
  char head[4];
  size_t got = read_full(read, head, 4);
  if (got < 4) fail(got, str("truncated IDX header: file ends after ", got, " bytes"));
  if (head[0] != 0 || head[1] != 0 || static_cast<uint8_t>(head[2]) != 0x08 || head[3] != expected_dims) {
    fail(0, str("not an IDX file of unsigned bytes with ", expected_dims, " dimensions: magic bytes ", hex4(head),
                ", expected 00 00 08 0", expected_dims));
  }
  std::vector<char> dims_raw(4 * expected_dims);
  got = read_full(read, dims_raw.data(), dims_raw.size());
  if (got < dims_raw.size()) fail(4 + got, "truncated IDX header (dimension sizes)");
  a.header_bytes = static_cast<uint32_t>(4 + dims_raw.size());
  uint64_t item = 1;
  for (int d = 0; d < expected_dims; ++d) {
    uint32_t v = be32(dims_raw.data() + 4 * d);
    if (v == 0) fail(4 + 4 * d, str("dimension ", d, " is 0"));
    a.dims.push_back(v);
    if (d > 0) {
      item *= v;
      if (item > lim.max_item_bytes) fail(4 + 4 * d, str("an item would hold more than ", lim.max_item_bytes, " bytes"));
    }
  }
  if (a.dims[0] > lim.max_items) fail(4, str(a.dims[0], " items, more than the limit of ", lim.max_items));
  const uint64_t expected = a.dims[0] * item;
  if (expected > lim.max_total_bytes) fail(4, str(expected, " data bytes, more than the limit of ", lim.max_total_bytes));
  if (header_only) return a;

  // Grow with the bytes that actually arrive; a lying header cannot make us allocate.
  constexpr size_t kStep = size_t{4} << 20;
  while (a.data.size() < expected) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kStep, expected - a.data.size()));
    size_t old = a.data.size();
    a.data.resize(old + want);
    size_t r = read_full(read, a.data.data() + old, want);
    a.data.resize(old + r);
    if (r < want) {
      std::string shape = str(a.dims[0]);
      for (size_t d = 1; d < a.dims.size(); ++d) shape += str("×", a.dims[d]);
      fail(a.header_bytes + a.data.size(),
           str("truncated: the header declares ", shape, " = ", expected, " data bytes, the file ends after ",
               a.data.size(), " (", a.data.size() / item, " whole items)"));
    }
  }
  char extra[1];
  if (read_full(read, extra, 1) != 0)
    fail(a.header_bytes + expected, str("unexpected bytes after the ", a.dims[0], " items the header declares"));
  return a;
}

}  // namespace

namespace {
IdxArray stream_file(const std::string& path, int expected_dims, const IdxLimits& limits, bool header_only,
                     bool* compressed);
}  // namespace

uint64_t IdxArray::item_bytes() const {
  uint64_t n = 1;
  for (size_t d = 1; d < dims.size(); ++d) n *= dims[d];
  return n;
}

IdxArray parse_idx(std::string_view bytes, const std::string& name, int expected_dims, const IdxLimits& limits) {
  size_t pos = 0;
  ReadFn read = [&](char* out, size_t n) {
    size_t k = std::min(n, bytes.size() - pos);
    std::memcpy(out, bytes.data() + pos, k);
    pos += k;
    return k;
  };
  return parse_stream(read, name, expected_dims, limits);
}

IdxArray read_idx(const std::string& path, int expected_dims, const IdxLimits& limits) {
  bool compressed = false;
  IdxArray a = stream_file(path, expected_dims, limits, true, &compressed);
  if (compressed && inflate_one_gzip_member(path, &a)) return a;
  return stream_file(path, expected_dims, limits, false, nullptr);
}

IdxArray read_idx_header(const std::string& path, int expected_dims, const IdxLimits& limits) {
  return stream_file(path, expected_dims, limits, true, nullptr);
}

namespace {
// Streams the file through zlib, which passes a plain file through unchanged; `compressed` says which.
IdxArray stream_file(const std::string& path, int expected_dims, const IdxLimits& limits, bool header_only,
                     bool* compressed) {
  // gzread reads plain files transparently, so one path serves both.
  InputFile in(path);  // a regular file only: a FIFO would block gzopen
  gzFile f = gzdopen(in.fd(), "rb");
  if (!f) throw_io_error(path, "open");
  in.release();  // gzclose closes it
  gzbuffer(f, 1 << 20);
  struct Closer {
    gzFile f;
    ~Closer() { gzclose(f); }
  } closer{f};
  ReadFn read = [&](char* out, size_t n) -> size_t {
    int r = gzread(f, out, static_cast<unsigned>(std::min<size_t>(n, 1u << 30)));
    if (r < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      throw FormatError(str(path, ": offset ", gztell(f), " (uncompressed): cannot decompress: ", msg));
    }
    if (r == 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      // A gzip stream cut short ends reading with Z_BUF_ERROR rather than an error return.
      if (err != Z_OK && err != Z_STREAM_END)
        throw FormatError(str(path, ": offset ", gztell(f), " (uncompressed): gzip stream is damaged or truncated: ", msg));
    }
    return static_cast<size_t>(r);
  };
  IdxArray a = parse_stream(read, path, expected_dims, limits, header_only);
  if (compressed) *compressed = gzdirect(f) == 0;
  return a;
}
}  // namespace

// libdeflate inflates about twice as fast as zlib (Fashion-MNIST's 26 MB of training images: 0.10
// against 0.20 s), a cost every rank of `mpirun fastnn convert mnist` pays in full.
bool inflate_one_gzip_member(const std::string& path, IdxArray* a) {
  constexpr uint64_t kMaxClaimPerFileByte = 16;
  const uint64_t total = a->header_bytes + a->count() * a->item_bytes();
  const uint64_t file_bytes = require_regular_file(path);
  if (total > kMaxClaimPerFileByte * file_bytes || file_bytes > total + total / 64 + 4096) return false;
  const std::string gz = read_regular_file(path, file_bytes);
  std::string whole(total + 1, '\0');  // one spare byte: more data than the header declares shows as no space
  libdeflate_decompressor* inflater = libdeflate_alloc_decompressor();
  if (!inflater) return false;
  size_t in_used = 0, out_used = 0;
  const libdeflate_result r = libdeflate_gzip_decompress_ex(inflater, gz.data(), gz.size(), whole.data(),
                                                            whole.size(), &in_used, &out_used);
  libdeflate_free_decompressor(inflater);
  if (r != LIBDEFLATE_SUCCESS || in_used != gz.size() || out_used != total) return false;
  // The file may have changed since its header was read: the bytes inflated now must carry that header.
  whole.resize(total);
  if (whole[0] != 0 || whole[1] != 0 || static_cast<uint8_t>(whole[2]) != 0x08 ||
      static_cast<size_t>(whole[3]) != a->dims.size())
    return false;
  for (size_t d = 0; d < a->dims.size(); ++d)
    if (be32(whole.data() + 4 + 4 * d) != a->dims[d]) return false;
  whole.erase(0, a->header_bytes);
  a->data = std::move(whole);
  return true;
}

}  // namespace fastnn::converters
