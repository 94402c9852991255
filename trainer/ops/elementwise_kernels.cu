// Elementwise kernels: add, scale, relu, tanh, hard_swish, dropout, bias add, 2-D pad / crop, the layout transpose.
#include <cstdint>
#include <initializer_list>

#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/add.h"
#include "trainer/ops/channel_index.h"
#include "trainer/ops/cuda_helpers.h"
#include "trainer/ops/dropout.h"
#include "trainer/ops/hard_swish.h"
#include "trainer/ops/relu.h"
#include "trainer/ops/scale.h"
#include "trainer/ops/tanh.h"
#include "trainer/ops/random.h"

namespace fastnn::ops::gpu {

using namespace cuda;  // device_util.cuh

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

// ---- element maps with 16-byte loads and stores ----
// V elements of T per load (8 f16/bf16 or 4 f32 when every pointer is 16-byte aligned, else 1); the
// count % V elements after the last whole pack are done by the grid's first threads. Each element is
// computed exactly as by the scalar kernels (in float, the same operations), so results do not depend
// on V.
template <typename T, int N>
struct MapInputs {
  const T* p[N];
};

template <int V, typename T, int N, typename F>
__global__ void map_kernel(int64_t count, MapInputs<T, N> in, T* y, F f) {
  const int64_t packs = count / V;
  FASTNN_GRID_LOOP(pk, packs) {
    Pack<T, V> x[N];
#pragma unroll
    for (int k = 0; k < N; ++k) x[k] = reinterpret_cast<const Pack<T, V>*>(in.p[k])[pk];
    Pack<T, V> out;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      float v[N];
#pragma unroll
      for (int k = 0; k < N; ++k) v[k] = to_f(x[k].v[e]);
      out.v[e] = from_f<T>(f(v));
    }
    reinterpret_cast<Pack<T, V>*>(y)[pk] = out;
  }
  const int64_t i = packs * V + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) {
    float v[N];
#pragma unroll
    for (int k = 0; k < N; ++k) v[k] = to_f(in.p[k][i]);
    y[i] = from_f<T>(f(v));
  }
}

template <typename T, int N, typename F>
void launch_map(int64_t count, MapInputs<T, N> in, T* y, F f, cudaStream_t s) {
  if (count == 0) return;
  bool vec = aligned16({y});
  for (int k = 0; k < N; ++k) vec = vec && aligned16({in.p[k]});
  constexpr int kV = 16 / sizeof(T);
  if (vec) map_kernel<kV, T, N, F><<<grid_for(count / kV > 0 ? count / kV : 1), kThreads, 0, s>>>(count, in, y, f);
  else map_kernel<1, T, N, F><<<grid_for(count), kThreads, 0, s>>>(count, in, y, f);
  CUDA_CHECK_LAUNCH();
}

struct Add2 {
  __device__ float operator()(const float* v) const { return v[0] + v[1]; }
};
struct Scale {
  float scale;
  __device__ float operator()(const float* v) const { return scale * v[0]; }
};
struct ReluForward {  // x > 0 ? x : +0 (x itself: f16/bf16 -> float -> f16/bf16 is exact)
  __device__ float operator()(const float* v) const { return v[0] > 0.f ? v[0] : 0.f; }
};
struct ReluBackward {  // v[0] = y, v[1] = dy
  __device__ float operator()(const float* v) const { return v[0] > 0.f ? v[1] : 0.f; }
};
struct HardSwishForward {
  __device__ float operator()(const float* v) const { return hard_swish_value(v[0]); }
};
struct HardSwishBackward {  // v[0] = x, v[1] = dy
  __device__ float operator()(const float* v) const { return hard_swish_gradient(v[0], v[1]); }
};
// relu(a + b): the sum rounded to T first, as add's kernel writes it, then relu's test on that value.
template <typename T>
struct AddRelu {
  __device__ float operator()(const float* v) const {
    const float z = to_f(from_f<T>(v[0] + v[1]));
    return z > 0.f ? z : 0.f;
  }
};

// dz = y > 0 ? dy : 0 to up to two outputs (fused add+relu backward), packs as map_kernel.
template <int V, typename T>
__global__ void relu_grad_to_two_kernel(int64_t count, const T* y, const T* dy, T* d0, T* d1) {
  const int64_t packs = count / V;
  FASTNN_GRID_LOOP(pk, packs) {
    const Pack<T, V> yp = reinterpret_cast<const Pack<T, V>*>(y)[pk], gp = reinterpret_cast<const Pack<T, V>*>(dy)[pk];
    Pack<T, V> out;
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = to_f(yp.v[e]) > 0.f ? gp.v[e] : from_f<T>(0.f);
    if (d0) reinterpret_cast<Pack<T, V>*>(d0)[pk] = out;
    if (d1) reinterpret_cast<Pack<T, V>*>(d1)[pk] = out;
  }
  const int64_t i = packs * V + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) {
    const T v = to_f(y[i]) > 0.f ? dy[i] : from_f<T>(0.f);
    if (d0) d0[i] = v;
    if (d1) d1[i] = v;
  }
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
// device_step: the step from device memory (a captured CUDA graph), else `step`.
template <typename T>
__global__ void dropout_fwd_kernel(int64_t count, uint64_t threshold, float keep_scale, uint64_t seed,
                                   uint64_t step_arg, const uint64_t* device_step, const T* x, T* y, uint8_t* mask) {
  const uint64_t step = device_step ? *device_step : step_arg;
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
__global__ void bias_add_kernel(int64_t total, ChannelIndex ix, const T* b, T* y) {
  FASTNN_GRID_LOOP(i, total) y[i] = from_f<T>(to_f(y[i]) + to_f(b[channel_of(i, ix)]));
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
  if (xs.size() == 2) return launch_map(count, MapInputs<T, 2>{{xs[0], xs[1]}}, y, Add2{}, s);  // residual adds
  add_kernel<T><<<grid_for(count), kThreads, 0, s>>>(count, in, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void add_relu_forward(int64_t count, const T* a, const T* b, T* y, cudaStream_t s) {
  launch_map(count, MapInputs<T, 2>{{a, b}}, y, AddRelu<T>{}, s);
}

template <typename T>
void relu_backward_to_two(int64_t count, const T* y, const T* dy, T* d0, T* d1, cudaStream_t s) {
  if (count == 0 || (!d0 && !d1)) return;
  constexpr int kV = 16 / sizeof(T);
  if (aligned16({y, dy, d0 ? d0 : y, d1 ? d1 : y}))
    relu_grad_to_two_kernel<kV, T><<<grid_for(count / kV > 0 ? count / kV : 1), kThreads, 0, s>>>(count, y, dy, d0, d1);
  else
    relu_grad_to_two_kernel<1, T><<<grid_for(count), kThreads, 0, s>>>(count, y, dy, d0, d1);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void scale_forward(int64_t count, float scale, const T* x, T* y, cudaStream_t s) {
  launch_map(count, MapInputs<T, 1>{{x}}, y, Scale{scale}, s);
}

template <typename T>
void relu_forward(int64_t count, const T* x, T* y, cudaStream_t s) {
  launch_map(count, MapInputs<T, 1>{{x}}, y, ReluForward{}, s);
}

template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx, cudaStream_t s) {
  launch_map(count, MapInputs<T, 2>{{y, dy}}, dx, ReluBackward{}, s);
}

template <typename T>
void hard_swish_forward(int64_t count, const T* x, T* y, cudaStream_t s) {
  launch_map(count, MapInputs<T, 1>{{x}}, y, HardSwishForward{}, s);
}

template <typename T>
void hard_swish_backward(int64_t count, const T* x, const T* dy, T* dx, cudaStream_t s) {
  launch_map(count, MapInputs<T, 2>{{x, dy}}, dx, HardSwishBackward{}, s);
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
void launch_dropout_forward(int64_t count, double rate, uint64_t seed, uint64_t step, const uint64_t* device_step,
                            const T* x, T* y, uint8_t* mask, cudaStream_t s) {
  if (count == 0) return;
  // keep_scale rounded to float first, exactly as the CPU f32 kernel does (static_cast<T>(1/(1-rate))).
  const float keep_scale = static_cast<float>(1.0 / (1.0 - rate));
  dropout_fwd_kernel<T><<<grid_for((count + 3) / 4), kThreads, 0, s>>>(count, dropout_threshold(rate), keep_scale,
                                                                        seed, step, device_step, x, y, mask);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, uint64_t step, const T* x, T* y, uint8_t* mask,
                     cudaStream_t s) {
  launch_dropout_forward<T>(count, rate, seed, step, nullptr, x, y, mask, s);
}

template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, const uint64_t* device_step, const T* x, T* y,
                     uint8_t* mask, cudaStream_t s) {
  launch_dropout_forward<T>(count, rate, seed, 0, device_step, x, y, mask, s);
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
  bias_add_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, channel_index(n, k, inner), b, y);
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

namespace {
// One 32x32 tile per block (32 x 8 threads): read along the input's rows, written along the output's
// rows through a padded shared tile (no bank conflicts). blockIdx.z walks the batch.
template <typename E>
__global__ void transpose_kernel(int64_t batch, int64_t rows, int64_t cols, const E* x, E* y) {
  __shared__ E tile[32][33];
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * 32;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z)
  for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * 32; r0 < rows; r0 += static_cast<int64_t>(gridDim.y) * 32) {
    const E* xb = x + b * rows * cols;
    E* yb = y + b * rows * cols;
    for (int i = threadIdx.y; i < 32; i += 8) {
      const int64_t r = r0 + i, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[i][threadIdx.x] = xb[r * cols + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
      const int64_t c = c0 + i, r = r0 + threadIdx.x;
      if (r < rows && c < cols) yb[c * rows + r] = tile[threadIdx.x][i];
    }
    __syncthreads();
  }
}

template <typename E>
void launch_transpose(int64_t batch, int64_t rows, int64_t cols, const void* x, void* y, cudaStream_t s) {
  const int64_t gx = (cols + 31) / 32, gy = (rows + 31) / 32;  // row tiles beyond 65535 are looped
  FASTNN_CHECK(gx <= 0x7fffffff, "transpose: ", rows, " x ", cols, " is too large");
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy < 65535 ? gy : 65535),
                  static_cast<unsigned>(batch < 65535 ? batch : 65535));
  transpose_kernel<E><<<grid, dim3(32, 8), 0, s>>>(batch, rows, cols, static_cast<const E*>(x), static_cast<E*>(y));
  CUDA_CHECK_LAUNCH();
}
}  // namespace

void transpose_last2(int64_t batch, int64_t rows, int64_t cols, size_t elem_bytes, const void* x, void* y,
                     cudaStream_t s) {
  if (batch == 0 || rows == 0 || cols == 0) return;
  switch (elem_bytes) {
    case 2: return launch_transpose<uint16_t>(batch, rows, cols, x, y, s);
    case 4: return launch_transpose<uint32_t>(batch, rows, cols, x, y, s);
    case 8: return launch_transpose<uint64_t>(batch, rows, cols, x, y, s);
    default: throw Error(str("transpose: elements of ", elem_bytes, " bytes"));
  }
}

#define FASTNN_INSTANTIATE(T)                                                                                  \
  template void add_forward<T>(int64_t, std::span<const T* const>, T*, cudaStream_t);                        \
  template void scale_forward<T>(int64_t, float, const T*, T*, cudaStream_t);                                \
  template void relu_forward<T>(int64_t, const T*, T*, cudaStream_t);                                        \
  template void add_relu_forward<T>(int64_t, const T*, const T*, T*, cudaStream_t);                          \
  template void relu_backward_to_two<T>(int64_t, const T*, const T*, T*, T*, cudaStream_t);                  \
  template void relu_backward<T>(int64_t, const T*, const T*, T*, cudaStream_t);                             \
  template void hard_swish_forward<T>(int64_t, const T*, T*, cudaStream_t);                                  \
  template void hard_swish_backward<T>(int64_t, const T*, const T*, T*, cudaStream_t);                       \
  template void tanh_forward<T>(int64_t, float, float, const T*, T*, cudaStream_t);                          \
  template void tanh_backward<T>(int64_t, float, float, const T*, const T*, T*, cudaStream_t);               \
  template void dropout_forward<T>(int64_t, double, uint64_t, uint64_t, const T*, T*, uint8_t*, cudaStream_t); \
  template void dropout_forward<T>(int64_t, double, uint64_t, const uint64_t*, const T*, T*, uint8_t*, cudaStream_t); \
  template void dropout_backward<T>(int64_t, double, const uint8_t*, const T*, T*, cudaStream_t);            \
  template void bias_add<T>(int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);                          \
  template void pad2d<T>(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, const T*, T*,       \
                         cudaStream_t);                                                                      \
  template void crop2d<T>(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, const T*, T*,      \
                          cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace fastnn::ops::gpu
