// JPEG decode of a window only, optionally DCT-scaled, through libjpeg-turbo's libjpeg API.
//
// TurboJPEG 2.1's tj API decodes whole images; training crops need a fraction of the pixels. This
// decoder asks libjpeg for just the window: jpeg_crop_scanline limits IDCT, upsampling and colour
// conversion to the iMCU columns the window touches, jpeg_skip_scanlines skips the rows above it
// without colour work, and decoding stops after the window's last row. With a DCT scale (1/2, 1/4,
// 1/8) the IDCT itself produces the smaller image, which is both cheaper and an anti-aliased
// downscale. Pixels match a full decode at the same scale cropped to the window.
//
// Untrusted input: the header is checked against ImageLimits before any pixel work; corrupt data,
// including what libjpeg only warns about (a truncated file it would pad with grey), throws
// FormatError. CMYK/YCCK JPEGs are not handled here (ImageInfo::channels == 4 tells the caller to
// use decode_image_into instead).
//
// Threading: one decoder per thread; it keeps its libjpeg object and a row buffer between images,
// so a steady stream of images allocates only libjpeg's per-image pools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/image.h"

namespace fastnn {

// Output size of a JPEG dimension at scale 1/denom (denom 1, 2, 4 or 8): ceil(dim / denom), as
// libjpeg computes it.
inline int jpeg_dim_at_scale(int dim, int denom) { return (dim + denom - 1) / denom; }

class JpegCropDecoder {
 public:
  JpegCropDecoder();
  ~JpegCropDecoder();
  JpegCropDecoder(const JpegCropDecoder&) = delete;
  JpegCropDecoder& operator=(const JpegCropDecoder&) = delete;

  // Header only: full-size dimensions, channels 1 (gray), 3 (YCbCr/RGB) or 4 (CMYK/YCCK).
  // Throws FormatError for a corrupt header or one over the limits.
  ImageInfo read_header(std::string_view bytes, const ImageLimits& limits = {});

  // Decodes the window [x, x + w) × [y, y + h) of the image scaled by 1/scale_denom (1, 2, 4, 8;
  // the window is in scaled coordinates and must lie inside jpeg_dim_at_scale(width) ×
  // jpeg_dim_at_scale(height)) into `out`: h rows of w * channels bytes, channels 1 or 3.
  // out_size must be at least w * h * channels. Returns the full-size header info.
  ImageInfo decode_window(std::string_view bytes, int scale_denom, int x, int y, int w, int h, int channels,
                          uint8_t* out, size_t out_size, const ImageLimits& limits = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn
