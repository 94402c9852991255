// dropout (inverted): training y = x * mask / (1 - rate); eval y = x. Any shape.
//
//   inputs x; outputs y (same shape); saved mask (u8, same shape; written in training only)
// Attributes: rate (probability of dropping, in [0, 1); default 0.5).
// mask[i] = philox_word(seed, step, i) >= dropout_threshold(rate) (ops/random.h): a pure function of
// (ForwardArgs::seed, ForwardArgs::step, i), so it is reproducible, independent of the thread count and
// identical on CPU and CUDA. Use a different seed per layer and the global step as `step`.
// Backward: training dx = dy * mask / (1 - rate); eval dx = dy.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_dropout(OpRegistry& registry);

namespace cpu {
template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, uint64_t step, const T* x, T* y, uint8_t* mask);
template <typename T>
void dropout_backward(int64_t count, double rate, const uint8_t* mask, const T* dy, T* dx);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/elementwise_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
// The mask bit of element i is philox_word(seed, step, i) >= dropout_threshold(rate): the CPU's.
template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, uint64_t step, const T* x, T* y, uint8_t* mask,
                     cudaStream_t s);
// The same with the step read from device memory (ForwardArgs::device_step: a captured CUDA graph).
template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, const uint64_t* device_step, const T* x, T* y,
                     uint8_t* mask, cudaStream_t s);
template <typename T>
void dropout_backward(int64_t count, double rate, const uint8_t* mask, const T* dy, T* dx, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (dropout_cuda.cpp); register_dropout adds it.
void register_dropout_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
