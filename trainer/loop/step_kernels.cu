#include "trainer/cuda/device_util.cuh"
#include "trainer/loop/step_kernels.h"

namespace fastnn::loop::cuda_step {
namespace {

using fastnn::cuda::from_f;
using fastnn::cuda::grid_for;
using fastnn::cuda::kThreads;
using fastnn::cuda::to_f;

template <typename T>
__global__ void cast_from_f32_kernel(int64_t count, const float* x, T* y) {
  FASTNN_GRID_LOOP(i, count) y[i] = from_f<T>(x[i]);
}

template <typename T>
__global__ void cast_to_f32_kernel(int64_t count, const T* x, float* y) {
  FASTNN_GRID_LOOP(i, count) y[i] = to_f(x[i]);
}

template <typename G>
__global__ void prepare_grad_kernel(int64_t count, const G* g, float inv_scale, float wd, const float* w, float* out) {
  FASTNN_GRID_LOOP(i, count) {
    float v = __fmul_rn(to_f(g[i]), inv_scale);
    if (wd != 0.0f) v = __fadd_rn(v, __fmul_rn(wd, w[i]));
    out[i] = v;
  }
}

}  // namespace

template <typename T>
void cast_from_f32(int64_t count, const float* x, T* y, cudaStream_t s) {
  if (count <= 0) return;
  cast_from_f32_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void cast_to_f32(int64_t count, const T* x, float* y, cudaStream_t s) {
  if (count <= 0) return;
  cast_to_f32_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename G>
void prepare_grad(int64_t count, const G* g, float inv_scale, float wd, const float* w, float* out, cudaStream_t s) {
  if (count <= 0) return;
  prepare_grad_kernel<G><<<grid_for(count), kThreads, 0, s>>>(count, g, inv_scale, wd, w, out);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_STEP_KERNELS(T)                                                                          \
  template void cast_from_f32<T>(int64_t, const float*, T*, cudaStream_t);                             \
  template void cast_to_f32<T>(int64_t, const T*, float*, cudaStream_t);                               \
  template void prepare_grad<T>(int64_t, const T*, float, float, const float*, float*, cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_STEP_KERNELS)
#undef FASTNN_STEP_KERNELS

}  // namespace fastnn::loop::cuda_step
