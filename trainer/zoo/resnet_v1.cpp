// TF-slim's resnet_v1 (nets/resnet_v1.py, resnet_utils.py) with resnet_arg_scope: weights from
// variance_scaling_initializer (factor 2, fan in, truncated normal), batch norm decay 0.997,
// epsilon 1e-5, scale on, ReLU, SAME max pooling.
//   root: conv1 7x7/2 (conv2d_same: explicit 3-pixel padding) + BN + ReLU, pool1 3x3/2 SAME
//   blocks 1-4 with 64/128/256/512 bottleneck depth (x4 output), the last unit of blocks 1-3 striding
//   by 2 (in its 3x3 conv); shortcut: identity (max-pool 1x1 subsample when striding) when the depth
//   is unchanged, else 1x1 conv + BN; output relu(shortcut + residual)
//   head: global average pool, logits (slim's 1x1 conv with bias, here a fully connected layer)
// Units per block: 50 [3, 4, 6, 3], 101 [3, 4, 23, 3], 152 [3, 8, 36, 3], 200 [3, 24, 36, 3].
// resnet_v1_18 is not in TF-slim: He et al.'s ResNet-18 (basic blocks of two 3x3 convs, [2, 2, 2, 2]
// units, the first unit of blocks 2-4 striding, projection shortcuts where the depth changes) with
// slim's names ("basic_v1") and arg scope; torchvision's resnet18 has the same 11,689,512 parameters.
#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

std::string subsample(NetBuilder& b, const std::string& x, int stride, const std::string& name) {
  return stride == 1 ? x : b.max_pool2d(x, name, {1}, {stride}, "valid");
}

std::string bottleneck_v1(NetBuilder& b, const std::string& x, int depth, int bottleneck, int stride) {
  auto s = b.scope("bottleneck_v1");
  const int64_t depth_in = b.dims(x)[0];
  const std::string shortcut =
      depth == depth_in ? subsample(b, x, stride, "shortcut")
                        : b.conv2d(x, "shortcut", {.filters = depth, .kernel = {1}, .stride = {stride}, .relu = false});
  std::string r = b.conv2d(x, "conv1", {.filters = bottleneck, .kernel = {1}});
  r = b.conv2d(r, "conv2", {.filters = bottleneck, .kernel = {3}, .stride = {stride}, .pad = {1}});
  r = b.conv2d(r, "conv3", {.filters = depth, .kernel = {1}, .relu = false});
  return b.relu(b.add({shortcut, r}, "add"), "Relu");
}

std::string basic_v1(NetBuilder& b, const std::string& x, int depth, int stride) {
  auto s = b.scope("basic_v1");
  const int64_t depth_in = b.dims(x)[0];
  const std::string shortcut =
      depth == depth_in ? subsample(b, x, stride, "shortcut")
                        : b.conv2d(x, "shortcut", {.filters = depth, .kernel = {1}, .stride = {stride}, .relu = false});
  std::string r = b.conv2d(x, "conv1", {.filters = depth, .kernel = {3}, .stride = {stride}, .pad = {1}});
  r = b.conv2d(r, "conv2", {.filters = depth, .kernel = {3}, .pad = {1}, .relu = false});
  return b.relu(b.add({shortcut, r}, "add"), "Relu");
}

}  // namespace

NetDef build_resnet_v1(const ZooOptions& o, int depth) {
  std::vector<int> units;
  switch (depth) {
    case 18: units = {2, 2, 2, 2}; break;
    case 50: units = {3, 4, 6, 3}; break;
    case 101: units = {3, 4, 23, 3}; break;
    case 152: units = {3, 8, 36, 3}; break;
    case 200: units = {3, 24, 36, 3}; break;
    default: throw ConfigError(str("resnet_v1: no depth ", depth));
  }
  NetBuilder b(str("resnet_v1_", depth), {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = variance_scaling();
  b.conv_defaults.batch_norm = batch_norm_params(0.997f, 1e-5f, true);
  b.pool_padding = "same";
  std::string x = b.conv2d("data", "conv1", {.filters = 64, .kernel = {7}, .stride = {2}, .pad = {3}});
  x = b.max_pool2d(x, "pool1", {3}, {2});
  for (int blk = 0; blk < 4; ++blk) {
    auto block = b.scope(str("block", blk + 1));
    const int base = 64 << blk;
    for (int u = 0; u < units[static_cast<size_t>(blk)]; ++u) {
      auto unit = b.scope(str("unit_", u + 1));
      // TF-slim strides in the last unit of blocks 1-3; ResNet-18 (not in slim) keeps He et al.'s first
      // unit of blocks 2-4, so its cost is the paper's 1.8 G multiply-adds.
      const int last = units[static_cast<size_t>(blk)] - 1;
      const int stride = depth == 18 ? (blk > 0 && u == 0 ? 2 : 1) : (blk < 3 && u == last ? 2 : 1);
      x = depth == 18 ? basic_v1(b, x, base, stride) : bottleneck_v1(b, x, base * 4, base, stride);
    }
  }
  x = b.global_avg_pool(x, "pool5");
  const std::string logits = b.fully_connected(x, "logits", {.units = o.num_classes, .relu = false,
                                                             .weight_init = variance_scaling(),
                                                             .bias_init = zeros_init(), .tf_conv = true});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
