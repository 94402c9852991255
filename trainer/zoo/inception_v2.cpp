// TF-slim's inception_v2 (nets/inception_v2.py, BN-Inception, Ioffe & Szegedy 2015) with
// inception_arg_scope: every conv2d is conv + batch norm (decay 0.9997, epsilon 0.001, no scale) +
// ReLU with variance-scaling weights, except where slim passes truncated normal 0.09 (the 1x1
// reductions before 3x3s) or 0.1 (Conv2d_2b_1x1, the pool projections); all SAME.
//   Conv2d_1a_7x7: slim.separable_conv2d(64, 7x7, depth_multiplier 8, stride 2, truncated normal 1.0).
//   The arg scope's normalizer is set for conv2d only, so this one has slim's separable_conv2d
//   defaults: biases, ReLU, no batch norm, no weight decay. Parameters: depthwise_weights
//   [7, 7, 3, 8], pointwise_weights [1, 1, 24, 64], biases [64].
//   MaxPool_2a_3x3 /2, Conv2d_2b_1x1 64, Conv2d_2c_3x3 192, MaxPool_3a_3x3 /2
//   Mixed_3b, 3c, 4a (reduction), 4b..4e, 5a (reduction), 5b, 5c: Branch_0 1x1 | Branch_1 1x1, 3x3 |
//   Branch_2 1x1, 3x3, 3x3 | Branch_3 avg pool 3x3 (max in 5c), 1x1
//   Logits: avg pool min(7, map) VALID, dropout keep 0.8, Conv2d_1c_1x1 with bias
// All SAME: the final map is ceil(input / 32), so inputs up to 224.
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

struct V2 {
  NetBuilder& b;
  std::string conv(const std::string& x, const std::string& name, int filters, int k, int stride = 1,
                   std::optional<InitSpec> init = {}) {
    return b.conv2d(x, name, {.filters = filters, .kernel = {k}, .stride = {stride}, .weight_init = init});
  }
  // Branch_0 b0 | Branch_1 b1a (0.09), b1b 3x3 | Branch_2 b2a (0.09), b2b, b2b | Branch_3 pool, b3 (0.1).
  std::string mixed(const std::string& x, const char* name, int b0, int b1a, int b1b, int b2a, int b2b, int b3,
                    bool max_pool = false) {
    auto s = b.scope(name);
    std::string r0, r1, r2, r3;
    {
      auto br = b.scope("Branch_0");
      r0 = conv(x, "Conv2d_0a_1x1", b0, 1);
    }
    {
      auto br = b.scope("Branch_1");
      r1 = conv(conv(x, "Conv2d_0a_1x1", b1a, 1, 1, truncated_normal(0.09)), "Conv2d_0b_3x3", b1b, 3);
    }
    {
      auto br = b.scope("Branch_2");
      r2 = conv(x, "Conv2d_0a_1x1", b2a, 1, 1, truncated_normal(0.09));
      r2 = conv(conv(r2, "Conv2d_0b_3x3", b2b, 3), "Conv2d_0c_3x3", b2b, 3);
    }
    {
      auto br = b.scope("Branch_3");
      const std::string p = max_pool ? b.max_pool2d(x, "MaxPool_0a_3x3", {3}, {1})
                                     : b.avg_pool2d(x, "AvgPool_0a_3x3", {3}, {1});
      r3 = conv(p, "Conv2d_0b_1x1", b3, 1, 1, truncated_normal(0.1));
    }
    return b.concat({r0, r1, r2, r3}, "concat");
  }
  // Branch_0 a (0.09), c 3x3/2 | Branch_1 d (0.09), e 3x3, e 3x3/2 | Branch_2 max pool 3x3/2.
  std::string reduction(const std::string& x, const char* name, int a, int c, int d, int e) {
    auto s = b.scope(name);
    std::string r0, r1, r2;
    {
      auto br = b.scope("Branch_0");
      r0 = conv(conv(x, "Conv2d_0a_1x1", a, 1, 1, truncated_normal(0.09)), "Conv2d_1a_3x3", c, 3, 2);
    }
    {
      auto br = b.scope("Branch_1");
      r1 = conv(x, "Conv2d_0a_1x1", d, 1, 1, truncated_normal(0.09));
      r1 = conv(conv(r1, "Conv2d_0b_3x3", e, 3), "Conv2d_1a_3x3", e, 3, 2);
    }
    {
      auto br = b.scope("Branch_2");
      r2 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2});
    }
    return b.concat({r0, r1, r2}, "concat");
  }
};

}  // namespace

NetDef build_inception_v2(const ZooOptions& o) {
  NetBuilder b("InceptionV2", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = variance_scaling();
  b.conv_defaults.bias_init = zeros_init();
  b.conv_defaults.batch_norm = batch_norm_params(0.9997f, 0.001f, false);
  b.conv_defaults.padding = "same";
  b.pool_padding = "same";
  V2 v{b};
  // depthwise multiplier min(int(64 / 3), 8) = 8.
  std::string x = b.separable_conv2d("data", "Conv2d_1a_7x7",
                                     {.filters = 64, .kernel = {7}, .stride = {2}, .multiplier = 8,
                                      .normalize = false, .weight_init = truncated_normal(1.0), .weight_decay = false});
  x = b.max_pool2d(x, "MaxPool_2a_3x3", {3}, {2});
  x = v.conv(x, "Conv2d_2b_1x1", 64, 1, 1, truncated_normal(0.1));
  x = v.conv(x, "Conv2d_2c_3x3", 192, 3);
  x = b.max_pool2d(x, "MaxPool_3a_3x3", {3}, {2});
  x = v.mixed(x, "Mixed_3b", 64, 64, 64, 64, 96, 32);
  x = v.mixed(x, "Mixed_3c", 64, 64, 96, 64, 96, 64);
  x = v.reduction(x, "Mixed_4a", 128, 160, 64, 96);
  x = v.mixed(x, "Mixed_4b", 224, 64, 96, 96, 128, 128);
  x = v.mixed(x, "Mixed_4c", 192, 96, 128, 96, 128, 128);
  x = v.mixed(x, "Mixed_4d", 160, 128, 160, 128, 160, 96);
  x = v.mixed(x, "Mixed_4e", 96, 128, 192, 160, 192, 96);
  x = v.reduction(x, "Mixed_5a", 128, 192, 192, 256);
  x = v.mixed(x, "Mixed_5b", 352, 192, 320, 160, 224, 128);
  x = v.mixed(x, "Mixed_5c", 352, 192, 320, 192, 224, 128, /*max_pool=*/true);
  std::string logits;
  {
    auto s = b.scope("Logits");
    const Dims& d = b.dims(x);
    if (d[1] > 7 || d[2] > 7)
      throw ConfigError(str("inception_v2: input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                            " final map; the 7x7 pool needs at most 7x7 (inputs up to 224 pixels)"));
    const int kh = static_cast<int>(d[1]), kw = static_cast<int>(d[2]);
    x = b.avg_pool2d(x, str("AvgPool_1a_", kh, "x", kw), {kh, kw}, {1}, "valid");
    x = b.dropout(x, "Dropout_1b", 0.8f);
    logits = b.fully_connected(x, "Conv2d_1c_1x1", {.units = o.num_classes, .relu = false,
                                                    .weight_init = variance_scaling(), .bias_init = zeros_init(),
                                                    .tf_conv = true});
  }
  return b.finish(logits);
}

}  // namespace fastnn::zoo
