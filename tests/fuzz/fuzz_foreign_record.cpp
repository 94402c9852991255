// Fuzzes converters/foreign_record.h (the records `convert tfrecord` and `check` without a manifest
// read from shards fastnn did not write) over arbitrary bytes. Only FormatError is an acceptable
// failure. A record that parses must describe itself consistently: a canonical format, geometry
// within the limits, raw bytes that fit it exactly, and it must re-serialize as fastnn's record
// (serialize_image_example) into bytes the same parser reads back to the same fields.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "converters/foreign_record.h"
#include "converters/image_example.h"
#include "core/check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fastnn::converters::ForeignRecordParser parser({.max_pixels = 1 << 20, .max_side = 4096});
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  fastnn::converters::ForeignRecord r;
  try {
    r = parser.parse(bytes);
  } catch (const fastnn::FormatError&) {
    return 0;
  }
  const std::string_view f = r.format;
  if (f != "jpeg" && f != "png" && f != "raw") std::abort();
  if (r.height < 1 || r.width < 1 || r.height > 4096 || r.width > 4096) std::abort();
  if (r.channels != 1 && r.channels != 3 && r.channels != 4) std::abort();
  if (f == "raw" && r.encoded.size() != static_cast<size_t>(r.height) * r.width * r.channels) std::abort();
  std::string again;
  fastnn::converters::serialize_image_example(r.encoded, r.format, r.height, r.width, r.channels, r.label, -1, &again);
  fastnn::converters::ForeignRecord back;
  try {
    back = parser.parse(again);
  } catch (const fastnn::FormatError&) {
    std::abort();  // what fastnn writes from a record it accepted must be readable
  }
  if (back.encoded != r.encoded || back.label != r.label || std::strcmp(back.format, r.format) != 0 ||
      back.height != r.height || back.width != r.width || back.channels != r.channels || back.format_mismatch)
    std::abort();
  return 0;
}
