// TF-slim's LeNet (nets/lenet.py) with lenet_arg_scope: conv and fc weights ~ truncated normal(0.1),
// biases zero, ReLU; SAME convolutions; 2x2 max pools; dropout keep 0.5 before the logits.
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_lenet(const ZooOptions& o) {
  NetBuilder b("LeNet", {o.channels, o.height, o.width});
  b.conv_defaults.weight_init = truncated_normal(0.1);
  b.conv_defaults.bias_init = zeros_init();
  b.fc_defaults.weight_init = truncated_normal(0.1);
  b.fc_defaults.bias_init = zeros_init();
  std::string x = b.conv2d("data", "conv1", {.filters = 32, .kernel = {5}});
  x = b.max_pool2d(x, "pool1", {2}, {2});
  x = b.conv2d(x, "conv2", {.filters = 64, .kernel = {5}});
  x = b.max_pool2d(x, "pool2", {2}, {2});
  x = b.fully_connected(x, "fc3", {.units = 1024});
  x = b.dropout(x, "dropout3", 0.5f);
  const std::string logits = b.fully_connected(x, "fc4", {.units = o.num_classes, .relu = false});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
