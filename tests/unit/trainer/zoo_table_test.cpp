// `fastnn models`' table (trainer/zoo/zoo_table.h): every zoo name once, each count equal to what the
// zoo's net plans to, the JSON carrying the same numbers, and a few rows checked against the
// published figures docs/MODELS.md cites.
#include <gtest/gtest.h>

#include <set>

#include "trainer/graph/net_plan.h"
#include "trainer/graph/statistics.h"
#include "trainer/zoo/zoo.h"
#include "trainer/zoo/zoo_table.h"

namespace fastnn {
namespace {

TEST(ZooTable, ListsEveryModelWithTheZoosCounts) {
  const std::vector<zoo::ZooTableRow> rows = zoo::zoo_table();
  std::set<std::string> listed;
  for (const zoo::ZooTableRow& r : rows) {
    EXPECT_TRUE(listed.insert(r.name).second) << r.name << " listed twice";
    const zoo::ZooModel& m = zoo::zoo_model(r.name);
    const NetDef net = zoo::build_net(r.name);
    const graph::NetPlan plan = graph::NetPlan::make(net, {});
    EXPECT_EQ(r.trainable_params, plan.trainable_param_count()) << r.name;
    EXPECT_EQ(r.state_elements, plan.state_count()) << r.name;
    EXPECT_EQ(2 * r.macs, graph::model_statistics(plan).flops) << r.name;
    EXPECT_GT(r.macs, 0) << r.name;
    EXPECT_EQ(r.default_size, m.default_size) << r.name;
    EXPECT_EQ(r.preset, m.preset) << r.name;
    EXPECT_EQ(r.num_classes, m.default_classes) << r.name;
    EXPECT_EQ(r.aux_logits, m.has_aux_logits) << r.name;
  }
  for (const std::string& n : zoo::zoo_model_names()) EXPECT_TRUE(listed.count(n)) << n << " not listed";
  EXPECT_EQ(listed.size(), zoo::zoo_model_names().size());
  // Every model name issue 16 asks for except the NASNets.
  for (const char* n : {"alexnet_v2", "overfeat", "vgg_a", "vgg_11", "inception_v1", "inception_v2", "inception_v4",
                        "resnet_v1_200", "resnet_v2_101", "resnet_v2_152", "resnet_v2_200", "mobilenet_v1",
                        "mobilenet_v1_075", "mobilenet_v1_050", "mobilenet_v1_025", "mobilenet_v2",
                        "mobilenet_v2_140", "mobilenet_v2_035"})
    EXPECT_TRUE(listed.count(n)) << n;
}

// ZooModel's sizes are the smallest that plan: min_size without the aux head, aux_min_size with it (one
// less is refused with the size it needs).
TEST(ZooTable, MinimumSizesAreTheSmallestThatPlan) {
  for (const zoo::ZooModel& m : zoo::zoo_models()) {
    const auto plan_at = [&](int size, bool aux) {
      return graph::NetPlan::make(
          zoo::build_net(m.name, {.num_classes = 10, .height = size, .width = size, .aux_logits = aux}), {});
    };
    EXPECT_NO_THROW(plan_at(m.min_size, false)) << m.name;
    if (m.min_size > 1) {
      EXPECT_THROW(plan_at(m.min_size - 1, false), ConfigError) << m.name;
    }
    EXPECT_EQ(m.aux_min_size > 0, m.has_aux_logits) << m.name;
    if (!m.has_aux_logits) continue;
    EXPECT_NO_THROW(plan_at(m.aux_min_size, true)) << m.name;
    EXPECT_THROW(plan_at(m.aux_min_size - 1, true), ConfigError) << m.name;
  }
}

TEST(ZooTable, JsonAndTextCarryTheRows) {
  const std::vector<zoo::ZooTableRow> rows = zoo::zoo_table(1001);
  const nlohmann::json j = zoo::zoo_table_json(rows);
  ASSERT_EQ(j.size(), rows.size());
  const std::string text = zoo::zoo_table_text(rows);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(j[i]["name"], rows[i].name);
    EXPECT_EQ(j[i]["trainable_params"].get<int64_t>(), rows[i].trainable_params);
    EXPECT_EQ(j[i]["flops"].get<int64_t>(), 2 * j[i]["macs"].get<int64_t>());
    EXPECT_EQ(j[i]["input"]["height"].get<int>(), rows[i].default_size);
    EXPECT_EQ(j[i]["preprocessing"], rows[i].preset);
    EXPECT_EQ(j[i]["num_classes"].get<int>(), 1001) << rows[i].name;
    EXPECT_NE(text.find("\n" + rows[i].name + " "), std::string::npos) << rows[i].name;
  }
  // TF-slim's MobileNet v1 1.0 with its 1001 classes (docs/MODELS.md): 4,233,001.
  for (const zoo::ZooTableRow& r : rows)
    if (r.name == "mobilenet_v1") {
      EXPECT_EQ(r.trainable_params, 4'233'001);
    }
  EXPECT_NE(text.find("4,233,001"), std::string::npos);
}

}  // namespace
}  // namespace fastnn
