// scale on CUDA (ops/scale.h): y = scale * x; backward dx = scale * dy.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/scale.h"

namespace fastnn::ops {
namespace {

template <typename T>
class ScaleCuda final : public OpKernel {
 public:
  ScaleCuda(OpSignature sig, float scale) : OpKernel("scale", Device::kCuda), scale_(scale) { sig_ = std::move(sig); }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::scale_forward<T>(a.inputs[0].numel(), scale_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]),
                           gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::scale_forward<T>(a.d_outputs[0].numel(), scale_, gpu::ptr<T>(a.d_outputs[0]), gpu::ptr<T>(a.d_inputs[0]),
                           gpu::stream_of(a));
  }

 private:
  float scale_;
};

}  // namespace

void register_scale_cuda(OpRegistry& r) {
  r.add_kernel("scale", Device::kCuda, [cpu = gpu::cpu_factory(r, "scale")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("scale", in);
    OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
    return gpu::make_cuda_kernel<ScaleCuda>(dt, std::move(sig), static_cast<float>(a.get_float("scale", "scale", 1.0)));
  });
}

}  // namespace fastnn::ops
