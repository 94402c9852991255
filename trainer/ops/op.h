// The op interface and registry: the contract every CPU and CUDA op implements.
//
// Three layers, from the bottom:
//
// 1. Typed kernels (per op header, e.g. ops/conv2d.h). Free functions on raw pointers plus a params
//    struct, templated on the scalar type, that do the arithmetic:
//        namespace fastnn::ops::cpu  { template <class T> void conv2d_forward(const Conv2dParams&,
//                                          const T* x, const T* w, const T* b, T* y, std::span<T> ws); }
//    In CUDA builds (FASTNN_HAVE_CUDA) the same header declares the CUDA launchers with the same names
//    and argument order in namespace fastnn::ops::gpu plus a trailing cudaStream_t (defined in one of
//    ops/{elementwise,reduce,window}_kernels.cu, or host code in ops/<op>_cuda.cpp for cuDNN/cuBLAS).
//    The CPU ones are instantiated for float and double (double is what the gradient checks run in).
//
// 2. OpKernel (this header). One op bound to its attributes, input specs (shapes + dtypes) and a
//    device: it reports the shapes of everything the caller must allocate (OpSignature) and runs
//    forward/backward on Tensors. It validates the tensors it is handed against its signature, then
//    unpacks them into a typed kernel call. A kernel object holds no tensors and no memory; it can be
//    used from one thread at a time (it is cheap to create one per layer).
//
// 3. OpDef + OpRegistry. An op kind by name ("conv2d"): per-device kernel factories and a small set
//    of test cases. register_builtin_ops() lists every op explicitly (no static initialisers); each
//    op's register_<op>() adds its CPU kernel and, in CUDA builds, calls register_<op>_cuda(), which
//    adds the kCuda factory to the same entry with OpRegistry::add_kernel(). Generic
//    tests iterate the registry: every op is gradient-checked in double precision by finite
//    differences on its own test cases, and the CUDA kernels are compared with the CPU ones there.
//
// Tensor roles. A kernel sees five groups of tensors, each sized by its signature:
//   inputs   activations (and integer labels); given by the caller, read only.
//   params   learned parameters (conv weight, bias, BN gamma/beta); read only in forward.
//   state    persistent non-learned tensors (BN running mean/var); forward may update them (training).
//   outputs  written by forward.
//   saved    written by forward, read by the matching backward (BN mean and inverse std, dropout
//            mask, softmax probabilities). Caller-owned, kept between the two calls. An op may leave
//            them unwritten in eval mode when its eval backward does not read them (dropout).
// plus a scratch workspace (bytes, contents undefined between calls).
//
// Memory: the CALLER allocates every tensor, including outputs, saved, gradients and the workspace,
// with exactly the shapes and dtypes of the signature (workspace: at least workspace_bytes). Kernels
// never allocate. Buffers must not alias unless the op's header says so (elementwise ops allow an
// output to alias its input).
//
// Layout: 4-D activations are NCHW in the CPU reference; tensors tagged NHWC are rejected. Weights are
// [K, C/groups, R, S] for convolution, [out, in] for fully connected (PyTorch order), on every device
// and in every layout (checkpoints do not depend on the layout). An op may also register a kernel that
// takes NHWC activations itself (OpRegistry::add_nhwc_kernel: created from the NCHW input specs, its
// signature has the 4-D inputs and outputs in [N, H, W, C] and activation_layout kNHWC); a graph in
// NHWC (GraphOptions::layout) uses it, and runs an op without one inside ops/layout_adapter.h.
//
// Dtypes: the compute dtype is the dtype of the first floating input; all floating inputs, params,
// state and outputs have it. CPU kernels support f32 and f64. Integer inputs (labels) are i32 or i64.
//
// Gradients: backward OVERWRITES d_inputs and d_params (it never accumulates; a layer graph sums the
// gradients of a tensor consumed twice itself). A d_inputs or d_params entry may be an undefined
// Tensor: that gradient is not computed. Integer inputs have no gradient (their entry must be
// undefined). Backward must be called with the same `training` flag, inputs, params, state and saved
// tensors as the forward it differentiates.
//
// Threading and determinism (CPU): kernels parallelise with oneTBB over the batch or channels and call
// OpenBLAS single-threaded (OpenBLAS 0.3.21 has no per-call thread count, so a CPU op sets the
// process-wide OpenBLAS thread count to 1 before its first GEMM; code that wants threaded BLAS sets it
// back). Work is split into pieces that do not depend on the thread count, so results are bitwise
// reproducible for a given signature; reductions over the batch that need partials (conv filter
// gradients: min(N, 8) of them, conv2d.h) use a count that depends on the shapes only and sum them in
// a fixed order.
//
// Errors: bad attributes or input shapes throw ConfigError when the kernel is created; tensors that do
// not match the signature, and bad data (a label out of range), throw Error.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/ops/attrs.h"
#include "trainer/tensor.h"

namespace fastnn::ops {

// How a layer initialises a parameter or state tensor (see ops/init.h).
enum class Init : uint8_t { kNone, kZeros, kOnes, kHeNormal, kGlorotUniform };

struct TensorSpec {
  std::string name;  // "x", "weight", "bias", "gamma", "running_var", "mask"...: checkpoint names
  Shape shape;
  DType dtype = DType::kF32;
  // Params and state only.
  Init init = Init::kNone;
  int64_t fan_in = 0, fan_out = 0;  // for kHeNormal / kGlorotUniform
  bool weight_decay = false;        // true for conv / fc weights, false for biases and BN parameters
};

struct OpSignature {
  std::vector<TensorSpec> inputs;  // as given to create(), names filled in
  std::vector<TensorSpec> params, state, outputs, saved;
  size_t workspace_bytes = 0;
  // 4-D tensors tagged with the other layout are rejected; kNone: any layout (element-wise ops).
  Layout activation_layout = Layout::kNCHW;
  bool has_backward = true;  // false for metrics (top_k)
  // Per input: false where no gradient exists (integer labels).
  std::vector<bool> input_has_grad;
  // The backward can add its input gradients into d_inputs (BackwardArgs::accumulate) instead of writing
  // them: a fan-out gradient then needs no buffer of its own and no summing pass (the CUDA convolution:
  // cuDNN's beta = 1).
  bool accumulates_input_grads = false;
  // An inference graph may give outputs[0] the buffer of this input (same shape and dtype) when this op
  // is its last reader; the kernel then finds outputs[0].raw() == inputs[k].raw() and must read that
  // input's values before writing over them. -1: never (the rule above: no aliasing). The fused
  // convolution with a residual sets it: oneDNN's sum post-op wants the residual in the output anyway.
  int output_may_take_input = -1;
  // The kernel multiplies in bfloat16: set by the CPU's batch-norm folds under precision bf16 (the
  // training graph's bf16 convolutions leave it unset); what `predict --precision bf16` counts, and
  // refuses to run without.
  bool multiplies_in_bf16 = false;
};

// Element-wise sums over the replicas (ranks) of a data-parallel job, for ops whose training step
// needs whole-batch statistics (synchronised batch norm). A collective: every replica calls it with
// the same count, in the same order, and all get the same sums. Null in the args: one replica.
class CrossReplicaSum {
 public:
  virtual ~CrossReplicaSum() = default;
  virtual void sum(std::span<double> values) = 0;
};

struct ForwardArgs {
  std::span<const Tensor> inputs;
  std::span<const Tensor> params;
  std::span<Tensor> state;
  std::span<Tensor> outputs;
  std::span<Tensor> saved;
  Tensor workspace;  // u8, at least workspace_bytes; may be undefined when workspace_bytes == 0
  bool training = false;
  // Randomness (dropout) is a pure function of (seed, step, element index): the same seed and step give
  // the same mask on any thread count and on CPU and CUDA. A layer passes a per-layer seed and the step.
  uint64_t seed = 0;
  uint64_t step = 0;
  // CUDA, a step captured into a CUDA graph (one graph replayed for every step): the step is read from
  // this device address by the kernels that use it (dropout, drop_path) instead of `step`, so the
  // captured launch arguments stay valid. Null: `step`.
  const uint64_t* device_step = nullptr;
  void* stream = nullptr;  // cudaStream_t for CUDA kernels; ignored on the CPU
  CrossReplicaSum* replicas = nullptr;  // training: statistics over every replica's batch (batch_norm)
  // Every write to params and state since the last forward went through a writable Tensor, so that
  // their Storage::write_count moved (an inference graph: it gives out no pointers to keep, as the
  // optimizer's ParamRefs are). A kernel may then keep what it derives from them (a weight reordered
  // for oneDNN) while their counts stay; when false it derives it again on every pass.
  bool params_write_counted = false;
};

struct BackwardArgs {
  std::span<const Tensor> inputs;
  std::span<const Tensor> params;
  std::span<const Tensor> state;
  std::span<const Tensor> outputs;
  std::span<const Tensor> saved;
  std::span<const Tensor> d_outputs;  // same shapes as outputs
  std::span<Tensor> d_inputs;         // same shapes as inputs; entries may be undefined
  std::span<Tensor> d_params;         // same shapes as params; entries may be undefined
  Tensor workspace;
  bool training = false;
  void* stream = nullptr;
  CrossReplicaSum* replicas = nullptr;  // as in the forward being differentiated
  // Bit s set: d_inputs[s] holds a gradient already and the backward adds input s's gradient to it
  // (only kernels whose signature says accumulates_input_grads).
  uint64_t accumulate = 0;
};

class OpKernel {
 public:
  explicit OpKernel(std::string op_name, Device device) : name_(std::move(op_name)), device_(device) {}
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  const std::string& name() const { return name_; }
  Device device() const { return device_; }
  const OpSignature& signature() const { return sig_; }

  // Validate every tensor against the signature (count, shape, dtype, device, layout), then compute.
  void forward(const ForwardArgs& a);
  void backward(const BackwardArgs& a);

  // The fuse_conv_bn rewrite (ops/fused.h), for a convolution followed by a batch norm that alone reads
  // its output: a convolution that can also write the output's per-channel sums in its own pass (cuDNN's
  // conv + statistics graph), and a batch norm whose training forward can start from them (no statistics
  // pass). The fused layer asks once, when it is made; the arguments are then already validated.
  // The workspace forward_with_channel_sums needs, or nullopt where this kernel has no such pass (default).
  virtual std::optional<size_t> channel_sums_workspace() { return std::nullopt; }
  // Training forward that also writes sums = [Σy (K), Σy² (K)], f32 over every axis but the channel, in
  // the kernel's device memory.
  virtual void forward_with_channel_sums(const ForwardArgs& a, float* sums);
  // A batch norm's training forward from its input's sums (as above) instead of its own statistics pass.
  virtual bool takes_channel_sums() const { return false; }
  virtual void forward_from_channel_sums(const ForwardArgs& a, const float* sums);

  // Graph::set_batch_size made this kernel for the layer `previous` computed at the old batch size: share
  // what `previous` derived from the parameters (a weight in oneDNN's format) where it fits, so that a
  // server whose batches vary does not derive it again for every size. Share, not take: the graph may
  // keep `previous` and run it again. Default: nothing to share.
  virtual void inherit_derived(OpKernel& previous) {}

 protected:
  virtual void run_forward(const ForwardArgs& a) = 0;
  virtual void run_backward(const BackwardArgs& a);  // default: throws (no backward)
  OpSignature sig_;  // filled by the subclass constructor

 private:
  std::string name_;
  Device device_;
};

// Creates a kernel for `attrs` and input specs (shapes + dtypes); throws ConfigError when invalid.
using KernelFactory =
    std::function<std::unique_ptr<OpKernel>(const Attrs& attrs, std::span<const TensorSpec> inputs)>;

// One input of a test case: float inputs get the compute dtype of the run and values uniform in
// [lo, hi); integer inputs (dtype i32/i64) get integers uniform in [0, int_high).
struct CaseInput {
  Shape shape;
  DType dtype = DType::kF32;
  int64_t int_high = 0;
  double lo = -1.0, hi = 1.0;
};

struct OpCase {
  std::string label;  // short, for test names: "k3s2_same_g2"
  Attrs attrs;
  std::vector<CaseInput> inputs;
  bool training = true;

  // Whether an input is 4-D: a case the NHWC kernel tests run (in both layouts).
  bool has_4d_input() const {
    for (const CaseInput& in : inputs)
      if (in.shape.size() == 4) return true;
    return false;
  }
};

struct OpDef {
  std::string name;
  std::string summary;  // one line, for `fastnn ops` style listings and error messages
  std::map<Device, KernelFactory> kernels;
  // Kernels that take NHWC activations (header comment "Layout"), by device; most ops have none.
  std::map<Device, KernelFactory> nhwc_kernels;
  // Small shapes (each case's forward must take well under a millisecond): every case is gradient
  // checked, so together they should cover every attribute (stride, padding modes, groups...).
  std::function<std::vector<OpCase>()> test_cases;
};

// A one-pass kernel for `first` followed by `then` (ops/fused.h: the fuse_ops rewrite), built from the two
// kernels the plan made; null when these particular kernels cannot be fused (the composite is used).
using FusionFactory = std::function<std::unique_ptr<OpKernel>(const OpKernel& first, const OpKernel& then)>;

// A convolution and the batch norm node that alone reads it (batch_norm, batch_norm+relu,
// batch_norm+relu6, batch_norm+add+relu), as an inference plan folds them (PlanOptions::fold_batch_norms):
// the two kernels the plan made, with their ops and attributes, and the convolution's NCHW input specs.
struct BatchNormFold {
  std::string_view conv_op;  // "conv2d", "depthwise_conv2d"
  const Attrs& conv_attrs;
  std::span<const TensorSpec> conv_nchw_inputs;
  const OpKernel& conv;
  std::string_view then_op;  // "batch_norm", "batch_norm+relu", ...
  const Attrs& batch_norm_attrs;
  const OpKernel& then;
  // Compute in bfloat16 (activations and folded weights rounded to it; f32 accumulation, bias and
  // output), PlanOptions::fold_in_bf16.
  bool bf16 = false;
  // PlanOptions::fold_job_images: the images the graph is to run in its life, 0 when unbounded.
  int64_t job_images = 0;
  // With bf16, activations that stay in bfloat16 between such folds (NetPlan::fold_batch_norms: a tensor a
  // bf16 fold writes and only bf16 folds read), so they are not rounded again by every layer: the
  // convolution's input, batch_norm+add+relu's residual, the output. All false: f32, as without bf16.
  struct Bf16Activations {
    bool input = false, residual = false, output = false;
    bool any() const { return input || residual || output; }
  } bf16_activations;
};
// An evaluation-only kernel computing the pair with the batch norm folded into the convolution's weights
// and bias. Its signature is the composite's (ops/fused.h) but for `saved`, which it has none of, and it
// has no backward. Null where it has none for these kernels (the plan keeps them).
using BatchNormFoldFactory = std::function<std::unique_ptr<OpKernel>(const BatchNormFold& fold)>;
// A one-input op's NHWC kernel reading bfloat16 activations in an inference plan (PlanOptions::fold_in_bf16,
// between bf16 folds): forward only, its output bf16 where `output_bf16` (pooling, whose values pass through
// exactly) else f32. It gets the NCHW input specs in f32, as an NHWC factory does; null where it has none
// (then the activation stays f32).
using Bf16InputFactory =
    std::function<std::unique_ptr<OpKernel>(const Attrs& attrs, std::span<const TensorSpec> nchw_inputs, bool output_bf16)>;

class OpRegistry {
 public:
  // Adds an op; throws Error if the name is taken or the def has no CPU kernel.
  void add(OpDef def);
  // Adds (or replaces) the kernel of an existing op for a device (the CUDA backend's entry point).
  void add_kernel(std::string_view name, Device device, KernelFactory factory);

  // Adds (or replaces) a device's kernel that takes NHWC activations; its factory gets the NCHW specs
  // and may return null where it has no kernel for them (the plan then uses the layout adapter).
  void add_nhwc_kernel(std::string_view name, Device device, KernelFactory factory);

  const OpDef* find(std::string_view name) const;
  const OpDef& get(std::string_view name) const;  // throws ConfigError listing the known ops
  std::vector<const OpDef*> all() const;          // sorted by name
  bool has_kernel(std::string_view name, Device device) const;

  // get(name).kernels[device](attrs, inputs), with the op name prefixed to any ConfigError.
  std::unique_ptr<OpKernel> create(std::string_view name, Device device, const Attrs& attrs,
                                   std::span<const TensorSpec> inputs) const;
  // The device's NHWC kernel for the NCHW input specs `nchw_inputs`, or null when the op has none for them.
  std::unique_ptr<OpKernel> create_nhwc(std::string_view name, Device device, const Attrs& attrs,
                                        std::span<const TensorSpec> nchw_inputs) const;

  // A device's one-pass kernel for op `first` followed by op `then` (e.g. batch_norm, relu on kCuda).
  void add_fusion(std::string_view first, std::string_view then, Device device, FusionFactory factory);
  // The registered fusion of these two kernels, or null (none registered, or the factory declined).
  std::unique_ptr<OpKernel> create_fusion(const OpKernel& first, const OpKernel& then) const;

  // A device's evaluation-only kernel for a convolution op and the batch norm after it, folded.
  void add_batch_norm_fold(std::string_view conv_op, Device device, BatchNormFoldFactory factory);
  // The registered fold for the conv kernel's device, or null (none, or the factory declined).
  std::unique_ptr<OpKernel> create_batch_norm_fold(const BatchNormFold& fold) const;

  // A device's kernel of op `name` that reads bf16 activations (Bf16InputFactory).
  void add_bf16_input_kernel(std::string_view name, Device device, Bf16InputFactory factory);
  bool has_bf16_input_kernel(std::string_view name, Device device) const;
  // Null where there is none, or none with that output type.
  std::unique_ptr<OpKernel> create_bf16_input_kernel(std::string_view name, Device device, const Attrs& attrs,
                                                     std::span<const TensorSpec> nchw_inputs, bool output_bf16) const;

 private:
  std::map<std::string, OpDef, std::less<>> ops_;
  std::map<std::string, FusionFactory, std::less<>> fusions_;  // "first+then@device"
  std::map<std::string, BatchNormFoldFactory, std::less<>> folds_;  // "conv_op@device"
  std::map<std::string, Bf16InputFactory, std::less<>> bf16_inputs_;  // "op@device"
};

// Every built-in op with its CPU kernel, listed explicitly in ops/builtin.cpp.
void register_builtin_ops(OpRegistry& registry);

}  // namespace fastnn::ops
