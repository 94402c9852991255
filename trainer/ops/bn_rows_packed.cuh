// Batch norm over [M, C] rows (NHWC activations seen as M = N*H*W rows) when C is a multiple of
// V = 16 / sizeof(T) and the tensors are 16-byte aligned: every real NHWC layer. Included by
// batch_norm_kernels.cu, which keeps the generic rows kernels for the rest.
//
// Each thread owns V neighbouring channels for the whole kernel: one 16-byte load per row and tensor,
// the channels' parameters (pivot, mean, invstd, gamma, ...) in registers, loaded once. The generic rows
// kernels load 2 bytes an element and re-read 4-5 per-channel values per element; measured on an H100
// (2026-11-27) they ran batch norm at a third of the memory bandwidth (ResNet-50 fp16 NHWC: 47 of the
// step's 92 ms).
//
// Block (x: kPackedThreads / lanes packs of V channels side by side, y: row lanes). Reductions: block
// (tile, run) sums run `run` of BnSplit (channel_index.h), each thread its rows in order, then the lanes
// in lane order, into the partials the generic kernels write (so the finishing kernels are shared):
// a fixed order for a given shape, bitwise repeatable. Elementwise passes: the same per-element
// arithmetic as the generic kernels (bitwise the same outputs), rows strided over the grid's y.
#pragma once

#include <cstdint>

#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/batch_norm.h"
#include "trainer/ops/channel_index.h"

namespace fastnn::ops::gpu::packed {

using cuda::load_pack;
using cuda::Pack;
using cuda::store_pack;
using cuda::to_f;
using cuda::from_f;

constexpr int kPackedThreads = 256;

// The normalise step's arithmetic in one place, every operation explicitly rounded (no multiply-add
// contraction left to the compiler): scale = gamma * invstd, shift = beta - mean * scale (the CPU's
// formula), v = x * scale + shift. Every kernel that computes the normalised value uses it, so they agree
// bit for bit — the fused backward recomputes z from x (ActMask) and must get the forward's z.
__device__ __forceinline__ float bn_scale(float gamma, float invstd) { return __fmul_rn(gamma, invstd); }
__device__ __forceinline__ float bn_shift(float beta, float mean, float scale) { return __fmaf_rn(-mean, scale, beta); }
__device__ __forceinline__ float bn_apply(float x, float scale, float shift) { return __fmaf_rn(x, scale, shift); }

// The fused activation on a value already rounded to T: bitwise relu's and relu6's own CUDA kernels
// (relu: max(z, +0), NaN to 0; relu6: 0 at or below 0, 6 at or above 6, else z, NaN kept).
template <BnActivation A, typename T>
__device__ __forceinline__ T bn_activate(T z) {
  if constexpr (A == BnActivation::kRelu) return to_f(z) > 0.f ? z : from_f<T>(0.f);
  if constexpr (A == BnActivation::kRelu6) {
    const float v = to_f(z);
    return v <= 0.f ? from_f<T>(0.f) : (v >= 6.f ? from_f<T>(6.f) : z);
  }
  return z;
}
// Whether the activation's gradient passes at an output value y (relu6's as TF's Relu6Grad: 0 < y < 6).
template <BnActivation A>
__device__ __forceinline__ bool bn_act_passes(float y) {
  if constexpr (A == BnActivation::kRelu) return y > 0.f;
  if constexpr (A == BnActivation::kRelu6) return y > 0.f && y < 6.f;
  return true;
}

struct PackedGrid {
  dim3 block;
  unsigned tiles = 1;  // blocks along the channels
};
// px = min(C / V, 32) packs side by side (a warp reads up to 512 contiguous bytes of a row), lanes =
// 256 / px rows.
inline PackedGrid packed_grid(int64_t c, int v) {
  const int64_t packs = c / v;
  const int px = static_cast<int>(packs < kPackedMaxPacksSideBySide ? packs : kPackedMaxPacksSideBySide);
  PackedGrid g;
  g.block = dim3(static_cast<unsigned>(px), static_cast<unsigned>(kPackedThreads / px));
  g.tiles = static_cast<unsigned>(packed_tiles(c, v));
  return g;
}
// Blocks along the rows for an elementwise pass over m rows: enough for a few waves, each thread then
// striding over several rows.
inline unsigned packed_row_blocks(int64_t m, const PackedGrid& g) {
  const int64_t per_block = g.block.y, want = (m + per_block - 1) / per_block;
  const int64_t cap = 8192 / g.tiles > 1 ? 8192 / g.tiles : 1;
  return static_cast<unsigned>(want < cap ? (want > 0 ? want : 1) : cap);
}


// The first channel of this thread's pack (>= C for the idle threads of a last, partial tile).
__device__ __forceinline__ int64_t pack_channel(int v) {
  return (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * v;
}

// The block's per-thread sums added over the row lanes in lane order, stored as
// partials[((ch0 + e) * runs + run) * 2 + j] (j = 0: s0, 1: s1). Called by every thread of the block.
template <int V>
__device__ __forceinline__ void store_partials(int64_t c, int64_t runs, int64_t ch0, const double (&s0)[V],
                                               const double (&s1)[V], double* partials) {
  __shared__ double sums[2][kPackedThreads * V];
  const int slot = (threadIdx.y * blockDim.x + threadIdx.x) * V;
#pragma unroll
  for (int e = 0; e < V; ++e) {
    sums[0][slot + e] = s0[e];
    sums[1][slot + e] = s1[e];
  }
  __syncthreads();
  if (threadIdx.y != 0 || ch0 >= c) return;
  for (int e = 0; e < V; ++e)
    for (int j = 0; j < 2; ++j) {
      double acc = 0;
      for (unsigned l = 0; l < blockDim.y; ++l) acc += sums[j][(l * blockDim.x + threadIdx.x) * V + e];
      partials[((ch0 + e) * runs + blockIdx.y) * 2 + j] = acc;
    }
}

// sum(x - pivot) and sum((x - pivot)^2) per channel and run (pivot as stats_pivot gives it).
template <typename T, int V, typename Pivot>
__global__ void stats_kernel(int64_t m, int64_t c, BnSplit sp, const T* x, const float* pivot, Pivot stats_pivot,
                             double* partials) {
  const int64_t ch0 = pack_channel(V);
  const bool on = ch0 < c;
  double k[V], s0[V], s1[V];
#pragma unroll
  for (int e = 0; e < V; ++e) {
    k[e] = on ? stats_pivot(pivot[ch0 + e]) : 0.0;
    s0[e] = s1[e] = 0.0;
  }
  if (on) {
    const RowRun rr = row_run(sp, m, blockIdx.y);
    // Unrolled: the next rows' loads are issued before this row's sums (the same order of additions:
    // bitwise the rolled loop), more bytes in flight for a pass that is otherwise latency-bound.
#pragma unroll 4
    for (int64_t r = rr.begin + threadIdx.y; r < rr.end; r += blockDim.y) {
      const Pack<T, V> v = load_pack<T, V>(x + r * c + ch0);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const double d = static_cast<double>(to_f(v.v[e])) - k[e];
        s0[e] += d;
        s1[e] += d * d;
      }
    }
  }
  store_partials<V>(c, sp.runs, ch0, s0, s1, partials);
}

// Where a fused activation's gradient passes, from the layer's output y (act_y) or, when mask_beta is
// given, from x: the forward's normalised value z = round_T(x * scale + shift) recomputed with the
// normalise kernel's arithmetic (bitwise the same z), whose activation passes exactly where y's does —
// one tensor fewer to read in each backward pass (batch_norm+relu, batch_norm+relu6).
template <BnActivation Act, typename T, int V>
struct ActMask {
  float scale[V], shift[V];
  const T* act_y;
  bool from_x;

  __device__ void init(const float* gamma, const float* mask_beta, const float* mean, const float* invstd,
                       int64_t ch0, const T* y) {
    act_y = y;
    from_x = mask_beta != nullptr;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      scale[e] = from_x ? bn_scale(gamma[ch0 + e], invstd[ch0 + e]) : 0.f;
      shift[e] = from_x ? bn_shift(mask_beta[ch0 + e], mean[ch0 + e], scale[e]) : 0.f;
    }
  }
  // The activation's pass mask of the V values at offset o (x's pack already loaded).
  __device__ void passes(int64_t o, const Pack<T, V>& xv, bool (&pass)[V]) const {
    if (from_x) {
#pragma unroll
      for (int e = 0; e < V; ++e) pass[e] = bn_act_passes<Act>(to_f(from_f<T>(bn_apply(to_f(xv.v[e]), scale[e], shift[e]))));
    } else {
      const Pack<T, V> yv = load_pack<T, V>(act_y + o);
#pragma unroll
      for (int e = 0; e < V; ++e) pass[e] = bn_act_passes<Act>(to_f(yv.v[e]));
    }
  }
};

// sum(g) and sum(g * xhat) per channel and run, g = dy (or 0 where a fused activation's gradient stops:
// ActMask).
template <typename T, BnActivation Act, int V>
__global__ void grad_kernel(int64_t m, int64_t c, BnSplit sp, const T* x, const float* gamma, const float* mask_beta,
                            const float* mean_s, const float* invstd_s, const T* dy, const T* relu_y,
                            double* partials) {
  const int64_t ch0 = pack_channel(V);
  const bool on = ch0 < c;
  double mean[V], invstd[V], s0[V], s1[V];
#pragma unroll
  for (int e = 0; e < V; ++e) {
    mean[e] = on ? mean_s[ch0 + e] : 0.0;
    invstd[e] = on ? invstd_s[ch0 + e] : 0.0;
    s0[e] = s1[e] = 0.0;
  }
  ActMask<Act, T, V> mask;
  if (Act != BnActivation::kNone && on) mask.init(gamma, mask_beta, mean_s, invstd_s, ch0, relu_y);
  if (on) {
    const RowRun rr = row_run(sp, m, blockIdx.y);
    // Unrolled: the next rows' loads are issued before this row's sums (the same order of additions:
    // bitwise the rolled loop), more bytes in flight for a pass that is otherwise latency-bound.
#pragma unroll 4
    for (int64_t r = rr.begin + threadIdx.y; r < rr.end; r += blockDim.y) {
      const int64_t o = r * c + ch0;
      const Pack<T, V> xv = load_pack<T, V>(x + o), gv = load_pack<T, V>(dy + o);
      bool pass[V];
      if constexpr (Act != BnActivation::kNone) mask.passes(o, xv, pass);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        double g = to_f(gv.v[e]);
        if constexpr (Act != BnActivation::kNone) g = pass[e] ? g : 0.0;
        s0[e] += g;
        s1[e] += g * (static_cast<double>(to_f(xv.v[e])) - mean[e]) * invstd[e];
      }
    }
  }
  store_partials<V>(c, sp.runs, ch0, s0, s1, partials);
}

// y = x * scale + shift, scale = gamma * invstd, shift = beta - mean * scale (the CPU's formula), then
// `epilogue` (bn_output: relu, residual add) on each element: the generic kernels' arithmetic.
template <typename T, bool Add, int V, typename Epilogue>
__global__ void normalize_kernel(int64_t m, int64_t c, const T* x, const float* gamma, const float* beta,
                                 const float* mean, const float* invstd, const T* r, T* y, Epilogue epilogue) {
  const int64_t ch0 = pack_channel(V);
  if (ch0 >= c) return;
  float scale[V], shift[V];
#pragma unroll
  for (int e = 0; e < V; ++e) {
    scale[e] = bn_scale(gamma[ch0 + e], invstd[ch0 + e]);
    shift[e] = bn_shift(beta[ch0 + e], mean[ch0 + e], scale[e]);
  }
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
  for (int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; row < m; row += stride) {
    const int64_t o = row * c + ch0;
    const Pack<T, V> in = load_pack<T, V>(x + o);
    Pack<T, V> res, out;
    if constexpr (Add) res = load_pack<T, V>(r + o);
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = epilogue(bn_apply(to_f(in.v[e]), scale[e], shift[e]), Add ? res.v[e] : T{});
    store_pack<T, V>(y + o, out);
  }
}

// dx = gamma * invstd * (g - a - xhat * b), a and b the channel's coefficients (coef, 2 doubles each).
template <typename T, BnActivation Act, int V>
__global__ void dx_kernel(int64_t m, int64_t c, const T* x, const float* gamma, const float* mask_beta,
                          const float* mean_s, const float* invstd_s, const T* dy, const T* relu_y, const double* coef,
                          T* dx) {
  const int64_t ch0 = pack_channel(V);
  if (ch0 >= c) return;
  ActMask<Act, T, V> mask;
  if (Act != BnActivation::kNone) mask.init(gamma, mask_beta, mean_s, invstd_s, ch0, relu_y);
  float g_inv[V], mean[V], invstd[V], a[V], b[V];
#pragma unroll
  for (int e = 0; e < V; ++e) {
    invstd[e] = invstd_s[ch0 + e];
    g_inv[e] = gamma[ch0 + e] * invstd[e];
    mean[e] = mean_s[ch0 + e];
    a[e] = static_cast<float>(coef[2 * (ch0 + e)]);
    b[e] = static_cast<float>(coef[2 * (ch0 + e) + 1]);
  }
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.y;
  for (int64_t row = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; row < m; row += stride) {
    const int64_t o = row * c + ch0;
    const Pack<T, V> xv = load_pack<T, V>(x + o), gv = load_pack<T, V>(dy + o);
    Pack<T, V> out;
    bool pass[V];
    if constexpr (Act != BnActivation::kNone) mask.passes(o, xv, pass);
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float xhat = (to_f(xv.v[e]) - mean[e]) * invstd[e];
      float g = to_f(gv.v[e]);
      if constexpr (Act != BnActivation::kNone) g = pass[e] ? g : 0.f;
      out.v[e] = from_f<T>(g_inv[e] * (g - a[e] - xhat * b[e]));
    }
    store_pack<T, V>(dx + o, out);
  }
}

}  // namespace fastnn::ops::gpu::packed
