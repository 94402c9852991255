// What a backend cannot do, asked at start-up (trainer/loop/capabilities.h): the classifier head runs on
// device=cuda (every loss_type, sharded or not, PartialFC), while what the GPU path still lacks stays
// refused with a ConfigError naming it; and the CPU refuses GPU-only input formats.
#include "trainer/loop/capabilities.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/check.h"
#include "trainer/config/job_config.h"

namespace fastnn::loop {
namespace {

const runner::ComputeTarget kGpu{.device = Device::kCuda, .dtype = DType::kF16, .device_index = 0};

JobConfig config(const std::vector<std::string>& flags) { return load_job_config("", flags); }

TEST(Capabilities, TheClassifierHeadRunsOnTheGpu) {
  for (const char* loss : {"arcface", "cosface", "dist_softmax", "dist_arcface", "dist_cosface"})
    for (int world : {1, 2}) {
      EXPECT_NO_THROW(check_backend_supports(config({std::string("--loss_type=") + loss, "--emb_dim=64"}), kGpu, world))
          << loss << " x " << world;
    }
  EXPECT_NO_THROW(check_backend_supports(config({"--loss_type=softmax", "--emb_dim=64"}), kGpu, 1));
  EXPECT_NO_THROW(check_backend_supports(config({"--loss_type=dist_arcface", "--emb_dim=64", "--sample_ratio=0.1"}), kGpu, 2));
  // cuda_graph with a head only warns (the head's steps run eagerly).
  EXPECT_NO_THROW(check_backend_supports(config({"--loss_type=dist_arcface", "--emb_dim=64", "--cuda_graph"}), kGpu, 1));
}

TEST(Capabilities, WhatTheGpuLacksIsStillRefusedByName) {
  auto refused = [](const JobConfig& c, const runner::ComputeTarget& t, int world, const char* name) {
    try {
      check_backend_supports(c, t, world);
      ADD_FAILURE() << name << " not refused";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  refused(config({"--sync_batch_norm"}), kGpu, 2, "sync_batch_norm");
  // trainable_scopes on cuda: refused until its gpu test has passed on a GPU (capabilities.cpp).
  refused(config({"--trainable_scopes=LeNet/fc4"}), kGpu, 1, "trainable_scopes");
  refused(config({"--input_dtype=uint8"}), runner::ComputeTarget{}, 1, "input_dtype=uint8");
  // The CUDA loss kernel has no class weights; the classifier head's margin losses have none anywhere.
  refused(config({"--class_weights=balanced"}), kGpu, 1, "class_weights");
  refused(config({"--class_weights=1,2", "--loss_type=arcface", "--emb_dim=8"}), runner::ComputeTarget{}, 1, "class_weights");
  EXPECT_NO_THROW(check_backend_supports(config({"--class_weights=balanced"}), runner::ComputeTarget{}, 1));
#ifdef FASTNN_HAVE_CUDA
  // adamw's bias corrections are computed by the CPU optimizer only.
  refused(config({"--optimizer=adamw"}), kGpu, 1, "optimizer=adamw");
  refused(config({"--optimizer=lars"}), kGpu, 1, "optimizer=lars");
  refused(config({"--optimizer=lamb"}), kGpu, 1, "optimizer=lamb");
#endif
}

// fuse_conv_bn's fused kernel is fp16 channels-last: elsewhere on the GPU the flag is named in a warning;
// fp16 with the default layout (NHWC on cuda) is quiet.
TEST(Capabilities, FuseConvBnOutsideFp16ChannelsLastIsNamed) {
  auto warned = [](const std::vector<std::string>& flags, const runner::ComputeTarget& t) {
    testing::internal::CaptureStderr();
    check_backend_supports(config(flags), t, 1);
    return testing::internal::GetCapturedStderr().find("fuse_conv_bn has no effect on speed") != std::string::npos;
  };
  EXPECT_FALSE(warned({"--fuse_conv_bn"}, kGpu));
  EXPECT_TRUE(warned({"--fuse_conv_bn", "--data_format=NCHW"}, kGpu));
  EXPECT_TRUE(warned({"--fuse_conv_bn"}, runner::ComputeTarget{.device = Device::kCuda, .dtype = DType::kF32, .device_index = 0}));
  EXPECT_FALSE(warned({"--data_format=NCHW"}, kGpu));
}

}  // namespace
}  // namespace fastnn::loop
