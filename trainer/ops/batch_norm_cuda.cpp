// batch_norm on CUDA (ops/batch_norm.h): custom kernels, not cuDNN's legacy batch norm, because
// epsilon may be below CUDNN_BN_MIN_EPSILON and the eval-mode backward (frozen statistics) has no cuDNN
// call. Under f16/bf16 the parameters, running statistics and saved statistics stay f32 (the signature
// says so; the graph allocates them f32 and the step runner keeps no separate master copy of them), as
// in cuDNN and PyTorch's AMP: a running variance or a small gamma update in f16 loses what the CPU keeps. Statistics are sums in double over many
// blocks per channel (shifted by the running mean), with the CPU's formulas (biased variance to
// normalise, unbiased for running_var, momentum = weight of the old value). Workspace: the per-run
// partial sums and the backward's 2*C coefficients (batch_norm_kernels.cu, batch_norm_workspace_bytes).
//
// NHWC (add_nhwc_kernel): the same kernels on the activation seen as [N*H*W, C] rows (BatchNormParams
// {N*H*W, C, 1}), where the statistics' sums take 32 neighbouring channels per block (batch_norm_kernels.cu);
// the batch_norm+relu fusion applies as it is.
//
// fuse_conv_bn (op.h's channel sums): each of the three kernels' training forward can start from the
// sums Σx, Σx² that the convolution before wrote in its epilogue (batch_norm_forward_from_sums): the
// statistics pass over x goes; the finishing formulas and the normalise pass are the same.
#include "core/check.h"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/batch_norm.h"
#include "trainer/ops/fused.h"
#include "trainer/ops/layout_adapter.h"
#include "trainer/ops/relu.h"

namespace fastnn::ops {
namespace {

// fuse_conv_bn (op.h): the training forward from the sums the convolution before wrote, for the three
// kernels below; r: the residual of batch_norm+add+relu, or null.
template <typename T>
void forward_from_sums(const BatchNormParams& p, const ForwardArgs& a, const float* sums, const T* r, BnActivation act) {
  FASTNN_CHECK(a.training && a.replicas == nullptr, "batch_norm: channel sums are for a one-replica training step");
  gpu::batch_norm_forward_from_sums<T>(p, sums, gpu::ptr<T>(a.inputs[0]), r, gpu::ptr<float>(a.params[0]),
                                        gpu::ptr<float>(a.params[1]), gpu::ptr<float>(a.state[0]),
                                        gpu::ptr<float>(a.state[1]), gpu::ptr<T>(a.outputs[0]),
                                        gpu::ptr<float>(a.saved[0]), gpu::ptr<float>(a.saved[1]), gpu::stream_of(a),
                                        act);
}

template <typename T>
class BatchNormCuda final : public OpKernel {
 public:
  BatchNormCuda(OpSignature sig, const BatchNormParams& p) : OpKernel("batch_norm", Device::kCuda), p_(p) {
    sig_ = std::move(sig);
    for (auto* group : {&sig_.params, &sig_.state, &sig_.saved})
      for (TensorSpec& t : *group) t.dtype = DType::kF32;
    sig_.workspace_bytes = gpu::batch_norm_workspace_bytes(p);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    // The GPU loop refuses sync_batch_norm before training (trainer/loop/capabilities.cpp).
    FASTNN_CHECK(a.replicas == nullptr || !a.training, "batch_norm: synchronised batch norm is CPU-only");
    const T* x = gpu::ptr<T>(a.inputs[0]);
    const float *gamma = gpu::ptr<float>(a.params[0]), *beta = gpu::ptr<float>(a.params[1]);
    float *rm = gpu::ptr<float>(a.state[0]), *rv = gpu::ptr<float>(a.state[1]);
    T* y = gpu::ptr<T>(a.outputs[0]);
    float *mean = gpu::ptr<float>(a.saved[0]), *invstd = gpu::ptr<float>(a.saved[1]);
    if (a.training)
      gpu::batch_norm_forward_training<T>(p_, x, gamma, beta, rm, rv, y, mean, invstd,
                                           const_cast<void*>(a.workspace.raw()), gpu::stream_of(a));
    else
      gpu::batch_norm_forward_inference<T>(p_, x, gamma, beta, rm, rv, y, mean, invstd, gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    T* dx = gpu::ptr<T>(a.d_inputs[0]);
    float *dgamma = gpu::ptr<float>(a.d_params[0]), *dbeta = gpu::ptr<float>(a.d_params[1]);
    if (!dx && !dgamma && !dbeta) return;
    gpu::batch_norm_backward<T>(p_, a.training, gpu::ptr<T>(a.inputs[0]), gpu::ptr<float>(a.params[0]),
                                 gpu::ptr<float>(a.saved[0]), gpu::ptr<float>(a.saved[1]),
                                 gpu::ptr<T>(a.d_outputs[0]), dx, dgamma, dbeta, const_cast<void*>(a.workspace.raw()),
                                 gpu::stream_of(a));
  }

 public:
  const BatchNormParams& params() const { return p_; }
  bool takes_channel_sums() const override { return true; }
  void forward_from_channel_sums(const ForwardArgs& a, const float* sums) override {
    forward_from_sums<T>(p_, a, sums, nullptr, BnActivation::kNone);
  }

 private:
  BatchNormParams p_;
};

// relu(batch_norm(x)) or relu6(batch_norm(x)) as one layer (the fuse_ops rewrite): batch_norm's inputs,
// params, state and saved statistics, the activation's output; no intermediate tensor is written or
// saved (the composite of ops/fused.h saves z and dz, two more activations). Bitwise the composite of
// the two CUDA kernels.
template <typename T>
class BatchNormReluCuda final : public OpKernel {
 public:
  BatchNormReluCuda(const OpSignature& bn, const OpSignature& relu, const BatchNormParams& p, BnActivation act)
      : OpKernel(act == BnActivation::kRelu6 ? "batch_norm+relu6" : "batch_norm+relu", Device::kCuda),
        p_(p),
        act_(act) {
    sig_ = fused_activation_signature(bn, relu);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    FASTNN_CHECK(a.replicas == nullptr || !a.training, "batch_norm: synchronised batch norm is CPU-only");
    gpu::batch_norm_relu_forward<T>(p_, a.training, gpu::ptr<T>(a.inputs[0]), gpu::ptr<float>(a.params[0]),
                                     gpu::ptr<float>(a.params[1]), gpu::ptr<float>(a.state[0]),
                                     gpu::ptr<float>(a.state[1]), gpu::ptr<T>(a.outputs[0]),
                                     gpu::ptr<float>(a.saved[0]), gpu::ptr<float>(a.saved[1]),
                                     const_cast<void*>(a.workspace.raw()), gpu::stream_of(a), act_);
  }
  void run_backward(const BackwardArgs& a) override {
    T* dx = gpu::ptr<T>(a.d_inputs[0]);
    float *dgamma = gpu::ptr<float>(a.d_params[0]), *dbeta = gpu::ptr<float>(a.d_params[1]);
    if (!dx && !dgamma && !dbeta) return;
    gpu::batch_norm_relu_backward<T>(p_, a.training, gpu::ptr<T>(a.inputs[0]), gpu::ptr<float>(a.params[0]),
                                      gpu::ptr<float>(a.saved[0]), gpu::ptr<float>(a.saved[1]),
                                      gpu::ptr<T>(a.outputs[0]), gpu::ptr<T>(a.d_outputs[0]), dx, dgamma, dbeta,
                                      const_cast<void*>(a.workspace.raw()), gpu::stream_of(a), act_,
                                      gpu::ptr<float>(a.params[1]));  // beta: the mask from x, not y
  }

 public:
  bool takes_channel_sums() const override { return true; }
  void forward_from_channel_sums(const ForwardArgs& a, const float* sums) override {
    forward_from_sums<T>(p_, a, sums, nullptr, act_);
  }

 private:
  BatchNormParams p_;
  BnActivation act_;
};

// relu(batch_norm(x) + r) as one layer (the fuse_ops rewrite of a residual unit's end: batch_norm into the
// add+relu after it). Inputs x, then the other addend r (the composite's order, whichever add input the
// batch norm fed: the sum is the same either way round); batch_norm's params, state and saved statistics;
// add+relu's output. Forward: one pass writes y without the normalised z (the composite writes z, then
// reads it back with r). Backward: the relu's gradient is written once, into r's gradient, and batch
// norm's backward reads it there (the composite writes it twice: into r's gradient and its own dz).
// Bitwise the composite of the CUDA kernels.
template <typename T>
class BatchNormAddReluCuda final : public OpKernel {
 public:
  BatchNormAddReluCuda(const OpSignature& bn, const OpSignature& add_relu, const BatchNormParams& p)
      : OpKernel("batch_norm+add+relu", Device::kCuda), p_(p) {
    sig_ = fused_add_relu_signature(bn, add_relu);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    FASTNN_CHECK(a.replicas == nullptr || !a.training, "batch_norm: synchronised batch norm is CPU-only");
    gpu::batch_norm_add_relu_forward<T>(p_, a.training, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.inputs[1]),
                                         gpu::ptr<float>(a.params[0]), gpu::ptr<float>(a.params[1]),
                                         gpu::ptr<float>(a.state[0]), gpu::ptr<float>(a.state[1]),
                                         gpu::ptr<T>(a.outputs[0]), gpu::ptr<float>(a.saved[0]),
                                         gpu::ptr<float>(a.saved[1]), const_cast<void*>(a.workspace.raw()),
                                         gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    const T *x = gpu::ptr<T>(a.inputs[0]), *y = gpu::ptr<T>(a.outputs[0]), *dy = gpu::ptr<T>(a.d_outputs[0]);
    T *dx = gpu::ptr<T>(a.d_inputs[0]), *dr = gpu::ptr<T>(a.d_inputs[1]);
    const float* gamma = gpu::ptr<float>(a.params[0]);
    const float *mean = gpu::ptr<float>(a.saved[0]), *invstd = gpu::ptr<float>(a.saved[1]);
    float *dgamma = gpu::ptr<float>(a.d_params[0]), *dbeta = gpu::ptr<float>(a.d_params[1]);
    void* ws = const_cast<void*>(a.workspace.raw());
    const bool bn_grads = dx || dgamma || dbeta;
    if (dr) {  // dz = dy where y > 0: r's gradient, and batch norm's incoming one
      gpu::relu_backward<T>(a.outputs[0].numel(), y, dy, dr, s);
      if (bn_grads) gpu::batch_norm_backward<T>(p_, a.training, x, gamma, mean, invstd, dr, dx, dgamma, dbeta, ws, s);
    } else if (bn_grads) {
      gpu::batch_norm_relu_backward<T>(p_, a.training, x, gamma, mean, invstd, y, dy, dx, dgamma, dbeta, ws, s);
    }
  }

 public:
  bool takes_channel_sums() const override { return true; }
  void forward_from_channel_sums(const ForwardArgs& a, const float* sums) override {
    forward_from_sums<T>(p_, a, sums, gpu::ptr<T>(a.inputs[1]), BnActivation::kRelu);
  }

 private:
  BatchNormParams p_;
};

template <typename T>
std::unique_ptr<OpKernel> fuse_with_add_relu(const OpKernel& first, const OpKernel& then) {
  const auto* bn = dynamic_cast<const BatchNormCuda<T>*>(&first);
  if (!bn) return nullptr;
  return std::make_unique<BatchNormAddReluCuda<T>>(bn->signature(), then.signature(), bn->params());
}

template <typename T>
std::unique_ptr<OpKernel> fuse_with_relu(const OpKernel& first, const OpKernel& then, BnActivation act) {
  const auto* bn = dynamic_cast<const BatchNormCuda<T>*>(&first);
  if (!bn) return nullptr;
  return std::make_unique<BatchNormReluCuda<T>>(bn->signature(), then.signature(), bn->params(), act);
}

}  // namespace

void register_batch_norm_cuda(OpRegistry& r) {
  r.add_kernel("batch_norm", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "batch_norm")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("batch_norm", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 return gpu::make_cuda_kernel<BatchNormCuda>(dt, std::move(sig), batch_norm_params(a, in));
               });
  r.add_nhwc_kernel("batch_norm", Device::kCuda,
                    [cpu = gpu::cpu_factory(r, "batch_norm")](const Attrs& a, std::span<const TensorSpec> in) {
                      const DType dt = gpu::cuda_compute_dtype("batch_norm", in);
                      BatchNormParams p = batch_norm_params(a, in);
                      p.n *= p.hw;  // rows of channels (a rank-2 input already is)
                      p.hw = 1;
                      return gpu::make_cuda_kernel<BatchNormCuda>(
                          dt, nhwc_signature(gpu::cuda_signature(cpu, a, in, dt)), p);
                    });
  for (const auto& [then_op, act] : {std::pair{"relu", BnActivation::kRelu}, std::pair{"relu6", BnActivation::kRelu6}}) {
    r.add_fusion("batch_norm", then_op, Device::kCuda, [act](const OpKernel& first, const OpKernel& then) {
      if (!chains_into_activation(first.signature(), then.signature())) return std::unique_ptr<OpKernel>();
      if (auto k = fuse_with_relu<float>(first, then, act)) return k;
      if (auto k = fuse_with_relu<__half>(first, then, act)) return k;
      return fuse_with_relu<__nv_bfloat16>(first, then, act);
    });
  }
  // A batch_norm into a two-input add+relu (either of the add's one-pass kernel or the composite: both
  // compute relu(a + b) with the sum rounded to T). The fused layer's inputs are the batch norm's x and
  // the other addend; the sum does not depend on which add input the batch norm fed.
  r.add_fusion("batch_norm", "add+relu", Device::kCuda, [](const OpKernel& first, const OpKernel& then) {
    if (!chains_into_add_relu(first.signature(), then.signature())) return std::unique_ptr<OpKernel>();
    if (auto k = fuse_with_add_relu<float>(first, then)) return k;
    if (auto k = fuse_with_add_relu<__half>(first, then)) return k;
    return fuse_with_add_relu<__nv_bfloat16>(first, then);
  });
}

}  // namespace fastnn::ops
