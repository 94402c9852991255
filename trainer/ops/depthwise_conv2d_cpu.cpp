#include <algorithm>
#include <vector>

#include <tbb/parallel_for.h>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/depthwise_conv2d.h"

namespace fastnn::ops {

DepthwiseConv2dParams depthwise_conv2d_params(const Attrs& a, std::span<const TensorSpec> inputs) {
  constexpr std::string_view op = "depthwise_conv2d";
  a.check_known(op, {"kernel", "stride", "dilation", "padding", "multiplier", "bias"});
  expect_inputs(op, inputs, 1);
  expect_rank(op, inputs, 0, {4});
  DepthwiseConv2dParams p;
  const Shape& s = inputs[0].shape;
  p.n = s[0], p.c = s[1], p.h = s[2], p.w = s[3];
  p.multiplier = a.get_int(op, "multiplier", 1);
  p.bias = a.get_bool(op, "bias", true);
  if (p.multiplier < 1 || p.multiplier > 1024)
    throw ConfigError(str(op, ": multiplier must be in [1, 1024], got ", p.multiplier));
  p.win = parse_window2d(op, a, p.h, p.w, /*with_dilation=*/true, /*stride_defaults_to_kernel=*/false);
  shape_numel({p.n, p.k(), p.win.p, p.win.q});  // bounds the output
  shape_numel({p.k(), p.win.r, p.win.s});
  return p;
}

OpSignature depthwise_conv2d_signature(const DepthwiseConv2dParams& p, DType dt) {
  OpSignature sig;
  sig.inputs = {TensorSpec{.name = "x", .shape = {p.n, p.c, p.h, p.w}, .dtype = dt}};
  sig.input_has_grad = {true};
  const int64_t rs = p.win.r * p.win.s;
  sig.params.push_back(TensorSpec{.name = "weight", .shape = {p.k(), 1, p.win.r, p.win.s}, .dtype = dt,
                                  .init = Init::kHeNormal, .fan_in = rs, .fan_out = p.multiplier * rs,
                                  .weight_decay = true});
  if (p.bias) sig.params.push_back(TensorSpec{.name = "bias", .shape = {p.k()}, .dtype = dt, .init = Init::kZeros});
  sig.outputs = {TensorSpec{.name = "y", .shape = {p.n, p.k(), p.win.p, p.win.q}, .dtype = dt}};
  return sig;
}

namespace cpu {
namespace {

// The output range [lo, hi) for which i = o*stride + off lies inside [0, size).
inline void valid_range(int64_t off, int64_t stride, int64_t size, int64_t count, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = size - 1 - off < 0 ? 0 : std::min(count, (size - 1 - off) / stride + 1);
  lo = std::min(lo, hi);
}

// body(item) for item in [0, count), one task per item (a plane is thousands of multiply-adds).
template <typename F>
void for_each_plane(int64_t count, F&& body) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, count, 1), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t i = r.begin(); i < r.end(); ++i) body(i);
  });
}

}  // namespace

template <typename T>
void depthwise_conv2d_forward(const DepthwiseConv2dParams& p, const T* x, const T* w, const T* b, T* y) {
  const Window2d& g = p.win;
  const int64_t K = p.k(), hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  for_each_plane(p.n * K, [&](int64_t nk) {
    const int64_t n = nk / K, k = nk % K;
    const T* xp = x + (n * p.c + k / p.multiplier) * hw;
    const T* wk = w + k * rs;
    T* yp = y + nk * pq;
    const T bias = b ? b[k] : T(0);
    for (int64_t op = 0; op < g.p; ++op) {
      T* yrow = yp + op * g.q;
      std::fill(yrow, yrow + g.q, bias);
      for (int64_t r = 0; r < g.r; ++r) {
        const int64_t ih = op * g.stride_h - g.pad_top + r * g.dil_h;
        if (ih < 0 || ih >= p.h) continue;
        const T* xrow = xp + ih * p.w;
        for (int64_t s = 0; s < g.s; ++s) {
          const int64_t off = s * g.dil_w - g.pad_left;
          int64_t lo, hi;
          valid_range(off, g.stride_w, p.w, g.q, lo, hi);
          const T wv = wk[r * g.s + s];
          if (g.stride_w == 1) {
            const T* xs = xrow + off;
            for (int64_t q = lo; q < hi; ++q) yrow[q] += wv * xs[q];
          } else {
            for (int64_t q = lo; q < hi; ++q) yrow[q] += wv * xrow[q * g.stride_w + off];
          }
        }
      }
    }
  });
}

template <typename T>
void depthwise_conv2d_backward_data(const DepthwiseConv2dParams& p, const T* w, const T* dy, T* dx) {
  const Window2d& g = p.win;
  const int64_t K = p.k(), hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  for_each_plane(p.n * p.c, [&](int64_t nc) {
    const int64_t n = nc / p.c, c = nc % p.c;
    T* dxp = dx + nc * hw;
    std::fill(dxp, dxp + hw, T(0));
    for (int64_t m = 0; m < p.multiplier; ++m) {
      const int64_t k = c * p.multiplier + m;
      const T* dyp = dy + (n * K + k) * pq;
      const T* wk = w + k * rs;
      for (int64_t op = 0; op < g.p; ++op) {
        const T* dyrow = dyp + op * g.q;
        for (int64_t r = 0; r < g.r; ++r) {
          const int64_t ih = op * g.stride_h - g.pad_top + r * g.dil_h;
          if (ih < 0 || ih >= p.h) continue;
          T* dxrow = dxp + ih * p.w;
          for (int64_t s = 0; s < g.s; ++s) {
            const int64_t off = s * g.dil_w - g.pad_left;
            int64_t lo, hi;
            valid_range(off, g.stride_w, p.w, g.q, lo, hi);
            const T wv = wk[r * g.s + s];
            if (g.stride_w == 1) {
              T* ds = dxrow + off;
              for (int64_t q = lo; q < hi; ++q) ds[q] += wv * dyrow[q];
            } else {
              for (int64_t q = lo; q < hi; ++q) dxrow[q * g.stride_w + off] += wv * dyrow[q];
            }
          }
        }
      }
    }
  });
}

template <typename T>
void depthwise_conv2d_backward_filter(const DepthwiseConv2dParams& p, const T* x, const T* dy, T* dw, T* db) {
  const Window2d& g = p.win;
  const int64_t K = p.k(), hw = p.h * p.w, pq = g.p * g.q, rs = g.r * g.s;
  for_each_plane(K, [&](int64_t k) {
    const int64_t c = k / p.multiplier;
    if (dw) {
      std::vector<double> acc(static_cast<size_t>(rs), 0.0);
      for (int64_t n = 0; n < p.n; ++n) {
        const T* xp = x + (n * p.c + c) * hw;
        const T* dyp = dy + (n * K + k) * pq;
        for (int64_t op = 0; op < g.p; ++op) {
          const T* dyrow = dyp + op * g.q;
          for (int64_t r = 0; r < g.r; ++r) {
            const int64_t ih = op * g.stride_h - g.pad_top + r * g.dil_h;
            if (ih < 0 || ih >= p.h) continue;
            const T* xrow = xp + ih * p.w;
            for (int64_t s = 0; s < g.s; ++s) {
              const int64_t off = s * g.dil_w - g.pad_left;
              int64_t lo, hi;
              valid_range(off, g.stride_w, p.w, g.q, lo, hi);
              // A row's partial sum in T (vectorised), rows summed in double.
              T part = T(0);
              if (g.stride_w == 1) {
                const T* xs = xrow + off;
                for (int64_t q = lo; q < hi; ++q) part += dyrow[q] * xs[q];
              } else {
                for (int64_t q = lo; q < hi; ++q) part += dyrow[q] * xrow[q * g.stride_w + off];
              }
              acc[static_cast<size_t>(r * g.s + s)] += static_cast<double>(part);
            }
          }
        }
      }
      for (int64_t i = 0; i < rs; ++i) dw[k * rs + i] = static_cast<T>(acc[static_cast<size_t>(i)]);
    }
    if (db) {
      double acc = 0;
      for (int64_t n = 0; n < p.n; ++n) {
        const T* d = dy + (n * K + k) * pq;
        T part = T(0);
        for (int64_t i = 0; i < pq; ++i) part += d[i];
        acc += static_cast<double>(part);
      }
      db[k] = static_cast<T>(acc);
    }
  });
}

#define FASTNN_DWCONV_INSTANTIATE(T)                                                                           \
  template void depthwise_conv2d_forward<T>(const DepthwiseConv2dParams&, const T*, const T*, const T*, T*); \
  template void depthwise_conv2d_backward_data<T>(const DepthwiseConv2dParams&, const T*, const T*, T*);     \
  template void depthwise_conv2d_backward_filter<T>(const DepthwiseConv2dParams&, const T*, const T*, T*, T*);
FASTNN_DWCONV_INSTANTIATE(float)
FASTNN_DWCONV_INSTANTIATE(double)
#undef FASTNN_DWCONV_INSTANTIATE

}  // namespace cpu

namespace {

template <typename T>
class DepthwiseConv2dCpu final : public OpKernel {
 public:
  DepthwiseConv2dCpu(const DepthwiseConv2dParams& p, DType dt) : OpKernel("depthwise_conv2d", Device::kCpu), p_(p) {
    sig_ = depthwise_conv2d_signature(p, dt);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::depthwise_conv2d_forward<T>(p_, a.inputs[0].data<T>(), a.params[0].data<T>(),
                                     p_.bias ? a.params[1].data<T>() : nullptr, a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    const T* dy = a.d_outputs[0].data<T>();
    if (a.d_inputs[0].defined())
      cpu::depthwise_conv2d_backward_data<T>(p_, a.params[0].data<T>(), dy, a.d_inputs[0].data<T>());
    T* dw = a.d_params[0].defined() ? a.d_params[0].data<T>() : nullptr;
    T* db = p_.bias && a.d_params[1].defined() ? a.d_params[1].data<T>() : nullptr;
    if (dw || db) cpu::depthwise_conv2d_backward_filter<T>(p_, a.inputs[0].data<T>(), dy, dw, db);
  }

 private:
  DepthwiseConv2dParams p_;
};

std::vector<OpCase> depthwise_conv2d_cases() {
  return {
      {"k3_same", {{"kernel", 3}, {"padding", "same"}}, {{{2, 3, 5, 6}}}},
      {"k3_s2_same_nobias", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}, {"bias", false}}, {{{2, 4, 7, 6}}}},
      {"k3_s2_same_even", {{"kernel", 3}, {"stride", 2}, {"padding", "same"}}, {{{1, 2, 8, 8}}}},
      {"k3_valid", {{"kernel", 3}}, {{{2, 2, 5, 5}}}},
      {"m2_k3x2_s21", {{"kernel", Ints{3, 2}}, {"stride", Ints{2, 1}}, {"multiplier", 2}, {"padding", Ints{1, 0}}},
       {{{2, 3, 6, 5}}}},
      {"k5_d2_asym", {{"kernel", 5}, {"dilation", 2}, {"padding", Ints{2, 3, 1, 4}}}, {{{1, 2, 7, 6}}}},
      {"k1", {{"kernel", 1}, {"multiplier", 3}}, {{{2, 2, 3, 3}}}},
  };
}

}  // namespace

void register_depthwise_conv2d(OpRegistry& r) {
  r.add(OpDef{
      .name = "depthwise_conv2d",
      .summary = "depthwise 2-D convolution (one input channel per group, channel multiplier), NCHW, direct kernels",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     const DepthwiseConv2dParams p = depthwise_conv2d_params(a, in);
                     const DType dt = compute_dtype("depthwise_conv2d", in);
                     return make_cpu_kernel<DepthwiseConv2dCpu>("depthwise_conv2d", dt, p, dt);
                   }}},
      .test_cases = depthwise_conv2d_cases,
  });
#ifdef FASTNN_HAVE_CUDA
  register_depthwise_conv2d_cuda(r);
#endif
}

}  // namespace fastnn::ops
