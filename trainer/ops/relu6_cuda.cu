// relu6 on CUDA (ops/relu6.h): one elementwise kernel each way and the OpKernel glue in one .cu (the
// op's own file, docs/ARCHITECTURE.md "Recipes", "An op"); y may alias x, dx may alias dy.
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/relu6.h"

namespace fastnn::ops {
namespace gpu {

using namespace cuda;  // device_util.cuh

namespace {

template <typename T>
__global__ void relu6_fwd_kernel(int64_t count, const T* x, T* y) {
  FASTNN_GRID_LOOP(i, count) {
    const float v = to_f(x[i]);
    y[i] = v <= 0.f ? from_f<T>(0.f) : (v >= 6.f ? from_f<T>(6.f) : x[i]);
  }
}

template <typename T>
__global__ void relu6_bwd_kernel(int64_t count, const T* y, const T* dy, T* dx) {
  FASTNN_GRID_LOOP(i, count) {
    const float v = to_f(y[i]);
    dx[i] = v > 0.f && v < 6.f ? dy[i] : from_f<T>(0.f);
  }
}

}  // namespace

template <typename T>
void relu6_forward(int64_t count, const T* x, T* y, cudaStream_t s) {
  if (count == 0) return;
  relu6_fwd_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void relu6_backward(int64_t count, const T* y, const T* dy, T* dx, cudaStream_t s) {
  if (count == 0) return;
  relu6_bwd_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, y, dy, dx);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(T)                                                \
  template void relu6_forward<T>(int64_t, const T*, T*, cudaStream_t);       \
  template void relu6_backward<T>(int64_t, const T*, const T*, T*, cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace gpu

namespace {

template <typename T>
class Relu6Cuda final : public OpKernel {
 public:
  explicit Relu6Cuda(OpSignature sig) : OpKernel("relu6", Device::kCuda) { sig_ = std::move(sig); }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::relu6_forward<T>(a.inputs[0].numel(), gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]),
                           gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::relu6_backward<T>(a.outputs[0].numel(), gpu::ptr<T>(a.outputs[0]), gpu::ptr<T>(a.d_outputs[0]),
                            gpu::ptr<T>(a.d_inputs[0]), gpu::stream_of(a));
  }
};

}  // namespace

void register_relu6_cuda(OpRegistry& r) {
  r.add_kernel("relu6", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "relu6")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("relu6", in);
                 return gpu::make_cuda_kernel<Relu6Cuda>(dt, gpu::cuda_signature(cpu, a, in, dt));
               });
}

}  // namespace fastnn::ops
