// The confusion matrix of an evaluation (loop/evaluate.h count_confusion), its metrics.jsonl field
// (jsonl_writer.h) read back by `fastnn report` (metrics/run_report.h): arg-max per example against
// the label, refused shapes, torn and bad lines skipped with a note, NaN kept out of the curves, class
// names escaped on the page.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/check.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/loop/evaluate.h"
#include "trainer/metrics/jsonl_writer.h"
#include "trainer/metrics/run_report.h"
#include "trainer/tensor.h"

namespace fastnn {
namespace {

TEST(Confusion, CountsTheArgMaxAgainstTheLabel) {
  // 4 examples, 3 classes; the tie in row 3 goes to the lower index.
  const Tensor logits = Tensor::from<float>({4, 3}, {0.1f, 2.0f, 0.3f,  //
                                                     5.0f, 1.0f, 1.0f,  //
                                                     -1.f, -2.f, -0.5f,  //
                                                     0.7f, 0.7f, 0.1f});
  const Tensor labels = Tensor::from<int32_t>({4}, {1, 0, 0, 1});
  loop::EvalResult r;
  ASSERT_TRUE(loop::count_confusion(logits, labels, &r));
  ASSERT_EQ(r.confusion_classes, 3);
  EXPECT_EQ(r.confusion, (std::vector<int64_t>{1, 0, 1,  //
                                               1, 1, 0,  //
                                               0, 0, 0}));
  ASSERT_TRUE(loop::count_confusion(logits, Tensor::from<int64_t>({4}, {2, 2, 2, 2}), &r));  // accumulates
  EXPECT_EQ(r.confusion[6] + r.confusion[7] + r.confusion[8], 4);
  EXPECT_FALSE(loop::count_confusion(Tensor(), labels, &r));                            // no logits
  EXPECT_FALSE(loop::count_confusion(Tensor::zeros({4, 5}), labels, &r));                // other width
  EXPECT_FALSE(loop::count_confusion(Tensor::zeros({3, 3}), labels, &r));                // other count
  loop::EvalResult big;
  EXPECT_FALSE(loop::count_confusion(Tensor::zeros({4, kMaxConfusionClasses + 1}), labels, &big));
  EXPECT_EQ(big.confusion_classes, 0);
  EXPECT_THROW(loop::count_confusion(logits, Tensor::from<int32_t>({4}, {0, 1, 3, 0}), &r), Error);
}

TEST(RunReport, ReadsTheLinesTheWriterWrites) {
  testing_util::ScratchDir dir("run-report");
  const std::string path = dir.file("metrics.jsonl");
  {
    JsonlMetricsWriter w(path);
    for (int s = 10; s <= 30; s += 10) {
      TrainLogEntry t;
      t.step = s;
      t.loss = s == 20 ? std::nan("") : 1.0 / s;
      t.accuracy = 0.5;
      t.lr = 0.1;
      t.images_per_sec = 100 + s;
      w.write(t);
    }
    EvalLogEntry e;
    e.step = 30;
    e.split = "test";
    e.top1 = 0.75;
    e.num_examples = 4;
    e.confusion_classes = 2;
    e.confusion = {1, 1, 0, 2};
    w.write(e);
    e.confusion_classes = 3;  // a wrong size is the writer's error, not a bad line
    EXPECT_THROW(w.write(e), Error);
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"event\":\"eval\",\"step\":40,\"top1\":0.5,\"confusion_matrix\":[[1,2],[3]]}\n";  // not square
    out << "{\"event\":\"train\",\"st";                                                          // torn
  }
  const RunMetrics m = read_run_metrics(path);
  EXPECT_EQ(m.train_step, (std::vector<double>{10, 20, 30}));
  EXPECT_TRUE(std::isnan(m.loss[1]));
  EXPECT_EQ(m.images_per_sec[2], 130);
  ASSERT_EQ(m.evals.size(), 2u);
  EXPECT_EQ(m.confusion_step, 30);  // the last usable matrix
  EXPECT_EQ(m.confusion, (std::vector<int64_t>{1, 1, 0, 2}));
  EXPECT_EQ(m.skipped, 1);
  ASSERT_EQ(m.warnings.size(), 2u);
  EXPECT_NE(m.warnings[0].find("not a square matrix"), std::string::npos) << m.warnings[0];

  RunReportInfo info;
  info.run_dir = "runs/<x>";
  info.class_names = {"<script>alert(1)</script>", "a&b"};
  const std::string page = run_report_page(m, info);
  for (const char* id : {"curves", "confusion", "notes"})
    EXPECT_NE(page.find(str("<section id=\"", id, "\">")), std::string::npos) << id;
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  const size_t data = page.find("<script type=\"application/json\" id=\"data\">");
  ASSERT_NE(data, std::string::npos);
  const size_t begin = page.find('>', data) + 1;
  const nlohmann::json j = nlohmann::json::parse(page.substr(begin, page.find("</script>", begin) - begin));
  EXPECT_TRUE(j["train"]["loss"][1].is_null());
  EXPECT_EQ(j["last_eval"]["confusion_matrix"], nlohmann::json::parse("[[1,1],[0,2]]"));
  EXPECT_EQ(j["last_eval"]["per_class_accuracy"], nlohmann::json::parse("[0.5,1.0]"));
  // Precision: correct / predicted as the class (column sums 1 and 3).
  EXPECT_EQ(j["last_eval"]["per_class_precision"], nlohmann::json::parse("[1.0,0.6666666666666666]"));
  EXPECT_EQ(j["last_eval"]["class_names"][0], "<script>alert(1)</script>");
  EXPECT_TRUE(j["moving_average_evals"].empty());

  std::ofstream(dir.file("empty.jsonl")) << "not json\n";
  EXPECT_THROW(read_run_metrics(dir.file("empty.jsonl")), ConfigError);
  EXPECT_THROW(read_run_metrics(dir.file("missing.jsonl")), IoError);
}

// moving_average_decay's evaluations: their own list (not "the" evaluations, no confusion matrix), in the
// page's meta line and data; a reader that knows only "eval" passes them over.
TEST(RunReport, KeepsTheMovingAveragesEvaluationsApart) {
  testing_util::ScratchDir dir("run-report-ema");
  const std::string path = dir.file("metrics.jsonl");
  {
    JsonlMetricsWriter w(path);
    EvalLogEntry e;
    e.step = 8;
    e.split = "test";
    e.top1 = 0.5;
    e.confusion_classes = 2;
    e.confusion = {1, 1, 0, 2};
    w.write(e);
    e.event = "eval_moving_averages";
    e.top1 = 0.625;
    e.confusion_classes = 0;
    e.confusion.clear();
    w.write(e);
  }
  const RunMetrics m = read_run_metrics(path);
  ASSERT_EQ(m.evals.size(), 1u);
  EXPECT_EQ(m.evals[0].top1, 0.5);
  ASSERT_EQ(m.moving_average_evals.size(), 1u);
  EXPECT_EQ(m.moving_average_evals[0].step, 8);
  EXPECT_EQ(m.moving_average_evals[0].top1, 0.625);
  EXPECT_EQ(m.confusion_step, 8);
  const std::string page = run_report_page(m, RunReportInfo{});
  EXPECT_NE(page.find("last top-1 0.5 (moving averages 0.625)"), std::string::npos);
  EXPECT_NE(page.find("\"moving_average_evals\":[{"), std::string::npos);
}

}  // namespace
}  // namespace fastnn
