// TF-slim's CifarNet (nets/cifarnet.py) with cifarnet_arg_scope: conv weights ~ truncated normal(0.05)
// with ReLU; fc weights ~ truncated normal(0.04), biases 0.1, ReLU; the logits layer has weights
// ~ truncated normal(1/192), zero biases and no weight decay. tf.nn.lrn(4, bias 1, alpha 0.001/9,
// beta 0.75) after pool1 and conv2.
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_cifarnet(const ZooOptions& o) {
  NetBuilder b("CifarNet", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = truncated_normal(5e-2);
  b.conv_defaults.bias_init = zeros_init();
  b.fc_defaults.weight_init = truncated_normal(0.04);
  b.fc_defaults.bias_init = constant_init(0.1);
  std::string x = b.conv2d("data", "conv1", {.filters = 64, .kernel = {5}});
  x = b.max_pool2d(x, "pool1", {2}, {2});
  x = b.lrn(x, "norm1", 4, 1.0f, 0.001f / 9.0f, 0.75f);
  x = b.conv2d(x, "conv2", {.filters = 64, .kernel = {5}});
  x = b.lrn(x, "norm2", 4, 1.0f, 0.001f / 9.0f, 0.75f);
  x = b.max_pool2d(x, "pool2", {2}, {2});
  x = b.fully_connected(x, "fc3", {.units = 384});
  x = b.dropout(x, "dropout3", 0.5f);
  x = b.fully_connected(x, "fc4", {.units = 192});
  const std::string logits = b.fully_connected(x, "logits", {.units = o.num_classes, .relu = false,
                                                             .weight_init = truncated_normal(1.0 / 192.0),
                                                             .bias_init = zeros_init(), .weight_decay = false});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
