// Fuzz target: the whole decode path as the pipeline uses it: read_image_info with tight limits
// (4 megapixels), then decode_image_into a buffer sized from the header (desired channels picked by
// the last input byte), and for JPEG also a DCT-scaled decode. Only FormatError may escape. The
// output buffers carry guard bytes that are checked afterwards: libjpeg-turbo and libpng are not
// instrumented, so ASan alone would not see them write past the end.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/image.h"

namespace {

constexpr size_t kGuard = 64;
constexpr uint8_t kGuardByte = 0xA5;

void check_guard(const std::vector<uint8_t>& buf, size_t used, const char* what) {
  for (size_t i = used; i < buf.size(); ++i)
    if (buf[i] != kGuardByte) {
      std::fprintf(stderr, "fuzz_image_decode: %s wrote past the %zu-byte output\n", what, used);
      std::abort();
    }
}

void check_info(const fastnn::ImageInfo& got, const fastnn::ImageInfo& want, int width, int height) {
  if (got.format != want.format || got.channels != want.channels || got.width != width || got.height != height) {
    std::fprintf(stderr, "fuzz_image_decode: decode returned %dx%dx%d, header said %dx%dx%d\n", got.width,
                 got.height, got.channels, width, height, want.channels);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fastnn::ImageLimits limits;
  limits.max_pixels = int64_t{4} << 20;
  limits.max_side = 16384;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static constexpr int kChannels[4] = {0, 1, 3, 4};
  const int desired = size ? kChannels[data[size - 1] % 4] : 0;
  try {
    const fastnn::ImageInfo info = fastnn::read_image_info(bytes, limits);
    const size_t n = fastnn::decoded_size(info, desired);
    std::vector<uint8_t> out(n + kGuard, kGuardByte);
    check_info(fastnn::decode_image_into(bytes, desired, out.data(), n, limits), info, info.width, info.height);
    check_guard(out, n, "decode_image_into");
    if (info.format == fastnn::ImageFormat::kJpeg) {
      const fastnn::JpegScale s{1, 2 << (data[size - 1] / 4 % 3)};  // 1/2, 1/4, 1/8
      const int sw = fastnn::jpeg_scaled_dim(info.width, s), sh = fastnn::jpeg_scaled_dim(info.height, s);
      const int c = desired ? desired : info.channels;
      const size_t m = static_cast<size_t>(sw) * sh * c;
      std::vector<uint8_t> small(m + kGuard, kGuardByte);
      check_info(fastnn::decode_jpeg_scaled_into(bytes, s, desired, small.data(), m, limits), info, sw, sh);
      check_guard(small, m, "decode_jpeg_scaled_into");
    }
  } catch (const fastnn::FormatError&) {
  }
  return 0;
}
