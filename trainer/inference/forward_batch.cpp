#include "trainer/inference/forward_batch.h"

#include <algorithm>

#include "trainer/graph/net_plan.h"

namespace fastnn::inference {

ForwardBatch cpu_forward_batch(const graph::NetPlan& plan, int64_t batch, uint64_t l3_bytes) {
  const auto& nodes = plan.nodes();
  auto bytes = [&](int node) {
    const Shape& s = node == graph::kDataInput ? plan.input_shape() : nodes[static_cast<size_t>(node)].output_shape;
    int64_t n = static_cast<int64_t>(sizeof(float));
    for (size_t d = 1; d < s.size(); ++d) n *= s[d];  // one image: the batch dimension left out
    return n;
  };
  double macs = 0, traffic = 0;
  ForwardBatch f;
  f.images = batch;
  for (size_t i = 0; i < nodes.size(); ++i) {
    int64_t layer = bytes(static_cast<int>(i));
    for (int input : nodes[i].inputs) layer += bytes(input);
    macs += static_cast<double>(nodes[i].macs) / static_cast<double>(plan.batch_size());
    traffic += static_cast<double>(layer);
    f.largest_layer_bytes = std::max(f.largest_layer_bytes, layer);
  }
  f.macs_per_byte = traffic > 0 ? macs / traffic : 0;
  if (l3_bytes == 0 || f.largest_layer_bytes == 0 || f.macs_per_byte >= kSliceBelowMacsPerByte) return f;
  const int64_t fit = std::max<int64_t>(1, static_cast<int64_t>(l3_bytes / static_cast<uint64_t>(f.largest_layer_bytes)));
  if (fit >= batch) return f;
  const int64_t forwards = (batch + fit - 1) / fit;
  f.images = (batch + forwards - 1) / forwards;
  return f;
}

}  // namespace fastnn::inference
