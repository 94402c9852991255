// Device-side helpers shared by the .cu files: float conversion of the storage types, launch sizes,
// grid-stride loops and a block reduction. Include only from .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>

#include "core/check.h"

namespace fastnn::cuda {

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `count` items (capped: the loop covers the rest).
inline unsigned grid_for(int64_t count, int threads = kThreads) {
  const int64_t b = (count + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (int64_t{1} << 20) ? (int64_t{1} << 20) : b));
}

// Every pointer 16-byte aligned (a null pointer counts as aligned): the packed kernels' 16-byte accesses.
inline bool aligned16(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}

#define FASTNN_GRID_LOOP(i, count)                                                                       \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (count);             \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in every
// thread. Uses 32 doubles of shared memory and two __syncthreads; call from all threads.
__device__ __forceinline__ double block_sum(double v) {
  __shared__ double partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// A grid-stride loop whose item is a warp's (every lane of a warp takes the same i): launch with
// grid_for(count * 32) threads.
#define FASTNN_WARP_LOOP(i, count)                                                                       \
  for (int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; i < (count);      \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x / 32)

__device__ __forceinline__ double warp_sum(double v);

// The sum of value(r) for r in [0, runs) by the whole warp: lane l adds r = l, l + 32, ... in order, then
// the lanes are added by a butterfly. A fixed order for a given runs (repeatable); lane 0 holds the result.
// The finishing kernels of the split reductions use it: one thread per channel adding ~1024 runs in a
// chain was latency-bound (2026-11-27).
template <typename F>
__device__ __forceinline__ double warp_sum_runs(int64_t runs, F value) {
  double acc = 0;
  for (int64_t r = threadIdx.x & 31; r < runs; r += 32) acc += value(r);
  return warp_sum(acc);
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// V elements of T loaded or stored as one 16-byte access (V = 16 / sizeof(T)) where the pointer is
// 16-byte aligned: the element maps (ops/elementwise_kernels.cu) and batch norm's NHWC passes.
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};
template <typename T, int V>
__device__ __forceinline__ Pack<T, V> load_pack(const T* p) {
  return *reinterpret_cast<const Pack<T, V>*>(p);
}
template <typename T, int V>
__device__ __forceinline__ void store_pack(T* p, const Pack<T, V>& v) {
  *reinterpret_cast<Pack<T, V>*>(p) = v;
}

}  // namespace fastnn::cuda

// Explicit instantiation for the three storage types.
#define FASTNN_CUDA_FOR_TYPES(M) M(float) M(__half) M(__nv_bfloat16)
