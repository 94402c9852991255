// Random erasing (pipeline/random_erase.h): timm's rectangle draw within its bounds, the probability
// honoured, the same sample erased the same way on every call, the values in normalised units for every
// output dtype and layout, and nothing outside the rectangle touched.
#include "pipeline/random_erase.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"

#include "core/half.h"

namespace fastnn::pipeline {
namespace {

OutputFormat format(int h, int w, int c, DType dtype, Layout layout) {
  OutputFormat f;
  f.spec = {h, w, c, dtype, layout};
  for (int i = 0; i < 4; ++i) {
    f.mean[i] = 100.0f + 10.0f * i;
    f.inv_std[i] = 1.0f / (50.0f + i);
  }
  return f;
}

size_t element(const BatchSpec& s, int y, int x, int c) {
  return s.layout == Layout::kNHWC ? (static_cast<size_t>(y) * s.width + x) * s.channels + c
                                   : (static_cast<size_t>(c) * s.height + y) * s.width + x;
}

bool inside(const EraseRect& r, int y, int x) {
  return r.erased && y >= r.top && y < r.top + r.height && x >= r.left && x < r.left + r.width;
}

TEST(RandomErase, RectanglesFollowTimmsBoundsAndTheProbability) {
  const OutputFormat f = format(224, 224, 3, DType::kF32, Layout::kNHWC);
  std::vector<float> slot(f.spec.sample_elements());
  EraseOptions o;
  o.prob = 0.25f;
  o.mode = EraseMode::kConst;
  int erased = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const EraseRect r = erase_sample(o, f, 11, 2, static_cast<uint64_t>(i), slot.data());
    if (!r.erased) continue;
    ++erased;
    ASSERT_GE(r.top, 0);
    ASSERT_GE(r.left, 0);
    ASSERT_LT(r.height, 224);  // strictly smaller than the image, as timm
    ASSERT_LT(r.width, 224);
    ASSERT_LE(r.top + r.height, 224);
    ASSERT_LE(r.left + r.width, 224);
    // h and w are rounded from sqrt(area × aspect), sqrt(area / aspect): their product and ratio stay
    // within the bounds up to that rounding.
    const double area = double(r.height) * r.width / (224.0 * 224.0);
    const double slack = (r.height + r.width + 1.0) / (224.0 * 224.0);
    EXPECT_GE(area, 0.02 - slack);
    EXPECT_LE(area, 1.0 / 3.0 + slack);
    const double aspect = double(r.height) / r.width;
    EXPECT_GE(aspect, 0.3 * (r.height - 0.5) / (r.height + 0.5) * (r.width - 0.5) / (r.width + 0.5));
    EXPECT_LE(aspect, (1 / 0.3) * (r.height + 0.5) / (r.height - 0.5) * (r.width + 0.5) / (r.width - 0.5));
  }
  // Binomial(4000, 0.25): mean 1000, sd 27.4; 4 sd either way.
  EXPECT_NEAR(erased, n * 0.25, 4 * std::sqrt(n * 0.25 * 0.75));
  o.prob = 0;
  EXPECT_FALSE(erase_sample(o, f, 11, 2, 7, slot.data()).erased);
  o.prob = 1;
  int all = 0;
  for (int i = 0; i < 200; ++i) all += erase_sample(o, f, 11, 2, static_cast<uint64_t>(i), slot.data()).erased;
  EXPECT_GE(all, 195);  // only when no try of ten fits (rare at these bounds)
}

TEST(RandomErase, TheSameSampleIsErasedTheSameWay) {
  const OutputFormat f = format(32, 40, 3, DType::kF32, Layout::kNCHW);
  EraseOptions o;
  o.prob = 1;
  std::vector<float> a(f.spec.sample_elements(), 5.0f), b = a, c = a;
  const EraseRect ra = erase_sample(o, f, 3, 1, 99, a.data());
  const EraseRect rb = erase_sample(o, f, 3, 1, 99, b.data());
  ASSERT_TRUE(ra.erased);
  EXPECT_EQ(ra.top, rb.top);
  EXPECT_EQ(ra.left, rb.left);
  EXPECT_EQ(a, b);
  erase_sample(o, f, 3, 2, 99, c.data());  // another epoch: another draw
  EXPECT_NE(a, c);
}

// const: 0 in normalised units; a uint8 batch gets the mean pixel. Elements outside keep their bytes.
TEST(RandomErase, ValuesForEveryDtypeAndLayout) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kU8})
    for (Layout layout : {Layout::kNHWC, Layout::kNCHW}) {
      SCOPED_TRACE(str(dtype_name(dtype), layout == Layout::kNHWC ? " NHWC" : " NCHW"));
      const OutputFormat f = format(20, 30, 3, dtype, layout);
      std::vector<uint8_t> slot(f.spec.sample_bytes(), 0xAB);
      EraseOptions o;
      o.prob = 1;
      o.mode = EraseMode::kConst;
      const EraseRect r = erase_sample(o, f, 5, 0, 1, slot.data());
      ASSERT_TRUE(r.erased);
      for (int y = 0; y < 20; ++y)
        for (int x = 0; x < 30; ++x)
          for (int c = 0; c < 3; ++c) {
            const size_t e = element(f.spec, y, x, c);
            if (dtype == DType::kU8) {
              EXPECT_EQ(slot[e], inside(r, y, x) ? static_cast<uint8_t>(std::lround(f.mean[c])) : 0xAB);
            } else if (dtype == DType::kF32) {
              float v;
              std::memcpy(&v, slot.data() + e * 4, 4);
              if (inside(r, y, x)) EXPECT_EQ(v, 0.0f);
              else EXPECT_EQ(slot[e * 4], 0xAB);
            } else {
              uint16_t h;
              std::memcpy(&h, slot.data() + e * 2, 2);
              EXPECT_EQ(h, inside(r, y, x) ? f32_to_f16_bits(0.0f) : uint16_t{0xABAB});
            }
          }
    }
}

// pixel: one N(0, 1) per element; rand: one per channel, the same over the rectangle.
TEST(RandomErase, PixelAndRandModesDrawStandardNormals) {
  const OutputFormat f = format(224, 224, 3, DType::kF32, Layout::kNHWC);
  std::vector<float> slot(f.spec.sample_elements(), 0.0f);
  EraseOptions o;
  o.prob = 1;
  o.mode = EraseMode::kPixel;
  double sum = 0, sq = 0;
  size_t n = 0;
  for (uint64_t i = 0; i < 20; ++i) {
    std::fill(slot.begin(), slot.end(), 0.0f);
    const EraseRect r = erase_sample(o, f, 8, 0, i, slot.data());
    for (int y = r.top; y < r.top + r.height; ++y)
      for (int x = r.left; x < r.left + r.width; ++x)
        for (int c = 0; c < 3; ++c) {
          const double v = slot[element(f.spec, y, x, c)];
          sum += v, sq += v * v, ++n;
        }
  }
  ASSERT_GT(n, 100000u);
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.02);
  o.mode = EraseMode::kRand;
  const EraseRect r = erase_sample(o, f, 8, 0, 3, slot.data());
  for (int c = 0; c < 3; ++c) {
    const float first = slot[element(f.spec, r.top, r.left, c)];
    EXPECT_NE(first, 0.0f);
    EXPECT_EQ(slot[element(f.spec, r.top + r.height - 1, r.left + r.width - 1, c)], first);
  }
  EXPECT_THROW(parse_erase_mode("zeros"), ConfigError);
}

}  // namespace
}  // namespace fastnn::pipeline
