// The torchvision preset against torchvision itself: its crop arithmetic (RandomResizedCrop's fallback,
// Resize's truncated long side, CenterCrop's offsets rounded half to even) from fixtures.json, and the
// whole map function's output on a real photograph from eval.f32 / train.f32, all made by
// tests/data/torchvision_preset/make_fixtures.py with torchvision's transforms; plus the draw's ranges
// and the refusals of settings a preset cannot honour.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "pipeline/preprocess.h"
#include "pipeline/preset.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

const std::string kTorchvisionDir = std::string(FASTNN_SOURCE_DIR) + "/tests/data/torchvision_preset/";

const nlohmann::json& fixtures() {
  static const nlohmann::json j = nlohmann::json::parse(testing::read_bytes(kTorchvisionDir + "fixtures.json"));
  return j;
}

std::vector<float> read_f32(const std::string& name) {
  const std::string bytes = testing::read_bytes(kTorchvisionDir + name);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

PreprocessConfig torchvision(bool train, int size) {
  PreprocessConfig c;
  c.preset = "torchvision";
  c.train = train;
  c.height = c.width = size;
  return c;
}

void expect_crop_window(const Window& w, double x0, double y0, double ww, double hh) {
  EXPECT_NEAR(w.x0, x0, 1e-9);
  EXPECT_NEAR(w.y0, y0, 1e-9);
  EXPECT_NEAR(w.w, ww, 1e-9);
  EXPECT_NEAR(w.h, hh, 1e-9);
}

TEST(TorchvisionPreset, DefaultsAreImagenetsNormalisationAndTorchvisionsCrop) {
  const PreprocessConfig r = resolve_preset(torchvision(true, 0));
  EXPECT_EQ(r.height, 224);
  EXPECT_EQ(r.channels, 3);
  EXPECT_EQ(r.mean, (std::vector<float>{0.485f * 255, 0.456f * 255, 0.406f * 255}));
  EXPECT_EQ(r.std, (std::vector<float>{0.229f * 255, 0.224f * 255, 0.225f * 255}));
  EXPECT_EQ(r.area_min, 0.08f);
  EXPECT_EQ(r.area_max, 1.0f);
  EXPECT_EQ(r.aspect_min, 0.75f);
  EXPECT_EQ(r.aspect_max, 4.0f / 3.0f);
  EXPECT_EQ(r.crop_pct, 0.875);
  EXPECT_EQ(r.eval_resize, 256);                                          // floor(224 / 0.875)
  EXPECT_EQ(resolve_preset(torchvision(false, 256)).eval_resize, 292);   // floor(292.57)
  // The inception preset keeps TF-slim's area range; both take the job's.
  PreprocessConfig inc;
  inc.preset = "inception";
  EXPECT_EQ(resolve_preset(inc).area_min, 0.05f);
  inc.area_min = 0.08f;
  inc.area_max = 1;
  EXPECT_EQ(resolve_preset(inc).area_min, 0.08f);
}

TEST(TorchvisionPreset, FallbackCropsAreTorchvisions) {
  // Images where every one of the ten tries fails: torchvision's centred crop, clamped to the aspect range.
  for (const auto& f : fixtures()["fallbacks"]) {
    SCOPED_TRACE(f.dump());
    PreprocessConfig c = torchvision(true, 32);
    c.area_min = f["scale"][0].get<float>();
    c.area_max = f["scale"][1].get<float>();
    c = resolve_preset(c);
    for (uint64_t i = 0; i < 20; ++i)
      expect_crop_window(plan_sample(c, f["width"], f["height"], 7, 0, i).window, f["left"], f["top"], f["w"], f["h"]);
  }
}

TEST(TorchvisionPreset, EvalResizeAndCentreCropAreTorchvisions) {
  // Resize(floor(size / crop_pct)): the shorter side to that, the longer to int(side * long / short);
  // CenterCrop: offsets int(round((resized - size) / 2)), Python's halves to even (160x107 at 64: 4.5 -> 4,
  // 22.5 -> 22). As a window of the original: the crop scaled back by original / resized.
  for (const auto& e : fixtures()["eval"]) {
    SCOPED_TRACE(e.dump());
    PreprocessConfig c = torchvision(false, e["size"]);
    c.crop_pct = e["crop_pct"];
    c = resolve_preset(c);
    const int w = e["width"], h = e["height"], size = e["size"];
    const double fx = double(w) / e["resized_width"].get<int>(), fy = double(h) / e["resized_height"].get<int>();
    const SamplePlan p = plan_sample(c, w, h, 3, 1, 5);
    expect_crop_window(p.window, e["left"].get<int>() * fx, e["top"].get<int>() * fy, size * fx, size * fy);
    EXPECT_FALSE(p.flip);
  }
}

TEST(TorchvisionPreset, TrainCropsStayInTheirRanges) {
  const PreprocessConfig c = resolve_preset(torchvision(true, 224));
  int flips = 0, fallbacks = 0;
  double min_area = 1, max_area = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    const SamplePlan p = plan_sample(c, 500, 375, 42, 1, i);
    const Window& w = p.window;
    ASSERT_TRUE(testing::crop_inside(w, 500, 375));
    ASSERT_EQ(w.w, std::floor(w.w));
    const double area = w.w * w.h / (500.0 * 375);
    const double ratio = w.w / w.h;
    if (w.w == 500 && w.h == 375) {
      ++fallbacks;  // 4:3 lies inside the aspect range: the fallback is the whole image
    } else {
      // The rounding of each side moves the drawn area and ratio by at most half a pixel.
      ASSERT_GE(area, 0.08 * 0.97);
      ASSERT_GE(ratio, 0.75 * 0.98);
      ASSERT_LE(ratio, 4.0 / 3 * 1.02);
    }
    min_area = std::min(min_area, area);
    max_area = std::max(max_area, area);
    flips += p.flip;
  }
  EXPECT_LT(min_area, 0.09);
  EXPECT_GT(max_area, 0.9);
  EXPECT_NEAR(flips, 1500, 150);
  EXPECT_LT(fallbacks, 300) << "most crops fit within 10 tries";
}

// The map function on crop.png against torchvision's tensors. Both resample bilinearly at half-pixel
// centres from the same 8-bit pixels and normalise (v / 255 - mean) / std; what remains is float rounding.
void expect_close_to_torchvision(const std::vector<float>& got, const std::vector<float>& want, bool flip) {
  ASSERT_EQ(got.size(), want.size());
  const int n = 64;
  double worst = 0;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const size_t g = (size_t(c) * n + y) * n + x, t = (size_t(c) * n + y) * n + (flip ? n - 1 - x : x);
        worst = std::max(worst, double(std::fabs(got[g] - want[t])));
      }
  // One pixel level is 1 / (255 * 0.229) = 0.017 in these units.
  EXPECT_LT(worst, 2e-4);
}

std::vector<float> map_crop_png(const PreprocessConfig& c, uint64_t index, bool* flip) {
  const std::string record = testing::image_example(testing::read_bytes(kTorchvisionDir + "crop.png"), "png", 3);
  auto m = make_preprocessor(c);
  m->prepare(1);
  std::vector<float> out(m->spec().sample_elements());
  StageTimes times;
  SampleContext ctx;
  ctx.seed = 11;
  ctx.index = index;
  ctx.times = &times;
  int32_t label = -1;
  m->map(record, ctx, out.data(), &label);
  EXPECT_EQ(label, 3);
  *flip = plan_sample(resolve_preset(c), 160, 107, ctx.seed, ctx.epoch, index).flip;
  return out;
}

TEST(TorchvisionPreset, EvalOutputOfARealPhotographIsTorchvisions) {
  PreprocessConfig c = torchvision(false, 64);
  c.layout = Layout::kNCHW;
  bool flip = true;
  const std::vector<float> got = map_crop_png(c, 0, &flip);
  EXPECT_FALSE(flip);
  expect_close_to_torchvision(got, read_f32("eval.f32"), false);
}

TEST(TorchvisionPreset, TrainOutputOfARealPhotographIsTorchvisions) {
  // scale (0.9, 1) on this 160x107 photo: no try fits, both take the fallback; only the mirror is drawn.
  PreprocessConfig c = torchvision(true, 64);
  c.layout = Layout::kNCHW;
  c.area_min = 0.9f;
  c.area_max = 1;
  const std::vector<float> want = read_f32("train.f32");
  int flipped = 0;
  for (uint64_t i = 0; i < 8; ++i) {
    bool flip = false;
    const std::vector<float> got = map_crop_png(c, i, &flip);
    flipped += flip;
    expect_close_to_torchvision(got, want, flip);
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 8);
}

TEST(TorchvisionPreset, SettingsAPresetCannotHonourAreRefused) {
  PreprocessConfig vgg;
  vgg.preset = "vgg";
  vgg.area_min = 0.08f;
  vgg.area_max = 1;
  EXPECT_THROW(resolve_preset(vgg), ConfigError);
  PreprocessConfig lenet;
  lenet.preset = "lenet";
  lenet.crop_pct = 0.9;
  EXPECT_THROW(resolve_preset(lenet), ConfigError);
  PreprocessConfig too_wide = torchvision(false, 224);
  too_wide.crop_pct = 1.1;
  EXPECT_THROW(resolve_preset(too_wide), ConfigError);
  // crop_pct on vgg / resnet: the shorter side goes to floor(size / crop_pct) instead of 256.
  PreprocessConfig resnet;
  resnet.preset = "resnet";
  resnet.crop_pct = 0.95;
  EXPECT_EQ(resolve_preset(resnet).eval_resize, 235);
}

}  // namespace
}  // namespace fastnn::pipeline
