// lrn: local response normalisation across channels, TensorFlow's tf.nn.lrn in NCHW.
//
//   inputs x [N, C, H, W]; outputs y (same shape); saved scale (same shape)
//   scale[n,c,h,w] = bias + alpha * sum_{c' = max(0, c-r)}^{min(C-1, c+r)} x[n,c',h,w]^2   (r = depth_radius)
//   y = x * scale^-beta
// Attributes: depth_radius (default 5), bias (default 1, > 0), alpha (default 1, >= 0), beta (default
// 0.5). Note TensorFlow's alpha multiplies the plain sum (Caffe divides it by the window size).
// Backward: dx[c'] = dy[c'] * scale[c']^-beta
//                    - 2 alpha beta x[c'] * sum_{|c - c'| <= r} dy[c] x[c] scale[c]^(-beta-1).
// CPU: samples in parallel; the workspace holds one x-sized buffer for the backward's inner terms.
#pragma once

#include <cstdint>
#include <span>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

struct LrnParams {
  int64_t n = 0, c = 0, hw = 1;
  int64_t depth_radius = 5;
  double bias = 1, alpha = 1, beta = 0.5;
};

// Shapes from x [N, C, H, W] and the attributes with their defaults, validated (ConfigError): what the
// CPU and CUDA kernels both compute from.
LrnParams lrn_params(const Attrs& attrs, std::span<const TensorSpec> inputs);

void register_lrn(OpRegistry& registry);

namespace cpu {
template <typename T>
void lrn_forward(const LrnParams& p, const T* x, T* y, T* scale);
// ws: N*C*H*W scalars.
template <typename T>
void lrn_backward(const LrnParams& p, const T* x, const T* scale, const T* dy, T* dx, T* ws);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers (ops/window_kernels.cu): the CPU functions' names and arguments plus a
// stream; T is float, __half or __nv_bfloat16, pointers are device pointers; nothing allocates.
namespace gpu {
template <typename T>
void lrn_forward(const LrnParams& p, const T* x, T* y, T* scale, cudaStream_t s);
// ws: N*C*H*W floats.
template <typename T>
void lrn_backward(const LrnParams& p, const T* x, const T* scale, const T* dy, T* dx, float* ws, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (lrn_cuda.cpp); register_lrn adds it.
void register_lrn_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
