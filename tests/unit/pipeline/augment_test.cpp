// The resampling kernel and the presets' geometry against values computed by hand on tiny images.
#include <algorithm>
#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include "core/check.h"
#include "pipeline/half.h"
#include "pipeline/preset.h"
#include "pipeline/resample.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

OutputFormat identity(int h, int w, int c, DType dt = DType::kF32, Layout l = Layout::kNHWC) {
  OutputFormat f;
  f.spec = {h, w, c, dt, l};
  return f;
}

std::vector<float> run_float(const std::vector<uint8_t>& px, int w, int h, int c, Window win, int ow, int oh,
                             bool flip = false, ColorJitter color = {}) {
  Resampler r;
  std::vector<float> out(size_t(ow) * oh * c, -999.0f);
  r.run({px.data(), w, h, c, size_t(w) * c}, win, flip, color, identity(oh, ow, c), out.data());
  return out;
}

TEST(Resample, BilinearUpscaleHalfPixelCentres) {
  // Output x samples at (x + 0.5) * 2/4 - 0.5 = -0.25, 0.25, 0.75, 1.25 (clamped to 0 and 1).
  EXPECT_EQ(run_float({0, 100}, 2, 1, 1, {0, 0, 2, 1}, 4, 1), (std::vector<float>{0, 25, 75, 100}));
}

TEST(Resample, BilinearDownscaleAveragesPairs) {
  // (x + 0.5) * 2 - 0.5 = 0.5, 2.5.
  EXPECT_EQ(run_float({0, 10, 20, 30}, 4, 1, 1, {0, 0, 4, 1}, 2, 1), (std::vector<float>{5, 25}));
}

TEST(Resample, FractionalWindowOffset) {
  EXPECT_EQ(run_float({0, 10, 20, 30}, 4, 1, 1, {1.5, 0, 2, 1}, 2, 1), (std::vector<float>{15, 25}));
}

TEST(Resample, TwoDimensionsAndFlip) {
  // value(x, y) = 40 fx + 80 fy at fx, fy in {0, .25, .75, 1}.
  std::vector<uint8_t> img = {0, 40, 80, 120};
  std::vector<float> expect = {0, 10, 30, 40, 20, 30, 50, 60, 60, 70, 90, 100, 80, 90, 110, 120};
  EXPECT_EQ(run_float(img, 2, 2, 1, {0, 0, 2, 2}, 4, 4), expect);
  std::vector<float> flipped = {40, 30, 10, 0, 60, 50, 30, 20, 100, 90, 70, 60, 120, 110, 90, 80};
  EXPECT_EQ(run_float(img, 2, 2, 1, {0, 0, 2, 2}, 4, 4, true), flipped);
}

TEST(Resample, CopyModePadsOutsideTheImage) {
  // 2x2 RGB inside a 4x4 window at (-1, -1): a zero border around it; mirrored.
  std::vector<uint8_t> img = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  auto out = run_float(img, 2, 2, 3, {-1, -1, 4, 4}, 4, 4, true);
  std::vector<float> expect(48, 0.0f);
  auto put = [&](int y, int x, std::initializer_list<float> v) {
    int c = 0;
    for (float f : v) expect[(y * 4 + x) * 3 + c++] = f;
  };
  put(1, 1, {4, 5, 6});  // mirrored: image column 1 lands in output column 1
  put(1, 2, {1, 2, 3});
  put(2, 1, {10, 11, 12});
  put(2, 2, {7, 8, 9});
  EXPECT_EQ(out, expect);
  EXPECT_TRUE(Resampler::copy_mode({-1, -1, 4, 4}, 4, 4));
  EXPECT_FALSE(Resampler::copy_mode({0.5, 0, 4, 4}, 4, 4));
  EXPECT_FALSE(Resampler::copy_mode({0, 0, 5, 4}, 4, 4));
}

TEST(Resample, NormalisationDtypesAndLayouts) {
  std::vector<uint8_t> img = {10, 20, 30, 40, 50, 60};  // 2x1 RGB
  OutputFormat f = identity(1, 2, 3);
  f.mean[0] = 10; f.mean[1] = 20; f.mean[2] = 30;
  f.inv_std[0] = 0.5f; f.inv_std[1] = 0.25f; f.inv_std[2] = 2.0f;
  Resampler r;
  ImageView v{img.data(), 2, 1, 3, 6};
  std::vector<float> nhwc(6);
  r.run(v, {0, 0, 2, 1}, false, {}, f, nhwc.data());
  EXPECT_EQ(nhwc, (std::vector<float>{0, 0, 0, 15, 7.5f, 60}));
  f.spec.layout = Layout::kNCHW;
  std::vector<float> nchw(6);
  r.run(v, {0, 0, 2, 1}, false, {}, f, nchw.data());
  EXPECT_EQ(nchw, (std::vector<float>{0, 15, 0, 7.5f, 0, 60}));
  f.spec.dtype = DType::kF16;
  std::vector<uint16_t> half(6);
  r.run(v, {0, 0, 2, 1}, false, {}, f, half.data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(half_to_float(half[i]), nchw[i]);
  // uint8 keeps pixel values (normalisation is the consumer's), rounding interpolated ones.
  f.spec.dtype = DType::kU8;
  f.spec.layout = Layout::kNHWC;
  f.spec.width = 4;
  std::vector<uint8_t> u8(12);
  r.run(v, {0, 0, 2, 1}, false, {}, f, u8.data());
  // x samples at -0.25, 0.25, 0.75, 1.25: red 10, 17.5, 32.5, 40.
  EXPECT_EQ(u8, (std::vector<uint8_t>{10, 20, 30, 18, 28, 38, 33, 43, 53, 40, 50, 60}));
}

// The bilinear path against a plain scalar transcription of its arithmetic (vertical blend of the two
// source rows, then the horizontal blend per channel; coefficients as resample.h defines them): bitwise
// equal for 1, 3 and 4 channels, mirrored or not, so the 4-lane gather for 3 and 4 channels changes no
// value.
TEST(Resample, BilinearEqualsTheScalarFormulaBitwise) {
  for (int C : {1, 3, 4}) {
    for (bool flip : {false, true}) {
      const int w = 41, h = 23, ow = 57, oh = 19;
      std::vector<uint8_t> img(size_t(w) * h * C);
      for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<uint8_t>((i * 131 + i / 5) % 256);
      const Window win{2.7, 1.3, 35.1, 20.6};
      std::vector<float> got(size_t(ow) * oh * C);
      Resampler r;
      r.run({img.data(), w, h, C, size_t(w) * C}, win, flip, {}, identity(oh, ow, C), got.data());
      const double sxs = win.w / ow, sys = win.h / oh;
      for (int oy = 0; oy < oh; ++oy) {
        const double sy = std::clamp(win.y0 + (oy + 0.5) * sys - 0.5, 0.0, double(h - 1));
        const int j0 = int(sy), j1 = std::min(j0 + 1, h - 1);
        const float fy = float(sy - j0);
        auto vblend = [&](int x, int c) {
          const float a = img[(size_t(j0) * w + x) * C + c];
          if (fy == 0.0f || j1 == j0) return a;
          return a + fy * (float(img[(size_t(j1) * w + x) * C + c]) - a);
        };
        for (int ox = 0; ox < ow; ++ox) {
          const int col = flip ? ow - 1 - ox : ox;
          const double sx = std::clamp(win.x0 + (col + 0.5) * sxs - 0.5, 0.0, double(w - 1));
          const int i0 = int(sx), i1 = std::min(i0 + 1, w - 1);
          const float t = float(sx - i0);
          for (int c = 0; c < C; ++c) {
            const float a = vblend(i0, c), b = vblend(i1, c);
            const float expect = a + t * (b - a);
            ASSERT_EQ(got[(size_t(oy) * ow + ox) * C + c], expect)
                << C << " channels, flip " << flip << ", pixel (" << ox << ", " << oy << ") channel " << c;
          }
        }
      }
    }
  }
}

// uint8 output (vectorised 16 values at a time) equals the float output rounded as to_u8 does:
// clamp to [0, 255], + 0.5, truncate. A real-sized sample with fractional bilinear values, colour
// jitter pushing some out of range (the clamp), and rows whose length is not a multiple of 16.
TEST(Resample, Uint8OutputIsTheFloatOutputRounded) {
  const int w = 37, h = 29, ow = 227, oh = 31;
  std::vector<uint8_t> img(size_t(w) * h * 3);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<uint8_t>((i * 97 + i / 7) % 256);
  ColorJitter jitter;
  jitter.enabled = true;
  jitter.brightness = 19.5f;
  jitter.saturation = 1.7f;
  for (bool jittered : {false, true}) {
    const ColorJitter color = jittered ? jitter : ColorJitter{};
    const ImageView v{img.data(), w, h, 3, size_t(w) * 3};
    const Window win{1.25, 0.5, 33.3, 27.9};
    Resampler r;
    std::vector<float> f32(size_t(ow) * oh * 3);
    r.run(v, win, true, color, identity(oh, ow, 3), f32.data());
    std::vector<uint8_t> u8(f32.size());
    r.run(v, win, true, color, identity(oh, ow, 3, DType::kU8), u8.data());
    int fractional = 0;
    for (size_t i = 0; i < f32.size(); ++i) {
      const float expect = std::floor(std::clamp(f32[i], 0.0f, 255.0f) + 0.5f);
      ASSERT_EQ(u8[i], static_cast<uint8_t>(expect)) << "element " << i << " (float " << f32[i] << ")";
      fractional += f32[i] != std::floor(f32[i]);
    }
    EXPECT_GT(fractional, static_cast<int>(f32.size() / 2));  // the rounding is exercised
  }
}

TEST(Resample, ColourJitterByHand) {
  ColorJitter c;
  c.enabled = true;
  c.brightness = 10;
  c.saturation = 0.5f;
  // (110, 60, 10): luma 0.299*110 + 0.587*60 + 0.114*10 = 69.25; halfway to it.
  auto out = run_float({100, 50, 0}, 1, 1, 3, {0, 0, 1, 1}, 1, 1, false, c);
  EXPECT_NEAR(out[0], 89.625f, 1e-4);
  EXPECT_NEAR(out[1], 64.625f, 1e-4);
  EXPECT_NEAR(out[2], 39.625f, 1e-4);
  c.brightness = 20;
  c.saturation = 1;
  out = run_float({250, 10, 0}, 1, 1, 3, {0, 0, 1, 1}, 1, 1, false, c);
  EXPECT_EQ(out, (std::vector<float>{255, 30, 20}));
}

PreprocessConfig resolved(const char* preset, bool train, int size) {
  PreprocessConfig c;
  c.preset = preset;
  c.train = train;
  c.height = c.width = size;
  if (std::string(preset) == "vgg") c.resize_min = c.resize_max = c.eval_resize = 256;
  return resolve_preset(c);
}

void expect_window(const Window& w, double x0, double y0, double ww, double hh) {
  EXPECT_DOUBLE_EQ(w.x0, x0);
  EXPECT_DOUBLE_EQ(w.y0, y0);
  EXPECT_DOUBLE_EQ(w.w, ww);
  EXPECT_DOUBLE_EQ(w.h, hh);
}

TEST(Preset, Defaults) {
  PreprocessConfig c;
  c.preset = "lenet";
  PreprocessConfig r = resolve_preset(c);
  EXPECT_EQ(r.height, 28);
  EXPECT_EQ(r.channels, 1);
  OutputFormat f = output_format(r);
  EXPECT_EQ(f.mean[0], 128);
  EXPECT_EQ(f.inv_std[0], 1.0f / 128);
  c.preset = "resnet";
  r = resolve_preset(c);
  EXPECT_EQ(r.height, 224);
  EXPECT_EQ(r.mean, (std::vector<float>{123.68f, 116.78f, 103.94f}));
  EXPECT_EQ(r.std, (std::vector<float>{1, 1, 1}));
  c.preset = "inception_v3";
  EXPECT_EQ(resolve_preset(c).mean, (std::vector<float>{127.5f, 127.5f, 127.5f}));
  c.preset = "alexnet";
  EXPECT_THROW(resolve_preset(c), ConfigError);
}

TEST(Preset, LenetCropsOrPadsToCentre) {
  auto c = resolved("lenet", true, 28);
  expect_window(plan_sample(c, 28, 28, 0, 0, 0).window, 0, 0, 28, 28);
  expect_window(plan_sample(c, 31, 30, 0, 0, 0).window, 1, 1, 28, 28);    // (31-28)//2, (30-28)//2
  expect_window(plan_sample(c, 25, 26, 0, 0, 0).window, -1, -1, 28, 28);  // -(28-25)//2
  EXPECT_FALSE(plan_sample(c, 28, 28, 0, 0, 0).flip);
  // Values: (p - 128) / 128 on a ramp.
  std::vector<uint8_t> img(28 * 28);
  for (size_t i = 0; i < img.size(); ++i) img[i] = uint8_t(i % 256);
  Resampler r;
  std::vector<float> out(28 * 28);
  OutputFormat f = output_format(c);
  r.run({img.data(), 28, 28, 1, 28}, plan_sample(c, 28, 28, 0, 0, 0).window, false, {}, f, out.data());
  for (size_t i = 0; i < img.size(); ++i) ASSERT_EQ(out[i], (img[i] - 128.0f) / 128.0f);
}

TEST(Preset, CifarnetPadCropFlip) {
  auto train = resolved("cifarnet", true, 32);
  std::set<double> xs, ys;
  int flips = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    SamplePlan p = plan_sample(train, 32, 32, 1, 0, i);
    EXPECT_TRUE(Resampler::copy_mode(p.window, 32, 32));
    xs.insert(p.window.x0);
    ys.insert(p.window.y0);
    flips += p.flip;
  }
  EXPECT_EQ(xs, (std::set<double>{-4, -3, -2, -1, 0, 1, 2, 3, 4}));
  EXPECT_EQ(ys.size(), 9u);
  EXPECT_NEAR(flips, 1000, 120);
  auto eval = resolved("cifarnet", false, 32);
  SamplePlan p = plan_sample(eval, 32, 32, 1, 0, 7);
  expect_window(p.window, 0, 0, 32, 32);
  EXPECT_FALSE(p.flip);
}

TEST(Preset, InceptionEvalCentralCrop) {
  auto c = resolved("inception", false, 8);
  // start = int((16 - 16 * 0.875) / 2) = 1, extent 16 - 2 = 14.
  expect_window(plan_sample(c, 16, 16, 0, 0, 0).window, 1, 1, 14, 14);
  // int((100 - 87.5) / 2) = 6 -> 88 wide; int((60 - 52.5) / 2) = 3 -> 54 high.
  expect_window(plan_sample(c, 100, 60, 0, 0, 0).window, 6, 3, 88, 54);
  // Deterministic: no draw depends on the key.
  expect_window(plan_sample(c, 100, 60, 5, 3, 99).window, 6, 3, 88, 54);
}

TEST(Preset, InceptionTrainRandomResizedCrop) {
  auto c = resolved("inception", true, 224);
  int flips = 0, whole = 0;
  double min_area = 1, max_area = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    SamplePlan p = plan_sample(c, 500, 375, 42, 1, i);
    const Window& w = p.window;
    ASSERT_TRUE(testing::crop_inside(w, 500, 375));
    double area = w.w * w.h / (500.0 * 375);
    double ratio = w.w / w.h;
    if (w.w == 500 && w.h == 375) {
      ++whole;
    } else {
      EXPECT_GE(ratio, 0.75 * 0.95);
      EXPECT_LE(ratio, 4.0 / 3 * 1.05);
    }
    min_area = std::min(min_area, area);
    max_area = std::max(max_area, area);
    flips += p.flip;
    // Same key, same plan; another epoch, (almost always) another crop.
    SamplePlan again = plan_sample(c, 500, 375, 42, 1, i);
    ASSERT_EQ(again.window.x0, w.x0);
    ASSERT_EQ(again.window.w, w.w);
  }
  EXPECT_LT(min_area, 0.07);
  EXPECT_GT(max_area, 0.9);
  EXPECT_NEAR(flips, 1500, 150);
  EXPECT_LT(whole, 300) << "most crops succeed within 10 attempts";
  EXPECT_FALSE(plan_sample(c, 500, 375, 42, 1, 0).color.enabled);
  PreprocessConfig cc = c;
  cc.color_distortion = true;
  SamplePlan p = plan_sample(cc, 500, 375, 42, 1, 0);
  EXPECT_TRUE(p.color.enabled);
  EXPECT_LE(std::fabs(p.color.brightness), 32);
  EXPECT_GE(p.color.saturation, 0.5f);
  EXPECT_LE(p.color.saturation, 1.5f);
  // Colour draws come from their own stream: the crop is unchanged.
  expect_window(p.window, plan_sample(c, 500, 375, 42, 1, 0).window.x0, plan_sample(c, 500, 375, 42, 1, 0).window.y0,
                plan_sample(c, 500, 375, 42, 1, 0).window.w, plan_sample(c, 500, 375, 42, 1, 0).window.h);
}

TEST(Preset, VggEvalResizeAndCentreCrop) {
  auto c = resolved("vgg", false, 224);
  // Shorter side 384 -> 256: scale 2/3, 512 -> rint(341.33) = 341. Centre crop at ((341-224)/2,
  // (256-224)/2) = (58, 16) of the resized image = (58 * 512/341, 16 * 1.5) in the original.
  SamplePlan p = plan_sample(c, 512, 384, 0, 0, 0);
  expect_window(p.window, 58 * 512.0 / 341, 24, 224 * 512.0 / 341, 336);
  EXPECT_FALSE(p.flip);
}

TEST(Preset, VggTrainRandomSideAndCrop) {
  PreprocessConfig c;
  c.preset = "resnet";
  c.train = true;
  c = resolve_preset(c);
  std::set<double> widths;
  for (uint64_t i = 0; i < 500; ++i) {
    SamplePlan p = plan_sample(c, 400, 300, 3, 0, i);
    const Window& w = p.window;
    ASSERT_GE(w.x0, 0);
    ASSERT_GE(w.y0, 0);
    ASSERT_LE(w.x0 + w.w, 400 + 1e-9);
    ASSERT_LE(w.y0 + w.h, 300 + 1e-9);
    // A 224 crop of a side resized to s in [256, 512]: the window is 224 * 300 / s high.
    EXPECT_GE(w.h, 224.0 * 300 / 512 - 1);
    EXPECT_LE(w.h, 224.0 * 300 / 256 + 1);
    widths.insert(w.w);
  }
  EXPECT_GT(widths.size(), 50u);
}

}  // namespace
}  // namespace fastnn::pipeline
