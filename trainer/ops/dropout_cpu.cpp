#include "trainer/ops/dropout.h"

#include <algorithm>
#include <cstring>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/random.h"

namespace fastnn::ops {
namespace cpu {

template <typename T>
void dropout_forward(int64_t count, double rate, uint64_t seed, uint64_t step, const T* x, T* y, uint8_t* mask) {
  const uint64_t threshold = dropout_threshold(rate);
  const T keep_scale = static_cast<T>(1.0 / (1.0 - rate));
  // One Philox call yields the 4 words of a block of 4 elements.
  parallel_range((count + 3) / 4, kElementwiseGrain / 4, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      const uint64_t ub = static_cast<uint64_t>(blk);
      const auto words = philox4x32_10({static_cast<uint32_t>(ub), static_cast<uint32_t>(ub >> 32),
                                        static_cast<uint32_t>(step), static_cast<uint32_t>(step >> 32)},
                                       {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
      const int64_t i0 = blk * 4, i1 = std::min(count, i0 + 4);
      for (int64_t i = i0; i < i1; ++i) {
        const bool keep = words[i - i0] >= threshold;
        mask[i] = keep;
        y[i] = keep ? x[i] * keep_scale : T(0);
      }
    }
  });
}

template <typename T>
void dropout_backward(int64_t count, double rate, const uint8_t* mask, const T* dy, T* dx) {
  const T keep_scale = static_cast<T>(1.0 / (1.0 - rate));
  parallel_range(count, kElementwiseGrain, [mask, dy, dx, keep_scale](int64_t b, int64_t e) {
    const uint8_t* __restrict m = mask;
    const T* __restrict dyi = dy;
    T* __restrict dxo = dx;
    for (int64_t i = b; i < e; ++i) {  // branch-free, as relu_cpu.cpp's loops
      const T d = dyi[i] * keep_scale;
      dxo[i] = m[i] ? d : T(0);
    }
  });
}

template void dropout_forward<float>(int64_t, double, uint64_t, uint64_t, const float*, float*, uint8_t*);
template void dropout_forward<double>(int64_t, double, uint64_t, uint64_t, const double*, double*, uint8_t*);
template void dropout_backward<float>(int64_t, double, const uint8_t*, const float*, float*);
template void dropout_backward<double>(int64_t, double, const uint8_t*, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class DropoutCpu final : public OpKernel {
 public:
  DropoutCpu(const TensorSpec& x, double rate) : OpKernel("dropout", Device::kCpu), rate_(rate) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
    sig_.saved = {TensorSpec{.name = "mask", .shape = x.shape, .dtype = DType::kU8}};
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const Tensor& x = a.inputs[0];
    Tensor& y = a.outputs[0];
    if (a.training) {
      cpu::dropout_forward<T>(x.numel(), rate_, a.seed, a.step, x.data<T>(), y.data<T>(), a.saved[0].data<uint8_t>());
    } else if (y.raw() != x.raw() && x.nbytes()) {
      std::memcpy(y.raw(), x.raw(), x.nbytes());
    }
  }
  void run_backward(const BackwardArgs& a) override {
    Tensor& dx = a.d_inputs[0];
    if (!dx.defined()) return;
    const Tensor& dy = a.d_outputs[0];
    if (a.training)
      cpu::dropout_backward<T>(dy.numel(), rate_, a.saved[0].data<uint8_t>(), dy.data<T>(), dx.data<T>());
    else if (dx.raw() != dy.raw() && dy.nbytes())
      std::memcpy(dx.raw(), dy.raw(), dy.nbytes());
  }

 private:
  double rate_;
};

}  // namespace

void register_dropout(OpRegistry& r) {
  r.add(OpDef{
      .name = "dropout",
      .summary = "inverted dropout with a counter-based (Philox) mask; identity in eval",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     a.check_known("dropout", {"rate"});
                     expect_inputs("dropout", in, 1);
                     const double rate = a.get_float("dropout", "rate", 0.5);
                     if (!(rate >= 0 && rate < 1)) throw ConfigError(str("dropout: rate must be in [0, 1), got ", rate));
                     return make_cpu_kernel<DropoutCpu>("dropout", compute_dtype("dropout", in), in[0], rate);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"train_r0.3", {{"rate", 0.3}}, {{{4, 3, 3, 3}}}, true},
                                   {"eval", {{"rate", 0.5}}, {{{5, 6}}}, false}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_dropout_cuda(r);
#endif
}

}  // namespace fastnn::ops
