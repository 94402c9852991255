// The model zoo: builders that emit a NetDef (schemas/net.proto) for FastNN's model names.
//
//   NetDef net = zoo::build_net("resnet_v1_50", {.num_classes = 1001});
//   graph::Graph g(net, {.batch_size = 32});
//
// Every model follows its TF-slim definition (layer structure, scope and parameter names, padding,
// batch-norm decay/epsilon/scale, initialisers), except where docs/MODELS.md says otherwise: mlp is
// SINGA's MNIST MLP, resnet_cifar_* are He et al.'s CIFAR ResNets (option-A shortcuts), resnet_v1_18
// uses basic blocks in the resnet_v1 layout. Sizes and parameter counts: docs/MODELS.md.
//
// Input size: each model has a default (its training size) and a minimum (the smallest input whose
// feature maps stay valid: inception_v3 and inception_resnet_v2 need 107 x 107 with aux logits, 75
// without; the ImageNet NASNets 67 with aux logits, 3 without). Models whose kernels follow the feature map (VGG's fc6, the Inception heads) shrink them
// for small inputs, as TF-slim does, so parameter counts are the published ones only at the default size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemas/net.pb.h"

namespace fastnn::zoo {

struct ZooOptions {
  int num_classes = 0;         // 0: the model's default (10 for the MNIST / CIFAR nets, 1000 otherwise)
  int height = 0, width = 0;   // 0: the model's default size
  int channels = 0;            // 0: the model's default (1 for lenet and mlp, 3 otherwise)
  bool aux_logits = true;      // inception_v3, inception_resnet_v2: build the auxiliary head
  // NASNet / PNASNet drop-path (TF-slim's hparams): < 0 keeps the model's own value (nasnet_cifar 0.6,
  // nasnet_large 0.7, pnasnet_large 0.6, the mobile nets 1.0 = none; total_training_steps 937,500 for
  // cifar, 250,000 otherwise); total_training_steps 0 leaves out the ramp over steps.
  double drop_path_keep_prob = -1;
  int64_t total_training_steps = -1;
  // Every batch norm layer's decay (the old moving average's weight) and epsilon instead of the model's
  // arg-scope values (TF-slim's batch_norm_decay / batch_norm_epsilon); < 0 (epsilon: <= 0) keeps them.
  double batch_norm_decay = -1;
  double batch_norm_epsilon = -1;
};

struct ZooModel {
  std::string name;     // "resnet_v1_50"
  std::string summary;  // one line
  int default_size = 0;
  int min_size = 0;      // smallest height/width accepted (built without the aux head where there is one)
  int default_channels = 3;
  int default_classes = 1000;
  NetDef (*build)(const ZooOptions& resolved) = nullptr;  // options with every 0 resolved
  // The preprocessing preset (pipeline/preset.h) a run uses when preprocessing_name is not set:
  // TF-slim's preprocessing_factory (vgg for alexnet_v2 / overfeat / vgg_*, inception for the
  // Inception, MobileNet and NASNet families) with FastNN's own lenet, cifarnet and resnet presets.
  std::string preset = "inception";
  bool has_aux_logits = false;  // builds an auxiliary head unless ZooOptions::aux_logits is false
  int aux_min_size = 0;         // smallest height/width with the aux head (0: the model has none)
};

// Every model, sorted by name.
const std::vector<ZooModel>& zoo_models();
std::vector<std::string> zoo_model_names();
// ConfigError listing the known names when `name` is not one.
const ZooModel& zoo_model(const std::string& name);

// ConfigError for an unknown name, a size below the model's minimum or above 4096, num_classes < 1.
NetDef build_net(const std::string& name, const ZooOptions& options = {});

}  // namespace fastnn::zoo
