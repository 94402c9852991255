// batch_norm: statistics, running averages and eval mode against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>

#include "trainer/ops/batch_norm.h"
#include "trainer/ops/op_case.h"

namespace fastnn::ops {
namespace {

struct Bn {
  std::unique_ptr<OpKernel> k;
  KernelTensors t;
};

Bn make_bn(const Shape& x, const Attrs& a = {}) {
  OpRegistry r;
  register_batch_norm(r);
  Bn bn;
  bn.k = r.create("batch_norm", Device::kCpu, a, std::vector<TensorSpec>{{.name = "x", .shape = x, .dtype = DType::kF64}});
  bn.t = allocate_kernel_tensors(bn.k->signature());
  bn.t.params[0].fill(1.0);  // gamma
  bn.t.params[1].fill(0.0);  // beta
  bn.t.state[0].fill(0.0);   // running mean
  bn.t.state[1].fill(1.0);   // running var
  return bn;
}

TEST(BatchNorm, TrainingUsesBatchStatisticsPerChannel) {
  // x [2, 2, 1, 2]: channel 0 holds {1, 2, 3, 6} (mean 3, biased var 3.5), channel 1 holds {0, 0, 4, 4}
  // (mean 2, var 4).
  Bn bn = make_bn({2, 2, 1, 2});
  std::vector<double> x{1, 2, 0, 0, 3, 6, 4, 4};
  std::copy(x.begin(), x.end(), bn.t.inputs[0].data<double>());
  bn.t.params[0] = Tensor::from<double>({2}, {2.0, 1.0});
  bn.t.params[1] = Tensor::from<double>({2}, {0.5, -1.0});
  bn.k->forward(bn.t.forward_args(/*training=*/true));
  const double eps = 1e-5, i0 = 1 / std::sqrt(3.5 + eps), i1 = 1 / std::sqrt(4 + eps);
  const auto y = bn.t.outputs[0].to_vector<double>();
  const std::vector<double> want{2 * (1 - 3) * i0 + 0.5, 2 * (2 - 3) * i0 + 0.5, (0 - 2) * i1 - 1, (0 - 2) * i1 - 1,
                                 2 * (3 - 3) * i0 + 0.5, 2 * (6 - 3) * i0 + 0.5, (4 - 2) * i1 - 1, (4 - 2) * i1 - 1};
  for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
  EXPECT_EQ(bn.t.saved[0].to_vector<double>(), (std::vector<double>{3, 2}));
  EXPECT_NEAR(bn.t.saved[1].to_vector<double>()[0], i0, 1e-15);
  // Running: momentum 0.9 weights the old value; the variance is the unbiased one (x 4/3).
  EXPECT_NEAR(bn.t.state[0].to_vector<double>()[0], 0.1 * 3, 1e-15);
  EXPECT_NEAR(bn.t.state[0].to_vector<double>()[1], 0.1 * 2, 1e-15);
  EXPECT_NEAR(bn.t.state[1].to_vector<double>()[0], 0.9 + 0.1 * 3.5 * 4 / 3, 1e-15);
  EXPECT_NEAR(bn.t.state[1].to_vector<double>()[1], 0.9 + 0.1 * 4 * 4 / 3, 1e-15);
}

TEST(BatchNorm, RunningAveragesConvergeGeometrically) {
  Bn bn = make_bn({4, 1}, {{"momentum", 0.8}});
  std::vector<double> x{1, 2, 3, 4};  // mean 2.5, unbiased var 5/3
  std::copy(x.begin(), x.end(), bn.t.inputs[0].data<double>());
  for (int step = 1; step <= 10; ++step) {
    bn.k->forward(bn.t.forward_args(true));
    const double decay = std::pow(0.8, step);
    EXPECT_NEAR(bn.t.state[0].to_vector<double>()[0], (1 - decay) * 2.5, 1e-12) << step;
    EXPECT_NEAR(bn.t.state[1].to_vector<double>()[0], decay * 1 + (1 - decay) * 5.0 / 3, 1e-12) << step;
  }
}

TEST(BatchNorm, EvalUsesRunningStatisticsAndLeavesThemAlone) {
  Bn bn = make_bn({3, 2}, {{"epsilon", 0.01}});
  std::vector<double> x{1, -1, 2, 0, 3, 5};
  std::copy(x.begin(), x.end(), bn.t.inputs[0].data<double>());
  bn.t.state[0] = Tensor::from<double>({2}, {1.0, -2.0});
  bn.t.state[1] = Tensor::from<double>({2}, {0.99, 3.99});
  bn.t.params[0] = Tensor::from<double>({2}, {2.0, 0.5});
  bn.k->forward(bn.t.forward_args(/*training=*/false));
  const auto y = bn.t.outputs[0].to_vector<double>();
  for (int n = 0; n < 3; ++n) {
    EXPECT_NEAR(y[n * 2 + 0], 2 * (x[n * 2] - 1) / 1.0, 1e-12);
    EXPECT_NEAR(y[n * 2 + 1], 0.5 * (x[n * 2 + 1] + 2) / 2.0, 1e-12);
  }
  EXPECT_EQ(bn.t.state[0].to_vector<double>(), (std::vector<double>{1.0, -2.0}));
  EXPECT_EQ(bn.t.state[1].to_vector<double>(), (std::vector<double>{0.99, 3.99}));
  // Frozen statistics: dx = gamma * invstd * dy.
  bn.t.d_outputs[0] = Tensor::from<double>({3, 2}, {1, 1, 2, 2, -1, 4});
  bn.k->backward(bn.t.backward_args(false));
  EXPECT_EQ(bn.t.d_inputs[0].to_vector<double>(), (std::vector<double>{2, 0.25, 4, 0.5, -2, 1}));
  EXPECT_EQ(bn.t.d_params[1].to_vector<double>(), (std::vector<double>{2, 7}));  // dbeta = sum dy
}

TEST(BatchNorm, TrainingBackwardOfConstantGradientIsZero) {
  // y is invariant to shifting x, and sum(y) per channel is fixed, so dy = const gives dx = 0.
  Bn bn = make_bn({5, 3, 2, 2});
  OpCase c{"", {}, {{{5, 3, 2, 2}}}};
  fill_case_tensors(bn.t, bn.k->signature(), c, 3);
  bn.k->forward(bn.t.forward_args(true));
  bn.t.d_outputs[0].fill(0.75);
  bn.k->backward(bn.t.backward_args(true));
  for (double v : bn.t.d_inputs[0].to_vector<double>()) EXPECT_NEAR(v, 0.0, 1e-12);
  for (double v : bn.t.d_params[1].to_vector<double>()) EXPECT_NEAR(v, 0.75 * 20, 1e-12);
}

}  // namespace
}  // namespace fastnn::ops
