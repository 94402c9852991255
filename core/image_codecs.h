// Internal to core/image_*.cpp: the per-format entry points behind image.h's dispatch, and the
// helpers the codecs share (limit check, channel conversion). Not a public header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/image.h"

namespace fastnn::image_detail {

// FormatError unless 0 < width, height <= limits.max_side and width × height <= limits.max_pixels.
void check_limits(const char* format, int width, int height, const ImageLimits& limits);

// 0 → `stored`; 1, 3, 4 pass through; anything else is a caller bug (fastnn::Error).
int resolve_channels(int desired_channels, int stored);

// Luma of an RGB pixel: ITU-R BT.601 weights (0.299, 0.587, 0.114) in 16-bit fixed point,
// rounded — the same weights libjpeg uses for Y, so PNG and JPEG sources agree.
inline uint8_t rgb_to_gray(uint32_t r, uint32_t g, uint32_t b) {
  return static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 32768u) >> 16);
}

// Converts n pixels between interleaved layouts of 1 (gray), 3 (RGB), 4 (RGBA) channels:
// gray → RGB replicates, RGB(A) → gray is rgb_to_gray (alpha ignored), alpha is dropped or added
// as 255. src and dst must not overlap.
void convert_pixels(const uint8_t* src, int src_channels, uint8_t* dst, int dst_channels, size_t n);

// Header parsers and the PNG decoder (image_jpeg.cpp, image_png.cpp). JPEG decoding goes through the
// public decode_jpeg_scaled_into at scale 1/1; the encoders are the public functions themselves.
ImageInfo jpeg_read_info(std::string_view bytes, const ImageLimits& limits);
ImageInfo png_read_info(std::string_view bytes, const ImageLimits& limits);
ImageInfo png_decode_into(std::string_view bytes, int desired_channels, uint8_t* out, size_t out_size,
                          const ImageLimits& limits);

}  // namespace fastnn::image_detail
