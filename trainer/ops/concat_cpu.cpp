#include "trainer/ops/concat.h"

#include <algorithm>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace cpu {

template <typename T>
void concat_forward(int64_t n, int64_t inner, std::span<const int64_t> channels, std::span<const T* const> xs, T* y) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  tbb::parallel_for<int64_t>(0, n, [&](int64_t s) {
    T* out = y + s * total * inner;
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t len = channels[i] * inner;
      std::copy(xs[i] + s * len, xs[i] + (s + 1) * len, out);
      out += len;
    }
  });
}

template <typename T>
void concat_backward(int64_t n, int64_t inner, std::span<const int64_t> channels, const T* dy, std::span<T* const> dxs) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  tbb::parallel_for<int64_t>(0, n, [&](int64_t s) {
    const T* in = dy + s * total * inner;
    for (size_t i = 0; i < dxs.size(); ++i) {
      const int64_t len = channels[i] * inner;
      if (dxs[i]) std::copy(in, in + len, dxs[i] + s * len);
      in += len;
    }
  });
}

#define FASTNN_CONCAT_INSTANTIATE(T)                                                                             \
  template void concat_forward<T>(int64_t, int64_t, std::span<const int64_t>, std::span<const T* const>, T*);    \
  template void concat_backward<T>(int64_t, int64_t, std::span<const int64_t>, const T*, std::span<T* const>);
FASTNN_CONCAT_INSTANTIATE(float)
FASTNN_CONCAT_INSTANTIATE(double)
#undef FASTNN_CONCAT_INSTANTIATE

}  // namespace cpu

namespace {

constexpr size_t kMaxConcatInputs = 64;

template <typename T>
class ConcatCpu final : public OpKernel {
 public:
  // nhwc: the kernel add_nhwc_kernel registers, the same copies over [N*H*W, C_i] rows.
  ConcatCpu(std::span<const TensorSpec> in, bool nhwc) : OpKernel("concat", Device::kCpu) {
    sig_.inputs = named_inputs(in, {});
    sig_.input_has_grad.assign(in.size(), true);
    Shape out = in[0].shape;
    out[1] = 0;
    for (const TensorSpec& t : in) {
      channels_.push_back(t.shape[1]);
      out[1] += t.shape[1];
    }
    const bool rows = nhwc && out.size() == 4;
    inner_ = out.size() == 4 && !rows ? out[2] * out[3] : 1;
    n_ = rows ? out[0] * out[2] * out[3] : out[0];
    sig_.outputs = {TensorSpec{.name = "y", .shape = out, .dtype = in[0].dtype}};
    if (nhwc) sig_ = nhwc_signature(std::move(sig_));
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const T* xs[kMaxConcatInputs];
    for (size_t i = 0; i < a.inputs.size(); ++i) xs[i] = a.inputs[i].data<T>();
    cpu::concat_forward<T>(n_, inner_, channels_, std::span<const T* const>(xs, a.inputs.size()),
                           a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    T* dxs[kMaxConcatInputs];
    for (size_t i = 0; i < a.d_inputs.size(); ++i) dxs[i] = a.d_inputs[i].defined() ? a.d_inputs[i].data<T>() : nullptr;
    cpu::concat_backward<T>(n_, inner_, channels_, a.d_outputs[0].data<T>(),
                            std::span<T* const>(dxs, a.d_inputs.size()));
  }

 private:
  std::vector<int64_t> channels_;
  int64_t inner_ = 1, n_ = 0;
};

// Attribute and shape checks; the inputs' dtype.
DType concat_dtype(const Attrs& a, std::span<const TensorSpec> in) {
  a.check_known("concat", {});
  expect_inputs("concat", in, 1, kMaxConcatInputs);
  const DType dt = compute_dtype("concat", in);
  for (size_t i = 0; i < in.size(); ++i) {
    expect_rank("concat", in, i, {2, 4});
    Shape s = in[i].shape, s0 = in[0].shape;
    s[1] = s0[1] = 0;
    if (s != s0 || in[i].dtype != dt)
      throw ConfigError(str("concat: input ", i, " is ", dtype_name(in[i].dtype), shape_str(in[i].shape), ", input 0 is ",
                            dtype_name(dt), shape_str(in[0].shape), "; only dim 1 may differ"));
  }
  return dt;
}

}  // namespace

void register_concat(OpRegistry& r) {
  r.add(OpDef{
      .name = "concat",
      .summary = "concatenation along channels (dim 1)",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     return make_cpu_kernel<ConcatCpu>("concat", concat_dtype(a, in), in, false);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"nchw3", {}, {{{2, 1, 2, 3}}, {{2, 3, 2, 3}}, {{2, 2, 2, 3}}}},
                                   {"nc2", {}, {{{3, 2}}, {{3, 4}}}}};
      },
  });
  // NHWC on the CPU too: the same copies over rows (no transposes), which keeps an NHWC plan's
  // own-kernel path (OpRegistry::create_nhwc) under test in CI, bitwise the adapted kernel.
  r.add_nhwc_kernel("concat", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) {
    return make_cpu_kernel<ConcatCpu>("concat", concat_dtype(a, in), in, true);
  });
#ifdef FASTNN_HAVE_CUDA
  register_concat_cuda(r);
#endif
}

}  // namespace fastnn::ops
