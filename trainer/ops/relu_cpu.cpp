#include "trainer/ops/relu.h"

#include "trainer/ops/unary_elementwise_cpu.h"

namespace fastnn::ops {
namespace {

struct ReluFormulas {
  static constexpr const char* kName = "relu";
  static constexpr bool kGradientFromInput = false;
  template <typename T>
  static T value(T x) { return cpu::relu_value(x); }
  template <typename T>
  static T gradient(T y, T dy) { return cpu::relu_gradient(y, dy); }
};

}  // namespace

namespace cpu {

template <typename T>
void relu_forward(int64_t count, const T* x, T* y) {
  unary_forward<ReluFormulas, T>(count, x, y);
}

template <typename T>
void relu_backward(int64_t count, const T* y, const T* dy, T* dx) {
  unary_backward<ReluFormulas, T>(count, y, dy, dx);
}

template void relu_forward<float>(int64_t, const float*, float*);
template void relu_forward<double>(int64_t, const double*, double*);
template void relu_backward<float>(int64_t, const float*, const float*, float*);
template void relu_backward<double>(int64_t, const double*, const double*, double*);

}  // namespace cpu

void register_relu(OpRegistry& r) {
  r.add(unary_elementwise_op_def<ReluFormulas>("max(x, 0), elementwise", [] {
    return std::vector<OpCase>{{"nchw", {}, {{{2, 3, 4, 5}}}}, {"flat", {}, {{{7, 3}}}}};
  }));
#ifdef FASTNN_HAVE_CUDA
  register_relu_cuda(r);
#endif
}

}  // namespace fastnn::ops
