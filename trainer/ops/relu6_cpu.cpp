#include "trainer/ops/relu6.h"

#include "trainer/ops/unary_elementwise_cpu.h"

namespace fastnn::ops {
namespace {

struct Relu6Formulas {
  static constexpr const char* kName = "relu6";
  static constexpr bool kGradientFromInput = false;
  template <typename T>
  static T value(T x) { return cpu::relu6_value(x); }
  template <typename T>
  static T gradient(T y, T dy) { return cpu::relu6_gradient(y, dy); }
};

}  // namespace

namespace cpu {

template <typename T>
void relu6_forward(int64_t count, const T* x, T* y) {
  unary_forward<Relu6Formulas, T>(count, x, y);
}

template <typename T>
void relu6_backward(int64_t count, const T* y, const T* dy, T* dx) {
  unary_backward<Relu6Formulas, T>(count, y, dy, dx);
}

template void relu6_forward<float>(int64_t, const float*, float*);
template void relu6_forward<double>(int64_t, const double*, double*);
template void relu6_backward<float>(int64_t, const float*, const float*, float*);
template void relu6_backward<double>(int64_t, const double*, const double*, double*);

}  // namespace cpu

void register_relu6(OpRegistry& r) {
  // Inputs over [-9, 9) so that both the zero and the six clamp are exercised.
  r.add(unary_elementwise_op_def<Relu6Formulas>("min(max(x, 0), 6), elementwise", [] {
    return std::vector<OpCase>{{"nchw", {}, {{{2, 3, 4, 5}, DType::kF32, 0, -9.0, 9.0}}},
                               {"flat", {}, {{{7, 3}, DType::kF32, 0, -9.0, 9.0}}}};
  }));
#ifdef FASTNN_HAVE_CUDA
  register_relu6_cuda(r);
#endif
}

}  // namespace fastnn::ops
