// depthwise_conv2d over NHWC with one filter per channel (multiplier 1: every MobileNet) when C is a
// multiple of V = 16 / sizeof(T), the tensors are 16-byte aligned and have fewer than 2^31 elements.
// Included by depthwise_conv2d_cuda.cu, which keeps the one-element kernels for the rest.
//
// Why: the one-element kernels took 50.8 of MobileNet v2's 75.4 ms fp16 step on an H200 (2026-11-27):
// 2-byte loads, 64-bit index division per element and tap, and a filter gradient that re-read dy and x
// once per tap. Here a thread owns V neighbouring channels of a pixel: one 16-byte load per tap, 32-bit
// FastDivide index math, the filter taps read from a [taps, C] float copy of the weights (16-byte loads
// too; transposed once per pass by transpose_weights_kernel into the workspace).
//
// Forward and data gradient: the same arithmetic per output element as the one-element kernels (bias
// first, taps in (r, s) order, float accumulation), so their results are bitwise those kernels'.
// Filter gradient: a thread sums dy * x for its V channels and all R*S taps (3x3: 72 float accumulators
// for f16/bf16) over its rows of a run; the row lanes' sums are added in lane order in double into the
// partials the one-element NHWC filter kernel writes, and the shared finishing kernel adds the runs in
// a fixed order (warp_sum_runs), repeatable, dy and x read once per run instead of once per tap.
#pragma once

#include <cstdint>

#include "core/fast_divide.h"
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/channel_index.h"

namespace fastnn::ops::gpu::dw_packed {

using cuda::from_f;
using cuda::load_pack;
using cuda::Pack;
using cuda::store_pack;
using cuda::to_f;

constexpr int kThreads = 256;

// The geometry in 32-bit ints, with the divisors the kernels split flat indices by.
struct Geom32 {
  int n, h, w, c, r, s, sh, sw, dh, dw, pt, pl, p, q;
  FastDivide groups;  // C / V channel packs per pixel
  FastDivide q_div, p_div, w_div, h_div;
};

// Output pixel (n, op, oq) of flat pixel index pix (rows of Q, then P).
struct Pixel {
  int n, a, b;
};
__device__ __forceinline__ Pixel split_pixel(uint32_t pix, const FastDivide& cols, const FastDivide& rows) {
  const uint32_t t = cols.div(pix), n = rows.div(t);
  return Pixel{static_cast<int>(n), static_cast<int>(t - n * rows.divisor()), static_cast<int>(pix - t * cols.divisor())};
}

// The V float weights of channels c0.. at tap, from the [taps, C] copy.
template <int V>
__device__ __forceinline__ void load_taps(const float* wt, int c, int tap, int c0, float (&wv)[V]) {
  const float4* src = reinterpret_cast<const float4*>(wt + static_cast<int64_t>(tap) * c + c0);
#pragma unroll
  for (int j = 0; j < V / 4; ++j) {
    const float4 f = src[j];
    wv[4 * j] = f.x, wv[4 * j + 1] = f.y, wv[4 * j + 2] = f.z, wv[4 * j + 3] = f.w;
  }
}

// acc += the tap's weights times the V values at src (one 16-byte load), in channel order.
template <typename T, int V>
__device__ __forceinline__ void accumulate_tap(float (&acc)[V], const float* wt, int c, int tap, int c0, const T* src) {
  const Pack<T, V> v = load_pack<T, V>(src);
  float wv[V];
  load_taps<V>(wt, c, tap, c0, wv);
#pragma unroll
  for (int e = 0; e < V; ++e) acc[e] += wv[e] * to_f(v.v[e]);
}

// The V sums rounded to T, stored as one 16-byte pack at dst.
template <typename T, int V>
__device__ __forceinline__ void store_sums(T* dst, const float (&acc)[V]) {
  Pack<T, V> out;
#pragma unroll
  for (int e = 0; e < V; ++e) out.v[e] = from_f<T>(acc[e]);
  store_pack<T, V>(dst, out);
}

// wt[tap * C + k] = w[k * taps + tap], as float.
template <typename T>
__global__ void transpose_weights_kernel(int c, int taps, const T* w, float* wt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < c * taps; i += blockDim.x * gridDim.x) {
    const int tap = i / c, k = i - tap * c;
    wt[i] = to_f(w[k * taps + tap]);
  }
}

template <typename T, int V>
__global__ void forward_kernel(Geom32 g, uint32_t total, const T* x, const float* wt, const T* b, T* y) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const uint32_t pix = g.groups.div(i);
    const int c0 = static_cast<int>(i - pix * g.groups.divisor()) * V;
    const Pixel o = split_pixel(pix, g.q_div, g.p_div);
    float acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = b ? to_f(b[c0 + e]) : 0.f;
    const int h0 = o.a * g.sh - g.pt, w0 = o.b * g.sw - g.pl;
    for (int r = 0; r < g.r; ++r) {
      const int ih = h0 + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      for (int s = 0; s < g.s; ++s) {
        const int iw = w0 + s * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        accumulate_tap<T, V>(acc, wt, g.c, r * g.s + s, c0,
                             x + static_cast<uint32_t>(((o.n * g.h + ih) * g.w + iw) * g.c + c0));
      }
    }
    store_sums<T, V>(y + static_cast<uint32_t>(pix * g.c + c0), acc);
  }
}

// One input pixel's V channels: the output pixels whose windows cover it, gathered (no atomics).
template <typename T, int V>
__global__ void backward_data_kernel(Geom32 g, uint32_t total, const float* wt, const T* dy, T* dx) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const uint32_t pix = g.groups.div(i);
    const int c0 = static_cast<int>(i - pix * g.groups.divisor()) * V;
    const Pixel in = split_pixel(pix, g.w_div, g.h_div);
    float acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = 0.f;
    for (int r = 0; r < g.r; ++r) {
      const int th = in.a + g.pt - r * g.dh;
      if (th < 0 || th % g.sh != 0) continue;
      const int op = th / g.sh;
      if (op >= g.p) continue;
      for (int s = 0; s < g.s; ++s) {
        const int tw = in.b + g.pl - s * g.dw;
        if (tw < 0 || tw % g.sw != 0) continue;
        const int oq = tw / g.sw;
        if (oq >= g.q) continue;
        accumulate_tap<T, V>(acc, wt, g.c, r * g.s + s, c0,
                             dy + static_cast<uint32_t>(((in.n * g.p + op) * g.q + oq) * g.c + c0));
      }
    }
    store_sums<T, V>(dx + static_cast<uint32_t>(pix * g.c + c0), acc);
  }
}

// Block (x: px packs of V channels, y: row lanes), grid (channel tiles, runs of output rows). The
// window R x S is fixed at compile time (g.r == R, g.s == S) so the accumulators stay in registers.
// Writes partials[(tap * C + k) * runs + run].
template <typename T, int V, int R, int S>
__global__ void filter_partial_kernel(Geom32 g, BnSplit sp, const T* x, const T* dy, double* partials) {
  constexpr int Taps = R * S;
  const int c0 = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) * V);
  const bool on = c0 < g.c;
  float acc[Taps][V];
#pragma unroll
  for (int t = 0; t < Taps; ++t)
#pragma unroll
    for (int e = 0; e < V; ++e) acc[t][e] = 0.f;
  if (on) {
    const uint32_t rows = static_cast<uint32_t>(g.n) * g.p * g.q;
    const RowRun rr = row_run(sp, rows, blockIdx.y);
    for (uint32_t row = static_cast<uint32_t>(rr.begin) + threadIdx.y; row < rr.end; row += blockDim.y) {
      const Pixel o = split_pixel(row, g.q_div, g.p_div);
      const Pack<T, V> dv = load_pack<T, V>(dy + row * g.c + c0);
      float d[V];
#pragma unroll
      for (int e = 0; e < V; ++e) d[e] = to_f(dv.v[e]);
      const int h0 = o.a * g.sh - g.pt, w0 = o.b * g.sw - g.pl;
#pragma unroll
      for (int t = 0; t < Taps; ++t) {
        const int ih = h0 + (t / S) * g.dh, iw = w0 + (t % S) * g.dw;
        if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
        const Pack<T, V> xv = load_pack<T, V>(
            x + static_cast<uint32_t>(((o.n * g.h + ih) * g.w + iw) * g.c + c0));
#pragma unroll
        for (int e = 0; e < V; ++e) acc[t][e] += d[e] * to_f(xv.v[e]);
      }
    }
  }
  // Lanes in lane order, one tap at a time (a tap's sums of the block: 256 x V doubles of shared memory).
  __shared__ double sums[kThreads * V];
  const int slot = (threadIdx.y * blockDim.x + threadIdx.x) * V;
#pragma unroll
  for (int t = 0; t < Taps; ++t) {
#pragma unroll
    for (int e = 0; e < V; ++e) sums[slot + e] = acc[t][e];
    __syncthreads();
    if (threadIdx.y == 0 && on)
      for (int e = 0; e < V; ++e) {
        double total = 0;
        for (unsigned l = 0; l < blockDim.y; ++l) total += sums[(l * blockDim.x + threadIdx.x) * V + e];
        partials[(static_cast<int64_t>(t) * g.c + c0 + e) * sp.runs + blockIdx.y] = total;
      }
    __syncthreads();
  }
}

}  // namespace fastnn::ops::gpu::dw_packed
