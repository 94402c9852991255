// Mixup and CutMix (pipeline/mixup.h) against timm itself, and in the pipeline.
//
// tests/data/mixup holds timm 1.0's own outputs (made by make_fixtures.py there): Mixup._mix_batch on a
// float32 batch, cutmix_bbox_and_lam plus timm's paste, and FastCollateMixup on uint8 samples, each with
// what timm drew. Given the same lambda (and CutMix centre), fastnn's batch is held to bit-exactness.
// The draws: the probability, the mixup / CutMix switch and the epoch cut-off honoured; lambda's mean and
// variance those of Beta(alpha, alpha); a function of (seed, epoch, batch) only. NHWC and float16
// batches mix as NCHW float32 ones. In the pipeline, each batch carries its draw's lambda and holds its
// unmixed images mixed by that draw.
#include "pipeline/mixup.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/check.h"
#include "pipeline/dataset.h"
#include "pipeline/half.h"
#include "pipeline/rng.h"
#include "tests/unit/pipeline/pipeline_test_util.h"

namespace fastnn::pipeline {
namespace {

// make_fixtures.py's batch_value.
float batch_value(int n, int c, int y, int x) { return static_cast<float>(((n * 37 + c * 11 + y * 5 + x * 3) % 251) - 125) / 8.0f; }

template <typename T>
std::vector<T> nchw_batch(int n, int c, int h, int w, float scale = 1, float offset = 0) {
  std::vector<T> v;
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) v.push_back(static_cast<T>(batch_value(i, k, y, x) * scale + offset));
  return v;
}

const nlohmann::json& timm_fixtures() {
  static const nlohmann::json j = [] {
    std::ifstream f(std::string(FASTNN_SOURCE_DIR) + "/tests/data/mixup/fixtures.json");
    std::stringstream s;
    s << f.rdbuf();
    return nlohmann::json::parse(s.str());
  }();
  return j;
}

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

TEST(Mixup, BitExactAgainstTimm) {
  int checked = 0;
  for (const nlohmann::json& c : timm_fixtures()["cases"]) {
    const int n = c["shape"][0].get<int>(), ch = c["shape"][1].get<int>(), h = c["shape"][2].get<int>(),
              w = c["shape"][3].get<int>();
    const std::string kind = c["kind"].get<std::string>();
    SCOPED_TRACE(kind);
    if (kind == "pair" || kind == "elem") continue;  // PairAndElemModesBitExactAgainstTimm
    if (kind == "uint8") {
      std::vector<uint8_t> b = nchw_batch<uint8_t>(n, ch, h, w, 8, 125);
      mix_batch(MixDraw{.lambda = c["lambda"].get<double>()}, BatchSpec{h, w, ch, DType::kU8, Layout::kNCHW}, n, b.data());
      ASSERT_EQ(b.size(), c["output"].size());
      for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(int(b[i]), int(c["output"][i])) << "element " << i;
      ++checked;
      continue;
    }
    std::vector<float> b = nchw_batch<float>(n, ch, h, w);
    MixDraw d{.lambda = c["lambda"]};
    if (kind == "cutmix") {
      d = cutmix_box(c["lambda_drawn"].get<double>(), h, w, c["centre"][0].get<int>(), c["centre"][1].get<int>());
      EXPECT_EQ(d.lambda, double(c["lambda"]));
      EXPECT_EQ(d.top, int(c["box"][0]));
      EXPECT_EQ(d.top + d.height, int(c["box"][1]));
      EXPECT_EQ(d.left, int(c["box"][2]));
      EXPECT_EQ(d.left + d.width, int(c["box"][3]));
    }
    mix_batch(d, BatchSpec{h, w, ch, DType::kF32, Layout::kNCHW}, n, b.data());
    ASSERT_EQ(b.size(), c["output"].size());
    for (size_t i = 0; i < b.size(); ++i)
      ASSERT_EQ(bits(b[i]), std::stoul(c["output"][i].get<std::string>(), nullptr, 16)) << "element " << i;
    ++checked;
  }
  EXPECT_EQ(checked, 8);
}

// timm's pair and elem modes (Mixup._mix_pair / _mix_elem): given timm's draw for each pair or sample,
// the batch is mixed to timm's bits (elem: each sample with its partner's unmixed image, by its own
// draw), and each sample's own-label weight is the lambda timm hands its loss (float32 there).
TEST(Mixup, PairAndElemModesBitExactAgainstTimm) {
  int checked = 0;
  for (const nlohmann::json& c : timm_fixtures()["cases"]) {
    const std::string kind = c["kind"].get<std::string>();
    if (kind != "pair" && kind != "elem") continue;
    SCOPED_TRACE(kind + " case " + std::to_string(checked));
    const int n = c["shape"][0].get<int>(), ch = c["shape"][1].get<int>(), h = c["shape"][2].get<int>(),
              w = c["shape"][3].get<int>();
    std::vector<MixDraw> draws;
    for (const nlohmann::json& d : c["draws"]) {
      MixDraw m{.lambda = d["lambda"].get<double>()};
      if (d["cutmix"].get<bool>()) {
        m.cutmix = true;
        m.top = d["box"][0].get<int>();
        m.height = d["box"][1].get<int>() - m.top;
        m.left = d["box"][2].get<int>();
        m.width = d["box"][3].get<int>() - m.left;
      }
      draws.push_back(m);
    }
    const MixMode mode = mix_mode_from_name(kind);
    std::vector<float> b = nchw_batch<float>(n, ch, h, w);
    mix_samples(mode, draws, BatchSpec{h, w, ch, DType::kF32, Layout::kNCHW}, n, b.data());
    ASSERT_EQ(b.size(), c["output"].size());
    for (size_t i = 0; i < b.size(); ++i)
      ASSERT_EQ(bits(b[i]), std::stoul(c["output"][i].get<std::string>(), nullptr, 16)) << "element " << i;
    const std::vector<double> weights = own_label_weights(mode, draws, n);
    ASSERT_EQ(weights.size(), c["weights"].size());
    for (size_t i = 0; i < weights.size(); ++i)
      EXPECT_EQ(static_cast<float>(weights[i]), c["weights"][i].get<float>()) << "sample " << i;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

// The draws of each mode: batch mode's one is draw_mix's; pair and elem draw one per pair or sample from
// the same stream (the first is batch mode's); partners share a pair's weight, and elem's differ.
TEST(Mixup, EachModeDrawsItsUnitsFromTheBatchsStream) {
  MixOptions o;
  o.mixup_alpha = 0.4;
  o.cutmix_alpha = 1.0;
  int apart = 0;
  for (uint64_t batch = 0; batch < 20; ++batch) {
    o.mode = MixMode::kBatch;
    const std::vector<MixDraw> one = draw_mixes(o, 8, 9, 7, 5, 1, batch);
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0].lambda, draw_mix(o, 8, 9, 5, 1, batch).lambda);
    o.mode = MixMode::kPair;
    const std::vector<MixDraw> pairs = draw_mixes(o, 8, 9, 7, 5, 1, batch);
    ASSERT_EQ(pairs.size(), 4u);  // 7 samples: 3 pairs and the middle one
    EXPECT_EQ(pairs[0].lambda, one[0].lambda);
    const std::vector<double> pw = own_label_weights(MixMode::kPair, pairs, 7);
    for (int i = 0; i < 7; ++i) EXPECT_EQ(pw[static_cast<size_t>(i)], pairs[static_cast<size_t>(std::min(i, 6 - i))].lambda);
    o.mode = MixMode::kElem;
    const std::vector<MixDraw> elems = draw_mixes(o, 8, 9, 7, 5, 1, batch);
    ASSERT_EQ(elems.size(), 7u);
    EXPECT_EQ(elems[0].lambda, one[0].lambda);
    apart += elems[1].lambda != elems[5].lambda;  // partners drawn apart (CutMix's few box sizes may agree)
    o.off_epoch = 1;  // epoch 1 is off: every unit unmixed
    for (const MixDraw& d : draw_mixes(o, 8, 9, 7, 5, 1, batch)) EXPECT_EQ(d.lambda, 1.0);
    o.off_epoch = 0;
  }
  EXPECT_GT(apart, 15);
  EXPECT_THROW(mix_mode_from_name("pairs"), ConfigError);
}

// NHWC and float16 batches mix exactly as the NCHW float32 batch (float16: its float values blended,
// rounded back to half), in batch and elem modes.
TEST(Mixup, EveryLayoutAndDtypeMixesAlike) {
  const int n = 4, c = 3, h = 5, w = 6;
  const std::vector<float> nchw = nchw_batch<float>(n, c, h, w);
  auto to_nhwc = [&](const std::vector<float>& v) {
    std::vector<float> t(v.size());
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < c; ++k)
        for (int y = 0; y < h; ++y)
          for (int x = 0; x < w; ++x) t[((i * h + y) * w + x) * c + k] = v[((i * c + k) * h + y) * w + x];
    return t;
  };
  for (const MixDraw& d : {MixDraw{.lambda = 0.3}, cutmix_box(0.5, h, w, 2, 4)}) {
    std::vector<float> want = nchw;
    mix_batch(d, BatchSpec{h, w, c, DType::kF32, Layout::kNCHW}, n, want.data());
    std::vector<float> got = to_nhwc(nchw);
    mix_batch(d, BatchSpec{h, w, c, DType::kF32, Layout::kNHWC}, n, got.data());
    EXPECT_EQ(got, to_nhwc(want)) << (d.cutmix ? "cutmix" : "mixup");
    std::vector<uint16_t> half;
    for (float v : nchw) half.push_back(float_to_half(v));  // the values are exact in half
    mix_batch(d, BatchSpec{h, w, c, DType::kF16, Layout::kNCHW}, n, half.data());
    for (size_t i = 0; i < half.size(); ++i) ASSERT_EQ(half[i], float_to_half(want[i])) << i;
  }
  // elem mode: each sample by its own draw, with its partner's unmixed image, alike in every layout and
  // dtype. Sample 3 (lambda 1) stays itself although its partner, sample 0, mixes with it.
  const std::vector<MixDraw> elem = {MixDraw{.lambda = 0.3}, cutmix_box(0.5, h, w, 2, 4), MixDraw{.lambda = 0.8}, MixDraw{}};
  std::vector<float> want = nchw;
  mix_samples(MixMode::kElem, elem, BatchSpec{h, w, c, DType::kF32, Layout::kNCHW}, n, want.data());
  std::vector<float> got_nhwc = to_nhwc(nchw);
  mix_samples(MixMode::kElem, elem, BatchSpec{h, w, c, DType::kF32, Layout::kNHWC}, n, got_nhwc.data());
  EXPECT_EQ(got_nhwc, to_nhwc(want));
  std::vector<uint16_t> half;
  for (float v : nchw) half.push_back(float_to_half(v));
  mix_samples(MixMode::kElem, elem, BatchSpec{h, w, c, DType::kF16, Layout::kNCHW}, n, half.data());
  for (size_t i = 0; i < half.size(); ++i) ASSERT_EQ(half[i], float_to_half(want[i])) << i;
  const size_t sample = static_cast<size_t>(c * h * w);
  for (size_t e = 0; e < sample; ++e) {
    ASSERT_EQ(want[3 * sample + e], nchw[3 * sample + e]) << e;
    ASSERT_EQ(want[e], nchw[e] * 0.3f + nchw[3 * sample + e] * 0.7f) << e;
  }

  // A CutMix box covers only the box: everything outside it is the sample's own.
  const MixDraw d = cutmix_box(0.5, h, w, 2, 4);
  ASSERT_GT(d.height * d.width, 0);
  std::vector<float> got = nchw;
  mix_batch(d, BatchSpec{h, w, c, DType::kF32, Layout::kNCHW}, n, got.data());
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < c; ++k)
      for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
          const bool in = y >= d.top && y < d.top + d.height && x >= d.left && x < d.left + d.width;
          ASSERT_EQ(got[((i * c + k) * h + y) * w + x], batch_value(in ? n - 1 - i : i, k, y, x));
        }
}

TEST(Mixup, DrawsFollowTheOptions) {
  MixOptions o;
  o.mixup_alpha = 0.2;
  o.cutmix_alpha = 1.0;
  o.prob = 0.6;
  o.switch_prob = 0.3;
  const int draws = 20000;
  int mixed = 0, cut = 0, mixup_draws = 0;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < draws; ++i) {
    const MixDraw d = draw_mix(o, 32, 24, 5, 1, static_cast<uint64_t>(i));
    const MixDraw again = draw_mix(o, 32, 24, 5, 1, static_cast<uint64_t>(i));
    ASSERT_EQ(d.lambda, again.lambda);
    ASSERT_EQ(d.top, again.top);
    ASSERT_GE(d.lambda, 0);
    ASSERT_LE(d.lambda, 1);
    if (d.lambda == 1 && !d.cutmix) continue;
    ++mixed;
    if (d.cutmix) {
      ++cut;
      ASSERT_GE(d.top, 0);
      ASSERT_LE(d.top + d.height, 32);
      ASSERT_GE(d.left, 0);
      ASSERT_LE(d.left + d.width, 24);
      ASSERT_DOUBLE_EQ(d.lambda, 1.0 - d.height * d.width / (32.0 * 24.0));
    } else {
      ++mixup_draws;
      sum += d.lambda;
      sum2 += d.lambda * d.lambda;
    }
  }
  auto within = [](double count, double total, double p) {  // 4 standard deviations of a binomial
    return std::abs(count - total * p) <= 4 * std::sqrt(total * p * (1 - p));
  };
  EXPECT_TRUE(within(mixed, draws, 0.6)) << mixed;
  EXPECT_TRUE(within(cut, mixed, 0.3)) << cut << " of " << mixed;
  // Beta(0.2, 0.2): mean 1/2, variance 1 / (4 (2 alpha + 1)) = 0.1786.
  const double mean = sum / mixup_draws, var = sum2 / mixup_draws - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_NEAR(var, 1.0 / (4 * 1.4), 0.005);
  // Epochs from off_epoch on are never mixed; other seeds, epochs and batches draw differently.
  o.off_epoch = 2;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(draw_mix(o, 32, 24, 5, 2, static_cast<uint64_t>(i)).lambda, 1);
  o.prob = 1;
  EXPECT_NE(draw_mix(o, 32, 24, 5, 1, 7).lambda, draw_mix(o, 32, 24, 6, 1, 7).lambda);
  EXPECT_NE(draw_mix(o, 32, 24, 5, 1, 7).lambda, draw_mix(o, 32, 24, 5, 0, 7).lambda);
  EXPECT_NE(draw_mix(o, 32, 24, 5, 1, 7).lambda, draw_mix(o, 32, 24, 5, 1, 8).lambda);
}

TEST(Mixup, BetaDrawsHaveBetasMoments) {
  for (double a : {0.2, 0.8, 1.0, 2.5}) {
    SampleRng rng(3, 0, 0, RngStream::kMix);
    double sum = 0, sum2 = 0;
    const int k = 40000;
    for (int i = 0; i < k; ++i) {
      const double v = beta_draw(rng, a);
      ASSERT_TRUE(v >= 0 && v <= 1) << v;
      sum += v;
      sum2 += v * v;
    }
    const double mean = sum / k, var = sum2 / k - mean * mean;
    EXPECT_NEAR(mean, 0.5, 0.006) << a;
    EXPECT_NEAR(var, 1 / (4 * (2 * a + 1)), 0.004) << a;
  }
}

TEST(Mixup, OptionsOutOfRangeAreRefusedByName) {
  auto refused = [](MixOptions o, const char* field) {
    try {
      check_mix_options(o);
    } catch (const ConfigError& e) {
      return std::string(e.what()).find(field) != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(refused(MixOptions{.mixup_alpha = -1}, "mixup_alpha"));
  EXPECT_TRUE(refused(MixOptions{.cutmix_alpha = -0.5}, "cutmix_alpha"));
  EXPECT_TRUE(refused(MixOptions{.prob = 1.5}, "mixup_prob"));
  EXPECT_TRUE(refused(MixOptions{.switch_prob = -0.1}, "mixup_switch_prob"));
  EXPECT_TRUE(refused(MixOptions{.off_epoch = -1}, "mixup_off_epoch"));
  EXPECT_NO_THROW(check_mix_options(MixOptions{.mixup_alpha = 0.8, .cutmix_alpha = 1.0}));
}

// The pipeline tests' batches: 4x5x2 float32 samples whose values tell sample, element and record apart.
const BatchSpec kPipelineSpec{4, 5, 2, DType::kF32, Layout::kNHWC};

auto distinct_sample_mapper() {
  return make_function_mapper(kPipelineSpec, [](std::string_view rec, const SampleContext& ctx, void* slot, int32_t* label) {
    auto* p = static_cast<float*>(slot);
    for (int i = 0; i < 40; ++i) p[i] = static_cast<float>(ctx.index * 100 + i) + static_cast<float>(rec.size());
    *label = static_cast<int32_t>(ctx.index % 7);
  });
}

MixOptions pipeline_mix() {
  MixOptions mix;
  mix.mixup_alpha = 0.4;
  mix.cutmix_alpha = 1.0;
  return mix;
}

// In the pipeline: each batch is its unmixed self mixed by draw_mix(seed, epoch, batch in epoch), and
// says so in mix_weights(); on any thread count, and from a later first batch (a resumed run).
TEST(Mixup, PipelineBatchesCarryTheirDraw) {
  testing::ScratchDir dir("mixup");
  const std::vector<std::string> paths = testing::write_named_shards(dir, {23, 18});
  const BatchSpec spec = kPipelineSpec;
  auto mapper = distinct_sample_mapper();
  const MixOptions mix = pipeline_mix();
  auto batches = [&](const MixOptions& m, int threads, uint64_t first) {
    Dataset ds = Dataset::from_files(paths);
    ds.shuffle(10, 3).repeat(2).map_and_batch(mapper, 5, 2, true);
    DatasetOptions o;
    o.seed = 9;
    o.num_threads = threads;
    o.mix = m;
    ds.with_options(o);
    std::vector<std::tuple<int64_t, int64_t, double, std::vector<float>>> out;
    auto it = ds.make_iterator(first);
    BatchHandle b;
    while (it->next(&b)) {
      const auto* d = static_cast<const float*>(b->data());
      for (int s = 1; s < b->size(); ++s) EXPECT_EQ(b->mix_weight(s), b->mix_weight(0));  // batch mode: one weight
      out.emplace_back(b->epoch(), b->step(), b->mix_weight(0), std::vector<float>(d, d + b->bytes() / 4));
    }
    return out;
  };
  const auto plain = batches(MixOptions{}, 2, 0);
  const auto mixed = batches(mix, 2, 0);
  ASSERT_EQ(mixed.size(), 16u);  // 41 records: 8 batches of 5 per epoch, 2 epochs
  int blended = 0;
  for (size_t i = 0; i < mixed.size(); ++i) {
    const auto& [epoch, step, lambda, data] = mixed[i];
    EXPECT_EQ(std::get<2>(plain[i]), 1.0);
    const MixDraw d = draw_mix(mix, 4, 5, 9, epoch, static_cast<uint64_t>(step));
    EXPECT_EQ(lambda, d.lambda);
    std::vector<float> want = std::get<3>(plain[i]);
    mix_batch(d, spec, 5, want.data());
    EXPECT_EQ(data, want) << "batch " << i;
    blended += lambda < 1;
  }
  EXPECT_GT(blended, 10);
  EXPECT_EQ(batches(mix, 1, 0), mixed);
  const auto tail = batches(mix, 3, 11);
  ASSERT_EQ(tail.size(), 5u);
  for (size_t i = 0; i < tail.size(); ++i) EXPECT_EQ(tail[i], mixed[11 + i]);
}

// One epoch of batches of 6 from `paths` (shuffled, seed 9, 2 threads) mixed by `mix` in `parts` parts:
// each batch's index, own-label weights and float32 data.
std::vector<std::tuple<int64_t, std::vector<double>, std::vector<float>>> batches_of_six(
    const std::vector<std::string>& paths, const MixOptions& mix, int parts) {
  Dataset ds = Dataset::from_files(paths);
  ds.shuffle(10, 3).repeat(1).map_and_batch(distinct_sample_mapper(), 6, 2, true);
  DatasetOptions o;
  o.seed = 9;
  o.num_threads = 2;
  o.mix = mix;
  o.mix_parts = parts;
  ds.with_options(o);
  std::vector<std::tuple<int64_t, std::vector<double>, std::vector<float>>> out;
  auto it = ds.make_iterator(0);
  BatchHandle b;
  while (it->next(&b)) {
    const auto* d = static_cast<const float*>(b->data());
    out.emplace_back(b->step(), b->mix_weights(), std::vector<float>(d, d + b->bytes() / 4));
  }
  return out;
}

// DatasetOptions::mix_parts (gradient accumulation's parts): each part of a batch is its unmixed self
// mixed by its own draw, keyed batch x parts + part, its samples paired within it; a batch that does
// not divide into the parts is one part.
TEST(Mixup, PipelineMixesEachPartOnItsOwn) {
  testing::ScratchDir dir("mixup_parts");
  const std::vector<std::string> paths = testing::write_named_shards(dir, {20, 16});
  const BatchSpec spec = kPipelineSpec;
  const MixOptions mix = pipeline_mix();
  auto batches = [&](const MixOptions& m, int parts) { return batches_of_six(paths, m, parts); };
  const auto plain = batches(MixOptions{}, 1);
  for (int parts : {2, 3, 4}) {  // 4 does not divide a batch of 6: one part
    SCOPED_TRACE(parts);
    const auto mixed = batches(mix, parts);
    ASSERT_EQ(mixed.size(), 6u);  // 36 records, batches of 6
    const int used = 6 % parts == 0 ? parts : 1, rows = 6 / used;
    int blended = 0;
    for (size_t i = 0; i < mixed.size(); ++i) {
      const auto& [step, lambdas, data] = mixed[i];
      ASSERT_EQ(lambdas.size(), 6u);  // one per sample
      std::vector<float> want = std::get<2>(plain[i]);
      for (int p = 0; p < used; ++p) {
        const MixDraw d = draw_mix(mix, 4, 5, 9, 0, static_cast<uint64_t>(step * used + p));
        for (int r = 0; r < rows; ++r) EXPECT_EQ(lambdas[static_cast<size_t>(p * rows + r)], d.lambda);
        mix_batch(d, spec, rows, want.data() + static_cast<size_t>(p * rows) * 40);
        blended += d.lambda < 1;
      }
      EXPECT_EQ(data, want) << "batch " << i;
    }
    EXPECT_GT(blended, 3);
  }
}

// elem mode in the pipeline: each batch is its unmixed self mixed by draw_mixes' per-sample draws, and
// carries each sample's own weight.
TEST(Mixup, PipelineElemModeCarriesEachSamplesWeight) {
  testing::ScratchDir dir("mixup_elem");
  const std::vector<std::string> paths = testing::write_named_shards(dir, {12, 12});
  MixOptions mix = pipeline_mix();
  mix.mode = MixMode::kElem;
  auto batches = [&](const MixOptions& m) { return batches_of_six(paths, m, 1); };
  const auto plain = batches(MixOptions{});
  const auto mixed = batches(mix);
  ASSERT_EQ(mixed.size(), 4u);
  int distinct = 0;
  for (size_t i = 0; i < mixed.size(); ++i) {
    const auto& [step, weights, data] = mixed[i];
    EXPECT_TRUE(std::get<1>(plain[i]).empty());
    const std::vector<MixDraw> draws = draw_mixes(mix, 4, 5, 6, 9, 0, static_cast<uint64_t>(step));
    EXPECT_EQ(weights, own_label_weights(MixMode::kElem, draws, 6));
    std::vector<float> want = std::get<2>(plain[i]);
    mix_samples(MixMode::kElem, draws, kPipelineSpec, 6, want.data());
    EXPECT_EQ(data, want) << "batch " << i;
    distinct += weights[0] != weights[5];
  }
  EXPECT_GT(distinct, 0);
}

}  // namespace
}  // namespace fastnn::pipeline
