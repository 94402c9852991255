#include "trainer/ops/spatial_shift.h"

#include <algorithm>

#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {
namespace cpu {

template <typename T>
void spatial_shift(int64_t planes, int64_t h, int64_t w, int64_t sy, int64_t sx, const T* x, T* y) {
  // Columns j with 0 <= j + sx < w are copied; the rest are zero.
  const int64_t j0 = std::clamp<int64_t>(-sx, 0, w), j1 = std::clamp<int64_t>(w - sx, 0, w);
  parallel_range(planes * h, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(w, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t r = b; r < e; ++r) {
                     const int64_t p = r / h, i = r % h, si = i + sy;
                     T* out = y + r * w;
                     if (si < 0 || si >= h || j0 >= j1) {
                       std::fill(out, out + w, T(0));
                       continue;
                     }
                     const T* in = x + (p * h + si) * w + sx;
                     std::fill(out, out + j0, T(0));
                     std::copy(in + j0, in + j1, out + j0);
                     std::fill(out + j1, out + w, T(0));
                   }
                 });
}

template void spatial_shift<float>(int64_t, int64_t, int64_t, int64_t, int64_t, const float*, float*);
template void spatial_shift<double>(int64_t, int64_t, int64_t, int64_t, int64_t, const double*, double*);

}  // namespace cpu

namespace {

template <typename T>
class SpatialShiftCpu final : public OpKernel {
 public:
  SpatialShiftCpu(const TensorSpec& x, int64_t sy, int64_t sx) : OpKernel("spatial_shift", Device::kCpu), sy_(sy), sx_(sx) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
    planes_ = x.shape[0] * x.shape[1];
    h_ = x.shape[2];
    w_ = x.shape[3];
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    cpu::spatial_shift<T>(planes_, h_, w_, sy_, sx_, a.inputs[0].data<T>(), a.outputs[0].data<T>());
  }
  void run_backward(const BackwardArgs& a) override {
    if (!a.d_inputs[0].defined()) return;
    cpu::spatial_shift<T>(planes_, h_, w_, -sy_, -sx_, a.d_outputs[0].data<T>(), a.d_inputs[0].data<T>());
  }

 private:
  int64_t sy_, sx_, planes_ = 0, h_ = 0, w_ = 0;
};

}  // namespace

void register_spatial_shift(OpRegistry& r) {
  r.add(OpDef{
      .name = "spatial_shift",
      .summary = "y[n,c,i,j] = x[n,c,i+dy,j+dx], zero outside (NASNet's factorized-reduction pad + crop)",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     constexpr std::string_view op = "spatial_shift";
                     a.check_known(op, {"dy", "dx"});
                     expect_inputs(op, in, 1);
                     expect_rank(op, in, 0, {4});
                     const int64_t sy = a.get_int(op, "dy", 1), sx = a.get_int(op, "dx", 1);
                     constexpr int64_t kMax = int64_t{1} << 20;
                     if (sy < -kMax || sy > kMax || sx < -kMax || sx > kMax)
                       throw ConfigError(str(op, ": dy and dx must be in [-2^20, 2^20], got ", sy, ", ", sx));
                     return make_cpu_kernel<SpatialShiftCpu>(op, compute_dtype(op, in), in[0], sy, sx);
                   }}},
      .test_cases = [] {
        return std::vector<OpCase>{{"nasnet_1_1", {{"dy", 1}, {"dx", 1}}, {{{2, 3, 5, 4}}}},
                                   {"neg_2_0", {{"dy", -2}, {"dx", 0}}, {{{1, 2, 4, 3}}}},
                                   {"beyond", {{"dy", 0}, {"dx", -7}}, {{{1, 1, 3, 3}}}}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_spatial_shift_cuda(r);
#endif
}

}  // namespace fastnn::ops
