// depthwise_conv2d on CUDA (ops/depthwise_conv2d.h): direct kernels and the OpKernel glue in one .cu,
// NCHW and NHWC (the header says how each pass is laid out).
// Every sum is in float (the filter gradient's block reduction in double); no atomics, so every pass is
// deterministic. cuDNN's grouped convolution is the alternative; measuring which is faster needs a GPU.
#include <algorithm>

#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/channel_index.h"
#include "trainer/ops/cuda_helpers.h"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/depthwise_conv2d.h"
#include "trainer/ops/depthwise_nhwc_packed.cuh"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace gpu {

using namespace cuda;  // device_util.cuh

namespace {

// The geometry as plain fields for device code; nhwc: x [N, H, W, C], y [N, P, Q, K].
struct Geom {
  int64_t n, c, h, w, m, k, r, s, sh, sw, dh, dw, pt, pl, p, q;
  bool nhwc;
};

Geom geom(const DepthwiseConv2dParams& prm) {
  const Window2d& g = prm.win;
  return Geom{prm.n,      prm.c,      prm.h,   prm.w,   prm.multiplier, prm.k(),    g.r,   g.s,
              g.stride_h, g.stride_w, g.dil_h, g.dil_w, g.pad_top,      g.pad_left, g.p,   g.q, prm.nhwc};
}

// Offsets of x[n, c, ih, iw] and y[n, k, op, oq] in the geometry's layout.
__device__ __forceinline__ int64_t x_at(const Geom& g, int64_t n, int64_t c, int64_t ih, int64_t iw) {
  return g.nhwc ? ((n * g.h + ih) * g.w + iw) * g.c + c : ((n * g.c + c) * g.h + ih) * g.w + iw;
}
__device__ __forceinline__ int64_t y_at(const Geom& g, int64_t n, int64_t k, int64_t op, int64_t oq) {
  return g.nhwc ? ((n * g.p + op) * g.q + oq) * g.k + k : ((n * g.k + k) * g.p + op) * g.q + oq;
}
// The coordinates of flat index i of an [n, ch, rows, cols] tensor in the geometry's layout (NHWC: the
// channel fastest).
struct Coords {
  int64_t n, ch, row, col;
};
__device__ __forceinline__ Coords coords(const Geom& g, int64_t i, int64_t ch, int64_t rows, int64_t cols) {
  if (g.nhwc) {
    const int64_t rest = i / ch;
    return Coords{rest / (cols * rows), i % ch, (rest / cols) % rows, rest % cols};
  }
  const int64_t plane = i / (cols * rows);
  return Coords{plane / ch, plane % ch, (i / cols) % rows, i % cols};
}

template <typename T>
__global__ void dw_fwd_kernel(Geom g, const T* x, const T* w, const T* b, T* y) {
  const int64_t total = g.n * g.k * g.p * g.q;
  FASTNN_GRID_LOOP(i, total) {
    const Coords o = coords(g, i, g.k, g.p, g.q);
    const int64_t k = o.ch, c = k / g.m;
    const T* wk = w + k * g.r * g.s;
    float acc = b ? to_f(b[k]) : 0.f;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t ih = o.row * g.sh - g.pt + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t iw = o.col * g.sw - g.pl + s * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        acc += to_f(wk[r * g.s + s]) * to_f(x[x_at(g, o.n, c, ih, iw)]);
      }
    }
    y[i] = from_f<T>(acc);
  }
}

template <typename T>
__global__ void dw_bwd_data_kernel(Geom g, const T* w, const T* dy, T* dx) {
  const int64_t total = g.n * g.c * g.h * g.w;
  FASTNN_GRID_LOOP(i, total) {
    const Coords in = coords(g, i, g.c, g.h, g.w);
    float acc = 0.f;
    for (int64_t mm = 0; mm < g.m; ++mm) {
      const int64_t k = in.ch * g.m + mm;
      const T* wk = w + k * g.r * g.s;
      for (int64_t r = 0; r < g.r; ++r) {
        const int64_t th = in.row + g.pt - r * g.dh;
        if (th < 0 || th % g.sh != 0) continue;
        const int64_t op = th / g.sh;
        if (op >= g.p) continue;
        for (int64_t s = 0; s < g.s; ++s) {
          const int64_t tw = in.col + g.pl - s * g.dw;
          if (tw < 0 || tw % g.sw != 0) continue;
          const int64_t oq = tw / g.sw;
          if (oq >= g.q) continue;
          acc += to_f(wk[r * g.s + s]) * to_f(dy[y_at(g, in.n, k, op, oq)]);
        }
      }
    }
    dx[i] = from_f<T>(acc);
  }
}

// NHWC filter gradient: the output pixels are M = N*P*Q rows of K channels. Block (32 channels, a run of
// rows: bn_split_rows, one tap); thread (channel lane x, row lane y) sums dy * x over its rows of the run
// in order, in double; the row lanes' sums are added in lane order into
// partials[(tap * K + k) * runs + run], which the finishing kernel adds (warp_sum_runs: a fixed order,
// repeatable). A warp reads 32 neighbouring channels of dy and x.
template <typename T>
__global__ void dw_nhwc_filter_partial_kernel(Geom g, BnSplit sp, const T* x, const T* dy, double* partials) {
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kRowChannels + threadIdx.x, run = blockIdx.y, tap = blockIdx.z;
  const int64_t r = tap / g.s, s = tap % g.s;
  double acc = 0;
  if (k < g.k) {
    const int64_t c = k / g.m;
    const RowRun rr = row_run(sp, g.n * g.p * g.q, run);
    for (int64_t row = rr.begin + threadIdx.y; row < rr.end; row += kRowLanes) {
      const int64_t oq = row % g.q, op = (row / g.q) % g.p, n = row / (g.q * g.p);
      const int64_t ih = op * g.sh - g.pt + r * g.dh, iw = oq * g.sw - g.pl + s * g.dw;
      if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
      acc += static_cast<double>(to_f(dy[row * g.k + k])) * to_f(x[x_at(g, n, c, ih, iw)]);
    }
  }
  __shared__ double lanes[kRowLanes][kRowChannels];
  lanes[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y != 0 || k >= g.k) return;
  double total = 0;
  for (int l = 0; l < kRowLanes; ++l) total += lanes[l][threadIdx.x];
  partials[(tap * g.k + k) * sp.runs + run] = total;
}

// dw [K, 1, R, S]: element i = k * R*S + tap.
template <typename T>
__global__ void dw_nhwc_filter_finish_kernel(Geom g, int64_t runs, const double* partials, T* dw) {
  const int64_t taps = g.r * g.s;
  FASTNN_WARP_LOOP(i, g.k * taps) {  // a warp per filter tap
    const int64_t k = i / taps, tap = i - k * taps;
    const double total = warp_sum_runs(runs, [&](int64_t run) { return partials[(tap * g.k + k) * runs + run]; });
    if ((threadIdx.x & 31) == 0) dw[i] = from_f<T>(static_cast<float>(total));
  }
}

BnSplit nhwc_filter_split(const DepthwiseConv2dParams& p) {
  return bn_split_rows(p.n * p.win.p * p.win.q, p.k());
}

// The packed NHWC kernels (depthwise_nhwc_packed.cuh) take the layer when it has one filter per channel,
// C a multiple of V = 16 / sizeof(T), fewer than 2^31 elements a tensor and 16-byte aligned tensors.
template <typename T>
constexpr int pack_width() {
  return static_cast<int>(16 / sizeof(T));
}
// Whether the packed kernels can take the layer for some storage type with v values a pack (the shape
// alone: what the workspace must hold room for); packed_nhwc adds the sizes and the tensors.
bool packed_shape(const DepthwiseConv2dParams& p, int v) { return p.nhwc && p.multiplier == 1 && p.c % v == 0; }

template <typename T>
bool packed_nhwc(const DepthwiseConv2dParams& p, std::initializer_list<const void*> tensors) {
  const int64_t in = p.n * p.h * p.w * p.c, out = p.n * p.win.p * p.win.q * p.c;
  return packed_shape(p, pack_width<T>()) && p.c > 0 && in > 0 && out > 0 && FastDivide::fits(in) &&
         FastDivide::fits(out) && aligned16(tensors);
}

template <typename T>
dw_packed::Geom32 packed_geom(const DepthwiseConv2dParams& prm) {
  const Window2d& g = prm.win;
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  auto div = [](int64_t v) { return FastDivide(static_cast<uint32_t>(v)); };
  return dw_packed::Geom32{i32(prm.n), i32(prm.h), i32(prm.w), i32(prm.c), i32(g.r), i32(g.s), i32(g.stride_h),
                           i32(g.stride_w), i32(g.dil_h), i32(g.dil_w), i32(g.pad_top), i32(g.pad_left), i32(g.p),
                           i32(g.q), div(prm.c / pack_width<T>()), div(g.q), div(g.p), div(prm.w), div(prm.h)};
}

// The workspace: the filter gradient's partial sums (and the bias gradient's, after them) from byte 0,
// the weights as [taps, C] floats for the packed kernels from wt_offset.
size_t filter_partials_bytes(const DepthwiseConv2dParams& p) {
  const int64_t m = p.n * p.win.p * p.win.q;
  int64_t runs = nhwc_filter_split(p).runs;
  for (int v : {8, 4})  // the packed 3x3 filter gradient's own runs, for 2- and 4-byte values
    if (packed_shape(p, v) && p.win.r == 3 && p.win.s == 3) runs = std::max(runs, packed_rows_split(m, p.k(), v).runs);
  const size_t filter = static_cast<size_t>(p.weight_numel()) * static_cast<size_t>(runs);
  const size_t rows = static_cast<size_t>(p.n * p.win.p * p.win.q);
  return std::max(filter * sizeof(double), p.bias ? bias_grad_workspace_bytes(static_cast<int64_t>(rows), p.k(), 1) : 0);
}
size_t wt_offset(const DepthwiseConv2dParams& p) { return align256(filter_partials_bytes(p)); }

// The [taps, C] float copy of w the packed kernels read, at wt_offset of the workspace.
template <typename T>
float* transposed_weights(const DepthwiseConv2dParams& p, const T* w, void* ws, cudaStream_t s) {
  FASTNN_CHECK(ws != nullptr, "depthwise_conv2d: the NHWC kernels need their workspace");
  float* wt = reinterpret_cast<float*>(static_cast<char*>(ws) + wt_offset(p));
  FASTNN_CHECK(aligned16({wt}), "depthwise_conv2d: the weights' copy is not 16-byte aligned in the workspace");
  const int taps = static_cast<int>(p.win.r * p.win.s), c = static_cast<int>(p.c);
  dw_packed::transpose_weights_kernel<T><<<grid_for(p.weight_numel()), kThreads, 0, s>>>(c, taps, w, wt);
  CUDA_CHECK_LAUNCH();
  return wt;
}

// One block per (k, r, s): dw = sum over n, p, q of dy[n, k, p, q] * x[n, k/M, ih, iw].
template <typename T>
__global__ void dw_bwd_filter_kernel(Geom g, const T* x, const T* dy, T* dw) {
  const int64_t tap = blockIdx.x, k = tap / (g.r * g.s), r = (tap / g.s) % g.r, s = tap % g.s;
  const int64_t c = k / g.m, pq = g.p * g.q, count = g.n * pq;
  float acc = 0.f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const int64_t n = i / pq, op = (i / g.q) % g.p, oq = i % g.q;
    const int64_t ih = op * g.sh - g.pt + r * g.dh, iw = oq * g.sw - g.pl + s * g.dw;
    if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
    acc += to_f(dy[(n * g.k + k) * pq + op * g.q + oq]) * to_f(x[((n * g.c + c) * g.h + ih) * g.w + iw]);
  }
  const double total = block_sum(static_cast<double>(acc));
  if (threadIdx.x == 0) dw[tap] = from_f<T>(static_cast<float>(total));
}

}  // namespace

template <typename T>
void depthwise_conv2d_forward(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y, void* ws,
                              cudaStream_t s) {
  const int64_t total = p.n * p.k() * p.win.p * p.win.q;
  if (total == 0) return;
  if (ws && packed_nhwc<T>(p, {x, y})) {
    const float* wt = transposed_weights(p, w, ws, s);
    const uint32_t packs = static_cast<uint32_t>(total / pack_width<T>());
    dw_packed::forward_kernel<T, pack_width<T>()>
        <<<grid_for(packs, dw_packed::kThreads), dw_packed::kThreads, 0, s>>>(packed_geom<T>(p), packs, x, wt, b, y);
  } else {
    dw_fwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(geom(p), x, w, b, y);
  }
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void depthwise_conv2d_backward_data(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx, void* ws,
                                    cudaStream_t s) {
  const int64_t total = p.n * p.c * p.h * p.w;
  if (total == 0) return;
  if (ws && packed_nhwc<T>(p, {dy, dx})) {
    const float* wt = transposed_weights(p, w, ws, s);
    const uint32_t packs = static_cast<uint32_t>(total / pack_width<T>());
    dw_packed::backward_data_kernel<T, pack_width<T>()>
        <<<grid_for(packs, dw_packed::kThreads), dw_packed::kThreads, 0, s>>>(packed_geom<T>(p), packs, wt, dy, dx);
  } else {
    dw_bwd_data_kernel<T><<<grid_for(total), kThreads, 0, s>>>(geom(p), w, dy, dx);
  }
  CUDA_CHECK_LAUNCH();
}

size_t depthwise_conv2d_workspace_bytes(const DepthwiseConv2dParams& p) {
  if (!p.nhwc) return 0;
  const bool packed = packed_shape(p, 8) || packed_shape(p, 4);  // the packed kernels' float weights
  return packed ? wt_offset(p) + static_cast<size_t>(p.weight_numel()) * sizeof(float) : filter_partials_bytes(p);
}

template <typename T>
void depthwise_conv2d_backward_filter(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw, T* db,
                                      void* ws, cudaStream_t s) {
  const Geom g = geom(p);
  if (dw && p.nhwc) {
    // MobileNet's 3x3 in the packed kernel (72 accumulators), with the packed kernels' own runs.
    const bool packed_pass = p.win.r == 3 && p.win.s == 3 && packed_nhwc<T>(p, {x, dy});
    const BnSplit sp = packed_pass ? packed_rows_split(p.n * p.win.p * p.win.q, p.c, pack_width<T>())
                                   : nhwc_filter_split(p);
    const int64_t taps = p.win.r * p.win.s;
    FASTNN_CHECK(ws && taps <= 65535 && sp.runs <= 65535, "depthwise_conv2d: NHWC filter gradient of ", taps,
                 " taps in ", sp.runs, " runs (or no workspace)");
    double* partials = static_cast<double*>(ws);
    if (packed_pass) {
      constexpr int v = pack_width<T>();
      const int64_t packs = p.c / v, px = std::min<int64_t>(packs, kPackedMaxPacksSideBySide);
      const dim3 block(static_cast<unsigned>(px), static_cast<unsigned>(dw_packed::kThreads / px));
      const dim3 grid(static_cast<unsigned>((packs + px - 1) / px), static_cast<unsigned>(sp.runs));
      dw_packed::filter_partial_kernel<T, v, 3, 3><<<grid, block, 0, s>>>(packed_geom<T>(p), sp, x, dy, partials);
      CUDA_CHECK_LAUNCH();
    } else if (p.n * p.win.p * p.win.q > 0) {
      const dim3 grid(static_cast<unsigned>(row_channel_tiles(p.k())), static_cast<unsigned>(sp.runs),
                      static_cast<unsigned>(taps));
      dw_nhwc_filter_partial_kernel<T><<<grid, dim3(kRowChannels, kRowLanes), 0, s>>>(g, sp, x, dy, partials);
      CUDA_CHECK_LAUNCH();
    }
    dw_nhwc_filter_finish_kernel<T><<<grid_for(p.weight_numel() * 32), kThreads, 0, s>>>(
        g, p.n * p.win.p * p.win.q > 0 ? sp.runs : 0, partials, dw);
    CUDA_CHECK_LAUNCH();
  } else if (dw) {
    const int64_t taps = p.weight_numel();
    FASTNN_CHECK(taps <= (int64_t{1} << 31) - 1, "depthwise_conv2d: ", taps, " filter taps exceed the grid");
    dw_bwd_filter_kernel<T><<<static_cast<unsigned>(taps), kThreads, 0, s>>>(g, x, dy, dw);
    CUDA_CHECK_LAUNCH();
  }
  // After the filter gradient on the same stream: its partial sums are consumed, the workspace is free.
  if (db && p.nhwc) bias_grad<T>(p.n * p.win.p * p.win.q, p.k(), 1, dy, db, ws, s);
  else if (db) bias_grad<T>(p.n, p.k(), p.win.p * p.win.q, dy, db, nullptr, s);  // one block per channel
}

#define FASTNN_INSTANTIATE(T)                                                                                   \
  template void depthwise_conv2d_forward<T>(const DepthwiseConv2dParams&, const T*, const T*, const T*, T*,    \
                                            void*, cudaStream_t);                                              \
  template void depthwise_conv2d_backward_data<T>(const DepthwiseConv2dParams&, const T*, const T*, T*, void*, \
                                                  cudaStream_t);                                               \
  template void depthwise_conv2d_backward_filter<T>(const DepthwiseConv2dParams&, const T*, const T*, T*, T*,  \
                                                    void*, cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace gpu

namespace {

template <typename T>
class DepthwiseConv2dCuda final : public OpKernel {
 public:
  DepthwiseConv2dCuda(OpSignature sig, const DepthwiseConv2dParams& p)
      : OpKernel("depthwise_conv2d", Device::kCuda), p_(p) {
    sig_ = p.nhwc ? nhwc_signature(std::move(sig)) : std::move(sig);
    sig_.workspace_bytes = gpu::depthwise_conv2d_workspace_bytes(p);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    gpu::depthwise_conv2d_forward<T>(p_, gpu::ptr<T>(a.inputs[0]), gpu::ptr<T>(a.params[0]),
                                      p_.bias ? gpu::ptr<T>(a.params[1]) : nullptr, gpu::ptr<T>(a.outputs[0]),
                                      const_cast<void*>(a.workspace.raw()), gpu::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = gpu::stream_of(a);
    const T* dy = gpu::ptr<T>(a.d_outputs[0]);
    void* ws = const_cast<void*>(a.workspace.raw());
    if (a.d_inputs[0].defined())
      gpu::depthwise_conv2d_backward_data<T>(p_, gpu::ptr<T>(a.params[0]), dy, gpu::ptr<T>(a.d_inputs[0]), ws, s);
    T* dw = gpu::ptr<T>(a.d_params[0]);
    T* db = p_.bias ? gpu::ptr<T>(a.d_params[1]) : nullptr;
    if (dw || db)
      gpu::depthwise_conv2d_backward_filter<T>(p_, gpu::ptr<T>(a.inputs[0]), dy, dw, db, ws, s);
  }

 private:
  DepthwiseConv2dParams p_;
};

// depthwise_conv=cudnn (cuda::Policy::depthwise_cudnn): the layer as cuDNN's grouped convolution, conv2d's
// CUDA kernel with groups = C and filters = C*M. Its parameters are the same tensors (weight [C*M, 1, R, S],
// the same initialisation; bias [C*M]), so checkpoints and the CPU oracle do not see which one ran.
Attrs as_grouped_conv2d(const Attrs& a, std::span<const TensorSpec> in) {
  const DepthwiseConv2dParams p = depthwise_conv2d_params(a, in);  // validates
  Attrs c;
  for (const char* key : {"kernel", "stride", "dilation", "padding", "bias"})
    if (const AttrValue* v = a.find(key)) c.set(key, *v);
  c.set("filters", p.k());
  c.set("groups", p.c);
  return c;
}

}  // namespace

void register_depthwise_conv2d_cuda(OpRegistry& r) {
  r.add_kernel("depthwise_conv2d", Device::kCuda,
               [&r, cpu = gpu::cpu_factory(r, "depthwise_conv2d")](const Attrs& a, std::span<const TensorSpec> in) {
                 if (cuda::policy().depthwise_cudnn) return r.create("conv2d", Device::kCuda, as_grouped_conv2d(a, in), in);
                 constexpr std::string_view op = "depthwise_conv2d";
                 const DType dt = gpu::cuda_compute_dtype(op, in);
                 OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);  // validates, as the CPU factory does
                 return gpu::make_cuda_kernel<DepthwiseConv2dCuda>(dt, std::move(sig), depthwise_conv2d_params(a, in));
               });
  r.add_nhwc_kernel("depthwise_conv2d", Device::kCuda,
                    [&r, cpu = gpu::cpu_factory(r, "depthwise_conv2d")](const Attrs& a, std::span<const TensorSpec> in) {
                      if (cuda::policy().depthwise_cudnn)
                        return r.create_nhwc("conv2d", Device::kCuda, as_grouped_conv2d(a, in), in);
                      const DType dt = gpu::cuda_compute_dtype("depthwise_conv2d", in);
                      OpSignature sig = gpu::cuda_signature(cpu, a, in, dt);
                      DepthwiseConv2dParams p = depthwise_conv2d_params(a, in);
                      p.nhwc = true;
                      return gpu::make_cuda_kernel<DepthwiseConv2dCuda>(dt, std::move(sig), p);
                    });
}

}  // namespace fastnn::ops
