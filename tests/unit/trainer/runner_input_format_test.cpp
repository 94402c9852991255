// The uint8 input hop (trainer/runner/input_format.h) against the float32 pipeline it replaces on the
// GPU: the same records through a preset once as uint8 NHWC, normalised by normalize_input_reference
// (the arithmetic of the CUDA runner's input kernel), and once as the pipeline's own float32 NCHW
// batches, are bitwise equal for the presets that copy pixels (lenet on the real Fashion-MNIST,
// cifarnet's train crops and mirrors on a real photograph). Plus the batch formats input_dtype picks.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/example.h"
#include "core/image.h"
#include "core/tfrecord.h"
#include "pipeline/dataset.h"
#include "pipeline/preprocess.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/runner/batch_tensors.h"
#include "trainer/runner/input_format.h"

namespace fastnn::runner {
namespace {

using testing_util::ScratchDir;

std::string example(const std::string& encoded, const char* format, int64_t label) {
  ExampleBuilder b;
  b.add_bytes(keys::kImageEncoded, encoded);
  b.add_bytes(keys::kImageFormat, format);
  b.add_int64(keys::kLabel, label);
  return b.serialize();
}

std::string write_shard(const ScratchDir& dir, const std::vector<std::string>& records) {
  const std::string path = dir.file("train-0.tfrecord");
  TFRecordWriter w(path);
  for (const std::string& r : records) w.write(r);
  w.close();
  return path;
}

// Every batch of one epoch of `path` through `preset` in the given dtype and layout, as f32 NCHW
// (uint8 ones through the reference normalisation).
std::vector<std::vector<float>> batches(const std::string& path, int64_t records, const std::string& preset,
                                        DType dtype, Layout layout, InputNormalization* norm) {
  pipeline::PreprocessConfig p;
  p.preset = preset;
  p.train = true;
  p.dtype = dtype;
  p.layout = layout;
  const pipeline::PreprocessConfig resolved = pipeline::resolve_preset(p);
  const pipeline::OutputFormat f = pipeline::output_format(resolved);
  std::copy(f.mean, f.mean + 4, norm->mean);
  std::copy(f.inv_std, f.inv_std + 4, norm->inv_std);
  auto ds = pipeline::Dataset::from_files({path}, {records});
  ds.repeat(1).map_and_batch(pipeline::make_preprocessor(p), 8, 1, false);
  std::vector<std::vector<float>> out;
  auto it = ds.make_iterator();
  for (pipeline::BatchHandle b; it->next(&b);) {
    BatchTensors t = wrap_batch(std::move(b));
    const Tensor x = normalize_input_reference(t.images, *norm);
    out.emplace_back(x.data<float>(), x.data<float>() + x.numel());
  }
  return out;
}

void expect_uint8_path_equals_float_path(const std::string& path, int64_t records, const std::string& preset) {
  InputNormalization norm;
  const auto u8 = batches(path, records, preset, DType::kU8, Layout::kNHWC, &norm);
  const auto f32 = batches(path, records, preset, DType::kF32, Layout::kNCHW, &norm);
  ASSERT_EQ(u8.size(), f32.size());
  ASSERT_FALSE(u8.empty());
  for (size_t b = 0; b < u8.size(); ++b) {
    ASSERT_EQ(u8[b].size(), f32[b].size());
    EXPECT_EQ(std::memcmp(u8[b].data(), f32[b].data(), u8[b].size() * sizeof(float)), 0) << preset << " batch " << b;
  }
}

TEST(InputFormat, Uint8LenetOnFashionMnistEqualsTheFloatPipeline) {
  const std::string idx = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  gzFile f = gzopen(idx.c_str(), "rb");
  if (!f) GTEST_SKIP() << idx << " is not installed";
  unsigned char header[16];
  ASSERT_EQ(gzread(f, header, 16), 16);
  std::vector<std::string> records;
  std::vector<uint8_t> px(28 * 28);
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(gzread(f, px.data(), static_cast<unsigned>(px.size())), static_cast<int>(px.size()));
    records.push_back(example(encode_png(px.data(), 28, 28, 1), "png", i % 10));
  }
  gzclose(f);
  const ScratchDir dir("input-fm");
  expect_uint8_path_equals_float_path(write_shard(dir, records), 40, "lenet");
}

TEST(InputFormat, Uint8CifarnetCropsOfAPhotographEqualTheFloatPipeline) {
  const std::string photo = "/var/cache/fastnn/sample-images/china.jpg";
  std::ifstream in(photo, std::ios::binary);
  if (!in) GTEST_SKIP() << photo << " is not there (scripts/setup.sh fetches it)";
  const std::string jpeg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records(24, example(jpeg, "jpeg", 3));
  const ScratchDir dir("input-photo");
  expect_uint8_path_equals_float_path(write_shard(dir, records), 24, "cifarnet");  // random crops, mirrors
}

TEST(InputFormat, ReferenceNormalisesUint8AndConvertsTheRest) {
  Tensor u8 = Tensor::empty({1, 2, 1, 3}, DType::kU8, Device::kCpu, Layout::kNHWC);  // N H W C
  const uint8_t v[] = {0, 10, 255, 1, 2, 3};
  std::memcpy(u8.raw(), v, sizeof v);
  InputNormalization n;
  n.mean[0] = 1, n.mean[1] = 2, n.mean[2] = 3;
  n.inv_std[0] = 0.5f, n.inv_std[1] = 2, n.inv_std[2] = 1;
  const Tensor y = normalize_input_reference(u8, n);
  EXPECT_EQ(y.shape(), (Shape{1, 3, 2, 1}));
  const std::vector<float> want = {-0.5f, 0.0f, 16.0f, 0.0f, 252.0f, 0.0f};  // channel planes
  EXPECT_EQ(y.to_vector<float>(), want);
}

TEST(InputFormat, InputDtypePicksTheBatchFormat) {
  const BatchFormat gpu{.dtype = DType::kU8, .layout = Layout::kNHWC};
  EXPECT_EQ(batch_format_for("auto", gpu).dtype, DType::kU8);
  EXPECT_EQ(batch_format_for("float16", gpu).dtype, DType::kF16);
  EXPECT_EQ(batch_format_for("float16", gpu).layout, Layout::kNCHW);
  EXPECT_EQ(batch_format_for("uint8", BatchFormat{}).layout, Layout::kNHWC);
  EXPECT_THROW(batch_format_for("int4", gpu), ConfigError);
}

}  // namespace
}  // namespace fastnn::runner
