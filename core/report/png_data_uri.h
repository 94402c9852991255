// Pictures inside a report page: pixels → PNG (libpng, core/image.h) → "data:image/png;base64,...",
// and the <img> element that shows one.
//
// Pixels are 8-bit HWC (channels 1, 3 or 4), shown at their own size times `scale` (the page's CSS
// renders them pixelated, so a 28×28 digit stays crisp). Shrinking large images is the caller's job
// (converters/resize.h).
// Errors: Error on bad arguments (core/image.h's encoder). Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/image.h"

namespace fastnn::report {

std::string png_data_uri(const uint8_t* pixels, int width, int height, int channels);

// <img src="DATA_URI" width=W height=H alt="ALT" title="ALT"> shown at `scale` × its size; alt escaped.
std::string img_tag(const Image& image, std::string_view alt, int scale = 1);

}  // namespace fastnn::report
