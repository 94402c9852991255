// Window kernels: 2-D max / average pooling (NCHW, and NHWC when Pool2dParams::nhwc) and LRN across
// channels, and the host launchers that pick between these one-element 64-bit kernels and
// pool32_kernels.cuh's (32-bit index math; NHWC with 16-byte channel packs). Forward: one thread per output.
// Backward: one thread per input element that gathers from every window covering it, in the CPU's
// scan order, so there are no atomics and f32 results match the CPU's summation order.
//
// These are custom kernels rather than cuDNN because the ops' semantics are not cuDNN's: asymmetric
// ("same") padding, TensorFlow's count_include_pad=false divisor, first-maximum tie breaking, and LRN
// with any radius that also yields the `scale` tensor its backward reads.
#include <cstdint>
#include <initializer_list>

#include "core/fast_divide.h"
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/avg_pool2d.h"
#include "trainer/ops/lrn.h"
#include "trainer/ops/max_pool2d.h"
#include "trainer/ops/pool32_kernels.cuh"

namespace fastnn::ops::gpu {

using namespace cuda;  // device_util.cuh
using namespace pool32;          // pool32_kernels.cuh

namespace {

struct Span2 {
  int64_t hb, he, wb, we;
};

__device__ __forceinline__ Span2 window_at(const Pool2dParams& p, int64_t op, int64_t oq) {
  const Window2d& g = p.win;
  const int64_t h0 = op * g.stride_h - g.pad_top, w0 = oq * g.stride_w - g.pad_left;
  return Span2{h0 > 0 ? h0 : 0, h0 + g.r < p.h ? h0 + g.r : p.h, w0 > 0 ? w0 : 0, w0 + g.s < p.w ? w0 + g.s : p.w};
}

// The outputs whose windows contain input row ih: [lo, hi] (empty when lo > hi).
__device__ __forceinline__ void covering(int64_t i, int64_t pad, int64_t k, int64_t stride, int64_t out,
                                         int64_t& lo, int64_t& hi) {
  const int64_t num = i + pad - k + 1;  // first output o with o*stride - pad + k - 1 >= i
  lo = num <= 0 ? 0 : (num + stride - 1) / stride;
  hi = (i + pad) / stride;
  if (hi > out - 1) hi = out - 1;
}

// One (sample, channel) plane of x and of y in either layout: element k of the input plane (k = ih * W +
// iw) is x[in + k * step], element k of the output plane (k = op * Q + oq) is y[out + k * step]. NCHW
// planes are contiguous (step 1); NHWC planes interleave the channels (step C), and the flat index puts
// the channel fastest, so neighbouring threads read neighbouring channels.
struct Plane {
  int64_t in, out, step, pos;  // pos: the thread's element within its plane
};
// Flat index i over `plane_size` elements a plane (the output plane's forward, the input plane's backward).
__device__ __forceinline__ Plane plane_of(const Pool2dParams& p, int64_t i, int64_t plane_size) {
  const int64_t hw = p.h * p.w, pq = p.win.p * p.win.q;
  if (!p.nhwc) {
    const int64_t nc = i / plane_size;
    return Plane{nc * hw, nc * pq, 1, i - nc * plane_size};
  }
  const int64_t c = i % p.c, rest = i / p.c, n = rest / plane_size;
  return Plane{n * hw * p.c + c, n * pq * p.c + c, p.c, rest - n * plane_size};
}
// The flat index of element k of the plane of flat index i (same layout as i).
__device__ __forceinline__ int64_t plane_elem(const Plane& pl, int64_t base, int64_t k) { return base + k * pl.step; }

// Index within the plane of the first maximum (scan order), -1 for an empty window.
template <typename T>
__device__ __forceinline__ int64_t argmax_at(const Pool2dParams& p, const T* x, const Plane& pl, int64_t op, int64_t oq) {
  const Span2 s = window_at(p, op, oq);
  int64_t best = -1;
  float best_v = 0.f;
  for (int64_t ih = s.hb; ih < s.he; ++ih)
    for (int64_t iw = s.wb; iw < s.we; ++iw) {
      const float v = to_f(x[plane_elem(pl, pl.in, ih * p.w + iw)]);
      if (best < 0 || v > best_v) best = ih * p.w + iw, best_v = v;
    }
  return best;
}

__device__ __forceinline__ double divisor_at(const Pool2dParams& p, const Span2& s) {
  if (p.count_include_pad) return static_cast<double>(p.win.r * p.win.s);
  const int64_t dh = s.he - s.hb > 0 ? s.he - s.hb : 0, dw = s.we - s.wb > 0 ? s.we - s.wb : 0;
  return static_cast<double>(dh * dw > 0 ? dh * dw : 1);
}

template <typename T>
__global__ void max_pool_fwd_kernel(Pool2dParams p, const T* x, T* y) {
  const int64_t pq = p.win.p * p.win.q, total = p.n * p.c * pq;
  FASTNN_GRID_LOOP(i, total) {
    const Plane pl = plane_of(p, i, pq);
    const int64_t op = pl.pos / p.win.q, oq = pl.pos - op * p.win.q;
    const int64_t best = argmax_at(p, x, pl, op, oq);
    y[i] = best < 0 ? from_f<T>(0.f) : x[plane_elem(pl, pl.in, best)];
  }
}

template <typename T>
__global__ void max_pool_bwd_kernel(Pool2dParams p, const T* x, const T* dy, T* dx, bool accumulate) {
  const int64_t hw = p.h * p.w, total = p.n * p.c * hw;
  FASTNN_GRID_LOOP(i, total) {
    const Plane pl = plane_of(p, i, hw);
    const int64_t ih = pl.pos / p.w, iw = pl.pos - ih * p.w;
    int64_t ph0, ph1, pw0, pw1;
    covering(ih, p.win.pad_top, p.win.r, p.win.stride_h, p.win.p, ph0, ph1);
    covering(iw, p.win.pad_left, p.win.s, p.win.stride_w, p.win.q, pw0, pw1);
    float acc = 0.f;
    for (int64_t op = ph0; op <= ph1; ++op)
      for (int64_t oq = pw0; oq <= pw1; ++oq)
        if (argmax_at(p, x, pl, op, oq) == pl.pos) acc += to_f(dy[plane_elem(pl, pl.out, op * p.win.q + oq)]);
    store_pool_grad(dx + i, acc, accumulate);
  }
}

template <typename T>
__global__ void avg_pool_fwd_kernel(Pool2dParams p, const T* x, T* y) {
  const int64_t pq = p.win.p * p.win.q, total = p.n * p.c * pq;
  FASTNN_GRID_LOOP(i, total) {
    const Plane pl = plane_of(p, i, pq);
    const int64_t op = pl.pos / p.win.q, oq = pl.pos - op * p.win.q;
    const Span2 s = window_at(p, op, oq);
    double acc = 0;
    for (int64_t ih = s.hb; ih < s.he; ++ih)
      for (int64_t iw = s.wb; iw < s.we; ++iw) acc += to_f(x[plane_elem(pl, pl.in, ih * p.w + iw)]);
    y[i] = from_f<T>(static_cast<float>(acc / divisor_at(p, s)));
  }
}

template <typename T>
__global__ void avg_pool_bwd_kernel(Pool2dParams p, const T* dy, T* dx) {
  const int64_t hw = p.h * p.w, total = p.n * p.c * hw;
  FASTNN_GRID_LOOP(i, total) {
    const Plane pl = plane_of(p, i, hw);
    const int64_t ih = pl.pos / p.w, iw = pl.pos - ih * p.w;
    int64_t ph0, ph1, pw0, pw1;
    covering(ih, p.win.pad_top, p.win.r, p.win.stride_h, p.win.p, ph0, ph1);
    covering(iw, p.win.pad_left, p.win.s, p.win.stride_w, p.win.q, pw0, pw1);
    float acc = 0.f;
    for (int64_t op = ph0; op <= ph1; ++op)
      for (int64_t oq = pw0; oq <= pw1; ++oq)
        acc += static_cast<float>(to_f(dy[plane_elem(pl, pl.out, op * p.win.q + oq)]) /
                                  divisor_at(p, window_at(p, op, oq)));
    dx[i] = from_f<T>(acc);
  }
}

// Element (n, c, i) of an [N, C, hw] tensor and its channel window [lo, hi].
struct LrnIndex {
  int64_t base, c, lo, hi;  // base: offset of (n, 0, i)
};
__device__ __forceinline__ LrnIndex lrn_index(const LrnParams& p, int64_t idx) {
  const int64_t plane = p.c * p.hw, n = idx / plane, rest = idx - n * plane, c = rest / p.hw, i = rest - c * p.hw;
  const int64_t lo = c - p.depth_radius > 0 ? c - p.depth_radius : 0;
  const int64_t hi = c + p.depth_radius < p.c - 1 ? c + p.depth_radius : p.c - 1;
  return LrnIndex{n * plane + i, c, lo, hi};
}

template <typename T>
__global__ void lrn_fwd_kernel(LrnParams p, const T* x, T* y, T* scale) {
  const float bias = static_cast<float>(p.bias), alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  FASTNN_GRID_LOOP(idx, p.n * p.c * p.hw) {
    const LrnIndex li = lrn_index(p, idx);
    float sum = 0.f;
    for (int64_t k = li.lo; k <= li.hi; ++k) {
      const float v = to_f(x[li.base + k * p.hw]);
      sum += v * v;
    }
    const float sc = bias + alpha * sum;
    scale[idx] = from_f<T>(sc);
    y[idx] = from_f<T>(to_f(x[idx]) * powf(sc, -beta));
  }
}

template <typename T>
__global__ void lrn_bwd_terms_kernel(int64_t total, float beta, const T* x, const T* scale, const T* dy, float* t) {
  FASTNN_GRID_LOOP(i, total) t[i] = to_f(dy[i]) * to_f(x[i]) * powf(to_f(scale[i]), -beta - 1.f);
}

template <typename T>
__global__ void lrn_bwd_kernel(LrnParams p, const T* x, const T* scale, const T* dy, const float* t, T* dx) {
  const float alpha = static_cast<float>(p.alpha), beta = static_cast<float>(p.beta);
  FASTNN_GRID_LOOP(idx, p.n * p.c * p.hw) {
    const LrnIndex li = lrn_index(p, idx);
    float sum = 0.f;
    for (int64_t k = li.lo; k <= li.hi; ++k) sum += t[li.base + k * p.hw];
    dx[idx] = from_f<T>(to_f(dy[idx]) * powf(to_f(scale[idx]), -beta) - 2.f * alpha * beta * to_f(x[idx]) * sum);
  }
}

}  // namespace

// NHWC, C a multiple of V = 16 / sizeof(T), every tensor 16-byte aligned: the V-channel kernels.
template <typename T>
bool pool_packed(const Pool2dParams& p, std::initializer_list<const void*> ptrs) {
  constexpr int64_t kV = 16 / sizeof(T);
  return p.nhwc && p.c % kV == 0 && aligned16(ptrs);
}

size_t max_pool2d_workspace_bytes(const Pool2dParams& p) {
  MaxPool32 m;
  if (!max_pool32(p, m) || p.win.r * p.win.s == 1) return 0;
  return static_cast<size_t>(p.n * p.c * p.win.p * p.win.q);
}

template <typename T>
void max_pool2d_forward(const Pool2dParams& p, const T* x, T* y, cudaStream_t s) {
  const int64_t total = p.n * p.c * p.win.p * p.win.q;
  if (total == 0) return;
  constexpr int kV = 16 / sizeof(T);
  MaxPool32 m;
  if (!max_pool32(p, m)) {
    max_pool_fwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(p, x, y);
  } else if (pool_packed<T>(p, {x, y})) {
    const int64_t packs = total / kV;
    max_pool_packed_kernel<T, kV, true><<<grid_for(packs), kThreads, 0, s>>>(
        m, static_cast<uint32_t>(packs), FastDivide(static_cast<uint32_t>(p.c / kV)), x, y, nullptr);
  } else {
    const uint32_t t = static_cast<uint32_t>(total);
    if (p.nhwc) max_pool32_fwd_kernel<T, true><<<grid_for(total), kThreads, 0, s>>>(m, t, x, y);
    else max_pool32_fwd_kernel<T, false><<<grid_for(total), kThreads, 0, s>>>(m, t, x, y);
  }
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void max_pool2d_backward(const Pool2dParams& p, const T* x, const T* dy, T* dx, void* ws, cudaStream_t s,
                         bool accumulate) {
  const int64_t total = p.n * p.c * p.h * p.w;
  if (total == 0) return;
  constexpr int kV = 16 / sizeof(T);
  MaxPool32 m;
  if (!max_pool32(p, m)) {
    max_pool_bwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(p, x, dy, dx, accumulate);
    CUDA_CHECK_LAUNCH();
    return;
  }
  const bool packed = pool_packed<T>(p, {x, dy, dx});
  const FastDivide by_packs(static_cast<uint32_t>(packed ? p.c / kV : 1));
  // Pass 1: every window's argmax into the workspace (1x1 windows need none: their one element).
  uint8_t* where = nullptr;
  if (p.win.r * p.win.s > 1) {
    FASTNN_CHECK(ws, "max_pool2d: the backward needs max_pool2d_workspace_bytes of workspace");
    where = static_cast<uint8_t*>(ws);
    const int64_t outs = p.n * p.c * p.win.p * p.win.q;
    if (packed)
      max_pool_packed_kernel<T, kV, false><<<grid_for(outs / kV), kThreads, 0, s>>>(
          m, static_cast<uint32_t>(outs / kV), by_packs, x, nullptr, where);
    else if (p.nhwc)
      max_pool32_argmax_kernel<T, true><<<grid_for(outs), kThreads, 0, s>>>(m, static_cast<uint32_t>(outs), x, where);
    else
      max_pool32_argmax_kernel<T, false><<<grid_for(outs), kThreads, 0, s>>>(m, static_cast<uint32_t>(outs), x, where);
    CUDA_CHECK_LAUNCH();
  }
  // Pass 2: the gather per input.
  const uint32_t t = static_cast<uint32_t>(total);
  if (packed)
    max_pool_packed_bwd_kernel<T, kV><<<grid_for(total / kV), kThreads, 0, s>>>(m, t / kV, by_packs, where, dy, dx,
                                                                                 accumulate);
  else if (p.nhwc)
    max_pool32_bwd_kernel<T, true><<<grid_for(total), kThreads, 0, s>>>(m, t, where, dy, dx, accumulate);
  else
    max_pool32_bwd_kernel<T, false><<<grid_for(total), kThreads, 0, s>>>(m, t, where, dy, dx, accumulate);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void avg_pool2d_forward(const Pool2dParams& p, const T* x, T* y, cudaStream_t s) {
  const int64_t total = p.n * p.c * p.win.p * p.win.q;
  if (total == 0) return;
  constexpr int kV = 16 / sizeof(T);
  MaxPool32 m;
  if (max_pool32(p, m) && pool_packed<T>(p, {x, y})) {
    const int64_t packs = total / kV;
    avg_pool_packed_kernel<T, kV><<<grid_for(packs), kThreads, 0, s>>>(
        m, p.count_include_pad, static_cast<uint32_t>(packs), FastDivide(static_cast<uint32_t>(p.c / kV)), x, y);
  } else {
    avg_pool_fwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(p, x, y);
  }
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void avg_pool2d_backward(const Pool2dParams& p, const T* dy, T* dx, cudaStream_t s) {
  const int64_t total = p.n * p.c * p.h * p.w;
  if (total == 0) return;
  constexpr int kV = 16 / sizeof(T);
  MaxPool32 m;
  if (max_pool32(p, m) && pool_packed<T>(p, {dy, dx})) {
    const int64_t packs = total / kV;
    avg_pool_packed_bwd_kernel<T, kV><<<grid_for(packs), kThreads, 0, s>>>(
        m, p.count_include_pad, static_cast<uint32_t>(packs), FastDivide(static_cast<uint32_t>(p.c / kV)), dy, dx);
  } else {
    avg_pool_bwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(p, dy, dx);
  }
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void lrn_forward(const LrnParams& p, const T* x, T* y, T* scale, cudaStream_t s) {
  const int64_t total = p.n * p.c * p.hw;
  if (total == 0) return;
  lrn_fwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(p, x, y, scale);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void lrn_backward(const LrnParams& p, const T* x, const T* scale, const T* dy, T* dx, float* ws, cudaStream_t s) {
  const int64_t total = p.n * p.c * p.hw;
  if (total == 0) return;
  lrn_bwd_terms_kernel<T><<<grid_for(total), kThreads, 0, s>>>(total, static_cast<float>(p.beta), x, scale, dy, ws);
  CUDA_CHECK_LAUNCH();
  lrn_bwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(p, x, scale, dy, ws, dx);
  CUDA_CHECK_LAUNCH();
}

#define FASTNN_INSTANTIATE(T)                                                                          \
  template void max_pool2d_forward<T>(const Pool2dParams&, const T*, T*, cudaStream_t);               \
  template void max_pool2d_backward<T>(const Pool2dParams&, const T*, const T*, T*, void*, cudaStream_t, bool); \
  template void avg_pool2d_forward<T>(const Pool2dParams&, const T*, T*, cudaStream_t);               \
  template void avg_pool2d_backward<T>(const Pool2dParams&, const T*, T*, cudaStream_t);              \
  template void lrn_forward<T>(const LrnParams&, const T*, T*, T*, cudaStream_t);                     \
  template void lrn_backward<T>(const LrnParams&, const T*, const T*, const T*, T*, float*, cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace fastnn::ops::gpu
