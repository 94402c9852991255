// Reading image records fastnn did not write: TF-slim's converters (download_and_convert_flowers /
// _cifar10 / _mnist, build_imagenet_data), FastNN's own shards, TensorFlow's MNIST tutorial.
//
// Key spellings accepted, the first present of each group wins:
//   image bytes   image/encoded, image/raw, image_raw
//   format        image/format: jpg, jpeg, png, raw in any case (JPEG, PNG...); absent or empty: the
//                 bytes' signature decides (JPEG / PNG), else raw when height × width × channels fits
//   label         image/class/label, image/label, label (int64, one value)
//   height/width  image/height, height / image/width, width (int64)
//   channels      image/channels, image/depth, depth, channels (int64; raw without it: bytes / (h × w))
// Every other feature (image/filename, image/class/text, bounding boxes...) is ignored.
//
// parse() resolves the canonical format ("jpeg", "png", "raw") and the geometry: from the image
// header for JPEG/PNG (read_image_info, within the limits), from the record for raw. A declared
// format that disagrees with the bytes is reported (format_mismatch), not thrown: `convert tfrecord`
// writes what the bytes are, `check` calls it an error. Everything else wrong (no image or label,
// a label of the wrong type, an unreadable header, raw bytes that do not fit the size) throws
// FormatError with the reason. Thread-safe (const; ExampleParser allocates nothing).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/example.h"
#include "core/image.h"

namespace fastnn::converters {

struct ForeignRecord {
  std::string_view encoded;
  std::string_view declared_format;  // image/format as written ("" when absent)
  const char* format = "";           // "jpeg", "png" or "raw"
  bool format_mismatch = false;      // declared jpeg/png/raw, the bytes are something else
  int64_t label = 0;
  // Geometry: the header's (JPEG/PNG) or the record's (raw).
  int height = 0, width = 0, channels = 0;
  // What the record itself says (0: the key is absent), for `check` to compare with the header.
  int64_t record_height = 0, record_width = 0, record_channels = 0;
};

class ForeignRecordParser {
 public:
  explicit ForeignRecordParser(ImageLimits limits = {});
  ForeignRecord parse(std::string_view record) const;
  const ImageLimits& limits() const { return limits_; }

 private:
  ImageLimits limits_;
  ExampleParser parser_;
};

}  // namespace fastnn::converters
