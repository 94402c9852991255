#include "trainer/ops/hard_swish.h"

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace cpu {

// Restrict-qualified locals, as relu6_cpu.cpp's loops: the lambda's captured pointers may alias, and
// GCC would otherwise reload them every element instead of vectorising.
template <typename T>
void hard_swish_forward(int64_t count, const T* x, T* y) {
  parallel_range(count, kElementwiseGrain, [x, y](int64_t b, int64_t e) {
    const T* __restrict xi = x;
    T* __restrict yo = y;
    for (int64_t i = b; i < e; ++i) yo[i] = hard_swish_value(xi[i]);
  });
}

template <typename T>
void hard_swish_backward(int64_t count, const T* x, const T* dy, T* dx) {
  parallel_range(count, kElementwiseGrain, [x, dy, dx](int64_t b, int64_t e) {
    const T* __restrict xi = x;
    const T* __restrict dyi = dy;
    T* __restrict dxo = dx;
    for (int64_t i = b; i < e; ++i) dxo[i] = hard_swish_gradient(xi[i], dyi[i]);
  });
}

template void hard_swish_forward<float>(int64_t, const float*, float*);
template void hard_swish_forward<double>(int64_t, const double*, double*);
template void hard_swish_backward<float>(int64_t, const float*, const float*, float*);
template void hard_swish_backward<double>(int64_t, const double*, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class HardSwishCpu final : public OpKernel {
 public:
  HardSwishCpu(const TensorSpec& x) : OpKernel("hard_swish", Device::kCpu) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
    sig_.activation_layout = Layout::kNone;  // element-wise: any layout (an NHWC graph needs no adapter)
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::hard_swish_forward<T>(a.inputs[0].numel(), a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    cpu::hard_swish_backward<T>(a.inputs[0].numel(), a.inputs[0].data<T>(), a.d_outputs[0].data<T>(),
                                a.d_inputs[0].data<T>());
  }
};

}  // namespace

void register_hard_swish(OpRegistry& r) {
  r.add(OpDef{
      .name = "hard_swish",
      .summary = "x * min(max(x + 3, 0), 6) / 6, elementwise",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     a.check_known("hard_swish", {});
                     expect_inputs("hard_swish", in, 1);
                     return make_cpu_kernel<HardSwishCpu>("hard_swish", compute_dtype("hard_swish", in), in[0]);
                   }}},
      // Inputs over [-6, 6): both flat ends and the quadratic middle.
      .test_cases = [] {
        return std::vector<OpCase>{{"nchw", {}, {{{2, 3, 4, 5}, DType::kF32, 0, -6.0, 6.0}}},
                                   {"flat", {}, {{{7, 3}, DType::kF32, 0, -6.0, 6.0}}}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_hard_swish_cuda(r);
#endif
}

}  // namespace fastnn::ops
