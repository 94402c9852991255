// He et al., "Deep Residual Learning for Image Recognition", section 4.2 (CIFAR-10): a 3x3 conv with
// 16 filters, then 3 stages of n basic blocks (two 3x3 convs each) with 16, 32, 64 filters, the first
// conv of stages 2 and 3 striding by 2, global average pooling and a fully connected classifier;
// depth = 6n + 2. Shortcuts are identities; where the shape changes, "option A": subsample by 2 and
// pad the new channels with zeros (no parameters), which gives the paper's 0.27 M (n = 3) and
// 0.85 M (n = 9) parameters. BN after every conv (decay 0.9, epsilon 1e-5), He-normal convs.
#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_resnet_cifar(const ZooOptions& o, int depth) {
  FASTNN_CHECK((depth - 2) % 6 == 0, "resnet_cifar depth must be 6n + 2");
  const int n = (depth - 2) / 6;
  NetBuilder b(str("resnet_cifar_", depth), {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = he_normal();
  b.conv_defaults.batch_norm = batch_norm_params(0.9f, 1e-5f, true);
  std::string x = b.conv2d("data", "conv1", {.filters = 16, .kernel = {3}, .pad = {1}});
  int in_filters = 16;
  for (int stage = 0; stage < 3; ++stage) {
    const int filters = 16 << stage;
    auto block = b.scope(str("block", stage + 1));
    for (int u = 0; u < n; ++u) {
      auto unit = b.scope(str("unit_", u + 1));
      const int stride = stage > 0 && u == 0 ? 2 : 1;
      std::string shortcut = x;
      if (stride > 1) shortcut = b.max_pool2d(x, "shortcut/subsample", {1}, {stride});
      if (filters != in_filters) {
        const int extra = filters - in_filters;
        shortcut = b.channel_pad(shortcut, "shortcut/pad", extra / 2, extra - extra / 2);
      }
      std::string r = b.conv2d(x, "conv1", {.filters = filters, .kernel = {3}, .stride = {stride}, .pad = {1}});
      r = b.conv2d(r, "conv2", {.filters = filters, .kernel = {3}, .pad = {1}, .relu = false});
      x = b.relu(b.add({shortcut, r}, "add"), "Relu");
      in_filters = filters;
    }
  }
  x = b.global_avg_pool(x, "pool");
  const std::string logits = b.fully_connected(x, "logits", {.units = o.num_classes, .relu = false,
                                                             .weight_init = glorot_uniform()});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
