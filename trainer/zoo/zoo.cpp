#include "trainer/zoo/zoo.h"

#include <algorithm>

#include "core/check.h"
#include "trainer/config/config_fields.h"
#include "trainer/zoo/builders.h"

namespace fastnn::zoo {

const std::vector<ZooModel>& zoo_models() {
  static const std::vector<ZooModel> models = [] {
    std::vector<ZooModel> m = {
        {"lenet", "TF-slim LeNet: conv 32 5x5, pool, conv 64 5x5, pool, fc 1024, dropout, fc", 28, 4, 1, 10,
         build_lenet},
        {"mlp", "SINGA's MNIST MLP 784-2500-2000-1500-1000-500-10 with scaled tanh", 28, 1, 1, 10, build_mlp},
        {"cifarnet", "TF-slim CifarNet: 2 x (conv 64 5x5, pool, LRN), fc 384, fc 192", 32, 4, 3, 10, build_cifarnet},
        {"resnet_cifar_20", "He et al. CIFAR ResNet-20 (3 stages of 3 basic blocks, 16/32/64, option A)", 32, 1, 3,
         10, [](const ZooOptions& o) { return build_resnet_cifar(o, 20); }},
        {"resnet_cifar_56", "He et al. CIFAR ResNet-56 (3 stages of 9 basic blocks, 16/32/64, option A)", 32, 1, 3,
         10, [](const ZooOptions& o) { return build_resnet_cifar(o, 56); }},
        {"resnet_v1_18", "ResNet-18 (basic blocks) in TF-slim's resnet_v1 layout", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v1(o, 18); }},
        {"resnet_v1_50", "TF-slim resnet_v1_50", 224, 1, 3, 1000, [](const ZooOptions& o) { return build_resnet_v1(o, 50); }},
        {"resnet_v1_5_50", "ResNet-50 v1.5 (torchvision's and timm's resnet50, MLPerf's): the stride in the first unit", 224,
         1, 3, 1000, [](const ZooOptions& o) { return build_resnet_v1_5(o, 50); }},
        {"resnet_v1_101", "TF-slim resnet_v1_101", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v1(o, 101); }},
        {"resnet_v1_152", "TF-slim resnet_v1_152", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v1(o, 152); }},
        {"resnet_v1_200", "TF-slim resnet_v1_200", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v1(o, 200); }},
        {"resnet_v2_50", "TF-slim resnet_v2_50 (pre-activation)", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v2(o, 50); }},
        {"resnet_v2_101", "TF-slim resnet_v2_101 (pre-activation)", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v2(o, 101); }},
        {"resnet_v2_152", "TF-slim resnet_v2_152 (pre-activation)", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v2(o, 152); }},
        {"resnet_v2_200", "TF-slim resnet_v2_200 (pre-activation)", 224, 1, 3, 1000,
         [](const ZooOptions& o) { return build_resnet_v2(o, 200); }},
        {"mobilenet_v1", "TF-slim mobilenet_v1 (depth multiplier 1.0)", 224, 32, 3, 1000,
         [](const ZooOptions& o) { return build_mobilenet_v1(o, 1.0); }},
        {"mobilenet_v1_075", "TF-slim mobilenet_v1_075 (depth multiplier 0.75)", 224, 32, 3, 1000,
         [](const ZooOptions& o) { return build_mobilenet_v1(o, 0.75); }},
        {"mobilenet_v1_050", "TF-slim mobilenet_v1_050 (depth multiplier 0.5)", 224, 32, 3, 1000,
         [](const ZooOptions& o) { return build_mobilenet_v1(o, 0.5); }},
        {"mobilenet_v1_025", "TF-slim mobilenet_v1_025 (depth multiplier 0.25)", 224, 32, 3, 1000,
         [](const ZooOptions& o) { return build_mobilenet_v1(o, 0.25); }},
        {"mobilenet_v2", "TF-slim mobilenet_v2 (depth multiplier 1.0)", 224, 32, 3, 1000,
         [](const ZooOptions& o) { return build_mobilenet_v2(o, 1.0, false); }},
        {"mobilenet_v2_140", "TF-slim mobilenet_v2_140 (depth multiplier 1.4)", 224, 32, 3, 1000,
         [](const ZooOptions& o) { return build_mobilenet_v2(o, 1.4, false); }},
        {"mobilenet_v2_035", "TF-slim mobilenet_v2_035 (depth multiplier 0.35, finegrain classification mode)", 224,
         32, 3, 1000, [](const ZooOptions& o) { return build_mobilenet_v2(o, 0.35, true); }},
        {"vgg_a", "TF-slim vgg_a (VGG-11)", 224, 32, 3, 1000, [](const ZooOptions& o) { return build_vgg(o, 11); }},
        {"vgg_11", "TF-slim vgg_a (VGG-11; alias of vgg_a)", 224, 32, 3, 1000, [](const ZooOptions& o) { return build_vgg(o, 11); }},
        {"vgg_16", "TF-slim vgg_16", 224, 32, 3, 1000, [](const ZooOptions& o) { return build_vgg(o, 16); }},
        {"vgg_19", "TF-slim vgg_19", 224, 32, 3, 1000, [](const ZooOptions& o) { return build_vgg(o, 19); }},
        {"alexnet_v2", "TF-slim alexnet_v2 (5 convs, fc6 5x5, fc7, fc8; no LRN)", 224, 67, 3, 1000, build_alexnet_v2},
        {"overfeat", "TF-slim overfeat (the fast model: 5 convs, fc6 6x6, fc7, fc8)", 231, 71, 3, 1000,
         build_overfeat},
        {"inception_v1", "TF-slim inception_v1 (GoogLeNet with batch norm, no aux heads)", 224, 32, 3, 1000,
         build_inception_v1},
        {"inception_v2", "TF-slim inception_v2 (BN-Inception, separable 7x7 stem)", 224, 32, 3, 1000,
         build_inception_v2},
        {"inception_v3", "TF-slim inception_v3 with aux logits (loss weight 0.4)", 299, 75, 3, 1000,
         build_inception_v3},
        {"inception_v4", "TF-slim inception_v4 with aux logits (loss weight 0.4)", 299, 75, 3, 1000,
         build_inception_v4},
        {"inception_resnet_v2", "TF-slim inception_resnet_v2 with aux logits (FastNN's default model)", 299, 75, 3,
         1000, build_inception_resnet_v2},
        {"nasnet_cifar", "TF-slim NASNet-A CIFAR (18 cells @ 32 filters, drop-path 0.6) with aux logits", 32, 1, 3,
         10, [](const ZooOptions& o) { return build_nasnet(o, NasVariant::kCifar); }},
        {"nasnet_mobile", "TF-slim NASNet-A Mobile (12 cells @ 44 filters) with aux logits", 224, 3, 3, 1000,
         [](const ZooOptions& o) { return build_nasnet(o, NasVariant::kMobile); }},
        {"nasnet_large", "TF-slim NASNet-A Large (18 cells @ 168 filters, drop-path 0.7) with aux logits", 331, 3, 3,
         1000, [](const ZooOptions& o) { return build_nasnet(o, NasVariant::kLarge); }},
        {"pnasnet_mobile", "TF-slim PNASNet-5 Mobile (9 cells @ 54 filters) with aux logits", 224, 3, 3, 1000,
         [](const ZooOptions& o) { return build_pnasnet(o, NasVariant::kMobile); }},
        {"pnasnet_large", "TF-slim PNASNet-5 Large (12 cells @ 216 filters, drop-path 0.6) with aux logits", 331, 3,
         3, 1000, [](const ZooOptions& o) { return build_pnasnet(o, NasVariant::kLarge); }},
    };
    for (ZooModel& z : m) {
      const std::string& n = z.name;
      if (n == "lenet" || n == "mlp") z.preset = "lenet";
      else if (n == "cifarnet" || n.starts_with("resnet_cifar") || n == "nasnet_cifar") z.preset = "cifarnet";
      else if (n.starts_with("vgg") || n == "alexnet_v2" || n == "overfeat") z.preset = "vgg";
      // ResNet v1.5 trains as torchvision and MLPerf do: random resized crops, the inception preset's draw.
      else if (n.starts_with("resnet_v1_5_")) z.preset = "inception";
      else if (n.starts_with("resnet_v")) z.preset = "resnet";
      z.has_aux_logits = n == "inception_v3" || n == "inception_v4" || n == "inception_resnet_v2" ||
                         n.find("nasnet_") != std::string::npos;
      // The aux heads' 5x5 / stride 3 average pool and 5x5 (Inception) or 1x1-then-full (NASNet) convolutions
      // need a feature map of at least 5x5 where the head branches off (the builders' checks).
      if (z.has_aux_logits) z.aux_min_size = n.starts_with("inception") ? 107 : n == "nasnet_cifar" ? 9 : 67;
    }
    std::sort(m.begin(), m.end(), [](const ZooModel& a, const ZooModel& b) { return a.name < b.name; });
    return m;
  }();
  return models;
}

std::vector<std::string> zoo_model_names() {
  std::vector<std::string> names;
  for (const ZooModel& m : zoo_models()) names.push_back(m.name);
  return names;
}

const ZooModel& zoo_model(const std::string& name) {
  for (const ZooModel& m : zoo_models())
    if (m.name == name) return m;
  // Near names, compared without separators: "resnet50" is two letters from "resnet_v1_50".
  const auto bare = [](std::string s) {
    std::erase_if(s, [](char c) { return c == '_' || c == '-'; });
    return s;
  };
  std::vector<std::string> bare_names;
  for (const ZooModel& m : zoo_models()) bare_names.push_back(bare(m.name));
  // PyTorch's name of a zoo network that is the same network (tests/python/test_resnet_v1_5_torchvision.py)
  // comes first: a timm user's --model resnet50 is not TF-slim's resnet_v1_50, the nearest spelling.
  std::string near = name == "resnet50" ? "resnet_v1_5_50 (torchvision's and timm's resnet50), " : "";
  const std::vector<std::string> close = closest_names(bare_names, bare(name), 3);
  for (size_t i = 0; i < close.size(); ++i) {
    const auto at = std::find(bare_names.begin(), bare_names.end(), close[i]) - bare_names.begin();
    near += (i == 0 ? "" : i + 1 == close.size() ? " or " : ", ") + zoo_models()[static_cast<size_t>(at)].name;
  }
  if (!near.empty())
    throw ConfigError(str("unknown model_name '", name, "'; did you mean ", near, "? (`fastnn models` lists all ",
                          zoo_models().size(), ")"));
  std::string known;
  for (const ZooModel& m : zoo_models()) known += (known.empty() ? "" : ", ") + m.name;
  throw ConfigError(str("unknown model_name '", name, "'; the zoo has: ", known));
}

NetDef build_net(const std::string& name, const ZooOptions& options) {
  const ZooModel& m = zoo_model(name);
  ZooOptions o = options;
  if (o.num_classes == 0) o.num_classes = m.default_classes;
  if (o.height == 0) o.height = m.default_size;
  if (o.width == 0) o.width = m.default_size;
  if (o.channels == 0) o.channels = m.default_channels;
  if (o.num_classes < 1 || o.num_classes > (1 << 24))
    throw ConfigError(str(name, ": num_classes must be in [1, 2^24], got ", o.num_classes));
  if (o.channels < 1 || o.channels > 64) throw ConfigError(str(name, ": channels must be in [1, 64], got ", o.channels));
  for (int s : {o.height, o.width})
    if (s < m.min_size || s > 4096)
      throw ConfigError(str(name, ": input ", o.height, "x", o.width, " is outside [", m.min_size, ", 4096] per side"));
  NetDef net = m.build(o);
  // TF-slim's batch_norm_decay / batch_norm_epsilon over the model's own arg-scope values, every layer.
  for (LayerDef& l : *net.mutable_layers()) {
    if (!l.has_batch_norm()) continue;
    if (o.batch_norm_decay >= 0) l.mutable_batch_norm()->set_momentum(static_cast<float>(o.batch_norm_decay));
    if (o.batch_norm_epsilon > 0) l.mutable_batch_norm()->set_epsilon(static_cast<float>(o.batch_norm_epsilon));
  }
  return net;
}

}  // namespace fastnn::zoo
