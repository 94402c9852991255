// trainer/inference/forward_batch.h: which networks an inference forward on the CPU slices, and how.
#include <gtest/gtest.h>

#include "trainer/graph/net_plan.h"
#include "trainer/inference/forward_batch.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::inference {
namespace {

graph::NetPlan plan_of(const std::string& model) {
  return graph::NetPlan::make(zoo::build_net(model, {}), graph::PlanOptions{});  // batch 1, the default size
}

constexpr uint64_t kMiB = 1024 * 1024;

TEST(CpuForwardBatch, MobileNetV2IsSlicedToFitTheCache) {
  const graph::NetPlan plan = plan_of("mobilenet_v2");
  const ForwardBatch f = cpu_forward_batch(plan, 32, 32 * kMiB);
  // The largest layer: one after the second block's 1x1 expansion, 112x112x96 f32 in and out.
  EXPECT_EQ(f.largest_layer_bytes, 2 * 112 * 112 * 96 * 4);
  EXPECT_LT(f.macs_per_byte, kSliceBelowMacsPerByte);
  EXPECT_GT(f.macs_per_byte, 1);
  EXPECT_EQ(f.images, 3);  // 32 MiB holds three images' 9.6 MB
}

TEST(CpuForwardBatch, ResNet50TakesTheWholeBatch) {
  const ForwardBatch f = cpu_forward_batch(plan_of("resnet_v1_50"), 32, 32 * kMiB);
  EXPECT_GE(f.macs_per_byte, kSliceBelowMacsPerByte);  // about 20 multiply-adds per byte
  EXPECT_EQ(f.images, 32);
}

TEST(CpuForwardBatch, SlicesAreEqualButTheLast) {
  const graph::NetPlan plan = plan_of("mobilenet_v2");
  const auto layer = static_cast<uint64_t>(cpu_forward_batch(plan, 1, 0).largest_layer_bytes);
  EXPECT_EQ(cpu_forward_batch(plan, 32, 5 * layer).images, 5);    // 7 forwards: 6 of 5, then 2
  EXPECT_EQ(cpu_forward_batch(plan, 32, 20 * layer).images, 16);  // 2 forwards of 16, not 20 and 12
  EXPECT_EQ(cpu_forward_batch(plan, 32, 32 * layer).images, 32);
  EXPECT_EQ(cpu_forward_batch(plan, 32, 1).images, 1);            // nothing fits: one at a time
  EXPECT_EQ(cpu_forward_batch(plan, 32, 0).images, 32);           // cache unknown: the whole batch
  EXPECT_EQ(cpu_forward_batch(plan, 1, 1).images, 1);
}

}  // namespace
}  // namespace fastnn::inference
