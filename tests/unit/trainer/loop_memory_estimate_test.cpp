// The memory estimate (trainer/loop/memory_estimate.h) counts, from shapes alone, exactly what the graph
// and the optimizer then allocate; the limit rule and the refusal; a classifier head on the GPU is in
// the device part.
#include <gtest/gtest.h>

#include "core/check.h"
#include "trainer/graph/graph.h"
#include "trainer/loop/memory_estimate.h"
#include "trainer/loop/moving_average.h"
#include "trainer/loop/run_setup.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/runner/step_runner.h"
#include "trainer/optim/optimizers.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::loop {
namespace {

RunSetup setup_for(const std::string& model, int size, int channels) {
  RunSetup s;
  s.model_name = model;
  s.height = s.width = size;
  s.channels = channels;
  s.num_classes = 10;
  s.net = zoo::build_net(model, {.num_classes = 10, .height = size, .width = size, .channels = channels});
  return s;
}

int64_t state_floats(const Optimizer& o) {
  int64_t n = 0;
  for (const NamedArray& a : o.export_state()) n += a.data.size() > 1 ? static_cast<int64_t>(a.data.size()) : 0;
  return n;
}

TEST(MemoryEstimate, MatchesWhatTheGraphAndOptimizerAllocate) {
  struct Case {
    const char* model;
    int size, channels, batch;
    const char* optimizer;
  };
  // The graph is the CPU runner's: data_format auto takes NHWC and the one-pass batch norm fusions where
  // the fast kernels cover the net (the estimate once planned NCHW there, a third too much for ResNet-50).
  for (const char* data_format : {"auto", "NCHW", "NHWC"})
    for (const Case& k : {Case{"lenet", 28, 1, 4, "momentum"}, Case{"resnet_cifar_20", 32, 3, 2, "adam"},
                          Case{"inception_v3", 107, 3, 1, "rmsprop"}, Case{"mobilenet_v2", 32, 3, 2, "sgd"},
                          Case{"lenet", 28, 1, 2, "lars"}}) {
      SCOPED_TRACE(str(k.model, " data_format=", data_format));
      const RunSetup s = setup_for(k.model, k.size, k.channels);
      JobConfig c;
      c.set_batch_size(k.batch);
      c.set_optimizer(k.optimizer);
      c.set_data_format(data_format);
      const MemoryEstimate e = estimate_training_memory(s, c, runner::ComputeTarget{});
      const auto step_runner = runner::make_step_runner(s.net, runner::step_runner_options(c, runner::ComputeTarget{}));
      const graph::Graph& g = step_runner->graph();
      const int64_t input = int64_t{k.batch} * k.channels * k.size * k.size * 4 + k.batch * 8;
      EXPECT_EQ(e.activations - input, static_cast<int64_t>(g.activation_bytes()));
      EXPECT_EQ(e.parameters, static_cast<int64_t>(g.parameter_bytes()));
      runner::StepRunnerOptions o;
      o.optimizer.optimizer = k.optimizer;
      EXPECT_EQ(e.optimizer, 4 * state_floats(*make_optimizer(o.optimizer, g.param_refs())));
      EXPECT_GT(e.process, 0);  // VmRSS of this test
      EXPECT_EQ(e.device, 0);
    }
}

// precision=bf16 on the CPU adds exactly the bf16 copies of the inputs its kernels keep (a saved tensor per
// conv2d and fully_connected layer of the training graph).
TEST(MemoryEstimate, CountsTheBf16InputCopies) {
  if (!ops::cpu_bf16_available()) GTEST_SKIP() << "no bf16 instructions: " << ops::cpu_kernels_description();
  for (const char* model : {"lenet", "resnet_cifar_20"}) {
    SCOPED_TRACE(model);
    const RunSetup s = setup_for(model, model == std::string("lenet") ? 28 : 32, model == std::string("lenet") ? 1 : 3);
    JobConfig c;
    c.set_batch_size(4);
    const int64_t f32 = estimate_training_memory(s, c, runner::ComputeTarget{}).activations;
    c.set_precision("bf16");
    const int64_t bf16 = estimate_training_memory(s, c, runner::ComputeTarget{}).activations;
    const graph::Graph g(s.net, {.batch_size = 4, .registry = &graph::cpu_bf16_op_registry(), .layout = Layout::kNHWC});
    int64_t copies = 0;
    for (const graph::PlanNode& n : g.plan().nodes())
      for (const ops::TensorSpec& t : n.kernel->signature().saved)
        if (t.dtype == DType::kBF16) copies += shape_numel(t.shape) * 2;
    EXPECT_GT(copies, 0);
    EXPECT_EQ(bf16 - f32, copies);
  }
}

// moving_average_decay adds exactly the shadows MovingAverages allocates (every variable, moving
// statistics included) to the optimizer part; adamw counts its two slots.
TEST(MemoryEstimate, CountsTheMovingAverages) {
  const RunSetup s = setup_for("resnet_cifar_20", 32, 3);
  JobConfig c;
  c.set_optimizer("adamw");
  c.set_batch_size(2);
  const int64_t without = estimate_training_memory(s, c, runner::ComputeTarget{}).optimizer;
  graph::Graph g(s.net, {.batch_size = 2});
  EXPECT_EQ(without, 4 * state_floats(*make_optimizer(optimizer_options(c), g.param_refs())));
  c.set_moving_average_decay(0.99);
  const int64_t with = estimate_training_memory(s, c, runner::ComputeTarget{}).optimizer;
  int64_t shadows = 0;
  const MovingAverages averages(0.99, true, g.variables());  // named: a temporary would die before the loop body
  for (const NamedArray& a : averages.shadows()) shadows += static_cast<int64_t>(a.data.size());
  EXPECT_EQ(with - without, 4 * shadows);
}

TEST(MemoryEstimate, ScalesWithBatchAndSeesTrainableScopes) {
  const RunSetup s = setup_for("lenet", 28, 1);
  JobConfig c;
  c.set_optimizer("adam");
  c.set_batch_size(8);
  const MemoryEstimate small = estimate_training_memory(s, c, runner::ComputeTarget{});
  c.set_batch_size(64);
  const MemoryEstimate big = estimate_training_memory(s, c, runner::ComputeTarget{});
  EXPECT_GT(big.activations, 5 * small.activations);  // 8x the batch, the same workspace
  EXPECT_GT(big.pipeline, small.pipeline);
  EXPECT_EQ(big.parameters, small.parameters);
  c.set_trainable_scopes("LeNet/fc4");
  EXPECT_EQ(estimate_training_memory(s, c, runner::ComputeTarget{}).optimizer, 2 * 4 * (10 * 1024 + 10));
}

TEST(MemoryEstimate, RefusesOverTheLimitNamingPartsAndKnobs) {
  RunSetup s = setup_for("lenet", 28, 1);
  s.manifest.image.height = s.manifest.image.width = 14;
  JobConfig c;
  c.set_batch_size(32);
  c.set_memory_limit_mb(1);
  const MemoryLimit limit = host_memory_limit(c);
  EXPECT_EQ(limit.bytes, int64_t{1} << 20);
  EXPECT_EQ(limit.source, "memory_limit_mb");
  const MemoryEstimate e = estimate_training_memory(s, c, runner::ComputeTarget{});
  try {
    check_memory_fits(e, s, c, runner::ComputeTarget{}, limit);
    FAIL() << "not refused";
  } catch (const ConfigError& err) {
    const std::string m = err.what();
    for (const char* part : {"the run needs an estimated", "1.0 MiB is available (memory_limit_mb)", "activations",
                             "lenet trains at 28x28, the data is 14x14", "lower batch_size (now 32", "check_memory=false"})
      EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  }
  c.set_check_memory(false);
  EXPECT_NO_THROW(check_memory_fits(e, s, c, runner::ComputeTarget{}, limit));
  c.set_memory_limit_mb(0);  // the machine's: MemAvailable plus this process, far above LeNet's
  const MemoryLimit machine = host_memory_limit(c);
  EXPECT_GT(machine.bytes, e.host_total());
  c.set_check_memory(true);
  EXPECT_NO_THROW(check_memory_fits(e, s, c, runner::ComputeTarget{}, machine));
}

// LeNet's 128-wide embedding under a dist_arcface head of a million classes, batch 16, momentum.
JobConfig head_config(RunSetup& s) {
  s = setup_for("lenet", 28, 1);
  s.num_classes = 1'000'000;
  JobConfig c;
  c.set_batch_size(16);
  c.set_optimizer("momentum");
  c.set_loss_type("dist_arcface");
  c.set_emb_dim(128);
  return c;
}

TEST(MemoryEstimate, CountsTheClassifierHeadsShareAndRefusesWithItsNumbers) {
  RunSetup s;
  JobConfig c = head_config(s);
  const MemoryEstimate one = estimate_training_memory(s, c, runner::ComputeTarget{}, 1);
  const MemoryEstimate two = estimate_training_memory(s, c, runner::ComputeTarget{}, 2);
  ASSERT_TRUE(one.has_head && two.has_head);
  EXPECT_EQ(one.head.rows, 1'000'000);
  EXPECT_EQ(two.head.rows, 500'000);
  EXPECT_EQ(two.head.global_batch, 32);  // the head sees every rank's samples
  // weights + gradients + one momentum slot, f32, for 500,000 x 128 rows; then features and logits.
  EXPECT_GE(two.head.total, 3 * int64_t{500'000} * 128 * 4);
  // The backbone's parts do not depend on the head's split (process, VmRSS, moves between calls).
  EXPECT_EQ(two.parameters + two.optimizer + two.activations, one.parameters + one.optimizer + one.activations);
  EXPECT_EQ(two.host_total() - two.head.total - two.process,
            two.parameters + two.optimizer + two.activations + two.pipeline);
  c.set_loss_type("arcface");  // replicated: every rank holds every row, at its own batch
  const MemoryEstimate replicated = estimate_training_memory(s, c, runner::ComputeTarget{}, 2);
  EXPECT_EQ(replicated.head.rows, 1'000'000);
  EXPECT_EQ(replicated.head.global_batch, 16);
  c.set_loss_type("softmax");
  c.clear_emb_dim();
  EXPECT_FALSE(estimate_training_memory(s, c, runner::ComputeTarget{}, 2).has_head);

  // The head does not fit beside the rest: the refusal is the head's, naming the ranks that would fit.
  c.set_loss_type("dist_softmax");
  c.set_emb_dim(128);
  const MemoryEstimate e = estimate_training_memory(s, c, runner::ComputeTarget{}, 2);
  const int64_t rest = e.host_total() - e.head.total;
  const MemoryLimit limit{rest + e.head.total / 3, "memory_limit_mb"};
  try {
    check_memory_fits(e, s, c, runner::ComputeTarget{}, limit);
    FAIL() << "not refused";
  } catch (const ConfigError& err) {
    const std::string m = err.what();
    for (const char* part : {"the classifier head does not fit: rank 0 of 2", "500000", "or more ranks (mpirun -np)",
                             "memory_limit_mb"})
      EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  }
  EXPECT_NO_THROW(check_memory_fits(e, s, c, runner::ComputeTarget{}, MemoryLimit{e.host_total(), "memory_limit_mb"}));
}

TEST(MemoryEstimate, AHeadOnTheGpuIsInTheDevicePartNotTheHosts) {
  RunSetup s;
  const JobConfig c = head_config(s);
  const MemoryEstimate cpu = estimate_training_memory(s, c, runner::ComputeTarget{}, 2);
  const runner::ComputeTarget gpu{.device = Device::kCuda, .dtype = DType::kF16, .device_index = 0};
  const MemoryEstimate dev = estimate_training_memory(s, c, gpu, 2);
  ASSERT_TRUE(dev.has_head && dev.head_on_device && !cpu.head_on_device);
  // The same f32 rows whatever the compute dtype. (The activations differ: the CPU's are its runner's plan.)
  EXPECT_EQ(dev.head.total, cpu.head.total);
  EXPECT_EQ(dev.host_total() - dev.process - dev.activations,
            cpu.host_total() - cpu.head.total - cpu.process - cpu.activations);
  EXPECT_GT(dev.device, dev.head.total);
  EXPECT_EQ(cpu.device, 0);
}

}  // namespace
}  // namespace fastnn::loop
