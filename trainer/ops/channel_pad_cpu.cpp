#include <algorithm>

#include "trainer/ops/channel_pad.h"
#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/layout_adapter.h"

namespace fastnn::ops {
namespace cpu {

template <typename T>
void channel_pad_forward(int64_t n, int64_t c, int64_t inner, int64_t before, int64_t after, const T* x, T* y) {
  const int64_t in_plane = c * inner, out_plane = (before + c + after) * inner;
  parallel_range(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T* out = y + i * out_plane;
      std::fill(out, out + before * inner, T(0));
      std::copy(x + i * in_plane, x + (i + 1) * in_plane, out + before * inner);
      std::fill(out + (before + c) * inner, out + out_plane, T(0));
    }
  });
}

template <typename T>
void channel_pad_backward(int64_t n, int64_t c, int64_t inner, int64_t before, int64_t after, const T* dy, T* dx) {
  const int64_t in_plane = c * inner, out_plane = (before + c + after) * inner;
  parallel_range(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* src = dy + i * out_plane + before * inner;
      std::copy(src, src + in_plane, dx + i * in_plane);
    }
  });
}

#define FASTNN_CHANNEL_PAD_INSTANTIATE(T)                                                               \
  template void channel_pad_forward<T>(int64_t, int64_t, int64_t, int64_t, int64_t, const T*, T*); \
  template void channel_pad_backward<T>(int64_t, int64_t, int64_t, int64_t, int64_t, const T*, T*);
FASTNN_CHANNEL_PAD_INSTANTIATE(float)
FASTNN_CHANNEL_PAD_INSTANTIATE(double)
#undef FASTNN_CHANNEL_PAD_INSTANTIATE

}  // namespace cpu

namespace {

// nhwc (the kernel add_nhwc_kernel registers, rank 4): x [N, H, W, C] is N*H*W rows of C channels, each
// padded the same way: the NCHW functions over rows with inner = 1 (copies, bitwise the adapted kernel).
template <typename T>
class ChannelPadCpu final : public OpKernel {
 public:
  ChannelPadCpu(const TensorSpec& x, int64_t before, int64_t after, bool nhwc)
      : OpKernel("channel_pad", Device::kCpu), before_(before), after_(after) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    Shape ys = x.shape;
    ys[1] += before + after;
    sig_.outputs = {TensorSpec{.name = "y", .shape = ys, .dtype = x.dtype}};
    n_ = x.shape[0];
    c_ = x.shape[1];
    inner_ = 1;
    for (size_t i = 2; i < x.shape.size(); ++i) inner_ *= x.shape[i];
    if (nhwc) {
      sig_ = nhwc_signature(sig_);
      n_ *= inner_;
      inner_ = 1;
    }
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::channel_pad_forward<T>(n_, c_, inner_, before_, after_, a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    cpu::channel_pad_backward<T>(n_, c_, inner_, before_, after_, a.d_outputs[0].data<T>(), a.d_inputs[0].data<T>());
  }

 private:
  int64_t before_, after_, n_ = 0, c_ = 0, inner_ = 1;
};

std::unique_ptr<OpKernel> make_channel_pad(const Attrs& a, std::span<const TensorSpec> in, bool nhwc) {
  constexpr std::string_view op = "channel_pad";
  a.check_known(op, {"before", "after"});
  expect_inputs(op, in, 1);
  expect_rank(op, in, 0, {2, 3, 4});
  const int64_t before = a.get_int(op, "before", 0), after = a.get_int(op, "after", 0);
  if (before < 0 || after < 0 || before > (1 << 20) || after > (1 << 20))
    throw ConfigError(str(op, ": before and after must be in [0, 2^20], got ", before, ", ", after));
  Shape ys = in[0].shape;
  ys[1] += before + after;
  shape_numel(ys);
  return make_cpu_kernel<ChannelPadCpu>(op, compute_dtype(op, in), in[0], before, after, nhwc && in[0].shape.size() == 4);
}

}  // namespace

void register_channel_pad(OpRegistry& r) {
  r.add(OpDef{
      .name = "channel_pad",
      .summary = "zero channels before and after x along dim 1 (option-A residual shortcut)",
      .kernels = {{Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) { return make_channel_pad(a, in, false); }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"nchw_b2_a3", {{"before", 2}, {"after", 3}}, {{{2, 3, 2, 3}}}},
                                   {"flat_after", {{"after", 4}}, {{{3, 5}}}}};
      },
  });
  r.add_nhwc_kernel("channel_pad", Device::kCpu, [](const Attrs& a, std::span<const TensorSpec> in) -> std::unique_ptr<OpKernel> {
    if (in.size() != 1 || in[0].shape.size() != 4) return nullptr;
    return make_channel_pad(a, in, true);
  });
#ifdef FASTNN_HAVE_CUDA
  register_channel_pad_cuda(r);
#endif
}

}  // namespace fastnn::ops
