#include "trainer/ops/hard_swish.h"

#include "trainer/ops/unary_elementwise_cpu.h"

namespace fastnn::ops {
namespace {

struct HardSwishFormulas {
  static constexpr const char* kName = "hard_swish";
  static constexpr bool kGradientFromInput = true;
  template <typename T>
  static T value(T x) { return hard_swish_value(x); }
  template <typename T>
  static T gradient(T x, T dy) { return hard_swish_gradient(x, dy); }
};

}  // namespace

namespace cpu {

template <typename T>
void hard_swish_forward(int64_t count, const T* x, T* y) {
  unary_forward<HardSwishFormulas, T>(count, x, y);
}

template <typename T>
void hard_swish_backward(int64_t count, const T* x, const T* dy, T* dx) {
  unary_backward<HardSwishFormulas, T>(count, x, dy, dx);
}

template void hard_swish_forward<float>(int64_t, const float*, float*);
template void hard_swish_forward<double>(int64_t, const double*, double*);
template void hard_swish_backward<float>(int64_t, const float*, const float*, float*);
template void hard_swish_backward<double>(int64_t, const double*, const double*, double*);

}  // namespace cpu

void register_hard_swish(OpRegistry& r) {
  // Inputs over [-6, 6): both flat ends and the quadratic middle.
  r.add(unary_elementwise_op_def<HardSwishFormulas>("x * min(max(x + 3, 0), 6) / 6, elementwise", [] {
    return std::vector<OpCase>{{"nchw", {}, {{{2, 3, 4, 5}, DType::kF32, 0, -6.0, 6.0}}},
                               {"flat", {}, {{{7, 3}, DType::kF32, 0, -6.0, 6.0}}}};
  }));
#ifdef FASTNN_HAVE_CUDA
  register_hard_swish_cuda(r);
#endif
}

}  // namespace fastnn::ops
