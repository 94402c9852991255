// TF-slim's alexnet_v2 (nets/alexnet.py, "One weird trick", cuda-convnet2's 1-GPU layout without LRN)
// with alexnet_v2_arg_scope: convs with biases (constant 0.1) and ReLU, Glorot-uniform weights
// (slim's default), SAME convs, VALID 3x3/2 max pools, L2 decay on weights only.
//   conv1 64 11x11/4 VALID, pool1, conv2 192 5x5, pool2, conv3 384, conv4 384, conv5 256 (3x3), pool5
//   fc6 4096 5x5 VALID, dropout6 (keep 0.5), fc7 4096, dropout7, fc8 num_classes (zero biases, linear);
//   fc6-fc8 weights truncated normal 0.005, fc6 / fc7 biases 0.1.
// fc7 and fc8 are slim 1x1 convs on a 1x1 map, here fully connected layers (same parameters). As for
// VGG, fc6's kernel shrinks to the pool5 map below 224: inputs from 67 to 226 pixels.
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_alexnet_v2(const ZooOptions& o) {
  NetBuilder b("alexnet_v2", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = glorot_uniform();
  b.conv_defaults.bias_init = constant_init(0.1);
  b.pool_padding = "valid";
  std::string x = b.conv2d("data", "conv1", {.filters = 64, .kernel = {11}, .stride = {4}, .padding = "valid"});
  x = b.max_pool2d(x, "pool1", {3}, {2});
  x = b.conv2d(x, "conv2", {.filters = 192, .kernel = {5}});
  x = b.max_pool2d(x, "pool2", {3}, {2});
  x = b.conv2d(x, "conv3", {.filters = 384, .kernel = {3}});
  x = b.conv2d(x, "conv4", {.filters = 384, .kernel = {3}});
  x = b.conv2d(x, "conv5", {.filters = 256, .kernel = {3}});
  x = b.max_pool2d(x, "pool5", {3}, {2});
  const Dims& d = b.dims(x);
  if (d[1] > 5 || d[2] > 5)
    throw ConfigError(str("alexnet_v2: input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                          " pool5 map; fc6 (5x5) needs at most 5x5, i.e. inputs up to 226 pixels"));
  const int kh = static_cast<int>(d[1]), kw = static_cast<int>(d[2]);
  x = b.conv2d(x, "fc6", {.filters = 4096, .kernel = {kh, kw}, .padding = "valid",
                          .weight_init = truncated_normal(0.005)});
  x = b.dropout(x, "dropout6", 0.5f);
  b.fc_defaults.bias_init = constant_init(0.1);
  x = b.fully_connected(x, "fc7", {.units = 4096, .weight_init = truncated_normal(0.005), .tf_conv = true});
  x = b.dropout(x, "dropout7", 0.5f);
  const std::string logits = b.fully_connected(
      x, "fc8", {.units = o.num_classes, .relu = false, .weight_init = truncated_normal(0.005), .bias_init = zeros_init(),
                .tf_conv = true});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
