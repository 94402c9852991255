// depthwise_conv2d on CUDA (ops/depthwise_conv2d.h): direct kernels and the OpKernel glue in one .cu.
// Every sum is in float (the filter gradient's block reduction in double); no atomics, so every pass is
// deterministic. cuDNN's grouped convolution is the alternative; measuring which is faster needs a GPU.
#include "trainer/cuda/device_util.cuh"
#include "trainer/ops/cuda_helpers.h"
#include "trainer/ops/cuda_kernel.h"
#include "trainer/ops/depthwise_conv2d.h"

namespace fastnn::ops {
namespace cuda {

using namespace ::fastnn::cuda;  // device_util.cuh

namespace {

// The geometry as plain fields for device code.
struct Geom {
  int64_t n, c, h, w, m, k, r, s, sh, sw, dh, dw, pt, pl, p, q;
};

Geom geom(const DepthwiseConv2dParams& prm) {
  const Window2d& g = prm.win;
  return Geom{prm.n,      prm.c,      prm.h,   prm.w,   prm.multiplier, prm.k(),    g.r,   g.s,
              g.stride_h, g.stride_w, g.dil_h, g.dil_w, g.pad_top,      g.pad_left, g.p,   g.q};
}

template <typename T>
__global__ void dw_fwd_kernel(Geom g, const T* x, const T* w, const T* b, T* y) {
  const int64_t total = g.n * g.k * g.p * g.q;
  FASTNN_GRID_LOOP(i, total) {
    const int64_t oq = i % g.q, op = (i / g.q) % g.p, nk = i / (g.q * g.p);
    const int64_t k = nk % g.k, n = nk / g.k;
    const T* xp = x + (n * g.c + k / g.m) * g.h * g.w;
    const T* wk = w + k * g.r * g.s;
    float acc = b ? to_f(b[k]) : 0.f;
    for (int64_t r = 0; r < g.r; ++r) {
      const int64_t ih = op * g.sh - g.pt + r * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t s = 0; s < g.s; ++s) {
        const int64_t iw = oq * g.sw - g.pl + s * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        acc += to_f(wk[r * g.s + s]) * to_f(xp[ih * g.w + iw]);
      }
    }
    y[i] = from_f<T>(acc);
  }
}

template <typename T>
__global__ void dw_bwd_data_kernel(Geom g, const T* w, const T* dy, T* dx) {
  const int64_t total = g.n * g.c * g.h * g.w;
  FASTNN_GRID_LOOP(i, total) {
    const int64_t iw = i % g.w, ih = (i / g.w) % g.h, nc = i / (g.w * g.h);
    const int64_t c = nc % g.c, n = nc / g.c;
    float acc = 0.f;
    for (int64_t mm = 0; mm < g.m; ++mm) {
      const int64_t k = c * g.m + mm;
      const T* dyp = dy + (n * g.k + k) * g.p * g.q;
      const T* wk = w + k * g.r * g.s;
      for (int64_t r = 0; r < g.r; ++r) {
        const int64_t th = ih + g.pt - r * g.dh;
        if (th < 0 || th % g.sh != 0) continue;
        const int64_t op = th / g.sh;
        if (op >= g.p) continue;
        for (int64_t s = 0; s < g.s; ++s) {
          const int64_t tw = iw + g.pl - s * g.dw;
          if (tw < 0 || tw % g.sw != 0) continue;
          const int64_t oq = tw / g.sw;
          if (oq >= g.q) continue;
          acc += to_f(wk[r * g.s + s]) * to_f(dyp[op * g.q + oq]);
        }
      }
    }
    dx[i] = from_f<T>(acc);
  }
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
void depthwise_conv2d_forward(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y,
                              cudaStream_t s) {
  const int64_t total = p.n * p.k() * p.win.p * p.win.q;
  if (total == 0) return;
  dw_fwd_kernel<T><<<grid_for(total), kThreads, 0, s>>>(geom(p), x, w, b, y);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void depthwise_conv2d_backward_data(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx, cudaStream_t s) {
  const int64_t total = p.n * p.c * p.h * p.w;
  if (total == 0) return;
  dw_bwd_data_kernel<T><<<grid_for(total), kThreads, 0, s>>>(geom(p), w, dy, dx);
  CUDA_CHECK_LAUNCH();
}

template <typename T>
void depthwise_conv2d_backward_filter(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw, T* db,
                                      cudaStream_t s) {
  if (dw) {
    const int64_t taps = p.weight_numel();
    FASTNN_CHECK(taps <= (int64_t{1} << 31) - 1, "depthwise_conv2d: ", taps, " filter taps exceed the grid");
    dw_bwd_filter_kernel<T><<<static_cast<unsigned>(taps), kThreads, 0, s>>>(geom(p), x, dy, dw);
    CUDA_CHECK_LAUNCH();
  }
  if (db) bias_grad<T>(p.n, p.k(), p.win.p * p.win.q, dy, db, nullptr, s);  // no workspace here
}

#define FASTNN_INSTANTIATE(T)                                                                                   \
  template void depthwise_conv2d_forward<T>(const DepthwiseConv2dParams&, const T*, const T*, const T*, T*,    \
                                            cudaStream_t);                                                     \
  template void depthwise_conv2d_backward_data<T>(const DepthwiseConv2dParams&, const T*, const T*, T*,        \
                                                  cudaStream_t);                                               \
  template void depthwise_conv2d_backward_filter<T>(const DepthwiseConv2dParams&, const T*, const T*, T*, T*,  \
                                                    cudaStream_t);
FASTNN_CUDA_FOR_TYPES(FASTNN_INSTANTIATE)
#undef FASTNN_INSTANTIATE

}  // namespace cuda

namespace {

template <typename T>
class DepthwiseConv2dCuda final : public OpKernel {
 public:
  DepthwiseConv2dCuda(OpSignature sig, const DepthwiseConv2dParams& p)
      : OpKernel("depthwise_conv2d", Device::kCuda), p_(p) {
    sig_ = std::move(sig);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cuda::depthwise_conv2d_forward<T>(p_, cuda::ptr<T>(a.inputs[0]), cuda::ptr<T>(a.params[0]),
                                      p_.bias ? cuda::ptr<T>(a.params[1]) : nullptr, cuda::ptr<T>(a.outputs[0]),
                                      cuda::stream_of(a));
  }
  void run_backward(const BackwardArgs& a) override {
    const cudaStream_t s = cuda::stream_of(a);
    const T* dy = cuda::ptr<T>(a.d_outputs[0]);
    if (a.d_inputs[0].defined())
      cuda::depthwise_conv2d_backward_data<T>(p_, cuda::ptr<T>(a.params[0]), dy, cuda::ptr<T>(a.d_inputs[0]), s);
    T* dw = cuda::ptr<T>(a.d_params[0]);
    T* db = p_.bias ? cuda::ptr<T>(a.d_params[1]) : nullptr;
    if (dw || db) cuda::depthwise_conv2d_backward_filter<T>(p_, cuda::ptr<T>(a.inputs[0]), dy, dw, db, s);
  }

 private:
  DepthwiseConv2dParams p_;
};

}  // namespace

void register_depthwise_conv2d_cuda(OpRegistry& r) {
  r.add_kernel("depthwise_conv2d", Device::kCuda,
               [cpu = cuda::cpu_factory(r, "depthwise_conv2d")](const Attrs& a, std::span<const TensorSpec> in) {
                 constexpr std::string_view op = "depthwise_conv2d";
                 const DType dt = cuda::cuda_compute_dtype(op, in);
                 OpSignature sig = cuda::cuda_signature(cpu, a, in, dt);  // validates, as the CPU factory does
                 return cuda::make_cuda_kernel<DepthwiseConv2dCuda>(dt, std::move(sig), depthwise_conv2d_params(a, in));
               });
}

}  // namespace fastnn::ops
