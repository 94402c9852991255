// StepProfiler (ProfilerHook): which steps it profiles, and the Chrome trace it writes for one LeNet
// training step, parsed back as JSON: every layer has a forward event, every layer on a gradient path
// a backward event, layer events nest inside the train_step phase, and nothing is written on steps
// that are not profiled.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/graph/graph.h"
#include "trainer/loop/profiler.h"
#include "trainer/train_step.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::loop {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(StepProfiler, ProfilesEveryNthStepAndNeverWhenOff) {
  graph::Graph g(zoo::build_net("lenet", {.num_classes = 10}), {.batch_size = 1});
  StepProfiler every3(3, "/nonexistent", g), off(0, "/nonexistent", g);
  std::vector<int64_t> hits;
  for (int64_t s = 0; s < 10; ++s) {
    if (every3.profiles(s)) hits.push_back(s);
    EXPECT_FALSE(off.profiles(s));
  }
  EXPECT_EQ(hits, (std::vector<int64_t>{2, 5, 8}));
  EXPECT_FALSE(off.enabled());
}

TEST(StepProfiler, WritesAChromeTraceOfOneLenetStep) {
  const fs::path dir = fresh_dir("fastnn_profiler_test");
  graph::Graph g(zoo::build_net("lenet", {.num_classes = 10}), {.batch_size = 2, .seed = 1});
  TrainStep ts(g);
  const Tensor x = testing_util::random_tensor({2, 1, 28, 28}, DType::kF32, 3);
  const Tensor labels = testing_util::labels_of({1, 7});
  StepProfiler prof(2, dir.string(), g);

  prof.begin_step(0);  // not profiled: no events, no file
  ts.train(x, labels, 0);
  prof.mark("train_step");
  EXPECT_EQ(prof.end_step(), "");
  EXPECT_TRUE(prof.events().empty());

  prof.begin_step(1);  // profiled; the file is named by the step after the update
  prof.mark("next_batch");
  ts.train(x, labels, 1);
  prof.mark("train_step");
  const std::string path = prof.end_step();
  EXPECT_EQ(fs::path(path).filename(), "timeline-2.json");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);  // no temp left

  std::ifstream f(path);
  const nlohmann::json doc = nlohmann::json::parse(f);
  ASSERT_TRUE(doc.contains("traceEvents"));
  std::map<std::string, std::set<std::string>> cats;  // layer -> {forward, backward}
  double step_begin = -1, step_end = -1;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M") continue;
    ASSERT_EQ(e["ph"], "X");
    ASSERT_GE(e["dur"].get<double>(), 0);
    ASSERT_GE(e["ts"].get<double>(), 0);
    EXPECT_EQ(e["args"]["step"], 2);
    if (e["cat"] == "step") {
      if (e["name"] == "train_step") step_begin = e["ts"], step_end = step_begin + e["dur"].get<double>();
      continue;
    }
    cats[e["name"]].insert(e["cat"].get<std::string>());
    EXPECT_FALSE(e["args"]["type"].get<std::string>().empty());
  }
  ASSERT_GE(step_begin, 0);
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X" || e["cat"] == "step") continue;
    EXPECT_GE(e["ts"].get<double>(), step_begin) << e["name"];
    EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), step_end + 1) << e["name"];
  }
  ASSERT_EQ(cats.size(), g.plan().nodes().size());
  for (const auto& node : g.plan().nodes()) {
    ASSERT_TRUE(cats.count(node.name)) << node.name;
    EXPECT_TRUE(cats[node.name].count("forward")) << node.name;
    // Every LeNet layer (conv1 onwards) is on a gradient path.
    EXPECT_TRUE(cats[node.name].count("backward")) << node.name;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fastnn::loop
