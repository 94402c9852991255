#include "trainer/ops/add.h"

#include <cstring>

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace cpu {

// The inputs are added in their order, element by element (bitwise the same on any thread count). Two
// inputs, a residual unit's, get a loop over restrict-qualified locals GCC vectorises (the general loop
// reloaded the captured pointers every element: 2.7% of a ResNet-20 training step).
template <typename T>
void add_forward(int64_t count, std::span<const T* const> xs, T* y) {
  if (xs.size() == 2) {
    parallel_range(count, kElementwiseGrain, [a = xs[0], c = xs[1], y](int64_t b, int64_t e) {
      const T* __restrict ai = a;
      const T* __restrict ci = c;
      T* __restrict yo = y;
      for (int64_t i = b; i < e; ++i) yo[i] = ai[i] + ci[i];
    });
    return;
  }
  parallel_range(count, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T acc = xs[0][i];
      for (size_t k = 1; k < xs.size(); ++k) acc += xs[k][i];
      y[i] = acc;
    }
  });
}

template void add_forward<float>(int64_t, std::span<const float* const>, float*);
template void add_forward<double>(int64_t, std::span<const double* const>, double*);

}  // namespace cpu

namespace {

constexpr size_t kMaxAddInputs = 16;

template <typename T>
class AddCpu final : public OpKernel {
 public:
  explicit AddCpu(std::span<const TensorSpec> in) : OpKernel("add", Device::kCpu) {
    sig_.inputs = named_inputs(in, {});
    sig_.input_has_grad.assign(in.size(), true);
    sig_.outputs = {TensorSpec{.name = "y", .shape = in[0].shape, .dtype = in[0].dtype}};
    sig_.activation_layout = Layout::kNone;  // element-wise: any layout (an NHWC graph needs no adapter)
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const T* xs[kMaxAddInputs];
    for (size_t i = 0; i < a.inputs.size(); ++i) xs[i] = a.inputs[i].data<T>();
    cpu::add_forward<T>(a.outputs[0].numel(), std::span<const T* const>(xs, a.inputs.size()), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    for (Tensor& dx : a.d_inputs)
      if (dx.defined() && dx.nbytes() && dx.raw() != a.d_outputs[0].raw()) std::memcpy(dx.raw(), a.d_outputs[0].raw(), dx.nbytes());
  }
};

}  // namespace

void register_add(OpRegistry& r) {
  r.add(OpDef{
      .name = "add",
      .summary = "elementwise sum of 2..16 same-shape inputs",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     a.check_known("add", {});
                     expect_inputs("add", in, 2, kMaxAddInputs);
                     const DType dt = compute_dtype("add", in);
                     for (const TensorSpec& t : in)
                       if (t.shape != in[0].shape || t.dtype != dt)
                         throw ConfigError(str("add: inputs differ: ", shape_str(in[0].shape), " and ",
                                               dtype_name(t.dtype), shape_str(t.shape)));
                     return make_cpu_kernel<AddCpu>("add", dt, in);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"two", {}, {{{2, 3, 2, 2}}, {{2, 3, 2, 2}}}},
                                   {"three", {}, {{{4, 5}}, {{4, 5}}, {{4, 5}}}}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_add_cuda(r);
#endif
}

}  // namespace fastnn::ops
