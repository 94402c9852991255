#include "core/report/png_data_uri.h"

#include "core/base64.h"
#include "core/check.h"
#include "core/report/html.h"

namespace fastnn::report {

std::string png_data_uri(const uint8_t* pixels, int width, int height, int channels) {
  return "data:image/png;base64," + base64_encode(encode_png(pixels, width, height, channels, 9));
}

std::string img_tag(const Image& image, std::string_view alt, int scale) {
  return str("<img src=\"", png_data_uri(image.pixels.data(), image.width, image.height, image.channels), "\" width=\"",
             image.width * scale, "\" height=\"", image.height * scale, "\" alt=\"", html_escape(alt), "\" title=\"",
             html_escape(alt), "\">");
}

}  // namespace fastnn::report
