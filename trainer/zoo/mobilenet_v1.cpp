// TF-slim's mobilenet_v1 (nets/mobilenet_v1.py) with mobilenet_v1_arg_scope, at depth multipliers 1.0,
// 0.75, 0.5 and 0.25: Conv2d_0 (3x3/2, 32), then 13 depthwise-separable layers Conv2d_<i>_depthwise
// (3x3, stride 1 or 2) + Conv2d_<i>_pointwise (1x1), every conv followed by batch norm (decay 0.9997,
// epsilon 0.001, with scale) and ReLU6; all SAME. Weights ~ truncated normal(0.09); L2 decay on the
// convolutions but not on the depthwise filters (regularize_depthwise = False). Depths are
// max(int(d * multiplier), 8) (min_depth 8).
//   Logits: avg pool of the final map (kernel min(7, map), VALID: slim's reduced kernel), dropout keep
//   0.999, conv 1x1 num_classes with bias (fully connected here, on the 1x1 map).
// Parameter counts: docs/MODELS.md (1.0 with 1000 classes: 4,231,976 trainable + 21,888 moving
// statistics, Keras' MobileNet).
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_mobilenet_v1(const ZooOptions& o, double multiplier) {
  NetBuilder b("MobilenetV1", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = truncated_normal(0.09);
  b.conv_defaults.batch_norm = batch_norm_params(0.9997f, 0.001f, true);
  b.conv_defaults.relu6 = true;
  b.conv_defaults.padding = "same";
  const auto depth = [&](int d) { return std::max(static_cast<int>(d * multiplier), 8); };

  std::string x = b.conv2d("data", "Conv2d_0", {.filters = depth(32), .kernel = {3}, .stride = {2}});
  struct Sep {
    int stride, depth;
  };
  static constexpr Sep kSeps[] = {{1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256}, {2, 512},  {1, 512},
                                  {1, 512}, {1, 512}, {1, 512}, {1, 512}, {2, 1024}, {1, 1024}};
  int i = 1;
  for (const Sep& s : kSeps) {
    x = b.depthwise_conv2d(x, str("Conv2d_", i, "_depthwise"), {.kernel = {3}, .stride = {s.stride}});
    x = b.conv2d(x, str("Conv2d_", i, "_pointwise"), {.filters = depth(s.depth), .kernel = {1}});
    ++i;
  }

  std::string logits;
  {
    auto s = b.scope("Logits");
    const Dims& d = b.dims(x);
    if (d[1] > 7 || d[2] > 7)
      throw ConfigError(str("mobilenet_v1: input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                            " final map; the 7x7 pool needs at most 7x7 (inputs up to 224 pixels)"));
    x = b.avg_pool2d(x, "AvgPool_1a", {static_cast<int>(d[1]), static_cast<int>(d[2])}, {1}, "valid");
    x = b.dropout(x, "Dropout_1b", 0.999f);
    logits = b.fully_connected(x, "Conv2d_1c_1x1", {.units = o.num_classes, .relu = false,
                                                    .weight_init = truncated_normal(0.09), .bias_init = zeros_init(),
                                                    .tf_conv = true});
  }
  return b.finish(logits);
}

}  // namespace fastnn::zoo
