// Per-sample costs of the pipeline's map function on a photo-sized JPEG (inception preset, 224x224
// float output), with and without crop-window and DCT-scaled decode, and the resampling kernel
// alone. The whole pipeline against its ceiling is `fastnn bench pipeline` (docs/PERFORMANCE.md).
#include <cmath>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "core/example.h"
#include "core/image.h"
#include "pipeline/preprocess.h"
#include "pipeline/resample.h"

namespace fastnn::pipeline {
namespace {

// 500x375, smooth regions and texture, quality 90: a stand-in for a photo.
const std::string& photo_record() {
  static const std::string rec = [] {
    const int w = 500, h = 375;
    std::vector<uint8_t> px(size_t(w) * h * 3);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c) {
          double v = 110 + 60 * std::sin(0.013 * x * (c + 1) + 0.021 * y) + 25 * std::sin(0.37 * x + 0.23 * y * (c + 1)) +
                     15 * std::sin(0.9 * (x ^ y));
          px[(size_t(y) * w + x) * 3 + c] = uint8_t(std::clamp(v, 0.0, 255.0));
        }
    ExampleBuilder b;
    b.add_bytes(keys::kImageEncoded, encode_jpeg(px.data(), w, h, 3, 90));
    b.add_bytes(keys::kImageFormat, "jpeg");
    b.add_int64(keys::kLabel, 1);
    return b.serialize();
  }();
  return rec;
}

void BM_InceptionSample(benchmark::State& state) {
  PreprocessConfig c;
  c.preset = "inception";
  c.train = state.range(2) != 0;
  c.crop_decode = state.range(0) != 0;
  c.dct_scale = state.range(1) != 0;
  auto m = make_preprocessor(c);
  m->prepare(1);
  // One slot, or the slots of a 64-sample batch in turn (what the pipeline writes: cold memory).
  const int slots = state.range(3) ? 64 : 1;
  std::vector<float> out(m->spec().sample_elements() * slots);
  StageTimes t;
  uint64_t i = 0;
  for (auto _ : state) {
    SampleContext ctx;
    ctx.index = i;
    ctx.times = &t;
    int32_t label;
    m->map(photo_record(), ctx, out.data() + m->spec().sample_elements() * (i % slots), &label);
    benchmark::DoNotOptimize(out.data());
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["decode_us"] = benchmark::Counter(t.decode_ns / 1e3 / std::max<uint64_t>(1, i));
  state.counters["augment_us"] = benchmark::Counter(t.augment_ns / 1e3 / std::max<uint64_t>(1, i));
}
// Args: crop_decode, dct_scale, train, batch (write a 64-slot batch in turn instead of one slot).
BENCHMARK(BM_InceptionSample)
    ->ArgNames({"crop", "dct", "train", "batch"})
    ->Args({0, 0, 1, 0})
    ->Args({1, 0, 1, 0})
    ->Args({0, 1, 1, 0})
    ->Args({1, 1, 1, 0})
    ->Args({1, 1, 1, 1})
    ->Args({0, 0, 0, 0})
    ->Args({1, 1, 0, 0});

void BM_Resample224(benchmark::State& state) {
  const int w = 400, h = 300;
  std::vector<uint8_t> px(size_t(w) * h * 3, 100);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i * 31);
  OutputFormat f;
  f.spec = {224, 224, 3, DType::kF32, state.range(0) ? Layout::kNCHW : Layout::kNHWC};
  std::vector<float> out(224 * 224 * 3);
  Resampler r;
  for (auto _ : state) {
    r.run({px.data(), w, h, 3, size_t(w) * 3}, {13.5, 7.25, 350, 260}, true, {}, f, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Resample224)->ArgNames({"nchw"})->Arg(0)->Arg(1);

}  // namespace
}  // namespace fastnn::pipeline

BENCHMARK_MAIN();
