// NetPlan: a NetDef checked, sorted and shape-inferred for one batch size, with no tensor memory.
//
// What make() does, in order, each failure a ConfigError naming the layer (and the field, the input
// name, or the cycle):
//   1. the input spec (channels, height, width in [1, 65536]) and the layer list (1 to 100000 layers);
//   2. layer names: non-empty, [A-Za-z0-9_./-] only, not "data", unique;
//   3. each layer's type and fields (graph/layers.h) and its input count;
//   4. inputs name "data" or a layer (with "did you mean" suggestions); a layer may not read itself;
//   5. topological order (Kahn's algorithm, ties broken by declaration order, so a net declared in
//      order keeps its order); a cycle is reported as "a -> b -> a";
//   6. `logits` (required) and `aux_logits` name layers; every layer's output must reach one of them;
//   7. kernels are created for the device in order, which infers every shape; an op's ConfigError is
//      prefixed with the layer; logits and aux_logits must be [N, classes] with equal classes.
//
// The plan also knows every parameter and state tensor (full TF-slim name, shape, trainable or
// fixed, init rule, weight decay) and each layer's FLOPs (2 x multiply-adds of conv and fully
// connected layers; other layers count 0), so parameter counts and model statistics need no memory.
//
// Threading: a plan is immutable after make(); its kernels are used by one Graph at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schemas/net.pb.h"
#include "trainer/graph/layers.h"
#include "trainer/ops/op.h"

namespace fastnn::graph {

// Which op registry graphs use unless told otherwise: every built-in op with its CPU kernel (built once,
// on first use). The CUDA backend passes its own registry (with CUDA kernels added) in PlanOptions.
const ops::OpRegistry& builtin_op_registry();
// The built-in ops with the CPU's conv2d (NHWC) and fully_connected multiplying in bfloat16 and
// accumulating in f32 (precision=bf16 on the CPU; depthwise_conv2d stays f32: ops/conv2d_nhwc_dnnl.cpp
// says why). Only where ops::cpu_bf16_available() (Error elsewhere).
const ops::OpRegistry& cpu_bf16_op_registry();
// Whether a plan node of op `op` multiplies in bf16 when planned from cpu_bf16_op_registry(): conv2d, alone or
// first in a fused node, and fully_connected (each keeps its input rounded to bf16 as a saved tensor).
bool multiplies_in_cpu_bf16(std::string_view op);

struct PlanOptions {
  int64_t batch_size = 1;
  DType dtype = DType::kF32;
  Device device = Device::kCpu;
  const ops::OpRegistry* registry = nullptr;  // null: builtin_op_registry()
  // Fuse a relu into the batch_norm or add before it, a relu6 into the batch_norm before it, when that
  // layer's output has no other reader (ops/fused.h): one plan node, named after the first layer, its op
  // "batch_norm+relu" / "add+relu" / "batch_norm+relu6";
  // then a batch_norm read only by a two-input add+relu into that node ("batch_norm+add+relu", named
  // after the add; inputs: the batch norm's, then the other addend). find() still knows every fused
  // layer's name. Bitwise the unfused plan on every device.
  bool fuse = false;
  // kNHWC: every 4-D activation, the data input included, is [N, H, W, C]: each layer gets its op's
  // NHWC kernel for the device (OpRegistry::create_nhwc) or, without one, its NCHW kernel inside
  // ops/layout_adapter.h, so the plan computes what the NCHW one does (bitwise where the kernels are
  // the adapted ones). Shapes in the plan (input_shape, output_shape, the kernels' signatures) are then
  // NHWC; parameters keep their shapes.
  Layout layout = Layout::kNCHW;
  // After the fusions above: a conv2d read only by a batch norm node (batch_norm, batch_norm+relu,
  // batch_norm+relu6, batch_norm+add+relu: its first input) joins it as one node "conv2d+<that op>", at
  // the batch norm node's place and with its name, the convolution's parameters first (ops/fused.h).
  // Only where no node between the two has parameters or state, so their order is kept, and not into a
  // batch_norm+add+relu where the convolution's input has other readers (that node cannot add into its
  // input's gradient, which the CUDA convolution alone can: cuDNN's beta = 1). On the CPU the composite,
  // bitwise the unfused plan; on cuda the convolution writes the batch norm's statistics where cuDNN has
  // a conv + statistics engine (ops/conv2d_cuda.cpp, ops/conv_bn_graph_cuda.h). The fuse_conv_bn field.
  bool fuse_conv_bn = false;
  // Inference plans, after the fusions above: a convolution (conv2d, depthwise_conv2d) read only by a
  // batch norm node joins it as one evaluation-only node "<conv>+<that op>" (named and ordered as under
  // fuse_conv_bn) where the device has a kernel computing the pair with the batch norm folded into the
  // convolution's weights and bias (OpRegistry::add_batch_norm_fold; the CPU's on oneDNN, NHWC). Where
  // it has none the two nodes stay. Not bitwise the unfolded plan (the fold rounds the weights).
  bool fold_batch_norms = false;
  // With fold_batch_norms: the folded convolutions compute in bfloat16 (their input and folded weights
  // rounded to it; f32 accumulation, bias and post-ops). Only where the device has such a kernel (the
  // CPU's with bf16 instructions: ops::cpu_bf16_available(); the caller refuses elsewhere), and only where
  // it pays (the kernel says so: OpSignature::multiplies_in_bf16). An activation a bf16 fold writes and
  // only bf16 folds or pools read stays bfloat16 (not `keep`; a max pool passes it on), so it is rounded
  // once, not by every reader; the others, and the residual of an add writing `dtype`, stay in `dtype`.
  bool fold_in_bf16 = false;
  // With fold_batch_norms: how many images the graph is to run in its life (predict knows its inputs),
  // 0 where that is unbounded (serve). A folded kernel whose faster form costs a one-off transform of its
  // weights takes it only where that many images repay it (the CPU's Winograd convolutions,
  // ops/conv2d_dnnl.h).
  int64_t fold_job_images = 0;
  // Inference: layers whose output is read after the forward (GraphOptions::keep); their outputs stay in
  // `dtype` (with fold_in_bf16 the others between bf16 folds are bfloat16).
  std::vector<std::string> keep;
};

// A parameter or state tensor of a layer.
struct PlannedTensor {
  std::string name;     // "<layer>/weights", "<layer>/moving_mean"
  ops::TensorSpec spec;  // the op's spec: shape, dtype, default Init tag, fans
  bool trainable = true;  // params: false for fixed constants (not trained, not saved); state: false
  bool weight_decay = false;
  std::optional<ops::InitRule> init;  // nullopt: spec.init

  int64_t numel() const { return shape_numel(spec.shape); }
};

struct PlanNode {
  std::string name, type, op;  // "block1/conv1", "conv", "conv2d"
  ops::Attrs attrs;
  std::vector<int> inputs;  // node indices into NetPlan::nodes(); kDataInput for "data"
  std::unique_ptr<ops::OpKernel> kernel;
  std::vector<PlannedTensor> params;  // aligned with kernel->signature().params
  std::vector<PlannedTensor> state;   // aligned with kernel->signature().state
  Shape output_shape;
  int64_t macs = 0;  // multiply-adds for the whole batch (conv, fully connected)
  int declared_at = 0;  // index in NetDef.layers

  int64_t trainable_params() const;
};

inline constexpr int kDataInput = -1;

class NetPlan {
 public:
  static NetPlan make(const NetDef& net, const PlanOptions& options);

  const std::vector<PlanNode>& nodes() const { return nodes_; }  // topological order
  const PlanOptions& options() const { return options_; }
  int64_t batch_size() const { return options_.batch_size; }
  const Shape& input_shape() const { return input_shape_; }  // [N, C, H, W] ([N, H, W, C] under kNHWC)
  const std::string& net_name() const { return net_name_; }
  int logits_node() const { return logits_; }
  int aux_logits_node() const { return aux_logits_; }  // -1 when none
  double aux_loss_weight() const { return aux_loss_weight_; }
  int64_t num_classes() const { return nodes_[static_cast<size_t>(logits_)].output_shape[1]; }
  // Node index of a layer by name, or -1. A layer fused into another gives the fused node, whose output
  // is that layer's output for a fused-away relu; for a batch norm fused into its add, or a convolution
  // fused into its batch norm (fuse_conv_bn), the node's output is the later layer's.
  int find(const std::string& layer_name) const;

  int64_t trainable_param_count() const;  // elements of trainable params
  int64_t state_count() const;            // elements of state (moving statistics)
  int64_t macs() const;                   // whole batch

 private:
  PlanOptions options_;
  std::string net_name_;
  Shape input_shape_;
  void fuse_activations();
  void fuse_residual_batch_norms();
  void fuse_conv_batch_norms();
  // A convolution, the batch norm node it is to join, and the fold of the two (fold_batch_norms).
  struct BatchNormFoldPair {
    size_t conv, bn;
    std::unique_ptr<ops::OpKernel> kernel;
  };
  void fold_batch_norms();
  std::vector<bool> bf16_outputs(const std::vector<BatchNormFoldPair>& folds, const ops::OpRegistry& registry) const;
  std::vector<ops::TensorSpec> nchw_inputs_of(const PlanNode& node) const;
  std::optional<size_t> conv_read_only_by(size_t bn_node, const std::vector<int>& readers) const;
  void join_conv_into(size_t conv_node, size_t bn_node, std::unique_ptr<ops::OpKernel> kernel);
  std::vector<int> reader_counts() const;
  bool nothing_stateful_between(size_t from, size_t to) const;  // no node strictly between has params or state
  void drop_fused(const std::vector<int>& into);

  std::vector<PlanNode> nodes_;
  std::vector<std::pair<std::string, int>> fused_names_;  // a fused-away layer -> its node
  int logits_ = -1, aux_logits_ = -1;
  double aux_loss_weight_ = 0.4;
};

}  // namespace fastnn::graph
