// NetBuilder: writes NetDefs the way TF-slim code reads, for the zoo's builders (not a public API).
//
//   NetBuilder b("resnet_v1_50", {3, 224, 224});
//   b.conv_defaults.batch_norm = bn;                 // slim.arg_scope([slim.conv2d], normalizer_fn=...)
//   std::string x = b.conv2d("data", "conv1", {.filters = 64, .kernel = {7}, .stride = {2}, .pad = {3}});
//   { auto s = b.scope("block1"); ... }              // tf.variable_scope
//   return b.finish(logits);
//
// An empty net scope (NASNet: TF-slim builds it at the root) leaves names unprefixed.
// Each call appends layers named "<scope>/<name>" and returns the name of the layer holding the
// result (the "tensor"). conv2d follows slim.conv2d: with a normalizer, no bias, then
// "<conv>/BatchNorm"; with an activation, "<conv>/Relu" (or "<conv>/Relu6"). The builder tracks [C, H, W] of every result
// (the formulas of ops/window2d.h) for the builders that size kernels from feature maps, as slim's
// nets do; the NetPlan re-derives and checks every shape.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schemas/net.pb.h"

namespace fastnn::zoo {

// [C, H, W] for 4-D activations, [D] for flat ones.
using Dims = std::vector<int64_t>;

struct ConvDefaults {
  InitSpec weight_init;  // kind DEFAULT: the op's own default
  InitSpec bias_init;
  std::optional<BatchNormLayer> batch_norm;  // normalizer; none: the conv has a bias
  bool relu = true;
  bool relu6 = false;  // the activation is ReLU6 ("<conv>/Relu6", MobileNet) instead of ReLU
  std::string padding = "same";
  bool weight_decay = true, bias_weight_decay = false;
  // Whether conv, depthwise and separable layers have biases; default: when they have no normalizer.
  // NASNet's arg scope (biases_initializer None, batch norm as its own layer) sets it false.
  std::optional<bool> bias;
};

struct ConvArgs {
  int filters = 0;
  std::vector<int> kernel;
  std::vector<int> stride{1};
  std::optional<std::string> padding;  // default: ConvDefaults::padding
  std::vector<int> pad;                // explicit pads (then padding "valid")
  std::optional<bool> normalize;       // default: ConvDefaults::batch_norm present
  std::optional<bool> relu;            // default: ConvDefaults::relu
  std::optional<InitSpec> weight_init;
};

// slim.separable_conv2d with num_outputs None: a depthwise convolution, then (as conv2d) the
// normalizer and the activation of ConvDefaults; its filter is "<name>/depthwise_weights".
struct DepthwiseArgs {
  std::vector<int> kernel;
  std::vector<int> stride{1};
  int multiplier = 1;
  std::optional<std::string> padding;  // default: ConvDefaults::padding
  std::optional<bool> relu;            // default: ConvDefaults::relu
  bool weight_decay = false;           // TF-slim's MobileNets leave depthwise filters unregularised
};

// slim.separable_conv2d with num_outputs: a depthwise convolution ("<name>/depthwise", no bias, no
// activation) then a 1x1 convolution ("<name>", weights "pointwise_weights") with ConvDefaults'
// normalizer and activation, both with parameters in slim's one scope "<name>".
struct SeparableArgs {
  int filters = 0;
  std::vector<int> kernel;
  std::vector<int> stride{1};
  int multiplier = 1;
  std::optional<std::string> padding;  // default: ConvDefaults::padding
  std::optional<bool> normalize;       // default: ConvDefaults::batch_norm present
  std::optional<bool> relu;            // default: ConvDefaults::relu
  std::optional<InitSpec> weight_init; // both filters; default ConvDefaults::weight_init
  std::optional<bool> weight_decay;    // both filters; default ConvDefaults::weight_decay
};

struct FcDefaults {
  InitSpec weight_init, bias_init;
  bool relu = true;
  bool weight_decay = true, bias_weight_decay = false;
};

struct FcArgs {
  int units = 0;
  std::optional<bool> relu;
  std::optional<InitSpec> weight_init, bias_init;
  std::optional<bool> weight_decay;
  bool tf_conv = false;  // TF-slim's layer is a conv2d over the whole map (FullyConnectedLayer.tf_conv)
};

class NetBuilder {
 public:
  NetBuilder(std::string net_scope, const Dims& input);

  ConvDefaults conv_defaults;
  FcDefaults fc_defaults;
  std::string pool_padding = "valid";

  // RAII variable scope: names created while it lives are prefixed with it.
  class Scope {
   public:
    Scope(NetBuilder& b, const std::string& name);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    NetBuilder& b_;
  };
  [[nodiscard]] Scope scope(const std::string& name) { return Scope(*this, name); }
  std::string full_name(const std::string& local) const;

  std::string conv2d(const std::string& in, const std::string& name, const ConvArgs& args);
  std::string depthwise_conv2d(const std::string& in, const std::string& name, const DepthwiseArgs& args);
  std::string separable_conv2d(const std::string& in, const std::string& name, const SeparableArgs& args);
  std::string relu6(const std::string& in, const std::string& name);
  std::string batch_norm(const std::string& in, const std::string& name, const BatchNormLayer& bn);
  std::string relu(const std::string& in, const std::string& name);
  std::string tanh(const std::string& in, const std::string& name, float outer, float inner);
  // `pad`: explicit pads as ConvArgs::pad (PyTorch's symmetric padding; then padding "valid").
  std::string max_pool2d(const std::string& in, const std::string& name, std::vector<int> kernel,
                         std::vector<int> stride, std::optional<std::string> padding = {}, std::vector<int> pad = {});
  std::string avg_pool2d(const std::string& in, const std::string& name, std::vector<int> kernel,
                         std::vector<int> stride, std::optional<std::string> padding = {});
  std::string global_avg_pool(const std::string& in, const std::string& name);
  std::string fully_connected(const std::string& in, const std::string& name, const FcArgs& args);
  std::string dropout(const std::string& in, const std::string& name, float keep_prob);
  std::string add(const std::vector<std::string>& ins, const std::string& name);
  std::string concat(const std::vector<std::string>& ins, const std::string& name);
  std::string scale(const std::string& in, const std::string& name, float s);
  std::string channel_pad(const std::string& in, const std::string& name, int before, int after);
  std::string lrn(const std::string& in, const std::string& name, int depth_radius, float bias, float alpha,
                  float beta);
  std::string drop_path(const std::string& in, const std::string& name, const DropPathLayer& schedule);
  std::string spatial_shift(const std::string& in, const std::string& name, int dy, int dx);

  const Dims& dims(const std::string& tensor) const;
  NetDef finish(const std::string& logits, const std::string& aux_logits = "", float aux_loss_weight = 0.4f);

 private:
  LayerDef& add_layer(const std::string& name, std::initializer_list<std::string> inputs);
  LayerDef& add_layer(const std::string& name, const std::vector<std::string>& inputs);
  std::string pool(const std::string& in, const std::string& name, bool avg, std::vector<int> kernel,
                   std::vector<int> stride, std::optional<std::string> padding, const std::vector<int>& pad);
  std::string normalized_and_activated(const std::string& conv, const std::string& name, bool normalize, bool activate);

  NetDef net_;
  std::vector<std::string> scopes_;
  std::map<std::string, Dims> dims_;
};

// InitSpec shorthands.
InitSpec truncated_normal(double stddev);
InitSpec uniform_init(double low, double high);
InitSpec constant_init(double value);
InitSpec zeros_init();
InitSpec glorot_uniform();
InitSpec he_normal();
InitSpec variance_scaling();  // TF-slim's: factor 2, FAN_IN, truncated normal
BatchNormLayer batch_norm_params(float momentum, float epsilon, bool scale);

}  // namespace fastnn::zoo
