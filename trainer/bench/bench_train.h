// `fastnn bench train`: training images/s of a zoo model on synthetic data, on the CPU or a GPU.
//
// The job config gives the model (model_name at its default size or options.image_size; num_classes
// if set, else the model's default), batch_size, device/precision/use_fp16, optimizer, weight_decay,
// max_gradient_norm, learning_rate (constant here: the schedule is not what is measured) and seed.
// One random batch is made once and placed where the step reads it (device memory on a GPU), so the
// number is the step alone: forward, loss, backward, clipping, optimizer update, the per-step loss
// read-back. `warmup` steps run first (cuDNN algorithm choice, pool growth), then `steps` steps are
// timed together (CUDA events on a GPU, the wall clock on the CPU). On a GPU with several ranks
// (mpirun) or comm_backend=nccl, every step also averages the gradients over NCCL (the training path),
// so `mpirun -np N fastnn bench train --device=cuda` measures data-parallel scaling; the CPU bench
// times one process's step only.
// profile_steps > 0: that many more steps after the timed ones, each timed layer by layer and phase by
// phase on the device (step_profile.h), averaged into `profile` (apart from the timed steps, so the
// event records do not change the images/s).
// Errors: ConfigError from the config / zoo / device resolution; Error from the step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "schemas/job_config.pb.h"
#include "trainer/runner/device_setup.h"
#include "trainer/bench/step_profile.h"

namespace fastnn::bench {

struct TrainBenchOptions {
  int64_t steps = 20;
  int64_t warmup = 5;
  int image_size = 0;  // 0: the model's default input size
  int64_t profile_steps = 0;
};

struct TrainBenchResult {
  std::string model;
  runner::ComputeTarget target;
  int64_t batch_size = 0, steps = 0, warmup = 0;  // batch_size per rank; images_per_sec is this rank's
  int world_size = 1;
  std::string data_format;  // the graph's layout: NCHW or NHWC (data_format auto resolved)
  bool fused = false;       // fuse_ops as the run took it
  bool fuse_conv_bn = false;
  bool cpu_bf16 = false;    // precision=bf16 on the CPU: conv2d and fully_connected multiply in bf16
  bool cuda_graph = false;
  std::string gradient_allreduce = "none";  // "nccl" when gradients are averaged every step
  int height = 0, width = 0, classes = 0;
  double milliseconds = 0;  // the timed steps together
  double images_per_sec = 0, ms_per_step = 0;
  double first_loss = 0, last_loss = 0;
  double loss_scale = 1;
  int64_t skipped_steps = 0;
  int64_t parameters = 0;  // trainable elements
  std::optional<ProfileTable> profile;
};

TrainBenchResult run_train_bench(const JobConfig& config, const TrainBenchOptions& options);
nlohmann::json train_bench_json(const TrainBenchResult& r);

}  // namespace fastnn::bench
