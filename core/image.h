// Image codecs: JPEG through libjpeg-turbo (TurboJPEG API), PNG through libpng.
//
// Untrusted bytes are the normal case: read_image_info() parses only the header, and every decode
// checks width × height against ImageLimits before any pixel buffer exists. Decoders write into a
// caller-provided buffer (compute apart from glue); decode_image() is the allocating convenience.
// Pixels are 8-bit, interleaved (HWC), rows packed. Thread-safe: no shared state (each call makes its
// own codec handle; creating a TurboJPEG handle costs ~0.3 µs, see core/image_jpeg.cpp).
//
// Channel conversions (the same for both formats): gray → RGB replicates; RGB → gray is ITU-R BT.601
// luma, (19595 R + 38470 G + 7471 B + 32768) >> 16 (for JPEG, TurboJPEG's gray output is the Y
// plane, computed with the same weights by the encoder); alpha is dropped (not composited) or added
// as 255. CMYK/YCCK JPEGs are converted to RGB as R = C·K/255 (Adobe's inverted-CMYK convention,
// as in libjpeg-turbo's tools; no ICC). libjpeg warnings (truncated or corrupt data, which libjpeg
// would fill in with gray) are FormatErrors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fastnn {

enum class ImageFormat { kUnknown, kJpeg, kPng };
const char* image_format_name(ImageFormat f);  // "jpeg", "png", "unknown"

// By magic bytes (FF D8 FF for JPEG; the 8-byte PNG signature), never by file name.
ImageFormat detect_image_format(std::string_view bytes);

struct ImageLimits {
  // width × height above this is refused before decoding (a 100000×100000 header is an error, not
  // a 40 GB allocation).
  int64_t max_pixels = int64_t{64} << 20;  // 64 megapixels
  int max_side = 65535;
};

struct ImageInfo {
  ImageFormat format = ImageFormat::kUnknown;
  int width = 0;
  int height = 0;
  // As stored: 1 (gray), 3 (RGB; JPEG YCbCr and CMYK/YCCK; PNG palette), 4 (PNG with alpha: RGBA,
  // gray + alpha widened to RGBA, and any PNG with a tRNS chunk).
  int channels = 0;
};

// Header only. Throws FormatError (unknown format, corrupt header, over the limits).
ImageInfo read_image_info(std::string_view bytes, const ImageLimits& limits = {});

// Output geometry of a decode with the given desired channels (0 = as stored, else 1, 3 or 4).
size_t decoded_size(const ImageInfo& info, int desired_channels);

// Decodes into `out` (must hold decoded_size(info, desired_channels) bytes; checked). 16-bit PNG is
// reduced to 8 bits, palette and gray+alpha expanded, alpha dropped or added as asked.
// Returns the header info. Throws FormatError on corrupt or truncated data; fastnn::Error for a
// desired_channels other than 0, 1, 3, 4 or a too small buffer (caller bugs).
ImageInfo decode_image_into(std::string_view bytes, int desired_channels, uint8_t* out, size_t out_size,
                            const ImageLimits& limits = {});

struct Image {
  int width = 0;
  int height = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // height * width * channels
};
Image decode_image(std::string_view bytes, int desired_channels = 0, const ImageLimits& limits = {});

// JPEG DCT-domain downscaling (libjpeg-turbo decodes at scale num/8 for free): the smallest scale
// factor (the most reduction) among those TurboJPEG supports, never above 1/1, whose output is still
// at least min_width × min_height; 1/1 if even that is smaller.
struct JpegScale {
  int num = 1;
  int denom = 1;
};
JpegScale choose_jpeg_scale(int width, int height, int min_width, int min_height);
int jpeg_scaled_dim(int dim, JpegScale s);  // ceil(dim * num / denom), as libjpeg computes it
// Decodes a JPEG at the given scale into out (jpeg_scaled_dim(w) * jpeg_scaled_dim(h) * channels).
// scale must be one of TurboJPEG's factors (fastnn::Error otherwise). ImageLimits apply to the full
// image. Returns the header info with width/height replaced by the scaled output size.
ImageInfo decode_jpeg_scaled_into(std::string_view bytes, JpegScale scale, int desired_channels,
                                  uint8_t* out, size_t out_size, const ImageLimits& limits = {});

// Encoders. channels: 1, 3 or 4 (JPEG: 1 or 3). compression_level 0..9 for PNG. JPEG: quality 1..100,
// 4:2:0 chroma subsampling, accurate integer DCT. Bad arguments throw fastnn::Error.
std::string encode_png(const uint8_t* pixels, int width, int height, int channels, int compression_level = 6);
std::string encode_jpeg(const uint8_t* pixels, int width, int height, int channels, int quality = 90);

}  // namespace fastnn
