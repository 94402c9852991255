// TF-slim's overfeat (nets/overfeat.py, Sermanet et al. 2014, the fast model) with overfeat_arg_scope:
// convs with zero biases and ReLU, Glorot-uniform weights (slim's default), SAME convs unless said,
// VALID 2x2/2 max pools, L2 decay on weights only.
//   conv1 64 11x11/4 VALID, pool1, conv2 256 5x5 VALID, pool2, conv3 512, conv4 1024, conv5 1024
//   (3x3), pool5; fc6 3072 6x6 VALID, dropout6 (keep 0.5), fc7 4096, dropout7, fc8 num_classes
//   (linear, zero biases); fc6-fc8 weights truncated normal 0.005, fc6 / fc7 biases 0.1.
// fc7 and fc8 are fully connected layers here (slim's 1x1 convs on a 1x1 map). fc6's kernel shrinks to
// the pool5 map below the default 231: inputs from 71 to 262 pixels.
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_overfeat(const ZooOptions& o) {
  NetBuilder b("overfeat", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = glorot_uniform();
  b.conv_defaults.bias_init = zeros_init();
  b.pool_padding = "valid";
  std::string x = b.conv2d("data", "conv1", {.filters = 64, .kernel = {11}, .stride = {4}, .padding = "valid"});
  x = b.max_pool2d(x, "pool1", {2}, {2});
  x = b.conv2d(x, "conv2", {.filters = 256, .kernel = {5}, .padding = "valid"});
  x = b.max_pool2d(x, "pool2", {2}, {2});
  x = b.conv2d(x, "conv3", {.filters = 512, .kernel = {3}});
  x = b.conv2d(x, "conv4", {.filters = 1024, .kernel = {3}});
  x = b.conv2d(x, "conv5", {.filters = 1024, .kernel = {3}});
  x = b.max_pool2d(x, "pool5", {2}, {2});
  const Dims& d = b.dims(x);
  if (d[1] > 6 || d[2] > 6)
    throw ConfigError(str("overfeat: input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                          " pool5 map; fc6 (6x6) needs at most 6x6, i.e. inputs up to 262 pixels"));
  const int kh = static_cast<int>(d[1]), kw = static_cast<int>(d[2]);
  b.conv_defaults.bias_init = constant_init(0.1);
  x = b.conv2d(x, "fc6", {.filters = 3072, .kernel = {kh, kw}, .padding = "valid",
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
