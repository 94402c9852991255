// How a model's variables lie in TF-slim's checkpoints: the one place where fastnn's tensor layouts and
// TensorFlow's meet (docs/CHECKPOINTS.md, "TensorFlow checkpoints", has the table).
//
// The names are the same (the zoo builds TF-slim's scopes); the layouts differ for weights:
//   conv2d            fastnn [K, C, R, S] (out, in, height, width)   TF-slim [R, S, C, K] (HWIO)
//   depthwise_conv2d  fastnn [C*M, 1, R, S] (output c*M + m)          TF-slim [R, S, C, M]
//   fully_connected   fastnn [K, D], input [C, H, W] flattened in that order (D = C*H*W)
//                     TF-slim [H*W*C, K] (slim.fully_connected after slim.flatten of an NHWC map) or
//                     [H, W, C, K] (a VALID conv2d whose kernel is the whole map: the 1x1 logits
//                     convolutions of the Inception, ResNet and MobileNet nets, VGG's fc7/fc8; the
//                     layer's `tf_conv` says which); both hold element (h, w, c, k) at
//                     ((h*W + w)*C + c)*K + k, and either is read
//   everything else   the same shape and order (biases, batch-norm beta/gamma/moving statistics)
// Transposes are exact copies, so a round trip fastnn -> TF -> fastnn is bitwise.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "schemas/net.pb.h"

namespace fastnn::checkpoint {

enum class TfLayout { kSame, kConv, kDepthwise, kFullyConnected };

struct TfVariable {
  std::string name;            // fastnn's and TF-slim's
  std::vector<int64_t> shape;  // fastnn's
  TfLayout layout = TfLayout::kSame;
  int64_t in_channels = 0;     // depthwise: C; fully connected: the input's C (D when flat)
  int64_t in_height = 1, in_width = 1;  // fully connected: the input map's H, W
  bool tf_conv = false;        // fully connected: TF-slim's layer is a conv2d ([H, W, C, K])
  bool trainable = true;       // false for moving statistics

  // TensorFlow's shape for this variable in TF-slim's network: HWIO / [R, S, C, M] / [H*W*C, K] or
  // [H, W, C, K].
  std::vector<int64_t> tf_shape() const;
  // Whether `shape` is one TF-slim stores this variable as (fully connected: [H*W*C, K] or [H, W, C, K]).
  bool accepts_tf_shape(std::span<const int64_t> shape) const;
};

// Every variable of `net` (trainable parameters, then moving statistics, as Graph::variables() lists
// them) with its layout; from the net's plan, no tensor memory.
std::vector<TfVariable> tf_variables(const NetDef& net);

// Values in TF-slim's layout -> fastnn's, and back (`src` and `dst` hold the variable's element count).
void tf_to_fastnn(const TfVariable& v, const float* src, float* dst);
void fastnn_to_tf(const TfVariable& v, const float* src, float* dst);

}  // namespace fastnn::checkpoint
