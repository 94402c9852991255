// fully_connected: y = x W^T + b.
//
//   inputs   x [N, D1, D2, ...], read as [N, D] with D = D1*D2*... (so a conv output feeds it directly)
//   params   weight [units, D] (Glorot-uniform init, weight decay), bias [units] if `bias` (zeros)
//   outputs  y [N, units]
// Attributes: units (required), bias (default true).
// CPU: GEMMs over fixed blocks of 128 units (forward, dW: rows of W) or 256 inputs (dx: columns of
// W), one oneTBB task each, so W is packed once per pass; the blocking does not depend on the thread
// count.
#pragma once

#include <cstdint>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

struct FullyConnectedParams {
  int64_t n = 0, d = 0, units = 0;
  bool bias = true;
};

FullyConnectedParams fully_connected_params(const Attrs& attrs, std::span<const TensorSpec> inputs);
OpSignature fully_connected_signature(const FullyConnectedParams& p, const Shape& x_shape, DType dtype);
void register_fully_connected(OpRegistry& registry);

namespace cpu {
template <typename T>
void fully_connected_forward(const FullyConnectedParams& p, const T* x, const T* w, const T* b, T* y);
template <typename T>
void fully_connected_backward_data(const FullyConnectedParams& p, const T* w, const T* dy, T* dx);
// dw and db may be null (not wanted).
template <typename T>
void fully_connected_backward_filter(const FullyConnectedParams& p, const T* x, const T* dy, T* dw, T* db);
}  // namespace cpu

#ifdef FASTNN_HAVE_DNNL
// Replaces the kCpu kernel by oneDNN matrix products that multiply in bfloat16 and accumulate in f32
// (precision=bf16 on the CPU; graph::cpu_bf16_op_registry(); matmul_layer_dnnl.cpp).
void register_bf16_fully_connected_dnnl(OpRegistry& registry);
#endif
#ifdef FASTNN_HAVE_CUDA
// The kCuda kernel (fully_connected_cuda.cpp); register_fully_connected adds it.
void register_fully_connected_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
