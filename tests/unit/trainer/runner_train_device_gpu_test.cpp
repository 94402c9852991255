// The GPU training step (trainer/runner/step_runner.h, CUDA runner) against the CPU runner, the oracle:
// a whole ResNet (resnet_cifar_20, small batch) trained 3 steps in f32 (TF32 off) matches the CPU's
// losses and parameters to 1e-4; an fp16 step stays within half-precision tolerance; an overflowed
// fp16 step is skipped under dynamic loss scaling with the scale halved; optimizer state names
// interchange with the CPU's. Skipped without a CUDA device (one skipping test in CPU-only builds).
#include <gtest/gtest.h>

#ifndef FASTNN_HAVE_CUDA

TEST(TrainDeviceGpu, RequiresTheCudaBuild) { GTEST_SKIP() << "built without the CUDA backend"; }

#else

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "tests/unit/trainer/cuda_test_util.h"
#include "trainer/config/job_config.h"
#include "trainer/cuda/runtime.h"
#include "trainer/runner/input_format.h"
#include "trainer/runner/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

StepRunnerOptions options(Device d, DType dt) {
  StepRunnerOptions o;
  o.target = {.device = d, .dtype = dt, .device_index = 0};
  o.batch_size = 4;
  o.seed = 11;
  o.weight_decay = 1e-4;
  o.max_gradient_norm = 5.0;
  JobConfig c = load_job_config("", std::vector<std::string>{"--optimizer=momentum"});
  o.optimizer = optimizer_options(c);
  return o;
}

using cuda_test::rel_l2;

// Batch-norm betas start at 0, so after one step they are the update itself, -lr * sum(dy) over N*H*W
// values of both signs that nearly cancel; in f16/bf16 every dy carries its rounding (the sum itself is
// accumulated in f64), so the betas' relative error is the dtype's rounding amplified by that
// cancellation. Measured on an H100 (2026-11-22), one step of resnet_cifar_20, batch 4: f16 at most 0.12
// per beta, bf16 at most 0.40 (ratio ~3, the dtypes' rounding ratio being 8), while every other
// variable stayed within 2e-2 / 5e-2. So betas are held to `beta_tol`, checked on all of them together.
// (That was with betas and their gradients in f16/bf16; since 2026-11-25 batch norm keeps them in f32,
// which leaves only dy's rounding: the bounds stay until a GPU run measures the new errors.)
bool is_bn_beta(const std::string& name) { return name.size() >= 15 && name.ends_with("/BatchNorm/beta"); }

void expect_close_runs(DType dt, int steps, double loss_tol, double param_tol, double beta_tol = -1) {
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10});
  auto cpu = make_step_runner(net, options(Device::kCpu, DType::kF32));
  auto gpu = make_step_runner(net, options(Device::kCuda, dt));
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = cpu->synthetic_batch(100 + static_cast<uint64_t>(s));  // host batch: the GPU stages it
    const StepResult a = cpu->train(x, y, static_cast<uint64_t>(s), 0.1f);
    const StepResult b = gpu->train(x, y, static_cast<uint64_t>(s), 0.1f);
    EXPECT_NEAR(b.loss, a.loss, loss_tol * std::abs(a.loss)) << "step " << s;
    EXPECT_EQ(b.examples, a.examples);
  }
  const auto va = cpu->host_variables(), vb = gpu->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  std::vector<float> betas_a, betas_b;
  for (size_t i = 0; i < va.size(); ++i) {
    ASSERT_EQ(va[i].name, vb[i].name);
    if (beta_tol >= 0 && is_bn_beta(va[i].name)) {
      betas_a.insert(betas_a.end(), va[i].data.begin(), va[i].data.end());
      betas_b.insert(betas_b.end(), vb[i].data.begin(), vb[i].data.end());
      continue;
    }
    EXPECT_LE(rel_l2(vb[i].data, va[i].data), param_tol) << va[i].name;
  }
  if (beta_tol >= 0) {
    ASSERT_FALSE(betas_a.empty());
    const double e = rel_l2(betas_b, betas_a);
    EXPECT_LE(e, beta_tol) << "batch-norm betas together";
    std::printf("%s: batch-norm betas' relative error %.4f (limit %.2f)\n", dtype_name(dt), e, beta_tol);
  }
}

TEST(TrainDeviceGpu, ResNetF32StepsMatchTheCpu) {
  REQUIRE_GPU();
  expect_close_runs(DType::kF32, 3, 1e-4, 1e-4);
}

TEST(TrainDeviceGpu, ResNetF16StepWithinHalfPrecisionTolerance) {
  REQUIRE_GPU();
  expect_close_runs(DType::kF16, 1, 2e-2, 2e-2, 0.2);
}

TEST(TrainDeviceGpu, ResNetBf16StepWithinTolerance) {
  REQUIRE_GPU();
  expect_close_runs(DType::kBF16, 1, 5e-2, 5e-2, 0.5);
}

TEST(TrainDeviceGpu, OverflowSkipsTheStepAndHalvesTheScale) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10});
  StepRunnerOptions o = options(Device::kCuda, DType::kF16);
  o.scaling = {.initial_scale = 1024, .dynamic = true, .growth_interval = 2000};
  auto gpu = make_step_runner(net, o);
  const auto before = gpu->host_variables();
  auto [x, y] = random_host_batch(gpu->graph(), 7);
  x.data<float>()[5] = std::numeric_limits<float>::infinity();  // NaN gradients everywhere
  gpu->train(x, y, 0, 0.1f);
  EXPECT_EQ(gpu->stats().skipped_steps, 1);
  EXPECT_EQ(gpu->stats().loss_scale, 512);
  const auto after = gpu->host_variables();
  for (size_t i = 0; i < before.size(); ++i) {
    if (before[i].name.find("moving_") != std::string::npos) continue;  // BN statistics did see the batch
    EXPECT_EQ(before[i].data, after[i].data) << before[i].name;
  }
  auto [x2, y2] = random_host_batch(gpu->graph(), 8);
  gpu->train(x2, y2, 1, 0.1f);  // a clean step applies
  EXPECT_EQ(gpu->stats().skipped_steps, 1);
}

TEST(TrainDeviceGpu, OptimizerStateInterchangesWithTheCpu) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10});
  for (const char* name : {"momentum", "adam", "adamweightdecay", "sgd", "rmsprop", "adagrad", "adadelta", "ftrl"}) {
    StepRunnerOptions oc = options(Device::kCpu, DType::kF32), og = options(Device::kCuda, DType::kF32);
    oc.optimizer.optimizer = og.optimizer.optimizer = name;
    auto cpu = make_step_runner(net, oc);
    auto gpu = make_step_runner(net, og);
    auto [x, y] = cpu->synthetic_batch(3);
    cpu->train(x, y, 0, 0.01f);
    gpu->train(x, y, 0, 0.01f);
    const auto sc = cpu->export_optimizer_state(), sg = gpu->export_optimizer_state();
    ASSERT_EQ(sc.size(), sg.size()) << name;
    for (size_t i = 0; i < sc.size(); ++i) {
      EXPECT_EQ(sc[i].name, sg[i].name);
      EXPECT_LE(rel_l2(sg[i].data, sc[i].data), 1e-4) << sc[i].name;
    }
    gpu->import_optimizer_state(sc);  // CPU checkpoint state resumes on the GPU
    cpu->import_optimizer_state(sg);
  }
  StepRunnerOptions bad = options(Device::kCuda, DType::kF32);  // all eight run on the GPU; unknown names do not
  bad.optimizer.optimizer = "lamb";
  EXPECT_THROW(make_step_runner(net, bad), ConfigError);
}

// trainable_scopes on the GPU (the device optimizer is given only those parameters): the same steps as
// the CPU's, in f32 and f16; every parameter outside the scopes bitwise unchanged (its f16 copy too,
// as set_host_variables rounded it); the optimizer state holds slots for the trainable ones only.
TEST(TrainDeviceGpu, TrainableScopesUpdateOnlyThoseParameters) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10});
  const std::vector<std::string> scopes = {"resnet_cifar_20/logits", "resnet_cifar_20/block3/unit_3"};
  auto under = [&](const std::string& n) { return n.starts_with(scopes[0]) || n.starts_with(scopes[1]); };
  for (DType dt : {DType::kF32, DType::kF16}) {
    StepRunnerOptions oc = options(Device::kCpu, DType::kF32), og = options(Device::kCuda, dt);
    oc.trainable_scopes = og.trainable_scopes = scopes;
    auto cpu = make_step_runner(net, oc);
    auto gpu = make_step_runner(net, og);
    const auto before = gpu->host_variables();
    for (int s = 0; s < 2; ++s) {
      auto [x, y] = cpu->synthetic_batch(40 + static_cast<uint64_t>(s));
      cpu->train(x, y, static_cast<uint64_t>(s), 0.1f);
      gpu->train(x, y, static_cast<uint64_t>(s), 0.1f);
    }
    const auto va = cpu->host_variables(), vb = gpu->host_variables();
    ASSERT_EQ(vb.size(), before.size());
    int trained = 0;
    for (size_t i = 0; i < vb.size(); ++i) {
      if (vb[i].name.find("moving_") != std::string::npos) continue;  // statistics see every batch
      if (!under(vb[i].name)) {
        EXPECT_EQ(vb[i].data, before[i].data) << dtype_name(dt) << " " << vb[i].name << " moved";
        continue;
      }
      ++trained;
      EXPECT_NE(vb[i].data, before[i].data) << vb[i].name << " did not train";
      EXPECT_LE(rel_l2(vb[i].data, va[i].data), dt == DType::kF32 ? 1e-4 : 2e-2) << vb[i].name;
    }
    EXPECT_GT(trained, 4);
    for (const NamedArray& slot : gpu->export_optimizer_state()) EXPECT_TRUE(under(slot.name)) << slot.name;  // momentum
  }
}

// The input hop: a uint8 NHWC host batch, normalised on the GPU, gives the step exactly what the
// float32 NCHW batch the pipeline would have made gives it (same losses and hits, f32 compute), from
// the pipeline's pinned memory (copied directly) and from ordinary memory (through the stage).
TEST(TrainDeviceGpu, Uint8BatchesNormalisedOnTheGpuEqualFloatBatches) {
  REQUIRE_GPU();
  StepRunnerOptions o = options(Device::kCuda, DType::kF32);
  o.input.mean[0] = 128.0f;
  o.input.inv_std[0] = 1.0f / 128.0f;
  auto runner = make_step_runner(zoo::build_net("lenet", {.num_classes = 10}), o);
  EXPECT_EQ(runner->batch_format().dtype, DType::kU8);
  ASSERT_NE(runner->batch_format().allocator, nullptr);
  const Shape nhwc{4, 28, 28, 1};
  Tensor plain = Tensor::empty(nhwc, DType::kU8, Device::kCpu, Layout::kNHWC);
  Tensor pinned = cuda::pinned_empty(nhwc, DType::kU8, Layout::kNHWC);
  for (int64_t i = 0; i < plain.numel(); ++i)
    plain.data<uint8_t>()[i] = pinned.data<uint8_t>()[i] = static_cast<uint8_t>((i * 37) % 256);
  const Tensor labels = Tensor::from<int32_t>({4}, {1, 7, 3, 9});
  const Tensor f32 = normalize_input_reference(plain, o.input);
  const StepResult want = runner->evaluate(f32, labels);
  for (const Tensor* x : {&plain, &pinned}) {
    const StepResult got = runner->evaluate(*x, labels);
    EXPECT_EQ(got.loss, want.loss);
    EXPECT_EQ(got.correct, want.correct);
    EXPECT_EQ(got.correct_top5, want.correct_top5);
  }
}

// Two f32 CUDA runners of `net` with deterministic cuDNN, for runs compared bit for bit.
std::pair<std::unique_ptr<StepRunner>, std::unique_ptr<StepRunner>> deterministic_pair(const NetDef& net) {
  StepRunnerOptions o = options(Device::kCuda, DType::kF32);
  o.deterministic = true;
  return {make_step_runner(net, o), make_step_runner(net, o)};
}

// A label outside the classes: the step throws naming the sample (the kernels' checks are read with the
// step's one read-back, not by a sync per kernel), the weights are not updated, and the next clean step
// trains as if the bad one had not been tried.
TEST(TrainDeviceGpu, BadLabelStopsTheStepBeforeTheUpdate) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  auto [a, b] = deterministic_pair(net);
  auto [x, y] = a->synthetic_batch(3);  // device tensors
  Tensor host_bad = cuda::to_host(y);
  if (host_bad.dtype() == DType::kI64) host_bad.data<int64_t>()[1] = 12;
  else host_bad.data<int32_t>()[1] = 12;
  const Tensor bad = cuda::to_device(host_bad);
  try {
    a->train(x, bad, 0, 0.1f);
    ADD_FAILURE() << "no error for label 12 of 10 classes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the label of sample 1 is outside [0, 10)"), std::string::npos) << e.what();
  }
  const StepResult ra = a->train(x, y, 0, 0.1f), rb = b->train(x, y, 0, 0.1f);
  EXPECT_EQ(ra.loss, rb.loss);
  const std::vector<NamedArray> va = a->host_variables(), vb = b->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
}

// prefetch(): the next batch's copy started early (the loop's lookahead) changes nothing — a run that
// prefetches batch 2 before step 1 and evaluates a third batch in between ends bitwise where a run without
// prefetch does; the pending prefetch's stage is not reused by the evaluation.
TEST(TrainDeviceGpu, PrefetchedBatchTrainsAsAPlacedOne) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10});
  auto [a, b] = deterministic_pair(net);
  auto cpu = make_step_runner(net, options(Device::kCpu, DType::kF32));
  auto [x1, y1] = cpu->synthetic_batch(1);  // host batches: the runners copy them
  auto [x2, y2] = cpu->synthetic_batch(2);
  auto [x3, y3] = cpu->synthetic_batch(3);
  a->prefetch(x2, y2);
  const StepResult a1 = a->train(x1, y1, 0, 0.1f);
  const StepResult ae = a->evaluate(x3, y3);
  const StepResult a2 = a->train(x2, y2, 1, 0.1f);
  const StepResult b1 = b->train(x1, y1, 0, 0.1f);
  const StepResult be = b->evaluate(x3, y3);
  const StepResult b2 = b->train(x2, y2, 1, 0.1f);
  EXPECT_EQ(a1.loss, b1.loss);
  EXPECT_EQ(ae.loss, be.loss);
  EXPECT_EQ(a2.loss, b2.loss);
  const std::vector<NamedArray> va = a->host_variables(), vb = b->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
}

// queue_train() as the loop drives it (host batches, the next one prefetched before each step, results
// one step late, a drain at a "log step"): every result and the weights bitwise train()'s, with the host
// running a step ahead (three input stages in use).
TEST(TrainDeviceGpu, QueuedStepsEqualDirectSteps) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10});
  auto [a, b] = deterministic_pair(net);
  auto cpu = make_step_runner(net, options(Device::kCpu, DType::kF32));
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (uint64_t i = 0; i < 6; ++i) batches.push_back(cpu->synthetic_batch(40 + i));
  std::vector<StepResult> want, got;
  for (uint64_t step = 0; step < batches.size(); ++step) want.push_back(b->train(batches[step].first, batches[step].second, step, 0.1f));
  for (uint64_t step = 0; step < batches.size(); ++step) {
    if (step + 1 < batches.size()) a->prefetch(batches[step + 1].first, batches[step + 1].second);
    if (auto r = a->queue_train(batches[step].first, batches[step].second, step, 0.1f)) got.push_back(*r);
    if (step == 3) got.push_back(*a->drain());
  }
  got.push_back(*a->drain());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].loss, want[i].loss) << i;
    EXPECT_EQ(got[i].correct, want[i].correct) << i;
  }
  const std::vector<NamedArray> va = a->host_variables(), vb = b->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
}

// A bad label in a queued step is raised when that step's results arrive (the next queue_train or
// drain), naming the sample, and not mistaken for the step queued after it.
TEST(TrainDeviceGpu, QueuedBadLabelIsRaisedWithItsStepsResults) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  auto [a, b] = deterministic_pair(net);
  auto [x, y] = a->synthetic_batch(3);
  Tensor host_bad = cuda::to_host(y);
  if (host_bad.dtype() == DType::kI64) host_bad.data<int64_t>()[2] = -1;
  else host_bad.data<int32_t>()[2] = -1;
  const Tensor bad = cuda::to_device(host_bad);
  EXPECT_FALSE(a->queue_train(x, y, 0, 0.1f));
  EXPECT_TRUE(a->queue_train(x, bad, 1, 0.1f));  // step 0's results: clean
  try {
    a->queue_train(x, y, 2, 0.1f);
    ADD_FAILURE() << "no error for label -1";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the label of sample 2 is outside [0, 10)"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(a->drain());  // step 2's results, clean
  EXPECT_FALSE(a->drain());
}

// cuda_graphs: the loop's queued steps replayed from captured CUDA graphs are bitwise the eager ones —
// results and weights — with dropout (lenet) or drop_path (nasnet_cifar) reading the step from device
// memory, a learning rate that changes every step, f16's device loss scaler, host batches rotating
// through the input stages, and an evaluation in between (which drops the graphs: they are recaptured).
void expect_captured_steps_equal_eager(const std::string& model, DType dt) {
  SCOPED_TRACE(model + " " + dtype_name(dt));
  const NetDef net = zoo::build_net(model, {.num_classes = 10});
  StepRunnerOptions o = options(Device::kCuda, dt);
  o.deterministic = true;
  o.scaling = {.initial_scale = 256, .dynamic = true, .growth_interval = 3};
  auto eager = make_step_runner(net, o);
  o.cuda_graphs = true;
  auto graphed = make_step_runner(net, o);
  auto cpu = make_step_runner(net, options(Device::kCpu, DType::kF32));
  std::vector<std::pair<Tensor, Tensor>> batches;
  for (uint64_t i = 0; i < 7; ++i) batches.push_back(cpu->synthetic_batch(60 + i));
  std::vector<StepResult> results[2];
  StepRunner* runners[2] = {eager.get(), graphed.get()};
  for (int r = 0; r < 2; ++r) {
    for (uint64_t step = 0; step < 16; ++step) {
      const auto& [x, y] = batches[step % batches.size()];
      const auto& [nx, ny] = batches[(step + 1) % batches.size()];
      runners[r]->prefetch(nx, ny);
      if (auto res = runners[r]->queue_train(x, y, step, 0.1f / static_cast<float>(1 + step))) results[r].push_back(*res);
      if (step == 9) {  // an evaluation, as the loop runs one: drained first
        results[r].push_back(*runners[r]->drain());
        results[r].push_back(runners[r]->evaluate(batches[0].first, batches[0].second));
      }
    }
    results[r].push_back(*runners[r]->drain());
  }
  EXPECT_GT(graphed->stats().graph_replays, 8);
  EXPECT_EQ(eager->stats().graph_replays, 0);
  ASSERT_EQ(results[0].size(), results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_EQ(results[1][i].loss, results[0][i].loss) << i;
    EXPECT_EQ(results[1][i].correct, results[0][i].correct) << i;
  }
  EXPECT_EQ(graphed->stats().loss_scale, eager->stats().loss_scale);
  const std::vector<NamedArray> va = graphed->host_variables(), vb = eager->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
  const std::vector<NamedArray> sa = graphed->export_optimizer_state(), sb = eager->export_optimizer_state();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].data, sb[i].data) << sa[i].name;
}

TEST(TrainDeviceGpu, CapturedStepsAreBitwiseTheEagerSteps) {
  REQUIRE_GPU();
  expect_captured_steps_equal_eager("lenet", DType::kF32);
  expect_captured_steps_equal_eager("lenet", DType::kF16);
  expect_captured_steps_equal_eager("resnet_cifar_20", DType::kBF16);
  expect_captured_steps_equal_eager("nasnet_cifar", DType::kF32);
}

// A bad label in a replayed step is raised with that step's results (the graph's own label-check slots).
TEST(TrainDeviceGpu, CapturedStepRaisesABadLabel) {
  REQUIRE_GPU();
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  StepRunnerOptions o = options(Device::kCuda, DType::kF32);
  o.cuda_graphs = true;
  auto a = make_step_runner(net, o);
  auto [x, y] = a->synthetic_batch(3);
  Tensor host_bad = cuda::to_host(y);
  if (host_bad.dtype() == DType::kI64) host_bad.data<int64_t>()[3] = 10;
  else host_bad.data<int32_t>()[3] = 10;
  Tensor bad = cuda::to_device(host_bad);
  Tensor good = cuda::to_device(cuda::to_host(y));  // the same labels in a buffer of their own
  for (uint64_t step = 0; step < 6; ++step) a->queue_train(x, step % 2 ? good : y, step, 0.1f);
  a->drain();
  EXPECT_GT(a->stats().graph_replays, 0);
  cuda::copy_async(good, bad);  // a labels buffer the captured graphs read now holds a bad label
  cuda::synchronize();
  const int64_t replays = a->stats().graph_replays;
  a->queue_train(x, y, 6, 0.1f);     // results slot 0: (y, slot 0)'s graph
  a->queue_train(x, good, 7, 0.1f);  // results slot 1: (good, slot 1)'s graph, captured at steps 3 and 5
  EXPECT_EQ(a->stats().graph_replays, replays + 2) << "both steps replay graphs captured before";
  try {
    a->drain();
    ADD_FAILURE() << "no error for label 10 of 10 classes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the label of sample 3 is outside [0, 10)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fastnn::runner

#endif
