// spatial_shift on CUDA (ops/spatial_shift.h): one gather kernel, used both ways (backward shifts back).
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/spatial_shift.h"

namespace fastnn::ops {
namespace gpu {

using namespace cuda;  // device_util.cuh

namespace {

template <typename T>
__global__ void spatial_shift_kernel(int64_t total, int64_t h, int64_t w, int64_t sy, int64_t sx, const T* x, T* y) {
  FASTNN_GRID_LOOP(idx, total) {
    const int64_t j = idx % w, i = (idx / w) % h, p = idx / (w * h);
    const int64_t si = i + sy, sj = j + sx;
    y[idx] = si >= 0 && si < h && sj >= 0 && sj < w ? x[(p * h + si) * w + sj] : from_f<T>(0.f);
  }
}

}  // namespace

template <typename T>
void spatial_shift(int64_t planes, int64_t h, int64_t w, int64_t sy, int64_t sx, const T* x, T* y, cudaStream_t s) {
  const int64_t total = planes * h * w;
  if (total == 0) return;
  spatial_shift_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, h, w, sy, sx, x, y);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(T) \
  template void spatial_shift<T>(int64_t, int64_t, int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace gpu

namespace {

template <typename T>
class SpatialShiftCuda final : public OpKernel {
 public:
  SpatialShiftCuda(OpSignature sig, int64_t sy, int64_t sx) : OpKernel("spatial_shift", Device::kCuda), sy_(sy), sx_(sx) {
    sig_ = std::move(sig);
    const Shape& x = sig_.inputs[0].shape;
    planes_ = x[0] * x[1];
    h_ = x[2];
    w_ = x[3];
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::spatial_shift<T>(planes_, h_, w_, sy_, sx_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.outputs[0]),
                           gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    gpu::spatial_shift<T>(planes_, h_, w_, -sy_, -sx_, gpu::ptr<T>(a.d_outputs[0]), gpu::ptr<T>(a.d_inputs[0]),
                           gpu::stream_of(a));
  }

 private:
  int64_t sy_, sx_, planes_ = 0, h_ = 0, w_ = 0;
};

}  // namespace

void register_spatial_shift_cuda(OpRegistry& r) {
  r.add_kernel("spatial_shift", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "spatial_shift")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("spatial_shift", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 return gpu::make_cuda_kernel<SpatialShiftCuda>(dt, std::move(sig), a.get_int("spatial_shift", "dy", 1),
                                                                 a.get_int("spatial_shift", "dx", 1));
               });
}

}  // namespace fastnn::ops
