// SINGA's MNIST MLP example: 784-2500-2000-1500-1000-500-10, each hidden layer an inner product
// followed by SINGA's scaled tanh (kSTanh: 1.7159047 * tanh(0.66666667 * x)); weights and biases
// ~ U(-0.05, 0.05) as in its job.conf. The input image is flattened by the first layer.
#include "core/check.h"
#include "trainer/zoo/builders.h"
#include "trainer/zoo/net_builder.h"

namespace fastnn::zoo {

NetDef build_mlp(const ZooOptions& o) {
  NetBuilder b("mlp", {o.channels, o.height, o.width});
  b.fc_defaults.weight_init = uniform_init(-0.05, 0.05);
  b.fc_defaults.bias_init = uniform_init(-0.05, 0.05);
  b.fc_defaults.relu = false;
  std::string x = "data";
  int i = 1;
  for (int units : {2500, 2000, 1500, 1000, 500}) {
    const std::string fc = str("fc", i++);
    x = b.fully_connected(x, fc, {.units = units});
    auto s = b.scope(fc);
    x = b.tanh(x, "STanh", 1.7159047f, 0.66666667f);
  }
  const std::string logits = b.fully_connected(x, str("fc", i), {.units = o.num_classes});
  return b.finish(logits);
}

}  // namespace fastnn::zoo
