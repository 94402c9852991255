// Format detection, dispatch to the JPEG/PNG codecs, limits and the shared channel conversion.
#include <cstring>

#include "core/check.h"
#include "core/image.h"
#include "core/image_codecs.h"

namespace fastnn {
namespace image_detail {

void check_limits(const char* format, int width, int height, const ImageLimits& limits) {
  if (width <= 0 || height <= 0)
    throw FormatError(str(format, " header has invalid dimensions ", width, "x", height));
  if (width > limits.max_side || height > limits.max_side)
    throw FormatError(str(format, " image ", width, "x", height, " exceeds the side limit of ",
                          limits.max_side, " pixels"));
  const int64_t pixels = int64_t{width} * height;
  if (pixels > limits.max_pixels)
    throw FormatError(str(format, " image ", width, "x", height, " (", pixels,
                          " pixels) exceeds the limit of ", limits.max_pixels, " pixels"));
}

int resolve_channels(int desired_channels, int stored) {
  FASTNN_CHECK(desired_channels == 0 || desired_channels == 1 || desired_channels == 3 ||
                   desired_channels == 4,
               "desired_channels must be 0, 1, 3 or 4, got ", desired_channels);
  return desired_channels == 0 ? stored : desired_channels;
}

void convert_pixels(const uint8_t* src, int sc, uint8_t* dst, int dc, size_t n) {
  FASTNN_CHECK((sc == 1 || sc == 3 || sc == 4) && (dc == 1 || dc == 3 || dc == 4),
               "convert_pixels: channels ", sc, " -> ", dc);
  if (sc == dc) {
    std::memcpy(dst, src, n * static_cast<size_t>(sc));
    return;
  }
  for (size_t i = 0; i < n; ++i, src += sc, dst += dc) {
    if (sc == 1) {
      dst[0] = dst[1] = dst[2] = src[0];
    } else if (dc == 1) {
      dst[0] = rgb_to_gray(src[0], src[1], src[2]);
      continue;
    } else {
      dst[0] = src[0];
      dst[1] = src[1];
      dst[2] = src[2];
    }
    if (dc == 4) dst[3] = 255;
  }
}

}  // namespace image_detail

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg: return "jpeg";
    case ImageFormat::kPng: return "png";
    default: return "unknown";
  }
}

ImageFormat detect_image_format(std::string_view b) {
  static constexpr unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xff &&
      static_cast<unsigned char>(b[1]) == 0xd8 && static_cast<unsigned char>(b[2]) == 0xff)
    return ImageFormat::kJpeg;
  if (b.size() >= sizeof(kPng) && std::memcmp(b.data(), kPng, sizeof(kPng)) == 0) return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

namespace {
[[noreturn]] void throw_unknown(std::string_view bytes) {
  if (bytes.empty()) throw FormatError("image data is empty");
  throw FormatError(str("image data (", bytes.size(), " bytes) is neither JPEG nor PNG (unrecognized magic bytes)"));
}
}  // namespace

ImageInfo read_image_info(std::string_view bytes, const ImageLimits& limits) {
  switch (detect_image_format(bytes)) {
    case ImageFormat::kJpeg: return image_detail::jpeg_read_info(bytes, limits);
    case ImageFormat::kPng: return image_detail::png_read_info(bytes, limits);
    default: throw_unknown(bytes);
  }
}

size_t decoded_size(const ImageInfo& info, int desired_channels) {
  const int c = image_detail::resolve_channels(desired_channels, info.channels);
  FASTNN_CHECK(info.width >= 0 && info.height >= 0, "decoded_size of ", info.width, "x", info.height);
  return static_cast<size_t>(info.width) * static_cast<size_t>(info.height) * static_cast<size_t>(c);
}

ImageInfo decode_image_into(std::string_view bytes, int desired_channels, uint8_t* out, size_t out_size,
                            const ImageLimits& limits) {
  switch (detect_image_format(bytes)) {
    case ImageFormat::kJpeg:
      return decode_jpeg_scaled_into(bytes, JpegScale{1, 1}, desired_channels, out, out_size, limits);
    case ImageFormat::kPng:
      return image_detail::png_decode_into(bytes, desired_channels, out, out_size, limits);
    default: throw_unknown(bytes);
  }
}

Image decode_image(std::string_view bytes, int desired_channels, const ImageLimits& limits) {
  const ImageInfo info = read_image_info(bytes, limits);
  Image img;
  img.pixels.resize(decoded_size(info, desired_channels));
  const ImageInfo got = decode_image_into(bytes, desired_channels, img.pixels.data(), img.pixels.size(), limits);
  img.width = got.width;
  img.height = got.height;
  img.channels = image_detail::resolve_channels(desired_channels, got.channels);
  return img;
}

}  // namespace fastnn
