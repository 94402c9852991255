#include <cmath>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/tanh.h"

namespace fastnn::ops {
namespace cpu {

template <typename T>
void tanh_forward(int64_t count, T outer, T inner, const T* x, T* y) {
  parallel_range(count, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = outer * std::tanh(inner * x[i]);
  });
}

template <typename T>
void tanh_backward(int64_t count, T outer, T inner, const T* y, const T* dy, T* dx) {
  const T k = outer * inner;
  parallel_range(count, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T t = y[i] / outer;
      dx[i] = dy[i] * k * (T(1) - t * t);
    }
  });
}

template void tanh_forward<float>(int64_t, float, float, const float*, float*);
template void tanh_forward<double>(int64_t, double, double, const double*, double*);
template void tanh_backward<float>(int64_t, float, float, const float*, const float*, float*);
template void tanh_backward<double>(int64_t, double, double, const double*, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class TanhCpu final : public OpKernel {
 public:
  TanhCpu(const TensorSpec& x, double outer, double inner)
      : OpKernel("tanh", Device::kCpu), outer_(static_cast<T>(outer)), inner_(static_cast<T>(inner)) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
    sig_.activation_layout = Layout::kNone;  // element-wise: any layout (an NHWC graph needs no adapter)
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::tanh_forward<T>(a.inputs[0].numel(), outer_, inner_, a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    cpu::tanh_backward<T>(a.outputs[0].numel(), outer_, inner_, a.outputs[0].data<T>(), a.d_outputs[0].data<T>(),
                          a.d_inputs[0].data<T>());
  }

 private:
  T outer_, inner_;
};

}  // namespace

void register_tanh(OpRegistry& r) {
  r.add(OpDef{
      .name = "tanh",
      .summary = "outer * tanh(inner * x), elementwise (SINGA's scaled tanh)",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     a.check_known("tanh", {"outer", "inner"});
                     expect_inputs("tanh", in, 1);
                     const double outer = a.get_float("tanh", "outer", 1.0), inner = a.get_float("tanh", "inner", 1.0);
                     if (!std::isfinite(outer) || outer == 0 || !std::isfinite(inner))
                       throw ConfigError(str("tanh: outer must be finite and nonzero, inner finite; got ", outer, ", ",
                                             inner));
                     return make_cpu_kernel<TanhCpu>("tanh", compute_dtype("tanh", in), in[0], outer, inner);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"plain", {}, {{{2, 3, 4, 5}, DType::kF32, 0, -2.0, 2.0}}},
                                   {"singa_scaled", {{"outer", 1.7159}, {"inner", 0.6667}}, {{{7, 3}, DType::kF32, 0, -3.0, 3.0}}}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_tanh_cuda(r);
#endif
}

}  // namespace fastnn::ops
