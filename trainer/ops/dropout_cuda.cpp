// dropout on CUDA (ops/dropout.h): the mask is the CPU's bit for bit (Philox of seed, step, index).
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/dropout.h"

namespace fastnn::ops {
namespace {

template <typename T>
class DropoutCuda final : public OpKernel {
 public:
  DropoutCuda(OpSignature sig, double rate) : OpKernel("dropout", Device::kCuda), rate_(rate) { sig_ = std::move(sig); }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const Tensor& x = a.inputs[0];
    Tensor& y = a.outputs[0];
    const cudaStream_t s = gpu::stream_of(a);
    if (a.training && a.device_step)  // a captured CUDA graph: the step from device memory
      gpu::dropout_forward<T>(x.numel(), rate_, a.seed, a.device_step, gpu::ptr<T>(x), gpu::ptr<T>(y),
                               gpu::ptr<uint8_t>(a.saved[0]), s);
    else if (a.training)
      gpu::dropout_forward<T>(x.numel(), rate_, a.seed, a.step, gpu::ptr<T>(x), gpu::ptr<T>(y),
                               gpu::ptr<uint8_t>(a.saved[0]), s);
    else if (y.raw() != x.raw() && x.nbytes())
      CUDA_CHECK(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, s));
  }
  void run_backward(const BackwardArgs& a) override {
    Tensor& dx = a.d_inputs[0];
    if (!dx.defined()) return;
    const Tensor& dy = a.d_outputs[0];
    const cudaStream_t s = gpu::stream_of(a);
    if (a.training)
      gpu::dropout_backward<T>(dy.numel(), rate_, gpu::ptr<uint8_t>(a.saved[0]), gpu::ptr<T>(dy), gpu::ptr<T>(dx), s);
    else if (dx.raw() != dy.raw() && dy.nbytes())
      CUDA_CHECK(cudaMemcpyAsync(dx.raw(), dy.raw(), dy.nbytes(), cudaMemcpyDeviceToDevice, s));
  }

 private:
  double rate_;
};

}  // namespace

void register_dropout_cuda(OpRegistry& r) {
  r.add_kernel("dropout", Device::kCuda, [cpu = gpu::cpu_factory(r, "dropout")](const Attrs& a, std::span<const TensorSpec> in) {
    const DType dt = gpu::cuda_compute_dtype("dropout", in);
    OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
    return gpu::make_cuda_kernel<DropoutCuda>(dt, std::move(sig), a.get_float("dropout", "rate", 0.5));
  });
}

}  // namespace fastnn::ops
