// relu on CUDA (ops/relu.h): one elementwise kernel each way; y may alias x, dx may alias dy.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/relu.h"

namespace fastnn::ops {
namespace {

template <typename T>
class ReluCuda final : public OpKernel {
 public:
  explicit ReluCuda(OpSignature sig) : OpKernel("relu", Device::kCuda) { sig_ = std::move(sig); }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::relu_forward<T>(a.inputs[0].numel(), gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]), gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::relu_backward<T>(a.outputs[0].numel(), gpu::ptr<T>(a.outputs[0]), gpu::ptr<T>(a.d_outputs[0]),
                           gpu::ptr<T>(a.d_inputs[0]), gpu::stream_of(a));
  }
};

}  // namespace

void register_relu_cuda(OpRegistry& r) {
  r.add_kernel("relu", Device::kCuda, [cpu = gpu::cpu_factory(r, "relu")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("relu", in);
    return gpu::make_cuda_kernel<ReluCuda>(dt, gpu::cuda_signature(cpu, a, in, dt));
  });
}

}  // namespace fastnn::ops
