// batch_norm: statistics, running averages and eval mode against hand-computed values.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <thread>

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

// Two replicas in two threads: each deposits its values, both add them in the same order.
struct PairSum {
  std::barrier<> meet{2};
  std::span<double> parts[2];
  struct Replica final : CrossReplicaSum {
    PairSum* pair = nullptr;
    int id = 0;
    void sum(std::span<double> values) override {
      pair->parts[id] = values;
      pair->meet.arrive_and_wait();
      std::vector<double> total(values.size());
      for (size_t i = 0; i < total.size(); ++i) total[i] = pair->parts[0][i] + pair->parts[1][i];
      pair->meet.arrive_and_wait();  // both have read both parts before either is overwritten
      std::copy(total.begin(), total.end(), values.begin());
    }
  };
};

// Synchronised batch norm: two replicas with 3 + 2 examples compute what one does with all 5 (y,
// running statistics, dx for their own examples), and their dgamma/dbeta add up to the whole batch's.
TEST(BatchNorm, SynchronisedReplicasMatchTheWholeBatch) {
  const int64_t c = 3, hw = 4, sizes[2] = {3, 2};
  Bn whole = make_bn({5, c, 2, 2});
  OpCase oc{"", {}, {{{5, c, 2, 2}}}};
  fill_case_tensors(whole.t, whole.k->signature(), oc, 7);  // x, gamma, beta, dy

  PairSum pair;
  Bn part[2] = {make_bn({sizes[0], c, 2, 2}), make_bn({sizes[1], c, 2, 2})};
  std::thread threads[2];
  for (int r = 0; r < 2; ++r) {
    const int64_t first = r == 0 ? 0 : sizes[0];
    Bn& b = part[r];
    auto slice = [&](const Tensor& from, Tensor& to) {
      const double* src = from.data<double>() + first * c * hw;
      std::copy(src, src + sizes[r] * c * hw, to.data<double>());
    };
    slice(whole.t.inputs[0], b.t.inputs[0]);
    slice(whole.t.d_outputs[0], b.t.d_outputs[0]);
    for (size_t k = 0; k < 2; ++k) {
      b.t.params[k] = whole.t.params[k];  // same gamma, beta
      b.t.state[k].fill(0.5);
    }
    threads[r] = std::thread([&b, &pair, r] {
      PairSum::Replica replica;
      replica.pair = &pair;
      replica.id = r;
      ForwardArgs fa = b.t.forward_args(true);
      fa.replicas = &replica;
      b.k->forward(fa);
      BackwardArgs ba = b.t.backward_args(true);
      ba.replicas = &replica;
      b.k->backward(ba);
    });
  }
  for (auto& t : threads) t.join();

  Bn& reference = whole;  // one process with all 5 examples, from the same running statistics
  for (Tensor& s : reference.t.state) s.fill(0.5);
  reference.k->forward(reference.t.forward_args(true));
  reference.k->backward(reference.t.backward_args(true));
  for (int r = 0; r < 2; ++r) {
    const int64_t first = r == 0 ? 0 : sizes[0];
    const auto y = part[r].t.outputs[0].to_vector<double>(), dx = part[r].t.d_inputs[0].to_vector<double>();
    const auto y_all = reference.t.outputs[0].to_vector<double>(), dx_all = reference.t.d_inputs[0].to_vector<double>();
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y[i], y_all[static_cast<size_t>(first * c * hw) + i], 1e-12) << "replica " << r << " y " << i;
      EXPECT_NEAR(dx[i], dx_all[static_cast<size_t>(first * c * hw) + i], 1e-12) << "replica " << r << " dx " << i;
    }
    for (size_t k = 0; k < 2; ++k) {
      const auto s = part[r].t.state[k].to_vector<double>(), s_all = reference.t.state[k].to_vector<double>();
      for (size_t i = 0; i < s.size(); ++i) EXPECT_NEAR(s[i], s_all[i], 1e-12) << "running statistics " << k;
    }
  }
  for (size_t k = 0; k < 2; ++k) {  // dgamma, dbeta: each replica's own share
    const auto a = part[0].t.d_params[k].to_vector<double>(), b = part[1].t.d_params[k].to_vector<double>();
    const auto all = reference.t.d_params[k].to_vector<double>();
    for (size_t i = 0; i < all.size(); ++i) EXPECT_NEAR(a[i] + b[i], all[i], 1e-12) << "param grad " << k;
  }
  // Without synchronisation a replica normalises over its own examples only: the control differs.
  Bn alone = make_bn({sizes[0], c, 2, 2});
  alone.t = part[0].t;
  alone.k->forward(alone.t.forward_args(true));
  EXPECT_GT(std::abs(alone.t.outputs[0].to_vector<double>()[0] - reference.t.outputs[0].to_vector<double>()[0]), 1e-6);
}

}  // namespace
}  // namespace fastnn::ops
