// TF-slim's inception_resnet_v2 (nets/inception_resnet_v2.py) with inception_resnet_v2_arg_scope:
// conv + batch norm (decay 0.9997, epsilon 0.001, no scale) + ReLU, Glorot-uniform weights (slim's
// default), weight decay on weights and biases; align_feature_maps false (VALID stem), output stride 16.
//   stem, Mixed_5b, 10 x block35 (scale 0.17), Mixed_6a, 20 x block17 (scale 0.10), Mixed_7a,
//   9 x block8 (scale 0.20), Block8 (scale 1, no ReLU), Conv2d_7b_1x1 (1536)
//   each block: branches concatenated, a 1x1 "up" conv with a bias (no BN, no ReLU) back to the input
//   depth, net + scale * up, ReLU. Blocks are named as slim.repeat names them (Repeat/block35_1, ...).
//   AuxLogits (on the block17 output): avg pool 5x5/3 VALID, conv 1x1 128, conv 768 with the whole
//   map as kernel (VALID), flatten, fully connected num_classes.
//   Logits: avg pool over the whole map, flatten, dropout keep 0.8, fully connected num_classes.
// Minimum input 107x107 with the aux head, 75x75 without. With 1000 classes and no aux head this is
// Keras' InceptionResNetV2: 55,813,192 trainable parameters + 60,544 moving statistics.
#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

struct IRv2 {
  NetBuilder& b;
  std::string conv(const std::string& x, const std::string& name, int filters, std::vector<int> kernel,
                   int stride = 1, std::optional<std::string> padding = {}) {
    return b.conv2d(x, name, {.filters = filters, .kernel = std::move(kernel), .stride = {stride}, .padding = padding});
  }

  // net + scale * up(concat(branches)), then ReLU when `relu`.
  std::string residual(const std::string& x, const std::vector<std::string>& branches, float scale, bool relu) {
    const std::string mixed = b.concat(branches, "concat");
    const int depth = static_cast<int>(b.dims(x)[0]);
    std::string up = b.conv2d(mixed, "Conv2d_1x1", {.filters = depth, .kernel = {1}, .normalize = false, .relu = false});
    if (scale != 1.0f) up = b.scale(up, "mul", scale);
    const std::string sum = b.add({x, up}, "add");
    return relu ? b.relu(sum, "Relu") : sum;
  }

  std::string block35(const std::string& x, const std::string& name, float scale) {
    auto s = b.scope(name);
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_1x1", 32, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(conv(x, "Conv2d_0a_1x1", 32, {1}), "Conv2d_0b_3x3", 32, {3});
    }
    {
      auto br = b.scope("Branch_2");
      b2 = conv(x, "Conv2d_0a_1x1", 32, {1});
      b2 = conv(b2, "Conv2d_0b_3x3", 48, {3});
      b2 = conv(b2, "Conv2d_0c_3x3", 64, {3});
    }
    return residual(x, {b0, b1, b2}, scale, true);
  }

  std::string block17(const std::string& x, const std::string& name, float scale) {
    auto s = b.scope(name);
    std::string b0, b1;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_1x1", 192, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(x, "Conv2d_0a_1x1", 128, {1});
      b1 = conv(b1, "Conv2d_0b_1x7", 160, {1, 7});
      b1 = conv(b1, "Conv2d_0c_7x1", 192, {7, 1});
    }
    return residual(x, {b0, b1}, scale, true);
  }

  std::string block8(const std::string& x, const std::string& name, float scale, bool relu) {
    auto s = b.scope(name);
    std::string b0, b1;
    {
      auto br = b.scope("Branch_0");
      b0 = conv(x, "Conv2d_1x1", 192, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = conv(x, "Conv2d_0a_1x1", 192, {1});
      b1 = conv(b1, "Conv2d_0b_1x3", 224, {1, 3});
      b1 = conv(b1, "Conv2d_0c_3x1", 256, {3, 1});
    }
    return residual(x, {b0, b1}, scale, relu);
  }
};

}  // namespace

NetDef build_inception_resnet_v2(const ZooOptions& o) {
  if (o.aux_logits && (o.height < 107 || o.width < 107))
    throw ConfigError(str("inception_resnet_v2: the aux logits head needs inputs of at least 107x107 (got ", o.height,
                          "x", o.width, "); build without it (aux_logits = false) for inputs down to 75x75"));
  NetBuilder b("InceptionResnetV2", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = glorot_uniform();
  b.conv_defaults.bias_init = zeros_init();
  b.conv_defaults.batch_norm = batch_norm_params(0.9997f, 0.001f, false);
  b.conv_defaults.bias_weight_decay = true;
  b.conv_defaults.padding = "same";
  b.fc_defaults.weight_init = glorot_uniform();
  b.fc_defaults.bias_init = zeros_init();
  b.fc_defaults.bias_weight_decay = true;
  b.fc_defaults.relu = false;
  b.pool_padding = "valid";
  IRv2 v{b};

  std::string x = v.conv("data", "Conv2d_1a_3x3", 32, {3}, 2, "valid");
  x = v.conv(x, "Conv2d_2a_3x3", 32, {3}, 1, "valid");
  x = v.conv(x, "Conv2d_2b_3x3", 64, {3});
  x = b.max_pool2d(x, "MaxPool_3a_3x3", {3}, {2});
  x = v.conv(x, "Conv2d_3b_1x1", 80, {1}, 1, "valid");
  x = v.conv(x, "Conv2d_4a_3x3", 192, {3}, 1, "valid");
  x = b.max_pool2d(x, "MaxPool_5a_3x3", {3}, {2});
  {
    auto s = b.scope("Mixed_5b");
    std::string b0, b1, b2, b3;
    {
      auto br = b.scope("Branch_0");
      b0 = v.conv(x, "Conv2d_1x1", 96, {1});
    }
    {
      auto br = b.scope("Branch_1");
      b1 = v.conv(v.conv(x, "Conv2d_0a_1x1", 48, {1}), "Conv2d_0b_5x5", 64, {5});
    }
    {
      auto br = b.scope("Branch_2");
      b2 = v.conv(x, "Conv2d_0a_1x1", 64, {1});
      b2 = v.conv(b2, "Conv2d_0b_3x3", 96, {3});
      b2 = v.conv(b2, "Conv2d_0c_3x3", 96, {3});
    }
    {
      auto br = b.scope("Branch_3");
      b3 = v.conv(b.avg_pool2d(x, "AvgPool_0a_3x3", {3}, {1}, "same"), "Conv2d_0b_1x1", 64, {1});
    }
    x = b.concat({b0, b1, b2, b3}, "concat");
  }
  {
    auto s = b.scope("Repeat");
    for (int i = 1; i <= 10; ++i) x = v.block35(x, str("block35_", i), 0.17f);
  }
  {
    auto s = b.scope("Mixed_6a");
    std::string b0, b1, b2;
    {
      auto br = b.scope("Branch_0");
      b0 = v.conv(x, "Conv2d_1a_3x3", 384, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = v.conv(x, "Conv2d_0a_1x1", 256, {1});
      b1 = v.conv(b1, "Conv2d_0b_3x3", 256, {3});
      b1 = v.conv(b1, "Conv2d_1a_3x3", 384, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_2");
      b2 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2});
    }
    x = b.concat({b0, b1, b2}, "concat");
  }
  {
    auto s = b.scope("Repeat_1");
    for (int i = 1; i <= 20; ++i) x = v.block17(x, str("block17_", i), 0.10f);
  }
  std::string aux;
  if (o.aux_logits) {
    auto s = b.scope("AuxLogits");
    std::string a = b.avg_pool2d(x, "Conv2d_1a_3x3", {5}, {3});
    a = v.conv(a, "Conv2d_1b_1x1", 128, {1});
    const Dims& d = b.dims(a);
    a = v.conv(a, "Conv2d_2a_5x5", 768, {static_cast<int>(d[1]), static_cast<int>(d[2])}, 1, "valid");
    aux = b.fully_connected(a, "Logits", {.units = o.num_classes});
  }
  {
    auto s = b.scope("Mixed_7a");
    std::string b0, b1, b2, b3;
    {
      auto br = b.scope("Branch_0");
      b0 = v.conv(v.conv(x, "Conv2d_0a_1x1", 256, {1}), "Conv2d_1a_3x3", 384, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_1");
      b1 = v.conv(v.conv(x, "Conv2d_0a_1x1", 256, {1}), "Conv2d_1a_3x3", 288, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_2");
      b2 = v.conv(x, "Conv2d_0a_1x1", 256, {1});
      b2 = v.conv(b2, "Conv2d_0b_3x3", 288, {3});
      b2 = v.conv(b2, "Conv2d_1a_3x3", 320, {3}, 2, "valid");
    }
    {
      auto br = b.scope("Branch_3");
      b3 = b.max_pool2d(x, "MaxPool_1a_3x3", {3}, {2});
    }
    x = b.concat({b0, b1, b2, b3}, "concat");
  }
  {
    auto s = b.scope("Repeat_2");
    for (int i = 1; i <= 9; ++i) x = v.block8(x, str("block8_", i), 0.20f, true);
  }
  x = v.block8(x, "Block8", 1.0f, false);
  x = v.conv(x, "Conv2d_7b_1x1", 1536, {1});
  std::string logits;
  {
    auto s = b.scope("Logits");
    const Dims& d = b.dims(x);
    x = b.avg_pool2d(x, "AvgPool_1a_8x8", {static_cast<int>(d[1]), static_cast<int>(d[2])}, {1});
    x = b.dropout(x, "Dropout", 0.8f);
    logits = b.fully_connected(x, "Logits", {.units = o.num_classes});
  }
  return b.finish(logits, aux, 0.4f);
}

}  // namespace fastnn::zoo
