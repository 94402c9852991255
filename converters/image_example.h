// Building fastnn's records (../shared/DESIGN.md "Records") and judging encoded images cheaply.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "converters/source.h"
#include "core/example.h"
#include "core/image.h"

namespace fastnn::converters {

// Serializes the tf.train.Example {image/encoded, image/format, image/class/label, image/height,
// image/width, image/channels} (+ image/class/coarse_label when coarse_label >= 0) into *out
// (capacity reused): the bytes ExampleBuilder would produce, written in one pass with one copy of
// `encoded`.
void serialize_image_example(std::string_view encoded, const char* format, int height, int width, int channels,
                             int64_t label, int64_t coarse_label, std::string* out);

// The scan-time test of an encoded image, without decoding it: a JPEG or PNG signature, a header
// read_image_info() accepts (within the limits), and an end marker near the end of the file (JPEG
// EOI FF D9, PNG IEND) so that a file cut short is caught. `head` is the start of the file (or all of
// it), `tail` its last bytes (kImageTailBytes, or all of it), `size` the full size. Throws
// FormatError with the reason; returns the header info.
inline constexpr size_t kImageHeadBytes = 64 << 10;
inline constexpr size_t kImageTailBytes = 4 << 10;
ImageInfo check_encoded_image(std::string_view head, std::string_view tail, uint64_t size,
                              const ImageLimits& limits = {});

struct ImageRecordOptions {
  int resize_shorter_side = 0;  // 0: always pass the bytes through
  int jpeg_quality = 90;
  ImageLimits limits;
};

// Turns the encoded bytes of one image into a record: unchanged bytes (format and geometry from the
// header), or, when resize_shorter_side is set and the image's shorter side is larger, decoded (JPEG
// at the largest DCT scale that stays large enough), area-downscaled and re-encoded as JPEG (gray
// stays 1 channel, everything else becomes RGB). One per thread: it keeps its buffers.
class ImageRecordMaker {
 public:
  explicit ImageRecordMaker(ImageRecordOptions options) : options_(options) {}
  void make(std::string_view bytes, int64_t label, std::string* record, RecordInfo* info);

 private:
  ImageRecordOptions options_;
  std::vector<uint8_t> decoded_, resized_;
  std::vector<float> scratch_;
  std::string encoded_;
};

}  // namespace fastnn::converters
