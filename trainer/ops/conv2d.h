// conv2d: 2-D convolution (cross-correlation, as in every framework), NCHW.
//
//   inputs   x [N, C, H, W]
//   params   weight [K, C/groups, R, S] (He-normal init, fan_in = C/groups*R*S), bias [K] if `bias`
//   outputs  y [N, K, P, Q]
//   y[n,k,p,q] = bias[k] + sum_{c in group(k), r, s} w[k, c - c0(k), r, s] *
//                          x[n, c, p*stride_h - pad_top + r*dil_h, q*stride_w - pad_left + s*dil_w]
//   (x outside the image reads as 0).
// Attributes: filters (K, required), kernel, stride, dilation, padding (see window2d.h: "same",
// "valid", asymmetric [t,b,l,r]), groups (default 1; C and K divisible by it), bias (default true).
//
// CPU: per sample, im2col into a [C*R*S, P*Q] column buffer, then one GEMM per group
// (weight_g [K/G, C/G*R*S] x col_g). Samples run in parallel on oneTBB, each worker slot with its own
// column buffer; the workspace holds `slots` of them (slots = min(N, TBB concurrency) when the kernel
// is created). A 1x1, stride-1, unpadded convolution skips im2col; for other stride-1 convolutions
// whose output rows are as wide as the input rows (SAME), im2col/col2im move each column-buffer row as
// one shifted copy of the input plane. col2im leaves the buffer zeroed so the next sample's
// backward-data GEMM accumulates onto it (no clearing pass). Filter gradients accumulate in a
// fixed number of lanes (min(N, 8); lane l takes samples l, l + lanes, ...; lane 0 accumulates
// straight into dw) that are then added in lane order. Nothing depends on the thread count or on how
// many slots the workspace holds, so every pass is bitwise reproducible for a given shape. (Batching
// several samples into one wider GEMM was measured slower on LeNet shapes: the larger column buffer
// falls out of L2, and OpenBLAS already runs a per-sample GEMM near its peak.) The exception is a
// 1x1 convolution on a plane of <= kBatchedPointwiseMaxPlane pixels (MobileNet's 14x14 .. 1x1 layers):
// there a per-sample GEMM is only P*Q columns wide, so the batch is packed into one [C, N*P*Q] matrix
// (a copy at the end of the workspace) and each pass is one GEMM, run in fixed 64-row blocks. And a
// forward pass of one image (N = 1, groups 1) splits its GEMM into fixed blocks of 64 output rows x
// 512 output pixels run in parallel, since there is no second sample to keep the other threads busy.
#pragma once

#include <cstdint>
#include <span>

#include "trainer/ops/op.h"

#ifdef FASTNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#include "trainer/ops/window2d.h"

namespace fastnn::ops {

struct Conv2dParams {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t k = 0;                        // output channels
  int64_t groups = 1;
  bool bias = true;
  Window2d win;  // kernel R x S, stride, dilation, padding, output P x Q

  int64_t col_rows() const { return c * win.r * win.s; }  // C*R*S
  int64_t col_cols() const { return win.p * win.q; }      // P*Q
  int64_t weight_numel() const { return k * (c / groups) * win.r * win.s; }
  bool is_pointwise() const;  // 1x1, stride 1, no padding: x is its own column buffer
};

// Parses attributes for input x; throws ConfigError.
Conv2dParams conv2d_params(const Attrs& attrs, std::span<const TensorSpec> inputs);
// Device-independent part of the signature (workspace_bytes left 0).
OpSignature conv2d_signature(const Conv2dParams& p, DType dtype);

void register_conv2d(OpRegistry& registry);

// The input channels cuDNN is given for a convolution on CUDA. NHWC f16/bf16 convolutions run on
// tensor cores in units of 8 channels; one over C channels that are not a multiple of 8 (the image
// stem's 3, Fashion-MNIST's 1) is given C rounded up to 8 when `pad` is set (cuda::Policy::
// pad_conv_channels), groups being 1: x and the [K, R, S, C] weight copy get zero channels, which add
// exact zeros, so the result is that of the C-channel convolution. Otherwise C.
inline int64_t conv_channels_for_cudnn(const Conv2dParams& p, DType dt, bool nhwc, bool pad) {
  const bool half = dt == DType::kF16 || dt == DType::kBF16;
  if (!pad || !nhwc || !half || p.groups != 1 || p.c % 8 == 0) return p.c;
  return (p.c + 7) / 8 * 8;
}

namespace cpu {

// 1x1 convolutions (groups 1, N > 1) on planes of at most this many pixels take the batched path: the
// batch packed into one [C, N*P*Q] matrix, one GEMM per pass (in fixed 64-row blocks), unpacked.
inline constexpr int64_t kBatchedPointwiseMaxPlane = 256;
bool conv2d_batched_pointwise(const Conv2dParams& p);
// Filter-gradient partial sums: min(N, 8), a function of the batch size only.
int64_t conv2d_filter_lanes(const Conv2dParams& p);
// Scalars of workspace for `slots` parallel slots (all three passes fit in it).
int64_t conv2d_workspace_elems(const Conv2dParams& p, int64_t slots);
// The number of slots a workspace of ws_elems scalars provides, at most N (>= 1; throws if too small
// for one).
int64_t conv2d_slots(const Conv2dParams& p, int64_t ws_elems);

// b may be null when !p.bias.
template <typename T>
void conv2d_forward(const Conv2dParams& p, const T* x, const T* w, const T* b, T* y, std::span<T> ws);
// dx = conv_transpose(dy, w); overwrites dx.
template <typename T>
void conv2d_backward_data(const Conv2dParams& p, const T* w, const T* dy, T* dx, std::span<T> ws);
// dw (may be null: skipped) and db (may be null) from x and dy; overwrites both.
template <typename T>
void conv2d_backward_filter(const Conv2dParams& p, const T* x, const T* dy, T* dw, T* db, std::span<T> ws);

}  // namespace cpu

#ifdef FASTNN_HAVE_DNNL
// The kCpu NHWC kernel on oneDNN, f32 (conv2d_nhwc_dnnl.cpp); register_conv2d adds it.
void register_conv2d_dnnl(OpRegistry& registry);
// Replaces conv2d's kCpu NHWC kernel by one that multiplies in bfloat16 and accumulates in f32
// (precision=bf16 on the CPU; graph::cpu_bf16_op_registry()); depthwise_conv2d stays f32. Only where
// oneDNN has bf16 instructions (ops::cpu_bf16_available(); Error elsewhere).
void register_bf16_convolutions_dnnl(OpRegistry& registry);
#endif
#ifdef FASTNN_HAVE_CUDA
// The kCuda kernel (conv2d_cuda.cpp); register_conv2d adds it.
void register_conv2d_cuda(OpRegistry& registry);
// Whether `k` is a CUDA conv2d whose passes run on cuDNN's graph API (conv_api=graph, with an engine for
// each pass), and whether its data gradient adds into dx there (beta = 1); false for any other kernel and
// for a layer that kept the legacy calls. For the gpu tests: a `_graph` case that fell back says so.
bool conv2d_runs_on_graph_api(const OpKernel& k);
bool conv2d_adds_on_graph_api(const OpKernel& k);
#endif  // FASTNN_HAVE_CUDA
}  // namespace fastnn::ops
