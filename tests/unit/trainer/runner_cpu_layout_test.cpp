// data_format=auto on the CPU (runner/cpu_layout.h): NHWC where the fast kernels cover every layer with a
// 4-D output, fused nodes counted by their parts; NCHW with the reference kernels or a layer the fast set
// lacks (LRN).
#include <gtest/gtest.h>

#include "trainer/runner/cpu_layout.h"
#include "trainer/runner/step_runner.h"
#include "trainer/ops/cpu_kernel_choice.h"
#include "trainer/zoo/zoo.h"

namespace fastnn::runner {
namespace {

Layout layout_of(const std::string& model, bool fuse) {
  const NetDef net = zoo::build_net(model, {.num_classes = 10, .height = 32, .width = 32});
  StepRunnerOptions o;
  o.fuse = fuse;
  return auto_cpu_layout(net, o);
}

TEST(AutoCpuLayout, FastKernelsTakeNhwcFusedOrNot) {
  if (!ops::use_fast_cpu_kernels()) GTEST_SKIP() << ops::cpu_kernels_description();
  for (bool fuse : {false, true}) {
    EXPECT_EQ(layout_of("resnet_cifar_20", fuse), Layout::kNHWC) << "fuse " << fuse;
    EXPECT_EQ(layout_of("mobilenet_v2", fuse), Layout::kNHWC) << "fuse " << fuse;
  }
  EXPECT_EQ(layout_of("cifarnet", false), Layout::kNCHW) << "its LRN layers have no NHWC CPU kernel";
}

TEST(AutoCpuLayout, ReferenceKernelsStayNchw) {
  const ops::ScopedReferenceCpuKernels reference;
  EXPECT_EQ(layout_of("resnet_cifar_20", false), Layout::kNCHW);
  EXPECT_EQ(layout_of("resnet_cifar_20", true), Layout::kNCHW);
}

}  // namespace
}  // namespace fastnn::runner
