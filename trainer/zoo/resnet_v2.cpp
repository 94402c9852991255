// TF-slim's resnet_v2 (nets/resnet_v2.py, pre-activation, He et al. 2016) with resnet_arg_scope:
//   root: conv1 7x7/2 (conv2d_same) with a bias and no BN or ReLU, pool1 3x3/2 SAME
//   bottleneck_v2: preact = BN + ReLU of the input; shortcut: identity (subsampled) when the depth is
//   unchanged, else a 1x1 conv of preact with a bias; residual: conv1 1x1 and conv2 3x3 (stride,
//   conv2d_same) with BN + ReLU, conv3 1x1 with a bias and nothing after; output shortcut + residual
//   after the blocks: postnorm BN + ReLU, global average pool, logits
// Blocks, units and strides as resnet_v1 (the last unit of blocks 1-3 strides): 50 / 101 / 152 / 200. Keras' ResNet50V2 is the same
// net: 25,568,360 trainable parameters and 45,440 moving statistics with 1000 classes.
#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

std::string bottleneck_v2(NetBuilder& b, const std::string& x, int depth, int bottleneck, int stride) {
  auto s = b.scope("bottleneck_v2");
  const int64_t depth_in = b.dims(x)[0];
  std::string preact = b.batch_norm(x, "preact", *b.conv_defaults.batch_norm);
  {
    auto p = b.scope("preact");
    preact = b.relu(preact, "Relu");
  }
  std::string shortcut;
  if (depth == depth_in) {
    shortcut = stride == 1 ? x : b.max_pool2d(x, "shortcut", {1}, {stride}, "valid");
  } else {
    shortcut = b.conv2d(preact, "shortcut",
                        {.filters = depth, .kernel = {1}, .stride = {stride}, .normalize = false, .relu = false});
  }
  std::string r = b.conv2d(preact, "conv1", {.filters = bottleneck, .kernel = {1}});
  r = b.conv2d(r, "conv2", {.filters = bottleneck, .kernel = {3}, .stride = {stride}, .pad = {1}});
  r = b.conv2d(r, "conv3", {.filters = depth, .kernel = {1}, .normalize = false, .relu = false});
  return b.add({shortcut, r}, "add");
}

}  // namespace

NetDef build_resnet_v2(const ZooOptions& o, int depth) {
  std::vector<int> units;
  switch (depth) {
    case 50: units = {3, 4, 6, 3}; break;
    case 101: units = {3, 4, 23, 3}; break;
    case 152: units = {3, 8, 36, 3}; break;
    case 200: units = {3, 24, 36, 3}; break;
    default: throw ConfigError(str("resnet_v2: no depth ", depth));
  }
  NetBuilder b(str("resnet_v2_", depth), {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = variance_scaling();
  b.conv_defaults.bias_init = zeros_init();
  b.conv_defaults.batch_norm = batch_norm_params(0.997f, 1e-5f, true);
  b.pool_padding = "same";
  std::string x = b.conv2d("data", "conv1",
                           {.filters = 64, .kernel = {7}, .stride = {2}, .pad = {3}, .normalize = false, .relu = false});
  x = b.max_pool2d(x, "pool1", {3}, {2});
  for (int blk = 0; blk < 4; ++blk) {
    auto block = b.scope(str("block", blk + 1));
    const int base = 64 << blk;
    for (int u = 0; u < units[static_cast<size_t>(blk)]; ++u) {
      auto unit = b.scope(str("unit_", u + 1));
      const int stride = blk < 3 && u == units[static_cast<size_t>(blk)] - 1 ? 2 : 1;
      x = bottleneck_v2(b, x, base * 4, base, stride);
    }
  }
  x = b.batch_norm(x, "postnorm", *b.conv_defaults.batch_norm);
  {
    auto p = b.scope("postnorm");
    x = b.relu(x, "Relu");
  }
  x = b.global_avg_pool(x, "pool5");
  const std::string logits = b.fully_connected(x, "logits", {.units = o.num_classes, .relu = false,
                                                             .weight_init = variance_scaling(),
                                                             .bias_init = zeros_init(), .tf_conv = true});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
