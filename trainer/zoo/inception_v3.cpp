// TF-slim's inception_v3 (nets/inception_v3.py) with inception_arg_scope: every conv is conv + batch
// norm (decay 0.9997, epsilon 0.001, no scale: slim's batch_norm default) + ReLU, weights from
// variance_scaling_initializer; the stem is VALID, the Mixed blocks SAME.
//   AuxLogits (on Mixed_6e): avg pool 5x5/3 VALID, conv 1x1 128, conv 768 with kernel min(5, map)
//   VALID (weights ~ truncated normal 0.01), conv 1x1 num_classes (bias, no BN, weights ~ truncated
//   normal 0.001): a fully connected layer here, on the 1x1 map.
//   Logits: avg pool min(8, map) VALID, dropout keep 0.8, conv 1x1 num_classes with bias (fully
//   connected here).
// The aux head needs Mixed_6e to be at least 5x5, i.e. inputs of at least 107x107; without it, 75x75.
// Parameter count with 1000 classes: 23,817,352 trainable + 34,432 moving statistics without the aux
// head (Keras' InceptionV3: 23,851,784 total), 27,143,152 trainable with it (docs/MODELS.md).
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

struct V3 {
  NetBuilder& b;
  std::string conv(const std::string& x, const std::string& name, int filters, std::vector<int> kernel,
                   int stride = 1, std::optional<std::string> padding = {}) {
    return b.conv2d(x, name, {.filters = filters, .kernel = std::move(kernel), .stride = {stride}, .padding = padding});
  }
  std::string avg_branch(const std::string& x, int filters) {
    auto s = b.scope("Branch_3");
    return conv(b.avg_pool2d(x, "AvgPool_0a_3x3", {3}, {1}), "Conv2d_0b_1x1", filters, {1});
  }

  // Mixed_5b/c/d: 35x35 blocks; `pool_filters` 32 in 5b, 64 after; 5c names its 5x5 branch oddly.
  std::string mixed_5(const std::string& x, const std::string& name, int pool_filters) {
    auto s = b.scope(name);
    const bool c = name == "Mixed_5c";
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_0a_1x1", 64, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(x, c ? "Conv2d_0b_1x1" : "Conv2d_0a_1x1", 48, {1});
      b1 = conv(b1, c ? "Conv_1_0c_5x5" : "Conv2d_0b_5x5", 64, {5});
    }
    {
      auto br = b.scope("Branch_2");
      b2 = conv(x, "Conv2d_0a_1x1", 64, {1});
      b2 = conv(b2, "Conv2d_0b_3x3", 96, {3});
      b2 = conv(b2, "Conv2d_0c_3x3", 96, {3});
    }
    return b.concat({b0, b1, b2, avg_branch(x, pool_filters)}, "concat");
  }

  // Mixed_6b..e: 17x17 blocks with factorised 7x7 convs of width c.
  std::string mixed_6(const std::string& x, const std::string& name, int c) {
    auto s = b.scope(name);
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_0a_1x1", 192, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(x, "Conv2d_0a_1x1", c, {1});
      b1 = conv(b1, "Conv2d_0b_1x7", c, {1, 7});
      b1 = conv(b1, "Conv2d_0c_7x1", 192, {7, 1});
    }
    {
      auto br = b.scope("Branch_2");
      b2 = conv(x, "Conv2d_0a_1x1", c, {1});
      b2 = conv(b2, "Conv2d_0b_7x1", c, {7, 1});
      b2 = conv(b2, "Conv2d_0c_1x7", c, {1, 7});
      b2 = conv(b2, "Conv2d_0d_7x1", c, {7, 1});
      b2 = conv(b2, "Conv2d_0e_1x7", 192, {1, 7});
    }
    return b.concat({b0, b1, b2, avg_branch(x, 192)}, "concat");
  }

  // Mixed_7b/c: 8x8 blocks with split 1x3 / 3x1 convs; 7b and 7c name one conv differently.
  std::string mixed_7(const std::string& x, const std::string& name) {
    auto s = b.scope(name);
    const bool is_b = name == "Mixed_7b";
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_0a_1x1", 320, {1});
    }
    {
      auto br = b.scope("Branch_1");
      const std::string t = conv(x, "Conv2d_0a_1x1", 384, {1});
      b1 = b.concat({conv(t, "Conv2d_0b_1x3", 384, {1, 3}), conv(t, is_b ? "Conv2d_0b_3x1" : "Conv2d_0c_3x1", 384, {3, 1})},
                    "concat");
    }
    {
      auto br = b.scope("Branch_2");
      std::string t = conv(x, "Conv2d_0a_1x1", 448, {1});
      t = conv(t, "Conv2d_0b_3x3", 384, {3});
      b2 = b.concat({conv(t, "Conv2d_0c_1x3", 384, {1, 3}), conv(t, "Conv2d_0d_3x1", 384, {3, 1})}, "concat");
    }
    return b.concat({b0, b1, b2, avg_branch(x, 192)}, "concat");
  }
};

}  // namespace

NetDef build_inception_v3(const ZooOptions& o) {
  if (o.aux_logits && (o.height < 107 || o.width < 107))
    throw ConfigError(str("inception_v3: the aux logits head needs inputs of at least 107x107 (got ", o.height, "x",
                          o.width, "); build without it (aux_logits = false) for inputs down to 75x75"));
  NetBuilder b("InceptionV3", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = variance_scaling();
  b.conv_defaults.batch_norm = batch_norm_params(0.9997f, 0.001f, false);
  b.conv_defaults.padding = "valid";
  b.pool_padding = "valid";
  V3 v{b};
  std::string x = v.conv("data", "Conv2d_1a_3x3", 32, {3}, 2);
  x = v.conv(x, "Conv2d_2a_3x3", 32, {3});
  x = v.conv(x, "Conv2d_2b_3x3", 64, {3}, 1, "same");
  x = b.max_pool2d(x, "MaxPool_3a_3x3", {3}, {2});
  x = v.conv(x, "Conv2d_3b_1x1", 80, {1});
  x = v.conv(x, "Conv2d_4a_3x3", 192, {3});
  x = b.max_pool2d(x, "MaxPool_5a_3x3", {3}, {2});

  b.conv_defaults.padding = "same";
  b.pool_padding = "same";
  x = v.mixed_5(x, "Mixed_5b", 32);
  x = v.mixed_5(x, "Mixed_5c", 64);
  x = v.mixed_5(x, "Mixed_5d", 64);
  {
    auto s = b.scope("Mixed_6a");
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = v.conv(x, "Conv2d_1a_1x1", 384, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = v.conv(x, "Conv2d_0a_1x1", 64, {1});
      b1 = v.conv(b1, "Conv2d_0b_3x3", 96, {3});
      b1 = v.conv(b1, "Conv2d_1a_1x1", 96, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_2");
      b2 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2}, "valid");
    }
    x = b.concat({b0, b1, b2}, "concat");
  }
  x = v.mixed_6(x, "Mixed_6b", 128);
  x = v.mixed_6(x, "Mixed_6c", 160);
  x = v.mixed_6(x, "Mixed_6d", 160);
  x = v.mixed_6(x, "Mixed_6e", 192);
  const std::string mixed_6e = x;
  {
    auto s = b.scope("Mixed_7a");
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = v.conv(x, "Conv2d_0a_1x1", 192, {1});
      b0 = v.conv(b0, "Conv2d_1a_3x3", 320, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = v.conv(x, "Conv2d_0a_1x1", 192, {1});
      b1 = v.conv(b1, "Conv2d_0b_1x7", 192, {1, 7});
      b1 = v.conv(b1, "Conv2d_0c_7x1", 192, {7, 1});
      b1 = v.conv(b1, "Conv2d_1a_3x3", 192, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_2");
      b2 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2}, "valid");
    }
    x = b.concat({b0, b1, b2}, "concat");
  }
  x = v.mixed_7(x, "Mixed_7b");
  x = v.mixed_7(x, "Mixed_7c");

  std::string aux;
  if (o.aux_logits) {
    auto s = b.scope("AuxLogits");
    std::string a = b.avg_pool2d(mixed_6e, "AvgPool_1a_5x5", {5}, {3}, "valid");
    a = v.conv(a, "Conv2d_1b_1x1", 128, {1});
    const Dims& d = b.dims(a);
    const int kh = static_cast<int>(std::min<int64_t>(d[1], 5)), kw = static_cast<int>(std::min<int64_t>(d[2], 5));
    if (d[1] > 5 || d[2] > 5)
      throw ConfigError(str("inception_v3: input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                            " aux map; the 5x5 aux conv needs at most 5x5 (inputs up to about 350 pixels)"));
    a = b.conv2d(a, str("Conv2d_2a_", kh, "x", kw),
                 {.filters = 768, .kernel = {kh, kw}, .padding = "valid", .weight_init = truncated_normal(0.01)});
    aux = b.fully_connected(a, "Conv2d_2b_1x1", {.units = o.num_classes, .relu = false,
                                                 .weight_init = truncated_normal(0.001), .bias_init = zeros_init(),
                                                 .tf_conv = true});
  }
  std::string logits;
  {
    auto s = b.scope("Logits");
    const Dims& d = b.dims(x);
    if (d[1] > 8 || d[2] > 8)
      throw ConfigError(str("inception_v3: input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                            " final map; the 8x8 pool needs at most 8x8 (inputs up to 330 pixels)"));
    const int kh = static_cast<int>(d[1]), kw = static_cast<int>(d[2]);
    x = b.avg_pool2d(x, str("AvgPool_1a_", kh, "x", kw), {kh, kw}, {1}, "valid");
    x = b.dropout(x, "Dropout_1b", 0.8f);
    logits = b.fully_connected(x, "Conv2d_1c_1x1", {.units = o.num_classes, .relu = false,
                                                    .weight_init = variance_scaling(), .bias_init = zeros_init(),
                                                    .tf_conv = true});
  }
  return b.finish(logits, aux, 0.4f);
}

}  // namespace fastnn::zoo
