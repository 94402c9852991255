// `fastnn bench train`: training images/s of a zoo model on synthetic data, on the CPU or a GPU.
//
// The job config gives the model (model_name at its default size or options.image_size; num_classes
// if set, else the model's default), batch_size, device/precision/use_fp16, optimizer, weight_decay,
// max_gradient_norm, learning_rate (constant here: the schedule is not what is measured) and seed.
// One random batch is made once and placed where the step reads it (device memory on a GPU), so the
// number is the step alone: forward, loss, backward, clipping, optimizer update, the per-step loss
// read-back. `warmup` steps run first (cuDNN algorithm choice, pool growth), then `steps` steps are
// timed together (CUDA events on a GPU, the wall clock on the CPU).
// Errors: ConfigError from the config / zoo / device resolution; Error from the step.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "schemas/job_config.pb.h"
#include "trainer/loop/device_setup.h"

namespace fastnn::loop {

struct TrainBenchOptions {
  int64_t steps = 20;
  int64_t warmup = 5;
  int image_size = 0;  // 0: the model's default input size
};

struct TrainBenchResult {
  std::string model;
  ComputeTarget target;
  int64_t batch_size = 0, steps = 0, warmup = 0;
  int height = 0, width = 0, classes = 0;
  double milliseconds = 0;  // the timed steps together
  double images_per_sec = 0, ms_per_step = 0;
  double first_loss = 0, last_loss = 0;
  double loss_scale = 1;
  int64_t skipped_steps = 0;
  int64_t parameters = 0;  // trainable elements
};

TrainBenchResult run_train_bench(const JobConfig& config, const TrainBenchOptions& options);
nlohmann::json train_bench_json(const TrainBenchResult& r);

}  // namespace fastnn::loop
