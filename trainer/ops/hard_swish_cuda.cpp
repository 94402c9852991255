// hard_swish on CUDA (ops/hard_swish.h): the elementwise kernels of elementwise_kernels.cu each way;
// y may alias x, dx may alias dy.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/hard_swish.h"

namespace fastnn::ops {
namespace {

template <typename T>
class HardSwishCuda final : public OpKernel {
 public:
  explicit HardSwishCuda(OpSignature sig) : OpKernel("hard_swish", Device::kCuda) { sig_ = std::move(sig); }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::hard_swish_forward<T>(a.inputs[0].numel(), gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]),
                                gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::hard_swish_backward<T>(a.inputs[0].numel(), gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.d_outputs[0]),
                                 gpu::ptr<T>(a.d_inputs[0]), gpu::stream_of(a));
  }
};

}  // namespace

void register_hard_swish_cuda(OpRegistry& r) {
  r.add_kernel("hard_swish", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "hard_swish")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("hard_swish", in);
                 return gpu::make_cuda_kernel<HardSwishCuda>(dt, gpu::cuda_signature(cpu, a, in, dt));
               });
}

}  // namespace fastnn::ops
