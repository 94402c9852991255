// The CPU side of a one-input element-wise op (relu, relu6, hard_swish), written once: y = value(x)
// and dx = gradient(v, dy) element by element over any shape and layout, where v is the forward's
// output (relu, relu6: their gradient reads y, so y may alias x) or its input (hard_swish).
//
// The loops read through restrict-qualified locals and select on values already loaded: with a
// lambda's captured pointers (which may alias) GCC reloaded them every element and branched on each
// compare, ~15x slower than a vector pass (relu backward was 19% of a ResNet-20 training step and relu6
// backward 16% of a MobileNet v2 step before, docs/PERFORMANCE.md).
//
// An op describes itself with a struct (see relu_cpu.cpp):
//   struct Relu6Formulas {
//     static constexpr const char* kName = "relu6";
//     static constexpr bool kGradientFromInput = false;
//     template <typename T> static T value(T x);
//     template <typename T> static T gradient(T v, T dy);
//   };
// and registers unary_elementwise_op_def<Relu6Formulas>(summary, test_cases).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace cpu {

template <typename Formulas, typename T>
void unary_forward(int64_t count, const T* x, T* y) {
  parallel_range(count, kElementwiseGrain, [x, y](int64_t b, int64_t e) {
    const T* __restrict xi = x;
    T* __restrict yo = y;
    for (int64_t i = b; i < e; ++i) yo[i] = Formulas::template value<T>(xi[i]);
  });
}

template <typename Formulas, typename T>
void unary_backward(int64_t count, const T* v, const T* dy, T* dx) {
  parallel_range(count, kElementwiseGrain, [v, dy, dx](int64_t b, int64_t e) {
    const T* __restrict vi = v;
    const T* __restrict dyi = dy;
    T* __restrict dxo = dx;
    for (int64_t i = b; i < e; ++i) dxo[i] = Formulas::template gradient<T>(vi[i], dyi[i]);
  });
}

}  // namespace cpu

template <typename Formulas>
struct UnaryElementwiseCpu {
  template <typename T>
  class Kernel final : public OpKernel {
   public:
    explicit Kernel(const TensorSpec& x) : OpKernel(Formulas::kName, Device::kCpu) {
      sig_.inputs = {renamed(x, "x")};
      sig_.input_has_grad = {true};
      sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
      sig_.activation_layout = Layout::kNone;  // element-wise: any layout (an NHWC graph needs no adapter)
    }

   protected:
    void run_forward(const ForwardArgs& a) override {
      cpu::unary_forward<Formulas, T>(a.inputs[0].numel(), a.inputs[0].data<T>(), a.outputs[0].data<T>());
    }
    void run_backward(const BackwardArgs& a) override {
      if (!a.d_inputs[0].defined()) return;
      const Tensor& v = Formulas::kGradientFromInput ? a.inputs[0] : a.outputs[0];
      cpu::unary_backward<Formulas, T>(v.numel(), v.data<T>(), a.d_outputs[0].data<T>(), a.d_inputs[0].data<T>());
    }
  };
};

// The op's definition with its CPU kernel (no attributes, one input, computed in f32 or f64).
template <typename Formulas>
OpDef unary_elementwise_op_def(std::string summary, std::function<std::vector<OpCase>()> test_cases) {
  return OpDef{
      .name = Formulas::kName,
      .summary = std::move(summary),
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     a.check_known(Formulas::kName, {});
                     expect_inputs(Formulas::kName, in, 1);
                     return make_cpu_kernel<UnaryElementwiseCpu<Formulas>::template Kernel>(
                         Formulas::kName, compute_dtype(Formulas::kName, in), in[0]);
                   }}},
      .test_cases = std::move(test_cases),
  };
}

}  // namespace fastnn::ops
