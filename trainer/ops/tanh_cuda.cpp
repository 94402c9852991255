// tanh on CUDA (ops/tanh.h): outer * tanh(inner * x) elementwise; backward from y.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/tanh.h"

namespace fastnn::ops {
namespace {

template <typename T>
class TanhCuda final : public OpKernel {
 public:
  TanhCuda(OpSignature sig, float outer, float inner) : OpKernel("tanh", Device::kCuda), outer_(outer), inner_(inner) {
    sig_ = std::move(sig);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::tanh_forward<T>(a.inputs[0].numel(), outer_, inner_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]),
                          gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::tanh_backward<T>(a.outputs[0].numel(), outer_, inner_, gpu::ptr<T>(a.outputs[0]),
                           gpu::ptr<T>(a.d_outputs[0]), gpu::ptr<T>(a.d_inputs[0]), gpu::stream_of(a));
  }

 private:
  float outer_, inner_;
};

}  // namespace

void register_tanh_cuda(OpRegistry& r) {
  r.add_kernel("tanh", Device::kCuda, [cpu = gpu::cpu_factory(r, "tanh")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("tanh", in);
    OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);  // validates the attributes first
    return gpu::make_cuda_kernel<TanhCuda>(dt, std::move(sig), static_cast<float>(a.get_float("tanh", "outer", 1.0)),
                                            static_cast<float>(a.get_float("tanh", "inner", 1.0)));
  });
}

}  // namespace fastnn::ops
