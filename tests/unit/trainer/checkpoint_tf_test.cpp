// TensorFlow checkpoints into fastnn models: the layouts of tf_layout.h held to TensorFlow's semantics
// (a small net's logits computed here from TF-layout weights on an NHWC image, the way TensorFlow
// defines conv2d, depthwise_conv2d and a flattened fully connected layer, against fastnn's graph given
// the converted weights), and TF-slim's restore rules (tf_restore.h) on a checkpoint TensorFlow wrote.
#include <google/protobuf/text_format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/tf_checkpoint/tf_checkpoint.h"
#include "trainer/checkpoint/tf_layout.h"
#include "trainer/checkpoint/tf_restore.h"
#include "trainer/graph/graph.h"

namespace fastnn::checkpoint {
namespace {

using ::testing::HasSubstr;

NetDef parse_net(const std::string& text) {
  NetDef net;
  FASTNN_CHECK(google::protobuf::TextFormat::ParseFromString(text, &net), "bad net text");
  return net;
}

// data [2 channels, 7x6] -> conv 3x3 SAME stride 2, 3 filters, bias -> relu -> depthwise 3x3 VALID
// multiplier 2 -> batch norm without gamma -> fully connected on the 2x1x6 map -> 4 logits.
const char* kTfNet = R"(
  name: "t"
  input { channels: 2 height: 7 width: 6 }
  layers { name: "t/conv" inputs: "data" conv { filters: 3 kernel: 3 stride: 2 padding: "same" } }
  layers { name: "t/relu" inputs: "t/conv" relu {} }
  layers { name: "t/dw" inputs: "t/relu" depthwise_conv { kernel: 3 multiplier: 2 padding: "valid" bias: false } }
  layers { name: "t/dw/BatchNorm" inputs: "t/dw" batch_norm { scale: false epsilon: 0.001 } }
  layers { name: "t/fc" inputs: "t/dw/BatchNorm" fully_connected { units: 4 } }
  logits: "t/fc"
)";

TEST(TfLayout, VariablesOfANetAndTheirTensorFlowShapes) {
  const std::vector<TfVariable> vars = tf_variables(parse_net(kTfNet));
  std::map<std::string, const TfVariable*> by;
  for (const TfVariable& v : vars) by[v.name] = &v;
  ASSERT_EQ(vars.size(), 8u);  // no gamma: scale is off, as TF-slim leaves it out
  EXPECT_EQ(by.count("t/dw/BatchNorm/gamma"), 0u);
  EXPECT_EQ(by["t/conv/weights"]->layout, TfLayout::kConv);
  EXPECT_EQ(by["t/conv/weights"]->tf_shape(), (std::vector<int64_t>{3, 3, 2, 3}));
  EXPECT_EQ(by["t/conv/biases"]->layout, TfLayout::kSame);
  EXPECT_EQ(by["t/dw/depthwise_weights"]->tf_shape(), (std::vector<int64_t>{3, 3, 3, 2}));
  EXPECT_EQ(by["t/fc/weights"]->tf_shape(), (std::vector<int64_t>{12, 4}));  // 2 x 1 x 6 flattened
  EXPECT_TRUE(by["t/fc/weights"]->accepts_tf_shape(std::vector<int64_t>{2, 1, 6, 4}));
  EXPECT_FALSE(by["t/fc/weights"]->accepts_tf_shape(std::vector<int64_t>{4, 12}));
  EXPECT_FALSE(by["t/dw/BatchNorm/moving_mean"]->trainable);
  // A layer TF-slim builds as a convolution over the whole map is written in that form.
  std::string text = kTfNet;
  text.replace(text.find("fully_connected { units: 4 }"), 28, "fully_connected { units: 4 tf_conv: true }");
  for (const TfVariable& v : tf_variables(parse_net(text))) {
    if (v.name == "t/fc/weights") {
      EXPECT_EQ(v.tf_shape(), (std::vector<int64_t>{2, 1, 6, 4}));
    }
  }
}

// TensorFlow's definitions, on an NHWC image with HWIO / [R, S, C, M] / [H*W*C, K] weights.
struct TfReference {
  std::vector<float> x;  // [H, W, C]
  int64_t H, W, C;
  float at(int64_t h, int64_t w, int64_t c) const { return x[static_cast<size_t>((h * W + w) * C + c)]; }
};

// SAME (TensorFlow: output ceil(in / stride), the extra padding at the bottom / right) or VALID.
TfReference tf_conv(const TfReference& in, const std::vector<float>& k, int64_t R, int64_t K, int64_t stride, bool same,
                    const std::vector<float>& bias) {
  const int64_t OH = same ? (in.H + stride - 1) / stride : (in.H - R) / stride + 1;
  const int64_t OW = same ? (in.W + stride - 1) / stride : (in.W - R) / stride + 1;
  const int64_t pad_h = same ? std::max<int64_t>((OH - 1) * stride + R - in.H, 0) / 2 : 0;
  const int64_t pad_w = same ? std::max<int64_t>((OW - 1) * stride + R - in.W, 0) / 2 : 0;
  TfReference out{std::vector<float>(static_cast<size_t>(OH * OW * K)), OH, OW, K};
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow)
      for (int64_t o = 0; o < K; ++o) {
        double s = bias.empty() ? 0 : bias[static_cast<size_t>(o)];
        for (int64_t r = 0; r < R; ++r)
          for (int64_t q = 0; q < R; ++q) {
            const int64_t h = oh * stride + r - pad_h, w = ow * stride + q - pad_w;
            if (h < 0 || w < 0 || h >= in.H || w >= in.W) continue;
            for (int64_t c = 0; c < in.C; ++c) s += in.at(h, w, c) * k[static_cast<size_t>(((r * R + q) * in.C + c) * K + o)];
          }
        out.x[static_cast<size_t>((oh * OW + ow) * K + o)] = static_cast<float>(s);
      }
  return out;
}

TEST(TfLayout, ConvertedWeightsComputeWhatTensorFlowComputes) {
  const NetDef net = parse_net(kTfNet);
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0, 1);
  // Weights in TF-slim's layouts.
  std::map<std::string, std::vector<float>> tf;
  auto fill = [&](const std::string& name, size_t count) {
    auto& v = tf[name];
    for (size_t i = 0; i < count; ++i) v.push_back(n(rng));
  };
  fill("t/conv/weights", 3 * 3 * 2 * 3);
  fill("t/conv/biases", 3);
  fill("t/dw/depthwise_weights", 3 * 3 * 3 * 2);
  fill("t/dw/BatchNorm/beta", 6);
  fill("t/dw/BatchNorm/moving_mean", 6);
  tf["t/dw/BatchNorm/moving_variance"] = {0.5f, 1.5f, 2, 0.25f, 1, 3};
  fill("t/fc/weights", 12 * 4);
  fill("t/fc/biases", 4);
  TfReference img{{}, 7, 6, 2};
  for (int i = 0; i < 7 * 6 * 2; ++i) img.x.push_back(n(rng));

  // TensorFlow's forward pass.
  TfReference a = tf_conv(img, tf["t/conv/weights"], 3, 3, 2, true, tf["t/conv/biases"]);  // 4 x 3 x 3
  for (float& v : a.x) v = std::max(v, 0.0f);
  // depthwise: output channel c*M + m convolves input channel c with filter [.., .., c, m].
  std::vector<float> dw_as_conv(3 * 3 * 3 * 6, 0.0f);  // the same as a full conv with zeros across channels
  for (int r = 0; r < 9; ++r)
    for (int c = 0; c < 3; ++c)
      for (int m = 0; m < 2; ++m) dw_as_conv[static_cast<size_t>((r * 3 + c) * 6 + c * 2 + m)] = tf["t/dw/depthwise_weights"][static_cast<size_t>((r * 3 + c) * 2 + m)];
  TfReference b = tf_conv(a, dw_as_conv, 3, 6, 1, false, {});  // 2 x 1 x 6
  ASSERT_EQ(b.H * b.W * b.C, 12);
  for (size_t i = 0; i < b.x.size(); ++i) {
    const size_t c = i % 6;
    b.x[i] = (b.x[i] - tf["t/dw/BatchNorm/moving_mean"][c]) / std::sqrt(tf["t/dw/BatchNorm/moving_variance"][c] + 0.001f) +
             tf["t/dw/BatchNorm/beta"][c];
  }
  std::vector<double> want(4);
  for (int k = 0; k < 4; ++k) {
    want[k] = tf["t/fc/biases"][k];
    for (int i = 0; i < 12; ++i) want[k] += b.x[static_cast<size_t>(i)] * tf["t/fc/weights"][static_cast<size_t>(i * 4 + k)];
  }

  // fastnn's graph with the converted weights, on the NCHW image.
  graph::Graph g(net, {.batch_size = 1});
  for (const TfVariable& v : tf_variables(net)) {
    const graph::NamedTensor* t = nullptr;
    const auto all = g.variables();
    for (const auto& x : all)
      if (x.name == v.name) t = &x;
    ASSERT_NE(t, nullptr) << v.name;
    Tensor dst = t->value;
    tf_to_fastnn(v, tf.at(v.name).data(), dst.data<float>());
  }
  std::vector<float> nchw(7 * 6 * 2);
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 7; ++h)
      for (int w = 0; w < 6; ++w) nchw[static_cast<size_t>((c * 7 + h) * 6 + w)] = img.at(h, w, c);
  g.forward(Tensor::from<float>(Shape{1, 2, 7, 6}, std::span<const float>(nchw)), /*training=*/false);
  const float* logits = g.output(0).data<float>();
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(logits[k], want[k], 1e-4) << "logit " << k;

  // And back: fastnn -> TensorFlow is the exact inverse.
  for (const TfVariable& v : tf_variables(net)) {
    std::vector<float> f(tf[v.name].size()), back(f.size());
    tf_to_fastnn(v, tf[v.name].data(), f.data());
    fastnn_to_tf(v, f.data(), back.data());
    EXPECT_EQ(back, tf[v.name]) << v.name;
  }
}

// LeNet/conv1 as make_fixtures.py saved it: a 5x5 conv of 1 channel into 4, no bias.
const char* kFixtureNet = R"(
  name: "LeNet"
  input { channels: 1 height: 5 width: 5 }
  layers { name: "LeNet/conv1" inputs: "data" conv { filters: 4 kernel: 5 padding: "valid" bias: BIAS } }
  layers { name: "LeNet/logits" inputs: "LeNet/conv1" fully_connected { units: 2 } }
  logits: "LeNet/logits"
)";

NetDef fixture_net(bool bias) {
  std::string t = kFixtureNet;
  t.replace(t.find("BIAS"), 4, bias ? "true" : "false");
  return parse_net(t);
}

std::string restore_error(const NetDef& net, const TfRestoreOptions& o) {
  const auto c = tf_checkpoint::open_tf_checkpoint(*tf_checkpoint::find_tf_checkpoint(FASTNN_SOURCE_DIR "/tests/data/tf_checkpoints/v1"));
  try {
    restore_from_tf(c, tf_variables(net), o);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(restored)";
}

TEST(TfRestore, RestoresByNameTransposedAndSummarisesTheRest) {
  for (const char* folder : {"v1", "v2"}) {
    const auto c = tf_checkpoint::open_tf_checkpoint(*tf_checkpoint::find_tf_checkpoint(str(FASTNN_SOURCE_DIR, "/tests/data/tf_checkpoints/", folder)));
    const std::vector<TfVariable> vars = tf_variables(fixture_net(false));
    for (bool ema : {false, true}) {
      const TfRestore r = restore_from_tf(c, vars, {.exclude_scopes = {"LeNet/logits"}, .use_moving_averages = ema});
      ASSERT_EQ(r.values.size(), 1u);
      EXPECT_EQ(r.values[0].name, "LeNet/conv1/weights");
      // fastnn [4, 1, 5, 5][k][0][r][s] = TF [5, 5, 1, 4][r][s][0][k] = (i - 50) / 8 (or / 16, the average).
      for (int k = 0; k < 4; ++k)
        for (int rs = 0; rs < 25; ++rs)
          ASSERT_EQ(r.values[0].data[static_cast<size_t>(k * 25 + rs)], (rs * 4 + k - 50) / (ema ? 16.0f : 8.0f));
      EXPECT_THAT(r.summary, HasSubstr("excluded by scope 'LeNet/logits', initialised: 2 variables"));
      EXPECT_THAT(r.summary, HasSubstr("ignored, global_step: 1 tensors"));
      EXPECT_THAT(r.summary, HasSubstr("ignored, optimizer slots: 1 tensors: LeNet/conv1/weights/Momentum"));
      // misc/{bf16 (V2 only), counts, half, label}, part/weights; the first four named.
      EXPECT_THAT(r.summary, HasSubstr(str("ignored, not in the model: ", folder == std::string("v2") ? 5 : 4, " tensors: ")));
      if (ema) EXPECT_THAT(r.summary, HasSubstr("(1 from their moving averages)"));
      else EXPECT_THAT(r.summary, HasSubstr("ignored, moving averages: 1 tensors"));
    }
  }
}

TEST(TfRestore, MissingAndMisshapenVariablesAreOneErrorNamingBothShapes) {
  // The classifier is not excluded and the checkpoint has none; conv1 has a bias the checkpoint lacks.
  const std::string e = restore_error(fixture_net(true), {});
  EXPECT_THAT(e, HasSubstr("3 model variable(s) cannot be restored"));
  EXPECT_THAT(e, HasSubstr("LeNet/conv1/biases: not in the checkpoint (the model's is [4])"));
  EXPECT_THAT(e, HasSubstr("LeNet/logits/weights: not in the checkpoint (the model's is [4, 2] in TensorFlow's layout, "
                           "[2, 4] in fastnn's)"));
  EXPECT_THAT(e, HasSubstr("checkpoint_exclude_scopes"));
  // ignore_missing_vars keeps their initial values and lists them.
  const auto c = tf_checkpoint::open_tf_checkpoint(*tf_checkpoint::find_tf_checkpoint(FASTNN_SOURCE_DIR "/tests/data/tf_checkpoints/v2"));
  const TfRestore r = restore_from_tf(c, tf_variables(fixture_net(true)), {.ignore_missing_vars = true});
  EXPECT_EQ(r.values.size(), 1u);
  EXPECT_THAT(r.summary, HasSubstr("not in the checkpoint, initialised (ignore_missing_vars): 3 variables: "
                                   "LeNet/conv1/biases LeNet/logits/weights LeNet/logits/biases"));
  // A model with 3 filters where the checkpoint has 4: both shapes named; ignore_missing_vars does not help.
  std::string text = kFixtureNet;
  text.replace(text.find("filters: 4"), 10, "filters: 3");
  text.replace(text.find("BIAS"), 4, "false");
  const std::string shape = restore_error(parse_net(text), {.exclude_scopes = {"LeNet/logits"}, .ignore_missing_vars = true});
  EXPECT_THAT(shape, HasSubstr("LeNet/conv1/weights: [5, 5, 1, 4] in the checkpoint, the model's is [5, 5, 1, 3] in "
                               "TensorFlow's layout, [3, 1, 5, 5] in fastnn's"));
}

}  // namespace
}  // namespace fastnn::checkpoint
