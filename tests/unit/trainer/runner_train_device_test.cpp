// The device/precision config fields, their resolution (trainer/runner/device_setup.h), the CPU step
// runner against the loop's own sequence of calls, and `bench train` on the CPU
// (trainer/bench/bench_train.h). The CUDA side: runner_train_device_gpu_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/unit/trainer/config_test_util.h"
#include "trainer/config/job_config.h"
#include "trainer/bench/bench_train.h"
#include "trainer/runner/device_setup.h"
#include "trainer/bench/step_profile.h"
#include "trainer/runner/step_runner.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/ops/part_marks.h"
#include "trainer/optim/gradient_ops.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

TEST(TrainDeviceConfig, DefaultsAndFlags) {
  const JobConfig d = config_of({});
  EXPECT_EQ(d.device(), "auto");  // the GPU when the build has CUDA and one is present
  EXPECT_EQ(d.precision(), "auto");
  EXPECT_EQ(d.loss_scale_window(), 2000);
  const JobConfig c = config_of({"--device=cpu", "--precision=bf16", "--loss_scale_window=50"});
  EXPECT_EQ(c.device(), "cpu");
  EXPECT_EQ(c.precision(), "bf16");
  EXPECT_EQ(c.loss_scale_window(), 50);
  const std::string e = error_of([] { config_of({"--device=gpu"}); });
  EXPECT_NE(e.find("cpu, cuda, auto"), std::string::npos) << e;
  EXPECT_THROW(config_of({"--precision=fp8"}), ConfigError);
}

// The CPU's tensors are f32 whatever the precision; precision=bf16 makes its convolutions multiply in
// bf16 (StepRunnerOptions::cpu_bf16, runner_cpu_bf16_test.cpp).
TEST(TrainDeviceConfig, CpuTensorsAreFloat32WhateverThePrecision) {
  for (const char* p : {"--precision=auto", "--precision=fp16", "--precision=bf16"}) {
    const ComputeTarget t = resolve_compute_target(config_of({"--device=cpu", "--use_fp16=true", p}));
    EXPECT_EQ(t.device, Device::kCpu) << p;
    EXPECT_EQ(t.dtype, DType::kF32) << p;
  }
  EXPECT_EQ(resolve_compute_target(config_of({})).describe(), "cpu f32");
}

TEST(TrainDeviceConfig, AutoAndCudaFollowTheBuildAndTheMachine) {
  const ComputeTarget a = resolve_compute_target(config_of({"--device=auto", "--nouse_fp16"}));
  EXPECT_EQ(a.device, cuda_present() ? Device::kCuda : Device::kCpu);
  EXPECT_EQ(a.dtype, DType::kF32);
  if (!cuda_present()) {
    const std::string e = error_of([] { resolve_compute_target(config_of({"--device=cuda"})); });
    EXPECT_NE(e.find("device=cuda"), std::string::npos) << e;
    EXPECT_NE(e.find(cuda_built() ? "no CUDA device" : "without the CUDA backend"), std::string::npos) << e;
  } else {
    EXPECT_EQ(resolve_compute_target(config_of({"--device=cuda"})).dtype, DType::kF16);  // use_fp16 defaults true
    EXPECT_EQ(resolve_compute_target(config_of({"--device=cuda", "--precision=bf16"})).dtype, DType::kBF16);
    EXPECT_EQ(resolve_compute_target(config_of({"--device=cuda", "--precision=fp32"})).dtype, DType::kF32);
  }
}

TEST(TrainDeviceConfig, LossScalingOnlyForFloat16) {
  const JobConfig c = config_of({"--loss_scale=1048576", "--dynamic_loss_scale", "--loss_scale_window=7"});
  const LossScalerOptions h = loss_scaler_options(c, DType::kF16);
  EXPECT_TRUE(h.dynamic);
  EXPECT_EQ(h.growth_interval, 7);
  EXPECT_EQ(h.initial_scale, 32768);  // capped: the scale rides on an f16 dLoss
  EXPECT_EQ(h.max_scale, 32768);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    const LossScalerOptions o = loss_scaler_options(c, dt);
    EXPECT_FALSE(o.dynamic);
    EXPECT_EQ(o.initial_scale, 1);
  }
  EXPECT_EQ(loss_scaler_options(config_of({"--loss_scale=128"}), DType::kF16).initial_scale, 128);
}

// The CPU runner does exactly what the training loop does: TrainStep, weight decay, clipping, update.
TEST(TrainStepRunner, CpuRunnerIsTheLoopsSequenceBitForBit) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  StepRunnerOptions o;
  o.batch_size = 4;
  o.seed = 3;
  o.weight_decay = 1e-3;
  o.max_gradient_norm = 0.5;
  o.optimizer = optimizer_options(config_of({"--optimizer=momentum"}));
  auto runner = make_step_runner(net, o);

  graph::Graph g(net, {.batch_size = 4, .seed = 3});
  TrainStep ts(g);
  std::vector<ParamRef> refs = g.param_refs();
  auto opt = make_optimizer(o.optimizer, refs);
  for (uint64_t step = 0; step < 3; ++step) {
    auto [x, y] = runner->synthetic_batch(10 + step);
    const StepResult a = runner->train(x, y, step, 0.05f);
    const StepResult b = ts.train(x, y, step);
    add_weight_decay(refs, o.weight_decay);
    clip_by_global_norm(refs, o.max_gradient_norm);
    opt->step(0.05f);
    EXPECT_EQ(a.loss, b.loss) << step;
    EXPECT_EQ(a.correct, b.correct) << step;
  }
  const std::vector<NamedArray> got = runner->host_variables();
  const std::vector<graph::NamedTensor> want = g.variables();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].data, want[i].value.to_vector<float>()) << got[i].name;
  }
  const std::vector<NamedArray> st = runner->export_optimizer_state(), st_want = opt->export_state();
  ASSERT_EQ(st.size(), st_want.size());
  for (size_t i = 0; i < st.size(); ++i) EXPECT_EQ(st[i].data, st_want[i].data) << st[i].name;
  EXPECT_GT(runner->stats().last_global_norm, 0);
}

// queue_train(): each step's results come back with the next call (none for the first), drain() hands
// over the last; the weights and every result are train()'s, bit for bit, and a drained runner starts over.
TEST(TrainStepRunner, QueuedStepsReturnTheirResultsOneStepLate) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  StepRunnerOptions o;
  o.batch_size = 4;
  o.seed = 5;
  o.optimizer = optimizer_options(config_of({"--optimizer=rmsprop"}));
  auto queued = make_step_runner(net, o), direct = make_step_runner(net, o);
  std::vector<StepResult> want, got;
  EXPECT_FALSE(queued->drain());  // nothing queued yet
  for (uint64_t step = 0; step < 5; ++step) {
    auto [x, y] = direct->synthetic_batch(20 + step);
    want.push_back(direct->train(x, y, step, 0.01f));
    const std::optional<StepResult> previous = queued->queue_train(x, y, step, 0.01f);
    EXPECT_EQ(previous.has_value(), step != 0 && step != 3) << step;
    if (previous) got.push_back(*previous);
    if (step == 2) got.push_back(*queued->drain());  // a log step: everything up to step 2 is in
  }
  const std::optional<StepResult> last = queued->drain();
  ASSERT_TRUE(last);
  got.push_back(*last);
  EXPECT_FALSE(queued->drain());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].loss, want[i].loss) << i;
    EXPECT_EQ(got[i].correct, want[i].correct) << i;
    EXPECT_EQ(got[i].examples, want[i].examples) << i;
  }
  const std::vector<NamedArray> a = queued->host_variables(), b = direct->host_variables();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].data, b[i].data) << a[i].name;
}

// data_format=NHWC on the CPU: the runner asks the pipeline for NHWC batches, its synthetic batches
// are the NCHW ones transposed, and its steps (every op behind the adapter or its own NHWC kernel) are
// bitwise the NCHW runner's: results, weights, batch-norm statistics and optimizer state.
// data_format auto and fuse_ops unset follow the device: NHWC and fused on cuda (measured faster there),
// NCHW and unfused on the CPU; a value the user gave is kept on either.
TEST(TrainStepRunner, LayoutAndFusionDefaultsFollowTheDevice) {
  const ComputeTarget cpu{}, gpu{.device = Device::kCuda, .dtype = DType::kF16, .device_index = 0};
  EXPECT_EQ(step_runner_options(config_of({}), cpu).layout, Layout::kNCHW);
  EXPECT_EQ(step_runner_options(config_of({}), gpu).layout, Layout::kNHWC);
  EXPECT_FALSE(step_runner_options(config_of({}), cpu).fuse);
  EXPECT_TRUE(step_runner_options(config_of({}), gpu).fuse);
  EXPECT_EQ(step_runner_options(config_of({"--data_format=NCHW"}), gpu).layout, Layout::kNCHW);
  EXPECT_EQ(step_runner_options(config_of({"--data_format=NHWC"}), cpu).layout, Layout::kNHWC);
  // weight_decay is the L2 term of the gradient, except under adamw and lars, which apply it themselves.
  EXPECT_EQ(step_runner_options(config_of({"--weight_decay=0.05"}), cpu).weight_decay, 0.05);
  EXPECT_EQ(step_runner_options(config_of({"--weight_decay=0.05", "--optimizer=adamw"}), cpu).weight_decay, 0.0);
  EXPECT_EQ(step_runner_options(config_of({"--weight_decay=0.05", "--optimizer=adamw"}), cpu).optimizer.adamw_weight_decay,
            0.05);
  EXPECT_EQ(step_runner_options(config_of({"--weight_decay=0.05", "--optimizer=lars"}), cpu).weight_decay, 0.0);
  EXPECT_EQ(step_runner_options(config_of({"--weight_decay=0.05", "--optimizer=lars"}), cpu).optimizer.lars_weight_decay,
            0.05);
  EXPECT_FALSE(step_runner_options(config_of({"--fuse_ops=false"}), gpu).fuse);
  EXPECT_TRUE(step_runner_options(config_of({"--fuse_ops"}), cpu).fuse);
  // depthwise_conv: fastnn's direct kernels unless cuDNN's grouped convolution is asked for.
  EXPECT_FALSE(step_runner_options(config_of({}), gpu).depthwise_cudnn);
  EXPECT_TRUE(step_runner_options(config_of({"--depthwise_conv=cudnn"}), gpu).depthwise_cudnn);
  EXPECT_THROW(config_of({"--depthwise_conv=winograd"}), ConfigError);
  // conv_api: cuDNN's legacy calls unless the graph API is asked for.
  EXPECT_FALSE(step_runner_options(config_of({}), gpu).conv_graph_api);
  EXPECT_TRUE(step_runner_options(config_of({"--conv_api=graph"}), gpu).conv_graph_api);
  EXPECT_THROW(config_of({"--conv_api=v8"}), ConfigError);
  // fuse_conv_bn: off unless asked for, on either device (the CPU runs the composite).
  EXPECT_FALSE(step_runner_options(config_of({}), gpu).fuse_conv_bn);
  EXPECT_TRUE(step_runner_options(config_of({"--fuse_conv_bn"}), gpu).fuse_conv_bn);
  EXPECT_TRUE(step_runner_options(config_of({"--fuse_conv_bn"}), cpu).fuse_conv_bn);
}

// eval, predict and serve build their runners from forward_only(): a run trained with fuse_conv_bn
// needs no conv + statistics plans to evaluate (the plain plan computes the same forward).
TEST(TrainStepRunner, ForwardOnlyRunnersKeepConvolutionsOutOfTheirBatchNorms) {
  const StepRunnerOptions trained = step_runner_options(config_of({"--fuse_conv_bn", "--batch_size=2"}), {});
  ASSERT_TRUE(trained.fuse_conv_bn);
  const StepRunnerOptions forward = forward_only(trained);
  EXPECT_FALSE(forward.fuse_conv_bn);
  EXPECT_EQ(forward.batch_size, trained.batch_size);
  EXPECT_EQ(forward.layout, trained.layout);
  const NetDef net = zoo::build_net("resnet_cifar_20", {.num_classes = 10, .height = 8, .width = 8});
  auto fused_convolutions = [&](const StepRunnerOptions& o) {
    const std::unique_ptr<StepRunner> runner = make_step_runner(net, o);
    int n = 0;
    for (const graph::PlanNode& node : runner->graph().plan().nodes()) n += node.op.rfind("conv2d+batch_norm", 0) == 0;
    return n;
  };
  EXPECT_GT(fused_convolutions(trained), 10);
  EXPECT_EQ(fused_convolutions(forward), 0);
}

TEST(TrainStepRunner, NhwcRunnerIsTheNchwRunnerBitForBit) {
  const ops::ScopedReferenceCpuKernels reference;  // the fast NHWC kernels sum in other orders
  EXPECT_EQ(step_runner_options(config_of({}), {}).layout, Layout::kNCHW);  // auto on the CPU
  EXPECT_EQ(step_runner_options(config_of({"--data_format=NHWC"}), {}).layout, Layout::kNHWC);
  EXPECT_THROW(config_of({"--data_format=CHWN"}), ConfigError);
  for (const char* model : {"lenet", "resnet_cifar_20"}) {
    SCOPED_TRACE(model);
    const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = 16, .width = 16});
    StepRunnerOptions o;
    o.batch_size = 4;
    o.seed = 7;
    o.weight_decay = 1e-4;
    o.optimizer = optimizer_options(config_of({"--optimizer=momentum"}));
    auto nchw = make_step_runner(net, o);
    o.layout = Layout::kNHWC;
    auto nhwc = make_step_runner(net, o);
    EXPECT_EQ(nchw->batch_format().layout, Layout::kNCHW);
    EXPECT_EQ(nhwc->batch_format().layout, Layout::kNHWC);
    EXPECT_EQ(nhwc->batch_format().dtype, DType::kF32);
    for (uint64_t step = 0; step < 3; ++step) {
      auto [xa, ya] = nchw->synthetic_batch(30 + step);
      auto [xb, yb] = nhwc->synthetic_batch(30 + step);
      ASSERT_EQ(xb.layout(), Layout::kNHWC);
      const Shape& s = xa.shape();
      ASSERT_EQ(xb.shape(), (Shape{s[0], s[2], s[3], s[1]}));
      EXPECT_EQ(xa.data<float>()[1], xb.data<float>()[s[1]]) << "pixel (0, 0, 1) of channel 0";
      const StepResult a = nchw->train(xa, ya, step, 0.05f), b = nhwc->train(xb, yb, step, 0.05f);
      EXPECT_EQ(a.loss, b.loss) << step;
      EXPECT_EQ(a.correct, b.correct) << step;
      EXPECT_THROW(nhwc->train(xa, ya, step, 0.05f), Error) << "an NCHW batch for an NHWC graph";
    }
    const std::vector<NamedArray> va = nchw->host_variables(), vb = nhwc->host_variables();
    ASSERT_EQ(va.size(), vb.size());
    for (size_t i = 0; i < va.size(); ++i) EXPECT_EQ(va[i].data, vb[i].data) << va[i].name;
    const std::vector<NamedArray> sa = nchw->export_optimizer_state(), sb = nhwc->export_optimizer_state();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].data, sb[i].data) << sa[i].name;
  }
}

TEST(TrainBench, CpuBenchTrainsASmallModel) {
  const JobConfig c = config_of({"--model_name=lenet", "--batch_size=8", "--optimizer=sgd", "--learning_rate=0.01"});
  const bench::TrainBenchResult r = bench::run_train_bench(c, {.steps = 3, .warmup = 1});
  EXPECT_EQ(r.model, "lenet");
  EXPECT_EQ(r.target.device, Device::kCpu);
  EXPECT_EQ(r.batch_size, 8);
  EXPECT_EQ(r.classes, 10);
  EXPECT_GT(r.parameters, 0);
  EXPECT_GT(r.milliseconds, 0);
  EXPECT_NEAR(r.images_per_sec, 1000.0 * 3 * 8 / r.milliseconds, 1e-6 * r.images_per_sec);
  EXPECT_TRUE(std::isfinite(r.first_loss) && std::isfinite(r.last_loss));
  // The same batch every step: a few SGD steps must lower its loss.
  EXPECT_LT(r.last_loss, r.first_loss);
  const nlohmann::json j = bench::train_bench_json(r);
  EXPECT_EQ(j["bench"], "train");
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["dtype"], "f32");
  EXPECT_EQ(j["steps"], 3);
  EXPECT_DOUBLE_EQ(j["images_per_sec"].get<double>(), r.images_per_sec);
}

// --profile: every layer of the plan has a row, each layer's time lies inside the step's
// forward_backward phase, the phases and op sums add up, and the JSON carries it all.
TEST(TrainBench, ProfileTimesEveryLayerInsideItsPhase) {
  const JobConfig c = config_of({"--model_name=resnet_cifar_20", "--batch_size=4", "--optimizer=momentum",
                                 "--device=cpu"});
  const bench::TrainBenchResult r = bench::run_train_bench(c, {.steps = 1, .warmup = 0, .profile_steps = 2});
  ASSERT_TRUE(r.profile.has_value());
  const bench::ProfileTable& t = *r.profile;
  EXPECT_EQ(t.steps, 2);
  ASSERT_EQ(t.phases.size(), 2u);  // one process: no allreduce
  EXPECT_EQ(t.phases[0].first, "forward_backward");
  EXPECT_EQ(t.phases[1].first, "optimizer");
  EXPECT_NEAR(t.phases[0].second + t.phases[1].second, t.step_ms, 1e-6 * t.step_ms + 1e-9);
  double layers = 0, ops = 0;
  int backward_rows = 0;
  for (const bench::ProfileRow& row : t.layers) {
    EXPECT_GE(row.forward_ms, 0);
    EXPECT_GE(row.backward_ms, 0);
    layers += row.forward_ms + row.backward_ms;
    backward_rows += row.backward_ms > 0;
  }
  for (const auto& op : t.ops) ops += op.second;
  EXPECT_GT(backward_rows, 10);
  EXPECT_GT(layers, 0);
  EXPECT_LE(layers, t.phases[0].second * (1 + 1e-9));
  EXPECT_NEAR(ops, layers, 1e-9 * layers);
  EXPECT_EQ(t.ops.front().first, "conv2d");  // ResNet's time is in its convolutions
  // The convolutions' passes (ops/part_marks.h), inside the convolution layers' time.
  std::map<std::string, double> parts(t.parts.begin(), t.parts.end());
  for (const char* part : {"conv2d fprop", "conv2d dgrad", "conv2d wgrad"}) EXPECT_GT(parts[part], 0) << part;
  double conv = 0;
  for (const auto& op : t.ops)
    if (op.first == "conv2d") conv = op.second;
  EXPECT_LE(parts["conv2d fprop"] + parts["conv2d dgrad"] + parts["conv2d wgrad"], conv * (1 + 1e-9));
  const nlohmann::json j = bench::train_bench_json(r);
  EXPECT_EQ(j["profile"]["layers"].size(), t.layers.size());
  EXPECT_EQ(j["profile"]["parts"].size(), t.parts.size());
  EXPECT_NE(t.format().find("forward_backward"), std::string::npos);
  EXPECT_NE(t.format().find("conv2d wgrad"), std::string::npos);
  // The profile's listener is gone with it: a part outside a profile goes nowhere.
  EXPECT_EQ(ops::set_part_listener(nullptr), nullptr);
}

// Parts do not nest, but a profile meets nested ones calmly: the outer part ends where the inner begins.
TEST(TrainBench, ProfileEndsAnOuterPartWhereANestedOneBegins) {
  StepRunnerOptions o;
  o.batch_size = 2;
  o.optimizer = optimizer_options(config_of({"--optimizer=sgd"}));
  const std::unique_ptr<StepRunner> runner =
      make_step_runner(zoo::build_net("lenet", {.num_classes = 10, .height = 28, .width = 28, .channels = 1}), o);
  bench::StepProfile prof(*runner);
  prof.begin_step();
  {
    const ops::PartMark outer("outer");
    const ops::PartMark inner("inner");
  }
  prof.end_step();
  const bench::ProfileTable t = prof.table();
  std::map<std::string, double> parts(t.parts.begin(), t.parts.end());
  EXPECT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts.count("outer") && parts.count("inner"));
}

TEST(TrainBench, RejectsBadRequests) {
  EXPECT_THROW(bench::run_train_bench(config_of({"--model_name=lenet"}), {.steps = 0}), Error);
  EXPECT_THROW(bench::run_train_bench(config_of({"--model_name=no_such_net"}), {}), ConfigError);
  if (!cuda_present()) {
    EXPECT_THROW(bench::run_train_bench(config_of({"--model_name=lenet", "--device=cuda"}), {.steps = 1}), ConfigError);
  }
}

}  // namespace
}  // namespace fastnn::runner
