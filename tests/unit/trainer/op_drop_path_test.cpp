// drop_path and spatial_shift, the two ops NASNet adds: TF-slim's keep-probability schedule over cells
// and steps, whole examples kept (scaled) or zeroed at the scheduled rate, eval identity; the shift's
// known answer against TF-slim's pad-then-crop of the factorized reduction.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainer/graph/net_plan.h"
#include "trainer/ops/drop_path.h"
#include "trainer/ops/op.h"
#include "trainer/ops/op_case.h"
#include "trainer/ops/random.h"
#include "trainer/ops/spatial_shift.h"

namespace fastnn::ops {
namespace {

TEST(DropPath, KeepProbabilityFollowsTfSlimSchedule) {
  // nasnet_large: keep_prob 0.7, 22 cells (18 + 2 reduction + 2 stem), 250,000 steps.
  const DropPathSchedule s{.keep_prob = 0.7, .cell_index = 10, .total_cells = 22, .total_steps = 250000};
  const double layer_keep = 1 - 11.0 / 22 * 0.3;  // 0.85
  EXPECT_DOUBLE_EQ(drop_path_keep(s, 0), 1.0);
  EXPECT_DOUBLE_EQ(drop_path_keep(s, 125000), 1 - 0.5 * (1 - layer_keep));
  EXPECT_DOUBLE_EQ(drop_path_keep(s, 250000), layer_keep);
  EXPECT_DOUBLE_EQ(drop_path_keep(s, 900000), layer_keep);  // the ramp stops at total_steps
  // The last cell reaches keep_prob itself; no step ramp with total_steps 0.
  EXPECT_DOUBLE_EQ(drop_path_keep({.keep_prob = 0.6, .cell_index = 19, .total_cells = 20}, 3), 0.6);
  EXPECT_DOUBLE_EQ(drop_path_keep({.keep_prob = 1.0, .cell_index = 19, .total_cells = 20}, 7), 1.0);
}

TEST(DropPath, WholeExamplesAreKeptScaledOrZeroedAtTheScheduledRate) {
  const int64_t n = 20000, inner = 3;
  std::vector<float> x(n * inner), y(n * inner), scale(n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + static_cast<float>(i % 7);
  const double keep = 0.65;
  cpu::drop_path_scales(n, keep, /*seed=*/11, /*step=*/5, scale.data());
  cpu::drop_path_apply<float>(n, inner, scale.data(), x.data(), y.data());
  int64_t kept = 0;
  for (int64_t e = 0; e < n; ++e) {
    const bool k = scale[e] != 0;
    kept += k;
    ASSERT_TRUE(!k || scale[e] == static_cast<float>(1 / keep));
    for (int64_t j = 0; j < inner; ++j) ASSERT_EQ(y[e * inner + j], x[e * inner + j] * scale[e]) << e;
    // The bit is Philox's word for (seed, step, example), as on CUDA.
    ASSERT_EQ(k, philox_word(11, 5, static_cast<uint64_t>(e)) >= dropout_threshold(1 - keep));
  }
  const double sd = std::sqrt(n * keep * (1 - keep));
  EXPECT_NEAR(static_cast<double>(kept), n * keep, 5 * sd);
}

TEST(DropPath, KernelUsesTheStepEvalIsIdentityAndBadAttributesAreRejected) {
  const Attrs attrs{{"keep_prob", 0.5}, {"cell_index", 1}, {"total_cells", 2}, {"total_steps", 10}};
  const std::vector<TensorSpec> in{{.name = "x", .shape = {64, 2, 2, 2}, .dtype = DType::kF32}};
  auto k = graph::builtin_op_registry().create("drop_path", Device::kCpu, attrs, in);
  KernelTensors t = allocate_kernel_tensors(k->signature());
  for (int64_t i = 0; i < t.inputs[0].numel(); ++i) t.inputs[0].data<float>()[i] = 1.0f;
  const auto zeros = [&] {
    int z = 0;
    for (int64_t e = 0; e < 64; ++e) z += t.outputs[0].data<float>()[e * 8] == 0.0f;
    return z;
  };
  k->forward(t.forward_args(true, 3, /*step=*/0));  // start of the ramp: nothing dropped
  EXPECT_EQ(zeros(), 0);
  k->forward(t.forward_args(true, 3, /*step=*/10));  // end of the ramp: keep 0.5
  EXPECT_GT(zeros(), 10);
  EXPECT_LT(zeros(), 54);
  k->forward(t.forward_args(false, 3, 10));
  EXPECT_EQ(zeros(), 0);
  EXPECT_EQ(t.outputs[0].data<float>()[5], 1.0f);
  for (const Attrs& bad : {Attrs{{"keep_prob", 0.0}}, Attrs{{"keep_prob", 1.5}},
                           Attrs{{"cell_index", 2}, {"total_cells", 2}}, Attrs{{"total_steps", -1}},
                           Attrs{{"keep_prb", 0.5}}})
    EXPECT_THROW(graph::builtin_op_registry().create("drop_path", Device::kCpu, bad, in), ConfigError);
}

TEST(SpatialShift, IsTfSlimsPadBottomRightThenCropTopLeft) {
  // tf.pad(x, [[0, 0], [0, 1], [0, 1], [0, 0]])[:, 1:, 1:, :] on a 3x4 plane.
  const int64_t h = 3, w = 4;
  std::vector<double> x(h * w), y(h * w), back(h * w);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(i + 1);
  cpu::spatial_shift<double>(1, h, w, 1, 1, x.data(), y.data());
  const std::vector<double> want{6, 7, 8, 0, 10, 11, 12, 0, 0, 0, 0, 0};
  EXPECT_EQ(y, want);
  // The backward (a shift back) is the transpose: <shift(x), g> == <x, shift_back(g)>.
  cpu::spatial_shift<double>(1, h, w, -1, -1, want.data(), back.data());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    lhs += y[i] * want[i];
    rhs += x[i] * back[i];
  }
  EXPECT_EQ(lhs, rhs);
  EXPECT_THROW(graph::builtin_op_registry().create("spatial_shift", Device::kCpu, Attrs{{"dy", int64_t{1} << 30}},
                                 std::vector<TensorSpec>{{.name = "x", .shape = {1, 1, 2, 2}, .dtype = DType::kF32}}),
               ConfigError);
}

}  // namespace
}  // namespace fastnn::ops
