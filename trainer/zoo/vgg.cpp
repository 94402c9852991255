// TF-slim's vgg_a / vgg_16 / vgg_19 (nets/vgg.py) with vgg_arg_scope: 3x3 SAME convs with biases and
// ReLU, Glorot-uniform weights (slim's default), zero biases; 2x2 max pools; fc6 a 7x7 VALID conv,
// then dropout (keep 0.5), fc7, dropout, fc8 (the logits). fc7 and fc8 are slim 1x1 convs on a 1x1
// map, here fully connected layers (same parameters). For inputs below 224 the fc6 kernel shrinks to
// the pool5 map (as slim's Inception heads do), so any input from 32 to 255 pixels works; the
// published parameter counts hold at 224.
#include <algorithm>

#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_vgg(const ZooOptions& o, int depth) {
  std::vector<int> convs;
  std::string scope;
  switch (depth) {
    case 11: convs = {1, 1, 2, 2, 2}, scope = "vgg_a"; break;
    case 16: convs = {2, 2, 3, 3, 3}, scope = "vgg_16"; break;
    case 19: convs = {2, 2, 4, 4, 4}, scope = "vgg_19"; break;
    default: throw ConfigError(str("vgg: no depth ", depth));
  }
  NetBuilder b(scope, {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = glorot_uniform();
  b.conv_defaults.bias_init = zeros_init();
  b.fc_defaults.weight_init = glorot_uniform();
  b.fc_defaults.bias_init = zeros_init();
  std::string x = "data";
  for (int blk = 0; blk < 5; ++blk) {
    const int filters = std::min(64 << blk, 512);
    {
      auto s = b.scope(str("conv", blk + 1));
      for (int c = 0; c < convs[static_cast<size_t>(blk)]; ++c)
        x = b.conv2d(x, str("conv", blk + 1, "_", c + 1), {.filters = filters, .kernel = {3}});
    }
    x = b.max_pool2d(x, str("pool", blk + 1), {2}, {2});
  }
  const Dims& d = b.dims(x);
  if (d[1] > 7 || d[2] > 7)
    throw ConfigError(str(scope, ": input ", o.height, "x", o.width, " leaves a ", d[1], "x", d[2],
                          " pool5 map; fc6 (7x7) needs at most 7x7, i.e. inputs up to 255 pixels"));
  const int kh = static_cast<int>(d[1]), kw = static_cast<int>(d[2]);
  x = b.conv2d(x, "fc6", {.filters = 4096, .kernel = {kh, kw}, .padding = "valid"});
  x = b.dropout(x, "dropout6", 0.5f);
  x = b.fully_connected(x, "fc7", {.units = 4096, .tf_conv = true});
  x = b.dropout(x, "dropout7", 0.5f);
  const std::string logits = b.fully_connected(x, "fc8", {.units = o.num_classes, .relu = false, .tf_conv = true});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
