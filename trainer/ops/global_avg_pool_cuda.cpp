// global_avg_pool on CUDA (ops/global_avg_pool.h): one warp per plane forward, elementwise backward.
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/global_avg_pool.h"

namespace fastnn::ops {
namespace {

template <typename T>
class GlobalAvgPoolCuda final : public OpKernel {
 public:
  explicit GlobalAvgPoolCuda(OpSignature sig) : OpKernel("global_avg_pool", Device::kCuda) {
    sig_ = std::move(sig);
    const Shape& x = sig_.inputs[0].shape;
    planes_ = x[0] * x[1];
    hw_ = x[2] * x[3];
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cuda::global_avg_pool_forward<T>(planes_, hw_, cuda::ptr<T>(a.inputs[0]), cuda::ptr<T>(a.outputs[0]),
                                     cuda::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    cuda::global_avg_pool_backward<T>(planes_, hw_, cuda::ptr<T>(a.d_outputs[0]), cuda::ptr<T>(a.d_inputs[0]),
                                      cuda::stream_of(a));
  }

 private:
  int64_t planes_ = 0, hw_ = 0;
};

}  // namespace

void register_global_avg_pool_cuda(OpRegistry& r) {
  r.add_kernel("global_avg_pool", Device::kCuda,
               [cpu = cuda::cpu_factory(r, "global_avg_pool")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = cuda::cuda_compute_dtype("global_avg_pool", in);
                 return cuda::make_cuda_kernel<GlobalAvgPoolCuda>(dt, cuda::cuda_signature(cpu, a, in, dt));
               });
}

}  // namespace fastnn::ops
