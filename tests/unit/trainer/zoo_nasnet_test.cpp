// NASNet-A and PNASNet-5 (trainer/zoo/nasnet.cpp) against TF-slim: variable names in slim's scopes,
// the published parameter counts and multiply-adds (nets/nasnet/README.md, slim's README table),
// drop-path placement and schedule, sizes and presets. Shape inference only, no tensor memory.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "tests/unit/trainer/zoo_test_util.h"
#include "trainer/graph/net_plan.h"
#include "trainer/graph/statistics.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

using testing_util::trainable_shapes;

// The shape of `name`, or a failure naming it.
Shape at(const std::map<std::string, Shape>& m, const std::string& name) {
  const auto it = m.find(name);
  if (it == m.end()) {
    ADD_FAILURE() << "no variable " << name;
    return {};
  }
  return it->second;
}

TEST(ZooNasnet, VariablesHaveSlimsNames) {
  const auto m = trainable_shapes("nasnet_mobile", {.num_classes = 1001});
  EXPECT_EQ(at(m, "conv0/weights"), (Shape{32, 3, 3, 3}));
  EXPECT_EQ(at(m, "conv0_bn/gamma"), (Shape{32}));
  EXPECT_EQ(at(m, "cell_stem_0/1x1/weights"), (Shape{11, 32, 1, 1}));
  EXPECT_EQ(at(m, "cell_stem_0/comb_iter_0/left/separable_5x5_1/depthwise_weights"), (Shape{11, 1, 5, 5}));
  EXPECT_EQ(at(m, "cell_stem_0/comb_iter_0/right/separable_7x7_1/depthwise_weights"), (Shape{32, 1, 7, 7}));
  EXPECT_EQ(at(m, "cell_stem_0/comb_iter_0/right/separable_7x7_1/pointwise_weights"), (Shape{11, 32, 1, 1}));
  EXPECT_EQ(at(m, "cell_stem_0/comb_iter_0/left/bn_sep_5x5_2/beta"), (Shape{11}));
  EXPECT_EQ(at(m, "cell_stem_1/path1_conv/weights"), (Shape{11, 32, 1, 1}));  // factorized reduction
  EXPECT_EQ(at(m, "cell_stem_1/path2_conv/weights"), (Shape{11, 32, 1, 1}));
  EXPECT_EQ(at(m, "cell_stem_1/final_path_bn/gamma"), (Shape{22}));
  EXPECT_EQ(at(m, "cell_0/path1_conv/weights"), (Shape{22, 44, 1, 1}));  // 56x56 stem_0 out to 28x28
  EXPECT_EQ(at(m, "cell_1/prev_1x1/weights"), (Shape{44, 88, 1, 1}));   // stem_1's 88 channels to 44
  EXPECT_EQ(at(m, "reduction_cell_0/prev_1x1/weights"), (Shape{88, 264, 1, 1}));
  EXPECT_EQ(at(m, "reduction_cell_0/comb_iter_1/right/separable_7x7_1/depthwise_weights"), (Shape{88, 1, 7, 7}));
  EXPECT_EQ(at(m, "reduction_cell_1/beginning_bn/beta"), (Shape{176}));
  EXPECT_EQ(at(m, "cell_11/comb_iter_4/left/separable_3x3_2/pointwise_weights"), (Shape{176, 176, 1, 1}));
  EXPECT_EQ(at(m, "aux_7/aux_logits/proj/weights"), (Shape{128, 528, 1, 1}));
  EXPECT_EQ(at(m, "aux_7/aux_logits/Conv/weights"), (Shape{768, 128, 4, 4}));
  EXPECT_EQ(at(m, "aux_7/aux_logits/aux_bn1/gamma"), (Shape{768}));
  EXPECT_EQ(at(m, "aux_7/aux_logits/FC/weights"), (Shape{1001, 768}));
  EXPECT_EQ(at(m, "final_layer/FC/weights"), (Shape{1001, 1056}));
  EXPECT_EQ(at(m, "final_layer/FC/biases"), (Shape{1001}));
  EXPECT_FALSE(m.count("cell_0/1x1/biases"));  // no conv biases in NASNet's arg scope
  EXPECT_FALSE(m.count("cell_0/comb_iter_0/left/separable_5x5_1/biases"));

  // nasnet_large skips the reduction cell's input; the cell after a reduction reduces the cell before it.
  const auto l = trainable_shapes("nasnet_large", {.aux_logits = false});
  EXPECT_EQ(at(l, "conv0/weights"), (Shape{96, 3, 3, 3}));
  EXPECT_EQ(at(l, "cell_6/path1_conv/weights"), (Shape{168, 1008, 1, 1}));
  EXPECT_EQ(at(l, "final_layer/FC/weights"), (Shape{1000, 4032}));

  // The CIFAR stem feeds the first cell's unused state through a stride-1 factorized reduction.
  const auto c = trainable_shapes("nasnet_cifar");
  EXPECT_EQ(at(c, "l1_stem_3x3/weights"), (Shape{96, 3, 3, 3}));
  EXPECT_EQ(at(c, "cell_0/cell_output/reduction_1/path_conv/weights"), (Shape{32, 96, 1, 1}));
  EXPECT_EQ(at(c, "aux_11/aux_logits/FC/weights"), (Shape{10, 768}));

  const auto p = trainable_shapes("pnasnet_large", {.num_classes = 1001});
  EXPECT_EQ(at(p, "cell_stem_0/comb_iter_0/left/separable_5x5_1/pointwise_weights"), (Shape{54, 96, 1, 1}));
  EXPECT_EQ(at(p, "cell_stem_0/comb_iter_0/right/1x1/weights"), (Shape{54, 96, 1, 1}));  // max pool, then 1x1
  EXPECT_EQ(at(p, "cell_4/comb_iter_4/right/1x1/weights"), (Shape{432, 432, 1, 1}));  // strided "none"
  EXPECT_EQ(at(p, "aux_7/aux_logits/FC/weights"), (Shape{1001, 768}));
  EXPECT_EQ(at(p, "final_layer/FC/weights"), (Shape{1001, 4320}));
  EXPECT_TRUE(trainable_shapes("pnasnet_mobile").count("aux_5/aux_logits/proj/weights"));
}

// TF-slim's tables (1001 classes, no aux head, trainable variables: the BN moving statistics would add
// 0.04 / 0.2 M and break the rounding): NASNet-A Mobile 5.3 M, Large 88.9 M; PNASNet-5 Large 86.1 M,
// Mobile 5.1 M; NASNet-A CIFAR (10 classes) 3.3 M (Zoph et al. 2018, Table 1: NASNet-A 6 @ 768).
// Exact counts (Keras NASNetMobile / NASNetLarge, timm pnasnet5large): zoo_params_test.
TEST(ZooNasnet, ParameterCountsRoundToSlimsTable) {
  const auto mparams = [](const std::string& m, int classes) {
    const NetDef net = zoo::build_net(m, {.num_classes = classes, .aux_logits = false});
    return static_cast<double>(graph::NetPlan::make(net, {}).trainable_param_count()) / 1e6;
  };
  EXPECT_EQ(std::round(mparams("nasnet_mobile", 1001) * 10), 53);
  // NASNet-A Large's 88.9 M is all its variables, the moving statistics included, as Keras' NASNetLarge
  // reports (88,949,818 with 1000 classes); its trainable variables alone are 88.76 M.
  const NetDef large = zoo::build_net("nasnet_large", {.num_classes = 1001, .aux_logits = false});
  const graph::NetPlan large_plan = graph::NetPlan::make(large, {});
  EXPECT_EQ(std::floor(static_cast<double>(large_plan.trainable_param_count() + large_plan.state_count()) / 1e5), 889);
  EXPECT_EQ(std::round(mparams("pnasnet_large", 1001) * 10), 861);
  EXPECT_EQ(std::round(mparams("pnasnet_mobile", 1001) * 10), 51);
  EXPECT_EQ(std::round(mparams("nasnet_cifar", 10) * 10), 33);
}

// Multiply-adds at the default size without the aux head (TF-slim's tables: 564 M, 23.8 G, 588 M; Liu et
// al. 2018 give PNASNet-5 Large 25.0 G, 0.25 % above the 24.94 G of its conv and fc layers counted here).
TEST(ZooNasnet, MultiplyAddsAsPublished) {
  const auto macs = [](const std::string& m) {
    const NetDef net = zoo::build_net(m, {.num_classes = 1001, .aux_logits = false});
    return static_cast<double>(graph::model_statistics(net).flops) / 2;
  };
  EXPECT_NEAR(macs("nasnet_mobile"), 564e6, 5e6);
  EXPECT_NEAR(macs("nasnet_large"), 23.8e9, 0.05e9);
  EXPECT_NEAR(macs("pnasnet_large"), 25.0e9, 0.1e9);
  EXPECT_NEAR(macs("pnasnet_mobile"), 588e6, 5e6);
}

// drop_path after every operation but the identity, with slim's cell numbers and totals.
TEST(ZooNasnet, DropPathFollowsSlimsHparams) {
  const auto drops = [](const std::string& m, zoo::ZooOptions o = {}) {
    std::map<std::string, DropPathLayer> out;
    const NetDef net = zoo::build_net(m, o);
    for (const LayerDef& l : net.layers())
      if (l.has_drop_path()) out[l.name()] = l.drop_path();
    return out;
  };
  EXPECT_TRUE(drops("nasnet_mobile").empty());  // keep_prob 1.0
  EXPECT_TRUE(drops("pnasnet_mobile").empty());
  const auto large = drops("nasnet_large");
  // 2 stem + 2 reduction cells (9 dropped operations each: one "none") + 18 normal cells (8 each: two "none").
  EXPECT_EQ(large.size(), 4u * 9 + 18u * 8);
  const DropPathLayer& d = large.at("cell_0/comb_iter_0/left/drop_path");
  EXPECT_FLOAT_EQ(d.keep_prob(), 0.7f);
  EXPECT_EQ(d.cell_index(), 2);
  EXPECT_EQ(d.total_cells(), 22);
  EXPECT_EQ(d.total_steps(), 250000);
  EXPECT_EQ(large.at("cell_stem_1/comb_iter_0/left/drop_path").cell_index(), 1);
  EXPECT_EQ(large.at("reduction_cell_0/comb_iter_0/left/drop_path").cell_index(), 8);
  EXPECT_EQ(large.at("cell_6/comb_iter_0/left/drop_path").cell_index(), 9);
  EXPECT_EQ(large.at("cell_17/comb_iter_0/left/drop_path").cell_index(), 21);
  const auto cifar = drops("nasnet_cifar");
  EXPECT_EQ(cifar.at("cell_0/comb_iter_0/left/drop_path").cell_index(), 0);
  EXPECT_EQ(cifar.at("cell_0/comb_iter_0/left/drop_path").total_cells(), 20);
  EXPECT_EQ(cifar.at("cell_0/comb_iter_0/left/drop_path").total_steps(), 937500);
  EXPECT_EQ(drops("pnasnet_large").at("cell_11/comb_iter_0/left/drop_path").total_cells(), 14);
  // Options override slim's values.
  const auto tuned = drops("nasnet_mobile", {.drop_path_keep_prob = 0.8, .total_training_steps = 1000});
  ASSERT_FALSE(tuned.empty());
  EXPECT_FLOAT_EQ(tuned.begin()->second.keep_prob(), 0.8f);
  EXPECT_EQ(tuned.begin()->second.total_steps(), 1000);
  EXPECT_THROW(zoo::build_net("nasnet_large", {.drop_path_keep_prob = 1.5}), ConfigError);
}

TEST(ZooNasnet, SizesAndPresets) {
  for (const char* m : {"nasnet_mobile", "nasnet_large", "pnasnet_mobile", "pnasnet_large"}) {
    EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net(m, {.height = 67, .width = 67}), {})) << m;
    EXPECT_THROW(zoo::build_net(m, {.height = 66, .width = 66}), ConfigError) << m;  // the aux head's 5x5
    EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net(m, {.height = 3, .width = 3, .aux_logits = false}), {})) << m;
    EXPECT_THROW(zoo::build_net(m, {.height = 2, .width = 2, .aux_logits = false}), ConfigError) << m;
    EXPECT_EQ(zoo::zoo_model(m).preset, "inception");
    EXPECT_TRUE(zoo::zoo_model(m).has_aux_logits);
  }
  EXPECT_EQ(zoo::zoo_model("nasnet_cifar").preset, "cifarnet");  // slim's preprocessing_factory
  EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net("nasnet_cifar", {.height = 9, .width = 9}), {}));
  EXPECT_THROW(zoo::build_net("nasnet_cifar", {.height = 8, .width = 8}), ConfigError);
  EXPECT_EQ(zoo::zoo_model("nasnet_cifar").default_size, 32);
  EXPECT_EQ(zoo::zoo_model("nasnet_mobile").default_size, 224);
  EXPECT_EQ(zoo::zoo_model("pnasnet_large").default_size, 331);
  // The final maps: 7x7 (mobile at 224), 11x11 (large at 331), 8x8 (cifar at 32).
  const auto final_map = [](const std::string& m) {
    const graph::NetPlan plan = graph::NetPlan::make(zoo::build_net(m), {});
    for (const graph::PlanNode& n : plan.nodes())
      if (n.name == "final_layer/Relu") return n.output_shape[2];
    return int64_t{0};
  };
  EXPECT_EQ(final_map("nasnet_mobile"), 7);
  EXPECT_EQ(final_map("pnasnet_large"), 11);
  EXPECT_EQ(final_map("nasnet_cifar"), 8);
}

}  // namespace
}  // namespace fastnn
