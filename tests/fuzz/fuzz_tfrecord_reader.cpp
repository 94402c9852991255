// Fuzzes TFRecordReader over arbitrary bytes. The first byte picks the mode, so that real files are
// good seeds: odd (the GZIP magic 0x1f is odd) -> GZIP, 0x78 (the usual ZLIB header) -> ZLIB,
// otherwise plain; plain inputs whose first byte is 2 mod 4 are also read through a file (memfd),
// which takes the read() path. Records are capped at 1 MB, buffers are small so growth and
// compaction run often. Only FormatError is an acceptable failure; anything else is a bug.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/check.h"
#include "core/tfrecord.h"

namespace {

void consume(fastnn::TFRecordReader& r) {
  std::string_view v;
  uint64_t expected_offset = 0, expected_index = 0;
  volatile unsigned sum = 0;
  while (r.next(&v)) {
    if (r.record_index() != expected_index || r.record_offset() != expected_offset) std::abort();
    for (char c : v) sum = sum + static_cast<unsigned char>(c);  // every byte of the view is readable
    expected_offset += fastnn::tfrecord_frame_size(v.size());
    ++expected_index;
  }
}

void read_memory(std::string_view bytes, const fastnn::TFRecordReaderOptions& o) {
  try {
    fastnn::TFRecordReader r(bytes, "fuzz.tfrecord", o);
    consume(r);
  } catch (const fastnn::FormatError&) {
  }
}

void read_file(std::string_view bytes, const fastnn::TFRecordReaderOptions& o) {
  const int fd = memfd_create("fuzz_tfrecord", 0);
  if (fd < 0) return;
  if (::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())) {
    try {
      fastnn::TFRecordReader r("/proc/self/fd/" + std::to_string(fd), o);
      consume(r);
    } catch (const fastnn::FormatError&) {
    }
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fastnn::TFRecordReaderOptions o;
  o.max_record_bytes = 1 << 20;
  o.read_buffer_bytes = 256;
  const uint8_t mode = size > 0 ? data[0] : 0;
  if (mode & 1) {
    o.compression = fastnn::Compression::kGzip;
  } else if (mode == 0x78) {
    o.compression = fastnn::Compression::kZlib;
  }
  read_memory(bytes, o);
  o.verify_data_crc = false;
  read_memory(bytes, o);
  if (o.compression == fastnn::Compression::kNone && mode % 4 == 2) read_file(bytes, o);
  return 0;
}
