// core/image_jpeg_crop: a window decode equals the full decode (TurboJPEG, same scale) cropped.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/image.h"
#include "core/image_jpeg_crop.h"

namespace fastnn {
namespace {

// Smooth gradients plus a high-frequency pattern, so chroma and IDCT edges matter.
std::vector<uint8_t> synthetic(int w, int h, int c) {
  std::vector<uint8_t> px(size_t(w) * h * c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        double v = 128 + 60 * std::sin(0.07 * x * (k + 1) + 0.05 * y) + 40 * std::cos(0.9 * x * y / (w + 3.0 + k));
        px[(size_t(y) * w + x) * c + k] = uint8_t(std::clamp(v, 0.0, 255.0));
      }
  return px;
}

struct Case {
  int w, h, channels;
};

class JpegCrop : public ::testing::TestWithParam<Case> {};

TEST_P(JpegCrop, WindowEqualsCroppedFullDecode) {
  const Case cs = GetParam();
  auto px = synthetic(cs.w, cs.h, cs.channels);
  std::string jpeg = encode_jpeg(px.data(), cs.w, cs.h, cs.channels, 88);
  JpegCropDecoder dec;
  ImageInfo info = dec.read_header(jpeg);
  EXPECT_EQ(info.width, cs.w);
  EXPECT_EQ(info.height, cs.h);
  EXPECT_EQ(info.channels, cs.channels);
  for (int out_c : {3, 1}) {
    for (int d : {1, 2, 4, 8}) {
      const int sw = jpeg_dim_at_scale(cs.w, d), sh = jpeg_dim_at_scale(cs.h, d);
      std::vector<uint8_t> full(size_t(sw) * sh * out_c);
      decode_jpeg_scaled_into(jpeg, JpegScale{1, d}, out_c, full.data(), full.size());
      // Windows: whole image, interior at odd offsets, touching each edge, one pixel.
      struct W {
        int x, y, w, h;
      };
      std::vector<W> windows = {{0, 0, sw, sh},
                                {sw / 3 + 1, sh / 4 + 1, std::max(1, sw / 2 - 3), std::max(1, sh / 2 - 1)},
                                {0, sh / 2, std::max(1, sw / 3), sh - sh / 2},
                                {sw - std::max(1, sw / 5), 0, std::max(1, sw / 5), std::max(1, sh / 3)},
                                {sw / 2, sh / 2, 1, 1}};
      // Windows starting or ending on iMCU boundaries (16 pixels for 4:2:0 at full scale), and
      // pseudo-random ones.
      for (int b : {8, 16, 32})
        if (b < sw && b < sh) {
          windows.push_back({b, b, std::min(sw - b, 5), std::min(sh - b, 7)});
          windows.push_back({0, 0, b, b});
          windows.push_back({b - 1, b - 1, std::min(sw - b + 1, 2), std::min(sh - b + 1, 2)});
        }
      uint32_t seed = uint32_t(cs.w * 31 + d);
      for (int k = 0; k < 24; ++k) {
        seed = seed * 1664525u + 1013904223u;
        int x = int(seed >> 8) % sw;
        seed = seed * 1664525u + 1013904223u;
        int y = int(seed >> 8) % sh;
        seed = seed * 1664525u + 1013904223u;
        int ww = 1 + int(seed >> 8) % (sw - x);
        seed = seed * 1664525u + 1013904223u;
        int hh = 1 + int(seed >> 8) % (sh - y);
        windows.push_back({x, y, ww, hh});
      }
      for (const W& win : windows) {
        std::vector<uint8_t> got(size_t(win.w) * win.h * out_c);
        dec.decode_window(jpeg, d, win.x, win.y, win.w, win.h, out_c, got.data(), got.size());
        int diff = 0;
        for (int y = 0; y < win.h; ++y)
          for (int x = 0; x < win.w * out_c; ++x)
            diff = std::max(diff, std::abs(int(got[size_t(y) * win.w * out_c + x]) -
                                           int(full[(size_t(win.y + y) * sw + win.x) * out_c + x])));
        EXPECT_EQ(diff, 0) << cs.w << "x" << cs.h << "x" << cs.channels << " -> " << out_c << " at 1/" << d
                           << " window " << win.x << "," << win.y << " " << win.w << "x" << win.h;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, JpegCrop,
                         ::testing::Values(Case{173, 131, 3}, Case{64, 48, 3}, Case{97, 61, 1}, Case{17, 9, 3}));

TEST(JpegCropErrors, RejectsBadInput) {
  auto px = synthetic(40, 30, 3);
  std::string jpeg = encode_jpeg(px.data(), 40, 30, 3, 90);
  JpegCropDecoder dec;
  std::vector<uint8_t> out(40 * 30 * 3);
  EXPECT_THROW(dec.decode_window(jpeg, 1, 30, 0, 11, 1, 3, out.data(), out.size()), Error) << "outside";
  EXPECT_THROW(dec.decode_window(jpeg, 3, 0, 0, 1, 1, 3, out.data(), out.size()), Error) << "scale";
  EXPECT_THROW(dec.decode_window(jpeg, 1, 0, 0, 40, 30, 3, out.data(), 10), Error) << "buffer";
  EXPECT_THROW(dec.read_header("not a jpeg at all"), FormatError);
  // Truncated: the rows after the cut are missing; libjpeg would pad with grey, we refuse.
  std::string cut = jpeg.substr(0, jpeg.size() / 2);
  EXPECT_THROW(dec.decode_window(cut, 1, 0, 0, 40, 30, 3, out.data(), out.size()), FormatError);
  // Over the limits.
  ImageLimits small;
  small.max_pixels = 100;
  EXPECT_THROW(dec.read_header(jpeg, small), FormatError);
  // The decoder is still usable after errors.
  EXPECT_NO_THROW(dec.decode_window(jpeg, 2, 0, 0, 20, 15, 3, out.data(), out.size()));
}

}  // namespace
}  // namespace fastnn
