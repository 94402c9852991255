// PNG decoding of files written by libpng directly (every colour type, bit depth, palette/tRNS,
// Adam7), checked against expectations computed from the samples; encode → decode round trips.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/image.h"
#include "tests/unit/core/image_test_util.h"

namespace fastnn {
namespace {

using testing::PngSpec;

struct Rgba {
  uint8_t r, g, b, a;
};

uint8_t to8(uint16_t v, int bit_depth) {
  if (bit_depth == 16) return static_cast<uint8_t>(v >> 8);  // png_set_strip_16 keeps the high byte
  if (bit_depth == 8) return static_cast<uint8_t>(v);
  return static_cast<uint8_t>(v * (255 / ((1 << bit_depth) - 1)));  // 1 → 255, 2 → 85, 4 → 17
}

// What each pixel means, per the PNG spec.
std::vector<Rgba> canonical(const PngSpec& s) {
  const int spp = testing::samples_per_pixel(s.color_type);
  std::vector<Rgba> px;
  for (size_t i = 0; i < static_cast<size_t>(s.width) * s.height; ++i) {
    const uint16_t* p = &s.samples[i * spp];
    const int bd = s.bit_depth;
    switch (s.color_type) {
      case PNG_COLOR_TYPE_GRAY: {
        const uint8_t g = to8(p[0], bd);
        px.push_back({g, g, g, static_cast<uint8_t>(s.trns_key && p[0] == s.key.gray ? 0 : 255)});
        break;
      }
      case PNG_COLOR_TYPE_GRAY_ALPHA: {
        const uint8_t g = to8(p[0], bd);
        px.push_back({g, g, g, to8(p[1], bd)});
        break;
      }
      case PNG_COLOR_TYPE_RGB: {
        const bool key = s.trns_key && p[0] == s.key.red && p[1] == s.key.green && p[2] == s.key.blue;
        px.push_back({to8(p[0], bd), to8(p[1], bd), to8(p[2], bd), static_cast<uint8_t>(key ? 0 : 255)});
        break;
      }
      case PNG_COLOR_TYPE_RGB_ALPHA: px.push_back({to8(p[0], bd), to8(p[1], bd), to8(p[2], bd), to8(p[3], bd)}); break;
      default: {  // palette
        const png_color c = s.palette.at(p[0]);
        px.push_back({c.red, c.green, c.blue, p[0] < s.trns_alpha.size() ? s.trns_alpha[p[0]] : uint8_t{255}});
      }
    }
  }
  return px;
}

std::vector<uint8_t> layout(const std::vector<Rgba>& px, int channels) {
  std::vector<uint8_t> out;
  for (const Rgba& p : px) {
    if (channels == 1) {
      out.push_back(testing::luma(p.r, p.g, p.b));
      continue;
    }
    out.insert(out.end(), {p.r, p.g, p.b});
    if (channels == 4) out.push_back(p.a);
  }
  return out;
}

PngSpec make(int w, int h, int bit_depth, int color_type, bool interlace, uint32_t seed) {
  PngSpec s;
  s.width = w;
  s.height = h;
  s.bit_depth = bit_depth;
  s.color_type = color_type;
  s.interlace = interlace;
  std::mt19937 rng(seed);
  const int spp = testing::samples_per_pixel(color_type);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    const int n = std::min(1 << bit_depth, 6);
    for (int i = 0; i < n; ++i)
      s.palette.push_back({static_cast<png_byte>(rng()), static_cast<png_byte>(rng()), static_cast<png_byte>(rng())});
    for (size_t i = 0; i < static_cast<size_t>(w) * h; ++i) s.samples.push_back(static_cast<uint16_t>(rng() % n));
  } else {
    for (size_t i = 0; i < static_cast<size_t>(w) * h * spp; ++i)
      s.samples.push_back(static_cast<uint16_t>(rng() & ((1u << bit_depth) - 1)));
  }
  return s;
}

struct Case {
  const char* name;
  PngSpec spec;
  int stored;  // expected ImageInfo::channels, by the documented rule
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (bool il : {false, true}) {
    const int w = il ? 9 : 13, h = il ? 11 : 7;
    auto add = [&](const char* name, PngSpec s, int stored) { cases.push_back({name, std::move(s), stored}); };
    add("gray1", make(w, h, 1, PNG_COLOR_TYPE_GRAY, il, 1), 1);
    add("gray2", make(w, h, 2, PNG_COLOR_TYPE_GRAY, il, 2), 1);
    add("gray4", make(w, h, 4, PNG_COLOR_TYPE_GRAY, il, 3), 1);
    add("gray8", make(w, h, 8, PNG_COLOR_TYPE_GRAY, il, 4), 1);
    add("gray16", make(w, h, 16, PNG_COLOR_TYPE_GRAY, il, 5), 1);
    add("gray_alpha8", make(w, h, 8, PNG_COLOR_TYPE_GRAY_ALPHA, il, 6), 4);
    add("gray_alpha16", make(w, h, 16, PNG_COLOR_TYPE_GRAY_ALPHA, il, 7), 4);
    add("rgb8", make(w, h, 8, PNG_COLOR_TYPE_RGB, il, 8), 3);
    add("rgb16", make(w, h, 16, PNG_COLOR_TYPE_RGB, il, 9), 3);
    add("rgba8", make(w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, il, 10), 4);
    add("rgba16", make(w, h, 16, PNG_COLOR_TYPE_RGB_ALPHA, il, 11), 4);
    add("palette1", make(w, h, 1, PNG_COLOR_TYPE_PALETTE, il, 12), 3);
    add("palette4", make(w, h, 4, PNG_COLOR_TYPE_PALETTE, il, 13), 3);
    PngSpec pal = make(w, h, 8, PNG_COLOR_TYPE_PALETTE, il, 14);
    pal.trns_alpha = {0, 128, 200};  // shorter than the palette: the rest are opaque
    add("palette8_trns", pal, 4);
    PngSpec gk = make(w, h, 8, PNG_COLOR_TYPE_GRAY, il, 15);
    gk.trns_key = true;
    gk.key.gray = 77;
    for (size_t i = 0; i < gk.samples.size(); i += 3) gk.samples[i] = 77;
    add("gray8_key", gk, 4);
    PngSpec gk16 = make(w, h, 16, PNG_COLOR_TYPE_GRAY, il, 16);
    gk16.trns_key = true;
    gk16.key.gray = 0x1234;
    for (size_t i = 0; i < gk16.samples.size(); i += 4) gk16.samples[i] = 0x1234;
    gk16.samples[1] = 0x12ff;  // same high byte, different value: stays opaque
    add("gray16_key", gk16, 4);
    PngSpec rk = make(w, h, 8, PNG_COLOR_TYPE_RGB, il, 17);
    rk.trns_key = true;
    rk.key.red = 1, rk.key.green = 2, rk.key.blue = 3;
    for (size_t i = 0; i < rk.samples.size(); i += 15) rk.samples[i] = 1, rk.samples[i + 1] = 2, rk.samples[i + 2] = 3;
    add("rgb8_key", rk, 4);
  }
  return cases;
}

TEST(image_png, DecodesEveryColorTypeAndBitDepthInEveryLayout) {
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(std::string(c.name) + (c.spec.interlace ? " interlaced" : ""));
    const std::string file = testing::write_png(c.spec);
    ASSERT_FALSE(file.empty());
    const ImageInfo info = read_image_info(file);
    EXPECT_EQ(info.format, ImageFormat::kPng);
    EXPECT_EQ(info.width, c.spec.width);
    EXPECT_EQ(info.height, c.spec.height);
    EXPECT_EQ(info.channels, c.stored);
    const std::vector<Rgba> want = canonical(c.spec);
    for (int desired : {0, 1, 3, 4}) {
      SCOPED_TRACE("desired " + std::to_string(desired));
      const Image img = decode_image(file, desired);
      const int ch = desired == 0 ? c.stored : desired;
      EXPECT_EQ(img.channels, ch);
      EXPECT_EQ(img.width, c.spec.width);
      EXPECT_EQ(img.height, c.spec.height);
      EXPECT_EQ(img.pixels, layout(want, ch));
    }
  }
}

// A few expectations written out by hand, independent of the helpers above.
TEST(image_png, HandComputedSamples) {
  PngSpec g16;
  g16.width = 2, g16.height = 1, g16.bit_depth = 16, g16.color_type = PNG_COLOR_TYPE_GRAY;
  g16.samples = {0xABCD, 0x00FF};
  EXPECT_EQ(decode_image(testing::write_png(g16)).pixels, (std::vector<uint8_t>{0xAB, 0x00}));

  PngSpec g2;
  g2.width = 4, g2.height = 1, g2.bit_depth = 2, g2.color_type = PNG_COLOR_TYPE_GRAY;
  g2.samples = {0, 1, 2, 3};
  EXPECT_EQ(decode_image(testing::write_png(g2)).pixels, (std::vector<uint8_t>{0, 85, 170, 255}));

  PngSpec pal;
  pal.width = 3, pal.height = 1, pal.bit_depth = 8, pal.color_type = PNG_COLOR_TYPE_PALETTE;
  pal.palette = {{10, 20, 30}, {40, 50, 60}, {70, 80, 90}};
  pal.trns_alpha = {0, 99};
  pal.samples = {1, 2, 0};
  EXPECT_EQ(decode_image(testing::write_png(pal)).pixels,
            (std::vector<uint8_t>{40, 50, 60, 99, 70, 80, 90, 255, 10, 20, 30, 0}));
  EXPECT_EQ(decode_image(testing::write_png(pal), 3).pixels,
            (std::vector<uint8_t>{40, 50, 60, 70, 80, 90, 10, 20, 30}));

  PngSpec ga;
  ga.width = 1, ga.height = 1, ga.bit_depth = 8, ga.color_type = PNG_COLOR_TYPE_GRAY_ALPHA;
  ga.samples = {200, 7};
  EXPECT_EQ(decode_image(testing::write_png(ga)).pixels, (std::vector<uint8_t>{200, 200, 200, 7}));
  EXPECT_EQ(decode_image(testing::write_png(ga), 1).pixels, (std::vector<uint8_t>{200}));
}

// RGB → gray is BT.601 luma: 0.299 R + 0.587 G + 0.114 B, rounded.
TEST(image_png, RgbToGrayKnownAnswers) {
  const std::vector<uint8_t> rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 10, 20, 30, 0, 0, 0};
  const std::string png = encode_png(rgb.data(), 6, 1, 3);
  EXPECT_EQ(decode_image(png, 1).pixels, (std::vector<uint8_t>{76, 150, 29, 255, 18, 0}));
  // Gray → RGB(A) replicates; added alpha is opaque.
  const std::vector<uint8_t> gray = {0, 9, 255};
  EXPECT_EQ(decode_image(encode_png(gray.data(), 3, 1, 1), 4).pixels,
            (std::vector<uint8_t>{0, 0, 0, 255, 9, 9, 9, 255, 255, 255, 255, 255}));
}

TEST(image_png, EncodeDecodeRoundTripIsExact) {
  for (int c : {1, 3, 4})
    for (int level : {0, 6, 9}) {
      SCOPED_TRACE("channels " + std::to_string(c) + " level " + std::to_string(level));
      const int w = 17, h = 9;
      const std::vector<uint8_t> px = testing::random_bytes(static_cast<size_t>(w) * h * c, 40 + c);
      const std::string png = encode_png(px.data(), w, h, c, level);
      ASSERT_EQ(detect_image_format(png), ImageFormat::kPng);
      const Image img = decode_image(png);
      EXPECT_EQ(img.width, w);
      EXPECT_EQ(img.height, h);
      EXPECT_EQ(img.channels, c);
      EXPECT_EQ(img.pixels, px);
    }
}

TEST(image_png, DecodeIntoChecksTheBufferAndArguments) {
  const std::vector<uint8_t> px = testing::random_bytes(4 * 3 * 3, 5);
  const std::string png = encode_png(px.data(), 4, 3, 3);
  std::vector<uint8_t> out(4 * 3 * 3);
  EXPECT_THROW(decode_image_into(png, 3, out.data(), out.size() - 1), Error);
  EXPECT_THROW(decode_image_into(png, 2, out.data(), out.size()), Error);
  const ImageInfo info = decode_image_into(png, 3, out.data(), out.size());
  EXPECT_EQ(info.width, 4);
  EXPECT_EQ(out, px);
  EXPECT_EQ(decoded_size(info, 0), 36u);
  EXPECT_EQ(decoded_size(info, 4), 48u);
  EXPECT_THROW(encode_png(px.data(), 4, 3, 2), Error);
  EXPECT_THROW(encode_png(px.data(), 0, 3, 3), Error);
  EXPECT_THROW(encode_png(px.data(), 4, 3, 3, 10), Error);
}

}  // namespace
}  // namespace fastnn
