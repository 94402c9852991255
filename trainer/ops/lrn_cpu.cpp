#include <algorithm>
#include <cmath>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/lrn.h"

namespace fastnn::ops {
namespace cpu {

namespace {
// out[c] = sum over the channel window of in[c'] (per hw position), for one sample.
template <typename T, typename F>
void window_sum(const LrnParams& p, const T* in, T* out, F&& term) {
  for (int64_t c = 0; c < p.c; ++c) {
    T* o = out + c * p.hw;
    std::fill(o, o + p.hw, T(0));
    const int64_t lo = std::max<int64_t>(0, c - p.depth_radius), hi = std::min(p.c - 1, c + p.depth_radius);
    for (int64_t k = lo; k <= hi; ++k) {
      const T* src = in + k * p.hw;
      for (int64_t i = 0; i < p.hw; ++i) o[i] += term(src[i], k * p.hw + i);
    }
  }
}
}  // namespace

template <typename T>
void lrn_forward(const LrnParams& p, const T* x, T* y, T* scale) {
  const int64_t plane = p.c * p.hw;
  const T bias = static_cast<T>(p.bias), alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
  parallel_range(p.n, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* xn = x + n * plane;
      T* sn = scale + n * plane;
      T* yn = y + n * plane;
      window_sum(p, xn, sn, [](T v, int64_t) { return v * v; });
      for (int64_t i = 0; i < plane; ++i) {
        sn[i] = bias + alpha * sn[i];
        yn[i] = xn[i] * std::pow(sn[i], -beta);
      }
    }
  });
}

template <typename T>
void lrn_backward(const LrnParams& p, const T* x, const T* scale, const T* dy, T* dx, T* ws) {
  const int64_t plane = p.c * p.hw;
  const T alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
  parallel_range(p.n, 1, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* xn = x + n * plane;
      const T* sn = scale + n * plane;
      const T* dyn = dy + n * plane;
      T* t = ws + n * plane;  // t = dy * x * scale^(-beta-1), then its window sums into dx
      for (int64_t i = 0; i < plane; ++i) t[i] = dyn[i] * xn[i] * std::pow(sn[i], -beta - T(1));
      T* dxn = dx + n * plane;
      window_sum(p, t, dxn, [](T v, int64_t) { return v; });
      for (int64_t i = 0; i < plane; ++i)
        dxn[i] = dyn[i] * std::pow(sn[i], -beta) - T(2) * alpha * beta * xn[i] * dxn[i];
    }
  });
}

template void lrn_forward<float>(const LrnParams&, const float*, float*, float*);
template void lrn_forward<double>(const LrnParams&, const double*, double*, double*);
template void lrn_backward<float>(const LrnParams&, const float*, const float*, const float*, float*, float*);
template void lrn_backward<double>(const LrnParams&, const double*, const double*, const double*, double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class LrnCpu final : public OpKernel {
 public:
  LrnCpu(const TensorSpec& x, const LrnParams& p) : OpKernel("lrn", Device::kCpu), p_(p) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
    sig_.saved = {TensorSpec{.name = "scale", .shape = x.shape, .dtype = x.dtype}};
    sig_.workspace_bytes = static_cast<size_t>(shape_numel(x.shape)) * sizeof(T);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::lrn_forward<T>(p_, a.inputs[0].data<T>(), a.outputs[0].data<T>(), a.saved[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    T* ws = static_cast<T*>(const_cast<void*>(a.workspace.raw()));
    cpu::lrn_backward<T>(p_, a.inputs[0].data<T>(), a.saved[0].data<T>(), a.d_outputs[0].data<T>(),
                         a.d_inputs[0].data<T>(), ws);
  }

 private:
  LrnParams p_;
};

}  // namespace

void register_lrn(OpRegistry& r) {
  r.add(OpDef{
      .name = "lrn",
      .summary = "local response normalisation across channels (tf.nn.lrn), NCHW",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     const LrnParams p = lrn_params(a, in);
                     return make_cpu_kernel<LrnCpu>("lrn", compute_dtype("lrn", in), in[0], p);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{
            {"r2_clipped", {{"depth_radius", 2}, {"bias", 1.0}, {"alpha", 0.5}, {"beta", 0.75}}, {{{2, 5, 3, 2}}}},
            {"cifarnet", {{"depth_radius", 4}, {"bias", 1.0}, {"alpha", 0.001 / 9.0}, {"beta", 0.75}},
             {{{2, 6, 2, 2}, DType::kF32, 0, -3.0, 3.0}}},
            {"r0", {{"depth_radius", 0}, {"alpha", 2.0}}, {{{1, 3, 2, 2}}}}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_lrn_cuda(r);
#endif
}

}  // namespace fastnn::ops
