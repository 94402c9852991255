// add: y = x0 + x1 + ... (2 to 16 inputs of the same shape and dtype; no broadcasting), summed left to
// right. y may alias an input. Backward: every dx_i = dy.
#pragma once

#include <cstdint>
#include <span>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

void register_add(OpRegistry& registry);

namespace cpu {
template <typename T>
void add_forward(int64_t count, std::span<const T* const> xs, T* y);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/elementwise_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void add_forward(int64_t count, std::span<const T* const> xs, T* y, cudaStream_t s);  // <= 16 inputs
// add then relu of two inputs in one pass (the fuse_ops rewrite), bitwise add_forward then relu_forward.
template <typename T>
void add_relu_forward(int64_t count, const T* a, const T* b, T* y, cudaStream_t s);
// Its backward: dz = y > 0 ? dy : 0 written to d0 and d1 (either may be null) in one pass.
template <typename T>
void relu_backward_to_two(int64_t count, const T* y, const T* dy, T* d0, T* d1, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (add_cuda.cpp); register_add adds it.
void register_add_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
