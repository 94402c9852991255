// TF-slim's inception_v4 (nets/inception_v4.py, Szegedy et al. 2016) with inception_arg_scope: every
// conv is conv + batch norm (decay 0.9997, epsilon 0.001, no scale) + ReLU with variance-scaling
// weights; SAME unless said (the stem and the reductions' strided layers are VALID).
//   stem: Conv2d_1a_3x3 32 /2 V, Conv2d_2a_3x3 32 V, Conv2d_2b_3x3 64, Mixed_3a (max pool /2 V |
//   conv 96 /2 V), Mixed_4a (1x1 64, 3x3 96 V | 1x1 64, 1x7 64, 7x1 64, 3x3 96 V), Mixed_5a (conv 192
//   /2 V | max pool /2 V)
//   4 x Inception-A (Mixed_5b..e), Reduction-A (Mixed_6a), 7 x Inception-B (Mixed_6b..h),
//   Reduction-B (Mixed_7a), 3 x Inception-C (Mixed_7b..d)
//   AuxLogits (on Mixed_6h): avg pool 5x5/3 V, Conv2d_1b_1x1 128, Conv2d_2a 768 with the map as kernel
//   (V), Aux_logits (fully connected, Glorot uniform, bias)
//   Logits: AvgPool_1a over the whole map, Dropout_1b keep 0.8, Logits (fully connected, Glorot
//   uniform, bias)
// The pools that end the heads follow the map, so there is no upper size; the aux head needs Mixed_6h
// of at least 5x5: inputs of at least 107 with it, 75 without.
#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

struct V4 {
  NetBuilder& b;
  std::string conv(const std::string& x, const std::string& name, int filters, std::vector<int> kernel,
                   int stride = 1, std::optional<std::string> padding = {}) {
    return b.conv2d(x, name, {.filters = filters, .kernel = std::move(kernel), .stride = {stride}, .padding = padding});
  }
  std::string avg_branch(const std::string& x, int filters) {
    auto s = b.scope("Branch_3");
    return conv(b.avg_pool2d(x, "AvgPool_0a_3x3", {3}, {1}), "Conv2d_0b_1x1", filters, {1});
  }
  std::string inception_a(const std::string& x, const std::string& name) {
    auto s = b.scope(name);
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_0a_1x1", 96, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(conv(x, "Conv2d_0a_1x1", 64, {1}), "Conv2d_0b_3x3", 96, {3});
    }
    {
      auto br = b.scope("Branch_2");
      b2 = conv(conv(conv(x, "Conv2d_0a_1x1", 64, {1}), "Conv2d_0b_3x3", 96, {3}), "Conv2d_0c_3x3", 96, {3});
    }
    return b.concat({b0, b1, b2, avg_branch(x, 96)}, "concat");
  }
  std::string reduction_a(const std::string& x) {
    auto s = b.scope("Mixed_6a");
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_1a_3x3", 384, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(conv(x, "Conv2d_0a_1x1", 192, {1}), "Conv2d_0b_3x3", 224, {3});
      b1 = conv(b1, "Conv2d_1a_3x3", 256, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_2");
      b2 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2}, "valid");
    }
    return b.concat({b0, b1, b2}, "concat");
  }
  std::string inception_b(const std::string& x, const std::string& name) {
    auto s = b.scope(name);
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_0a_1x1", 384, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(x, "Conv2d_0a_1x1", 192, {1});
      b1 = conv(b1, "Conv2d_0b_1x7", 224, {1, 7});
      b1 = conv(b1, "Conv2d_0c_7x1", 256, {7, 1});
    }
    {
      auto br = b.scope("Branch_2");
      b2 = conv(x, "Conv2d_0a_1x1", 192, {1});
      b2 = conv(b2, "Conv2d_0b_7x1", 192, {7, 1});
      b2 = conv(b2, "Conv2d_0c_1x7", 224, {1, 7});
      b2 = conv(b2, "Conv2d_0d_7x1", 224, {7, 1});
      b2 = conv(b2, "Conv2d_0e_1x7", 256, {1, 7});
    }
    return b.concat({b0, b1, b2, avg_branch(x, 128)}, "concat");
  }
  std::string reduction_b(const std::string& x) {
    auto s = b.scope("Mixed_7a");
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(conv(x, "Conv2d_0a_1x1", 192, {1}), "Conv2d_1a_3x3", 192, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(x, "Conv2d_0a_1x1", 256, {1});
      b1 = conv(b1, "Conv2d_0b_1x7", 256, {1, 7});
      b1 = conv(b1, "Conv2d_0c_7x1", 320, {7, 1});
      b1 = conv(b1, "Conv2d_1a_3x3", 320, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_2");
      b2 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2}, "valid");
    }
    return b.concat({b0, b1, b2}, "concat");
  }
  std::string inception_c(const std::string& x, const std::string& name) {
    auto s = b.scope(name);
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_0a_1x1", 256, {1});
    }
    {
      auto br = b.scope("Branch_1");
      const std::string t = conv(x, "Conv2d_0a_1x1", 384, {1});
      b1 = b.concat({conv(t, "Conv2d_0b_1x3", 256, {1, 3}), conv(t, "Conv2d_0c_3x1", 256, {3, 1})}, "concat");
    }
    {
      auto br = b.scope("Branch_2");
      std::string t = conv(x, "Conv2d_0a_1x1", 384, {1});
      t = conv(t, "Conv2d_0b_3x1", 448, {3, 1});
      t = conv(t, "Conv2d_0c_1x3", 512, {1, 3});
      b2 = b.concat({conv(t, "Conv2d_0d_1x3", 256, {1, 3}), conv(t, "Conv2d_0e_3x1", 256, {3, 1})}, "concat");
    }
    return b.concat({b0, b1, b2, avg_branch(x, 256)}, "concat");
  }
};

}  // namespace

NetDef build_inception_v4(const ZooOptions& o) {
  if (o.aux_logits && (o.height < 107 || o.width < 107))
    throw ConfigError(str("inception_v4: the aux logits head needs inputs of at least 107x107 (got ", o.height, "x",
                          o.width, "); build without it (aux_logits = false) for inputs down to 75x75"));
  NetBuilder b("InceptionV4", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = variance_scaling();
  b.conv_defaults.batch_norm = batch_norm_params(0.9997f, 0.001f, false);
  b.conv_defaults.padding = "same";
  b.pool_padding = "same";
  b.fc_defaults.weight_init = glorot_uniform();
  b.fc_defaults.bias_init = zeros_init();
  V4 v{b};
  std::string x = v.conv("data", "Conv2d_1a_3x3", 32, {3}, 2, "valid");
  x = v.conv(x, "Conv2d_2a_3x3", 32, {3}, 1, "valid");
  x = v.conv(x, "Conv2d_2b_3x3", 64, {3});
  {
    auto s = b.scope("Mixed_3a");
    std::string b0, b1;
    {
      auto br = b.scope("Branch_0");
      b0 = b.max_pool2d(x, "MaxPool_0a_3x3", {3}, {2}, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = v.conv(x, "Conv2d_0a_3x3", 96, {3}, 2, "valid");
    }
    x = b.concat({b0, b1}, "concat");
  }
  {
    auto s = b.scope("Mixed_4a");
    std::string b0, b1;
    {
      auto br = b.scope("Branch_0");
      b0 = v.conv(v.conv(x, "Conv2d_0a_1x1", 64, {1}), "Conv2d_1a_3x3", 96, {3}, 1, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = v.conv(x, "Conv2d_0a_1x1", 64, {1});
      b1 = v.conv(b1, "Conv2d_0b_1x7", 64, {1, 7});
      b1 = v.conv(b1, "Conv2d_0c_7x1", 64, {7, 1});
      b1 = v.conv(b1, "Conv2d_1a_3x3", 96, {3}, 1, "valid");
    }
    x = b.concat({b0, b1}, "concat");
  }
  {
    auto s = b.scope("Mixed_5a");
    std::string b0, b1;
    {
      auto br = b.scope("Branch_0");
      b0 = v.conv(x, "Conv2d_1a_3x3", 192, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2}, "valid");
    }
    x = b.concat({b0, b1}, "concat");
  }
  for (char c = 'b'; c <= 'e'; ++c) x = v.inception_a(x, str("Mixed_5", c));
  x = v.reduction_a(x);
  for (char c = 'b'; c <= 'h'; ++c) x = v.inception_b(x, str("Mixed_6", c));
  const std::string mixed_6h = x;
  x = v.reduction_b(x);
  for (char c = 'b'; c <= 'd'; ++c) x = v.inception_c(x, str("Mixed_7", c));

  std::string aux;
  if (o.aux_logits) {
    auto s = b.scope("AuxLogits");
    std::string a = b.avg_pool2d(mixed_6h, "AvgPool_1a_5x5", {5}, {3}, "valid");
    a = v.conv(a, "Conv2d_1b_1x1", 128, {1});
    const Dims& d = b.dims(a);
    a = v.conv(a, "Conv2d_2a", 768, {static_cast<int>(d[1]), static_cast<int>(d[2])}, 1, "valid");
    aux = b.fully_connected(a, "Aux_logits", {.units = o.num_classes, .relu = false});
  }
  std::string logits;
  {
    auto s = b.scope("Logits");
    const Dims& d = b.dims(x);
    x = b.avg_pool2d(x, "AvgPool_1a", {static_cast<int>(d[1]), static_cast<int>(d[2])}, {1}, "valid");
    x = b.dropout(x, "Dropout_1b", 0.8f);
    logits = b.fully_connected(x, "Logits", {.units = o.num_classes, .relu = false});
  }
  return b.finish(logits, aux, 0.4f);
}

}  // namespace fastnn::zoo
