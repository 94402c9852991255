// NetPlan: validation with clear errors, topological order, shape inference, parameter naming.
#include <gtest/gtest.h>

#include "tests/unit/trainer/graph_test_util.h"
#include "trainer/config/job_config.h"
#include "trainer/graph/net_plan.h"

namespace fastnn {
namespace {

using testing_util::net_from_text;

const char* kHeader = "input { channels: 3 height: 8 width: 8 }\n";

// ConfigError whose message contains every one of `parts`.
void expect_error(const std::string& layers, std::initializer_list<std::string> parts, int64_t batch = 2) {
  const NetDef net = net_from_text(kHeader + layers);
  try {
    graph::NetPlan::make(net, {.batch_size = batch});
    ADD_FAILURE() << "no error for:\n" << layers;
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

TEST(NetPlanErrors, NamesInputsAndTypes) {
  expect_error(R"pb(layers { name: "fc" inputs: "data" fully_connected { units: 2 } }
                    layers { name: "fc" inputs: "data" fully_connected { units: 2 } } logits: "fc")pb",
               {"'fc'", "used by layers #0 and #1"});
  expect_error(R"pb(layers { name: "data" inputs: "data" relu {} } logits: "data")pb", {"named 'data'"});
  expect_error(R"pb(layers { name: "a b" inputs: "data" relu {} } logits: "a b")pb", {"'a b'", "character"});
  expect_error(R"pb(layers { inputs: "data" relu {} } logits: "x")pb", {"layer #0 has no name"});
  expect_error(R"pb(layers { name: "fc" inputs: "data" } logits: "fc")pb", {"'fc'", "no layer type"});
  expect_error(R"pb(layers { name: "conv1" inputs: "data" conv { filters: 4 kernel: 3 } }
                    layers { name: "fc" inputs: "conv_1" fully_connected { units: 2 } } logits: "fc")pb",
               {"layer 'fc'", "input 'conv_1'", "did you mean 'conv1'"});
  expect_error(R"pb(layers { name: "sum" inputs: "data" add {} }
                    layers { name: "fc" inputs: "sum" fully_connected { units: 2 } } logits: "fc")pb",
               {"'sum' (add) takes 2 to 16 inputs, got 1"});
  expect_error(R"pb(layers { name: "fc" inputs: ["data", "data"] fully_connected { units: 2 } } logits: "fc")pb",
               {"'fc' (fully_connected) takes 1 input, got 2"});
  expect_error(R"pb(layers { name: "c" inputs: "data" conv { filters: 4 } }
                    layers { name: "fc" inputs: "c" fully_connected { units: 2 } } logits: "fc")pb",
               {"layer 'c'", "kernel"});
  expect_error(R"pb(layers { name: "c" inputs: "data" conv { filters: 4 kernel: 3 padding: "same" pad: 1 } }
                    layers { name: "fc" inputs: "c" fully_connected { units: 2 } } logits: "fc")pb",
               {"layer 'c'", "not both"});
  expect_error(R"pb(layers { name: "fc" inputs: "fc" fully_connected { units: 2 } } logits: "fc")pb",
               {"'fc' reads its own output"});
}

TEST(NetPlanErrors, CyclesDeadEndsAndOutputs) {
  expect_error(R"pb(layers { name: "a" inputs: ["data", "c"] add {} }
                    layers { name: "b" inputs: "a" relu {} }
                    layers { name: "c" inputs: "b" relu {} }
                    layers { name: "fc" inputs: "c" fully_connected { units: 2 } } logits: "fc")pb",
               {"cycle", "a -> b -> c -> a"});
  expect_error(R"pb(layers { name: "fc" inputs: "data" fully_connected { units: 2 } }
                    layers { name: "side" inputs: "data" relu {} } logits: "fc")pb",
               {"1 layer(s) feed neither logits nor aux_logits", "'side'"});
  expect_error(R"pb(layers { name: "fc" inputs: "data" fully_connected { units: 2 } })pb", {"`logits`"});
  expect_error(R"pb(layers { name: "fc" inputs: "data" fully_connected { units: 2 } } logits: "fc2")pb",
               {"logits 'fc2' is not a layer", "did you mean 'fc'"});
  expect_error(R"pb(layers { name: "r" inputs: "data" relu {} } logits: "r")pb", {"[2,3,8,8]", "[batch, classes]"});
  expect_error(R"pb(layers { name: "fc" inputs: "data" fully_connected { units: 2 } }
                    layers { name: "aux" inputs: "data" fully_connected { units: 3 } }
                    logits: "fc" aux_logits: "aux")pb",
               {"aux_logits layer 'aux' outputs [2,3]", "must match"});
  const NetDef no_input = net_from_text(R"pb(layers { name: "fc" inputs: "data" fully_connected { units: 2 } } logits: "fc")pb");
  EXPECT_THROW(graph::NetPlan::make(no_input, {}), ConfigError);
}

TEST(NetPlanErrors, ShapeErrorsNameTheLayerAndItsInput) {
  expect_error(R"pb(layers { name: "pool" inputs: "data" pool { kernel: 3 stride: 4 } }
                    layers { name: "c" inputs: "pool" conv { filters: 4 kernel: 5 } }
                    layers { name: "fc" inputs: "c" fully_connected { units: 2 } } logits: "fc")pb",
               {"layer 'c' (conv) on input [2,3,2,2]", "conv2d"});
  expect_error(R"pb(layers { name: "a" inputs: "data" conv { filters: 4 kernel: 1 } }
                    layers { name: "s" inputs: ["a", "data"] add {} }
                    layers { name: "fc" inputs: "s" fully_connected { units: 2 } } logits: "fc")pb",
               {"layer 's' (add) on input [2,4,8,8], [2,3,8,8]"});
  expect_error(R"pb(layers { name: "bn" inputs: "data" batch_norm { epsilon: 0 } }
                    layers { name: "fc" inputs: "bn" fully_connected { units: 2 } } logits: "fc")pb",
               {"layer 'bn'", "epsilon"});
  expect_error(R"pb(layers { name: "fc" inputs: "data" fully_connected { units: 2 weight_init { kind: NORMAL stddev: -1 } } }
                    logits: "fc")pb",
               {"fc/weights", "stddev"});
}

TEST(NetPlan, SortsTopologicallyKeepingDeclarationOrderAndInfersShapes) {
  // Declared out of order: the plan runs producers first; independent layers keep declaration order.
  const NetDef net = net_from_text(std::string(kHeader) + R"pb(
    layers { name: "fc" inputs: "cat" fully_connected { units: 5 } }
    layers { name: "cat" inputs: ["b", "a"] concat {} }
    layers { name: "b" inputs: "data" conv { filters: 2 kernel: 3 stride: 2 padding: "same" } }
    layers { name: "a" inputs: "data" pool { kind: AVG kernel: 2 } }
    logits: "fc"
  )pb");
  const graph::NetPlan plan = graph::NetPlan::make(net, {.batch_size = 3});
  std::vector<std::string> order;
  for (const graph::PlanNode& n : plan.nodes()) order.push_back(n.name);
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a", "cat", "fc"}));
  EXPECT_EQ(plan.nodes()[2].output_shape, (Shape{3, 5, 4, 4}));
  EXPECT_EQ(plan.nodes()[3].output_shape, (Shape{3, 5}));
  EXPECT_EQ(plan.nodes()[2].inputs, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan.nodes()[0].inputs, (std::vector<int>{graph::kDataInput}));
  EXPECT_EQ(plan.num_classes(), 5);
  EXPECT_EQ(plan.find("cat"), 2);
  EXPECT_EQ(plan.find("nope"), -1);
  // Parameters: conv 2x3x3x3 + 2, fc 5x80 + 5.
  EXPECT_EQ(plan.trainable_param_count(), 54 + 2 + 400 + 5);
  EXPECT_EQ(plan.macs(), 3 * (2 * 4 * 4 * 27 + 5 * 80));
}

TEST(NetPlan, NamesParametersTfSlimStyleAndHonoursBatchNormScaleAndDecayFlags) {
  const NetDef net = net_from_text(std::string(kHeader) + R"pb(
    layers { name: "m/conv1" inputs: "data" conv { filters: 4 kernel: 3 bias: false } }
    layers { name: "m/conv1/BatchNorm" inputs: "m/conv1" batch_norm { scale: false momentum: 0.997 } }
    layers { name: "m/logits" inputs: "m/conv1/BatchNorm"
             fully_connected { units: 3 weight_decay: false bias_weight_decay: true } }
    logits: "m/logits"
  )pb");
  const graph::NetPlan plan = graph::NetPlan::make(net, {});
  std::vector<std::string> params, state;
  for (const graph::PlanNode& n : plan.nodes()) {
    for (const graph::PlannedTensor& p : n.params) params.push_back(p.name + (p.trainable ? "" : " (fixed)") + (p.weight_decay ? " +wd" : ""));
    for (const graph::PlannedTensor& s : n.state) state.push_back(s.name);
  }
  EXPECT_EQ(params, (std::vector<std::string>{"m/conv1/weights +wd", "m/conv1/BatchNorm/gamma (fixed)",
                                              "m/conv1/BatchNorm/beta", "m/logits/weights", "m/logits/biases +wd"}));
  EXPECT_EQ(state, (std::vector<std::string>{"m/conv1/BatchNorm/moving_mean", "m/conv1/BatchNorm/moving_variance"}));
  EXPECT_EQ(plan.state_count(), 8);
  // The float 0.997 reaches the op as the double 0.997.
  EXPECT_EQ(plan.nodes()[1].attrs.get_float("bn", "momentum", 0), 0.997);
}

TEST(NetPlan, NetDefRidesInTheJobConfig) {
  const JobConfig c = parse_job_config_text(R"pb(
    model_name: "custom"
    net {
      name: "tiny"
      input { channels: 1 height: 4 width: 4 }
      layers { name: "fc" inputs: "data" fully_connected { units: 3 } }
      logits: "fc"
    }
  )pb", "job.pbtxt");
  ASSERT_TRUE(c.has_net());
  const graph::NetPlan plan = graph::NetPlan::make(c.net(), {});
  EXPECT_EQ(plan.trainable_param_count(), 16 * 3 + 3);
  try {
    parse_job_config_text("net { layers { name: \"x\" bogus: 1 } }", "job.pbtxt");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("job.pbtxt:1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fastnn
