// `fastnn report RUN_A RUN_B`'s page (metrics/run_comparison.h): only the fields that differ are listed
// (a field one run lacks counts as differing; a run without a recorded config is left out of the
// comparison), output_dir never; the best evaluation is the highest top-1; run names are escaped.
#include "trainer/metrics/run_comparison.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace fastnn {
namespace {

ComparedRun run(const std::string& dir, double lr, const std::string& optimizer) {
  ComparedRun r;
  r.run_dir = dir;
  r.model_name = "lenet";
  r.metrics.train_step = {10, 20};
  r.metrics.loss = {2.0, 1.5 - lr};
  r.metrics.accuracy = {0.2, 0.4};
  r.metrics.lr = {lr, lr};
  r.metrics.images_per_sec = {900, 1100};
  r.metrics.evals.push_back({10, "test", 0.30 + lr, 0.8, 1.9, 100});
  r.metrics.evals.push_back({20, "test", 0.25 + lr, 0.8, 1.7, 100});
  r.config = {{"learning_rate", std::to_string(lr)}, {"optimizer", optimizer}, {"batch_size", "64"},
              {"output_dir", dir}};
  return r;
}

// The page's JSON block.
nlohmann::json data(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"data\">";
  const size_t a = page.find(open);
  const size_t b = page.find("</script>", a);
  return nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
}

TEST(RunComparison, ListsOnlyTheFieldsThatDiffer) {
  std::vector<ComparedRun> runs = {run("runs/a", 0.1, "momentum"), run("runs/b", 0.01, "momentum")};
  EXPECT_EQ(differing_config_fields(runs), std::vector<std::string>{"learning_rate"});
  runs[1].config["optimizer"] = "adam";
  runs[1].config.erase("batch_size");  // recorded by one run only: differs
  EXPECT_EQ(differing_config_fields(runs), (std::vector<std::string>{"batch_size", "learning_rate", "optimizer"}));
  ComparedRun bare = run("runs/c", 0.5, "sgd");
  bare.config.clear();  // no checkpoint: compared by its curves only
  runs.push_back(bare);
  EXPECT_EQ(differing_config_fields(runs).size(), 3u);
}

TEST(RunComparison, PageHasEveryRunsCurvesBestEvalAndTheDifferences) {
  std::vector<ComparedRun> runs = {run("runs/<a>", 0.1, "momentum"), run("runs/b", 0.01, "adam")};
  const std::string page = run_comparison_page(runs, {"a note"});
  EXPECT_EQ(page.find("runs/<a>"), std::string::npos);  // escaped everywhere outside the JSON block
  EXPECT_NE(page.find("runs/&lt;a&gt;"), std::string::npos);
  EXPECT_NE(page.find("data-field=\"optimizer\""), std::string::npos);
  EXPECT_EQ(page.find("data-field=\"batch_size\""), std::string::npos);
  EXPECT_EQ(page.find("data-field=\"output_dir\""), std::string::npos);
  EXPECT_NE(page.find("a note"), std::string::npos);
  const nlohmann::json d = data(page);
  EXPECT_EQ(d["kind"], "fastnn-run-comparison");
  ASSERT_EQ(d["runs"].size(), 2u);
  EXPECT_EQ(d["runs"][0]["run_dir"], "runs/<a>");
  EXPECT_EQ(d["runs"][0]["best_top1"]["step"], 10);  // 0.40 at step 10 beats 0.35 at step 20
  EXPECT_NEAR(d["runs"][0]["best_top1"]["top1"].get<double>(), 0.40, 1e-12);
  EXPECT_EQ(d["runs"][1]["differing"]["optimizer"], "adam");
  EXPECT_EQ(d["differing_fields"], (nlohmann::json{"learning_rate", "optimizer"}));
  EXPECT_EQ(d["runs"][0]["median_images_per_sec"], 1100.0);
}

}  // namespace
}  // namespace fastnn
