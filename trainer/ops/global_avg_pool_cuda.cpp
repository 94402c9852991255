// global_avg_pool on CUDA (ops/global_avg_pool.h): one warp per plane forward, elementwise backward;
// NHWC (add_nhwc_kernel): one thread per (sample, channel) forward, elementwise backward.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/global_avg_pool.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace {

template <typename T>
class GlobalAvgPoolCuda final : public OpKernel {
 public:
  explicit GlobalAvgPoolCuda(OpSignature sig) : OpKernel("global_avg_pool", Device::kCuda) {
    sig_ = std::move(sig);
    const Shape& x = sig_.inputs[0].shape;
    nhwc_ = sig_.activation_layout == Layout::kNHWC;
    n_ = x[0];
    c_ = nhwc_ ? x[3] : x[1];
    hw_ = nhwc_ ? x[1] * x[2] : x[2] * x[3];
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const T* x = gpu::ptr<T>(a.inputs[0]);
    T* y = gpu::ptr<T>(a.outputs[0]);
    if (nhwc_) gpu::global_avg_pool_forward_nhwc<T>(n_, hw_, c_, x, y, gpu::stream_of(a));
    else gpu::global_avg_pool_forward<T>(n_ * c_, hw_, x, y, gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    const T* dy = gpu::ptr<T>(a.d_outputs[0]);
    T* dx = gpu::ptr<T>(a.d_inputs[0]);
    if (nhwc_) gpu::global_avg_pool_backward_nhwc<T>(n_, hw_, c_, dy, dx, gpu::stream_of(a));
    else gpu::global_avg_pool_backward<T>(n_ * c_, hw_, dy, dx, gpu::stream_of(a));
  }

 private:
  bool nhwc_ = false;
  int64_t n_ = 0, c_ = 0, hw_ = 0;
};

}  // namespace

void register_global_avg_pool_cuda(OpRegistry& r) {
  r.add_kernel("global_avg_pool", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "global_avg_pool")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("global_avg_pool", in);
                 return gpu::make_cuda_kernel<GlobalAvgPoolCuda>(dt, gpu::cuda_signature(cpu, a, in, dt));
               });
  r.add_nhwc_kernel("global_avg_pool", Device::kCuda,
                    [cpu = gpu::cpu_factory(r, "global_avg_pool")](const Attrs& a, std::span<const TensorSpec> in) {
                      const DType dt = gpu::cuda_compute_dtype("global_avg_pool", in);
                      return gpu::make_cuda_kernel<GlobalAvgPoolCuda>(
                          dt, nhwc_signature(gpu::cuda_signature(cpu, a, in, dt)));
                    });
}

}  // namespace fastnn::ops
