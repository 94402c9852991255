// TF-slim's inception_v1 (nets/inception_v1.py, GoogLeNet) with inception_arg_scope: every conv is
// conv + batch norm (decay 0.9997, epsilon 0.001, no scale) + ReLU; inside the base the weights are
// truncated normal 0.01; convs and max pools are SAME with stride 1 unless said.
//   Conv2d_1a_7x7 64 /2, MaxPool_2a_3x3 /2, Conv2d_2b_1x1 64, Conv2d_2c_3x3 192, MaxPool_3a_3x3 /2,
//   Mixed_3b, Mixed_3c, MaxPool_4a_3x3 /2, Mixed_4b..4f, MaxPool_5a_2x2 /2, Mixed_5b, Mixed_5c
//   Mixed: Branch_0 1x1 | Branch_1 1x1, 3x3 | Branch_2 1x1, 3x3 (slim's 3x3 where the paper has 5x5,
//   as torchvision's googlenet) | Branch_3 max pool 3x3, 1x1; Mixed_5b names its Branch_2 3x3
//   "Conv2d_0a_3x3" (slim's spelling)
//   Logits: avg pool 7x7 VALID, dropout keep 0.8, Conv2d_0c_1x1 with bias (variance-scaling weights)
// Everything is SAME, so the final map is ceil(input / 32): inputs up to 224 (slim's fixed 7x7 pool
// then leaves 1x1); smaller inputs pool the whole map.
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

struct MixedV1 {
  const char* name;
  int b0, b1a, b1b, b2a, b2b, b3;
};

std::string mixed(NetBuilder& b, const std::string& x, const MixedV1& m) {
  auto s = b.scope(m.name);
  const auto conv = [&](const std::string& in, const std::string& name, int filters, int k) {
    return b.conv2d(in, name, {.filters = filters, .kernel = {k}});
  };
  std::string b0, b1, b2, b3;
  {
    auto br = b.scope("Branch_0");
    b0 = conv(x, "Conv2d_0a_1x1", m.b0, 1);
  }
  {
    auto br = b.scope("Branch_1");
    b1 = conv(conv(x, "Conv2d_0a_1x1", m.b1a, 1), "Conv2d_0b_3x3", m.b1b, 3);
  }
  {
    auto br = b.scope("Branch_2");
    const bool quirk = std::string(m.name) == "Mixed_5b";
    b2 = conv(conv(x, "Conv2d_0a_1x1", m.b2a, 1), quirk ? "Conv2d_0a_3x3" : "Conv2d_0b_3x3", m.b2b, 3);
  }
  {
    auto br = b.scope("Branch_3");
    b3 = conv(b.max_pool2d(x, "MaxPool_0a_3x3", {3}, {1}), "Conv2d_0b_1x1", m.b3, 1);
  }
  return b.concat({b0, b1, b2, b3}, "concat");
}

}  // namespace

NetDef build_inception_v1(const ZooOptions& o) {
  NetBuilder b("InceptionV1", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = truncated_normal(0.01);
  b.conv_defaults.batch_norm = batch_norm_params(0.9997f, 0.001f, false);
  b.conv_defaults.padding = "same";
  b.pool_padding = "same";
  std::string x = b.conv2d("data", "Conv2d_1a_7x7", {.filters = 64, .kernel = {7}, .stride = {2}});
  x = b.max_pool2d(x, "MaxPool_2a_3x3", {3}, {2});
  x = b.conv2d(x, "Conv2d_2b_1x1", {.filters = 64, .kernel = {1}});
  x = b.conv2d(x, "Conv2d_2c_3x3", {.filters = 192, .kernel = {3}});
  x = b.max_pool2d(x, "MaxPool_3a_3x3", {3}, {2});
  x = mixed(b, x, {"Mixed_3b", 64, 96, 128, 16, 32, 32});
  x = mixed(b, x, {"Mixed_3c", 128, 128, 192, 32, 96, 64});
  x = b.max_pool2d(x, "MaxPool_4a_3x3", {3}, {2});
  x = mixed(b, x, {"Mixed_4b", 192, 96, 208, 16, 48, 64});
  x = mixed(b, x, {"Mixed_4c", 160, 112, 224, 24, 64, 64});
  x = mixed(b, x, {"Mixed_4d", 128, 128, 256, 24, 64, 64});
  x = mixed(b, x, {"Mixed_4e", 112, 144, 288, 32, 64, 64});
  x = mixed(b, x, {"Mixed_4f", 256, 160, 320, 32, 128, 128});
  x = b.max_pool2d(x, "MaxPool_5a_2x2", {2}, {2});
  x = mixed(b, x, {"Mixed_5b", 256, 160, 320, 32, 128, 128});
  x = mixed(b, x, {"Mixed_5c", 384, 192, 384, 48, 128, 128});
  std::string logits;
  {
    auto s = b.scope("Logits");
    const Dims& d = b.dims(x);
    if (d[1] > 7 || d[2] > 7)
      throw ConfigError(str("inception_v1: input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                            " final map; the 7x7 pool needs at most 7x7 (inputs up to 224 pixels)"));
    x = b.avg_pool2d(x, "AvgPool_0a_7x7", {static_cast<int>(d[1]), static_cast<int>(d[2])}, {1}, "valid");
    x = b.dropout(x, "Dropout_0b", 0.8f);
    logits = b.fully_connected(x, "Conv2d_0c_1x1", {.units = o.num_classes, .relu = false,
                                                    .weight_init = variance_scaling(), .bias_init = zeros_init(),
                                                    .tf_conv = true});
  }
  return b.finish(logits);
}

}  // namespace fastnn::zoo
