// TrainStep's loss scaling: the backward is seeded with loss_scale, so every gradient is exactly
// loss_scale x the unscaled one (a power of two scales every rounding step exactly), and the reported
// losses are not scaled.
#include <gtest/gtest.h>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

TEST(TrainStepScale, GradientsScaleExactlyAndLossDoesNot) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  graph::Graph a(net, {.batch_size = 3, .seed = 5}), b(net, {.batch_size = 3, .seed = 5});
  const Tensor x = testing_util::random_tensor({3, 1, 28, 28}, DType::kF32, 9);
  const Tensor y = testing_util::labels_of({1, 7, 4});
  TrainStep sa(a), sb(b, {.loss_scale = 1024});
  EXPECT_EQ(sb.loss_scale(), 1024);
  const StepResult ra = sa.train(x, y, 0), rb = sb.train(x, y, 0);
  EXPECT_EQ(ra.loss, rb.loss);
  EXPECT_EQ(ra.correct, rb.correct);
  const auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    const std::vector<float> ga = pa[i].grad.to_vector<float>(), gb = pb[i].grad.to_vector<float>();
    for (size_t k = 0; k < ga.size(); ++k) ASSERT_EQ(ga[k] * 1024.0f, gb[k]) << pa[i].name << "[" << k << "]";
  }
  sb.set_loss_scale(1);  // back to the plain gradient
  sb.train(x, y, 0);
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i].grad.to_vector<float>(), pb[i].grad.to_vector<float>());
  EXPECT_THROW(sb.set_loss_scale(0), Error);
  EXPECT_THROW(TrainStep(a, {.loss_scale = -1}), ConfigError);
}

// The seeds a device runner writes its own scale into (the CUDA runner's device-side loss scale): one per
// output, holding the current scale, and what train() starts the backward from — overwriting a seed
// changes the gradients exactly as set_loss_scale does.
TEST(TrainStepScale, LossGradientSeedsAreWhatTheBackwardStartsFrom) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  graph::Graph a(net, {.batch_size = 3, .seed = 5}), b(net, {.batch_size = 3, .seed = 5});
  const Tensor x = testing_util::random_tensor({3, 1, 28, 28}, DType::kF32, 9);
  const Tensor y = testing_util::labels_of({1, 7, 4});
  TrainStep sa(a, {.loss_scale = 64}), sb(b);
  std::vector<std::pair<Tensor, double>> seeds = sa.loss_gradient_seeds(y);
  ASSERT_EQ(seeds.size(), 1u);  // lenet has no aux head
  EXPECT_EQ(seeds[0].second, 1.0);
  EXPECT_EQ(seeds[0].first.to_vector<float>(), std::vector<float>{64.0f});
  seeds[0].first.fill(256);  // as a device runner's kernel would
  sb.set_loss_scale(256);
  sa.train(x, y, 0);
  sb.train(x, y, 0);
  const auto pa = a.parameters(), pb = b.parameters();
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i].grad.to_vector<float>(), pb[i].grad.to_vector<float>()) << pa[i].name;
}

}  // namespace
}  // namespace fastnn
