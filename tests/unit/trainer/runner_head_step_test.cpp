// The sharded head's update in the runner (trainer/runner/head_step.h), one process: PartialFC's lazy
// update (Optimizer::step_rows over the sampled rows, their gradients compact) at sample_ratio 1 through
// the sampled code path ends bitwise where the full head's optimizer step ends — weights and every
// optimizer slot after three steps, for momentum and adam (beta powers) — and at ratio 0.3 the rows that
// were never sampled keep their initial values. The runner's sharded_row_layout() is sharded_rows()
// without the data (what the loaders ask, without the GPU's copy of every row).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "schemas/job_config.pb.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/config/job_config.h"
#include "trainer/graph/graph.h"
#include "trainer/head/margin.h"
#include "trainer/head/head_config.h"
#include "trainer/runner/head_step.h"
#include "trainer/runner/step_runner.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

constexpr int64_t kClasses = 40, kEmb = 8;

head::HeadOptions head_options(bool force_sampled, double ratio) {
  head::HeadOptions o;
  o.num_classes = kClasses;
  o.emb_dim = kEmb;
  o.margin = head::margin_spec("dist_arcface", 0.3, 8.0, std::nullopt, std::nullopt, std::nullopt, false);
  o.sharded = true;
  o.sample_ratio = ratio;
  o.seed = 3;
  o.force_sampled_path = force_sampled;
  return o;
}

// Three steps of `head` on LeNet's 8-wide output as the embedding; returns the head's checkpoint arrays.
std::vector<std::vector<float>> train_three_steps(HeadStep& head) {
  const NetDef net = zoo::build_net("lenet", {.num_classes = static_cast<int>(kEmb)});
  graph::Graph g(net, {.batch_size = 4, .seed = 7});
  const Tensor labels = testing_util::labels_of({3, 17, 3, 39});
  for (uint64_t step = 0; step < 3; ++step) {
    g.forward(testing_util::random_tensor(g.input_shape(), DType::kF32, 10 + step), true, step);
    head.train(g, labels, step);
    head.step(0.1f);
  }
  std::vector<std::vector<float>> out;
  for (const checkpoint::RowShardSlice& s : head.row_slices()) out.emplace_back(s.data, s.data + s.count);
  return out;
}

TEST(HeadStep, LazyPartialFcUpdateAtRatioOneIsTheFullUpdate) {
  for (const char* opt : {"momentum", "adam"}) {
    SCOPED_TRACE(opt);
    JobConfig c;
    c.set_optimizer(opt);
    const OptimizerOptions o = optimizer_options(c);
    HeadStep full(head_options(false, 1.0), nullptr, o), lazy(head_options(true, 1.0), nullptr, o);
    const auto a = train_three_steps(full), b = train_three_steps(lazy);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << "array " << i;
    const auto sa = full.export_scalars(), sb = lazy.export_scalars();
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].data, sb[i].data) << sa[i].name;
  }
}

TEST(HeadStep, RowsNeverSampledKeepTheirInitialValues) {
  JobConfig c;
  c.set_optimizer("momentum");
  const OptimizerOptions o = optimizer_options(c);
  HeadStep untouched(head_options(true, 0.3), nullptr, o);
  const std::vector<float> start(untouched.row_slices()[0].data, untouched.row_slices()[0].data + kClasses * kEmb);
  HeadStep head(head_options(true, 0.3), nullptr, o);
  const std::vector<float> end = train_three_steps(head)[0];
  int moved = 0, kept = 0;
  for (int64_t r = 0; r < kClasses; ++r) {
    const bool same = std::memcmp(&start[r * kEmb], &end[r * kEmb], kEmb * sizeof(float)) == 0;
    (same ? kept : moved) += 1;
  }
  EXPECT_GT(moved, 0);  // the labels' rows at least
  EXPECT_GT(kept, 0);   // 30% of the rest a step: some rows are never drawn in three steps
}

TEST(HeadStep, RunnerRowLayoutIsTheRowsWithoutTheirData) {
  for (const char* loss : {"dist_arcface", "arcface"}) {
    SCOPED_TRACE(loss);
    const std::vector<std::string> flags = {"--optimizer=adam", std::string("--loss_type=") + loss, "--emb_dim=8"};
    const JobConfig c = load_job_config("", flags);
    StepRunnerOptions o;
    o.batch_size = 4;
    o.optimizer = optimizer_options(c);
    o.head = head::head_options(c, kClasses, 3);
    auto runner = make_step_runner(head::with_embedding(zoo::build_net("lenet", {.num_classes = static_cast<int>(kEmb)})), o);
    const std::vector<checkpoint::RowShardSlice> rows = runner->sharded_rows(), layout = runner->sharded_row_layout();
    EXPECT_EQ(runner->has_sharded_rows(), o.head->sharded);
    EXPECT_EQ(rows.size(), o.head->sharded ? 3u : 0u);  // the weights and adam's two slots
    ASSERT_EQ(testing_util::slice_metadata(layout), testing_util::slice_metadata(rows));
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(layout[i].data, nullptr);
      EXPECT_NE(rows[i].data, nullptr);
    }
  }
}

}  // namespace
}  // namespace fastnn::runner
