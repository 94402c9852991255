// The preset map function on real records: PNG, JPEG (crop-window and DCT-scaled decode against a
// full decode), raw; errors; and a whole pipeline that must not depend on the thread count.
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "core/check.h"
#include "core/image.h"
#include "pipeline/dataset.h"
#include "pipeline/preprocess.h"
#include "pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

using testing::image_example;
using testing::ScratchDir;

std::vector<uint8_t> photo_like(int w, int h, uint32_t seed) {
  std::vector<uint8_t> px(size_t(w) * h * 3);
  double a = 0.01 + (seed % 7) * 0.003, b = 0.02 + (seed % 5) * 0.004;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        double v = 120 + 70 * std::sin(a * x * (c + 1) + b * y + seed) + 30 * std::sin(0.3 * x + 0.2 * y * c);
        px[(size_t(y) * w + x) * 3 + c] = uint8_t(std::clamp(v, 0.0, 255.0));
      }
  return px;
}

std::vector<float> map_one(SampleMapper& m, const std::string& record, uint64_t index = 0, int64_t epoch = 0,
                           int32_t* label = nullptr) {
  std::vector<float> out(m.spec().sample_elements());
  StageTimes t;
  SampleContext ctx;
  ctx.seed = 5;
  ctx.epoch = epoch;
  ctx.index = index;
  ctx.times = &t;
  int32_t l = -1;
  m.map(record, ctx, out.data(), &l);
  if (label) *label = l;
  return out;
}

TEST(Preprocess, LenetOnPng) {
  std::vector<uint8_t> px(28 * 28);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i * 3);
  std::string rec = image_example(encode_png(px.data(), 28, 28, 1), "png", 7);
  PreprocessConfig c;
  c.preset = "lenet";
  auto m = make_preprocessor(c);
  m->prepare(1);
  int32_t label;
  auto out = map_one(*m, rec, 0, 0, &label);
  EXPECT_EQ(label, 7);
  for (size_t i = 0; i < px.size(); ++i) ASSERT_EQ(out[i], (px[i] - 128.0f) / 128.0f);
}

TEST(Preprocess, LabelsOffsetIsSubtractedAndANegativeResultIsAnError) {
  std::vector<uint8_t> px(28 * 28, 40);
  const std::string png = encode_png(px.data(), 28, 28, 1);
  PreprocessConfig c;
  c.preset = "lenet";
  c.label_offset = 1;  // FastNN's labels_offset: records with a background class 0
  auto m = make_preprocessor(c);
  m->prepare(1);
  int32_t label = -1;
  map_one(*m, image_example(png, "png", 7), 0, 0, &label);
  EXPECT_EQ(label, 6);
  map_one(*m, image_example(png, "png", 1), 0, 0, &label);
  EXPECT_EQ(label, 0);
  try {
    map_one(*m, image_example(png, "png", 0));
    ADD_FAILURE() << "label 0 with labels_offset 1 must fail";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("minus labels_offset 1"), std::string::npos) << e.what();
  }
}

TEST(Preprocess, RawRecordsAndChannelConversion) {
  std::vector<uint8_t> px(4 * 3 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(10 + i);
  std::string rec = image_example(std::string_view(reinterpret_cast<char*>(px.data()), px.size()), "raw", 2, 3, 4, 3);
  PreprocessConfig c;
  c.preset = "cifarnet";
  c.train = false;
  c.height = 3;
  c.width = 4;
  c.mean = {0};
  c.std = {1};
  auto m = make_preprocessor(c);
  m->prepare(1);
  auto out = map_one(*m, rec);
  for (size_t i = 0; i < px.size(); ++i) ASSERT_EQ(out[i], px[i]);
  c.channels = 1;  // RGB -> luma
  auto gray = make_preprocessor(c);
  gray->prepare(1);
  out = map_one(*gray, rec);
  EXPECT_EQ(out[0], std::round(0.299 * 10 + 0.587 * 11 + 0.114 * 12));
}

TEST(Preprocess, BadRecordsAreFormatErrors) {
  PreprocessConfig c;
  c.preset = "lenet";
  auto m = make_preprocessor(c);
  m->prepare(1);
  std::vector<uint8_t> px(28 * 28, 9);
  std::string png = encode_png(px.data(), 28, 28, 1);
  ExampleBuilder no_label;
  no_label.add_bytes(keys::kImageEncoded, png);
  EXPECT_THROW(map_one(*m, no_label.serialize()), FormatError);
  EXPECT_THROW(map_one(*m, image_example(png, "png", -1)), FormatError);
  EXPECT_THROW(map_one(*m, image_example(png, "png", int64_t{1} << 40)), FormatError);
  EXPECT_THROW(map_one(*m, image_example("GIF89a....", "gif", 1)), FormatError);
  EXPECT_THROW(map_one(*m, image_example(png.substr(0, png.size() / 2), "png", 1)), FormatError);
  EXPECT_THROW(map_one(*m, image_example("abc", "raw", 1, 2, 2, 1)), FormatError);
  EXPECT_THROW(map_one(*m, "\xff\xff\xff not a proto"), FormatError);
}

PreprocessConfig pixel_units(const char* preset, bool train, bool crop, bool dct) {
  PreprocessConfig c;
  c.preset = preset;
  c.train = train;
  c.height = c.width = 64;
  c.mean = {0};
  c.std = {1};
  c.crop_decode = crop;
  c.dct_scale = dct;
  c.resize_min = 64;
  c.resize_max = 128;
  c.eval_resize = 72;
  return c;
}

TEST(Preprocess, CropWindowDecodeEqualsFullDecode) {
  for (const char* preset : {"inception", "vgg"})
    for (bool train : {true, false}) {
      auto full = make_preprocessor(pixel_units(preset, train, false, false));
      auto crop = make_preprocessor(pixel_units(preset, train, true, false));
      full->prepare(1);
      crop->prepare(1);
      for (uint32_t i = 0; i < 12; ++i) {
        int w = 150 + 17 * i, h = 120 + 11 * i;
        auto px = photo_like(w, h, i);
        std::string rec = image_example(encode_jpeg(px.data(), w, h, 3, 90), "jpeg", 1);
        ASSERT_EQ(map_one(*full, rec, i), map_one(*crop, rec, i)) << preset << " train " << train << " image " << i;
      }
    }
}

TEST(Preprocess, DctScaledDecodeIsClose) {
  // A 4x downscale decoded at 1/4 in the IDCT against full decode + bilinear: both estimate the
  // same image; the DCT one is smoother (it averages rather than point-samples).
  auto full = make_preprocessor(pixel_units("inception", false, true, false));
  auto dct = make_preprocessor(pixel_units("inception", false, true, true));
  full->prepare(1);
  dct->prepare(1);
  int w = 300, h = 300;  // central crop 262 -> 64: scale 1/4 applies (65 >= 64)
  std::vector<uint8_t> px(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) px[(size_t(y) * w + x) * 3 + c] = uint8_t(128 + 100 * std::sin(0.02 * x + 0.03 * y + c));
  std::string rec = image_example(encode_jpeg(px.data(), w, h, 3, 95), "jpeg", 1);
  auto a = map_one(*full, rec), b = map_one(*dct, rec);
  double mad = 0;
  for (size_t i = 0; i < a.size(); ++i) mad += std::fabs(a[i] - b[i]);
  mad /= a.size();
  EXPECT_LT(mad, 2.0) << "mean absolute difference in pixel levels";
  EXPECT_GT(mad, 0.0) << "the DCT path really ran";
}

TEST(Preprocess, PipelineIndependentOfThreadCount) {
  ScratchDir dir("preprocess-pipeline");
  std::vector<std::string> paths;
  for (int f = 0; f < 2; ++f) {
    paths.push_back(dir.file(str("jpeg-", f, ".tfrecord")));
    TFRecordWriter w(paths.back());
    for (int i = 0; i < 12; ++i) {
      int wd = 90 + 13 * i, ht = 70 + 7 * ((i + f) % 5);
      auto px = photo_like(wd, ht, uint32_t(f * 100 + i));
      w.write(image_example(encode_jpeg(px.data(), wd, ht, 3, 85), "jpeg", f * 100 + i));
    }
    w.close();
  }
  auto run = [&](int threads, DType dt, Layout layout) {
    PreprocessConfig c;
    c.preset = "inception";
    c.height = c.width = 48;
    c.dtype = dt;
    c.layout = layout;
    c.color_distortion = true;
    Dataset ds = Dataset::from_files(paths);
    ds.interleave(2, 2).shuffle(8, 3).repeat(2).map_and_batch(make_preprocessor(c), 5, 2, false).prefetch(2);
    DatasetOptions o;
    o.num_threads = threads;
    o.seed = 99;
    ds.with_options(o);
    std::vector<std::vector<uint8_t>> out;
    auto it = ds.make_iterator();
    BatchHandle b;
    while (it->next(&b)) {
      auto* d = static_cast<const uint8_t*>(b->data());
      out.emplace_back(d, d + b->bytes());
      out.emplace_back(reinterpret_cast<const uint8_t*>(b->labels()),
                       reinterpret_cast<const uint8_t*>(b->labels() + b->size()));
    }
    return out;
  };
  for (DType dt : {DType::kF32, DType::kU8, DType::kF16})
    for (Layout l : {Layout::kNHWC, Layout::kNCHW}) {
      auto one = run(1, dt, l);
      EXPECT_EQ(one.size(), 2u * 2 * 5);  // 24 records: 5 batches per epoch, 2 epochs, data + labels
      EXPECT_EQ(run(3, dt, l), one) << dtype_name(dt) << " " << layout_name(l);
    }
}

}  // namespace
}  // namespace fastnn::pipeline
