// drop_path on CUDA (ops/drop_path.h): one thread per example draws its keep bit (the CPU's Philox word),
// then one elementwise kernel scales; backward is the scaling kernel on dy.
#include <cstring>

#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/drop_path.h"
#include "trainer/ops/random.h"

namespace fastnn::ops {
namespace gpu {

using namespace cuda;  // device_util.cuh

namespace {

__global__ void drop_path_scales_kernel(int64_t n, uint64_t threshold, float kept, uint64_t seed, uint64_t step,
                                        float* scale) {
  FASTNN_GRID_LOOP(i, n) scale[i] = philox_word(seed, step, static_cast<uint64_t>(i)) >= threshold ? kept : 0.f;
}

// The step from device memory (a captured CUDA graph): the keep probability of that step computed here
// with the host's exact arithmetic (drop_path_keep and dropout_threshold are FASTNN_HD, no FMA).
__global__ void drop_path_scales_at_kernel(int64_t n, DropPathSchedule schedule, uint64_t seed,
                                           const uint64_t* device_step, float* scale) {
  const uint64_t step = *device_step;
  const double keep = drop_path_keep(schedule, step);
  const uint64_t threshold = dropout_threshold(hd::sub(1.0, keep));
  const float kept = static_cast<float>(hd::div(1.0, keep));
  FASTNN_GRID_LOOP(i, n) scale[i] = philox_word(seed, step, static_cast<uint64_t>(i)) >= threshold ? kept : 0.f;
}

template <typename T>
__global__ void drop_path_apply_kernel(int64_t total, int64_t inner, const float* scale, const T* x, T* y) {
  FASTNN_GRID_LOOP(i, total) y[i] = from_f<T>(to_f(x[i]) * scale[i / inner]);
}

}  // namespace

void drop_path_scales(int64_t n, double keep, uint64_t seed, uint64_t step, float* scale, cudaStream_t s) {
  if (n == 0) return;
  drop_path_scales_kernel<<<grid_for(n), kThreads, 0, s>>>(n, dropout_threshold(1 - keep), static_cast<float>(1 / keep),
                                                            seed, step, scale);
  CUDA_CHECK_LAUNCH();
}

void drop_path_scales(int64_t n, const DropPathSchedule& schedule, uint64_t seed, const uint64_t* device_step,
                      float* scale, cudaStream_t s) {
  if (n == 0) return;
  drop_path_scales_at_kernel<<<grid_for(n), kThreads, 0, s>>>(n, schedule, seed, device_step, scale);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void drop_path_apply(int64_t n, int64_t inner, const float* scale, const T* x, T* y, cudaStream_t s) {
  const int64_t total = n * inner;
  if (total == 0) return;
  drop_path_apply_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, inner, scale, x, y);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(T) \
  template void drop_path_apply<T>(int64_t, int64_t, const float*, const T*, T*, cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace gpu

namespace {

template <typename T>
class DropPathCuda final : public OpKernel {
 public:
  DropPathCuda(OpSignature sig, DropPathSchedule sch) : OpKernel("drop_path", Device::kCuda), s_(sch) {
    sig_ = std::move(sig);
    sig_.saved[0].dtype = DType::kF32;  // the per-example scales stay f32 under f16/bf16 (the kernels write floats)
    const Shape& x = sig_.inputs[0].shape;
    n_ = x[0];
    inner_ = 1;
    for (size_t i = 1; i < x.size(); ++i) inner_ *= x[i];
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const Tensor& x = a.inputs[0];
    Tensor& y = a.outputs[0];
    const cudaStream_t s = gpu::stream_of(a);
    if (a.training) {
      float* scale = gpu::ptr<float>(a.saved[0]);
      if (a.device_step)  // a captured CUDA graph: the step (and so the keep probability) from device memory
        gpu::drop_path_scales(n_, s_, a.seed, a.device_step, scale, s);
      else
        gpu::drop_path_scales(n_, drop_path_keep(s_, a.step), a.seed, a.step, scale, s);
      gpu::drop_path_apply<T>(n_, inner_, scale, gpu::ptr<T>(x), gpu::ptr<T>(y), s);
    } else if (y.raw() != x.raw() && x.nbytes()) {
      CUDA_CHECK(cudaMemcpyAsync(y.raw(), x.raw(), x.nbytes(), cudaMemcpyDeviceToDevice, s));
    }
  }
  void run_backward(const BackwardArgs& a) override {
    Tensor& dx = a.d_inputs[0];
    if (!dx.defined()) return;
    const Tensor& dy = a.d_outputs[0];
    const cudaStream_t s = gpu::stream_of(a);
    if (a.training)
      gpu::drop_path_apply<T>(n_, inner_, gpu::ptr<float>(a.saved[0]), gpu::ptr<T>(dy), gpu::ptr<T>(dx), s);
    else if (dx.raw() != dy.raw() && dy.nbytes())
      CUDA_CHECK(cudaMemcpyAsync(dx.raw(), dy.raw(), dy.nbytes(), cudaMemcpyDeviceToDevice, s));
  }

 private:
  DropPathSchedule s_;
  int64_t n_ = 0, inner_ = 1;
};

}  // namespace

void register_drop_path_cuda(OpRegistry& r) {
  r.add_kernel("drop_path", Device::kCuda,
               [cpu = gpu::cpu_factory(r, "drop_path")](const Attrs& a, std::span<const TensorSpec> in) {
                 const DType dt = gpu::cuda_compute_dtype("drop_path", in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                 return gpu::make_cuda_kernel<DropPathCuda>(dt, std::move(sig), drop_path_schedule(a));
               });
}

}  // namespace fastnn::ops
