// Every examples/*.pbtxt job file parses with the real loader (load_job_config: text format, validation),
// sets no field that the rest of it makes inert (field_effects.h), names a zoo model, and every scope it
// names (checkpoint_exclude_scopes, trainable_scopes) is a prefix of a variable of that model.
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "trainer/config/field_effects.h"
#include "trainer/config/job_config.h"
#include "trainer/graph/net_plan.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

std::vector<std::string> example_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(FASTNN_SOURCE_DIR) + "/examples"))
    if (e.path().extension() == ".pbtxt") out.push_back(e.path().string());
  return out;
}

TEST(Examples, TheFourRecipesAreThere) {
  std::vector<std::string> names;
  for (const std::string& f : example_files()) names.push_back(std::filesystem::path(f).filename().string());
  for (const char* want : {"quickstart_lenet.pbtxt", "cifar10_resnet56.pbtxt", "flowers_finetune_inception_v3.pbtxt",
                           "imagenet_resnet50_8gpus.pbtxt"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(Examples, EachParsesValidatesAndNamesRealScopes) {
  for (const std::string& path : example_files()) {
    SCOPED_TRACE(path);
    JobConfig c;
    ASSERT_NO_THROW(c = load_job_config(path, {}));
    EXPECT_TRUE(c.has_model_name() && c.has_dataset_dir() && c.has_output_dir());
    const std::vector<std::string> inert = inert_field_warnings(c);
    EXPECT_TRUE(inert.empty()) << inert[0];
    const zoo::ZooModel& m = zoo::zoo_model(c.model_name());
    const NetDef net = zoo::build_net(c.model_name(), {.num_classes = 10});
    std::vector<std::string> variables;
    const graph::NetPlan plan = graph::NetPlan::make(net, {});
    for (const graph::PlanNode& n : plan.nodes()) {
      for (const graph::PlannedTensor& p : n.params) variables.push_back(p.name);
      for (const graph::PlannedTensor& s : n.state) variables.push_back(s.name);
    }
    for (const std::string& scope : split_list(c.checkpoint_exclude_scopes() + "," + c.trainable_scopes())) {
      bool found = false;
      for (const std::string& v : variables) found = found || v.starts_with(scope);
      EXPECT_TRUE(found) << scope << " names no variable of " << m.name;
    }
  }
}

}  // namespace
}  // namespace fastnn
