#include "trainer/ops/scale.h"

#include <cmath>

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace cpu {

template <typename T>
void scale_forward(int64_t count, T scale, const T* x, T* y) {
  parallel_range(count, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = scale * x[i];
  });
}

template void scale_forward<float>(int64_t, float, const float*, float*);
template void scale_forward<double>(int64_t, double, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class ScaleCpu final : public OpKernel {
 public:
  ScaleCpu(const TensorSpec& x, double scale) : OpKernel("scale", Device::kCpu), scale_(static_cast<T>(scale)) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
    sig_.activation_layout = Layout::kNone;  // element-wise: any layout (an NHWC graph needs no adapter)
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::scale_forward<T>(a.inputs[0].numel(), scale_, a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    cpu::scale_forward<T>(a.d_outputs[0].numel(), scale_, a.d_outputs[0].data<T>(), a.d_inputs[0].data<T>());
  }

 private:
  T scale_;
};

}  // namespace

void register_scale(OpRegistry& r) {
  r.add(OpDef{
      .name = "scale",
      .summary = "y = scale * x (residual scaling)",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     a.check_known("scale", {"scale"});
                     expect_inputs("scale", in, 1);
                     if (!a.has("scale")) throw ConfigError("scale: missing attribute 'scale'");
                     const double s = a.get_float("scale", "scale", 1.0);
                     if (!std::isfinite(s)) throw ConfigError("scale: attribute 'scale' must be finite");
                     return make_cpu_kernel<ScaleCpu>("scale", compute_dtype("scale", in), in[0], s);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"s0.17", {{"scale", 0.17}}, {{{2, 3, 3, 2}}}},
                                   {"s-2", {{"scale", -2}}, {{{5, 4}}}}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_scale_cuda(r);
#endif
}

}  // namespace fastnn::ops
