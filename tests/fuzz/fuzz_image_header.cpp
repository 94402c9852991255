// Fuzz target: read_image_info (magic-byte dispatch, TurboJPEG / libpng header parsing, limit
// checks) over arbitrary bytes with tight limits (4 megapixels). The only acceptable failure is a
// FormatError; anything else escaping (fastnn::Error, std::bad_alloc) or a header that passes with
// values outside the contract aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "core/check.h"
#include "core/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fastnn::ImageLimits limits;
  limits.max_pixels = int64_t{4} << 20;
  limits.max_side = 16384;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const fastnn::ImageInfo info = fastnn::read_image_info(bytes, limits);
    const bool ok = info.format == fastnn::detect_image_format(bytes) && info.format != fastnn::ImageFormat::kUnknown &&
                    info.width > 0 && info.height > 0 && info.width <= limits.max_side &&
                    info.height <= limits.max_side && int64_t{info.width} * info.height <= limits.max_pixels &&
                    (info.channels == 1 || info.channels == 3 || info.channels == 4);
    if (!ok) {
      std::fprintf(stderr, "fuzz_image_header: header outside the contract: %s %dx%dx%d\n",
                   fastnn::image_format_name(info.format), info.width, info.height, info.channels);
      std::abort();
    }
  } catch (const fastnn::FormatError&) {
  }
  return 0;
}
