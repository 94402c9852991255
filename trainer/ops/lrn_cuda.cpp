// lrn on CUDA (ops/lrn.h): custom kernels (cuDNN's LRN caps the window at 16 channels, divides alpha
// by the window and does not return the `scale` tensor the backward reads). Workspace: N*C*H*W floats.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/lrn.h"

namespace fastnn::ops {
namespace {

template <typename T>
class LrnCuda final : public OpKernel {
 public:
  LrnCuda(OpSignature sig, const LrnParams& p) : OpKernel("lrn", Device::kCuda), p_(p) {
    sig_ = std::move(sig);
    sig_.workspace_bytes = static_cast<size_t>(p.n * p.c * p.hw) * sizeof(float);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::lrn_forward<T>(p_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]), gpu::ptr<T>(a.saved[0]),
                         gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::lrn_backward<T>(p_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.saved[0]), gpu::ptr<T>(a.d_outputs[0]),
                          gpu::ptr<T>(a.d_inputs[0]), gpu::ptr<float>(a.workspace), gpu::stream_of(a));
  }

 private:
  LrnParams p_;
};

}  // namespace

void register_lrn_cuda(OpRegistry& r) {
  r.add_kernel("lrn", Device::kCuda, [cpu = gpu::cpu_factory(r, "lrn")](const Attrs& a, std::span<const TensorSpec> in) {
    constexpr std::string_view op = "lrn";
    const DType dt = gpu::cuda_compute_dtype(op, in);
    OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);  // validates, as the CPU factory does
    return gpu::make_cuda_kernel<LrnCuda>(dt, std::move(sig), lrn_params(a, in));
  });
}

}  // namespace fastnn::ops
