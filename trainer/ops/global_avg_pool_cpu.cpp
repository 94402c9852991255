#include "trainer/ops/global_avg_pool.h"

#include <algorithm>
#include <vector>

#include "core/half.h"
#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace cpu {

template <typename T>
void global_avg_pool_forward(int64_t planes, int64_t hw, const T* x, T* y) {
  parallel_range(planes, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < hw; ++j) acc += x[i * hw + j];
      y[i] = static_cast<T>(acc / static_cast<double>(hw));
    }
  });
}

template <typename T>
void global_avg_pool_backward(int64_t planes, int64_t hw, const T* dy, T* dx) {
  parallel_range(planes, 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T g = static_cast<T>(dy[i] / static_cast<double>(hw));
      for (int64_t j = 0; j < hw; ++j) dx[i * hw + j] = g;
    }
  });
}

template void global_avg_pool_forward<float>(int64_t, int64_t, const float*, float*);
template void global_avg_pool_forward<double>(int64_t, int64_t, const double*, double*);
template void global_avg_pool_backward<float>(int64_t, int64_t, const float*, float*);
template void global_avg_pool_backward<double>(int64_t, int64_t, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class GlobalAvgPoolCpu final : public OpKernel {
 public:
  explicit GlobalAvgPoolCpu(const TensorSpec& x) : OpKernel("global_avg_pool", Device::kCpu) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = {x.shape[0], x.shape[1]}, .dtype = x.dtype}};
    planes_ = x.shape[0] * x.shape[1];
    hw_ = x.shape[2] * x.shape[3];
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::global_avg_pool_forward<T>(planes_, hw_, a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (a.d_inputs[0].defined())
      cpu::global_avg_pool_backward<T>(planes_, hw_, a.d_outputs[0].data<T>(), a.d_inputs[0].data<T>());
  }

 private:
  int64_t planes_ = 0, hw_ = 0;
};

// y[n, c] = the mean of element(((n * hw) + j) * c_count + c) over the pixels j of [N, HW, C] activations,
// summed in double in pixel order (the NCHW kernel's order).
template <typename Out, typename Element>
void nhwc_channel_means(int64_t n_count, int64_t hw, int64_t c_count, Element element, Out* y) {
  cpu::parallel_range(n_count, 1, [&](int64_t b, int64_t e) {
    std::vector<double> acc(static_cast<size_t>(c_count));
    for (int64_t n = b; n < e; ++n) {
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < hw; ++j)
        for (int64_t c = 0; c < c_count; ++c) acc[c] += element((n * hw + j) * c_count + c);
      for (int64_t c = 0; c < c_count; ++c) y[n * c_count + c] = static_cast<Out>(acc[c] / static_cast<double>(hw));
    }
  });
}

// NHWC: x [N, H, W, C]. Each channel's pixels are added in the same order as the NCHW kernel's, so the
// two agree bitwise; the inner loop runs along the channels (contiguous).
template <typename T>
class GlobalAvgPoolNhwcCpu final : public OpKernel {
 public:
  explicit GlobalAvgPoolNhwcCpu(const TensorSpec& x) : OpKernel("global_avg_pool", Device::kCpu) {
    n_ = x.shape[0];
    c_ = x.shape[1];
    hw_ = x.shape[2] * x.shape[3];
    sig_.inputs = {TensorSpec{.name = "x", .shape = nhwc_shape(x.shape), .dtype = x.dtype}};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = {n_, c_}, .dtype = x.dtype}};
    sig_.activation_layout = Layout::kNHWC;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const T* x = a.inputs[0].data<T>();
    nhwc_channel_means(n_, hw_, c_, [x](int64_t i) { return x[i]; }, a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    const T* dy = a.d_outputs[0].data<T>();
    T* dx = a.d_inputs[0].data<T>();
    cpu::parallel_range(n_, 1, [&](int64_t b, int64_t e) {
      for (int64_t n = b; n < e; ++n)
        for (int64_t j = 0; j < hw_; ++j)
          for (int64_t c = 0; c < c_; ++c) dx[(n * hw_ + j) * c_ + c] = static_cast<T>(dy[n * c_ + c] / static_cast<double>(hw_));
    });
  }

 private:
  int64_t n_ = 0, c_ = 0, hw_ = 0;
};

// An inference plan's global average pool over bfloat16 activations (OpRegistry::add_bf16_input_kernel):
// NHWC, forward only, f32 output: GlobalAvgPoolNhwcCpu's sums (double, the same order) of the values
// widened to f32, so bitwise that kernel on the widened input.
class GlobalAvgPoolNhwcBf16Cpu final : public OpKernel {
 public:
  explicit GlobalAvgPoolNhwcBf16Cpu(const TensorSpec& x) : OpKernel("global_avg_pool", Device::kCpu) {
    n_ = x.shape[0];
    c_ = x.shape[1];
    hw_ = x.shape[2] * x.shape[3];
    sig_.inputs = {TensorSpec{.name = "x", .shape = nhwc_shape(x.shape), .dtype = DType::kBF16}};
    sig_.input_has_grad = {false};
    sig_.outputs = {TensorSpec{.name = "y", .shape = {n_, c_}, .dtype = DType::kF32}};
    sig_.activation_layout = Layout::kNHWC;
    sig_.has_backward = false;
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const auto* x = static_cast<const uint16_t*>(a.inputs[0].raw());
    nhwc_channel_means(n_, hw_, c_, [x](int64_t i) { return bf16_bits_to_f32(x[i]); }, a.outputs[0].data<float>());
  }
  void run_backward(const BackwardArgs&) override { FASTNN_CHECK(false, name(), ": an inference kernel has no backward"); }

 private:
  int64_t n_ = 0, c_ = 0, hw_ = 0;
};

}  // namespace

void register_global_avg_pool(OpRegistry& r) {
  r.add(OpDef{
      .name = "global_avg_pool",
      .summary = "mean over H and W: [N,C,H,W] -> [N,C]",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     a.check_known("global_avg_pool", {});
                     expect_inputs("global_avg_pool", in, 1);
                     expect_rank("global_avg_pool", in, 0, {4});
                     return make_cpu_kernel<GlobalAvgPoolCpu>("global_avg_pool", compute_dtype("global_avg_pool", in),
                                                              in[0]);
                   }}},
      .test_cases = [] { return std::vector<OpCase>{{"nchw", {}, {{{3, 4, 3, 5}}}}}; },
  });
  r.add_nhwc_kernel("global_avg_pool", Device::kCpu, [](const Attrs&, std::span<const TensorSpec> in) {
    return make_cpu_kernel<GlobalAvgPoolNhwcCpu>("global_avg_pool", compute_dtype("global_avg_pool", in), in[0]);
  });
  r.add_bf16_input_kernel("global_avg_pool", Device::kCpu,
                          [](const Attrs&, std::span<const TensorSpec> in, bool output_bf16) -> std::unique_ptr<OpKernel> {
                            if (output_bf16) return nullptr;  // a mean is not a value that passes through
                            return std::make_unique<GlobalAvgPoolNhwcBf16Cpu>(in[0]);
                          });
#ifdef FASTNN_HAVE_CUDA
  register_global_avg_pool_cuda(r);
#endif
}

}  // namespace fastnn::ops
