#include "trainer/cuda/device_util.cuh"
#include "trainer/runner/step_kernels.h"

namespace fastnn::runner::cuda_step {
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

template <typename S>
__device__ float input_value(S v, float, float) {
  return to_f(v);
}
template <>
__device__ float input_value<uint8_t>(uint8_t v, float mean, float inv_std) {
  return __fmul_rn(__fsub_rn(static_cast<float>(v), mean), inv_std);
}

// One thread per output element (in the output's layout); the source index follows the input's.
template <typename S, typename T>
__global__ void input_convert_kernel(int64_t n, int64_t c, int64_t h, int64_t w, const S* x, bool src_nhwc,
                                     bool dst_nhwc, InputNorm norm, T* y) {
  const int64_t count = n * c * h * w;
  FASTNN_GRID_LOOP(i, count) {
    int64_t img, ch, row, col;
    if (dst_nhwc) {
      ch = i % c, col = (i / c) % w, row = (i / (c * w)) % h, img = i / (c * w * h);
    } else {
      col = i % w, row = (i / w) % h, ch = (i / (w * h)) % c, img = i / (w * h * c);
    }
    const int64_t src = src_nhwc ? ((img * h + row) * w + col) * c + ch : ((img * c + ch) * h + row) * w + col;
    const int64_t k = ch < 4 ? ch : 0;  // uint8 batches have at most 4 channels; other types ignore norm
    y[i] = from_f<T>(input_value<S>(x[src], norm.mean[k], norm.inv_std[k]));
  }
}

}  // namespace

template <typename S, typename T>
void input_convert(int64_t n, int64_t c, int64_t h, int64_t w, const S* x, bool src_nhwc, bool dst_nhwc,
                   InputNorm norm, T* y, cudaStream_t s) {
  const int64_t count = n * c * h * w;
  if (count <= 0) return;
  input_convert_kernel<S, T><<<grid_for(count), kThreads, 0, s>>>(n, c, h, w, x, src_nhwc, dst_nhwc, norm, y);
  CUDA_CHECK_LAUNCH();
}

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

namespace {
__global__ void write_step_args_kernel(StepArgs* args, uint64_t step, float lr) {
  args->step = step;
  args->lr = lr;
}
}  // namespace

void write_step_args(StepArgs* args, uint64_t step, float lr, cudaStream_t s) {
  write_step_args_kernel<<<1, 1, 0, s>>>(args, step, lr);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_STEP_KERNELS(T)                                                                          \
  template void cast_from_f32<T>(int64_t, const float*, T*, cudaStream_t);                             \
  template void cast_to_f32<T>(int64_t, const T*, float*, cudaStream_t);                               \
  template void input_convert<uint8_t, T>(int64_t, int64_t, int64_t, int64_t, const uint8_t*, bool, bool, InputNorm, T*, \
                                          cudaStream_t);                                                \
  template void input_convert<__half, T>(int64_t, int64_t, int64_t, int64_t, const __half*, bool, bool, InputNorm, T*,   \
                                         cudaStream_t);                                                 \
  template void input_convert<float, T>(int64_t, int64_t, int64_t, int64_t, const float*, bool, bool, InputNorm, T*,     \
                                        cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_STEP_KERNELS)
#undef FASTNN_STEP_KERNELS

}  // namespace fastnn::runner::cuda_step
