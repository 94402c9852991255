// Elementwise kernels: add, scale, relu, tanh, dropout, bias add, 2-D pad / crop.
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/add.h"
#include "trainer/ops/cuda_helpers.h"
#include "trainer/ops/dropout.h"
#include "trainer/ops/relu.h"
#include "trainer/ops/scale.h"
#include "trainer/ops/tanh.h"
#include "trainer/ops/random.h"

namespace fastnn::ops::cuda {

using namespace ::fastnn::cuda;  // device_util.cuh

namespace {

constexpr int kMaxAdd = 16;

template <typename T>
struct AddInputs {
  const T* p[kMaxAdd];
  int n;
};

template <typename T>
__global__ void add_kernel(int64_t count, AddInputs<T> in, T* y) {
  FASTNN_GRID_LOOP(i, count) {
    // Summed left to right in float (the CPU f32 kernel sums in float too, in the same order).
    float acc = to_f(in.p[0][i]);
    for (int k = 1; k < in.n; ++k) acc += to_f(in.p[k][i]);
    y[i] = from_f<T>(acc);
  }
}

template <typename T>
__global__ void scale_kernel(int64_t count, float scale, const T* x, T* y) {
  FASTNN_GRID_LOOP(i, count) y[i] = from_f<T>(scale * to_f(x[i]));
}

template <typename T>
__global__ void relu_fwd_kernel(int64_t count, const T* x, T* y) {
  FASTNN_GRID_LOOP(i, count) {
    const float v = to_f(x[i]);
    y[i] = v > 0.f ? x[i] : from_f<T>(0.f);
  }
}

template <typename T>
__global__ void relu_bwd_kernel(int64_t count, const T* y, const T* dy, T* dx) {
  FASTNN_GRID_LOOP(i, count) dx[i] = to_f(y[i]) > 0.f ? dy[i] : from_f<T>(0.f);
}

template <typename T>
__global__ void tanh_fwd_kernel(int64_t count, float outer, float inner, const T* x, T* y) {
  FASTNN_GRID_LOOP(i, count) y[i] = from_f<T>(outer * tanhf(inner * to_f(x[i])));
}

template <typename T>
__global__ void tanh_bwd_kernel(int64_t count, float outer, float inner, const T* y, const T* dy, T* dx) {
  const float k = outer * inner;
  FASTNN_GRID_LOOP(i, count) {
    const float t = to_f(y[i]) / outer;
    dx[i] = from_f<T>(to_f(dy[i]) * k * (1.f - t * t));
  }
}

// One thread per block of 4 elements: one Philox call, as on the CPU (ops/dropout_cpu.cpp).
template <typename T>
__global__ void dropout_fwd_kernel(int64_t count, uint64_t threshold, float keep_scale, uint64_t seed,
                                   uint64_t step, const T* x, T* y, uint8_t* mask) {
  const int64_t blocks = (count + 3) / 4;
  FASTNN_GRID_LOOP(blk, blocks) {
    const uint64_t ub = static_cast<uint64_t>(blk);
    const auto words = philox4x32_10({static_cast<uint32_t>(ub), static_cast<uint32_t>(ub >> 32),
                                      static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)},
                                     {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    const int64_t i0 = blk * 4;
    const int64_t i1 = i0 + 4 < count ? i0 + 4 : count;
    for (int64_t i = i0; i < i1; ++i) {
      const bool keep = words[i - i0] >= threshold;
      mask[i] = keep;
      y[i] = keep ? from_f<T>(to_f(x[i]) * keep_scale) : from_f<T>(0.f);
    }
  }
}

template <typename T>
__global__ void dropout_bwd_kernel(int64_t count, float keep_scale, const uint8_t* mask, const T* dy, T* dx) {
  FASTNN_GRID_LOOP(i, count) dx[i] = mask[i] ? from_f<T>(to_f(dy[i]) * keep_scale) : from_f<T>(0.f);
}

template <typename T>
__global__ void bias_add_kernel(int64_t total, int64_t k, int64_t inner, const T* b, T* y) {
  FASTNN_GRID_LOOP(i, total) {
    const int64_t c = (i / inner) % k;
    y[i] = from_f<T>(to_f(y[i]) + to_f(b[c]));
  }
}

template <typename T>
__global__ void pad2d_kernel(int64_t total, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t top, int64_t left,
                             const T* x, T* xp) {
  FASTNN_GRID_LOOP(i, total) {
    const int64_t ow = i % wp, oh = (i / wp) % hp, plane = i / (wp * hp);
    const int64_t ih = oh - top, iw = ow - left;
    xp[i] = ih >= 0 && ih < h && iw >= 0 && iw < w ? x[(plane * h + ih) * w + iw] : from_f<T>(0.f);
  }
}

template <typename T>
__global__ void crop2d_kernel(int64_t total, int64_t h, int64_t w, int64_t hp, int64_t wp, int64_t top, int64_t left,
                              const T* xp, T* x) {
  FASTNN_GRID_LOOP(i, total) {
    const int64_t iw = i % w, ih = (i / w) % h, plane = i / (w * h);
    x[i] = xp[(plane * hp + ih + top) * wp + iw + left];
  }
}

}  // namespace

template <typename T>
void add_forward(int64_t count, std::span<const T* const> xs, T* y, cudaStream_t s) {
  FASTNN_CHECK(!xs.empty() && xs.size() <= kMaxAdd, "add: ", xs.size(), " inputs");
  AddInputs<T> in{};
  for (size_t i = 0; i < xs.size(); ++i) in.p[i] = xs[i];
  in.n = static_cast<int>(xs.size());
  if (count == 0) return;
  add_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, in, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void scale_forward(int64_t count, float scale, const T* x, T* y, cudaStream_t s) {
  if (count == 0) return;
  scale_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, scale, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void relu_forward(int64_t count, const T* x, T* y, cudaStream_t s) {
  if (count == 0) return;
  relu_fwd_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx, cudaStream_t s) {
  if (count == 0) return;
  relu_bwd_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, y, dy, dx);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void tanh_forward(int64_t count, float outer, float inner, const T* x, T* y, cudaStream_t s) {
  if (count == 0) return;
  tanh_fwd_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, outer, inner, x, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void tanh_backward(int64_t count, float outer, float inner, const T* y, const T* dy, T* dx, cudaStream_t s) {
  if (count == 0) return;
  tanh_bwd_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, outer, inner, y, dy, dx);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, uint64_t step, const T* x, T* y, uint8_t* mask,
                     cudaStream_t s) {
  if (count == 0) return;
  // keep_scale rounded to float first, exactly as the CPU f32 kernel does (static_cast<T>(1/(1-rate))).
  const float keep_scale = static_cast<float>(1.0 / (1.0 - rate));
  dropout_fwd_kernel<T><<<grid_for((count + 3) / 4), kThreads, 0, s>>>(count, dropout_threshold(rate), keep_scale,
                                                                        seed, step, x, y, mask);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void dropout_backward(int64_t count, double rate, const uint8_t* mask, const T* dy, T* dx, cudaStream_t s) {
  if (count == 0) return;
  dropout_bwd_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, static_cast<float>(1.0 / (1.0 - rate)), mask, dy,
                                                             dx);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void bias_add(int64_t n, int64_t k, int64_t inner, const T* b, T* y, cudaStream_t s) {
  const int64_t total = n * k * inner;
  if (total == 0) return;
  bias_add_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, k, inner, b, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void pad2d(int64_t planes, int64_t h, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right, const T* x,
           T* xp, cudaStream_t s) {
  const int64_t hp = h + top + bottom, wp = w + left + right, total = planes * hp * wp;
  if (total == 0) return;
  pad2d_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, h, w, hp, wp, top, left, x, xp);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void crop2d(int64_t planes, int64_t h, int64_t w, int64_t top, int64_t bottom, int64_t left, int64_t right,
            const T* xp, T* x, cudaStream_t s) {
  const int64_t hp = h + top + bottom, wp = w + left + right, total = planes * h * w;
  if (total == 0) return;
  crop2d_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, h, w, hp, wp, top, left, xp, x);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(T)                                                                                  \
  template void add_forward<T>(int64_t, std::span<const T* const>, T*, cudaStream_t);                        \
  template void scale_forward<T>(int64_t, float, const T*, T*, cudaStream_t);                                \
  template void relu_forward<T>(int64_t, const T*, T*, cudaStream_t);                                        \
  template void relu_backward<T>(int64_t, const T*, const T*, T*, cudaStream_t);                             \
  template void tanh_forward<T>(int64_t, float, float, const T*, T*, cudaStream_t);                          \
  template void tanh_backward<T>(int64_t, float, float, const T*, const T*, T*, cudaStream_t);               \
  template void dropout_forward<T>(int64_t, double, uint64_t, uint64_t, const T*, T*, uint8_t*, cudaStream_t); \
  template void dropout_backward<T>(int64_t, double, const uint8_t*, const T*, T*, cudaStream_t);            \
  template void bias_add<T>(int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);                          \
  template void pad2d<T>(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, const T*, T*,       \
                         cudaStream_t);                                                                      \
  template void crop2d<T>(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, const T*, T*,      \
                          cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace fastnn::ops::cuda
