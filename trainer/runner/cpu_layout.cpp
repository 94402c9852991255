#include "trainer/runner/cpu_layout.h"

#include <algorithm>
#include <string>

#include "core/logging.h"
#include "trainer/graph/net_plan.h"
#include "trainer/runner/step_runner.h"
#include "trainer/ops/cpu_kernel_choice.h"

namespace fastnn::runner {

namespace {

// Whether the op, or each op of a fused node ("batch_norm+add+relu", fuse_ops), has a CPU NHWC kernel;
// the element-wise ones a fusion appends (relu, relu6, add) take any layout.
bool has_nhwc_cpu_kernels(const ops::OpRegistry& registry, const std::string& op) {
  for (size_t begin = 0; begin <= op.size();) {
    const size_t end = std::min(op.find('+', begin), op.size());
    const std::string part = op.substr(begin, end - begin);
    const ops::OpDef* def = registry.find(part);
    const bool elementwise = begin > 0 && (part == "relu" || part == "relu6" || part == "add");
    if (!elementwise && (!def || !def->nhwc_kernels.contains(Device::kCpu))) return false;
    begin = end + 1;
  }
  return true;
}

}  // namespace

Layout auto_cpu_layout(const NetDef& net, const StepRunnerOptions& o) {
  if (!ops::use_dnnl_kernels()) return Layout::kNCHW;
  // The NCHW plan at batch 1 makes only reference kernels (cheap; no oneDNN primitive is built).
  const graph::NetPlan plan = graph::NetPlan::make(net, graph::PlanOptions{.batch_size = 1, .dtype = DType::kF32, .device = Device::kCpu, .registry = nullptr, .fuse = o.fuse});
  const ops::OpRegistry& registry = graph::builtin_op_registry();
  for (const graph::PlanNode& node : plan.nodes()) {
    const ops::OpSignature& sig = node.kernel->signature();
    if (sig.activation_layout != Layout::kNCHW) continue;  // element-wise: any layout
    // A layer whose output is not 4-D (fully_connected after a flatten, at the end of a net) is the
    // edge where the layout ends: the adapter transposes its input once. One whose output is 1x1 (VGG's
    // and Inception's dropout before the logits) is the same in both layouts: its "transposes" are copies.
    const Shape& y = node.output_shape;
    if (y.size() != 4 || y[2] * y[3] == 1) continue;
    if (!has_nhwc_cpu_kernels(registry, node.op)) {
      log_debug("data_format auto: NCHW on the CPU, layer ", node.name, " (", node.op, ") has no NHWC CPU kernel");
      return Layout::kNCHW;
    }
  }
  return Layout::kNHWC;
}

}  // namespace fastnn::runner
