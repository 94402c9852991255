// avg_pool2d on CUDA (ops/avg_pool2d.h): custom kernels keep the CPU's asymmetric padding and both
// count_include_pad divisors (cuDNN pools only with symmetric padding). NHWC (add_nhwc_kernel): the same
// kernels over interleaved planes (Pool2dParams::nhwc).
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/avg_pool2d.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace {

template <typename T>
class AvgPool2dCuda final : public OpKernel {
 public:
  AvgPool2dCuda(OpSignature sig, const Pool2dParams& p) : OpKernel("avg_pool2d", Device::kCuda), p_(p) {
    sig_ = std::move(sig);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::avg_pool2d_forward<T>(p_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]), gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::avg_pool2d_backward<T>(p_, gpu::ptr<T>(a.d_outputs[0]), gpu::ptr<T>(a.d_inputs[0]), gpu::stream_of(a));
  }

 private:
  Pool2dParams p_;
};

}  // namespace

void register_avg_pool2d_cuda(OpRegistry& r) {
  r.add_kernel("avg_pool2d", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "avg_pool2d")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("avg_pool2d", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 return gpu::make_cuda_kernel<AvgPool2dCuda>(dt, std::move(sig),
                                                              pool2d_params("avg_pool2d", a, in, true));
               });
  r.add_nhwc_kernel("avg_pool2d", Device::kCuda,
                    [cpu = gpu::cpu_factory(r, "avg_pool2d")](const Attrs& a, std::span<const TensorSpec> in) {
                      const DType dt = gpu::cuda_compute_dtype("avg_pool2d", in);
                      Pool2dParams p = pool2d_params("avg_pool2d", a, in, true);
                      p.nhwc = true;
                      return gpu::make_cuda_kernel<AvgPool2dCuda>(dt, nhwc_signature(gpu::cuda_signature(cpu, a, in, dt)), p);
                    });
}

}  // namespace fastnn::ops
