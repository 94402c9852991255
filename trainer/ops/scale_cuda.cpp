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
    cuda::scale_forward<T>(a.inputs[0].numel(), scale_, cuda::ptr<T>(a.inputs[0]), cuda::ptr<T>(a.outputs[0]),
                           cuda::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    cuda::scale_forward<T>(a.d_outputs[0].numel(), scale_, cuda::ptr<T>(a.d_outputs[0]), cuda::ptr<T>(a.d_inputs[0]),
                           cuda::stream_of(a));
  }

 private:
  float scale_;
};

}  // namespace

void register_scale_cuda(OpRegistry& r) {
  r.add_kernel("scale", Device::kCuda, [cpu = cuda::cpu_factory(r, "scale")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = cuda::cuda_compute_dtype("scale", in);
    OpSignature sig = cuda::cuda_signature(cpu, a, in, dt);
    return cuda::make_cuda_kernel<ScaleCuda>(dt, std::move(sig), static_cast<float>(a.get_float("scale", "scale", 1.0)));
  });
}

}  // namespace fastnn::ops
