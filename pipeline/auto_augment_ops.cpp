// The 14 ops of torchvision's augmentation space as PIL 9.4 computes them (see auto_augment.h for the
// contract; auto_augment.cpp has the tables and the policies).
//
// Every expression below that mirrors a Python or C one keeps its order of operations: the outputs are
// compared byte for byte with torchvision's, and a reassociated sum can move a sample point across a
// pixel boundary. The build targets baseline x86-64 (no FMA), so nothing is contracted behind our back.
#include "pipeline/auto_augment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/check.h"

namespace fastnn::pipeline {
namespace {

constexpr double kPi = 3.14159265358979323846;  // CPython's Py_MATH_PI
constexpr double kDegToRad = kPi / 180.0;       // math.radians multiplies by this
constexpr double kRadToDeg = 180.0 / kPi;       // math.degrees

// Python's float % (the result takes the divisor's sign).
double py_mod(double x, double m) {
  double r = std::fmod(x, m);
  if (r != 0) {
    if ((m < 0) != (r < 0)) r += m;
  } else {
    r = std::copysign(0.0, m);
  }
  return r;
}

// Python's round(x, 15): the correctly rounded 15-decimal string, read back (glibc's printf rounds the
// exact binary value half to even, as CPython's dtoa does).
double py_round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", x);
  return std::strtod(buf, nullptr);
}

// ---- Geometry: PIL's Image.transform(size, AFFINE, a, NEAREST, fillcolor=0) ----------------------
// Output pixel (x, y) takes the input pixel under a · (x + 0.5, y + 0.5); outside the input: 0.

int pil_coord(double v, int limit) { return v < 0.0 ? -1 : v >= limit ? limit : static_cast<int>(v); }
int pil_floor(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }

template <int C>
inline void put_pixel(uint8_t* dst, const uint8_t* src) {
  for (int c = 0; c < C; ++c) dst[c] = src[c];
}

// ImagingTransformAffine: a pure scale/translation (a[1] == a[3] == 0) by ImagingScaleAffine; else in
// 16.16 fixed point when the four corners map inside ±32768 (always, at image sizes we produce), else
// in double. `src` is a copy of the input; `img` receives the output.
template <int C>
void affine_nearest_c(const Image8& img, const uint8_t* src, const double a[6]) {
  const int W = img.width, H = img.height;
  uint8_t* const out = img.pixels;
  const size_t stride = static_cast<size_t>(W) * C;
  std::memset(out, 0, stride * H);
  if (a[1] == 0 && a[3] == 0) {
    // PIL tabulates the columns once; the same additions redone per row give the same doubles, and no
    // allocation per sample.
    const double x_start = a[2] + a[0] * 0.5;
    double yo = a[5] + a[4] * 0.5;
    for (int y = 0; y < H; ++y, yo += a[4]) {
      const int yi = pil_coord(yo, H);
      if (yi < 0 || yi >= H) continue;
      double xo = x_start;
      for (int x = 0; x < W; ++x, xo += a[0]) {
        const int xi = pil_coord(xo, W);
        if (xi >= 0 && xi < W) put_pixel<C>(out + y * stride + x * C, src + yi * stride + xi * C);
      }
    }
    return;
  }
  auto fixed_ok = [&](int x, int y) {
    return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
  };
  if (fixed_ok(0, 0) && fixed_ok(W, H) && fixed_ok(0, H) && fixed_ok(W, 0)) {
    auto fix = [](double v) { return pil_floor(v * 65536.0 + 0.5); };
    const int32_t a0 = fix(a[0]), a1 = fix(a[1]), a3 = fix(a[3]), a4 = fix(a[4]);
    int32_t a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5), a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
    for (int y = 0; y < H; ++y, a2 += a1, a5 += a4) {
      int32_t xx = a2, yy = a5;
      uint8_t* row = out + y * stride;
      for (int x = 0; x < W; ++x, xx += a0, yy += a3) {
        const int xi = xx >> 16, yi = yy >> 16;  // arithmetic shifts: floor, as PIL's
        if (static_cast<unsigned>(xi) < static_cast<unsigned>(W) && static_cast<unsigned>(yi) < static_cast<unsigned>(H))
          put_pixel<C>(row + x * C, src + yi * stride + xi * C);
      }
    }
    return;
  }
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5, yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < H; ++y, xo += a[1], yo += a[4]) {
    double xx = xo, yy = yo;
    for (int x = 0; x < W; ++x, xx += a[0], yy += a[3]) {
      const int xi = pil_coord(xx, W), yi = pil_coord(yy, H);
      if (xi >= 0 && xi < W && yi >= 0 && yi < H) put_pixel<C>(out + y * stride + x * C, src + yi * stride + xi * C);
    }
  }
}

void affine_nearest(const Image8& img, const uint8_t* src, const double a[6]) {
  img.channels == 1 ? affine_nearest_c<1>(img, src, a) : affine_nearest_c<3>(img, src, a);
}

// torchvision.transforms.functional._get_inverse_affine_matrix (angle, shear in degrees).
void inverse_affine(double cx, double cy, double angle, double tx, double ty, double scale, double shear_x,
                    double shear_y, double m[6]) {
  const double rot = angle * kDegToRad, sx = shear_x * kDegToRad, sy = shear_y * kDegToRad;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  const double r[6] = {d, -b, 0.0, -c, a, 0.0};
  for (int i = 0; i < 6; ++i) m[i] = r[i] / scale;
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
}

// PIL's ROTATE_90 / ROTATE_180 / ROTATE_270 transposes (square images for 90 and 270).
template <int C>
void transpose_c(const Image8& img, const uint8_t* src, int quarter_turns) {
  const int W = img.width, H = img.height;
  uint8_t* const out = img.pixels;
  const size_t stride = static_cast<size_t>(W) * C;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      int sy, sx;
      if (quarter_turns == 1) sy = x, sx = W - 1 - y;       // anticlockwise
      else if (quarter_turns == 2) sy = H - 1 - y, sx = W - 1 - x;
      else sy = H - 1 - x, sx = y;                           // clockwise
      put_pixel<C>(out + y * stride + x * C, src + sy * stride + sx * C);
    }
}

void transpose(const Image8& img, const uint8_t* src, int quarter_turns) {
  img.channels == 1 ? transpose_c<1>(img, src, quarter_turns) : transpose_c<3>(img, src, quarter_turns);
}

// PIL's Image.rotate(angle, NEAREST, expand=False, center=None, fillcolor=0), angle anticlockwise.
void rotate(const Image8& img, const uint8_t* src, double degrees) {
  const int W = img.width, H = img.height;
  const double angle = py_mod(degrees, 360.0);
  if (angle == 0) {
    std::memcpy(img.pixels, src, static_cast<size_t>(W) * H * img.channels);
    return;
  }
  if (angle == 180) return transpose(img, src, 2);
  if ((angle == 90 || angle == 270) && W == H) return transpose(img, src, angle == 90 ? 1 : 3);
  const double r = -(angle * kDegToRad);
  double m[6] = {py_round15(std::cos(r)), py_round15(std::sin(r)), 0.0,
                 py_round15(-std::sin(r)), py_round15(std::cos(r)), 0.0};
  const double cx = W / 2.0, cy = H / 2.0;
  const double m2 = m[0] * -cx + m[1] * -cy + m[2], m5 = m[3] * -cx + m[4] * -cy + m[5];
  m[2] = m2 + cx;
  m[5] = m5 + cy;
  affine_nearest(img, src, m);
}

// ---- Colour: PIL's ImageEnhance (Image.blend with a degenerate image) ----------------------------

// Image.blend(degenerate, image, alpha): alpha is a C float; within [0, 1] the result is truncated,
// outside it clipped to 0..255 first. `degenerate`: one value per element, or nullptr with `constant`
// for all. The loops keep PIL's float expression per element and vectorise.
void blend_image(const Image8& img, const uint8_t* degenerate, int constant, double factor) {
  const float alpha = static_cast<float>(factor);  // PIL parses a double and passes (float)alpha
  const size_t n = static_cast<size_t>(img.width) * img.height * img.channels;
  uint8_t* const px = img.pixels;
  if (alpha == 1.0f) return;  // ImagingBlend's shortcuts: a copy of the image, or of the degenerate one
  if (alpha == 0.0f) {
    if (degenerate) std::memcpy(px, degenerate, n);
    else std::memset(px, constant, n);
    return;
  }
  auto value = [&](size_t i) -> float {
    const int d = degenerate ? degenerate[i] : constant;
    return static_cast<float>(d + alpha * (px[i] - d));
  };
  if (alpha >= 0 && alpha <= 1.0f) {
    for (size_t i = 0; i < n; ++i) px[i] = static_cast<uint8_t>(value(i));
  } else {
    for (size_t i = 0; i < n; ++i) {
      const float t = value(i);
      px[i] = t <= 0.0f ? 0 : t >= 255.0f ? 255 : static_cast<uint8_t>(t);
    }
  }
}

// ITU-R 601-2 luma as PIL's convert("L"): (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
inline uint8_t luma(const uint8_t* p) {
  return static_cast<uint8_t>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
}

// PIL's ImageFilter.SMOOTH (3x3: 1 1 1 / 1 5 1 / 1 1 1, over 13) as ImagingFilter3x3 computes it in
// float: border rows and columns copied; inside, with P = v * (1/13f) and Q = v * (5/13f) per value,
//   ss = ((0.5 + T[y+1]) + M[y]) + T[y-1],  T[r] = (P[j-C] + P[j]) + P[j+C],  M = (P[j-C] + Q[j]) + P[j+C]
// (the row below first, each kernel row summed left to right), truncated and clipped to 0..255 — the
// same float operations as PIL's, but each row's T is computed once and used twice (as the row below,
// then two rows on as the row above). `rows`: room for kSmoothRows rows of floats (P, M, three T).
constexpr int kSmoothRows = 5;

void smooth(const Image8& img, uint8_t* out, float* rows) {
  const int W = img.width, H = img.height, C = img.channels;
  const uint8_t* const in = img.pixels;
  const size_t stride = static_cast<size_t>(W) * C;
  std::memcpy(out, in, stride * H);
  if (W < 3 || H < 3) return;  // ImagingFilter returns a copy of an image smaller than the kernel
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  float* const p = rows;
  float* const m = rows + stride;
  float* const t[3] = {rows + 2 * stride, rows + 3 * stride, rows + 4 * stride};  // T of row r in t[r % 3]
  // P of row r, then its T.
  auto next_row = [&](int r) {
    const uint8_t* v = in + r * stride;
    for (size_t j = 0; j < stride; ++j) p[j] = static_cast<float>(v[j]) * k1;
    float* tr = t[r % 3];
    for (size_t j = C; j < stride - C; ++j) tr[j] = p[j - C] + p[j] + p[j + C];
  };
  next_row(0);
  next_row(1);
  for (int y = 1; y < H - 1; ++y) {
    const uint8_t* mid = in + y * stride;
    for (size_t j = C; j < stride - C; ++j) m[j] = p[j - C] + static_cast<float>(mid[j]) * k5 + p[j + C];
    next_row(y + 1);  // P now row y + 1; its T replaces row y - 2's
    const float* below = t[(y + 1) % 3];
    const float* above = t[(y - 1) % 3];
    uint8_t* o = out + y * stride;
    for (size_t j = C; j < stride - C; ++j) {
      float ss = 0.5f;  // offset 0, plus 0.5 for rounding
      ss += below[j];
      ss += m[j];
      ss += above[j];
      o[j] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : static_cast<uint8_t>(ss);
    }
  }
}

// ---- ImageOps: lookup tables per channel ------------------------------------------------------------

void apply_luts(const Image8& img, const uint8_t (*lut)[256]) {
  const size_t n = static_cast<size_t>(img.width) * img.height;
  uint8_t* const px = img.pixels;
  if (img.channels == 1) {
    for (size_t i = 0; i < n; ++i) px[i] = lut[0][px[i]];
    return;
  }
  for (size_t i = 0; i < 3 * n; i += 3) {
    px[i] = lut[0][px[i]];
    px[i + 1] = lut[1][px[i + 1]];
    px[i + 2] = lut[2][px[i + 2]];
  }
}

void histograms(const Image8& img, uint64_t (*h)[256]) {
  const size_t n = static_cast<size_t>(img.width) * img.height;
  const int C = img.channels;
  const uint8_t* const px = img.pixels;
  for (int c = 0; c < C; ++c) std::fill(h[c], h[c] + 256, 0);
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < C; ++c) ++h[c][px[i * C + c]];
}

// ImageOps.autocontrast(cutoff=0): each channel's [lo, hi] stretched to [0, 255], int(ix * scale + offset).
void autocontrast(const Image8& img) {
  uint64_t h[3][256];
  uint8_t lut[3][256];
  histograms(img, h);
  for (int c = 0; c < img.channels; ++c) {
    int lo = 0, hi = 255;
    while (lo < 255 && !h[c][lo]) ++lo;
    while (hi > 0 && !h[c][hi]) --hi;
    if (hi <= lo) {
      for (int i = 0; i < 256; ++i) lut[c][i] = static_cast<uint8_t>(i);
      continue;
    }
    const double scale = 255.0 / (hi - lo), offset = -lo * scale;
    for (int i = 0; i < 256; ++i) {
      const double v = i * scale + offset;  // Python's int(): toward zero
      lut[c][i] = static_cast<uint8_t>(std::clamp(static_cast<long>(v), 0L, 255L));
    }
  }
  apply_luts(img, lut);
}

// ImageOps.equalize: step = (pixels - count of the highest value present) // 255; value i maps to
// (step // 2 + pixels below i) // step, clipped to 255 as Image.point clips its table.
void equalize(const Image8& img) {
  uint64_t h[3][256];
  uint8_t lut[3][256];
  histograms(img, h);
  for (int c = 0; c < img.channels; ++c) {
    uint64_t total = 0, last = 0;
    int present = 0;
    for (int i = 0; i < 256; ++i)
      if (h[c][i]) total += h[c][i], last = h[c][i], ++present;
    const uint64_t step = present <= 1 ? 0 : (total - last) / 255;
    if (step == 0) {
      for (int i = 0; i < 256; ++i) lut[c][i] = static_cast<uint8_t>(i);
      continue;
    }
    uint64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      lut[c][i] = static_cast<uint8_t>(std::min<uint64_t>(n / step, 255));
      n += h[c][i];
    }
  }
  apply_luts(img, lut);
}

}  // namespace

void apply_augment_op(AugmentOp op, double m, const Image8& img, std::vector<uint8_t>& scratch) {
  FASTNN_CHECK(img.channels == 1 || img.channels == 3, "auto augment: ", img.channels, " channels (1 or 3)");
  const int W = img.width, H = img.height, C = img.channels;
  const size_t n = static_cast<size_t>(W) * H * C;
  // A local pointer: stores through uint8_t* may alias anything, and would make every loop reload
  // img.pixels (and not vectorise).
  uint8_t* const px = img.pixels;
  auto copy_input = [&]() {
    if (scratch.size() < n) scratch.resize(n);
    std::memcpy(scratch.data(), px, n);
    return scratch.data();
  };
  double a[6];
  switch (op) {
    case AugmentOp::kIdentity: return;
    case AugmentOp::kShearX:  // F.affine(shear=[degrees(atan(m)), 0], center=[0, 0])
      inverse_affine(0, 0, 0.0, 0, 0, 1.0, std::atan(m) * kRadToDeg, 0.0, a);
      return affine_nearest(img, copy_input(), a);
    case AugmentOp::kShearY:
      inverse_affine(0, 0, 0.0, 0, 0, 1.0, 0.0, std::atan(m) * kRadToDeg, a);
      return affine_nearest(img, copy_input(), a);
    case AugmentOp::kTranslateX:  // F.affine(translate=[int(m), 0]) about the centre
      inverse_affine(W * 0.5, H * 0.5, 0.0, static_cast<int>(m), 0, 1.0, 0.0, 0.0, a);
      return affine_nearest(img, copy_input(), a);
    case AugmentOp::kTranslateY:
      inverse_affine(W * 0.5, H * 0.5, 0.0, 0, static_cast<int>(m), 1.0, 0.0, 0.0, a);
      return affine_nearest(img, copy_input(), a);
    case AugmentOp::kRotate: return rotate(img, copy_input(), m);
    case AugmentOp::kBrightness: return blend_image(img, nullptr, 0, 1.0 + m);
    case AugmentOp::kColor: {
      if (C == 1) return;  // an 'L' image is its own greyscale: blending it with itself changes nothing
      uint8_t* grey = copy_input();
      for (size_t i = 0; i < n; i += 3) grey[i] = grey[i + 1] = grey[i + 2] = luma(px + i);
      return blend_image(img, grey, 0, 1.0 + m);
    }
    case AugmentOp::kContrast: {
      // The degenerate image is the mean grey level, int(mean + 0.5), of the luma image.
      uint64_t sum = 0;
      for (size_t i = 0; i < n; i += C) sum += C == 1 ? px[i] : luma(px + i);
      const int mean = static_cast<int>(static_cast<double>(sum) / (static_cast<double>(W) * H) + 0.5);
      return blend_image(img, nullptr, mean, 1.0 + m);
    }
    case AugmentOp::kSharpness: {
      // The smoothed image, then (16-byte aligned) the filter's float rows; the vector's storage comes
      // from operator new, which creates the floats implicitly (C++20) and aligns to 16.
      const size_t floats_at = (n + 15) / 16 * 16;
      const size_t need = floats_at + sizeof(float) * kSmoothRows * static_cast<size_t>(W) * C;
      if (scratch.size() < need) scratch.resize(need);
      smooth(img, scratch.data(), reinterpret_cast<float*>(scratch.data() + floats_at));
      return blend_image(img, scratch.data(), 0, 1.0 + m);
    }
    case AugmentOp::kPosterize: {  // ImageOps.posterize(int(m)): keep the top bits
      const int bits = static_cast<int>(m);
      const int mask = ~((1 << (8 - bits)) - 1);
      for (size_t i = 0; i < n; ++i) px[i] = static_cast<uint8_t>(px[i] & mask);
      return;
    }
    case AugmentOp::kSolarize: {  // ImageOps.solarize(m): values >= m inverted, by a table as PIL
      uint8_t lut[3][256];
      for (int i = 0; i < 256; ++i) lut[0][i] = lut[1][i] = lut[2][i] = static_cast<uint8_t>(i < m ? i : 255 - i);
      return apply_luts(img, lut);
    }
    case AugmentOp::kAutoContrast: return autocontrast(img);
    case AugmentOp::kEqualize: return equalize(img);
  }
}

}  // namespace fastnn::pipeline
