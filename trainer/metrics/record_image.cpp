#include "trainer/metrics/record_image.h"

#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string_view>

#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "core/tfrecord.h"

namespace fastnn {
namespace {

constexpr uint64_t kHeaderBytes = 12, kFooterBytes = 4;  // length + its CRC; the data's CRC

// The whole frame at `offset` of a plain file: length, its CRC, data, data CRC.
std::string frame_at(const std::string& path, uint64_t offset, const std::string& where) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_io_error(path, "open");
  auto read_at = [&](void* out, size_t n, uint64_t at) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(at));
    if (got < 0) {
      ::close(fd);
      throw_io_error(path, "read");
    }
    return static_cast<size_t>(got);
  };
  uint64_t length = 0;
  if (read_at(&length, sizeof length, offset) != sizeof length) {
    ::close(fd);
    throw FormatError(str(where, ": no record frame there (past the end of the file)"));
  }
  if (length > (uint64_t{1} << 30)) {  // the length's CRC is checked below; this only bounds the read
    ::close(fd);
    throw FormatError(str(where, ": not a record frame (its length field says ", length, " bytes)"));
  }
  std::string frame(kHeaderBytes + length + kFooterBytes, '\0');
  const size_t got = read_at(frame.data(), frame.size(), offset);
  ::close(fd);
  frame.resize(got);  // a short frame is the reader's truncation error
  return frame;
}

}  // namespace

RecordImage read_record_image(const std::string& path, uint64_t record, uint64_t offset) {
  const std::string where = str(path, ": record ", record, " at offset ", offset);
  const Compression compression = detect_compression(path);
  std::string frame;
  std::string_view data;
  std::unique_ptr<TFRecordReader> reader;
  if (compression == Compression::kNone) {
    frame = frame_at(path, offset, where);
    reader = std::make_unique<TFRecordReader>(std::string_view(frame), where);
    if (!reader->next(&data)) throw FormatError(str(where, ": no record there"));
  } else {
    reader = std::make_unique<TFRecordReader>(path, TFRecordReaderOptions{.compression = compression});
    bool found = false;
    while (reader->next(&data))
      if (reader->record_index() == record) {
        found = reader->record_offset() == offset;
        break;
      }
    if (!found) throw FormatError(str(where, ": the file has no such record (the shard changed since?)"));
  }
  const ExampleParser parser({keys::kImageEncoded});
  FeatureView v[1];
  parser.parse(data, v);
  if (!v[0].present()) throw FormatError(str(where, ": the Example has no ", keys::kImageEncoded));
  RecordImage out;
  out.bytes = std::string(v[0].single_bytes(keys::kImageEncoded));
  const ImageFormat f = detect_image_format(out.bytes);
  if (f == ImageFormat::kUnknown) throw FormatError(str(where, ": ", keys::kImageEncoded, " is neither PNG nor JPEG"));
  out.format = image_format_name(f);
  const ImageInfo info = read_image_info(out.bytes);
  out.width = info.width;
  out.height = info.height;
  return out;
}

}  // namespace fastnn
