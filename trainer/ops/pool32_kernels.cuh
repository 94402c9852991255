// Max and average pooling kernels with 32-bit index math (tensors under 2^31 elements: every real layer),
// and the NHWC kernels that take V = 16 / sizeof(T) channels a thread. Included by window_kernels.cu,
// whose one-element 64-bit kernels stay for the rest; results are bitwise theirs (see each section).
#pragma once

#include <cstdint>

#include "core/fast_divide.h"
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/avg_pool2d.h"
#include "trainer/ops/max_pool2d.h"

namespace fastnn::ops::gpu::pool32 {

using namespace cuda;  // device_util.cuh



// The max pool backward's store: its gradient sum rounded to T, or with accumulate (another consumer of x
// wrote its gradient first) added to what dx holds, rounded again — bitwise the graph's composite of a
// scratch buffer and the add kernel (the sum in float, left operand dx).
template <typename T>
__device__ __forceinline__ T pool_grad(float acc, T old, bool accumulate) {
  const T g = from_f<T>(acc);
  return accumulate ? from_f<T>(to_f(old) + to_f(g)) : g;
}
// The same into *dx, which is read only when accumulating.
template <typename T>
__device__ __forceinline__ void store_pool_grad(T* dx, float acc, bool accumulate) {
  *dx = accumulate ? pool_grad(acc, *dx, true) : from_f<T>(acc);
}

// ---- max pooling with 32-bit index math (tensors under 2^31 elements: every real layer) ----
// The kernels above spend most of their time on 64-bit divisions, and their backward recomputes the
// argmax of every window covering an input (four windows of nine for a 3x3 / 2 pool: 36 loads an
// element). These take the same decisions with FastDivide index math, and the backward first writes
// each window's argmax once (one byte: its position in the window) to the workspace, then gathers per
// input in the same (op, oq) order with the same float sum, so the results are bitwise the kernels'
// above (and the CPU's first-maximum rule).

// Coordinates of flat element i of an [N, C, A, B] tensor (NCHW) or [N, A, B, C] (NHWC), and where its
// plane starts in the other tensor of the pair (planes of `other_plane` = A' * B' elements).
struct PoolDivs {
  FastDivide c, b, a;  // by C (NHWC only), by B, by A
};
struct PoolPos {
  uint32_t a, b, other_base;
};
template <bool Nhwc>
__device__ __forceinline__ PoolPos pool_pos(uint32_t i, const PoolDivs& d, uint32_t other_plane) {
  PoolPos r;
  if constexpr (Nhwc) {
    const uint32_t c = d.c.divisor(), t0 = d.c.div(i), ch = i - t0 * c;
    const uint32_t t1 = d.b.div(t0), n = d.a.div(t1);
    r.b = t0 - t1 * d.b.divisor();
    r.a = t1 - n * d.a.divisor();
    r.other_base = n * other_plane * c + ch;
  } else {
    const uint32_t t1 = d.b.div(i), nc = d.a.div(t1);
    r.b = i - t1 * d.b.divisor();
    r.a = t1 - nc * d.a.divisor();
    r.other_base = nc * other_plane;
  }
  return r;
}

struct MaxPool32 {
  int h, w, p, q, r, s, stride_h, stride_w, pad_top, pad_left;
  uint32_t step;  // distance between neighbouring elements of a plane: C for NHWC, 1 for NCHW
  PoolDivs out_divs, in_divs;
};

// Output (op, oq)'s window: its unclipped origin (h0, w0) and the input rows [hb, he), columns [wb, we)
// inside the input.
struct Window32 {
  int h0, w0, hb, he, wb, we;
};
__device__ __forceinline__ Window32 window32(const MaxPool32& m, int op, int oq) {
  const int h0 = op * m.stride_h - m.pad_top, w0 = oq * m.stride_w - m.pad_left;
  return Window32{h0, w0, h0 > 0 ? h0 : 0, h0 + m.r < m.h ? h0 + m.r : m.h,
                  w0 > 0 ? w0 : 0, w0 + m.s < m.w ? w0 + m.s : m.w};
}
// Input (ih, iw)'s position in output (op, oq)'s window: what the argmax byte holds when it is the maximum.
__device__ __forceinline__ int position_in_window(const MaxPool32& m, int ih, int iw, int op, int oq) {
  return (ih - (op * m.stride_h - m.pad_top)) * m.s + (iw - (oq * m.stride_w - m.pad_left));
}

// The window's first maximum as its position in the window ((ih - h0) * s + (iw - w0)), -1 if empty.
template <typename T>
__device__ __forceinline__ int window_argmax(const MaxPool32& m, const T* x, uint32_t in_base, int op, int oq) {
  const Window32 g = window32(m, op, oq);
  int best = -1;
  float best_v = 0.f;
  for (int ih = g.hb; ih < g.he; ++ih)
    for (int iw = g.wb; iw < g.we; ++iw) {
      const float v = to_f(x[in_base + static_cast<uint32_t>(ih * m.w + iw) * m.step]);
      if (best < 0 || v > best_v) best = (ih - g.h0) * m.s + (iw - g.w0), best_v = v;
    }
  return best;
}

template <typename T, bool Nhwc>
__global__ void max_pool32_fwd_kernel(MaxPool32 m, uint32_t total, const T* x, T* y) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const PoolPos o = pool_pos<Nhwc>(i, m.out_divs, static_cast<uint32_t>(m.h * m.w));
    const int best = window_argmax(m, x, o.other_base, static_cast<int>(o.a), static_cast<int>(o.b));
    if (best < 0) {
      y[i] = from_f<T>(0.f);
    } else {
      const int ih = static_cast<int>(o.a) * m.stride_h - m.pad_top + best / m.s;
      const int iw = static_cast<int>(o.b) * m.stride_w - m.pad_left + best % m.s;
      y[i] = x[o.other_base + static_cast<uint32_t>(ih * m.w + iw) * m.step];
    }
  }
}

// Pass 1 of the backward: each output's argmax position, 255 for an empty window.
template <typename T, bool Nhwc>
__global__ void max_pool32_argmax_kernel(MaxPool32 m, uint32_t total, const T* x, uint8_t* where) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const PoolPos o = pool_pos<Nhwc>(i, m.out_divs, static_cast<uint32_t>(m.h * m.w));
    const int best = window_argmax(m, x, o.other_base, static_cast<int>(o.a), static_cast<int>(o.b));
    where[i] = static_cast<uint8_t>(best < 0 ? 255 : best);
  }
}

// The outputs whose windows cover input row i: [lo, hi] (empty when lo > hi), as covering() above.
__device__ __forceinline__ void covering32(int i, int pad, int k, int stride, int out, int& lo, int& hi) {
  const int num = i + pad - k + 1;
  lo = num <= 0 ? 0 : (num + stride - 1) / stride;
  hi = (i + pad) / stride;
  if (hi > out - 1) hi = out - 1;
}

// Pass 2: per input, dy of every covering window whose argmax is this input, in (op, oq) order. A 1x1
// window (where == null) always has its one element as its argmax.
template <typename T, bool Nhwc>
__global__ void max_pool32_bwd_kernel(MaxPool32 m, uint32_t total, const uint8_t* where, const T* dy, T* dx,
                                      bool accumulate) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const PoolPos in = pool_pos<Nhwc>(i, m.in_divs, static_cast<uint32_t>(m.p * m.q));
    const int ih = static_cast<int>(in.a), iw = static_cast<int>(in.b);
    int ph0, ph1, pw0, pw1;
    covering32(ih, m.pad_top, m.r, m.stride_h, m.p, ph0, ph1);
    covering32(iw, m.pad_left, m.s, m.stride_w, m.q, pw0, pw1);
    float acc = 0.f;
    for (int op = ph0; op <= ph1; ++op)
      for (int oq = pw0; oq <= pw1; ++oq) {
        const uint32_t o = in.other_base + static_cast<uint32_t>(op * m.q + oq) * m.step;
        if (!where || where[o] == position_in_window(m, ih, iw, op, oq)) acc += to_f(dy[o]);
      }
    store_pool_grad(dx + i, acc, accumulate);
  }
}

// ---- NHWC with C a multiple of V = 16 / sizeof(T): V channels a thread ----
// The kernels above take one element a thread, so their index math (a few FastDivides, the covering
// windows' divisions) is paid per 2-byte element and dominates. Here a thread takes V neighbouring channels
// of one position (16-byte loads and stores; V argmax bytes in one access), the same decisions and the
// same sums per element in the same order: bitwise the one-element kernels' results.
template <int V>
struct alignas(V) BytePack {
  uint8_t b[V];
};

// Position pos of an [N, A, B] grid of positions: (n, a, b).
struct GridPos {
  uint32_t n, a, b;
};
__device__ __forceinline__ GridPos grid_pos(uint32_t pos, const FastDivide& by_b, const FastDivide& by_a) {
  const uint32_t t = by_b.div(pos), n = by_a.div(t);
  return GridPos{n, t - n * by_a.divisor(), pos - t * by_b.divisor()};
}

// Pack i of a packed kernel's own tensor (`packs` packs a position, positions split by `divs`): its
// grid position, and where its image's V channels start in the other tensor of the pair (`other_plane`
// positions an image).
struct PackAt {
  GridPos at;
  uint32_t other_base;
};
template <int V>
__device__ __forceinline__ PackAt pack_at(uint32_t i, const FastDivide& packs, const PoolDivs& divs, uint32_t other_plane,
                                          uint32_t step) {
  const uint32_t pos = packs.div(i), pk = i - pos * packs.divisor();
  const GridPos g = grid_pos(pos, divs.b, divs.a);
  return PackAt{g, g.n * other_plane * step + pk * V};
}

// Forward (WriteY: y) or the backward's first pass (where): thread i takes pack i % packs of output
// position i / packs; y and where are indexed like the output, V elements at i * V.
template <typename T, int V, bool WriteY>
__global__ void max_pool_packed_kernel(MaxPool32 m, uint32_t total, FastDivide packs, const T* x, T* y,
                                       uint8_t* where) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const auto [o, in_base] = pack_at<V>(i, packs, m.out_divs, static_cast<uint32_t>(m.h * m.w), m.step);
    const Window32 g = window32(m, static_cast<int>(o.a), static_cast<int>(o.b));
    int best[V];
    float best_v[V];
    Pack<T, V> best_x;
#pragma unroll
    for (int e = 0; e < V; ++e) best[e] = -1, best_v[e] = 0.f, best_x.v[e] = from_f<T>(0.f);
    for (int ih = g.hb; ih < g.he; ++ih)
      for (int iw = g.wb; iw < g.we; ++iw) {
        const Pack<T, V> v =
            load_pack<T, V>(x + in_base + static_cast<uint32_t>(ih * m.w + iw) * m.step);
        const int here = (ih - g.h0) * m.s + (iw - g.w0);
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const float f = to_f(v.v[e]);
          if (best[e] < 0 || f > best_v[e]) best[e] = here, best_v[e] = f, best_x.v[e] = v.v[e];
        }
      }
    if constexpr (WriteY) {
      store_pack<T, V>(y + static_cast<size_t>(i) * V, best_x);
    } else {
      BytePack<V> w;
#pragma unroll
      for (int e = 0; e < V; ++e) w.b[e] = static_cast<uint8_t>(best[e] < 0 ? 255 : best[e]);
      *reinterpret_cast<BytePack<V>*>(where + static_cast<size_t>(i) * V) = w;
    }
  }
}

// The backward's gather: thread i takes pack i % packs of input position i / packs (where null: 1x1
// windows, whose one element is always the argmax).
template <typename T, int V>
__global__ void max_pool_packed_bwd_kernel(MaxPool32 m, uint32_t total, FastDivide packs, const uint8_t* where,
                                           const T* dy, T* dx, bool accumulate) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const auto [in, out_base] = pack_at<V>(i, packs, m.in_divs, static_cast<uint32_t>(m.p * m.q), m.step);
    const int ih = static_cast<int>(in.a), iw = static_cast<int>(in.b);
    int ph0, ph1, pw0, pw1;
    covering32(ih, m.pad_top, m.r, m.stride_h, m.p, ph0, ph1);
    covering32(iw, m.pad_left, m.s, m.stride_w, m.q, pw0, pw1);
    float acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = 0.f;
    for (int op = ph0; op <= ph1; ++op)
      for (int oq = pw0; oq <= pw1; ++oq) {
        const uint32_t o = out_base + static_cast<uint32_t>(op * m.q + oq) * m.step;
        const int here = position_in_window(m, ih, iw, op, oq);
        const Pack<T, V> g = load_pack<T, V>(dy + o);
        BytePack<V> w;
        if (where) w = *reinterpret_cast<const BytePack<V>*>(where + o);
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (!where || w.b[e] == here) acc[e] += to_f(g.v[e]);
      }
    Pack<T, V> out, old{};
    if (accumulate) old = load_pack<T, V>(dx + static_cast<size_t>(i) * V);
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = pool_grad(acc[e], old.v[e], accumulate);
    store_pack<T, V>(dx + static_cast<size_t>(i) * V, out);
  }
}

// ---- average pooling, NHWC with V channels a thread (C a multiple of V, 16-byte aligned tensors) ----
// The geometry of the 32-bit max-pool kernels (max_pool32), 16-byte loads, and per element the
// arithmetic of the one-element kernels below (forward: the window summed in double, divided by
// divisor_at's count in double; backward: each covering window's dy / count, rounded to float, added in
// (op, oq) order), so the results are theirs bit for bit.

__device__ __forceinline__ double divisor32(const MaxPool32& m, bool count_include_pad, const Window32& g) {
  if (count_include_pad) return static_cast<double>(m.r * m.s);
  const int dh = g.he - g.hb > 0 ? g.he - g.hb : 0, dw = g.we - g.wb > 0 ? g.we - g.wb : 0;
  return static_cast<double>(dh * dw > 0 ? dh * dw : 1);
}

template <typename T, int V>
__global__ void avg_pool_packed_kernel(MaxPool32 m, bool count_include_pad, uint32_t total, FastDivide packs,
                                       const T* x, T* y) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const auto [o, in_base] = pack_at<V>(i, packs, m.out_divs, static_cast<uint32_t>(m.h * m.w), m.step);
    const Window32 g = window32(m, static_cast<int>(o.a), static_cast<int>(o.b));
    double acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = 0;
    for (int ih = g.hb; ih < g.he; ++ih)
      for (int iw = g.wb; iw < g.we; ++iw) {
        const Pack<T, V> v =
            load_pack<T, V>(x + in_base + static_cast<uint32_t>(ih * m.w + iw) * m.step);
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] += to_f(v.v[e]);
      }
    const double d = divisor32(m, count_include_pad, g);
    Pack<T, V> out;
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = from_f<T>(static_cast<float>(acc[e] / d));
    store_pack<T, V>(y + static_cast<size_t>(i) * V, out);
  }
}

template <typename T, int V>
__global__ void avg_pool_packed_bwd_kernel(MaxPool32 m, bool count_include_pad, uint32_t total, FastDivide packs,
                                           const T* dy, T* dx) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += blockDim.x * gridDim.x) {
    const auto [in, out_base] = pack_at<V>(i, packs, m.in_divs, static_cast<uint32_t>(m.p * m.q), m.step);
    int ph0, ph1, pw0, pw1;
    covering32(static_cast<int>(in.a), m.pad_top, m.r, m.stride_h, m.p, ph0, ph1);
    covering32(static_cast<int>(in.b), m.pad_left, m.s, m.stride_w, m.q, pw0, pw1);
    float acc[V];
#pragma unroll
    for (int e = 0; e < V; ++e) acc[e] = 0.f;
    for (int op = ph0; op <= ph1; ++op)
      for (int oq = pw0; oq <= pw1; ++oq) {
        const double d = divisor32(m, count_include_pad, window32(m, op, oq));
        const Pack<T, V> g =
            load_pack<T, V>(dy + out_base + static_cast<uint32_t>(op * m.q + oq) * m.step);
#pragma unroll
        for (int e = 0; e < V; ++e) acc[e] += static_cast<float>(to_f(g.v[e]) / d);
      }
    Pack<T, V> out;
#pragma unroll
    for (int e = 0; e < V; ++e) out.v[e] = from_f<T>(acc[e]);
    store_pack<T, V>(dx + static_cast<size_t>(i) * V, out);
  }
}


// The 32-bit kernels' parameters, or false when a tensor has 2^31 elements or more, or a window more than
// 255 (its argmax position would not fit a byte).
inline bool max_pool32(const Pool2dParams& p, MaxPool32& m) {
  const Window2d& g = p.win;
  const int64_t in = p.n * p.c * p.h * p.w, out = p.n * p.c * g.p * g.q;
  if (!FastDivide::fits(in) || !FastDivide::fits(out) || g.r * g.s > 255 || in == 0 || out == 0) return false;
  m = MaxPool32{static_cast<int>(p.h), static_cast<int>(p.w), static_cast<int>(g.p), static_cast<int>(g.q),
                static_cast<int>(g.r), static_cast<int>(g.s), static_cast<int>(g.stride_h),
                static_cast<int>(g.stride_w), static_cast<int>(g.pad_top), static_cast<int>(g.pad_left),
                static_cast<uint32_t>(p.nhwc ? p.c : 1), {}, {}};
  const auto div = [](int64_t v) { return FastDivide(static_cast<uint32_t>(v)); };
  // NHWC: i -> (c | b | a | n); NCHW: i -> (b | a | nc).
  m.out_divs = PoolDivs{div(p.c), div(g.q), div(g.p)};
  m.in_divs = PoolDivs{div(p.c), div(p.w), div(p.h)};
  return true;
}

}  // namespace fastnn::ops::gpu::pool32
