// JSON-lines metrics: lines parse back to the values written; NaN becomes null; append continues.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "core/check.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/metrics/jsonl_writer.h"

namespace fastnn {
namespace {

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(MetricsJsonl, LinesParseBack) {
  testing_util::ScratchDir dir("metrics-jsonl");
  const std::string path = dir.file("metrics.jsonl");
  JsonlMetricsWriter w(path);
  TrainLogEntry t;
  t.step = 100;
  t.epoch = 0.64;
  t.loss = 0.1 + 0.2;  // not exactly 0.3: the value must round-trip, not just print nicely
  t.accuracy = 0.875;
  t.lr = 1e-3;
  t.images_per_sec = 5120.5;
  t.data_wait_fraction = 0.02;
  t.wall_time = 1714567890.125;
  t.extra["grad_norm"] = 3.5;
  w.write(t);
  // Written and flushed: visible before close.
  ASSERT_EQ(read_lines(path).size(), 1u);
  EvalLogEntry e;
  e.step = 1000;
  e.epoch = 6.4;
  e.split = "test";
  e.top1 = 0.9;
  e.top5 = 0.99;
  e.loss = std::numeric_limits<double>::quiet_NaN();
  e.num_examples = 10000;
  w.write(e);
  w.write(nlohmann::json{{"event", "note"}, {"text", "bad \xff byte"}});
  w.close();

  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  const auto& a = lines[0];
  EXPECT_EQ(a["event"], "train");
  EXPECT_EQ(a["step"].get<int64_t>(), 100);
  EXPECT_EQ(a["epoch"].get<double>(), 0.64);
  EXPECT_EQ(a["loss"].get<double>(), 0.1 + 0.2);
  EXPECT_EQ(a["accuracy"].get<double>(), 0.875);
  EXPECT_EQ(a["lr"].get<double>(), 1e-3);
  EXPECT_EQ(a["images_per_sec"].get<double>(), 5120.5);
  EXPECT_EQ(a["data_wait_fraction"].get<double>(), 0.02);
  EXPECT_EQ(a["wall_time"].get<double>(), 1714567890.125);
  EXPECT_EQ(a["grad_norm"].get<double>(), 3.5);
  const auto& b = lines[1];
  EXPECT_EQ(b["event"], "eval");
  EXPECT_EQ(b["split"], "test");
  EXPECT_EQ(b["top1"].get<double>(), 0.9);
  EXPECT_EQ(b["top5"].get<double>(), 0.99);
  EXPECT_TRUE(b["loss"].is_null());
  EXPECT_EQ(b["num_examples"].get<int64_t>(), 10000);
  EXPECT_GT(b["wall_time"].get<double>(), 1.6e9);  // 0 means now
  EXPECT_EQ(lines[2]["event"], "note");

  // A resumed run appends.
  JsonlMetricsWriter again(path, /*append=*/true);
  t.step = 101;
  again.write(t);
  again.close();
  const auto more = read_lines(path);
  ASSERT_EQ(more.size(), 4u);
  EXPECT_EQ(more[3]["step"].get<int64_t>(), 101);
  EXPECT_THROW(again.write(t), Error);
}

TEST(MetricsJsonl, Errors) {
  TrainLogEntry t;
  t.extra["loss"] = 1;  // may not replace a fixed field
  EXPECT_THROW(JsonlMetricsWriter::to_json(t), Error);
  EXPECT_THROW(JsonlMetricsWriter("/nonexistent-dir/metrics.jsonl"), IoError);
}

}  // namespace
}  // namespace fastnn
