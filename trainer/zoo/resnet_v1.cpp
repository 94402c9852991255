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
// resnet_v1_5_50 is not in TF-slim either: ResNet-50 v1.5, the network of torchvision's and timm's resnet50,
// of NVIDIA's DeepLearningExamples and of MLPerf Training: the stride of blocks 2-4 in the 3x3 conv of their
// FIRST unit (where the projection shortcut is; 4.09 G multiply-adds at 224 against v1's 3.48, the same
// 25,557,032 parameters), and PyTorch's 3x3/2 max pool with a 1-pixel border (not TF's SAME, whose odd
// pixel is at the bottom/right). Batch norm decay 0.9 (PyTorch's momentum 0.1, MLPerf's reference),
// epsilon 1e-5; slim's names and initialisers otherwise, so the same code paths load and save it.
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

std::vector<int> units_of(int depth) {
  switch (depth) {
    case 18: return {2, 2, 2, 2};
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    case 152: return {3, 8, 36, 3};
    case 200: return {3, 24, 36, 3};
    default: throw ConfigError(str("resnet_v1: no depth ", depth));
  }
}

std::string logits_of(NetBuilder& b, const std::string& x, const ZooOptions& o) {
  const std::string pooled = b.global_avg_pool(x, "pool5");
  return b.fully_connected(pooled, "logits", {.units = o.num_classes, .relu = false, .weight_init = variance_scaling(),
                                              .bias_init = zeros_init(), .tf_conv = true});
}

}  // namespace

NetDef build_resnet_v1(const ZooOptions& o, int depth) {
  const std::vector<int> units = units_of(depth);
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
  return b.finish(logits_of(b, x, o));
}

NetDef build_resnet_v1_5(const ZooOptions& o, int depth) {
  FASTNN_CHECK(depth != 18, "resnet_v1_5: ResNet-18 has no bottleneck to move the stride in");
  const std::vector<int> units = units_of(depth);
  NetBuilder b(str("resnet_v1_5_", depth), {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = variance_scaling();
  b.conv_defaults.batch_norm = batch_norm_params(0.9f, 1e-5f, true);
  std::string x = b.conv2d("data", "conv1", {.filters = 64, .kernel = {7}, .stride = {2}, .pad = {3}});
  x = b.max_pool2d(x, "pool1", {3}, {2}, {}, {1});
  for (int blk = 0; blk < 4; ++blk) {
    auto block = b.scope(str("block", blk + 1));
    const int base = 64 << blk;
    for (int u = 0; u < units[static_cast<size_t>(blk)]; ++u) {
      auto unit = b.scope(str("unit_", u + 1));
      x = bottleneck_v1(b, x, base * 4, base, blk > 0 && u == 0 ? 2 : 1);
    }
  }
  return b.finish(logits_of(b, x, o));
}

}  // namespace fastnn::zoo
