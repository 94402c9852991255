// max_pool2d on CUDA (ops/max_pool2d.h): custom kernels keep the CPU's asymmetric padding and
// first-maximum tie rule; the backward recomputes the argmax from x like the CPU (no saved indices), once
// per window into the workspace (one byte each), then gathers per input. NHWC
// (add_nhwc_kernel): the same kernels over interleaved planes (Pool2dParams::nhwc).
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/max_pool2d.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace {

template <typename T>
class MaxPool2dCuda final : public OpKernel {
 public:
  MaxPool2dCuda(OpSignature sig, const Pool2dParams& p) : OpKernel("max_pool2d", Device::kCuda), p_(p) {
    sig_ = std::move(sig);
    sig_.workspace_bytes = gpu::max_pool2d_workspace_bytes(p_);
    // The backward can add into x's gradient (BackwardArgs::accumulate): where x has another consumer
    // whose gradient came first, no scratch buffer and no add pass (ResNet's stride-2 shortcut pools).
    sig_.accumulates_input_grads = true;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::max_pool2d_forward<T>(p_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]), gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::max_pool2d_backward<T>(p_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.d_outputs[0]),
                                 gpu::ptr<T>(a.d_inputs[0]), const_cast<void*>(a.workspace.raw()), gpu::stream_of(a),
                                 (a.accumulate & 1) != 0);
  }

 private:
  Pool2dParams p_;
};

}  // namespace

void register_max_pool2d_cuda(OpRegistry& r) {
  r.add_kernel("max_pool2d", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "max_pool2d")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("max_pool2d", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 return gpu::make_cuda_kernel<MaxPool2dCuda>(dt, std::move(sig),
                                                              pool2d_params("max_pool2d", a, in, false));
               });
  r.add_nhwc_kernel("max_pool2d", Device::kCuda,
                    [cpu = gpu::cpu_factory(r, "max_pool2d")](const Attrs& a, std::span<const TensorSpec> in) {
                      const DType dt = gpu::cuda_compute_dtype("max_pool2d", in);
                      Pool2dParams p = pool2d_params("max_pool2d", a, in, false);
                      p.nhwc = true;
                      return gpu::make_cuda_kernel<MaxPool2dCuda>(dt, nhwc_signature(gpu::cuda_signature(cpu, a, in, dt)), p);
                    });
}

}  // namespace fastnn::ops
