// Gradient accumulation (the gradient_accumulation_steps config field; StepRunnerOptions::
// accumulation_steps): the CPU runner's step over N parts of a batch against the same parts run by hand
// (with mixup's per-part label weights too), against one batch of N x B where the net has neither batch
// norm nor dropout, and what refuses it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.h"
#include "tests/unit/trainer/config_test_util.h"
#include "trainer/config/job_config.h"
#include "trainer/loop/capabilities.h"
#include "trainer/runner/step_runner.h"
#include "trainer/optim/gradient_ops.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::loop {
namespace {

// Rows [first, first + count) of a batch.
Tensor rows_of(const Tensor& t, int64_t first, int64_t count) {
  Shape s = t.shape();
  const size_t row = t.nbytes() / static_cast<size_t>(s[0]);
  s[0] = count;
  Tensor out = Tensor::empty(s, t.dtype(), Device::kCpu, t.layout());
  std::memcpy(out.raw(), static_cast<const char*>(t.raw()) + static_cast<size_t>(first) * row,
              static_cast<size_t>(count) * row);
  return out;
}

// The parts' batches put end to end: the step's batch of parts x B.
std::pair<Tensor, Tensor> step_batch(runner::StepRunner& micro, int parts, uint64_t seed) {
  std::vector<std::pair<Tensor, Tensor>> p;
  for (int k = 0; k < parts; ++k) p.push_back(micro.synthetic_batch(seed * 100 + static_cast<uint64_t>(k)));
  auto joined = [&](bool labels) {
    const Tensor& first = labels ? p[0].second : p[0].first;
    Shape s = first.shape();
    s[0] *= parts;
    Tensor out = Tensor::empty(s, first.dtype(), Device::kCpu, first.layout());
    char* at = static_cast<char*>(out.raw());
    for (const auto& [x, y] : p) {
      const Tensor& t = labels ? y : x;
      std::memcpy(at, t.raw(), t.nbytes());
      at += t.nbytes();
    }
    return out;
  };
  return {joined(false), joined(true)};
}

// The runner's accumulated steps of `model` against doing it by hand: each part runs forward and
// backward with its own batch statistics and masks (micro-batch k) and, with `mixes` (one per sample of
// the step), its labels mixed by its own samples' weights; the parts' gradients are averaged, then the one update: the runner's
// weights, optimizer state and summed results are those of doing it by hand.
void expect_accumulation_by_hand(const char* model, const std::vector<double>& mixes) {
  {
    SCOPED_TRACE(model);
    const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = 16, .width = 16});
    constexpr int kParts = 3, kRows = 4;
    runner::StepRunnerOptions o;
    o.batch_size = kRows;
    o.seed = 5;
    o.weight_decay = 1e-3;
    o.max_gradient_norm = 2;
    o.optimizer = optimizer_options(config_of({"--optimizer=momentum"}));
    o.accumulation_steps = kParts;
    auto runner = runner::make_step_runner(net, o);

    graph::Graph g(net, {.batch_size = kRows, .seed = 5});
    TrainStep ts(g);
    std::vector<ParamRef> refs = g.param_refs();
    auto opt = make_optimizer(o.optimizer, refs);
    for (uint64_t step = 0; step < 3; ++step) {
      const auto [x, y] = step_batch(*runner, kParts, step + 1);
      ASSERT_EQ(x.shape()[0], kParts * kRows);
      if (!mixes.empty()) runner->set_label_mix(mixes);
      const StepResult got = runner->train(x, y, step, 0.05f);

      std::vector<std::vector<float>> sum(refs.size());
      double loss = 0;
      int64_t correct = 0, examples = 0;
      for (int k = 0; k < kParts; ++k) {
        if (!mixes.empty()) ts.set_label_mix(std::span<const double>(mixes).subspan(static_cast<size_t>(k * kRows), kRows));
        const StepResult r = ts.train(rows_of(x, k * kRows, kRows), rows_of(y, k * kRows, kRows), step, k);
        loss += r.loss;
        correct += r.correct;
        examples += r.examples;
        for (size_t i = 0; i < refs.size(); ++i) {
          if (k == 0) sum[i].assign(refs[i].grad, refs[i].grad + refs[i].count);
          else if (k + 1 < kParts) for (size_t j = 0; j < refs[i].count; ++j) sum[i][j] += refs[i].grad[j];
          else for (size_t j = 0; j < refs[i].count; ++j) refs[i].grad[j] = (sum[i][j] + refs[i].grad[j]) / float{kParts};
        }
      }
      add_weight_decay(refs, o.weight_decay);
      clip_by_global_norm(refs, o.max_gradient_norm);
      opt->step(0.05f);
      EXPECT_EQ(got.loss, loss / kParts) << step;
      EXPECT_EQ(got.correct, correct) << step;
      EXPECT_EQ(got.examples, kParts * kRows) << step;
      EXPECT_EQ(examples, kParts * kRows);
    }
    const std::vector<NamedArray> have = runner->host_variables();  // batch-norm moving statistics too
    const std::vector<graph::NamedTensor> want = g.variables();
    ASSERT_EQ(have.size(), want.size());
    for (size_t i = 0; i < have.size(); ++i) EXPECT_EQ(have[i].data, want[i].value.to_vector<float>()) << have[i].name;
    const std::vector<NamedArray> st = runner->export_optimizer_state(), st_want = opt->export_state();
    ASSERT_EQ(st.size(), st_want.size());
    for (size_t i = 0; i < st.size(); ++i) EXPECT_EQ(st[i].data, st_want[i].data) << st[i].name;
  }
}

// A net with batch norm (ResNet-20) and one with dropout (LeNet).
TEST(GradientAccumulation, EachPartRunsOnItsOwnAndTheUpdateTakesTheirMean) {
  for (const char* model : {"resnet_cifar_20", "lenet"}) expect_accumulation_by_hand(model, {});
}

// Mixup / CutMix with accumulation: each part's labels mix by its own samples' weights (the pipeline
// draws per part, as timm mixes each loader batch): one weight for the part (batch mode), a pair's
// (pair mode) or each sample's (elem mode); a part of weights 1 is unmixed.
TEST(GradientAccumulation, EachPartMixesItsLabelsByItsOwnWeight) {
  expect_accumulation_by_hand("lenet", {0.7, 0.7, 0.7, 0.7, 1, 1, 1, 1, 0.35, 0.9, 0.9, 0.35});
  expect_accumulation_by_hand("lenet", {0.2, 0.6, 0.95, 0.4, 1, 0.5, 1, 1, 0.7, 0.7, 0.7, 0.7});
  // Weights for a 3-part step of 4 samples each: none or 12.
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10, .height = 16, .width = 16});
  runner::StepRunnerOptions o;
  o.batch_size = 4;
  o.optimizer = optimizer_options(config_of({"--optimizer=sgd"}));
  o.accumulation_steps = 3;
  auto runner = runner::make_step_runner(net, o);
  EXPECT_NE(error_of([&] { runner->set_label_mix({0.5, 0.5}); }).find("2 label weights for a step of 12 samples"),
            std::string::npos);
}

// Dropout's masks differ between the parts of a step: a step whose parts hold the same images gives
// different losses per part, so the runner's summed loss is not kParts times one part's.
TEST(GradientAccumulation, EveryPartDrawsItsOwnDropoutMasks) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  runner::StepRunnerOptions o;
  o.batch_size = 4;
  o.optimizer = optimizer_options(config_of({"--optimizer=sgd"}));
  auto single = runner::make_step_runner(net, o);
  auto [x, y] = single->synthetic_batch(3);
  graph::Graph g(net, {.batch_size = 4});
  TrainStep ts(g);
  const double part0 = ts.train(x, y, 0, 0).loss, part1 = ts.train(x, y, 0, 1).loss;
  EXPECT_NE(part0, part1) << "micro-batch 1 drew micro-batch 0's dropout masks";
  EXPECT_EQ(ts.train(x, y, 0, 0).loss, part0) << "masks are a function of (seed, layer, step, micro-batch)";
}

// SINGA's MLP has neither batch norm nor dropout: accumulating 4 parts of 4 is one batch of 16 (the
// mean loss over 16 samples is the mean of four 4-sample means), up to the order of the float sums.
TEST(GradientAccumulation, WithoutBatchNormOrDropoutItIsOneBatchOfAllParts) {
  const NetDef net = zoo::build_net("mlp", {.num_classes = 10});
  runner::StepRunnerOptions o;
  o.seed = 11;
  o.optimizer = optimizer_options(config_of({"--optimizer=momentum"}));
  o.batch_size = 4;
  o.accumulation_steps = 4;
  auto parts = runner::make_step_runner(net, o);
  o.batch_size = 16;
  o.accumulation_steps = 1;
  auto whole = runner::make_step_runner(net, o);
  for (uint64_t step = 0; step < 3; ++step) {
    const auto [x, y] = step_batch(*parts, 4, step + 7);
    const StepResult a = parts->train(x, y, step, 0.1f), b = whole->train(x, y, step, 0.1f);
    EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::abs(b.loss)) << step;
    EXPECT_EQ(a.correct, b.correct) << step;
    EXPECT_EQ(a.examples, b.examples) << step;
  }
  const std::vector<NamedArray> va = parts->host_variables(), vb = whole->host_variables();
  ASSERT_EQ(va.size(), vb.size());
  for (size_t i = 0; i < va.size(); ++i) {
    double scale = 0, diff = 0;
    for (size_t j = 0; j < va[i].data.size(); ++j) {
      scale = std::max(scale, std::abs(double{vb[i].data[j]}));
      diff = std::max(diff, std::abs(double{va[i].data[j]} - vb[i].data[j]));
    }
    EXPECT_LE(diff, 1e-5 * scale) << va[i].name;
  }
}

TEST(GradientAccumulation, ConfigDefaultsLimitsAndTheStepsBatch) {
  EXPECT_EQ(config_of({}).gradient_accumulation_steps(), 1);
  EXPECT_EQ(step_batch_size(config_of({"--batch_size=24"})), 24);
  const JobConfig c = config_of({"--batch_size=24", "--grad_accum_steps=3"});  // timm's name
  EXPECT_EQ(c.gradient_accumulation_steps(), 3);
  EXPECT_EQ(step_batch_size(c), 72);
  EXPECT_EQ(runner::step_runner_options(c, {}).accumulation_steps, 3);
  EXPECT_EQ(runner::step_runner_options(c, {}).batch_size, 24);  // the graph runs one part at a time
  // eval and predict of such a run take no parts (and so may run where accumulation is refused).
  EXPECT_EQ(runner::forward_only(runner::step_runner_options(c, {})).accumulation_steps, 1);
  for (const char* bad : {"--gradient_accumulation_steps=0", "--gradient_accumulation_steps=2000"})
    EXPECT_NE(error_of([&] { config_of({bad}); }).find("gradient_accumulation_steps must be in [1, 1024]"),
              std::string::npos)
        << bad;
}

TEST(GradientAccumulation, RefusedWhereItIsNotBuilt) {
  const runner::ComputeTarget cpu{}, cuda{.device = Device::kCuda, .dtype = DType::kF16};
  EXPECT_NO_THROW(check_backend_supports(config_of({"--gradient_accumulation_steps=2"}), cpu, 1));
  std::string e = error_of([&] { check_backend_supports(config_of({"--gradient_accumulation_steps=2"}), cuda, 1); });
  EXPECT_NE(e.find("gradient_accumulation_steps is not available on device=cuda"), std::string::npos) << e;
  e = error_of([&] {
    check_backend_supports(config_of({"--gradient_accumulation_steps=2", "--loss_type=arcface"}), cpu, 1);
  });
  EXPECT_NE(e.find("does not combine with the classifier head"), std::string::npos) << e;
  // With mixup each part is mixed on its own (EachPartMixesItsLabelsByItsOwnWeight).
  EXPECT_NO_THROW(check_backend_supports(config_of({"--gradient_accumulation_steps=2", "--mixup=0.2"}), cpu, 1));

  // A runner handed a batch that is not parts x batch_size names both.
  const NetDef net = zoo::build_net("lenet", {.num_classes = 10});
  runner::StepRunnerOptions o;
  o.batch_size = 4;
  o.accumulation_steps = 2;
  o.optimizer = optimizer_options(config_of({"--optimizer=sgd"}));
  auto runner = runner::make_step_runner(net, o);
  const auto [x, y] = runner->synthetic_batch(1);  // one part only
  e = error_of([&] { runner->train(x, y, 0, 0.1f); });
  EXPECT_NE(e.find("takes 2 x 4 images"), std::string::npos) << e;
  o.target = cuda;
  e = error_of([&] { runner::make_step_runner(net, o); });
  EXPECT_NE(e.find("gradient accumulation is the CPU runner's"), std::string::npos) << e;
}

}  // namespace
}  // namespace fastnn::loop
