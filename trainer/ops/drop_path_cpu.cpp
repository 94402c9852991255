#include "trainer/ops/drop_path.h"

#include <cstring>

#include "trainer/ops/cpu_kernel.h"
#include "trainer/ops/random.h"

namespace fastnn::ops {
namespace cpu {

void drop_path_scales(int64_t n, double keep, uint64_t seed, uint64_t step, float* scale) {
  const uint64_t threshold = dropout_threshold(1 - keep);
  const auto kept = static_cast<float>(1 / keep);
  for (int64_t i = 0; i < n; ++i)
    scale[i] = philox_word(seed, step, static_cast<uint64_t>(i)) >= threshold ? kept : 0.f;
}

template <typename T>
void drop_path_apply(int64_t n, int64_t inner, const float* scale, const T* x, T* y) {
  parallel_range(n * inner, kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = x[i] * static_cast<T>(scale[i / inner]);
  });
}

template void drop_path_apply<float>(int64_t, int64_t, const float*, const float*, float*);
template void drop_path_apply<double>(int64_t, int64_t, const float*, const double*, double*);

}  // namespace cpu

DropPathSchedule drop_path_schedule(const Attrs& a) {
  constexpr std::string_view op = "drop_path";
  a.check_known(op, {"keep_prob", "cell_index", "total_cells", "total_steps"});
  DropPathSchedule s{.keep_prob = a.get_float(op, "keep_prob", 1.0),
                     .cell_index = a.get_int(op, "cell_index", 0),
                     .total_cells = a.get_int(op, "total_cells", 1),
                     .total_steps = a.get_int(op, "total_steps", 0)};
  if (!(s.keep_prob > 0 && s.keep_prob <= 1))
    throw ConfigError(str(op, ": keep_prob must be in (0, 1], got ", s.keep_prob));
  if (s.total_cells < 1 || s.total_cells > (1 << 20) || s.cell_index < 0 || s.cell_index >= s.total_cells)
    throw ConfigError(str(op, ": needs 0 <= cell_index < total_cells <= 2^20, got cell_index ", s.cell_index,
                          ", total_cells ", s.total_cells));
  if (s.total_steps < 0) throw ConfigError(str(op, ": total_steps must be >= 0, got ", s.total_steps));
  return s;
}

namespace {

int64_t inner_of(const Shape& s) {
  int64_t inner = 1;
  for (size_t i = 1; i < s.size(); ++i) inner *= s[i];
  return inner;
}

template <typename T>
class DropPathCpu final : public OpKernel {
 public:
  DropPathCpu(const TensorSpec& x, DropPathSchedule s) : OpKernel("drop_path", Device::kCpu), s_(s) {
    sig_.inputs = {renamed(x, "x")};
    sig_.input_has_grad = {true};
    sig_.outputs = {TensorSpec{.name = "y", .shape = x.shape, .dtype = x.dtype}};
    sig_.saved = {TensorSpec{.name = "scale", .shape = {x.shape[0]}, .dtype = DType::kF32}};
    n_ = x.shape[0];
    inner_ = inner_of(x.shape);
  }

 protected:
  void run_forward(const ForwardArgs& a) override {
    const Tensor& x = a.inputs[0];
    Tensor& y = a.outputs[0];
    if (a.training) {
      float* scale = a.saved[0].data<float>();
      cpu::drop_path_scales(n_, drop_path_keep(s_, a.step), a.seed, a.step, scale);
      cpu::drop_path_apply<T>(n_, inner_, scale, x.data<T>(), y.data<T>());
    } else if (y.raw() != x.raw() && x.nbytes()) {
      std::memcpy(y.raw(), x.raw(), x.nbytes());
    }
  }
  void run_backward(const BackwardArgs& a) override {
    Tensor& dx = a.d_inputs[0];
    if (!dx.defined()) return;
    const Tensor& dy = a.d_outputs[0];
    if (a.training)
      cpu::drop_path_apply<T>(n_, inner_, a.saved[0].data<float>(), dy.data<T>(), dx.data<T>());
    else if (dx.raw() != dy.raw() && dy.nbytes())
      std::memcpy(dx.raw(), dy.raw(), dy.nbytes());
  }

 private:
  DropPathSchedule s_;
  int64_t n_ = 0, inner_ = 1;
};

}  // namespace

void register_drop_path(OpRegistry& r) {
  r.add(OpDef{
      .name = "drop_path",
      .summary = "NASNet drop-path: whole examples dropped with a keep probability scheduled over cells and steps",
      .kernels = {{Device::kCpu,
                   [](const Attrs& a, std::span<const TensorSpec> in) {
                     constexpr std::string_view op = "drop_path";
                     const DropPathSchedule s = drop_path_schedule(a);
                     expect_inputs(op, in, 1);
                     expect_rank(op, in, 0, {2, 3, 4});
                     return make_cpu_kernel<DropPathCpu>(op, compute_dtype(op, in), in[0], s);
                   }}},
      // The registry tests run at steps 3 and 7: total_steps 1 is past the ramp (keep = 0.5 here), 20
      // inside it. 16 examples so that both outcomes occur.
      .test_cases = [] {
        return std::vector<OpCase>{
            {"ramped_k0.5", {{"keep_prob", 0.5}, {"cell_index", 3}, {"total_cells", 4}, {"total_steps", 1}},
             {{{16, 2, 3, 3}}}},
            {"mid_ramp", {{"keep_prob", 0.2}, {"cell_index", 0}, {"total_cells", 3}, {"total_steps", 20}},
             {{{16, 5}}}},
            {"eval", {{"keep_prob", 0.5}, {"cell_index", 1}, {"total_cells", 2}}, {{{4, 3, 2}}}, false}};
      },
  });
#ifdef FASTNN_HAVE_CUDA
  register_drop_path_cuda(r);
#endif
}

}  // namespace fastnn::ops
