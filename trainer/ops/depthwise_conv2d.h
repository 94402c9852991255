// depthwise_conv2d: each input channel convolved with its own `multiplier` filters (TF's
// tf.nn.depthwise_conv2d; MobileNet's depthwise layers), NCHW. The same arithmetic as conv2d with
// groups = C and filters = C*M, without conv2d's im2col + per-group GEMM (a 1-row GEMM per channel).
//
//   inputs   x [N, C, H, W]
//   params   weight [C*M, 1, R, S] (conv2d's grouped layout; He-normal, fan_in = R*S), bias [C*M] if `bias`
//   outputs  y [N, C*M, P, Q], output channel k = c*M + m (TF's order)
//   y[n,k,p,q] = bias[k] + sum_{r,s} w[k,0,r,s] * x[n, k/M, p*stride_h - pad_top + r*dil_h, q*stride_w - pad_left + s*dil_w]
//   (x outside the image reads as 0).
// Attributes: kernel (required), stride, dilation, padding (window2d.h: "same" is TF's SAME,
// "valid", or ints), multiplier (M, default 1), bias (default true).
//
// CPU: direct loops, no im2col, no workspace. Each (n, c) input plane is first copied into a per-task
// zero-padded buffer whose columns are split into stride_w phases, so every tap reads a contiguous,
// bounds-free run of an output row's width and the loops vectorise over it for any stride (3x3 keeps
// its nine taps in registers). Forward and backward data run (n, c) planes in parallel on oneTBB, in
// chunks sized to ~32k multiply-adds (MobileNet's 1x1 - 7x7 planes); backward data scatters the plane's
// M output channels into the padded buffer and copies its image part out (no two tasks write the same
// dx). The filter and bias gradients run output channels in parallel, each summing over the batch in
// sample order (per sample: lane sums in T, added in double): every pass's result is independent of
// the thread count. The forward is bitwise the reference loops' (same summation order).
// *_reference: the plain bounds-checked loops, the fast path's oracle in tests.
//
// CUDA (depthwise_conv2d_cuda.cu): direct kernels; forward one thread per output, backward data one
// thread per input pixel (gathering, no atomics), backward filter one block per (k, r, s) tap with a
// block reduction in double; the bias gradient is the shared bias_grad. NHWC (add_nhwc_kernel): the
// same forward and data kernels with the channel fastest (neighbouring threads, neighbouring channels);
// the filter gradient over rows of output pixels as batch norm's NHWC sums (blocks of 32 channels x a
// run of pixels x one tap, partial sums added by warp_sum_runs), the bias gradient on [N*P*Q, K] rows.
// NHWC with multiplier 1 and C a multiple of 16 / sizeof(T) (every MobileNet layer): the packed kernels
// of depthwise_nhwc_packed.cuh, a thread per 8 (f16/bf16) or 4 (f32) channels of a pixel, forward and
// data bitwise the one-element kernels; the 3x3 filter gradient with all taps in registers.
#pragma once

#include <cstdint>
#include <span>

#include "trainer/ops/op.h"
#include "trainer/ops/window2d.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fastnn::ops {

struct DepthwiseConv2dParams {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t multiplier = 1;               // M; output channels K = C*M
  bool bias = true;
  Window2d win;  // kernel R x S, stride, dilation, padding, output P x Q
  // CUDA only: x and y are [N, H, W, C] / [N, P, Q, K] (the kernel add_nhwc_kernel registers); the CPU
  // kernels are NCHW and depthwise_conv2d_params never sets it.
  bool nhwc = false;

  int64_t k() const { return c * multiplier; }
  int64_t weight_numel() const { return k() * win.r * win.s; }
};

// Parses attributes for input x; throws ConfigError.
DepthwiseConv2dParams depthwise_conv2d_params(const Attrs& attrs, std::span<const TensorSpec> inputs);
OpSignature depthwise_conv2d_signature(const DepthwiseConv2dParams& p, DType dtype);

void register_depthwise_conv2d(OpRegistry& registry);
#ifdef FASTNN_HAVE_DNNL
// The kCpu NHWC kernel on oneDNN, f32: conv2d's, with a group per channel (conv2d_nhwc_dnnl.cpp);
// register_depthwise_conv2d adds it.
void register_depthwise_conv2d_dnnl(OpRegistry& registry);
#endif

namespace cpu {
// b may be null when !p.bias.
template <typename T>
void depthwise_conv2d_forward(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y);
// Overwrites dx.
template <typename T>
void depthwise_conv2d_backward_data(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx);
// dw and db may each be null (skipped); overwrites both.
template <typename T>
void depthwise_conv2d_backward_filter(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw, T* db);
// The same three passes as plain bounds-checked loops (no padded copy): the tests' oracle.
template <typename T>
void depthwise_conv2d_forward_reference(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y);
template <typename T>
void depthwise_conv2d_backward_data_reference(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx);
template <typename T>
void depthwise_conv2d_backward_filter_reference(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw,
                                                T* db);
}  // namespace cpu

#ifdef FASTNN_HAVE_CUDA
// CUDA launchers: the CPU functions plus a stream; T is float, __half or __nv_bfloat16.
namespace gpu {
// ws: depthwise_conv2d_workspace_bytes(p) bytes for every pass (NHWC: the filter and bias gradients'
// partial sums, and the weights as [taps, C] floats for the packed kernels; NCHW: none, may be null).
size_t depthwise_conv2d_workspace_bytes(const DepthwiseConv2dParams& p);
template <typename T>
void depthwise_conv2d_forward(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y, void* ws,
                              cudaStream_t s);
template <typename T>
void depthwise_conv2d_backward_data(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx, void* ws,
                                    cudaStream_t s);
template <typename T>
void depthwise_conv2d_backward_filter(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw, T* db,
                                      void* ws, cudaStream_t s);
}  // namespace gpu
// The kCuda kernel (depthwise_conv2d_cuda.cu); register_depthwise_conv2d adds it.
void register_depthwise_conv2d_cuda(OpRegistry& registry);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
