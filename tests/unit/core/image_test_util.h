// Helpers shared by the image codec tests: deterministic test pictures, error measures, and an
// independent PNG writer that drives libpng directly (every colour type and bit depth, palettes,
// tRNS, interlacing), so decoder tests do not depend on fastnn's own encoder.
#pragma once

#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace fastnn::testing {

// RGB to gray as libjpeg and libpng compute it: BT.601 luma in 16-bit fixed point, rounded.
inline uint8_t luma(int r, int g, int b) {
  return static_cast<uint8_t>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16);
}

// Smooth colour gradients plus mild brightness noise (the same on every channel, like sensor luma
// noise): compresses like a photograph, not like flat colour.
inline std::vector<uint8_t> photo_like(int w, int h, int c, uint32_t seed = 1, int noise = 6) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> n(-noise, noise);
  std::vector<uint8_t> v(static_cast<size_t>(w) * h * c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int grain = n(rng);
      for (int k = 0; k < c; ++k) {
        const double base = 128 + 90 * std::sin(0.045 * x * (k + 1) + 0.03 * y) * std::cos(0.02 * y - 0.3 * k);
        v[(static_cast<size_t>(y) * w + x) * c + k] = static_cast<uint8_t>(std::clamp(base + grain, 0.0, 255.0));
      }
    }
  return v;
}

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

inline double mean_abs_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size() || a.empty()) return 1e9;
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(int{a[i]} - int{b[i]});
  return s / static_cast<double>(a.size());
}

// Mean of each f×f block (the block grid is cut to whole blocks: floor(w/f) × floor(h/f)).
inline std::vector<uint8_t> box_downscale(const std::vector<uint8_t>& img, int w, int h, int c, int f) {
  const int ow = w / f, oh = h / f;
  std::vector<uint8_t> out(static_cast<size_t>(ow) * oh * c);
  for (int y = 0; y < oh; ++y)
    for (int x = 0; x < ow; ++x)
      for (int k = 0; k < c; ++k) {
        int s = 0;
        for (int dy = 0; dy < f; ++dy)
          for (int dx = 0; dx < f; ++dx) s += img[((static_cast<size_t>(y) * f + dy) * w + x * f + dx) * c + k];
        out[(static_cast<size_t>(y) * ow + x) * c + k] = static_cast<uint8_t>((s + f * f / 2) / (f * f));
      }
  return out;
}

// Top-left ow × oh window of a w-wide image.
inline std::vector<uint8_t> crop(const std::vector<uint8_t>& img, int w, int c, int ow, int oh) {
  std::vector<uint8_t> out;
  for (int y = 0; y < oh; ++y)
    out.insert(out.end(), img.begin() + static_cast<size_t>(y) * w * c,
               img.begin() + (static_cast<size_t>(y) * w + ow) * c);
  return out;
}

struct PngSpec {
  int width = 0, height = 0;
  int bit_depth = 8;
  int color_type = PNG_COLOR_TYPE_GRAY;
  bool interlace = false;
  std::vector<png_color> palette;
  std::vector<uint8_t> trns_alpha;  // palette tRNS
  bool trns_key = false;            // gray/RGB tRNS colour key
  png_color_16 key{};
  // Samples in PNG order, row-major, samples_per_pixel(color_type) per pixel, each < 2^bit_depth.
  std::vector<uint16_t> samples;
};

inline int samples_per_pixel(int color_type) {
  switch (color_type) {
    case PNG_COLOR_TYPE_GRAY_ALPHA: return 2;
    case PNG_COLOR_TYPE_RGB: return 3;
    case PNG_COLOR_TYPE_RGB_ALPHA: return 4;
    default: return 1;  // gray, palette
  }
}

namespace detail {
inline void png_append(png_structp png, png_bytep data, size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<const char*>(data), n);
}
inline void png_no_flush(png_structp) {}
// setjmp frame: no locals with destructors.
inline bool png_write_rows(png_structp png, png_infop info, const PngSpec* s, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, s->width, s->height, s->bit_depth, s->color_type,
               s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!s->palette.empty()) png_set_PLTE(png, info, s->palette.data(), static_cast<int>(s->palette.size()));
  if (!s->trns_alpha.empty())
    png_set_tRNS(png, info, s->trns_alpha.data(), static_cast<int>(s->trns_alpha.size()), nullptr);
  if (s->trns_key) png_set_tRNS(png, info, nullptr, 0, &s->key);
  png_set_rows(png, info, rows);
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  return true;
}
}  // namespace detail

// Packs the samples into PNG rows (big-endian 16-bit, MSB-first sub-byte) and writes the file.
// Returns "" if libpng refused.
inline std::string write_png(const PngSpec& s) {
  const int spp = samples_per_pixel(s.color_type);
  const size_t bits_per_row = static_cast<size_t>(s.width) * spp * s.bit_depth;
  const size_t rowbytes = (bits_per_row + 7) / 8;
  std::vector<uint8_t> data(rowbytes * s.height, 0);
  std::vector<png_bytep> rows(s.height);
  for (int y = 0; y < s.height; ++y) {
    uint8_t* row = data.data() + y * rowbytes;
    rows[y] = row;
    for (int i = 0; i < s.width * spp; ++i) {
      const uint16_t v = s.samples[static_cast<size_t>(y) * s.width * spp + i];
      if (s.bit_depth == 16) {
        row[2 * i] = static_cast<uint8_t>(v >> 8);
        row[2 * i + 1] = static_cast<uint8_t>(v);
      } else if (s.bit_depth == 8) {
        row[i] = static_cast<uint8_t>(v);
      } else {
        const size_t bit = static_cast<size_t>(i) * s.bit_depth;
        row[bit / 8] |= static_cast<uint8_t>(v << (8 - s.bit_depth - bit % 8));
      }
    }
  }
  std::string out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, detail::png_append, detail::png_no_flush);
  const bool ok = detail::png_write_rows(png, info, &s, rows.data());
  png_destroy_write_struct(&png, &info);
  return ok ? out : std::string();
}

}  // namespace fastnn::testing
