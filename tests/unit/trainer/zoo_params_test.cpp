// Zoo parameter counts against the published figures, by shape inference only (no tensor memory).
//
// Sources of the expected numbers (1000 classes unless said):
//   resnet_v1_18/50/101/152   torchvision resnet18/50/101/152: 11,689,512 / 25,557,032 / 44,549,160 /
//                             60,192,808 (TF-slim's resnet_v1 has the same variables: BN with scale,
//                             1x1-conv logits with bias). Moving statistics: Keras ResNet50/101
//                             non-trainable 53,120 / 105,344.
//   resnet_v1_5_50            torchvision resnet50 (v1.5: the same variables as v1, the stride moved).
//   resnet_v2_50              Keras ResNet50V2: 25,568,360 trainable, 45,440 non-trainable.
//   vgg_11/16/19              torchvision vgg11/16/19 and Keras VGG16/19: 132,863,336 / 138,357,544 /
//                             143,667,240.
//   inception_v3              Keras InceptionV3 (the same net, BN without scale, no aux head):
//                             23,817,352 trainable + 34,432 non-trainable = 23,851,784. With TF-slim's
//                             aux head: + 3,325,800 = 27,143,152 (docs/MODELS.md derives it; it equals
//                             torchvision's 27,161,264 minus torchvision's 18,112 BN gammas).
//   inception_resnet_v2       Keras InceptionResNetV2 (no aux head): 55,813,192 trainable + 60,544
//                             non-trainable = 55,873,736; TF-slim's aux head adds 3,366,760.
//   resnet_cifar_20 / _56     He et al. report 0.27 M / 0.85 M with option-A shortcuts: exactly
//                             269,722 / 853,018 (the counts of the equal-sized plain nets).
//   lenet                     TF-slim LeNet on 28x28x1, 10 classes: 3,274,634.
//   mlp                       784-2500-2000-1500-1000-500-10 with biases: 11,972,510.
//   cifarnet                  TF-slim CifarNet on 32x32x3, 10 classes: 1,756,426.
//   mobilenet_v1              Keras MobileNet (alpha 1.0, the same variables): 4,231,976 trainable +
//                             21,888 non-trainable with 1000 classes; TF-slim's 1001: + 1,025.
//   mobilenet_v1_075/050/025  With 1001 classes: 2,586,329 / 1,332,105 / 470,329, against TF-slim's
//                             table (mobilenet_v1.md) 2.59 / 1.34 / 0.47 M (docs/MODELS.md on the 1.34).
//   mobilenet_v2              Keras MobileNetV2 (alpha 1.0): 3,504,872 trainable + 34,112 non-trainable
//                             with 1000 classes. TF-slim's table (mobilenet/README.md) counts weights
//                             without the batch-norm gamma/beta: 3.47 M = 3,506,153 - 34,112 (1001 classes).
//   mobilenet_v2_140 / _035   The same way: 6.06 M = 6,110,569 - 47,936; 1.66 M = 1,678,409 - 14,080.
//   resnet_v2_101 / _152      Keras ResNet101V2 / ResNet152V2 (the same nets as slim's, as for 50):
//                             44,675,560 / 60,380,648 parameters in all, trainable + moving statistics.
//   inception_v1              torchvision googlenet (slim's layout, 3x3 "5x5" branches included, no aux
//                             heads, BN with gamma): 6,624,904 = slim's trainable + one gamma per BN
//                             channel (state / 2).
//   inception_v4              timm's inception_v4 (a port of slim's checkpoint, BN with gamma, no aux
//                             head): 42.68 M = slim's trainable without the aux head + state / 2.
//   alexnet_v2, overfeat, inception_v2, resnet_v1_200, resnet_v2_200: no published count; the expected
//                             numbers are computed from slim's layer shapes (docs/MODELS.md).
#include <gtest/gtest.h>

#include <chrono>

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <map>
#include <set>
#include <tuple>

#include "tests/unit/trainer/zoo_test_util.h"
#include "trainer/graph/net_plan.h"
#include "trainer/graph/statistics.h"
#include "trainer/zoo/zoo.h"

namespace fastnn {
namespace {

struct Expected {
  std::string model;
  zoo::ZooOptions options;
  int64_t trainable;
  int64_t state;  // -1: not checked
};

std::string case_name(const Expected& e) {
  return e.model + (e.options.aux_logits ? "" : "_noaux") +
         (e.options.num_classes ? "_" + std::to_string(e.options.num_classes) : "");
}
void PrintTo(const Expected& e, std::ostream* os) { *os << case_name(e); }

class ZooParams : public testing::TestWithParam<Expected> {};

TEST_P(ZooParams, MatchPublishedCounts) {
  const Expected& e = GetParam();
  const auto t0 = std::chrono::steady_clock::now();
  const NetDef net = zoo::build_net(e.model, e.options);
  const graph::NetPlan plan = graph::NetPlan::make(net, {});
  EXPECT_EQ(plan.trainable_param_count(), e.trainable) << e.model;
  if (e.state >= 0) {
    EXPECT_EQ(plan.state_count(), e.state) << e.model;
  }
  EXPECT_EQ(net.has_aux_logits(), e.options.aux_logits && zoo::zoo_model(e.model).has_aux_logits);
  // Shape inference only: cheap even for 60 M parameters.
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

INSTANTIATE_TEST_SUITE_P(
    Published, ZooParams,
    testing::Values(Expected{"resnet_v1_18", {}, 11'689'512, 9'600}, Expected{"resnet_v1_50", {}, 25'557'032, 53'120},
                    Expected{"resnet_v1_5_50", {}, 25'557'032, 53'120},
                    Expected{"resnet_v1_101", {}, 44'549'160, 105'344},
                    Expected{"resnet_v1_152", {}, 60'192'808, -1},
                    Expected{"resnet_v2_50", {}, 25'568'360, 45'440}, Expected{"vgg_11", {}, 132'863'336, 0},
                    Expected{"vgg_16", {}, 138'357'544, 0}, Expected{"vgg_19", {}, 143'667'240, 0},
                    Expected{"inception_v3", {.aux_logits = false}, 23'817'352, 34'432},
                    Expected{"inception_v3", {}, 27'143'152, 34'432 + 2 * (128 + 768)},
                    Expected{"inception_resnet_v2", {.aux_logits = false}, 55'813'192, 60'544},
                    Expected{"inception_resnet_v2", {}, 55'813'192 + 3'366'760, 60'544 + 2 * (128 + 768)},
                    Expected{"resnet_cifar_20", {}, 269'722, -1}, Expected{"resnet_cifar_56", {}, 853'018, -1},
                    Expected{"lenet", {}, 3'274'634, 0}, Expected{"mlp", {}, 11'972'510, 0},
                    Expected{"cifarnet", {}, 1'756'426, 0}, Expected{"mobilenet_v1", {}, 4'231'976, 21'888},
                    Expected{"mobilenet_v1", {.num_classes = 1001}, 4'233'001, 21'888},
                    Expected{"mobilenet_v1_075", {.num_classes = 1001}, 2'586'329, 16'416},
                    Expected{"mobilenet_v1_050", {.num_classes = 1001}, 1'332'105, 10'944},
                    Expected{"mobilenet_v1_025", {.num_classes = 1001}, 470'329, 5'472},
                    Expected{"mobilenet_v2", {}, 3'504'872, 34'112},
                    Expected{"mobilenet_v2", {.num_classes = 1001}, 3'506'153, 34'112},
                    Expected{"mobilenet_v2_140", {.num_classes = 1001}, 6'110'569, 47'936},
                    Expected{"mobilenet_v2_035", {.num_classes = 1001}, 1'678'409, 14'080},
                    Expected{"vgg_a", {}, 132'863'336, 0},
                    Expected{"resnet_v2_101", {}, 44'675'560 - 97'664, 97'664},
                    Expected{"resnet_v2_152", {}, 60'380'648 - 143'744, 143'744},
                    Expected{"inception_v1", {}, 6'624'904 - 14'560 / 2, 14'560},
                    Expected{"inception_v4", {.aux_logits = false}, 42'679'816 - 63'168 / 2, 63'168},
                    // Computed from TF-slim's definitions (docs/MODELS.md shows the sums).
                    Expected{"alexnet_v2", {}, 50'303'912, 0}, Expected{"alexnet_v2", {.num_classes = 1001}, 50'308'009, 0},
                    Expected{"overfeat", {}, 145'704'424, 0}, Expected{"overfeat", {.num_classes = 1001}, 145'708'521, 0},
                    Expected{"inception_v2", {}, 11'178'336, 19'776},
                    Expected{"inception_v4", {}, 42'648'232 + 3'358'568, 63'168 + 2 * (128 + 768)},
                    Expected{"resnet_v1_200", {}, 64'673'832, 176'000},
                    Expected{"resnet_v2_200", {}, 64'726'120, 168'320},
                    Expected{"nasnet_mobile", {.aux_logits = false}, 5'289'978, 36'738},
                    Expected{"nasnet_large", {.aux_logits = false}, 88'753'150, 196'668},
                    Expected{"pnasnet_large", {.aux_logits = false}, 86'057'668, 176'988},
                    Expected{"nasnet_cifar", {.aux_logits = false}, 3'346'538, 37'248},
                    Expected{"pnasnet_mobile", {.aux_logits = false}, 5'065'121, 33'716}),
    [](const testing::TestParamInfo<Expected>& i) { return case_name(i.param); });

TEST(ZooParams, EveryModelIsCovered) {
  std::set<std::string> tested;
  for (const char* m : {"resnet_v1_18", "resnet_v1_50", "resnet_v1_5_50", "resnet_v1_101", "resnet_v1_152",
                        "resnet_v2_50", "vgg_11", "vgg_16", "vgg_19", "inception_v3", "inception_resnet_v2", "resnet_cifar_20",
                        "resnet_cifar_56", "lenet", "mlp", "cifarnet", "mobilenet_v1", "mobilenet_v1_075",
                        "mobilenet_v1_050", "mobilenet_v1_025", "mobilenet_v2", "mobilenet_v2_140", "mobilenet_v2_035",
                        "vgg_a", "alexnet_v2", "overfeat", "inception_v1", "inception_v2", "inception_v4",
                        "resnet_v1_200", "resnet_v2_101", "resnet_v2_152", "resnet_v2_200", "nasnet_mobile",
                        "nasnet_large", "pnasnet_large", "nasnet_cifar", "pnasnet_mobile"})
    tested.insert(m);
  for (const std::string& name : zoo::zoo_model_names()) EXPECT_TRUE(tested.count(name)) << name;
}

TEST(ZooParams, ClassifierFollowsNumClasses) {
  // TF-slim's ImageNet checkpoints have 1001 classes: only the logits (and aux logits) change.
  const auto count = [](const std::string& m, int classes) {
    return graph::NetPlan::make(zoo::build_net(m, {.num_classes = classes}), {}).trainable_param_count();
  };
  EXPECT_EQ(count("resnet_v1_50", 1001) - count("resnet_v1_50", 1000), 2048 + 1);
  EXPECT_EQ(count("inception_v3", 1001) - count("inception_v3", 1000), (2048 + 1) + (768 + 1));
  EXPECT_EQ(count("lenet", 1) - count("lenet", 10), -9 * (1024 + 1));
}

// FLOPs = 2 x multiply-adds of conv and fully connected layers, per example.
TEST(ZooFlops, LeNetByHandOthersAsPublished) {
  const graph::ModelStatistics lenet = graph::model_statistics(zoo::build_net("lenet"));
  // conv1 28*28*32*5*5*1, conv2 14*14*64*5*5*32, fc3 7*7*64*1024, fc4 1024*10 multiply-adds.
  const int64_t macs = 28 * 28 * 32 * 25 + 14 * 14 * 64 * 25 * 32 + 7 * 7 * 64 * 1024 + 1024 * 10;
  EXPECT_EQ(lenet.flops, 2 * macs);
  // torchvision's model table ("GFLOPS", i.e. multiply-adds): vgg11 7.61, vgg16 15.47, vgg19 19.63 at
  // 224; resnet18 1.81 and resnet50 (v1.5) 4.09 at 224; inception_v3 5.71 at 299 (without the aux head,
  // which eval skips).
  const auto gmacs = [](const std::string& m, zoo::ZooOptions o = {}) {
    return static_cast<double>(graph::model_statistics(zoo::build_net(m, o)).flops) / 2e9;
  };
  EXPECT_NEAR(gmacs("vgg_11"), 7.61, 0.01);
  EXPECT_NEAR(gmacs("vgg_16"), 15.47, 0.01);
  EXPECT_NEAR(gmacs("vgg_19"), 19.63, 0.01);
  EXPECT_NEAR(gmacs("resnet_v1_18"), 1.81, 0.01);
  EXPECT_NEAR(gmacs("resnet_v1_5_50"), 4.09, 0.01);  // v1's 3.48 (below): the stride is where v1.5 puts it
  EXPECT_NEAR(gmacs("inception_v3", {.aux_logits = false}), 5.71, 0.02);
  // He et al. (Table 1): ResNet-50 3.8 G multiply-adds; TF-slim's layout (stride in each block's last
  // unit) lands near it.
  const graph::ModelStatistics r50 = graph::model_statistics(zoo::build_net("resnet_v1_50"));
  EXPECT_NEAR(static_cast<double>(r50.flops) / 2, 3.8e9, 0.4e9);
}

TEST(ZooRegistry, NetsRoundTripThroughTheTextFormatUsersWrite) {
  for (const char* m : {"lenet", "resnet_v1_50", "inception_v3"}) {
    const NetDef net = zoo::build_net(m);
    std::string text;
    ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(net, &text));
    NetDef back;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &back)) << m;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(net, back)) << m;
    EXPECT_EQ(graph::NetPlan::make(back, {}).trainable_param_count(), graph::NetPlan::make(net, {}).trainable_param_count());
  }
  // TF-slim names, as a checkpoint from slim would spell them.
  const graph::NetPlan v3 = graph::NetPlan::make(zoo::build_net("inception_v3"), {});
  std::set<std::string> names;
  for (const graph::PlanNode& n : v3.nodes())
    for (const graph::PlannedTensor& p : n.params)
      if (p.trainable) names.insert(p.name);
  for (const char* want : {"InceptionV3/Conv2d_1a_3x3/weights", "InceptionV3/Conv2d_1a_3x3/BatchNorm/beta",
                           "InceptionV3/Mixed_5c/Branch_1/Conv_1_0c_5x5/weights",
                           "InceptionV3/Mixed_7b/Branch_1/Conv2d_0b_3x1/weights",
                           "InceptionV3/AuxLogits/Conv2d_2a_5x5/weights", "InceptionV3/AuxLogits/Conv2d_2b_1x1/biases",
                           "InceptionV3/Logits/Conv2d_1c_1x1/weights"})
    EXPECT_TRUE(names.count(want)) << want;
  EXPECT_FALSE(names.count("InceptionV3/Conv2d_1a_3x3/BatchNorm/gamma"));  // slim's batch_norm: scale off
}

// TF-slim's MobileNet variable names, layer types (ReLU6, depthwise) and depth rounding.
TEST(ZooRegistry, MobileNetsUseSlimNamesAndDepths) {
  const auto trainable = [](const std::string& m) {
    std::map<std::string, Shape> out;
    const graph::NetPlan plan = graph::NetPlan::make(zoo::build_net(m, {.num_classes = 1001}), {});
    for (const graph::PlanNode& n : plan.nodes())
      for (const graph::PlannedTensor& p : n.params)
        if (p.trainable) out[p.name] = p.spec.shape;
    return out;
  };
  const auto v1 = trainable("mobilenet_v1");
  EXPECT_EQ(v1.at("MobilenetV1/Conv2d_0/weights"), (Shape{32, 3, 3, 3}));
  EXPECT_EQ(v1.at("MobilenetV1/Conv2d_1_depthwise/depthwise_weights"), (Shape{32, 1, 3, 3}));
  EXPECT_EQ(v1.at("MobilenetV1/Conv2d_13_pointwise/weights"), (Shape{1024, 1024, 1, 1}));
  EXPECT_TRUE(v1.count("MobilenetV1/Conv2d_13_pointwise/BatchNorm/gamma"));
  EXPECT_EQ(v1.at("MobilenetV1/Logits/Conv2d_1c_1x1/biases"), (Shape{1001}));
  EXPECT_FALSE(v1.count("MobilenetV1/Conv2d_1_depthwise/biases"));  // BN after every conv: no biases
  // max(int(32 * 0.25), 8) = 8.
  EXPECT_EQ(trainable("mobilenet_v1_025").at("MobilenetV1/Conv2d_0/weights"), (Shape{8, 3, 3, 3}));

  const auto v2 = trainable("mobilenet_v2");
  EXPECT_EQ(v2.at("MobilenetV2/Conv/weights"), (Shape{32, 3, 3, 3}));
  EXPECT_FALSE(v2.count("MobilenetV2/expanded_conv/expand/weights"));  // expansion 1: no expand conv
  EXPECT_EQ(v2.at("MobilenetV2/expanded_conv/depthwise/depthwise_weights"), (Shape{32, 1, 3, 3}));
  EXPECT_EQ(v2.at("MobilenetV2/expanded_conv_1/expand/weights"), (Shape{96, 16, 1, 1}));
  EXPECT_EQ(v2.at("MobilenetV2/expanded_conv_16/project/weights"), (Shape{320, 960, 1, 1}));
  EXPECT_EQ(v2.at("MobilenetV2/Conv_1/weights"), (Shape{1280, 320, 1, 1}));
  EXPECT_TRUE(v2.count("MobilenetV2/Logits/Conv2d_1c_1x1/weights"));
  // _make_divisible: 32 * 0.35 = 11.2 -> 8 is below 90% of it -> 16; 16 * 0.35 -> 8; Conv_1 stays 1280
  // (finegrain classification mode); 1.4 widens it to 1792.
  const auto v2s = trainable("mobilenet_v2_035");
  EXPECT_EQ(v2s.at("MobilenetV2/Conv/weights"), (Shape{16, 3, 3, 3}));
  EXPECT_EQ(v2s.at("MobilenetV2/expanded_conv/project/weights"), (Shape{8, 16, 1, 1}));
  EXPECT_EQ(v2s.at("MobilenetV2/Conv_1/weights")[0], 1280);
  EXPECT_EQ(trainable("mobilenet_v2_140").at("MobilenetV2/Conv_1/weights")[0], 1792);

  // ReLU6 activations, linear bottlenecks, residual adds only where stride 1 keeps the depth.
  const NetDef net = zoo::build_net("mobilenet_v2");
  int relu6 = 0, relu = 0, adds = 0, depthwise = 0;
  for (const LayerDef& l : net.layers()) {
    relu6 += l.has_relu6();
    relu += l.has_relu();
    adds += l.has_add();
    depthwise += l.has_depthwise_conv();
    if (l.name().ends_with("/project/Relu6")) ADD_FAILURE() << l.name() << ": the bottleneck is linear";
  }
  EXPECT_EQ(relu, 0);
  EXPECT_EQ(depthwise, 17);
  EXPECT_EQ(adds, 10);  // blocks 2, 4, 5, 7, 8, 9, 11, 12, 14, 15
  EXPECT_EQ(relu6, 1 + 16 + 17 + 1);  // Conv, 16 expands, 17 depthwise, Conv_1
}

// Published multiply-adds (TF-slim's tables, 224 x 224): MobileNet v1 1.0 569 M, 0.25 41 M; v2 1.0
// 300 M, 1.4 582 M, 0.35 59 M.
TEST(ZooFlops, MobileNetsAsPublished) {
  const auto mmacs = [](const std::string& m) {
    return static_cast<double>(graph::model_statistics(zoo::build_net(m, {.num_classes = 1001})).flops) / 2e6;
  };
  EXPECT_NEAR(mmacs("mobilenet_v1"), 569, 6);
  EXPECT_NEAR(mmacs("mobilenet_v1_025"), 41, 1.5);
  EXPECT_NEAR(mmacs("mobilenet_v2"), 300, 6);
  EXPECT_NEAR(mmacs("mobilenet_v2_140"), 582, 8);
  EXPECT_NEAR(mmacs("mobilenet_v2_035"), 59, 3);
}

TEST(ZooRegistry, UnknownNamesListTheZooAndSizesAreChecked) {
  try {
    zoo::build_net("no_such_net");  // nothing near: the whole zoo (near names: config_habits_test)
    FAIL();
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("no_such_net"), std::string::npos);
    for (const std::string& n : zoo::zoo_model_names()) EXPECT_NE(msg.find(n), std::string::npos) << n;
  }
  EXPECT_THROW(zoo::build_net("inception_v3", {.height = 99, .width = 99}), ConfigError);  // aux needs 107
  EXPECT_NO_THROW(zoo::build_net("inception_v3", {.height = 99, .width = 99, .aux_logits = false}));
  EXPECT_THROW(zoo::build_net("inception_v3", {.height = 74, .width = 74, .aux_logits = false}), ConfigError);
  EXPECT_THROW(zoo::build_net("vgg_16", {.height = 16, .width = 16}), ConfigError);
  EXPECT_THROW(zoo::build_net("vgg_16", {.height = 256, .width = 256}), ConfigError);
  EXPECT_THROW(zoo::build_net("lenet", {.num_classes = -1}), ConfigError);
  // The smallest documented inputs are valid nets.
  for (const zoo::ZooModel& m : zoo::zoo_models()) {
    const zoo::ZooOptions o{.height = m.min_size, .width = m.min_size, .aux_logits = !m.has_aux_logits};
    EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net(m.name, o), {})) << m.name;
  }
  for (const char* m : {"inception_v3", "inception_v4", "inception_resnet_v2"}) {
    EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net(m, {.height = 107, .width = 107}), {})) << m;
    EXPECT_THROW(zoo::build_net(m, {.height = 106, .width = 106}), ConfigError) << m;
  }
}

}  // namespace
}  // namespace fastnn

namespace fastnn {
namespace {

using testing_util::trainable_shapes;

// TF-slim's variable names (scopes and quirks) for the nets added with issue 16.
TEST(ZooRegistry, NewNetsUseSlimNames) {
  const auto a = trainable_shapes("alexnet_v2", {.num_classes = 1001});
  EXPECT_EQ(a.at("alexnet_v2/conv1/weights"), (Shape{64, 3, 11, 11}));
  EXPECT_EQ(a.at("alexnet_v2/fc6/weights"), (Shape{4096, 256, 5, 5}));
  EXPECT_EQ(a.at("alexnet_v2/fc8/biases"), (Shape{1001}));
  const auto o = trainable_shapes("overfeat");
  EXPECT_EQ(o.at("overfeat/fc6/weights"), (Shape{3072, 1024, 6, 6}));
  EXPECT_EQ(o.at("overfeat/conv2/weights"), (Shape{256, 64, 5, 5}));

  const auto v1 = trainable_shapes("inception_v1");
  EXPECT_EQ(v1.at("InceptionV1/Conv2d_1a_7x7/weights"), (Shape{64, 3, 7, 7}));
  EXPECT_EQ(v1.at("InceptionV1/Mixed_5b/Branch_2/Conv2d_0a_3x3/weights"), (Shape{128, 32, 3, 3}));  // slim's name
  EXPECT_EQ(v1.at("InceptionV1/Mixed_5c/Branch_2/Conv2d_0b_3x3/weights"), (Shape{128, 48, 3, 3}));
  EXPECT_TRUE(v1.count("InceptionV1/Logits/Conv2d_0c_1x1/biases"));
  EXPECT_FALSE(v1.count("InceptionV1/Conv2d_1a_7x7/BatchNorm/gamma"));

  // InceptionV2's stem is slim.separable_conv2d outside the arg scope's normalizer: two filters in one
  // scope, a bias, no batch norm.
  const auto v2 = trainable_shapes("inception_v2");
  EXPECT_EQ(v2.at("InceptionV2/Conv2d_1a_7x7/depthwise_weights"), (Shape{24, 1, 7, 7}));
  EXPECT_EQ(v2.at("InceptionV2/Conv2d_1a_7x7/pointwise_weights"), (Shape{64, 24, 1, 1}));
  EXPECT_EQ(v2.at("InceptionV2/Conv2d_1a_7x7/biases"), (Shape{64}));
  EXPECT_FALSE(v2.count("InceptionV2/Conv2d_1a_7x7/BatchNorm/beta"));
  EXPECT_EQ(v2.at("InceptionV2/Mixed_5c/Branch_3/Conv2d_0b_1x1/weights"), (Shape{128, 1024, 1, 1}));
  EXPECT_TRUE(v2.count("InceptionV2/Logits/Conv2d_1c_1x1/weights"));

  const auto v4 = trainable_shapes("inception_v4");
  EXPECT_EQ(v4.at("InceptionV4/Mixed_3a/Branch_1/Conv2d_0a_3x3/weights"), (Shape{96, 64, 3, 3}));
  EXPECT_EQ(v4.at("InceptionV4/Mixed_6h/Branch_2/Conv2d_0e_1x7/weights"), (Shape{256, 224, 1, 7}));
  EXPECT_EQ(v4.at("InceptionV4/Mixed_7d/Branch_2/Conv2d_0c_1x3/weights"), (Shape{512, 448, 1, 3}));
  EXPECT_EQ(v4.at("InceptionV4/AuxLogits/Conv2d_2a/weights"), (Shape{768, 128, 5, 5}));
  EXPECT_EQ(v4.at("InceptionV4/AuxLogits/Aux_logits/weights"), (Shape{1000, 768}));
  EXPECT_EQ(v4.at("InceptionV4/Logits/Logits/weights"), (Shape{1000, 1536}));

  EXPECT_TRUE(trainable_shapes("resnet_v1_200").count("resnet_v1_200/block2/unit_24/bottleneck_v1/conv3/weights"));
  const auto r2 = trainable_shapes("resnet_v2_200");
  EXPECT_TRUE(r2.count("resnet_v2_200/block2/unit_24/bottleneck_v2/conv3/biases"));
  EXPECT_FALSE(r2.count("resnet_v2_200/block2/unit_25/bottleneck_v2/conv3/biases"));
  EXPECT_TRUE(trainable_shapes("resnet_v2_101").count("resnet_v2_101/block3/unit_23/bottleneck_v2/preact/beta"));
}

// Sizes: the classifier kernels follow the map below the default, and a map larger than slim's
// fixed kernel (which slim's spatial squeeze would refuse) is an error.
TEST(ZooRegistry, NewNetsCheckTheirSizes) {
  for (auto [m, lo, hi] : {std::tuple{"alexnet_v2", 67, 226}, std::tuple{"overfeat", 71, 262},
                           std::tuple{"inception_v1", 32, 224}, std::tuple{"inception_v2", 32, 224}}) {
    EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net(m, {.height = lo, .width = lo}), {})) << m;
    EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net(m, {.height = hi, .width = hi}), {})) << m;
    EXPECT_THROW(zoo::build_net(m, {.height = hi + 1, .width = hi + 1}), ConfigError) << m;
    EXPECT_THROW(zoo::build_net(m, {.height = lo - 1, .width = lo - 1}), ConfigError) << m;
  }
  EXPECT_THROW(zoo::build_net("inception_v4", {.height = 106, .width = 106}), ConfigError);  // aux needs 107
  EXPECT_NO_THROW(graph::NetPlan::make(zoo::build_net("inception_v4", {.height = 400, .width = 400}), {}));
}

// Multiply-adds at the default size: torchvision's googlenet 1.50 G (the same layers; its aux heads
// are off in eval); Szegedy et al. 2016 give Inception-v4 about 12.3 G (no aux head here).
TEST(ZooFlops, InceptionsAsPublished) {
  const auto gmacs = [](const std::string& m, zoo::ZooOptions o = {}) {
    return static_cast<double>(graph::model_statistics(zoo::build_net(m, o)).flops) / 2e9;
  };
  EXPECT_NEAR(gmacs("inception_v1"), 1.50, 0.01);
  EXPECT_NEAR(gmacs("inception_v4", {.aux_logits = false}), 12.3, 0.1);
}

// The default preprocessing follows TF-slim's preprocessing_factory, with FastNN's own presets.
TEST(ZooRegistry, DefaultPresets) {
  EXPECT_EQ(zoo::zoo_model("alexnet_v2").preset, "vgg");
  EXPECT_EQ(zoo::zoo_model("overfeat").preset, "vgg");
  EXPECT_EQ(zoo::zoo_model("vgg_16").preset, "vgg");
  EXPECT_EQ(zoo::zoo_model("inception_v4").preset, "inception");
  EXPECT_EQ(zoo::zoo_model("mobilenet_v2").preset, "inception");
  EXPECT_EQ(zoo::zoo_model("resnet_v2_200").preset, "resnet");
  EXPECT_EQ(zoo::zoo_model("resnet_cifar_20").preset, "cifarnet");
  EXPECT_EQ(zoo::zoo_model("mlp").preset, "lenet");
  EXPECT_EQ(zoo::zoo_model("overfeat").default_size, 231);
}

// LayerDef.param_scope / ConvLayer.weights_name give slim's separable_conv2d names; a name that two
// layers would both own is refused instead of silently aliasing two tensors.
TEST(ZooRegistry, ParamScopeNamesAndRefusesDuplicates) {
  NetDef net;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    input { channels: 2 height: 4 width: 4 }
    layers { name: "s/depthwise" inputs: "data" param_scope: "s"
             depthwise_conv { kernel: 3 padding: "same" multiplier: 2 bias: false } }
    layers { name: "s" inputs: "s/depthwise" conv { filters: 3 kernel: 1 weights_name: "pointwise_weights" } }
    layers { name: "fc" inputs: "s" fully_connected { units: 2 } }
    logits: "fc"
  )pb", &net));
  std::set<std::string> names;
  const graph::NetPlan plan = graph::NetPlan::make(net, {});
  for (const graph::PlanNode& n : plan.nodes())
    for (const graph::PlannedTensor& p : n.params) names.insert(p.name);
  EXPECT_EQ(names, (std::set<std::string>{"s/depthwise_weights", "s/pointwise_weights", "s/biases", "fc/weights",
                                          "fc/biases"}));
  net.mutable_layers(0)->mutable_depthwise_conv()->set_bias(true);  // "s/biases" twice
  EXPECT_THROW(graph::NetPlan::make(net, {}), ConfigError);
  net.mutable_layers(0)->mutable_depthwise_conv()->set_bias(false);
  net.mutable_layers(1)->mutable_conv()->set_weights_name("bad/name");
  EXPECT_THROW(graph::NetPlan::make(net, {}), ConfigError);
}

}  // namespace
}  // namespace fastnn
