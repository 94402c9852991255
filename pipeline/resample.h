// The augmentation kernel: crop a window of an 8-bit image, resize it (bilinear) or copy it (with
// padding), mirror it, jitter its colours, normalise it and store it as one sample of a batch —
// in one pass over the output, row by row, with no intermediate image.
//
// Geometry: the output spans the window [x0, x0 + w) × [y0, y0 + h) of the view. Output pixel
// (ox, oy) samples the view at
//     sx = x0 + (ox + 0.5) · w / out_w − 0.5,   sy likewise      (half-pixel centres, as PIL,
// OpenCV and TF2's resize), bilinearly, with coordinates clamped to the view. When the window is
// exactly out_w × out_h at integer offsets ("copy mode"), pixels are copied as they are and the
// parts of the window outside the view take `pad_value` (zero padding: cifarnet's pad-and-crop,
// resize_with_crop_or_pad). Mirroring flips the output left-right.
//
// Values: v' = (v − mean[c]) · inv_std[c] for float32/float16; uint8 output stores the (jittered)
// pixel value rounded and clamped, leaving normalisation to the consumer (e.g. on the GPU).
//
// Threading: a Resampler is one worker's scratch (coefficient tables, two rows); not shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pipeline/batch.h"

namespace fastnn::pipeline {

struct ImageView {
  const uint8_t* pixels = nullptr;
  int width = 0;
  int height = 0;
  int channels = 0;
  size_t stride = 0;  // bytes from one row to the next
};

struct Window {
  double x0 = 0, y0 = 0, w = 0, h = 0;
};

// Colour jitter in pixel units (0..255), pointwise: brightness adds `brightness`; saturation blends
// with the luma (0.299 R + 0.587 G + 0.114 B) by factor `saturation` (3 channels only); then the
// result is clamped to [0, 255]. (The luma blend commutes with adding a constant, so unlike slim's
// HSV version the order of the two does not matter and is not drawn.)
struct ColorJitter {
  bool enabled = false;
  float brightness = 0.0f;
  float saturation = 1.0f;
};

struct OutputFormat {
  BatchSpec spec;           // out_h × out_w × channels, dtype, layout
  float mean[4] = {0, 0, 0, 0};
  float inv_std[4] = {1, 1, 1, 1};
  float pad_value = 0.0f;   // pixel value (before normalisation) outside the view in copy mode
  // Batch memory is written past the caches (non-temporal stores); false: plain stores, for an image
  // that is read back at once (auto augmentation's uint8 image).
  bool stream_stores = true;
};

class Resampler {
 public:
  // Writes one sample (format.spec.sample_bytes() bytes) at `slot`. The view's channel count must
  // equal format.spec.channels.
  void run(const ImageView& view, const Window& window, bool flip, const ColorJitter& color,
           const OutputFormat& format, void* slot);

  // True when run() would copy rather than interpolate.
  static bool copy_mode(const Window& window, int out_w, int out_h);

 private:
  template <int C>
  void run_c(const ImageView& view, const Window& window, bool flip, const ColorJitter& color,
             const OutputFormat& format, void* slot);

  std::vector<int32_t> x0_, x1_;
  std::vector<float> fx_;
  std::vector<float> row_a_, out_row_, mean_row_, scale_row_;
  std::vector<unsigned char> store_row_;
};

}  // namespace fastnn::pipeline
