// TF-slim's mobilenet_v2 (nets/mobilenet/mobilenet_v2.py, conv_blocks.expanded_conv, mobilenet.py's
// training_scope) at depth multipliers 1.0, 1.4 and 0.35:
//   Conv (3x3/2, 32), 17 inverted residual blocks expanded_conv, expanded_conv_1 .. expanded_conv_16,
//   Conv_1 (1x1, 1280); every conv followed by batch norm (decay 0.997, epsilon 0.001, with scale).
//   A block: expand (1x1 to 6x the input depth, BN, ReLU6; skipped when that is not wider than the
//   input, as in the first block, whose expansion is 1), depthwise (3x3, stride 1 or 2, BN, ReLU6),
//   project (1x1, BN, linear: the bottleneck has no activation), then + input when the stride is 1
//   and the depths agree.
// Depths: _make_divisible(d * multiplier, 8) (at least 8, never below 90% of d * multiplier); the
// expansion is _make_divisible(input depth * 6, 8). mobilenet_v2_035 is slim's
// finegrain_classification_mode (multiplier < 1 leaves Conv_1 at 1280); 1.4 widens Conv_1 to 1792.
// Weights ~ truncated normal(0.09); L2 decay on convs, not on depthwise filters (slim sets the
// separable_conv2d regularizer to None). All SAME.
//   Logits: global average pool, dropout keep 0.8, conv 1x1 num_classes with bias (fully connected here).
// Parameter counts: docs/MODELS.md (1.0 with 1000 classes: 3,504,872 trainable + 34,112 moving
// statistics, Keras' MobileNetV2).
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

namespace {

// slim's mobilenet._make_divisible(v, divisor = 8, min_value = 8).
int make_divisible(double v, int divisor = 8) {
  int nv = std::max(divisor, static_cast<int>(v + divisor / 2.0) / divisor * divisor);
  if (nv < 0.9 * v) nv += divisor;
  return nv;
}

}  // namespace

NetDef build_mobilenet_v2(const ZooOptions& o, double multiplier, bool finegrain) {
  NetBuilder b("MobilenetV2", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = truncated_normal(0.09);
  b.conv_defaults.batch_norm = batch_norm_params(0.997f, 0.001f, true);
  b.conv_defaults.relu6 = true;
  b.conv_defaults.padding = "same";
  const auto depth = [&](double d) { return make_divisible(d * multiplier); };

  std::string x = b.conv2d("data", "Conv", {.filters = depth(32), .kernel = {3}, .stride = {2}});
  struct Block {
    int expansion, depth, stride;
  };
  static constexpr Block kBlocks[] = {{1, 16, 1},  {6, 24, 2},  {6, 24, 1},  {6, 32, 2},  {6, 32, 1},  {6, 32, 1},
                                      {6, 64, 2},  {6, 64, 1},  {6, 64, 1},  {6, 64, 1},  {6, 96, 1},  {6, 96, 1},
                                      {6, 96, 1},  {6, 160, 2}, {6, 160, 1}, {6, 160, 1}, {6, 320, 1}};
  int i = 0;
  for (const Block& blk : kBlocks) {
    auto s = b.scope(i == 0 ? std::string("expanded_conv") : str("expanded_conv_", i));
    const std::string input = x;
    const int in_depth = static_cast<int>(b.dims(x)[0]), out_depth = depth(blk.depth);
    // The first block's expansion is expand_input(1, divisible_by=1): the input depth itself.
    const int inner = blk.expansion == 1 ? in_depth : make_divisible(static_cast<double>(in_depth) * blk.expansion);
    if (inner > in_depth) x = b.conv2d(x, "expand", {.filters = inner, .kernel = {1}});
    x = b.depthwise_conv2d(x, "depthwise", {.kernel = {3}, .stride = {blk.stride}});
    x = b.conv2d(x, "project", {.filters = out_depth, .kernel = {1}, .relu = false});
    if (blk.stride == 1 && out_depth == in_depth) x = b.add({x, input}, "add");
    ++i;
  }
  const double last = finegrain && multiplier < 1 ? 1280 / multiplier : 1280;
  x = b.conv2d(x, "Conv_1", {.filters = depth(last), .kernel = {1}});

  std::string logits;
  {
    auto s = b.scope("Logits");
    x = b.global_avg_pool(x, "AvgPool");
    x = b.dropout(x, "Dropout", 0.8f);
    logits = b.fully_connected(x, "Conv2d_1c_1x1", {.units = o.num_classes, .relu = false,
                                                    .weight_init = truncated_normal(0.09), .bias_init = zeros_init(),
                                                    .tf_conv = true});
  }
  return b.finish(logits);
}

}  // namespace fastnn::zoo
